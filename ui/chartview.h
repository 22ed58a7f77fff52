#pragma once
// How the console's charts look and behave, in one place: the legend under the plot, thin margins, square corners,
// antialiased lines, drag to zoom (right-click zooms out), and colours that follow the application's palette (a
// dark palette, the system's or Settings', gets Qt Charts' dark theme, at once and without losing the series' own
// colours).
#include <QAbstractSeries>
#include <QAreaSeries>
#include <QChart>
#include <QChartView>
#include <QEvent>
#include <QLegend>
#include <QXYSeries>

#include <utility>
#include <vector>

namespace traindeck {

inline bool palette_is_dark(const QPalette& palette) {
    return palette.color(QPalette::Window).lightness() < palette.color(QPalette::WindowText).lightness();
}

// The chart's theme for `palette`. A theme change repaints every series in the theme's colours: the colours the
// console chose for them (loss blue, accuracy red, overlays) are kept across it.
inline void apply_chart_palette(QChart* chart, const QPalette& palette) {
    const QChart::ChartTheme theme = palette_is_dark(palette) ? QChart::ChartThemeDark : QChart::ChartThemeLight;
    if (chart->theme() == theme)
        return;
    std::vector<std::pair<QAbstractSeries*, std::pair<QPen, QBrush>>> kept;
    for (QAbstractSeries* series : chart->series()) {
        if (auto* xy = qobject_cast<QXYSeries*>(series))
            kept.push_back({series, {xy->pen(), xy->brush()}});
        else if (auto* area = qobject_cast<QAreaSeries*>(series))
            kept.push_back({series, {area->pen(), area->brush()}});
    }
    chart->setTheme(theme);
    chart->setBackgroundRoundness(0);
    for (const auto& [series, look] : kept) {
        if (auto* xy = qobject_cast<QXYSeries*>(series)) {
            xy->setPen(look.first);
            xy->setBrush(look.second);
        } else if (auto* area = qobject_cast<QAreaSeries*>(series)) {
            area->setPen(look.first);
            area->setBrush(look.second);
        }
    }
}

// Re-themes a chart view's chart when the application's palette changes (Settings → Appearance, or the system's).
class ChartPaletteFollower : public QObject {
public:
    explicit ChartPaletteFollower(QChartView* view) : QObject(view), view_(view) { view->installEventFilter(this); }
    bool eventFilter(QObject* watched, QEvent* event) override {
        if (watched == view_ && event->type() == QEvent::PaletteChange && view_->chart())
            apply_chart_palette(view_->chart(), view_->palette());
        return false;
    }

private:
    QChartView* view_;
};

inline QChartView* make_chart_view(QChart* chart) {
    chart->legend()->setAlignment(Qt::AlignBottom);
    chart->setMargins(QMargins(4, 4, 4, 4));
    chart->setBackgroundRoundness(0);
    auto* view = new QChartView(chart);
    view->setRenderHint(QPainter::Antialiasing);
    view->setRubberBand(QChartView::RectangleRubberBand);
    apply_chart_palette(chart, view->palette());
    new ChartPaletteFollower(view);
    return view;
}

} // namespace traindeck
