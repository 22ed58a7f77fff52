#pragma once
// The x-axes a run's curve can be drawn and grouped against, besides its optimiser step: samples seen, wall time,
// time since the run started and money spent. Each is a function of the step, found from what the catalog keeps
// per run: the time of each metric record (series "_time": step → Unix seconds, kept on ingest), the spend
// telemetry ("telemetry/spend": milliseconds → currency) and the config's batch size. Values come back as integer
// x (samples; milliseconds; millionths of the currency) so the group statistics' step buckets serve every axis.
// Plain C++, no Qt.
#include "catalog.h"
#include "seriesstore.h"

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace traindeck {

enum class XAxis { step, samples, wall_time, relative_time, spend };

struct XAxisSources {
    std::span<const MetricPoint> step_times; // "_time": (step, Unix seconds), ascending steps
    std::span<const MetricPoint> spend;      // "telemetry/spend": (Unix milliseconds, spend), ascending
    double samples_per_step = 0;             // batch_size × grad_accum; 0 when unknown
};

// The integer x of each point on the axis (step order kept). A point whose x cannot be known (no record time for
// its step, no spend yet, no batch size) is left out and counted in *dropped.
std::vector<MetricPoint> to_x_axis(std::span<const MetricPoint> points, XAxis axis, const XAxisSources& sources,
                                   size_t* dropped = nullptr);

// The samples one optimiser step sees, from a run's flattened config: batch_size × grad_accum (grad_accum 1 when the
// config has none, as a user script's usually does). 0 when the config names no numeric batch size.
double samples_per_step(const std::map<std::string, ConfigValue>& config);

// What a run had spent when `series` first reached `threshold` (>= it when `above`, else <= it): the step of the first
// such point, its record time, the spend telemetry at that time. NaN when it never got there or the worker reported no
// spend. Reads only the one chunk where it happens and the times around it (the chunks' min/max find it).
double spend_to_reach(Catalog& catalog, int64_t job, const std::string& series, double threshold, bool above);

// What all runs spent from `since_ms` (Unix milliseconds) on, by their spend telemetry (cumulative, a sample every few
// seconds): each run's last sample less its last sample at or before since_ms (all of it when it began after). A run
// whose worker reports no spend counts nothing. Summed per backend (each charges in its own currency). Reads the runs
// with a sample since then, two chunks each at most.
std::map<std::string, double> spend_since(Catalog& catalog, int64_t since_ms);

// How to show an integer x of the axis: the divisor back to its unit and the unit's name.
double x_axis_scale(XAxis axis);      // 1, 1, 1000, 1000, 1e6
const char* x_axis_title(XAxis axis); // "step", "samples", "wall time", "seconds since start", "spend"

} // namespace traindeck
