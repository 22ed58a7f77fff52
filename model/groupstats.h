#pragma once
// Groups of runs and their curves: the runs that share the values of the chosen keys form a group; a group's curve is,
// per step bucket, the mean over its runs of each run's exact bucket value (the mean of that run's points in the
// bucket), with a band (± standard deviation, ± standard error, or min–max over the runs) and N, the number of runs
// that have a point in the bucket. Plain C++, no Qt: tested against a brute-force computation over the raw points.
#include "runrecord.h"
#include "seriesstore.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace traindeck {

enum class Band { std_dev, std_error, min_max };

struct GroupCurve {
    // One entry per bucket that holds at least one run's point; x = the centre of the bucket's step range.
    std::vector<double> x, mean, low, high;
    std::vector<int> n;
};

// Buckets split [from_step, to_step] into `buckets` equal step ranges (the last one closed).
GroupCurve group_curve(std::span<const std::span<const MetricPoint>> runs, int64_t from_step, int64_t to_step,
                       int buckets, Band band);

// Mean, (sample) standard deviation and N of the finite values; NaN mean when there are none.
struct SummaryStat {
    double mean = NAN, std_dev = NAN;
    int n = 0;
};
SummaryStat summary_stat(std::span<const double> values);

struct RunGroup {
    std::vector<std::string> values; // one per key, in the keys' order ("" where a run lacks the key)
    std::vector<int64_t> runs;       // ids, in the order given
};
// Groups by the values of the config keys (the group's label is its values); groups ordered by their values.
std::vector<RunGroup> group_runs(std::span<const RunRecord* const> runs, std::span<const std::string> keys);

// The config keys whose values differ among the runs (a key some runs lack counts as differing), sorted.
std::vector<std::string> differing_config_keys(std::span<const RunRecord* const> runs);

} // namespace traindeck
