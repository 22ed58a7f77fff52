#pragma once
// The console's look: the system's style and palette (the default), or a light or a dark one chosen in Settings,
// applied to the whole application at once; widgets follow, and so do the charts (chartview.h).
#include <QString>

namespace traindeck {

enum class Theme { system, light, dark };

// "system", "light" or "dark" (what QSettings keeps); anything else is system.
Theme theme_from_name(const QString& name);
QString theme_name(Theme theme);
// Needs the QApplication. "system" leaves the system's look alone (it keeps following the desktop's light and dark),
// or brings it back after light or dark.
void apply_theme(Theme theme);

} // namespace traindeck
