#pragma once
// The console's look: the system's style and palette (the default), or a light or a dark one chosen in Settings,
// applied to the whole application at once; widgets follow, and so do the charts (chartview.h).
#include <QColor>
#include <QIcon>
#include <QPalette>
#include <QString>
#include <QStyle>

namespace traindeck {

enum class Theme { system, light, dark };

// "system", "light" or "dark" (what QSettings keeps); anything else is system.
Theme theme_from_name(const QString& name);
QString theme_name(Theme theme);
// Needs the QApplication. "system" leaves the system's look alone (it keeps following the desktop's light and dark),
// or brings it back after light or dark.
void apply_theme(Theme theme);

// Whether `palette` draws light text on a dark window (the dark theme, or a dark system palette).
inline bool palette_is_dark(const QPalette& palette) {
    return palette.color(QPalette::Window).lightness() < palette.color(QPalette::WindowText).lightness();
}

// An action's icon: the desktop theme's, else the one the console bundles (resources/icons/actions/NAME.svg, in the
// program's resources), else the style's own `fallback` of the same meaning, so that no button is left blank.
QIcon action_icon(const char* name, QStyle::StandardPixmap fallback);

// A cell's background tint that the palette's text stays readable on: the pastel itself on a light palette, a dark
// shade of its hue on a dark one (a pastel under light text cannot be read).
QColor background_tint(const QColor& pastel, const QPalette& palette);

} // namespace traindeck
