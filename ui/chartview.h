#pragma once
// How the console's charts look and behave, in one place: the legend under the plot, thin margins, square corners,
// antialiased lines, drag to zoom (right-click zooms out, double-click shows everything), legend entries that hide
// their series, a crosshair with the values under it, and colours that follow the application's palette (a
// dark palette, the system's or Settings', gets Qt Charts' dark theme, at once and without losing the series' own
// colours).
#include "theme.h"

#include <QAbstractSeries>
#include <QAreaSeries>
#include <QChart>
#include <QChartView>
#include <QEvent>
#include <QHash>
#include <QLegend>
#include <QLegendMarker>
#include <QXYSeries>

#include <utility>
#include <vector>

namespace traindeck {

// What one drawn point of a curve stands for when it summarises several: a bucket of the series store (steps) or of a
// telemetry series (time). The x range it covers in its x axis's units, how many points it holds, and their min, max
// and last value (the drawn value may differ: smoothing, a log axis's floor).
struct PointSummary {
    double first_x = 0, last_x = 0;
    qint64 count = 0;
    double min = 0, max = 0, last = 0;
};

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

// Gives a series new points, unless it holds these already. Qt Charts rebuilds a line's whole geometry on any
// replace, stroking it for mouse hits (QPainterPathStroker, most of a redraw's time at 2,000 points a curve), and a
// refresh that found nothing new (a finished run, a chart left open) need not pay for that. Returns whether it did.
inline bool replace_points(QXYSeries* series, const QList<QPointF>& points) {
    if (series->count() == points.size() && series->points() == points)
        return false;
    series->replace(points);
    return true;
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

// The console's chart view: drag to zoom, right-click to zoom out, double-click back to the whole run; a click on a
// legend entry hides or shows its series (its marker greys out, so the state is not in colour alone); the
// crosshair follows the mouse, with a tooltip of every visible curve's value at that x (crosshairText()). All of it
// from the keyboard too, once the chart has the focus (Tab): + and − zoom, the arrows move the view, 0 or Home shows
// everything, 1 to 9 hide or show the legend's entries in order, and Space says the values at the plot's centre.
class ChartView : public QChartView {
    Q_OBJECT
public:
    explicit ChartView(QChart* chart, QWidget* parent = nullptr);
    ~ChartView() override;
    // What the tooltip says at a point of the plot area, in the view's coordinates ("" outside it or with no data):
    // the x, then each visible curve's name and value at its point nearest that x.
    // A curve with summaries (setSummaries) says more for its point: "train loss: 0.41 (last 0.42, min 0.39, max 0.43
    // of 40 points, step 1,200–1,239)".
    QString crosshairText(const QPointF& at) const;
    // What each of `series`' points stands for, one per point in the points' order; given again whenever the points
    // are replaced (summaries whose count does not match the points are not used).
    void setSummaries(QXYSeries* series, QVector<PointSummary> summaries);
    // The tooltip of a crosshair showing, said again for what is drawn now: a live chart's points and axes move
    // under a mouse that rests (the owner calls it after each refresh).
    void updateCrosshair();
    // The chart's own drawing of its long curves (curvelayer.h), whose points the crosshair reads there.
    void setCurveLayer(const class CurveLayer* curves) { curves_ = curves; }
    // Without a crosshair (a scatter, whose points say their run when hovered): the rest stays (zoom, legend, keys).
    void setCrosshairEnabled(bool enabled) { crosshair_enabled_ = enabled; }
    // Connects the legend's markers not connected yet (series come and go); done on every press, before the legend
    // sees it.
    void followLegend();

signals:
    // The user asked to see everything (double-click, 0 or Home): the owner draws what came while it was zoomed.
    void viewReset();

protected:
    void mouseMoveEvent(QMouseEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseDoubleClickEvent(QMouseEvent* event) override;
    void leaveEvent(QEvent* event) override;
    void keyPressEvent(QKeyEvent* event) override;
    bool viewportEvent(QEvent* event) override;

private:
    class QGraphicsLineItem* crosshair_ = nullptr;
    QPointF mouse_; // where the crosshair is, in the view's coordinates
    bool crosshair_enabled_ = true;
    const class CurveLayer* curves_ = nullptr;
    void showCrosshair(const QPointF& at, const QPoint& tooltip_at);
    QHash<const QXYSeries*, QVector<PointSummary>> summaries_;
    void toggle(QLegendMarker* marker); // hides or shows its series, the label struck out meanwhile
};

inline QChartView* make_chart_view(QChart* chart) {
    chart->legend()->setAlignment(Qt::AlignBottom);
    chart->setMargins(QMargins(4, 4, 4, 4));
    chart->setBackgroundRoundness(0);
    auto* view = new ChartView(chart);
    view->setRenderHint(QPainter::Antialiasing);
    view->setRubberBand(QChartView::RectangleRubberBand);
    apply_chart_palette(chart, view->palette());
    new ChartPaletteFollower(view);
    return view;
}

} // namespace traindeck
