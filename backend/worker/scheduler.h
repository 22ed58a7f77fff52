#pragma once
// The worker's scheduling decisions as a pure function of its state: which queued jobs start now (and on which
// GPUs), and which running jobs are asked to checkpoint and make room. The supervisor carries them out.
//
// Rules: strict priority order (highest first, then oldest), nothing behind a waiting job jumps ahead of it, so
// it cannot starve; a job that does not fit preempts lower-priority running jobs, lowest priority and newest first,
// only as many as it needs and only when that makes it fit, and only jobs whose leaving helps (for a GPU job those
// on the GPUs that free up with the fewest, then for CPUs or memory those holding what is short); jobs already
// checkpointing for it count as free.
// GPUs are counted in units (gpu_units a GPU): a job sharing GPUs (gpu_share N) takes 1/N of each of its GPUs and
// goes where it packs tightest (the fullest GPU that still has room), so whole GPUs stay free for whole-GPU jobs.
#include "jobrequest.h"
#include "jobstate.h"

#include <cstdint>
#include <vector>

namespace traindeck::worker {

struct SchedulerJob {
    int64_t id = 0;
    int priority = 0;
    Resources resources;
    JobState state = JobState::queued;
    int64_t preempted_by = 0; // preempting: the job it makes room for
    std::vector<int> gpus;    // the GPUs it holds (active jobs)
};

struct SchedulerState {
    std::vector<SchedulerJob> jobs; // every job not yet finished: queued ones and those holding resources
    int cpus = 0;                   // the worker's slots
    int64_t memory_mb = 0;
    std::vector<int> gpu_used; // one entry a GPU: units held, 0 (free) to gpu_units (full)
};

struct SchedulerPlan {
    struct Start {
        int64_t job = 0;
        std::vector<int> gpus; // the GPU indices it gets
    };
    struct Preemption {
        int64_t victim = 0, for_job = 0;
    };
    std::vector<Start> starts;            // in this order
    std::vector<Preemption> preemptions;
};

// Local slots: the rules above.
SchedulerPlan plan_local(const SchedulerState& state);
// A cluster that schedules itself (Slurm): every queued job is handed over, highest priority first.
SchedulerPlan plan_handover(const SchedulerState& state);

} // namespace traindeck::worker
