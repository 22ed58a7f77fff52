// The console's chart view (ui/chartview.h): the crosshair's values, legend entries that hide their curves, the
// dark palette's theme keeping the curves' own colours.
#include "axisticks.h"
#include "chartview.h"
#include "theme.h"
#include "unittest.h"

#include <QApplication>
#include <QAreaSeries>
#include <QKeyEvent>
#include <QLegendMarker>
#include <QLineSeries>
#include <QMouseEvent>
#include <QToolTip>
#include <QValueAxis>

#include <gtest/gtest.h>

#include <memory>

using namespace traindeck;

namespace {

struct TwoCurves {
    QChart* chart = new QChart;
    QLineSeries* loss = new QLineSeries;
    QLineSeries* accuracy = new QLineSeries;
    ChartView* view;
    TwoCurves() {
        loss->setName("train loss");
        loss->append({{0, 1}, {10, 0.5}, {20, 0.25}});
        loss->setColor(QColor(31, 119, 180));
        accuracy->setName("val accuracy");
        accuracy->append({{0, 0.1}, {12, 0.9}});
        chart->addSeries(loss);
        chart->addSeries(accuracy);
        auto* x = new QValueAxis;
        x->setRange(0, 20);
        x->setTitleText("step");
        auto* y = new QValueAxis;
        y->setRange(0, 1);
        chart->addAxis(x, Qt::AlignBottom);
        chart->addAxis(y, Qt::AlignLeft);
        for (QLineSeries* series : {loss, accuracy}) {
            series->attachAxis(x);
            series->attachAxis(y);
        }
        view = static_cast<ChartView*>(make_chart_view(chart));
        view->resize(640, 420);
        view->show();
        test::settle();
    }
    ~TwoCurves() { delete view; }
    QPoint at(double x, double y) const {
        return view->mapFromScene(chart->mapToScene(chart->mapToPosition(QPointF(x, y), loss)));
    }
};

} // namespace

// A refresh that found nothing new leaves a series as it is (Qt Charts would rebuild and stroke its whole line); a
// change anywhere, or in the number of points, replaces them.
TEST(ChartView, ReplacePointsReplacesOnlyWhatChanged) {
    QLineSeries series;
    int replaced = 0;
    QObject::connect(&series, &QXYSeries::pointsReplaced, [&replaced] { ++replaced; });
    const QList<QPointF> points{{0, 1}, {10, 0.5}, {20, 0.25}};
    EXPECT_TRUE(replace_points(&series, points));
    EXPECT_EQ(replaced, 1);
    EXPECT_FALSE(replace_points(&series, points));
    EXPECT_EQ(replaced, 1);
    QList<QPointF> moved = points;
    moved[1].setY(0.4);
    EXPECT_TRUE(replace_points(&series, moved));
    EXPECT_EQ(replaced, 2);
    EXPECT_EQ(series.points(), moved);
    EXPECT_TRUE(replace_points(&series, moved.mid(0, 2)));
    EXPECT_EQ(series.count(), 2);
    EXPECT_TRUE(replace_points(&series, {}));
    EXPECT_EQ(series.count(), 0);
    EXPECT_FALSE(replace_points(&series, {}));
}

TEST(ChartView, TheCrosshairSaysEachVisibleCurvesValueNearestTheMouse) {
    TwoCurves curves;
    const QString text = curves.view->crosshairText(curves.at(10, 0.5));
    EXPECT_TRUE(text.startsWith("step 10\n")) << text.toStdString();
    EXPECT_TRUE(text.contains("train loss: 0.5")) << text.toStdString();
    // Its point at 12 is the nearest, and it says where that point is; the loss's is at the mouse's step.
    EXPECT_TRUE(text.contains("val accuracy: 0.9 at step 12")) << text.toStdString();
    EXPECT_FALSE(text.contains("train loss: 0.5 at")) << text.toStdString();
    EXPECT_EQ(curves.view->crosshairText(QPoint(2, 2)), QString());        // outside the plot
    curves.loss->setVisible(false);
    EXPECT_FALSE(curves.view->crosshairText(curves.at(10, 0.5)).contains("train loss"));
}

// The band of buckets' min and max says its spread where a bucket holds several values, and nothing where it holds
// one (its curve's line says that value).
TEST(ChartView, TheBandSaysItsSpreadOnlyWhereThereIsOne) {
    TwoCurves curves;
    auto* low = new QLineSeries;
    auto* high = new QLineSeries;
    low->append({{0, 1}, {10, 0.25}, {20, 0.25}});
    high->append({{0, 1}, {10, 0.75}, {20, 0.25}});
    auto* band = new QAreaSeries(high, low);
    band->setName("loss min–max");
    curves.chart->addSeries(band);
    for (QAbstractAxis* axis : curves.chart->axes())
        band->attachAxis(axis);
    EXPECT_TRUE(curves.view->crosshairText(curves.at(10, 0.5)).contains("loss min–max: 0.25 – 0.75"))
        << curves.view->crosshairText(curves.at(10, 0.5)).toStdString();
    const QString one = curves.view->crosshairText(curves.at(0, 0.5));
    EXPECT_FALSE(one.contains("loss min–max")) << one.toStdString();
    EXPECT_TRUE(one.contains("train loss: 1")) << one.toStdString();
}

TEST(ChartView, APointThatSummarisesABucketSaysItsSpreadAndSteps) {
    TwoCurves curves;
    // The loss's middle point stands for 40 points of steps 1–10 (smoothed to 0.5); the accuracy's has none.
    curves.view->setSummaries(curves.loss,
                              {{0, 0, 1, 1, 1, 1}, {1, 10, 40, 0.25, 0.75, 0.625}, {11, 20, 1, 0.2, 0.2, 0.2}});
    QString text = curves.view->crosshairText(curves.at(10, 0.5));
    EXPECT_TRUE(text.contains("train loss: 0.5  (last 0.625, min 0.25, max 0.75 of 40 points, step 1–10)"))
        << text.toStdString();
    EXPECT_TRUE(text.contains("val accuracy: 0.9 at step 12\n") || text.endsWith("val accuracy: 0.9 at step 12"))
        << text.toStdString();
    // One point, smoothed: the raw value beside the drawn one; one point drawn as it is: nothing more.
    text = curves.view->crosshairText(curves.at(18, 0.3)); // the plot's right edge is outside it
    EXPECT_TRUE(text.contains("train loss: 0.25  (raw 0.2)")) << text.toStdString();
    text = curves.view->crosshairText(curves.at(0, 1));
    EXPECT_TRUE(text.contains("train loss: 1\n") || text.endsWith("train loss: 1")) << text.toStdString();
    // Points replaced without new summaries: the old ones do not describe them, and are not used.
    curves.loss->append(30, 0.1);
    text = curves.view->crosshairText(curves.at(10, 0.5));
    EXPECT_TRUE(text.contains("train loss: 0.5")) << text.toStdString();
    EXPECT_FALSE(text.contains("points")) << text.toStdString();
}

TEST(ChartView, ARestingCrosshairSaysWhatALiveChartDrawsUnderItNow) {
    TwoCurves curves;
    const QPoint at = curves.at(10, 0.5);
    QMouseEvent move(QEvent::MouseMove, QPointF(at), curves.view->mapToGlobal(QPointF(at)), Qt::NoButton, Qt::NoButton,
                     Qt::NoModifier);
    QCoreApplication::sendEvent(curves.view->viewport(), &move);
    EXPECT_TRUE(QToolTip::text().startsWith("step 10\n")) << QToolTip::text().toStdString();
    // The run goes on: twice the steps, the axis with them; the mouse has not moved.
    curves.loss->replace(QList<QPointF>{{0, 1}, {10, 0.5}, {20, 0.25}, {30, 0.2}, {40, 0.125}});
    qobject_cast<QValueAxis*>(curves.chart->axes(Qt::Horizontal).first())->setRange(0, 40);
    curves.view->updateCrosshair();
    EXPECT_TRUE(QToolTip::text().startsWith("step 20\n")) << QToolTip::text().toStdString();
    EXPECT_TRUE(QToolTip::text().contains("train loss: 0.25")) << QToolTip::text().toStdString();
}

TEST(ChartView, ALegendEntryHidesItsCurveAndShowsItAgainStruckOutMeanwhile) {
    TwoCurves curves;
    curves.view->followLegend();
    QLegendMarker* marker = curves.chart->legend()->markers(curves.loss).value(0);
    ASSERT_TRUE(marker);
    emit marker->clicked();
    EXPECT_FALSE(curves.loss->isVisible());
    EXPECT_TRUE(marker->isVisible()); // still there to click again
    EXPECT_TRUE(marker->font().strikeOut());
    emit marker->clicked();
    EXPECT_TRUE(curves.loss->isVisible());
    EXPECT_FALSE(marker->font().strikeOut());
}

TEST(ChartView, ADarkPaletteDarkensTheChartAndKeepsTheCurvesColours) {
    TwoCurves curves;
    EXPECT_EQ(curves.chart->theme(), QChart::ChartThemeLight);
    apply_theme(Theme::dark);
    test::settle();
    EXPECT_EQ(curves.chart->theme(), QChart::ChartThemeDark);
    EXPECT_EQ(curves.loss->color(), QColor(31, 119, 180));
    apply_theme(Theme::system);
    test::settle();
    EXPECT_EQ(curves.chart->theme(), QChart::ChartThemeLight);
    EXPECT_EQ(curves.loss->color(), QColor(31, 119, 180));
}

TEST(ChartView, TheCrosshairWritesValuesAsTheirAxesWriteThem) {
    auto* chart = new QChart;
    auto* spend = new QLineSeries;
    spend->setName("spend");
    spend->append({{5, 0.001}, {65, 0.01234}, {115, 0.02}});
    chart->addSeries(spend);
    QAbstractAxis* time = make_value_axis("time since start");
    QAbstractAxis* money = make_value_axis("spend");
    chart->addAxis(time, Qt::AlignBottom);
    chart->addAxis(money, Qt::AlignLeft);
    spend->attachAxis(time);
    spend->attachAxis(money);
    fit_axis(time, 0, 120, AxisUnit::seconds);
    fit_axis(money, 0, 0.025, AxisUnit::money);
    std::unique_ptr<QChartView> view(make_chart_view(chart));
    view->resize(640, 420);
    view->show();
    test::settle();
    const QPoint at = view->mapFromScene(chart->mapToScene(chart->mapToPosition(QPointF(65, 0.01234), spend)));
    const QString text = static_cast<ChartView*>(view.get())->crosshairText(at);
    EXPECT_TRUE(text.startsWith("time since start 1:05\n")) << text.toStdString();
    EXPECT_TRUE(text.contains("spend: $0.0123")) << text.toStdString();
}

TEST(ChartView, EverythingTheMouseDoesTheKeyboardDoesToo) {
    TwoCurves curves;
    const auto press = [&](int key) {
        QKeyEvent event(QEvent::KeyPress, key, Qt::NoModifier);
        QCoreApplication::sendEvent(curves.view, &event);
        return event.isAccepted();
    };
    auto* x = qobject_cast<QValueAxis*>(curves.chart->axes(Qt::Horizontal).first());
    ASSERT_TRUE(x);
    EXPECT_EQ(curves.view->focusPolicy(), Qt::StrongFocus); // reached with Tab
    EXPECT_TRUE(press(Qt::Key_Plus));
    EXPECT_LT(x->max() - x->min(), 15);
    const double left = x->min();
    EXPECT_TRUE(press(Qt::Key_Right));
    EXPECT_GT(x->min(), left);
    EXPECT_TRUE(press(Qt::Key_0));
    EXPECT_DOUBLE_EQ(x->min(), 0);
    EXPECT_DOUBLE_EQ(x->max(), 20);
    EXPECT_TRUE(press(Qt::Key_1)); // the legend's first entry: train loss
    EXPECT_FALSE(curves.loss->isVisible());
    EXPECT_TRUE(curves.chart->legend()->markers(curves.loss).first()->font().strikeOut());
    EXPECT_TRUE(press(Qt::Key_1));
    EXPECT_TRUE(curves.loss->isVisible());
    EXPECT_FALSE(press(Qt::Key_7)); // no seventh entry: the key goes on
    EXPECT_TRUE(press(Qt::Key_Space));
    EXPECT_TRUE(curves.view->accessibleDescription().contains("train loss: "))
        << curves.view->accessibleDescription().toStdString();
}
