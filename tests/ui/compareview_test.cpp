// compareview.h: the config diff shows exactly the differing keys (all of them with "Show all keys"), the summaries
// put the best run of each row in bold by the metric's goal, the parallel view starts on the differing keys (at
// most 8) and its brushes come out as brushChanged(ids, active), the scatter has a point per run, and 15 runs fit
// 1200 × 800 without horizontal scrolling. Writes its screenshots to the build's screenshots folder.
#include "chartview.h"
#include "compareview.h"
#include "chartexport.h"
#include "parallelcoordinates.h"
#include "sampleruns.h"
#include "theme.h"
#include "unittest.h"

#include <gtest/gtest.h>

#include <QAbstractItemModel>
#include <QApplication>
#include <QBrush>
#include <QChart>
#include <QDir>
#include <QFile>
#include <QLogValueAxis>
#include <QScatterSeries>
#include <QScrollBar>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QToolTip>

#include <algorithm>
#include <cmath>
#include <set>

namespace traindeck {
namespace {

using test::number_value;
using test::text_value;

using test::settle;

QStringList column(const QAbstractItemModel& model, int column) {
    QStringList values;
    for (int row = 0; row < model.rowCount(); ++row)
        values << model.data(model.index(row, column)).toString();
    return values;
}

int row_of(const QAbstractItemModel& model, const QString& metric, const QString& kind) {
    for (int row = 0; row < model.rowCount(); ++row)
        if (model.data(model.index(row, 0)).toString() == metric && model.data(model.index(row, 1)).toString() == kind)
            return row;
    return -1;
}

// The run columns of a summary row that are bold.
QList<int> bold_columns(const QAbstractItemModel& model, int row) {
    QList<int> bold;
    for (int column = 2; column < model.columnCount(); ++column)
        if (model.data(model.index(row, column), Qt::FontRole).value<QFont>().bold())
            bold << column;
    return bold;
}

// Four runs: model and lr differ, batch is the same, "warmup" only some have; loss lower-is-better, accuracy
// higher-is-better, "spend" without a goal.
std::vector<RunRecord> four_runs() {
    std::vector<RunRecord> runs;
    const double losses[] = {0.31, 0.25, 0.40, 0.28};
    const double accuracies[] = {0.88, 0.91, 0.84, 0.93};
    for (int i = 0; i < 4; ++i) {
        RunRecord run;
        run.id = 10 + i;
        run.name = "run-" + std::to_string(i);
        run.config["model"] = text_value(i % 2 ? "cnn" : "mlp");
        run.config["lr"] = number_value(i < 2 ? 0.001 : 0.01);
        run.config["batch"] = number_value(128);
        if (i == 3)
            run.config["warmup"] = number_value(500);
        run.summaries["loss"] = test::summary(losses[i] + 0.02, losses[i], 2.3, MetricGoal::minimize);
        run.summaries["val/accuracy"] = test::summary(accuracies[i] - 0.01, 0.1, accuracies[i], MetricGoal::maximize);
        run.summaries["spend"] = test::summary(0.01 * (i + 1), 0, 0.01 * (i + 1), MetricGoal::none);
        runs.push_back(std::move(run));
    }
    return runs;
}

TEST(CompareView, ConfigDiffShowsExactlyTheDifferingKeys) {
    CompareView view;
    view.setRuns(four_runs());
    const QAbstractItemModel& model = view.configModel();
    EXPECT_EQ(column(model, 0), (QStringList{"lr", "model", "warmup"}));
    ASSERT_EQ(model.columnCount(), 5);
    EXPECT_EQ(model.headerData(1, Qt::Horizontal).toString(), "run-0");
    EXPECT_EQ(model.headerData(4, Qt::Horizontal).toString(), "run-3");
    EXPECT_EQ(model.data(model.index(0, 1)).toString(), "0.001");
    EXPECT_EQ(model.data(model.index(1, 2)).toString(), "cnn");
    EXPECT_EQ(model.data(model.index(2, 1)).toString(), "—"); // run-0 has no warmup
    EXPECT_EQ(model.data(model.index(2, 4)).toString(), "500");

    view.setShowAllKeys(true);
    EXPECT_EQ(column(view.configModel(), 0), (QStringList{"batch", "lr", "model", "warmup"}));
    view.setShowAllKeys(false);
    EXPECT_EQ(view.configModel().rowCount(), 3);
}

// WCAG's contrast ratio of two colours (1 to 21; 4.5 is its bar for body text).
double contrast(const QColor& a, const QColor& b) {
    auto luminance = [](const QColor& c) {
        auto channel = [](double v) { return v <= 0.03928 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); };
        return 0.2126 * channel(c.redF()) + 0.7152 * channel(c.greenF()) + 0.0722 * channel(c.blueF());
    };
    const double x = luminance(a), y = luminance(b);
    return (std::max(x, y) + 0.05) / (std::min(x, y) + 0.05);
}

// The tints that group runs sharing a value stay readable under the palette's text, light or dark, and still tell
// the values apart.
TEST(CompareView, DiffTintsAreReadableInTheLightAndTheDarkTheme) {
    QPalette dark;
    dark.setColor(QPalette::Window, QColor(45, 45, 48));
    dark.setColor(QPalette::WindowText, QColor(228, 228, 228));
    dark.setColor(QPalette::Base, QColor(30, 30, 32));
    dark.setColor(QPalette::Text, QColor(228, 228, 228));
    QPalette light;
    light.setColor(QPalette::Window, QColor(239, 239, 239));
    light.setColor(QPalette::WindowText, Qt::black);
    light.setColor(QPalette::Base, Qt::white);
    light.setColor(QPalette::Text, Qt::black);
    for (const QPalette& palette : {light, dark}) {
        CompareView view;
        view.setPalette(palette);
        view.setRuns(four_runs());
        const QAbstractItemModel& model = view.configModel();
        ASSERT_EQ(model.data(model.index(0, 0)).toString(), "lr");
        const QColor small = model.data(model.index(0, 1), Qt::BackgroundRole).value<QBrush>().color();
        const QColor large = model.data(model.index(0, 3), Qt::BackgroundRole).value<QBrush>().color();
        EXPECT_NE(small, large) << "0.001 and 0.01 tinted alike";
        for (const QColor& tint : {small, large}) {
            EXPECT_GE(contrast(tint, palette.color(QPalette::Text)), 4.5)
                << tint.name().toStdString() << " under " << palette.color(QPalette::Text).name().toStdString();
            EXPECT_EQ(tint.lightnessF() < 0.5, palette_is_dark(palette)) << tint.name().toStdString();
        }
    }
}

TEST(CompareView, BestRunOfEachSummaryRowIsBoldByTheGoal) {
    CompareView view;
    view.setRuns(four_runs());
    const QAbstractItemModel& model = view.summaryModel();
    EXPECT_EQ(model.rowCount(), 3 * 4); // loss, spend, val/accuracy × last, min, max, best
    EXPECT_EQ(model.headerData(2, Qt::Horizontal).toString(), "run-0");
    // Loss: lower is better, in every row (run-1 has the smallest loss).
    for (const char* kind : {"best", "min", "last"}) {
        const int row = row_of(model, "loss", kind);
        ASSERT_GE(row, 0) << kind;
        EXPECT_EQ(bold_columns(model, row), QList<int>{2 + 1}) << kind;
    }
    // Accuracy: higher is better (run-3).
    const int best_accuracy = row_of(model, "val/accuracy", "best");
    EXPECT_EQ(bold_columns(model, best_accuracy), QList<int>{2 + 3});
    EXPECT_EQ(model.data(model.index(best_accuracy, 2 + 3)).toString(), "0.93");
    // No goal, no best.
    EXPECT_TRUE(bold_columns(model, row_of(model, "spend", "last")).isEmpty());
    EXPECT_TRUE(view.summaryFields().contains("best.val/accuracy"));
    EXPECT_TRUE(view.summaryFields().contains("last.loss"));
}

TEST(CompareView, ParallelStartsOnTheDifferingKeysAndForwardsBrushes) {
    CompareView view;
    view.setRuns(four_runs());
    EXPECT_EQ(view.parallel().configKeys(), (QStringList{"lr", "model", "warmup"}));
    EXPECT_EQ(view.parallel().metric(), "best.val/accuracy");
    QSet<qint64> got;
    bool active = false;
    int signals_seen = 0;
    QObject::connect(&view, &CompareView::brushChanged, [&](const QSet<qint64>& ids, bool is_active) {
        got = ids;
        active = is_active;
        ++signals_seen;
    });
    view.parallel().setBrush(0, 0.005, 0.02); // lr 0.01: runs 2 and 3
    EXPECT_EQ(signals_seen, 1);
    EXPECT_TRUE(active);
    EXPECT_EQ(got, (QSet<qint64>{12, 13}));
    view.parallel().clearBrushes();
    EXPECT_FALSE(active);
    EXPECT_EQ(got.size(), 4);
}

TEST(CompareView, TheSameRunsAgainKeepTheBrushes) {
    // The console hands the runs over again each time the Compare tab is shown: brushes on the same runs stay.
    CompareView view;
    view.setRuns(four_runs());
    QSet<qint64> got;
    bool active = false;
    QObject::connect(&view, &CompareView::brushChanged, [&](const QSet<qint64>& ids, bool is_active) {
        got = ids;
        active = is_active;
    });
    view.parallel().setBrush(0, 0.005, 0.02); // lr 0.01: runs 2 and 3
    view.setRuns(four_runs());
    EXPECT_TRUE(view.parallel().hasBrush());
    EXPECT_TRUE(active);
    EXPECT_EQ(view.parallel().selectedRuns(), (QSet<qint64>{12, 13}));
    EXPECT_EQ(got, (QSet<qint64>{12, 13}));
    // Other runs (other axes' ranges): the brushes would mean other values, so they go.
    std::vector<RunRecord> fewer = four_runs();
    fewer.pop_back();
    view.setRuns(fewer);
    EXPECT_FALSE(view.parallel().hasBrush());
    EXPECT_FALSE(active);
}

TEST(CompareView, AtMostEightAxesPreselected) {
    std::vector<RunRecord> runs = four_runs();
    for (size_t i = 0; i < runs.size(); ++i)
        for (int k = 0; k < 12; ++k)
            runs[i].config["key" + std::to_string(10 + k)] = number_value(static_cast<double>(i * k));
    CompareView view;
    view.setRuns(runs);
    EXPECT_EQ(view.parallel().configKeys().size(), 8);
}

TEST(CompareView, ScatterHasAPointPerRun) {
    CompareView view;
    view.setRuns(test::sweep_runs());
    view.setScatterFields("optimizer.lr", "best.val/accuracy");
    int points = 0;
    for (QAbstractSeries* series : view.scatterChart()->series())
        points += static_cast<QScatterSeries*>(series)->count();
    EXPECT_EQ(points, 15);
    // The console's chart view: drag to zoom, double-click back, the keys, the palette's theme; no crosshair (a
    // hovered point says its run).
    auto* chart_view = qobject_cast<ChartView*>(view.scatterChart()->scene()->views().value(0));
    ASSERT_TRUE(chart_view);
    EXPECT_EQ(chart_view->rubberBand(), QChartView::RectangleRubberBand);
    EXPECT_EQ(chart_view->focusPolicy(), Qt::StrongFocus);
    // A text key: categories.
    view.setScatterFields("model", "last.loss");
    points = 0;
    for (QAbstractSeries* series : view.scatterChart()->series())
        points += static_cast<QScatterSeries*>(series)->count();
    EXPECT_EQ(points, 15);
    // Brushed runs stand apart in the scatter.
    view.parallel().setAxes({"model"}, "best.val/accuracy");
    view.parallel().setBrush(0, 0, 0); // cnn
    QScatterSeries* inside = nullptr;
    for (QAbstractSeries* series : view.scatterChart()->series())
        if (series->name().contains("inside"))
            inside = static_cast<QScatterSeries*>(series);
    ASSERT_NE(inside, nullptr);
    EXPECT_EQ(inside->count(), 10);
}

TEST(CompareView, ScatterPointsTellTheirRun) {
    CompareView view;
    std::vector<RunRecord> runs = test::sweep_runs();
    view.setRuns(runs);
    view.resize(1200, 800);
    view.setCurrentTab(CompareView::scatterTab);
    view.show();
    view.setScatterFields("optimizer.lr", "best.val/accuracy");
    settle();
    auto* series = static_cast<QScatterSeries*>(view.scatterChart()->series().back());
    ASSERT_EQ(series->count(), 15);
    // The best run: the point highest up.
    const QList<QPointF> points = series->points();
    const QPointF top = *std::max_element(points.begin(), points.end(),
                                          [](const QPointF& a, const QPointF& b) { return a.y() < b.y(); });
    const auto best = std::max_element(runs.begin(), runs.end(), [](const RunRecord& a, const RunRecord& b) {
        return a.summaries.at("val/accuracy").best < b.summaries.at("val/accuracy").best;
    });
    emit series->hovered(top, true);
    EXPECT_TRUE(QToolTip::text().contains(QString::fromStdString(best->name))) << QToolTip::text().toStdString();
    EXPECT_TRUE(QToolTip::text().contains("optimizer.lr")) << QToolTip::text().toStdString();
}

TEST(CompareView, FifteenRunsFitWithoutHorizontalScrolling) {
    CompareView view;
    view.setRuns(test::sweep_runs());
    view.resize(1200, 800);
    view.show();
    QCoreApplication::processEvents();
    for (QTableView* table : view.findChildren<QTableView*>()) {
        if (!table->isVisible())
            continue;
        EXPECT_FALSE(table->horizontalScrollBar()->isVisible()) << table->model()->columnCount() << " columns";
    }
    view.setCurrentTab(CompareView::summaryTab);
    QCoreApplication::processEvents();
    for (QTableView* table : view.findChildren<QTableView*>()) {
        if (table->isVisible()) {
            EXPECT_FALSE(table->horizontalScrollBar()->isVisible());
        }
    }
}

TEST(CompareView, NoRunsOneRunAndHundreds) {
    CompareView view;
    view.resize(1200, 800);
    view.setRuns({});
    EXPECT_EQ(view.configModel().rowCount(), 0);
    std::vector<RunRecord> one = four_runs();
    one.resize(1);
    view.setRuns(one);
    EXPECT_EQ(view.configModel().rowCount(), 0); // one run: nothing differs
    EXPECT_EQ(view.summaryModel().columnCount(), 3);
    view.setShowAllKeys(true);
    EXPECT_EQ(view.configModel().rowCount(), 3);
    // No cap: a column per run.
    view.setRuns(test::search_runs(300));
    EXPECT_EQ(view.configModel().columnCount(), 301);
    EXPECT_EQ(view.summaryModel().columnCount(), 302);
    EXPECT_EQ(view.parallel().selectedRuns().size(), 300);
}

TEST(CompareView, ExportsEachTab) {
    QTemporaryDir dir;
    CompareView view;
    view.setRuns(four_runs());
    view.resize(1200, 800);
    view.setCurrentTab(CompareView::configTab);
    ASSERT_EQ(view.exportCurrent(dir.filePath("diff.csv")), QString());
    QFile diff(dir.filePath("diff.csv"));
    ASSERT_TRUE(diff.open(QIODevice::ReadOnly));
    EXPECT_EQ(diff.readLine(), "key,run-0,run-1,run-2,run-3\r\n");
    EXPECT_FALSE(view.exportCurrent(dir.filePath("diff.png")).isEmpty()) << "a table is CSV";
    view.setCurrentTab(CompareView::parallelTab);
    EXPECT_EQ(view.exportCurrent(dir.filePath("parallel.svg")), QString());
    view.setCurrentTab(CompareView::scatterTab);
    EXPECT_EQ(view.exportCurrent(dir.filePath("scatter.pdf")), QString());
}

// Screenshots to judge by eye (and for the README): the compare view's tabs with 3 configs × 5 seeds, and parallel
// coordinates of a 2,000-run search.
TEST(CompareView, Screenshots) {
    const QString folder = QStringLiteral(TRAINDECK_SCREENSHOT_DIR);
    ASSERT_TRUE(QDir().mkpath(folder));
    CompareView view;
    view.setRuns(test::sweep_runs());
    view.resize(1200, 800);
    view.show();
    const char* names[] = {"compare-config.png", "compare-summaries.png", "compare-parallel.png",
                           "compare-scatter.png"};
    for (int tab = 0; tab < 4; ++tab) {
        view.setCurrentTab(static_cast<CompareView::Tab>(tab));
        settle();
        const QString path = QDir(folder).filePath(names[tab]);
        ASSERT_TRUE(view.grab().save(path)) << path.toStdString();
    }
    const int lr_axis = static_cast<int>(view.parallel().configKeys().indexOf("optimizer.lr"));
    ASSERT_GE(lr_axis, 0);
    view.parallel().setBrush(lr_axis, 0.002, 0.02); // lr 3e-3 and 1e-2
    settle();
    ASSERT_TRUE(view.grab().save(QDir(folder).filePath("compare-scatter-brushed.png")));

    ParallelCoordinates search;
    search.setRuns(test::search_runs(2000));
    search.setAxes({"optimizer.lr", "optimizer.name", "batch_size", "hidden[0]", "dropout", "optimizer.weight_decay"},
                   "best.val/accuracy");
    search.resize(1200, 600);
    search.show();
    settle();
    ASSERT_TRUE(search.grab().save(QDir(folder).filePath("parallel-2000.png")));
    search.setBrush(6, 0.88, 1.0);
    settle();
    ASSERT_TRUE(search.grab().save(QDir(folder).filePath("parallel-2000-brushed.png")));
    EXPECT_EQ(exportWidget(&search, QDir(folder).filePath("parallel-2000-figure.png")), QString());
    EXPECT_EQ(exportWidget(&search, QDir(folder).filePath("parallel-2000-figure.pdf")), QString());
    EXPECT_EQ(exportChart(view.scatterChart(), QDir(folder).filePath("scatter-figure.png")), QString());
}

} // namespace
} // namespace traindeck
