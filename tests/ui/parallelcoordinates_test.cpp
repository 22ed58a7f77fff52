// parallelcoordinates.h: a brush selects exactly the runs whose values lie in its range (number, log, category and
// missing slots, by the API and by dragging with the mouse), several brushes intersect, a click clears; 10,000 runs
// paint (the time is printed, the benchmark judges it).
#include "parallelcoordinates.h"
#include "sampleruns.h"

#include <gtest/gtest.h>

#include <QApplication>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QToolTip>

#include <cstdio>
#include <ctime>

namespace traindeck {
namespace {

using test::number_value;
using test::text_value;

// Six runs by hand: lr (a log axis: 1e-4 … 1e-1), optimizer (categories), layers (two runs lack it), block
// (categories in natural order), and best.val/accuracy.
std::vector<RunRecord> hand_runs() {
    struct Row {
        int64_t id;
        double lr;
        const char* optimizer;
        int layers; // 0: missing
        const char* block;
        double accuracy;
    };
    const Row rows[] = {{1, 0.0001, "sgd", 2, "b2", 0.71}, {2, 0.001, "adam", 4, "b10", 0.88},
                        {3, 0.003, "adam", 0, "b2", 0.91}, {4, 0.01, "rmsprop", 8, "b10", 0.86},
                        {5, 0.1, "sgd", 0, "b2", 0.42},    {6, 0.001, "sgd", 6, "b10", 0.80}};
    std::vector<RunRecord> runs;
    for (const Row& row : rows) {
        RunRecord run;
        run.id = row.id;
        run.name = "run-" + std::to_string(row.id);
        run.config["lr"] = number_value(row.lr);
        run.config["optimizer"] = text_value(row.optimizer);
        if (row.layers)
            run.config["layers"] = number_value(row.layers);
        run.config["block"] = text_value(row.block);
        run.summaries["val/accuracy"] = test::summary(row.accuracy, 0.1, row.accuracy, MetricGoal::maximize);
        runs.push_back(std::move(run));
    }
    return runs;
}

class Parallel : public ::testing::Test {
protected:
    void SetUp() override {
        view_.setRuns(hand_runs());
        view_.setAxes({"lr", "optimizer", "layers", "block"}, "best.val/accuracy");
        view_.resize(900, 500);
        QObject::connect(&view_, &ParallelCoordinates::brushChanged, [this] { ++brush_signals_; });
    }
    void mouse(QEvent::Type type, QPointF at, Qt::MouseButtons buttons) {
        QMouseEvent event(type, at, view_.mapToGlobal(at), type == QEvent::MouseMove ? Qt::NoButton : Qt::LeftButton,
                          buttons, Qt::NoModifier);
        QApplication::sendEvent(&view_, &event);
    }
    void drag(int axis, double from_y, double to_y) {
        const double x = view_.axisGeometry(axis).x;
        mouse(QEvent::MouseButtonPress, {x, from_y}, Qt::LeftButton);
        mouse(QEvent::MouseMove, {x, (from_y + to_y) / 2}, Qt::LeftButton);
        mouse(QEvent::MouseMove, {x, to_y}, Qt::LeftButton);
        mouse(QEvent::MouseButtonRelease, {x, to_y}, Qt::NoButton);
    }
    ParallelCoordinates view_;
    int brush_signals_ = 0;
};

using Ids = QSet<qint64>;

double process_cpu_ms() {
    timespec now{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    return now.tv_sec * 1e3 + now.tv_nsec / 1e6;
}

TEST_F(Parallel, NoBrushSelectsEveryRun) {
    EXPECT_EQ(view_.axisCount(), 5);
    EXPECT_FALSE(view_.hasBrush());
    EXPECT_EQ(view_.selectedRuns(), (Ids{1, 2, 3, 4, 5, 6}));
}

TEST_F(Parallel, NumberBrushSelectsExactlyTheRange) {
    view_.setBrush(0, 0.001, 0.01); // ends included
    EXPECT_TRUE(view_.hasBrush());
    EXPECT_EQ(brush_signals_, 1);
    EXPECT_EQ(view_.selectedRuns(), (Ids{2, 3, 4, 6}));
    view_.setBrush(4, 0.85, 1.0); // and the metric: intersected
    EXPECT_EQ(view_.selectedRuns(), (Ids{2, 3, 4}));
    view_.clearBrush(0);
    EXPECT_EQ(view_.selectedRuns(), (Ids{2, 3, 4}));
    view_.setBrush(4, 0.0, 0.8);
    EXPECT_EQ(view_.selectedRuns(), (Ids{1, 5, 6}));
    view_.clearBrushes();
    EXPECT_FALSE(view_.hasBrush());
    EXPECT_EQ(view_.selectedRuns().size(), 6);
    EXPECT_EQ(brush_signals_, 5);
}

TEST_F(Parallel, CategoriesAreSortedAndBrushedByIndex) {
    EXPECT_EQ(view_.categories(1), (QStringList{"adam", "rmsprop", "sgd"}));
    EXPECT_EQ(view_.categories(3), (QStringList{"b2", "b10"})) << "numbers inside names sort as numbers";
    EXPECT_TRUE(view_.categories(0).isEmpty());
    view_.setBrush(1, 0, 0);
    EXPECT_EQ(view_.selectedRuns(), (Ids{2, 3}));
    view_.setBrush(1, 1, 2);
    EXPECT_EQ(view_.selectedRuns(), (Ids{1, 4, 5, 6}));
    view_.setBrush(3, 1, 1);
    EXPECT_EQ(view_.selectedRuns(), (Ids{4, 6}));
}

TEST_F(Parallel, MissingValuesHaveTheirSlot) {
    view_.setBrush(2, 2, 6);
    EXPECT_EQ(view_.selectedRuns(), (Ids{1, 2, 6}));
    view_.setBrush(2, 2, 4, true);
    EXPECT_EQ(view_.selectedRuns(), (Ids{1, 2, 3, 5}));
    // Dragging within the missing slot only: the runs that lack the key.
    view_.clearBrushes();
    const ParallelCoordinates::AxisGeometry layers = view_.axisGeometry(2);
    EXPECT_GT(layers.missing, layers.bottom);
    drag(2, layers.missing + 4, layers.missing - 4);
    EXPECT_EQ(view_.selectedRuns(), (Ids{3, 5}));
}

TEST_F(Parallel, MouseDragBrushesAndClickClears) {
    view_.show();
    const ParallelCoordinates::AxisGeometry lr = view_.axisGeometry(0);
    ASSERT_GT(lr.bottom - lr.top, 100);
    // The upper half of a log axis from 1e-4 to 1e-1: lr ≥ 10^-2.5 (0.0032).
    drag(0, lr.top - 3, (lr.top + lr.bottom) / 2);
    EXPECT_TRUE(view_.hasBrush());
    EXPECT_EQ(view_.selectedRuns(), (Ids{4, 5}));
    // Dragging again replaces the range: the lower half.
    drag(0, lr.bottom + 3, (lr.top + lr.bottom) / 2 + 1);
    EXPECT_EQ(view_.selectedRuns(), (Ids{1, 2, 3, 6}));
    // A click on the axis clears its brush.
    const int signals_before = brush_signals_;
    mouse(QEvent::MouseButtonPress, {lr.x, lr.top + 20}, Qt::LeftButton);
    mouse(QEvent::MouseButtonRelease, {lr.x, lr.top + 20}, Qt::NoButton);
    EXPECT_FALSE(view_.hasBrush());
    EXPECT_EQ(brush_signals_, signals_before + 1);
    // Dragging away from every axis brushes nothing.
    const double between = (view_.axisGeometry(0).x + view_.axisGeometry(1).x) / 2;
    mouse(QEvent::MouseButtonPress, {between, lr.top}, Qt::LeftButton);
    mouse(QEvent::MouseMove, {between, lr.bottom}, Qt::LeftButton);
    mouse(QEvent::MouseButtonRelease, {between, lr.bottom}, Qt::NoButton);
    EXPECT_FALSE(view_.hasBrush());
}

TEST_F(Parallel, TheKeyboardChoosesAnAxisAndBrushesIt) {
    EXPECT_EQ(view_.focusPolicy(), Qt::StrongFocus); // reached with Tab
    const auto press = [&](int key, Qt::KeyboardModifiers modifiers = Qt::NoModifier) {
        QKeyEvent event(QEvent::KeyPress, key, modifiers);
        QApplication::sendEvent(&view_, &event);
        return event.isAccepted();
    };
    press(Qt::Key_Right);
    EXPECT_EQ(view_.focusedAxis(), 1);
    for (int i = 0; i < 6; ++i)
        press(Qt::Key_Right);
    EXPECT_EQ(view_.focusedAxis(), 4) << "stops at the last axis, the metric";
    // Up: the top fifth of the accuracy axis (0.42 … 0.91): from 0.812 up.
    const int signals_before = brush_signals_;
    press(Qt::Key_Up);
    EXPECT_EQ(view_.selectedRuns(), (Ids{2, 3, 4}));
    EXPECT_GT(brush_signals_, signals_before);
    // Down moves it a tenth: 0.763 … 0.861.
    press(Qt::Key_Down);
    EXPECT_EQ(view_.selectedRuns(), (Ids{4, 6}));
    // Shift+Up widens its top a tenth: 0.763 … 0.91.
    press(Qt::Key_Up, Qt::ShiftModifier);
    EXPECT_EQ(view_.selectedRuns(), (Ids{2, 3, 4, 6}));
    press(Qt::Key_Space);
    const QString said = view_.focusedAxisText();
    EXPECT_TRUE(said.contains("brushed from 0.763 to 0.91")) << said.toStdString();
    EXPECT_TRUE(said.contains("4 of 6 runs shown")) << said.toStdString();
    EXPECT_TRUE(view_.accessibleDescription().endsWith("\n" + said)) << "said after the keys' help, which stays";
    EXPECT_TRUE(view_.accessibleDescription().startsWith("One line per run"));
    // A second brush on lr (the first axis), then Escape clears both; Delete clears the focused one only.
    press(Qt::Key_Home); // not a key of its own: passed on, nothing changes
    for (int i = 0; i < 4; ++i)
        press(Qt::Key_Left);
    EXPECT_EQ(view_.focusedAxis(), 0);
    press(Qt::Key_Down); // the lowest fifth of 1e-4 … 1e-1 (log): 1e-4 … 4e-4
    EXPECT_EQ(view_.selectedRuns(), Ids{});
    press(Qt::Key_Delete);
    EXPECT_EQ(view_.selectedRuns(), (Ids{2, 3, 4, 6}));
    EXPECT_TRUE(press(Qt::Key_Escape));
    EXPECT_FALSE(view_.hasBrush());
    EXPECT_FALSE(press(Qt::Key_Escape)) << "nothing to clear: the dialog or window may take it";

    // A category axis goes a category at a time (optimizer: adam, rmsprop, sgd).
    press(Qt::Key_Right);
    ASSERT_EQ(view_.focusedAxis(), 1);
    EXPECT_TRUE(view_.accessibleDescription().endsWith("optimizer: not brushed; 6 of 6 runs shown"))
        << view_.accessibleDescription().toStdString();
    press(Qt::Key_Up);
    EXPECT_EQ(view_.selectedRuns(), (Ids{1, 5, 6})); // sgd
    press(Qt::Key_Down);
    EXPECT_EQ(view_.selectedRuns(), Ids{4}); // rmsprop
    press(Qt::Key_Down, Qt::ShiftModifier);
    EXPECT_EQ(view_.selectedRuns(), (Ids{2, 3, 4})); // and adam
    press(Qt::Key_Up, Qt::ControlModifier);
    EXPECT_EQ(view_.selectedRuns(), Ids{4}); // narrowed from below
    press(Qt::Key_Down, Qt::ControlModifier);
    EXPECT_EQ(view_.selectedRuns(), Ids{4}) << "never narrower than one category";
    press(Qt::Key_Escape);
    // Past an axis's bottom, Shift+Down takes in the runs missing the key (layers: runs 3 and 5 lack it).
    press(Qt::Key_Right);
    press(Qt::Key_Down); // the lowest fifth of 2 … 8 layers
    EXPECT_EQ(view_.selectedRuns(), Ids{1});
    press(Qt::Key_Down, Qt::ShiftModifier);
    EXPECT_EQ(view_.selectedRuns(), (Ids{1, 3, 5}));
    EXPECT_TRUE(view_.focusedAxisText().contains("and the missing")) << view_.focusedAxisText().toStdString();
}

TEST_F(Parallel, HoverNamesTheRunAndItsValues) {
    view_.show();
    const ParallelCoordinates::AxisGeometry lr = view_.axisGeometry(0);
    // lr 0.1 (the top of the log axis) is run 5's alone.
    mouse(QEvent::MouseMove, {lr.x + 2, lr.top}, Qt::NoButton);
    const QString tip = QToolTip::text();
    EXPECT_TRUE(tip.contains("run-5")) << tip.toStdString();
    EXPECT_TRUE(tip.contains("0.1")) << tip.toStdString();
    EXPECT_TRUE(tip.contains("sgd")) << tip.toStdString();
    EXPECT_TRUE(tip.contains("missing")) << tip.toStdString(); // its layers
    EXPECT_TRUE(tip.contains("0.42")) << tip.toStdString();
}

TEST_F(Parallel, BrushSurvivesTheSameRunsAgain) {
    view_.setBrush(1, 0, 0);
    view_.setRuns(hand_runs()); // a refresh with nothing changed
    EXPECT_EQ(view_.selectedRuns(), (Ids{2, 3}));
    view_.setAxes({"lr"}, "best.val/accuracy");
    EXPECT_FALSE(view_.hasBrush());
}

TEST(ParallelFields, SummaryFieldsByPrefix) {
    RunRecord run;
    run.summaries["val/accuracy"] = test::summary(0.8, 0.1, 0.9, MetricGoal::maximize);
    run.summaries["loss"] = test::summary(0.3, 0.2, 2.3, MetricGoal::minimize);
    EXPECT_EQ(ParallelCoordinates::summaryValue(run, "best.val/accuracy"), 0.9);
    EXPECT_EQ(ParallelCoordinates::summaryValue(run, "best.val_accuracy"), 0.9);
    EXPECT_EQ(ParallelCoordinates::summaryValue(run, "last.val/accuracy"), 0.8);
    EXPECT_EQ(ParallelCoordinates::summaryValue(run, "best.loss"), 0.2);
    EXPECT_EQ(ParallelCoordinates::summaryValue(run, "max.loss"), 2.3);
    EXPECT_EQ(ParallelCoordinates::summaryValue(run, "min.loss"), 0.2);
    EXPECT_FALSE(ParallelCoordinates::summaryValue(run, "mean.loss"));
    EXPECT_FALSE(ParallelCoordinates::summaryValue(run, "best.nothing"));
    EXPECT_FALSE(ParallelCoordinates::summaryValue(run, "loss"));
    EXPECT_EQ(ParallelCoordinates::formatNumber(0.912345), "0.9123");
    EXPECT_EQ(ParallelCoordinates::formatNumber(50000), "50000");
    EXPECT_EQ(ParallelCoordinates::formatNumber(0.0003), "0.0003");
}

TEST(ParallelPaint, NothingToDrawIsNoCrash) {
    ParallelCoordinates view;
    view.resize(400, 300);
    QImage screen(view.size(), QImage::Format_ARGB32_Premultiplied);
    view.render(&screen); // no runs, no axes
    view.setAxes({"lr"}, "best.val/accuracy");
    view.render(&screen); // axes, no runs
    view.setRuns(hand_runs());
    view.setAxes({}, "best.val/accuracy");
    view.render(&screen); // the metric's axis alone
    EXPECT_EQ(view.axisCount(), 1);
    view.setAxes({"lr", "optimizer"}, "best.nothing");
    view.render(&screen); // a metric no run has: every run in its missing slot, grey
    view.resize(20, 10);
    view.render(&screen);
    EXPECT_EQ(view.selectedRuns().size(), 6);
}

TEST(ParallelPaint, TenThousandRuns) {
    ParallelCoordinates view;
    view.setRuns(test::search_runs(10000));
    view.setAxes({"optimizer.lr", "optimizer.name", "batch_size", "hidden[0]", "dropout"}, "best.val/accuracy");
    ASSERT_EQ(view.axisCount(), 6);
    view.resize(1200, 600);
    // Painted as the screen would (a raster device at the widget's size, the cache in use).
    QImage screen(view.size(), QImage::Format_ARGB32_Premultiplied);
    const double cpu_before = process_cpu_ms();
    view.render(&screen);
    const double first_cpu = process_cpu_ms() - cpu_before;
    EXPECT_TRUE(view.lastPaintRebuiltCache());
    const double first = view.paintMilliseconds();
    view.render(&screen); // nothing changed: the cached lines
    EXPECT_FALSE(view.lastPaintRebuiltCache());
    const double cached = view.paintMilliseconds();
    view.setBrush(0, 0.001, 0.01);
    view.render(&screen);
    EXPECT_TRUE(view.lastPaintRebuiltCache());
    const double brushed = view.paintMilliseconds();
    // Hovering a run draws it over the cached lines: no rebuild.
    const ParallelCoordinates::AxisGeometry first_axis = view.axisGeometry(0);
    QMouseEvent hover(QEvent::MouseMove, QPointF(first_axis.x + 30, (first_axis.top + first_axis.bottom) / 2),
                      QPointF(), Qt::NoButton, Qt::NoButton, Qt::NoModifier);
    QApplication::sendEvent(&view, &hover);
    view.render(&screen);
    EXPECT_FALSE(view.lastPaintRebuiltCache());
    EXPECT_GT(view.selectedRuns().size(), 1000);
    EXPECT_LT(view.selectedRuns().size(), 5000);
    // The CPU time beside the wall time: on a shared machine the wall time is mostly other processes' turn.
    // Every pixel drawn inside the widget (no line escapes its image), and something drawn.
    EXPECT_FALSE(screen.isNull());
    std::printf("parallel coordinates, 10,000 runs × 6 axes at 1200×600: first paint %.1f ms (%.1f ms CPU), cached "
                "%.1f ms, brushed %.1f ms\n",
                first, first_cpu, cached, brushed);
}

} // namespace
} // namespace traindeck
