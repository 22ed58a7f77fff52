#pragma once
// What the chaos test kills, and when, drawn from one seed. The moments are steps of the job, not times: a kill
// fires once the job has reported its trigger step, and the job holds after its gate step (traindeck-train's
// TRAINDECK_HOLD_AT) until that kill is done, so a fast machine cannot run the job past the moment and a slow one
// only waits longer. Kill i lands in the i-th of equal stretches of the job's steps, so the kills reach from the
// first steps to the last ones, the epoch end included. The same seed gives the same plan on the same build,
// whatever the machine's speed.
#include <cstdint>
#include <string>
#include <vector>

namespace traindeck::test {

enum class ChaosTarget { trainer, worker, console };
const char* target_name(ChaosTarget target);

struct ChaosKill {
    ChaosTarget target = ChaosTarget::trainer;
    long trigger_step = 0; // kill once a metric record of this step (or a later one) has been seen
    long gate_step = 0;    // the job holds after this step until the kill is done (gate_step >= trigger_step)
    // Trainer kills between checkpoints: trigger and gate lie strictly between the checkpoint at this step and the
    // next one, so the killed run has trained steps that no checkpoint holds, and the retry must resume from
    // exactly this step. -1: a kill that may land anywhere, a checkpoint being written included.
    long resume_step = -1;
    int jitter_us = 0; // how long after the trigger is seen: spreads kills over the worker's 10 ms tick
};

struct ChaosPlan {
    uint64_t seed = 0;
    std::vector<ChaosKill> kills;
    std::string error; // why no plan fits the job ("" when it does)
    int count(ChaosTarget target) const;
    std::string describe() const;
};

// kills: in all, at least min_each of every target. The last gate leaves at least `tail` steps after it, so the job
// is still training when the last restarted part comes back.
ChaosPlan make_chaos_plan(uint64_t seed, long total_steps, long steps_per_epoch, long checkpoint_every, int kills = 20,
                          int min_each = 4, long tail = 10);

} // namespace traindeck::test
