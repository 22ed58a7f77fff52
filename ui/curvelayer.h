#pragma once
// The job chart's long curves drawn by the console itself (issue 15: a live chart of a 10 M-point run redrawn in under
// 8 ms). Qt Charts rebuilds a curve's whole geometry, a stroked outline for mouse hits included, whenever its points
// or an axis's range change: about 1.2 ms for 2,000 points, for each curve on each live refresh, before any
// painting. This item keeps the points and maps them through the axes as it paints, a polyline (or a band's polygon)
// clipped to the plot area: new points cost nothing until the next paint.
//
// Each curve stays a series of the chart, with no points: its legend entry, colour, pen, axes and visibility (a
// legend click hides it here too) are the series'. ChartView's crosshair reads the points from here (points()).
#include <QAreaSeries>
#include <QChart>
#include <QGraphicsObject>
#include <QList>
#include <QPointF>
#include <QPointer>
#include <QSet>
#include <QXYSeries>

#include <vector>

namespace traindeck {

class CurveLayer : public QGraphicsObject {
    Q_OBJECT
public:
    // A child of the chart, over its plot area: above its grid and axes, under its series' own items (the validation
    // accuracy's points stay on top, as they were) and its legend.
    explicit CurveLayer(QChart* chart);

    // `series` (in the chart, attached to its axes, holding no points) is drawn from `points` with its pen.
    void setPoints(QXYSeries* series, QList<QPointF> points);
    // A band between two edges (upper and lower, point for point in x order): `area`'s own line series hold none; drawn
    // with its brush (and its pen, when it has one).
    void setBand(QAreaSeries* area, QList<QPointF> upper, QList<QPointF> lower);
    // The series' axes were replaced (another x-axis, a log scale): follow the new ones and paint again.
    void axesChanged();
    // Forgets a series (before the chart removes it).
    void remove(const QAbstractSeries* series);
    // What is drawn for a series: its points (a band: its upper edge, lower() its lower); nullptr for a series this
    // layer does not draw.
    const QList<QPointF>* points(const QAbstractSeries* series) const;
    const QList<QPointF>* lower(const QAbstractSeries* series) const;

    QRectF boundingRect() const override;
    void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

private:
    struct Curve {
        QAbstractSeries* series = nullptr;
        QList<QPointF> points, lower; // lower: a band's lower edge
    };
    Curve& curve(QAbstractSeries* series);
    // Repaints when anything the drawing depends on moves: the plot area, an axis's range, a series shown or hidden.
    void follow(QAbstractSeries* series);

    QChart* chart_;
    QRectF plot_; // the plot area as last told to the scene (prepareGeometryChange before it moves)
    std::vector<Curve> curves_;
    QSet<QObject*> followed_; // axes and series whose changes repaint this layer
};

} // namespace traindeck
