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
    int cpus = 0;
    int64_t memory_mb = 0;
    std::vector<int> gpu_used;

    // The GPUs `need` would get: the fullest ones it still fits on, lowest index first among equals; empty when
    // it does not fit (or asks for none).
    std::vector<int> place(const Resources& need) const {
        std::vector<int> order;
        for (int g = 0; g < static_cast<int>(gpu_used.size()); ++g)
            if (gpu_used[g] + need.units_per_gpu() <= gpu_units)
                order.push_back(g);
        std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return gpu_used[a] > gpu_used[b]; });
        if (static_cast<int>(order.size()) < need.gpus)
            return {};
        order.resize(need.gpus);
        std::sort(order.begin(), order.end());
        return order;
    }
    bool fits(const Resources& need) const {
        return need.cpus <= cpus && need.memory_mb <= memory_mb &&
               (need.gpus == 0 || static_cast<int>(place(need).size()) == need.gpus);
    }
    void take(const Resources& r, const std::vector<int>& gpus) {
        cpus -= r.cpus;
        memory_mb -= r.memory_mb;
        for (int g : gpus)
            if (g >= 0 && g < static_cast<int>(gpu_used.size()))
                gpu_used[g] += r.units_per_gpu();
    }
    void give_back(const SchedulerJob& job) {
        cpus += job.resources.cpus;
        memory_mb += job.resources.memory_mb;
        for (int g : job.gpus)
            if (g >= 0 && g < static_cast<int>(gpu_used.size()))
                gpu_used[g] = std::max(0, gpu_used[g] - job.resources.units_per_gpu());
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
    // gpu_used already counts what the active jobs hold; their CPUs and memory are taken here.
    Room free{state.cpus, state.memory_mb, state.gpu_used};
    std::vector<const SchedulerJob*> holding;
    for (const SchedulerJob& job : state.jobs)
        if (is_active(job.state)) {
            holding.push_back(&job);
            free.take(job.resources, {});
        }
    for (const SchedulerJob* job : queue_in_order(state)) {
        const Resources& need = job->resources;
        if (free.fits(need)) {
            SchedulerPlan::Start start{job->id, free.place(need)};
            free.take(need, start.gpus);
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
                room.give_back(*leaving);
        // Only victims whose leaving helps: first, for a GPU job, those on the GPUs that free up with the fewest
        // (each GPU's own victims, in victim order, until it has the room); then, while CPUs or memory are short,
        // victims holding those. A job on another GPU, or holding nothing short, is never stopped for nothing.
        std::vector<const SchedulerJob*> chosen;
        const auto choose = [&](const SchedulerJob* victim) {
            if (std::find(chosen.begin(), chosen.end(), victim) != chosen.end())
                return;
            chosen.push_back(victim);
            room.give_back(*victim);
        };
        if (need.gpus > 0) {
            // cost: the victims' places in line, summed; between GPUs that free up with as many, the one whose
            // victims come first in line (lowest priority, newest) goes.
            struct Candidate {
                int gpu;
                std::vector<const SchedulerJob*> victims;
                size_t cost = 0;
            };
            std::vector<Candidate> candidates;
            for (int g = 0; g < static_cast<int>(room.gpu_used.size()); ++g) {
                Candidate candidate{g, {}};
                int free_units = gpu_units - room.gpu_used[g];
                for (size_t place = 0; place < victims.size() && free_units < need.units_per_gpu(); ++place) {
                    const SchedulerJob* victim = victims[place];
                    if (std::find(victim->gpus.begin(), victim->gpus.end(), g) != victim->gpus.end()) {
                        candidate.victims.push_back(victim);
                        candidate.cost += place;
                        free_units += victim->resources.units_per_gpu();
                    }
                }
                if (free_units >= need.units_per_gpu())
                    candidates.push_back(std::move(candidate));
            }
            std::stable_sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
                return a.victims.size() != b.victims.size() ? a.victims.size() < b.victims.size() : a.cost < b.cost;
            });
            if (static_cast<int>(candidates.size()) >= need.gpus)
                for (int i = 0; i < need.gpus; ++i)
                    for (const SchedulerJob* victim : candidates[static_cast<size_t>(i)].victims)
                        choose(victim);
        }
        for (const SchedulerJob* victim : victims) {
            if (room.fits(need))
                break;
            const bool cpus_short = need.cpus > room.cpus, memory_short = need.memory_mb > room.memory_mb;
            if ((cpus_short && victim->resources.cpus > 0) || (memory_short && victim->resources.memory_mb > 0))
                choose(victim);
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
