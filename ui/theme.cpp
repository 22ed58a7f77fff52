#include "theme.h"

#include <QApplication>
#include <QFile>
#include <QPalette>
#include <QStyle>
#include <QStyleFactory>

#include <algorithm>

namespace traindeck {

namespace {

QPalette dark_palette() {
    QPalette palette;
    const QColor window(45, 45, 48), base(30, 30, 32), text(228, 228, 228), disabled(128, 128, 128);
    const QColor highlight(61, 126, 204);
    palette.setColor(QPalette::Window, window);
    palette.setColor(QPalette::WindowText, text);
    palette.setColor(QPalette::Base, base);
    palette.setColor(QPalette::AlternateBase, QColor(40, 40, 43));
    palette.setColor(QPalette::ToolTipBase, QColor(60, 60, 64));
    palette.setColor(QPalette::ToolTipText, text);
    palette.setColor(QPalette::PlaceholderText, QColor(150, 150, 150));
    palette.setColor(QPalette::Text, text);
    palette.setColor(QPalette::Button, QColor(62, 62, 66)); // lighter than the window: handles and buttons stand out
    palette.setColor(QPalette::ButtonText, text);
    palette.setColor(QPalette::BrightText, QColor(255, 90, 90));
    palette.setColor(QPalette::Light, QColor(70, 70, 74));
    palette.setColor(QPalette::Midlight, QColor(58, 58, 62));
    palette.setColor(QPalette::Mid, QColor(38, 38, 40));
    palette.setColor(QPalette::Dark, QColor(24, 24, 26));
    palette.setColor(QPalette::Shadow, QColor(10, 10, 10));
    palette.setColor(QPalette::Highlight, highlight);
    palette.setColor(QPalette::HighlightedText, Qt::white);
    palette.setColor(QPalette::Link, QColor(110, 170, 255));
    palette.setColor(QPalette::LinkVisited, QColor(170, 140, 255));
    for (const QPalette::ColorRole role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
        palette.setColor(QPalette::Disabled, role, disabled);
    palette.setColor(QPalette::Disabled, QPalette::Highlight, QColor(80, 80, 80));
    return palette;
}

} // namespace

Theme theme_from_name(const QString& name) {
    if (name == QLatin1String("light"))
        return Theme::light;
    if (name == QLatin1String("dark"))
        return Theme::dark;
    return Theme::system;
}

QString theme_name(Theme theme) {
    switch (theme) {
    case Theme::light:
        return QStringLiteral("light");
    case Theme::dark:
        return QStringLiteral("dark");
    case Theme::system:
        break;
    }
    return QStringLiteral("system");
}

QIcon action_icon(const char* name, QStyle::StandardPixmap fallback) {
    const QString themed = QLatin1String(name);
    if (QIcon::hasThemeIcon(themed))
        return QIcon::fromTheme(themed);
    const QString bundled = QStringLiteral(":/icons/actions/%1.svg").arg(themed);
    if (QFile::exists(bundled))
        return QIcon(bundled);
    return QApplication::style()->standardIcon(fallback);
}

QColor background_tint(const QColor& pastel, const QPalette& palette) {
    if (!palette_is_dark(palette))
        return pastel;
    // The hue kept (runs sharing a value still read as a group), the lightness of a dark cell: light text on it has a
    // contrast of about 6:1.
    return QColor::fromHslF(std::max(pastel.hslHueF(), 0.0f), 0.45f, 0.26f);
}

void apply_theme(Theme theme) {
    static const QString system_style = QApplication::style()->name();
    static bool changed = false; // the system's look untouched so far: nothing to undo, and nothing pinned
    if (theme == Theme::system) {
        if (!changed)
            return;
        changed = false;
        QApplication::setStyle(QStyleFactory::create(system_style));
        // A palette with nothing set resolves against the system's (the platform theme's and the style's), and
        // follows it when the desktop switches between light and dark.
        QApplication::setPalette(QPalette());
        return;
    }
    changed = true;
    // Fusion draws every widget from the palette, so a dark palette is dark everywhere.
    QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
    QApplication::setPalette(theme == Theme::dark ? dark_palette() : QApplication::style()->standardPalette());
}

} // namespace traindeck
