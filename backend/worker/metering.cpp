// Spend, budget and idle policy: the arithmetic and the rules, without clocks or telemetry of their own.
#include "metering.h"

#include <algorithm>

namespace traindeck::worker {

double rate_per_hour(const Prices& prices, const Resources& resources) {
    return prices.base + prices.gpu * resources.gpu_fraction() + prices.cpu * resources.cpus;
}

void charge(double& spend, double& run_seconds, MeterMarks& marks, double now, double rate) {
    const double dt = std::max(0.0, now - marks.last);
    marks.last = now;
    spend += rate * dt / 3600.0;
    run_seconds += dt;
}

MeterVerdict judge(double spend, double run_seconds, double budget, double utilization, double now, MeterMarks& marks,
                   const IdlePolicy& policy, double warn_percent) {
    MeterVerdict verdict;
    if (budget > 0) {
        if (!marks.budget_warned && spend >= warn_percent / 100.0 * budget) {
            marks.budget_warned = true;
            verdict.warn_budget = true;
        }
        if (spend >= budget) {
            verdict.budget_reached = true;
            return verdict;
        }
    }
    if (utilization < 0 || run_seconds <= 2.0)
        return verdict;
    if (utilization >= policy.percent) {
        marks.idle_since = 0;
        return verdict;
    }
    if (marks.idle_since == 0)
        marks.idle_since = now;
    if (!marks.idle_reported && now - marks.idle_since >= policy.seconds) {
        marks.idle_reported = true;
        verdict.report_idle = true;
        verdict.stop_idle = policy.stop;
        verdict.idle_for = now - marks.idle_since;
    }
    return verdict;
}

} // namespace traindeck::worker
