// Scheduling decisions: priorities, slots and preemption over a snapshot of the jobs (no processes, no clock).
#include "scheduler.h"

#include <algorithm>

namespace traindeck::worker {

namespace {

std::vector<const SchedulerJob*> queue_in_order(const SchedulerState& state) {
    std::vector<const SchedulerJob*> queued;
    for (const SchedulerJob& job : state.jobs)
        if (job.state == JobState::queued)
            queued.push_back(&job);
    std::stable_sort(queued.begin(), queued.end(), [](const SchedulerJob* a, const SchedulerJob* b) {
        return a->priority != b->priority ? a->priority > b->priority : a->id < b->id;
    });
    return queued;
}

struct Room {
    int cpus = 0, gpus = 0;
    int64_t memory_mb = 0;

    bool fits(const Resources& need) const { return need.cpus <= cpus && need.memory_mb <= memory_mb && need.gpus <= gpus; }
    void add(const Resources& r) {
        cpus += r.cpus;
        memory_mb += r.memory_mb;
        gpus += r.gpus;
    }
};

} // namespace

SchedulerPlan plan_handover(const SchedulerState& state) {
    SchedulerPlan plan;
    for (const SchedulerJob* job : queue_in_order(state))
        plan.starts.push_back({job->id, {}});
    return plan;
}

SchedulerPlan plan_local(const SchedulerState& state) {
    SchedulerPlan plan;
    Room free{state.cpus, 0, state.memory_mb};
    std::vector<const SchedulerJob*> holding;
    for (const SchedulerJob& job : state.jobs)
        if (is_active(job.state)) {
            holding.push_back(&job);
            free.cpus -= job.resources.cpus;
            free.memory_mb -= job.resources.memory_mb;
        }
    std::vector<bool> gpu_busy = state.gpu_busy;
    for (bool busy : gpu_busy)
        free.gpus += !busy;
    for (const SchedulerJob* job : queue_in_order(state)) {
        const Resources& need = job->resources;
        if (free.fits(need)) {
            SchedulerPlan::Start start{job->id, {}};
            for (int g = 0; g < static_cast<int>(gpu_busy.size()) && static_cast<int>(start.gpus.size()) < need.gpus; ++g)
                if (!gpu_busy[g]) {
                    gpu_busy[g] = true;
                    start.gpus.push_back(g);
                }
            free.cpus -= need.cpus;
            free.memory_mb -= need.memory_mb;
            free.gpus -= need.gpus;
            plan.starts.push_back(std::move(start));
            continue;
        }
        // It does not fit: lower-priority running jobs make room; what they free counts as soon as they are asked,
        // so one plan never preempts more than needed.
        std::vector<const SchedulerJob*> victims;
        for (const SchedulerJob* running : holding)
            if (running->state == JobState::running && running->priority < job->priority)
                victims.push_back(running);
        std::sort(victims.begin(), victims.end(), [](const SchedulerJob* a, const SchedulerJob* b) {
            return a->priority != b->priority ? a->priority < b->priority : a->id > b->id;
        });
        Room room = free;
        for (const SchedulerJob* leaving : holding)
            if (leaving->state == JobState::preempting && leaving->preempted_by == job->id)
                room.add(leaving->resources);
        std::vector<const SchedulerJob*> chosen;
        for (const SchedulerJob* victim : victims) {
            if (room.fits(need))
                break;
            chosen.push_back(victim);
            room.add(victim->resources);
        }
        if (room.fits(need))
            for (const SchedulerJob* victim : chosen)
                plan.preemptions.push_back({victim->id, job->id});
        // Strict priority order: nothing behind a waiting job jumps ahead of it.
        break;
    }
    return plan;
}

} // namespace traindeck::worker
