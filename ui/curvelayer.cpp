// CurveLayer (curvelayer.h): the points mapped through their series' axes at paint time, one affine map an axis (a log
// axis maps the logarithms), the way Qt Charts places them, without building any path ahead of the paint.
#include "curvelayer.h"

#include <QAbstractAxis>
#include <QDateTime>
#include <QDateTimeAxis>
#include <QLogValueAxis>
#include <QPainter>
#include <QValueAxis>

#include <algorithm>
#include <cmath>

namespace traindeck {

namespace {

// One axis's values on the plot area's pixels: position = origin + scale * (log) value.
struct AxisMap {
    double origin = 0, scale = 0;
    bool log = false;
    bool valid = false;
    double operator()(double value) const { return origin + scale * (log ? std::log(std::max(value, 1e-300)) : value); }
};

// `from` to `to` along the axis's range [low, high] (its logarithms for a log axis).
AxisMap axis_map(const QAbstractAxis* axis, double from, double to) {
    AxisMap map;
    double low = 0, high = 0;
    if (const auto* values = qobject_cast<const QValueAxis*>(axis)) {
        low = values->min();
        high = values->max();
    } else if (const auto* logs = qobject_cast<const QLogValueAxis*>(axis)) {
        if (!(logs->min() > 0) || !(logs->max() > 0))
            return map;
        map.log = true;
        low = std::log(logs->min());
        high = std::log(logs->max());
    } else if (const auto* dates = qobject_cast<const QDateTimeAxis*>(axis)) {
        low = static_cast<double>(dates->min().toMSecsSinceEpoch());
        high = static_cast<double>(dates->max().toMSecsSinceEpoch());
    } else {
        return map;
    }
    if (!(high > low))
        return map;
    if (axis->isReverse())
        std::swap(from, to);
    map.scale = (to - from) / (high - low);
    map.origin = from - map.scale * low;
    map.valid = std::isfinite(map.scale) && std::isfinite(map.origin);
    return map;
}

// The curve drawn for a series in `curves` (const or not), or nullptr.
template <typename Curves>
auto* find_curve(Curves& curves, const QAbstractSeries* series) {
    const auto it = std::find_if(curves.begin(), curves.end(), [series](const auto& c) { return c.series == series; });
    return it == curves.end() ? nullptr : &*it;
}

} // namespace

CurveLayer::CurveLayer(QChart* chart) : QGraphicsObject(chart), chart_(chart), plot_(chart->plotArea()) {
    // Qt Charts stacks its items by z: grid 2, axes 3, series 4, legend 5 (chartpresenter_p.h).
    setZValue(3.5);
    setFlag(QGraphicsItem::ItemHasNoContents, false);
    setAcceptedMouseButtons(Qt::NoButton);
    connect(chart_, &QChart::plotAreaChanged, this, [this](const QRectF& plot) {
        prepareGeometryChange();
        plot_ = plot;
        update();
    });
}

void CurveLayer::axesChanged() {
    for (const Curve& drawn : curves_)
        follow(drawn.series);
    update();
}

CurveLayer::Curve& CurveLayer::curve(QAbstractSeries* series) {
    if (Curve* known = find_curve(curves_, series))
        return *known;
    curves_.push_back({series, {}, {}});
    return curves_.back();
}

void CurveLayer::follow(QAbstractSeries* series) {
    if (!followed_.contains(series)) {
        followed_.insert(series);
        connect(series, &QAbstractSeries::visibleChanged, this, [this] { update(); });
        connect(series, &QObject::destroyed, this, [this, series] {
            followed_.remove(series);
            remove(series);
        });
    }
    for (QAbstractAxis* axis : series->attachedAxes()) {
        if (followed_.contains(axis))
            continue;
        followed_.insert(axis);
        connect(axis, &QObject::destroyed, this, [this, axis] { followed_.remove(axis); });
        if (auto* values = qobject_cast<QValueAxis*>(axis))
            connect(values, &QValueAxis::rangeChanged, this, [this] { update(); });
        else if (auto* logs = qobject_cast<QLogValueAxis*>(axis))
            connect(logs, &QLogValueAxis::rangeChanged, this, [this] { update(); });
        else if (auto* dates = qobject_cast<QDateTimeAxis*>(axis))
            connect(dates, &QDateTimeAxis::rangeChanged, this, [this] { update(); });
        connect(axis, &QAbstractAxis::reverseChanged, this, [this] { update(); });
    }
}

void CurveLayer::setPoints(QXYSeries* series, QList<QPointF> points) {
    Curve& drawn = curve(series);
    follow(series);
    if (drawn.points == points)
        return;
    drawn.points = std::move(points);
    update();
}

void CurveLayer::setBand(QAreaSeries* area, QList<QPointF> upper, QList<QPointF> lower) {
    Curve& drawn = curve(area);
    follow(area);
    if (drawn.points == upper && drawn.lower == lower)
        return;
    drawn.points = std::move(upper);
    drawn.lower = std::move(lower);
    update();
}

void CurveLayer::remove(const QAbstractSeries* series) {
    std::erase_if(curves_, [series](const Curve& c) { return c.series == series; });
    update();
}

const QList<QPointF>* CurveLayer::points(const QAbstractSeries* series) const {
    const Curve* drawn = find_curve(curves_, series);
    return drawn ? &drawn->points : nullptr;
}

const QList<QPointF>* CurveLayer::lower(const QAbstractSeries* series) const {
    const Curve* drawn = find_curve(curves_, series);
    return drawn ? &drawn->lower : nullptr;
}

QRectF CurveLayer::boundingRect() const { return plot_; }

void CurveLayer::paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) {
    Q_UNUSED(option);
    Q_UNUSED(widget);
    const QRectF plot = chart_->plotArea();
    if (plot.isEmpty())
        return;
    painter->save();
    painter->setClipRect(plot);
    for (const Curve& drawn : curves_) {
        if (!drawn.series->isVisible() || drawn.points.isEmpty())
            continue;
        // Axes attached since (another x-axis chosen) are followed from their first paint.
        follow(drawn.series);
        AxisMap x, y;
        for (const QAbstractAxis* axis : drawn.series->attachedAxes()) {
            if (axis->orientation() == Qt::Horizontal)
                x = axis_map(axis, plot.left(), plot.right());
            else
                y = axis_map(axis, plot.bottom(), plot.top());
        }
        if (!x.valid || !y.valid)
            continue;
        const auto mapped = [&](const QList<QPointF>& points, QPolygonF& out) {
            for (const QPointF& p : points)
                out << QPointF(x(p.x()), y(p.y()));
        };
        if (auto* area = qobject_cast<QAreaSeries*>(drawn.series)) {
            QPolygonF band;
            band.reserve(drawn.points.size() + drawn.lower.size());
            mapped(drawn.points, band);
            QPolygonF lower;
            lower.reserve(drawn.lower.size());
            mapped(drawn.lower, lower);
            std::reverse(lower.begin(), lower.end());
            band << lower;
            painter->setPen(area->pen().color().alpha() == 0 ? QPen(Qt::NoPen) : area->pen());
            painter->setBrush(area->brush());
            painter->drawPolygon(band);
        } else if (auto* line = qobject_cast<QXYSeries*>(drawn.series)) {
            QPolygonF polyline;
            polyline.reserve(drawn.points.size());
            mapped(drawn.points, polyline);
            painter->setPen(line->pen());
            painter->setBrush(Qt::NoBrush);
            painter->drawPolyline(polyline);
        }
    }
    painter->restore();
}

} // namespace traindeck
