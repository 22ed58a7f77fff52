#pragma once
// Groups of runs and their curves: the runs that share the values of the chosen keys form a group; a group's curve is,
// per step bucket, the mean over its runs of each run's exact bucket value (the mean of that run's points in the
// bucket), with a band (± standard deviation, ± standard error, or min–max over the runs) and N, the number of runs
// that have a point in the bucket. Plain C++, no Qt: tested against a brute-force computation over the raw points.
//
// Rules it keeps: one pass over each run's points and no allocation per point (100 runs × 100,000 points into 2,000
// buckets well under the 50 ms tests/bench/compare_runs asks for); the spread over the runs is Welford's, so a
// metric far from zero (an accuracy of 0.9 ± 1e-6) keeps its digits; non-finite values (a NaN loss) are left out
// of every mean, so a run that diverged drops out of N instead of turning the group's curve into NaN.
#include "runrecord.h"
#include "seriesstore.h"

#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace traindeck {

// The band around a group's mean: ± the sample standard deviation over the runs, ± the standard error of the mean
// (std / sqrt(N)), or the lowest and the highest run. With N == 1 the std and standard-error bands collapse onto the
// mean (a spread of one run is 0, not undefined): the legend's N says how much the band means.
enum class Band { std_dev, std_error, min_max };

struct GroupCurve {
    // One entry per bucket that holds at least one run's point; x = the centre of the bucket's step range.
    std::vector<double> x, mean, low, high;
    std::vector<int> n; // runs with a (finite) point in the bucket: where it drops, a run ended or has a gap
};

// Buckets split the integer steps of [from_step, to_step] into `buckets` ranges of equal length (within one step),
// the edges SeriesStore::query uses too (but where its buckets are whole stored chunks): step s falls in bucket
// floor((s - from_step) * buckets / (to_step - from_step + 1)). Points outside the range are ignored; each run's points
// may come in any order (in step order, as SeriesStore::points returns them, is the fast path), and a step a run
// repeats counts each time (a resumed run read from the catalog has its repeated steps already replaced). Empty when
// buckets <= 0 or to_step < from_step.
GroupCurve group_curve(std::span<const std::span<const MetricPoint>> runs, int64_t from_step, int64_t to_step,
                       int buckets, Band band);

// Mean, (sample) standard deviation and N of the finite values; NaN mean when there are none, std_dev 0 with one
// value (as the curve's band collapses with N == 1). For the runs table's group summaries ("0.91 ± 0.01, N 5").
struct SummaryStat {
    double mean = NAN, std_dev = NAN;
    int n = 0;
};
SummaryStat summary_stat(std::span<const double> values);

struct RunGroup {
    std::vector<std::string> values; // one per key, in the keys' order ("" where a run lacks the key)
    std::vector<int64_t> runs;       // ids, in the order given
};
// Groups by the values of the config keys (the group's label is its values, compared as text; an empty text is the
// same as a missing key). Groups are ordered by their values, key by key: numbers first and by number (lr 0.001
// before 0.01, batch 32 before 128), then texts by text, then runs that lack the key. No keys: one group of all.
// The caller chooses the keys: the default suggestion is differing_config_keys() without "seed".
std::vector<RunGroup> group_runs(std::span<const RunRecord* const> runs, std::span<const std::string> keys);

// The config keys whose values differ among the runs (a key some runs lack counts as differing), sorted; compared as
// text (the text is the run's own, so 0.1 never differs from itself by how a double prints). Fewer than two runs:
// nothing differs.
std::vector<std::string> differing_config_keys(std::span<const RunRecord* const> runs);

} // namespace traindeck
