// to_x_axis: a curve's steps as samples seen, wall time, time since start and spend, from what the catalog keeps.
#include "xaxis.h"

#include <gtest/gtest.h>

using namespace traindeck;

namespace {

const std::vector<MetricPoint> kLoss = {{1, 2.0}, {2, 1.5}, {3, 1.2}, {5, 1.0}};
// Record times: step 1 at 1000.0 s, step 3 at 1004.0 s, step 5 at 1010.0 s (step 2 and 4 have none).
const std::vector<MetricPoint> kTimes = {{1, 1000.0}, {3, 1004.0}, {5, 1010.0}};
// Spend telemetry by milliseconds: $0.10 at 1002 s, $0.30 at 1008 s.
const std::vector<MetricPoint> kSpend = {{1'002'000, 0.10}, {1'008'000, 0.30}};

std::vector<int64_t> xs(const std::vector<MetricPoint>& points) {
    std::vector<int64_t> out;
    out.reserve(points.size());
    for (const MetricPoint& p : points)
        out.push_back(p.step);
    return out;
}

} // namespace

TEST(XAxis, StepIsTheStepAndSamplesNeedABatchSize) {
    EXPECT_EQ(xs(to_x_axis(kLoss, XAxis::step, {})), (std::vector<int64_t>{1, 2, 3, 5}));
    XAxisSources sources;
    sources.samples_per_step = 128;
    EXPECT_EQ(xs(to_x_axis(kLoss, XAxis::samples, sources)), (std::vector<int64_t>{128, 256, 384, 640}));
    size_t dropped = 0;
    EXPECT_TRUE(to_x_axis(kLoss, XAxis::samples, {}, &dropped).empty());
    EXPECT_EQ(dropped, 4u); // no batch size: nothing to place, and said so
}

TEST(XAxis, SamplesPerStepIsTheBatchTimesTheAccumulation) {
    std::map<std::string, ConfigValue> config = {{"batch_size", {"64", 64}}};
    EXPECT_EQ(samples_per_step(config), 64); // a user script's config: no accumulation
    config["grad_accum"] = {"4", 4};
    EXPECT_EQ(samples_per_step(config), 256); // the built-in trainer: one step is grad_accum batches
    config["batch_size"] = {"large", NAN};
    EXPECT_EQ(samples_per_step(config), 0); // not a number: unknown, not 4
    EXPECT_EQ(samples_per_step({{"grad_accum", {"4", 4}}}), 0);
}

TEST(XAxis, TimesComeFromTheRecordTimesBetweenKnownSteps) {
    XAxisSources sources;
    sources.step_times = kTimes;
    const std::vector<MetricPoint> wall = to_x_axis(kLoss, XAxis::wall_time, sources);
    // Step 2 lies halfway between steps 1 and 3: 1002 s.
    EXPECT_EQ(xs(wall), (std::vector<int64_t>{1'000'000, 1'002'000, 1'004'000, 1'010'000}));
    EXPECT_EQ(wall[1].value, 1.5); // values are the curve's own
    EXPECT_EQ(xs(to_x_axis(kLoss, XAxis::relative_time, sources)), (std::vector<int64_t>{0, 2'000, 4'000, 10'000}));
    // A step after the last known time has no time: left out, counted.
    size_t dropped = 0;
    const std::vector<MetricPoint> later = {{9, 0.5}};
    EXPECT_TRUE(to_x_axis(later, XAxis::wall_time, sources, &dropped).empty());
    EXPECT_EQ(dropped, 1u);
    EXPECT_DOUBLE_EQ(x_axis_scale(XAxis::relative_time), 1000.0);
}

TEST(XAxis, SpendIsTheTelemetrysSpendAtTheStepsTime) {
    XAxisSources sources;
    sources.step_times = kTimes;
    sources.spend = kSpend;
    // 1000 s: before the first spend sample, nothing spent yet; 1004 s: a third of the way from $0.10 to $0.30;
    // 1010 s: after the last sample, the last spend.
    EXPECT_EQ(xs(to_x_axis(kLoss, XAxis::spend, sources)), (std::vector<int64_t>{0, 100'000, 166'667, 300'000}));
    EXPECT_DOUBLE_EQ(x_axis_scale(XAxis::spend), 1e6);
}
