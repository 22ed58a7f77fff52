// Group statistics against a brute-force computation written plainly over the raw points: every band, runs of
// uneven lengths (N drops where they end), points in any order, a non-finite value, and a resumed run whose repeated
// steps replaced their values in a real catalog file. Grouping and the config diff on hand-made RunRecords.
#include "catalog.h"
#include "groupstats.h"

#include "tempcatalog.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <random>
#include <tuple>

using namespace traindeck;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

using test::TempCatalog;

using Points = std::vector<MetricPoint>;

struct Expected {
    double x, mean, low, high;
    int n;
};

// The definition, computed the slow way: for every bucket, find its step range by testing every step, then each
// run's mean over its points in that range, then mean, spread and N over the runs (the spread in two passes).
std::vector<Expected> brute_force(const std::vector<Points>& runs, int64_t from, int64_t to, int buckets, Band band) {
    std::vector<Expected> out;
    const int64_t span = to - from + 1;
    for (int b = 0; b < buckets; ++b) {
        int64_t lowest = std::numeric_limits<int64_t>::max(), highest = std::numeric_limits<int64_t>::min();
        for (int64_t step = from; step <= to; ++step)
            if ((step - from) * buckets / span == b) {
                lowest = std::min(lowest, step);
                highest = std::max(highest, step);
            }
        if (lowest > highest)
            continue;
        std::vector<double> run_values;
        for (const Points& run : runs) {
            double sum = 0;
            int count = 0;
            for (const MetricPoint& p : run)
                if (p.step >= lowest && p.step <= highest && std::isfinite(p.value)) {
                    sum += p.value;
                    ++count;
                }
            if (count > 0)
                run_values.push_back(sum / count);
        }
        if (run_values.empty())
            continue;
        const int n = static_cast<int>(run_values.size());
        double mean = 0;
        for (double v : run_values)
            mean += v;
        mean /= n;
        double squares = 0;
        for (double v : run_values)
            squares += (v - mean) * (v - mean);
        const double std_dev = n > 1 ? std::sqrt(squares / (n - 1)) : 0.0;
        Expected e{(lowest + highest) / 2.0, mean, 0, 0, n};
        if (band == Band::min_max) {
            e.low = *std::min_element(run_values.begin(), run_values.end());
            e.high = *std::max_element(run_values.begin(), run_values.end());
        } else {
            const double half = band == Band::std_dev ? std_dev : std_dev / std::sqrt(n);
            e.low = mean - half;
            e.high = mean + half;
        }
        out.push_back(e);
    }
    return out;
}

GroupCurve curve_of(const std::vector<Points>& runs, int64_t from, int64_t to, int buckets, Band band) {
    std::vector<std::span<const MetricPoint>> spans(runs.begin(), runs.end());
    return group_curve(spans, from, to, buckets, band);
}

void expect_same(const GroupCurve& got, const std::vector<Expected>& expected) {
    ASSERT_FALSE(expected.empty());
    ASSERT_EQ(got.x.size(), expected.size());
    ASSERT_EQ(got.mean.size(), expected.size());
    ASSERT_EQ(got.low.size(), expected.size());
    ASSERT_EQ(got.high.size(), expected.size());
    ASSERT_EQ(got.n.size(), expected.size());
    auto near = [](double a, double b) { return std::abs(a - b) <= 1e-12 * std::max(1.0, std::abs(b)); };
    for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_EQ(got.x[i], expected[i].x) << "bucket " << i;
        EXPECT_EQ(got.n[i], expected[i].n) << "bucket " << i;
        EXPECT_TRUE(near(got.mean[i], expected[i].mean))
            << "bucket " << i << ": " << got.mean[i] << " vs " << expected[i].mean;
        EXPECT_TRUE(near(got.low[i], expected[i].low))
            << "bucket " << i << ": " << got.low[i] << " vs " << expected[i].low;
        EXPECT_TRUE(near(got.high[i], expected[i].high))
            << "bucket " << i << ": " << got.high[i] << " vs " << expected[i].high;
    }
}

// Runs of uneven lengths and strides around 0.9 (far from zero, so a naive variance would lose digits), one empty,
// one holding a NaN, and one the same points shuffled (any order is allowed, not only step order).
std::vector<Points> uneven_runs() {
    std::mt19937 random(12);
    std::normal_distribution<double> noise;
    std::vector<Points> runs;
    const std::vector<std::pair<int, int>> shapes = {{1200, 1}, {900, 2}, {450, 3}, {2000, 1}, {30, 7}, {0, 1}};
    for (const auto& [length, stride] : shapes) {
        Points& run = runs.emplace_back();
        for (int i = 0; i < length; ++i) {
            const int64_t step = 1 + static_cast<int64_t>(i) * stride + (i > length / 2 ? 5 : 0); // a gap midway
            run.push_back({step, 0.9 + 0.3 * std::exp(-step / 400.0) + 1e-3 * noise(random)});
        }
    }
    runs[1][100].value = std::nan("");
    Points shuffled = runs[0];
    std::shuffle(shuffled.begin(), shuffled.end(), random);
    for (MetricPoint& p : shuffled)
        p.value += 0.05;
    runs.push_back(shuffled);
    return runs;
}

RunRecord record(int64_t id, std::map<std::string, ConfigValue> config) {
    RunRecord run;
    run.id = id;
    run.name = "run " + std::to_string(id);
    run.config = std::move(config);
    return run;
}
ConfigValue number(const std::string& text) { return {text, std::stod(text)}; }
ConfigValue text(const std::string& text) { return {text, NAN}; }

std::vector<const RunRecord*> pointers(const std::vector<RunRecord>& runs) {
    std::vector<const RunRecord*> out;
    out.reserve(runs.size());
    for (const RunRecord& run : runs)
        out.push_back(&run);
    return out;
}

} // namespace

TEST(GroupCurve, MatchesBruteForceForEveryBandAndRange) {
    const std::vector<Points> runs = uneven_runs();
    // Whole range; a window that clips the runs at both ends; more buckets than steps; one step per bucket.
    for (const auto& [from, to, buckets] :
         {std::tuple{int64_t{1}, int64_t{2005}, 37}, std::tuple{int64_t{100}, int64_t{1700}, 64},
          std::tuple{int64_t{10}, int64_t{59}, 200}, std::tuple{int64_t{1}, int64_t{1000}, 1000}})
        for (Band band : {Band::std_dev, Band::std_error, Band::min_max}) {
            SCOPED_TRACE(testing::Message() << "from " << from << " to " << to << " buckets " << buckets << " band "
                                            << static_cast<int>(band));
            expect_same(curve_of(runs, from, to, buckets, band), brute_force(runs, from, to, buckets, band));
        }
}

TEST(GroupCurve, NDropsWhereShorterRunsEndAndOneRunCollapsesTheBand) {
    std::vector<Points> runs(3);
    const int lengths[] = {1000, 600, 300};
    for (int r = 0; r < 3; ++r)
        for (int64_t step = 1; step <= lengths[r]; ++step)
            runs[r].push_back({step, r + step * 0.001});
    for (Band band : {Band::std_dev, Band::std_error, Band::min_max}) {
        const GroupCurve curve = curve_of(runs, 1, 1000, 10, band);
        ASSERT_EQ(curve.n.size(), 10u);
        EXPECT_EQ(curve.n, (std::vector<int>{3, 3, 3, 2, 2, 2, 1, 1, 1, 1}));
        ASSERT_EQ(curve.x.size(), 10u);
        EXPECT_EQ(curve.x[0], 50.5); // steps 1..100
        EXPECT_EQ(curve.x[9], 950.5);
        ASSERT_EQ(curve.mean.size(), 10u);
        ASSERT_EQ(curve.low.size(), 10u);
        ASSERT_EQ(curve.high.size(), 10u);
        for (size_t i = 6; i < 10; ++i) {
            EXPECT_DOUBLE_EQ(curve.mean[i], (100 * i + 1 + 100 * i + 100) / 2.0 * 0.001);
            EXPECT_EQ(curve.low[i], curve.mean[i]);
            EXPECT_EQ(curve.high[i], curve.mean[i]);
        }
        EXPECT_LT(curve.low[0], curve.mean[0]);
        EXPECT_GT(curve.high[0], curve.mean[0]);
        expect_same(curve, brute_force(runs, 1, 1000, 10, band));
    }
}

TEST(GroupCurve, EmptyWhenNothingFallsInTheRange) {
    const std::vector<Points> runs = {{{5, 1.0}, {6, 2.0}}};
    EXPECT_EQ(curve_of(runs, 1, 10, 0, Band::std_dev).x.size(), 0u);
    EXPECT_EQ(curve_of(runs, 10, 1, 5, Band::std_dev).x.size(), 0u);
    EXPECT_EQ(curve_of(runs, 100, 200, 5, Band::std_dev).x.size(), 0u);
    EXPECT_EQ(curve_of({}, 1, 10, 5, Band::std_dev).x.size(), 0u);
    EXPECT_EQ(curve_of(std::vector<Points>{Points{{5, NAN}}}, 1, 10, 5, Band::std_dev).x.size(), 0u);
    const GroupCurve one = curve_of(runs, 1, 10, 5, Band::std_dev);
    ASSERT_EQ(one.x.size(), 1u); // steps 5 and 6 share bucket 5..6
    EXPECT_EQ(one.x[0], 5.5);
    EXPECT_EQ(one.mean[0], 1.5);
    EXPECT_EQ(one.n[0], 1);
}

TEST(GroupCurve, ResumedRunInTheCatalogUsesItsReplacedSteps) {
    TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    const int64_t job = catalog.add_job("resumed", "local", "1", json::object());
    auto metric = [](int64_t seq, int64_t step, double loss) {
        return json{{"seq", seq},
                    {"time", 1.0 * seq},
                    {"type", "record"},
                    {"data", {{"type", "metric"}, {"step", step}, {"loss", loss}, {"lr", 0.1}}}};
    };
    std::vector<json> first, resumed;
    Points original, replaced;
    for (int64_t step = 1; step <= 100; ++step) {
        first.push_back(metric(step, step, 1.0 + step / 100.0));
        original.push_back({step, 1.0 + step / 100.0});
    }
    replaced = original;
    // Killed after step 100, resumed from its checkpoint at step 49: steps 50..60 come again with other values.
    for (int64_t step = 50; step <= 60; ++step) {
        resumed.push_back(metric(100 + step - 49, step, 3.0 + step / 100.0));
        replaced[step - 1].value = 3.0 + step / 100.0;
    }
    {
        CatalogWriter writer(catalog);
        writer.post(job, first);
        writer.post(job, resumed);
        ASSERT_EQ(writer.flush(), "");
    }
    const int64_t series = catalog.series(job, "loss", false);
    ASSERT_NE(series, 0);
    const Points stored = SeriesStore::points(catalog.db(), series, 1, 100);
    ASSERT_EQ(stored.size(), 100u);
    EXPECT_EQ(stored[49].value, 3.5);

    const Points other = [] {
        Points run;
        for (int64_t step = 1; step <= 100; ++step)
            run.push_back({step, 2.0});
        return run;
    }();
    const GroupCurve from_catalog = curve_of({stored, other}, 1, 100, 10, Band::min_max);
    expect_same(from_catalog, brute_force({replaced, other}, 1, 100, 10, Band::min_max));
    // The buckets 41..50 and 51..60 hold replaced steps: with the original values they would read otherwise.
    const std::vector<Expected> with_original = brute_force({original, other}, 1, 100, 10, Band::min_max);
    ASSERT_EQ(with_original.size(), 10u);
    ASSERT_EQ(from_catalog.mean.size(), 10u);
    EXPECT_NE(from_catalog.mean[4], with_original[4].mean);
    EXPECT_NE(from_catalog.mean[5], with_original[5].mean);
    EXPECT_NE(from_catalog.high[5], with_original[5].high);
    EXPECT_EQ(from_catalog.mean[3], with_original[3].mean);
}

TEST(GroupSummaryStat, MeanAndSampleStdOfTheFiniteValues) {
    const std::vector<double> values = {1, 2, 3, 4, NAN, INFINITY};
    const SummaryStat stat = summary_stat(values);
    EXPECT_EQ(stat.n, 4);
    EXPECT_DOUBLE_EQ(stat.mean, 2.5);
    EXPECT_DOUBLE_EQ(stat.std_dev, std::sqrt(5.0 / 3.0));
    // Far from zero: a sum of squares minus the squared sum would lose these digits.
    const std::vector<double> offset = {1e9 + 4, 1e9 + 7, 1e9 + 13, 1e9 + 16};
    EXPECT_DOUBLE_EQ(summary_stat(offset).std_dev, std::sqrt(30.0));
    const std::vector<double> one = {0.93};
    EXPECT_EQ(summary_stat(one).n, 1);
    EXPECT_EQ(summary_stat(one).mean, 0.93);
    EXPECT_EQ(summary_stat(one).std_dev, 0.0);
    const std::vector<double> none = {NAN};
    EXPECT_EQ(summary_stat(none).n, 0);
    EXPECT_TRUE(std::isnan(summary_stat(none).mean));
    EXPECT_TRUE(std::isnan(summary_stat({}).std_dev));
}

TEST(GroupRuns, GroupsOnTheDifferingKeysTheCallerKeepsOrderedByValue) {
    const std::vector<RunRecord> runs = {
        record(1, {{"model", text("cnn")}, {"lr", number("0.01")}, {"seed", number("1")}, {"dataset", text("mnist")}}),
        record(2, {{"model", text("cnn")}, {"lr", number("0.01")}, {"seed", number("2")}, {"dataset", text("mnist")}}),
        record(3, {{"model", text("mlp")}, {"lr", number("0.1")}, {"seed", number("1")}, {"dataset", text("mnist")}}),
        record(4, {{"model", text("cnn")}, {"lr", number("0.001")}, {"seed", number("1")}, {"dataset", text("mnist")}}),
        record(5, {{"model", text("cnn")}, {"seed", number("3")}, {"dataset", text("mnist")}}),
        record(6, {{"model", text("cnn")}, {"lr", text("auto")}, {"seed", number("1")}, {"dataset", text("mnist")}}),
        record(7, {{"model", text("mlp")}, {"lr", number("0.1")}, {"seed", number("2")}, {"dataset", text("mnist")}}),
    };
    std::vector<std::string> keys = differing_config_keys(pointers(runs));
    ASSERT_EQ(keys.size(), 3u);
    EXPECT_EQ(keys, (std::vector<std::string>{"lr", "model", "seed"}));
    std::erase(keys, "seed"); // the caller's choice, not the function's
    const std::vector<RunGroup> groups = group_runs(pointers(runs), keys);
    ASSERT_EQ(groups.size(), 5u);
    EXPECT_EQ(groups[0].values, (std::vector<std::string>{"0.001", "cnn"}));
    EXPECT_EQ(groups[0].runs, (std::vector<int64_t>{4}));
    EXPECT_EQ(groups[1].values, (std::vector<std::string>{"0.01", "cnn"}));
    EXPECT_EQ(groups[1].runs, (std::vector<int64_t>{1, 2}));
    EXPECT_EQ(groups[2].values, (std::vector<std::string>{"0.1", "mlp"}));
    EXPECT_EQ(groups[2].runs, (std::vector<int64_t>{3, 7}));
    EXPECT_EQ(groups[3].values, (std::vector<std::string>{"auto", "cnn"})); // texts after numbers
    EXPECT_EQ(groups[3].runs, (std::vector<int64_t>{6}));
    EXPECT_EQ(groups[4].values, (std::vector<std::string>{"", "cnn"})); // a missing key last
    EXPECT_EQ(groups[4].runs, (std::vector<int64_t>{5}));
}

TEST(GroupRuns, NumbersOrderByNumberAndNoKeysIsOneGroup) {
    const std::vector<RunRecord> runs = {record(1, {{"batch", number("128")}}), record(2, {{"batch", number("2")}}),
                                         record(3, {{"batch", number("32")}}), record(4, {{"batch", number("2")}})};
    const std::vector<std::string> batch = {"batch"};
    const std::vector<RunGroup> groups = group_runs(pointers(runs), batch);
    ASSERT_EQ(groups.size(), 3u);
    EXPECT_EQ(groups[0].values, (std::vector<std::string>{"2"})); // not "128" first, as text would sort
    EXPECT_EQ(groups[0].runs, (std::vector<int64_t>{2, 4}));
    EXPECT_EQ(groups[1].values, (std::vector<std::string>{"32"}));
    EXPECT_EQ(groups[2].values, (std::vector<std::string>{"128"}));
    const std::vector<RunGroup> all = group_runs(pointers(runs), {});
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0].values.size(), 0u);
    EXPECT_EQ(all[0].runs, (std::vector<int64_t>{1, 2, 3, 4}));
    EXPECT_EQ(group_runs({}, batch).size(), 0u);
}

TEST(GroupDifferingKeys, AMissingKeyDiffersAndEqualTextsDoNot) {
    const std::vector<RunRecord> runs = {
        record(1, {{"dataset", text("mnist")}, {"epochs", number("5")}, {"hidden[0]", number("128")}}),
        record(2, {{"dataset", text("mnist")}, {"epochs", number("5")}, {"hidden[0]", number("256")}}),
        record(3, {{"dataset", text("mnist")}, {"hidden[0]", number("128")}, {"augment", text("true")}}),
    };
    const std::vector<std::string> keys = differing_config_keys(pointers(runs));
    ASSERT_EQ(keys.size(), 3u);
    EXPECT_EQ(keys, (std::vector<std::string>{"augment", "epochs", "hidden[0]"}));
    const std::vector<const RunRecord*> one = {&runs[2]};
    EXPECT_EQ(differing_config_keys(one).size(), 0u);
    const std::vector<const RunRecord*> same = {&runs[0], &runs[0]};
    EXPECT_EQ(differing_config_keys(same).size(), 0u);
}
