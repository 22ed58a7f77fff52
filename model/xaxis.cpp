// to_x_axis and its units (xaxis.h).
#include "xaxis.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace traindeck {

namespace {

// Linear between the two known neighbours; exact where the key is known; NaN outside the known range.
double interpolate(std::span<const MetricPoint> known, double key) {
    if (known.empty())
        return NAN;
    const auto after = std::lower_bound(known.begin(), known.end(), key,
                                        [](const MetricPoint& p, double k) { return static_cast<double>(p.step) < k; });
    if (after != known.end() && static_cast<double>(after->step) == key)
        return after->value;
    if (after == known.begin() || after == known.end())
        return NAN;
    const MetricPoint& before = *(after - 1);
    const double t = (key - static_cast<double>(before.step)) / static_cast<double>(after->step - before.step);
    return before.value + t * (after->value - before.value);
}

} // namespace

std::vector<MetricPoint> to_x_axis(std::span<const MetricPoint> points, XAxis axis, const XAxisSources& sources,
                                   size_t* dropped) {
    std::vector<MetricPoint> out;
    out.reserve(points.size());
    size_t lost = 0;
    const double start = sources.step_times.empty() ? NAN : sources.step_times.front().value;
    for (const MetricPoint& p : points) {
        double x = NAN;
        switch (axis) {
        case XAxis::step:
            x = static_cast<double>(p.step);
            break;
        case XAxis::samples:
            x = sources.samples_per_step > 0 ? static_cast<double>(p.step) * sources.samples_per_step : NAN;
            break;
        case XAxis::wall_time:
            x = interpolate(sources.step_times, static_cast<double>(p.step)) * 1000.0;
            break;
        case XAxis::relative_time:
            x = (interpolate(sources.step_times, static_cast<double>(p.step)) - start) * 1000.0;
            break;
        case XAxis::spend: {
            const double time = interpolate(sources.step_times, static_cast<double>(p.step));
            // Before the first spend sample the run had spent nothing yet that the worker reported.
            const double spent =
                std::isnan(time) || sources.spend.empty() ? NAN
                : time * 1000.0 < static_cast<double>(sources.spend.front().step)
                    ? 0.0
                    : interpolate(sources.spend,
                                  std::min(time * 1000.0, static_cast<double>(sources.spend.back().step)));
            x = spent * 1e6;
            break;
        }
        }
        if (!std::isfinite(x) || std::fabs(x) > 9e15) {
            ++lost;
            continue;
        }
        out.push_back({static_cast<int64_t>(std::llround(x)), p.value});
    }
    if (dropped)
        *dropped = lost;
    return out;
}

double samples_per_step(const std::map<std::string, ConfigValue>& config) {
    const auto batch = config.find("batch_size");
    if (batch == config.end() || !batch->second.is_number() || batch->second.number <= 0)
        return 0;
    const auto accumulate = config.find("grad_accum");
    const bool accumulates =
        accumulate != config.end() && accumulate->second.is_number() && accumulate->second.number > 0;
    return batch->second.number * (accumulates ? accumulate->second.number : 1.0);
}

std::map<std::string, double> spend_since(Catalog& catalog, int64_t since_ms) {
    Database& db = catalog.db();
    std::vector<std::pair<int64_t, std::string>> series; // (series, its job's backend)
    {
        Statement select = db.prepare(
            "SELECT s.id, j.backend FROM series s JOIN jobs j ON j.id=s.job WHERE s.name='telemetry/spend' AND "
            "EXISTS(SELECT 1 FROM metric_chunks c WHERE c.series=s.id AND c.last_step>=?)");
        select.bind(1, since_ms);
        while (select.step())
            series.emplace_back(select.integer(0), select.text(1));
    }
    Statement last = db.prepare("SELECT last FROM metric_chunks WHERE series=? ORDER BY chunk DESC LIMIT 1");
    Statement before =
        db.prepare("SELECT first_step FROM metric_chunks WHERE series=? AND first_step<=? ORDER BY chunk DESC LIMIT 1");
    std::map<std::string, double> total;
    for (const auto& [id, backend] : series) {
        last.reset();
        last.bind(1, id);
        if (!last.step())
            continue;
        double spent = last.real(0);
        before.reset();
        before.bind(1, id).bind(2, since_ms);
        if (before.step()) {
            const std::vector<MetricPoint> earlier = SeriesStore::points(db, id, before.integer(0), since_ms);
            if (!earlier.empty())
                spent -= earlier.back().value;
        }
        total[backend] += std::max(0.0, spent);
    }
    return total;
}

double spend_to_reach(Catalog& catalog, int64_t job, const std::string& series, double threshold, bool above) {
    const int64_t id = catalog.series(job, series, false);
    if (!id || std::isnan(threshold))
        return NAN;
    Statement chunk = catalog.db().prepare(
        above ? "SELECT first_step, last_step FROM metric_chunks WHERE series=? AND max >= ? ORDER BY chunk LIMIT 1"
              : "SELECT first_step, last_step FROM metric_chunks WHERE series=? AND min <= ? ORDER BY chunk LIMIT 1");
    chunk.bind(1, id).bind(2, threshold);
    if (!chunk.step())
        return NAN;
    const int64_t from = chunk.integer(0), to = chunk.integer(1);
    const std::vector<MetricPoint> points = SeriesStore::points(catalog.db(), id, from, to);
    const auto reached = std::find_if(points.begin(), points.end(), [&](const MetricPoint& p) {
        return above ? p.value >= threshold : p.value <= threshold;
    });
    if (reached == points.end())
        return NAN; // a chunk whose summary says so holds the point; a replaced value may have moved it
    // The record time of the step and the whole spend telemetry (a point every few seconds).
    const int64_t times_id = catalog.series(job, "_time", false),
                  spend_id = catalog.series(job, "telemetry/spend", false);
    if (!times_id || !spend_id)
        return NAN;
    // Usually the step has its own record time; otherwise its neighbours within a few thousand steps serve.
    std::vector<MetricPoint> times = SeriesStore::points(catalog.db(), times_id, reached->step, reached->step);
    if (times.empty())
        times = SeriesStore::points(catalog.db(), times_id, reached->step - 4096, reached->step + 4096);
    const std::vector<MetricPoint> spend = SeriesStore::points(
        catalog.db(), spend_id, std::numeric_limits<int64_t>::min() / 4, std::numeric_limits<int64_t>::max() / 4);
    const MetricPoint point[] = {*reached};
    const std::vector<MetricPoint> x = to_x_axis(point, XAxis::spend, {times, spend, 0});
    return x.empty() ? NAN : static_cast<double>(x.front().step) / x_axis_scale(XAxis::spend);
}

double x_axis_scale(XAxis axis) {
    switch (axis) {
    case XAxis::wall_time:
    case XAxis::relative_time:
        return 1000.0;
    case XAxis::spend:
        return 1e6;
    case XAxis::step:
    case XAxis::samples:
        return 1.0;
    }
    return 1.0;
}

const char* x_axis_title(XAxis axis) {
    switch (axis) {
    case XAxis::step:
        return "step";
    case XAxis::samples:
        return "samples seen";
    case XAxis::wall_time:
        return "wall time";
    case XAxis::relative_time:
        return "seconds since start";
    case XAxis::spend:
        return "spend";
    }
    return "";
}

} // namespace traindeck
