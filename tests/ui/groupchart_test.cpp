// groupchart.h: the group table holds, per group, N and the mean ± std over its runs of the metric's last, min, max
// and best, as a hand computation from the runs' loss values gives them (shown and exported to CSV as raw numbers);
// the log scale draws the same curves on a log y-axis, a band's edge at or below zero clipped to 1e-6. A real
// catalog file: the runs' events ingested, their RunRecords read back.
#include "catalog.h"
#include "groupchart.h"
#include "unittest.h"

#include <gtest/gtest.h>

#include <QAreaSeries>
#include <QChart>
#include <QFile>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QTemporaryDir>
#include <QValueAxis>

#include <cmath>
#include <numeric>
#include <optional>

namespace traindeck {
namespace {

// Each run's loss, a value a step from step 1. lr 0.1's step 4 spreads from 0.01 to 1.5: its ± std band's low edge
// is 0.51 - 0.857 < 0 there. lr 0.01's third seed reports only a validation accuracy, no loss.
struct PlannedRun {
    double lr;
    int seed;
    std::vector<double> loss;
};
const PlannedRun kRuns[] = {{0.1, 1, {2.0, 1.0, 0.5, 0.01}}, {0.1, 2, {3.0, 0.9, 0.4, 0.02}},
                            {0.1, 3, {2.5, 1.2, 0.7, 1.5}},  {0.01, 1, {4.0, 3.0, 2.0}},
                            {0.01, 2, {5.0, 2.5, 3.5}},      {0.01, 3, {}}};

// The hand computation: mean and sample standard deviation.
std::pair<double, double> mean_std(const std::vector<double>& values) {
    const double mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
    double squares = 0;
    for (const double value : values)
        squares += (value - mean) * (value - mean);
    return {mean, values.size() > 1 ? std::sqrt(squares / static_cast<double>(values.size() - 1)) : 0.0};
}

class GroupChartTest : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_TRUE(dir_.isValid());
        Catalog catalog;
        ASSERT_EQ(catalog.open(catalog_path().toStdString()), "");
        catalog.db().exec("BEGIN");
        for (const PlannedRun& run : kRuns) {
            const std::string name = "lr " + std::to_string(run.lr) + " seed " + std::to_string(run.seed);
            const int64_t job = catalog.add_job(name, "local", name, nlohmann::json::object());
            std::vector<nlohmann::json> events;
            int64_t seq = 0;
            auto event = [&](const char* type, nlohmann::json data) {
                events.push_back({{"seq", ++seq}, {"time", 1000.0 + seq}, {"type", type}, {"data", std::move(data)}});
            };
            event("state", {{"state", "running"}});
            event("record", {{"type", "config"}, {"config", {{"optimizer", {{"lr", run.lr}}}, {"seed", run.seed}}}});
            for (size_t i = 0; i < run.loss.size(); ++i)
                event("record", {{"type", "metric"}, {"step", i + 1}, {"loss", run.loss[i]}});
            event("record", {{"type", "eval"}, {"split", "val"}, {"step", 4}, {"accuracy", 0.8}});
            event("state", {{"state", "succeeded"}});
            catalog.ingest(job, events);
        }
        catalog.db().exec("COMMIT");
        Catalog reader;
        ASSERT_EQ(reader.open(catalog_path().toStdString(), true), "");
        int64_t revision = 0;
        runs_ = reader.runs(0, &revision);
        ASSERT_EQ(runs_.size(), std::size(kRuns));
    }
    QString catalog_path() const { return dir_.filePath("catalog.db"); }
    // Hands the runs to the chart and waits for both groups to be drawn.
    void draw(GroupChart& chart) {
        chart.resize(900, 600);
        chart.show();
        chart.setRuns(runs_);
        ASSERT_TRUE(test::process_until([&] { return chart.legendNames().size() == 2 && chart.curves().size() == 2; }));
        ASSERT_EQ(chart.groupKeys(), QStringList{"optimizer.lr"});
        ASSERT_EQ(chart.metric(), "loss");
    }

    QTemporaryDir dir_;
    std::vector<RunRecord> runs_;
};

TEST_F(GroupChartTest, TableHasMeanAndStdOfLastMinMaxBestAndN) {
    GroupChart chart(catalog_path());
    draw(chart);
    // By hand. lr 0.01 (groups sort by number): last 2 and 3.5, min 2 and 2.5, max 4 and 5; N 3, one run without
    // loss. lr 0.1: last 0.01, 0.02, 1.5 (mean 0.51, std sqrt(1.4702 / 2)); min 0.01, 0.02, 0.7; max 2, 3, 2.5.
    // The best loss is the smallest.
    const std::vector<GroupChart::GroupSummary>& rows = chart.summaries();
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].values, QStringList{"0.01"});
    EXPECT_EQ(rows[0].n, 3);
    EXPECT_EQ(rows[0].last.n, 2);
    EXPECT_DOUBLE_EQ(rows[0].last.mean, 2.75);
    EXPECT_DOUBLE_EQ(rows[0].last.std_dev, 1.5 / std::sqrt(2.0));
    EXPECT_DOUBLE_EQ(rows[0].min.mean, 2.25);
    EXPECT_DOUBLE_EQ(rows[0].min.std_dev, 0.5 / std::sqrt(2.0));
    EXPECT_DOUBLE_EQ(rows[0].max.mean, 4.5);
    EXPECT_DOUBLE_EQ(rows[0].max.std_dev, 1 / std::sqrt(2.0));
    EXPECT_DOUBLE_EQ(rows[0].best.mean, 2.25);
    EXPECT_EQ(rows[1].values, QStringList{"0.1"});
    EXPECT_EQ(rows[1].n, 3);
    EXPECT_NEAR(rows[1].last.mean, 0.51, 1e-15);
    EXPECT_NEAR(rows[1].last.std_dev, std::sqrt(1.4702 / 2), 1e-15);
    EXPECT_DOUBLE_EQ(rows[1].max.mean, 2.5);
    EXPECT_DOUBLE_EQ(rows[1].max.std_dev, 0.5);
    const auto [min_mean, min_std] = mean_std({0.01, 0.02, 0.7});
    EXPECT_DOUBLE_EQ(rows[1].min.mean, min_mean);
    EXPECT_DOUBLE_EQ(rows[1].min.std_dev, min_std);
    EXPECT_DOUBLE_EQ(rows[1].best.mean, min_mean);
    EXPECT_DOUBLE_EQ(rows[1].best.std_dev, min_std);

    // As the table shows them: 4 significant digits for the mean, 2 for the std.
    EXPECT_EQ(chart.summaryRows(),
              QStringList({"optimizer.lr=0.01 | 3 | 2.75 ± 1.1 | 2.25 ± 0.35 | 4.5 ± 0.71 | 2.25 ± 0.35",
                           "optimizer.lr=0.1 | 3 | 0.51 ± 0.86 | 0.2433 ± 0.4 | 2.5 ± 0.5 | 0.2433 ± 0.4"}));

    // The CSV: raw numbers, a mean and a std column for each, at full precision.
    std::optional<QString> exported;
    QObject::connect(&chart, &GroupChart::exported, [&](const QString&, const QString& error) { exported = error; });
    const QString file = dir_.filePath("groups.csv");
    chart.exportTo(GroupChart::Export::table, file);
    ASSERT_TRUE(test::process_until([&] { return exported.has_value(); }));
    ASSERT_EQ(*exported, QString());
    QFile csv(file);
    ASSERT_TRUE(csv.open(QIODevice::ReadOnly));
    const QList<QByteArray> lines = csv.readAll().split('\n');
    ASSERT_EQ(lines.size(), 4); // the header, two groups, the piece after the last line end
    EXPECT_EQ(lines[0], "optimizer.lr,N,last.loss mean,last.loss std,min.loss mean,min.loss std,max.loss mean,"
                        "max.loss std,best.loss mean,best.loss std\r");
    const QList<QByteArray> first = lines[1].trimmed().split(','), second = lines[2].trimmed().split(',');
    ASSERT_EQ(first.size(), 10);
    ASSERT_EQ(second.size(), 10);
    EXPECT_EQ(first[0], "0.01");
    EXPECT_EQ(first[1], "3");
    const std::vector<std::vector<double>> by_hand[] = {
        {{2, 3.5}, {2, 2.5}, {4, 5}, {2, 2.5}}, {{0.01, 0.02, 1.5}, {0.01, 0.02, 0.7}, {2, 3, 2.5}, {0.01, 0.02, 0.7}}};
    for (int group = 0; group < 2; ++group) {
        const QList<QByteArray>& cells = group == 0 ? first : second;
        for (int kind = 0; kind < 4; ++kind) {
            const auto [mean, std_dev] = mean_std(by_hand[group][static_cast<size_t>(kind)]);
            EXPECT_DOUBLE_EQ(cells[2 + 2 * kind].toDouble(), mean) << group << " " << kind;
            EXPECT_DOUBLE_EQ(cells[3 + 2 * kind].toDouble(), std_dev) << group << " " << kind;
        }
    }

    // The curves: every bucket of each group's mean, low, high and n, in long format.
    exported.reset();
    chart.exportTo(GroupChart::Export::curves, dir_.filePath("curves.csv"));
    ASSERT_TRUE(test::process_until([&] { return exported.has_value(); }));
    ASSERT_EQ(*exported, QString());
    QFile curves(dir_.filePath("curves.csv"));
    ASSERT_TRUE(curves.open(QIODevice::ReadOnly));
    size_t buckets = 0;
    for (const GroupCurve& curve : chart.curves())
        buckets += curve.x.size();
    EXPECT_EQ(buckets, 4u + 3u); // a bucket a step: lr 0.01's runs have 3 steps, lr 0.1's 4
    EXPECT_EQ(static_cast<size_t>(curves.readAll().count('\n')), 1 + 4 * buckets);
    exported.reset();
    chart.exportTo(GroupChart::Export::table, dir_.filePath("groups.txt"));
    ASSERT_TRUE(test::process_until([&] { return exported.has_value(); }));
    EXPECT_TRUE(exported->contains("ending in .csv")) << exported->toStdString();

    // Another metric: its own summaries (every run has one validation accuracy of 0.8; no spread).
    chart.setMetric("val/accuracy");
    ASSERT_TRUE(test::process_until([&] { return chart.summaryRows().value(0).contains("0.8"); }));
    EXPECT_EQ(chart.summaryRows().value(0), "optimizer.lr=0.01 | 3 | 0.8 ± 0 | 0.8 ± 0 | 0.8 ± 0 | 0.8 ± 0");
}

TEST_F(GroupChartTest, LogScaleClipsWhatIsNotPositive) {
    GroupChart chart(catalog_path());
    draw(chart);
    auto band_lows = [&] {
        std::vector<double> lows;
        for (QAbstractSeries* series : chart.chart()->series())
            if (auto* band = qobject_cast<QAreaSeries*>(series))
                for (const QPointF& point : band->lowerSeries()->points())
                    lows.push_back(point.y());
        return lows;
    };
    ASSERT_FALSE(chart.logScale());
    ASSERT_TRUE(qobject_cast<QValueAxis*>(chart.chart()->axes(Qt::Vertical).value(0)));
    const std::vector<double> linear = band_lows();
    ASSERT_FALSE(linear.empty());
    const double lowest = *std::min_element(linear.begin(), linear.end());
    EXPECT_NEAR(lowest, 0.51 - std::sqrt(1.4702 / 2), 1e-12); // lr 0.1 at step 4, below zero

    int redrawn = 0;
    QObject::connect(&chart, &GroupChart::updated, [&] { ++redrawn; });
    chart.setLogScale(true);
    ASSERT_EQ(redrawn, 1); // at once: the curves it has, on another axis
    EXPECT_TRUE(chart.logScale());
    auto* axis = qobject_cast<QLogValueAxis*>(chart.chart()->axes(Qt::Vertical).value(0));
    ASSERT_TRUE(axis);
    EXPECT_EQ(axis->base(), 10);
    EXPECT_GT(axis->min(), 0);
    // From the smallest positive value drawn (a band's low edge), not from the clipped 1e-6.
    double smallest_positive = INFINITY;
    for (const double low : linear)
        if (low > 0)
            smallest_positive = std::min(smallest_positive, low);
    EXPECT_DOUBLE_EQ(axis->min(), smallest_positive);
    EXPECT_GE(axis->max(), 5.0);
    const std::vector<double> logarithmic = band_lows();
    ASSERT_EQ(logarithmic.size(), linear.size());
    for (size_t i = 0; i < linear.size(); ++i)
        EXPECT_EQ(logarithmic[i], linear[i] > 0 ? linear[i] : 1e-6) << i;
    for (QAbstractSeries* series : chart.chart()->series()) {
        if (auto* mean = qobject_cast<QLineSeries*>(series)) {
            for (const QPointF& point : mean->points())
                EXPECT_GT(point.y(), 0);
        }
    }

    chart.setLogScale(false);
    ASSERT_TRUE(qobject_cast<QValueAxis*>(chart.chart()->axes(Qt::Vertical).value(0)));
    EXPECT_EQ(band_lows(), linear);
}

} // namespace
} // namespace traindeck
