#pragma once
// How the console's charts look and behave, in one place: the legend under the plot, thin margins, square corners,
// antialiased lines, drag to zoom (right-click zooms out).
#include <QChart>
#include <QChartView>
#include <QLegend>

namespace traindeck {

inline QChartView* make_chart_view(QChart* chart) {
    chart->legend()->setAlignment(Qt::AlignBottom);
    chart->setMargins(QMargins(4, 4, 4, 4));
    chart->setBackgroundRoundness(0);
    auto* view = new QChartView(chart);
    view->setRenderHint(QPainter::Antialiasing);
    view->setRubberBand(QChartView::RectangleRubberBand);
    return view;
}

} // namespace traindeck
