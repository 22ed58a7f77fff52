#pragma once
// A sweep's best-so-far curve: every objective value its trials reported, in the order they were reported across
// the whole sweep, each with the best of all values reported until then, the time it was reported and what the
// whole sweep had spent by then (the sum over its trials of each one's spend telemetry at that moment). The sweep
// view draws it over time and over spend. The trials' curves are the catalog's (a trial is a run like any other);
// the worker's sweep record has only each trial's best and last, not when they came. Plain C++, no Qt.
#include "catalog.h"
#include "seriesstore.h"

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace traindeck {

// What one trial's run has in the catalog.
struct TrialSeries {
    int trial = 0;                      // 1-based, as the sweep numbers its trials
    std::vector<MetricPoint> objective; // (step, value) of the objective's series
    std::vector<MetricPoint> times;     // "_time": (step, Unix seconds)
    std::vector<MetricPoint> spend;     // "telemetry/spend": (Unix milliseconds, spend)
};

struct BestSoFarPoint {
    double time = 0;  // Unix seconds of the report
    double spend = 0; // the sweep's spend then, in the worker's currency
    double value = 0; // the value reported
    double best = 0;  // the best reported until then, this one included
    int trial = 0;
};

// Every finite objective value whose record time is known, in time order (ties by trial), with the best so far by
// the goal. A trial's spend counts 0 before its first spend sample and its last sample after its last.
std::vector<BestSoFarPoint> best_so_far(std::span<const TrialSeries> trials, bool maximize);

// The trials' series as this catalog has them, read through any connection: `trials` pairs each trial's number
// with the remote id of its job on `backend`. A trial the catalog lacks (not imported yet, or deleted) is left out.
std::vector<TrialSeries> read_trial_series(Catalog& catalog, const std::string& backend,
                                           const std::vector<std::pair<int, std::string>>& trials,
                                           const std::string& objective);

} // namespace traindeck
