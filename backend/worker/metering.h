#pragma once
// Metering as a pure policy: what a job's run costs (a rate per hour from its resources and the worker's prices),
// and what the budget and the idle policy say once the spend and the utilisation are known. The supervisor
// samples the utilisation and acts on the verdict (a warning event, a stop through the checkpoint path).
#include "jobrequest.h"

namespace traindeck::worker {

struct Prices {
    double base = 0, gpu = 0, cpu = 0; // money units per hour
};

struct IdlePolicy {
    double percent = 5.0;  // utilisation under this is idle
    double seconds = 600.0; // for this long before it is reported
    bool stop = false;      // and then stopped
};

// What the meter keeps between readings (in memory only: a restarted worker starts them again).
struct MeterMarks {
    double last = 0;       // wall time of the last reading
    double idle_since = 0; // 0: not idle
    bool idle_reported = false, budget_warned = false;
};

// A job sharing its GPUs (gpu_share N) pays 1/N of the GPU price for each.
double rate_per_hour(const Prices& prices, const Resources& resources);

// Adds the time since the last reading at `rate` per hour to spend and run_seconds.
void charge(double& spend, double& run_seconds, MeterMarks& marks, double now, double rate);

struct MeterVerdict {
    bool warn_budget = false;    // warn_percent of the budget spent (said once a run)
    bool budget_reached = false; // stop with a checkpoint
    bool report_idle = false;   // under the idle threshold for the policy's time (said once a run)
    bool stop_idle = false;     // and the policy stops idle jobs
    double idle_for = 0;        // seconds idle, when reported
};
// For a running job. utilization: percent of its GPUs (CPU-only jobs: of its CPUs), < 0 when unknown. A job in its
// first 2 s is never idle; a budget of 0 means none. When the budget is reached, the idle policy is not looked at.
MeterVerdict judge(double spend, double run_seconds, double budget, double utilization, double now, MeterMarks& marks,
                   const IdlePolicy& policy, double warn_percent = 80.0);

} // namespace traindeck::worker
