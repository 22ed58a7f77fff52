// best_so_far and the catalog reads behind it (sweepprogress.h).
#include "sweepprogress.h"

#include "xaxis.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace traindeck {

namespace {

// The trial's spend at `ms` (Unix milliseconds): linear between samples, 0 before the first, the last after it.
double spend_at(std::span<const MetricPoint> spend, double ms) {
    if (spend.empty() || ms < static_cast<double>(spend.front().step))
        return 0;
    if (ms >= static_cast<double>(spend.back().step))
        return spend.back().value;
    const auto after = std::upper_bound(spend.begin(), spend.end(), ms, [](double key, const MetricPoint& p) {
        return key < static_cast<double>(p.step);
    });
    const MetricPoint& before = *(after - 1);
    const double t = (ms - static_cast<double>(before.step)) / static_cast<double>(after->step - before.step);
    return before.value + t * (after->value - before.value);
}

std::vector<MetricPoint> all_points(Catalog& catalog, int64_t job, const std::string& series) {
    const int64_t id = catalog.series(job, series, false);
    return id ? SeriesStore::points(catalog.db(), id, std::numeric_limits<int64_t>::min() / 4,
                                    std::numeric_limits<int64_t>::max() / 4)
              : std::vector<MetricPoint>();
}

} // namespace

std::vector<BestSoFarPoint> best_so_far(std::span<const TrialSeries> trials, bool maximize) {
    std::vector<BestSoFarPoint> reports;
    for (const TrialSeries& trial : trials) {
        // The record time of each report's step, through the same interpolation the job charts' time axis uses.
        const std::vector<MetricPoint> timed = to_x_axis(trial.objective, XAxis::wall_time, {trial.times, {}, 0});
        for (const MetricPoint& point : timed)
            if (std::isfinite(point.value))
                reports.push_back({static_cast<double>(point.step) / 1000.0, 0, point.value, 0, trial.trial});
    }
    std::stable_sort(reports.begin(), reports.end(), [](const BestSoFarPoint& a, const BestSoFarPoint& b) {
        return a.time < b.time || (a.time == b.time && a.trial < b.trial);
    });
    double best = NAN;
    for (BestSoFarPoint& report : reports) {
        if (std::isnan(best) || (maximize ? report.value > best : report.value < best))
            best = report.value;
        report.best = best;
        for (const TrialSeries& trial : trials)
            report.spend += spend_at(trial.spend, report.time * 1000.0);
    }
    return reports;
}

std::vector<TrialSeries> read_trial_series(Catalog& catalog, const std::string& backend,
                                           const std::vector<std::pair<int, std::string>>& trials,
                                           const std::string& objective) {
    std::vector<TrialSeries> found;
    Statement select = catalog.db().prepare("SELECT id FROM jobs WHERE backend=? AND remote_id=? AND deleted=0");
    for (const auto& [trial, remote] : trials) {
        select.reset();
        select.bind(1, backend).bind(2, remote);
        if (!select.step())
            continue;
        const int64_t job = select.integer(0);
        found.push_back({trial, all_points(catalog, job, objective), all_points(catalog, job, "_time"),
                         all_points(catalog, job, "telemetry/spend")});
    }
    return found;
}

} // namespace traindeck
