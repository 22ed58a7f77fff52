// The scheduler as a function of state: priorities, slots, GPUs and preemption decisions.
#include "scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <vector>

using namespace traindeck;
using namespace traindeck::worker;

namespace {

SchedulerJob job(int64_t id, int priority, int cpus, JobState state = JobState::queued, int gpus = 0,
                 int64_t preempted_by = 0) {
    SchedulerJob j;
    j.id = id;
    j.priority = priority;
    j.resources.cpus = cpus;
    j.resources.gpus = gpus;
    j.resources.memory_mb = 0;
    j.state = state;
    j.preempted_by = preempted_by;
    return j;
}

SchedulerState machine(int cpus, std::vector<SchedulerJob> jobs, const std::vector<bool>& gpu_busy = {}) {
    std::vector<int> used;
    used.reserve(gpu_busy.size());
    for (bool busy : gpu_busy)
        used.push_back(busy ? gpu_units : 0);
    return {std::move(jobs), cpus, 1 << 20, std::move(used)};
}

// A job on `gpus` GPUs sharing each with share - 1 others; `held` the GPUs it holds when active.
SchedulerJob gpu_job(int64_t id, int priority, int gpus, int share, JobState state = JobState::queued,
                     std::vector<int> held = {}) {
    SchedulerJob j = job(id, priority, 1, state, gpus);
    j.resources.gpu_share = share;
    j.gpus = std::move(held);
    return j;
}

// The machine's GPU units given what its active jobs hold.
SchedulerState gpu_machine(int gpu_count, std::vector<SchedulerJob> jobs) {
    SchedulerState state{std::move(jobs), 64, 1 << 20, std::vector<int>(gpu_count, 0)};
    for (const SchedulerJob& j : state.jobs)
        for (int g : j.gpus)
            state.gpu_used[g] += j.resources.units_per_gpu();
    return state;
}

std::vector<std::vector<int>> placed(const SchedulerPlan& plan) {
    std::vector<std::vector<int>> gpus;
    for (const auto& start : plan.starts)
        gpus.push_back(start.gpus);
    return gpus;
}

// The jobs a plan preempts, by id.
std::vector<int64_t> victims_of(const SchedulerPlan& plan) {
    std::vector<int64_t> victims;
    for (const auto& preemption : plan.preemptions)
        victims.push_back(preemption.victim);
    std::sort(victims.begin(), victims.end());
    return victims;
}

std::vector<int64_t> started(const SchedulerPlan& plan) {
    std::vector<int64_t> ids;
    for (const auto& start : plan.starts)
        ids.push_back(start.job);
    return ids;
}

} // namespace

TEST(Scheduler, StartsWhatFitsHighestPriorityFirst) {
    const SchedulerPlan plan = plan_local(machine(4, {job(1, 0, 2), job(2, 5, 2), job(3, 1, 2)}));
    EXPECT_EQ(started(plan), (std::vector<int64_t>{2, 3})); // job 1 (priority 0) waits for a slot
    EXPECT_TRUE(plan.preemptions.empty());
}

TEST(Scheduler, EqualPrioritiesStartOldestFirst) {
    const SchedulerPlan plan = plan_local(machine(2, {job(7, 1, 1), job(3, 1, 1), job(5, 1, 1)}));
    EXPECT_EQ(started(plan), (std::vector<int64_t>{3, 5}));
}

TEST(Scheduler, RunningJobsHoldTheirSlotsAndGpusGoLowestFreeFirst) {
    const SchedulerPlan plan =
        plan_local(machine(4, {job(1, 0, 3, JobState::running), job(2, 0, 1, JobState::queued, 2), job(3, 0, 1)},
                           {true, false, false, false}));
    ASSERT_EQ(plan.starts.size(), 1u); // job 2 takes the last CPU; job 3 waits
    EXPECT_EQ(plan.starts[0].job, 2);
    EXPECT_EQ(plan.starts[0].gpus, (std::vector<int>{1, 2}));
}

TEST(Scheduler, AHigherPriorityJobPreemptsTheLowestPriorityNewestRunningJobOnly) {
    const SchedulerPlan plan = plan_local(machine(
        6, {job(1, 1, 2, JobState::running), job(2, 0, 2, JobState::running), job(3, 0, 2, JobState::running),
            job(4, 5, 2)}));
    EXPECT_TRUE(plan.starts.empty()); // it starts once the victim has checkpointed
    ASSERT_EQ(plan.preemptions.size(), 1u);
    EXPECT_EQ(plan.preemptions[0].victim, 3);
    EXPECT_EQ(plan.preemptions[0].for_job, 4);
}

TEST(Scheduler, PreemptsAsManyAsItNeedsInOrder) {
    const SchedulerPlan plan = plan_local(machine(
        6, {job(1, 1, 2, JobState::running), job(2, 0, 2, JobState::running), job(3, 0, 2, JobState::running),
            job(4, 5, 4)}));
    ASSERT_EQ(plan.preemptions.size(), 2u);
    EXPECT_EQ(plan.preemptions[0].victim, 3);
    EXPECT_EQ(plan.preemptions[1].victim, 2); // priority 0 before priority 1
}

TEST(Scheduler, NoPreemptionWhenEvenAllLowerJobsWouldNotMakeRoom) {
    const SchedulerPlan plan =
        plan_local(machine(4, {job(1, 9, 2, JobState::running), job(2, 0, 2, JobState::running), job(3, 5, 4)}));
    EXPECT_TRUE(plan.preemptions.empty()); // job 1 outranks job 3 and keeps its slots
    EXPECT_TRUE(plan.starts.empty());
}

TEST(Scheduler, NeverPreemptsEqualOrHigherPriority) {
    const SchedulerPlan plan = plan_local(machine(2, {job(1, 5, 2, JobState::running), job(2, 5, 2)}));
    EXPECT_TRUE(plan.preemptions.empty());
}

TEST(Scheduler, JobsAlreadyCheckpointingForItCountAsFree) {
    const SchedulerPlan plan = plan_local(machine(
        4, {job(1, 0, 2, JobState::preempting, 0, 3), job(2, 0, 2, JobState::running), job(3, 5, 2)}));
    EXPECT_TRUE(plan.preemptions.empty()); // job 1 is leaving for it already: no second victim
    EXPECT_TRUE(plan.starts.empty());
}

TEST(Scheduler, NothingJumpsAheadOfAWaitingJob) {
    const SchedulerPlan plan =
        plan_local(machine(4, {job(1, 9, 3, JobState::running), job(2, 5, 2), job(3, 1, 1)}));
    EXPECT_TRUE(plan.starts.empty()); // job 3 would fit, but job 2 is first in line
    EXPECT_TRUE(plan.preemptions.empty());
}

TEST(Scheduler, AClusterGetsEveryQueuedJobHighestPriorityFirst) {
    const SchedulerPlan plan =
        plan_handover(machine(1, {job(1, 0, 64), job(2, 3, 64), job(3, 0, 64, JobState::running), job(4, 3, 1)}));
    EXPECT_EQ(started(plan), (std::vector<int64_t>{2, 4, 1}));
    EXPECT_TRUE(plan.preemptions.empty());
}

TEST(Scheduler, SmallJobsShareAGpuAndFillOneBeforeTheNext) {
    // Two GPUs, five jobs asking for half a GPU each: two on GPU 0, two on GPU 1, the fifth waits.
    const SchedulerPlan plan = plan_local(gpu_machine(
        2, {gpu_job(1, 0, 1, 2), gpu_job(2, 0, 1, 2), gpu_job(3, 0, 1, 2), gpu_job(4, 0, 1, 2), gpu_job(5, 0, 1, 2)}));
    EXPECT_EQ(started(plan), (std::vector<int64_t>{1, 2, 3, 4}));
    EXPECT_EQ(placed(plan), (std::vector<std::vector<int>>{{0}, {0}, {1}, {1}}));
}

TEST(Scheduler, ASharedJobPacksOntoThePartlyUsedGpuSoAWholeOneStaysFree) {
    // GPU 1 is half taken: the next half-GPU job joins it, and the whole-GPU job behind it gets GPU 0.
    const SchedulerPlan plan = plan_local(
        gpu_machine(2, {gpu_job(1, 0, 1, 2, JobState::running, {1}), gpu_job(2, 0, 1, 2), gpu_job(3, 0, 1, 1)}));
    EXPECT_EQ(started(plan), (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(placed(plan), (std::vector<std::vector<int>>{{1}, {0}}));
}

TEST(Scheduler, DifferentSharesMixOnOneGpuUpToAWholeOne) {
    // A quarter and a quarter and a half fill GPU 0; the next quarter waits (no second GPU).
    const SchedulerPlan plan = plan_local(
        gpu_machine(1, {gpu_job(1, 0, 1, 4), gpu_job(2, 0, 1, 2), gpu_job(3, 0, 1, 4), gpu_job(4, 0, 1, 4)}));
    EXPECT_EQ(started(plan), (std::vector<int64_t>{1, 2, 3}));
    EXPECT_EQ(placed(plan), (std::vector<std::vector<int>>{{0}, {0}, {0}}));
}

TEST(Scheduler, AWholeGpuJobWaitsForEveryJobSharingTheGpu) {
    // One GPU held by two half-GPU jobs: a whole-GPU job of higher priority preempts both of them, a half-GPU job
    // of higher priority only the newest.
    const auto sharing = [] {
        return std::vector<SchedulerJob>{gpu_job(1, 0, 1, 2, JobState::running, {0}),
                                         gpu_job(2, 0, 1, 2, JobState::running, {0})};
    };
    std::vector<SchedulerJob> whole = sharing();
    whole.push_back(gpu_job(3, 5, 1, 1));
    const SchedulerPlan both = plan_local(gpu_machine(1, whole));
    EXPECT_TRUE(both.starts.empty());
    ASSERT_EQ(both.preemptions.size(), 2u);
    EXPECT_EQ(both.preemptions[0].victim, 2);
    EXPECT_EQ(both.preemptions[1].victim, 1);

    std::vector<SchedulerJob> half = sharing();
    half.push_back(gpu_job(3, 5, 1, 2));
    const SchedulerPlan one = plan_local(gpu_machine(1, half));
    ASSERT_EQ(one.preemptions.size(), 1u);
    EXPECT_EQ(one.preemptions[0].victim, 2);
}

TEST(Scheduler, AGpuJobPreemptsOnlyJobsOnTheGpuThatFreesUpWithTheFewest) {
    // GPU 0: half-GPU jobs 1 and 3; GPU 1: half-GPU jobs 2 and 4. A whole-GPU job of higher priority stops the two
    // on one GPU (the newest first: 4, then 2 on GPU 1), never job 3 on the other GPU.
    const SchedulerPlan plan = plan_local(
        gpu_machine(2, {gpu_job(1, 0, 1, 2, JobState::running, {0}), gpu_job(2, 0, 1, 2, JobState::running, {1}),
                        gpu_job(3, 0, 1, 2, JobState::running, {0}), gpu_job(4, 0, 1, 2, JobState::running, {1}),
                        gpu_job(5, 5, 1, 1)}));
    EXPECT_EQ(victims_of(plan), (std::vector<int64_t>{2, 4}));
}

TEST(Scheduler, AGpuJobFindsTheGpuWhoseVictimsMakeRoomEvenBehindOneThatCannot) {
    // GPU 0 holds a high-priority half job (9) and a low one (3): stopping 3 is not enough there. GPU 1's two low
    // jobs (1, 2) are: they go, and job 3 stays.
    const SchedulerPlan plan = plan_local(
        gpu_machine(2, {gpu_job(1, 0, 1, 2, JobState::running, {1}), gpu_job(2, 0, 1, 2, JobState::running, {1}),
                        gpu_job(3, 0, 1, 2, JobState::running, {0}), gpu_job(9, 9, 1, 2, JobState::running, {0}),
                        gpu_job(5, 5, 1, 1)}));
    EXPECT_EQ(victims_of(plan), (std::vector<int64_t>{1, 2}));
}

TEST(Scheduler, AGpuJobStopsNoCpuOnlyJobWhenCpusAreNotShort) {
    // A CPU-only job of low priority (newest, so first in line) holds no GPU and CPUs are plentiful: only the
    // GPU's holder goes.
    std::vector<SchedulerJob> jobs{gpu_job(1, 0, 1, 1, JobState::running, {0}), job(2, 0, 1, JobState::running),
                                   gpu_job(3, 5, 1, 1)};
    const SchedulerPlan plan = plan_local(gpu_machine(1, jobs));
    ASSERT_EQ(plan.preemptions.size(), 1u);
    EXPECT_EQ(plan.preemptions[0].victim, 1);
}
