#include "chartview.h"

#include "axisticks.h"
#include "curvelayer.h"

#include <QDateTime>
#include <QDateTimeAxis>
#include <QGraphicsLineItem>
#include <QKeyEvent>
#include <QLegendMarker>
#include <QLineSeries>
#include <QMouseEvent>
#include <QToolTip>
#include <QValueAxis>

#include <algorithm>
#include <cmath>

namespace traindeck {

ChartView::ChartView(QChart* chart, QWidget* parent) : QChartView(chart, parent) {
    setMouseTracking(true);
    // Screen readers name the chart by its title (which may change: a group chart's metric).
    const auto name_it = [this] {
        setAccessibleName(this->chart()->title().isEmpty() ? tr("Chart") : this->chart()->title());
    };
    name_it();
    connect(chart, &QChart::plotAreaChanged, this, name_it);
    // Not a tooltip: the crosshair's values are the tooltip here.
    setStatusTip(tr("Drag to zoom, right-click to zoom out, double-click to see everything; click a legend entry to "
                    "hide or show its curve (keys: + − arrows 0, 1–9 for the legend, Space for the values)"));
    setFocusPolicy(Qt::StrongFocus);
    setAccessibleDescription(statusTip());
}

// The chart, its series with it, goes after this object's members (QWidget's destructor deletes the scene): their
// destroyed() must not reach summaries_ then.
ChartView::~ChartView() {
    for (const QXYSeries* series : summaries_.keys())
        disconnect(series, &QObject::destroyed, this, nullptr);
}

void ChartView::followLegend() {
    for (QLegendMarker* marker : chart()->legend()->markers()) {
        if (marker->property("followed").toBool())
            continue;
        marker->setProperty("followed", true);
        connect(marker, &QLegendMarker::clicked, this, [this, marker] { toggle(marker); });
    }
}

void ChartView::toggle(QLegendMarker* marker) {
    QAbstractSeries* series = marker->series();
    series->setVisible(!series->isVisible());
    marker->setVisible(true); // hiding a series hides its marker too: keep it, to click again
    // Greyed out while hidden: said by the label, not only by the colour.
    QFont font = marker->font();
    font.setStrikeOut(!series->isVisible());
    marker->setFont(font);
    QColor label = marker->labelBrush().color();
    label.setAlphaF(series->isVisible() ? 1.0 : 0.4);
    marker->setLabelBrush(label);
}

void ChartView::keyPressEvent(QKeyEvent* event) {
    const QRectF plot = chart()->plotArea();
    const int key = event->key();
    if (key == Qt::Key_Plus || key == Qt::Key_Equal) {
        chart()->zoomIn();
    } else if (key == Qt::Key_Minus) {
        chart()->zoomOut();
    } else if (key == Qt::Key_0 || key == Qt::Key_Home) {
        chart()->zoomReset();
        emit viewReset();
    } else if (key == Qt::Key_Left || key == Qt::Key_Right || key == Qt::Key_Up || key == Qt::Key_Down) {
        // A tenth of the plot a press; a move is a zoom to Qt Charts (double-click or 0 come back).
        const double dx = plot.width() / 10, dy = plot.height() / 10;
        chart()->scroll(key == Qt::Key_Left    ? -dx
                        : key == Qt::Key_Right ? dx
                                               : 0,
                        key == Qt::Key_Up     ? dy
                        : key == Qt::Key_Down ? -dy
                                              : 0);
    } else if (key >= Qt::Key_1 && key <= Qt::Key_9) {
        followLegend();
        // The entries the legend shows (one kept out of it, a budget line with no budget, does not count).
        QList<QLegendMarker*> markers = chart()->legend()->markers();
        markers.removeIf([](const QLegendMarker* marker) { return !marker->isVisible(); });
        const int index = key - Qt::Key_1;
        if (index >= markers.size()) {
            QChartView::keyPressEvent(event);
            return;
        }
        toggle(markers[index]);
    } else if (key == Qt::Key_Space && crosshair_enabled_) {
        // The crosshair's values at the plot's centre, where the mouse cannot go.
        const QPoint centre = mapFromScene(chart()->mapToScene(plot.center()));
        const QString text = crosshairText(centre);
        QToolTip::showText(mapToGlobal(centre), text, this);
        setAccessibleDescription(statusTip() + QLatin1Char('\n') + text);
    } else {
        QChartView::keyPressEvent(event);
        return;
    }
    event->accept();
}

QString ChartView::crosshairText(const QPointF& at) const {
    const QPointF scene = mapToScene(at.toPoint());
    const QPointF in_chart = chart()->mapFromScene(scene);
    if (!chart()->plotArea().contains(in_chart))
        return {};
    // The index of the point of `points` (in x order, not empty) nearest x.
    const auto nearest_index = [](const QList<QPointF>& points, double x) {
        const auto after =
            std::lower_bound(points.begin(), points.end(), x, [](const QPointF& p, double v) { return p.x() < v; });
        auto nearest = after == points.end() ? std::prev(after) : after;
        if (after != points.begin() && after != points.end() &&
            std::abs(std::prev(after)->x() - x) < std::abs(after->x() - x))
            nearest = std::prev(after);
        return static_cast<qsizetype>(nearest - points.begin());
    };
    const auto nearest_to = [&](const QList<QPointF>& points, double x) { return points[nearest_index(points, x)]; };
    QStringList lines;
    QString x_line, first_x;
    for (QAbstractSeries* series : chart()->series()) {
        if (!series->isVisible() || series->name().isEmpty())
            continue;
        const QPointF value = chart()->mapToValue(in_chart, series);
        // A curve the chart's CurveLayer draws: its points are there, not in the series.
        const QList<QPointF>* drawn = curves_ ? curves_->points(series) : nullptr;
        if (auto* area = qobject_cast<QAreaSeries*>(series)) {
            // A band: its low and high edges there (the bucket's min and max).
            // A bucket of one point has no spread to tell: its curve's line says its value.
            const QList<QPointF> upper = drawn                 ? *drawn
                                         : area->upperSeries() ? area->upperSeries()->points()
                                                               : QList<QPointF>();
            const QList<QPointF> lower = drawn                 ? *curves_->lower(series)
                                         : area->lowerSeries() ? area->lowerSeries()->points()
                                                               : QList<QPointF>();
            if (!lower.isEmpty() && !upper.isEmpty()) {
                const double low = nearest_to(lower, value.x()).y();
                const double high = nearest_to(upper, value.x()).y();
                if (low != high)
                    lines << QStringLiteral("%1: %2 – %3")
                                 .arg(series->name(), QString::number(low, 'g', 6), QString::number(high, 'g', 6));
            }
            continue;
        }
        auto* xy = qobject_cast<QXYSeries*>(series);
        if (!xy)
            continue;
        const QList<QPointF> points = drawn ? *drawn : xy->points();
        if (points.isEmpty())
            continue;
        const qsizetype index = nearest_index(points, value.x());
        const QPointF nearest = points[index];
        const QAbstractAxis* x_axis = nullptr;
        const QAbstractAxis* y_axis = nullptr;
        for (QAbstractAxis* axis : xy->attachedAxes())
            (axis->orientation() == Qt::Horizontal ? x_axis : y_axis) = axis;
        // Written as its axis writes it: a time as m:ss, wall time as a clock, steps as whole numbers.
        const auto x_label = [x_axis](double x) {
            if (const auto* dates = qobject_cast<const QDateTimeAxis*>(x_axis))
                return QDateTime::fromMSecsSinceEpoch(static_cast<qint64>(x)).toString(dates->format());
            return value_label(x_axis, x);
        };
        const QString x_title = x_axis && !x_axis->titleText().isEmpty() ? x_axis->titleText() : tr("x");
        const QString own_x = x_label(nearest.x());
        if (x_line.isEmpty()) {
            x_line = QStringLiteral("%1 %2").arg(x_title, own_x);
            first_x = own_x;
        }
        QString line = QStringLiteral("%1: %2").arg(xy->name(), value_label(y_axis, nearest.y()));
        // A sparser series (a validation every epoch) says where its nearest point is, when not where the first is.
        if (own_x != first_x)
            line += tr(" at %1 %2").arg(x_title, own_x);
        const auto summaries = summaries_.constFind(xy);
        if (summaries != summaries_.cend() && summaries->size() == points.size()) {
            // What the point stands for: a bucket's spread and steps, or the raw value under a smoothed one.
            const PointSummary& at = (*summaries)[index];
            if (at.count > 1)
                line += tr("  (last %1, min %2, max %3 of %4 points, %5 %6–%7)")
                            .arg(value_label(y_axis, at.last), value_label(y_axis, at.min), value_label(y_axis, at.max))
                            .arg(at.count)
                            .arg(x_title, x_label(at.first_x), x_label(at.last_x));
            else if (value_label(y_axis, at.last) != value_label(y_axis, nearest.y()))
                line += tr("  (raw %1)").arg(value_label(y_axis, at.last));
        }
        lines << line;
    }
    if (lines.isEmpty())
        return {};
    return x_line + QLatin1Char('\n') + lines.join(QLatin1Char('\n'));
}

void ChartView::setSummaries(QXYSeries* series, QVector<PointSummary> summaries) {
    if (!summaries_.contains(series))
        connect(series, &QObject::destroyed, this, [this, series] { summaries_.remove(series); });
    summaries_[series] = std::move(summaries);
}

void ChartView::mouseMoveEvent(QMouseEvent* event) {
    QChartView::mouseMoveEvent(event);
    if (crosshair_enabled_)
        showCrosshair(event->position(), event->globalPosition().toPoint() + QPoint(14, 14));
}

void ChartView::updateCrosshair() {
    // Shown means the mouse is over the plot: leaving the view hides it.
    if (crosshair_ && crosshair_->isVisible())
        showCrosshair(mouse_, mapToGlobal(mouse_.toPoint()) + QPoint(14, 14));
}

void ChartView::showCrosshair(const QPointF& at, const QPoint& tooltip_at) {
    mouse_ = at;
    const QString text = crosshairText(at);
    if (text.isEmpty()) {
        if (crosshair_)
            crosshair_->hide();
        QToolTip::hideText();
        return;
    }
    const QPointF mouse = mapToScene(at.toPoint());
    const QRectF area = chart()->mapRectToScene(chart()->plotArea());
    if (!crosshair_) {
        crosshair_ = new QGraphicsLineItem;
        crosshair_->setZValue(1000);
        scene()->addItem(crosshair_);
    }
    QPen pen(palette().color(QPalette::Text)); // the palette of now (the appearance can change)
    pen.setStyle(Qt::DashLine);
    pen.setWidthF(0.8);
    crosshair_->setPen(pen);
    crosshair_->setLine(mouse.x(), area.top(), mouse.x(), area.bottom());
    crosshair_->show();
    QToolTip::showText(tooltip_at, text, this);
}

bool ChartView::viewportEvent(QEvent* event) {
    // A resting mouse asks the scene for a tooltip, which would hide the crosshair's values just as they are read.
    if (event->type() == QEvent::ToolTip && crosshair_enabled_)
        return true;
    return QChartView::viewportEvent(event);
}

void ChartView::mousePressEvent(QMouseEvent* event) {
    followLegend(); // before the legend handles the click
    QChartView::mousePressEvent(event);
}

void ChartView::mouseDoubleClickEvent(QMouseEvent* event) {
    chart()->zoomReset();
    emit viewReset();
    QChartView::mouseDoubleClickEvent(event);
}

void ChartView::leaveEvent(QEvent* event) {
    if (crosshair_)
        crosshair_->hide();
    QChartView::leaveEvent(event);
}

} // namespace traindeck
