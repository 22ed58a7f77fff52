// Job states and stop reasons: the exact strings the database and the API carry, and the one set of finished states.
#include "jobstate.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

using namespace traindeck;

TEST(JobState, EveryStateHasItsWireNameAndReadsBack) {
    const std::vector<std::pair<JobState, std::string>> states = {
        {JobState::queued, "queued"},       {JobState::running, "running"},   {JobState::preempting, "preempting"},
        {JobState::stopping, "stopping"},   {JobState::succeeded, "succeeded"}, {JobState::failed, "failed"},
        {JobState::cancelled, "cancelled"}, {JobState::stopped, "stopped"}};
    for (const auto& [state, name] : states) {
        EXPECT_EQ(to_string(state), name);
        ASSERT_TRUE(job_state_from_string(name).has_value()) << name;
        EXPECT_EQ(*job_state_from_string(name), state);
    }
    EXPECT_FALSE(job_state_from_string("Running").has_value());
    EXPECT_FALSE(job_state_from_string("").has_value());
}

TEST(JobState, FinishedAreExactlySucceededFailedCancelledStopped) {
    EXPECT_FALSE(is_finished(JobState::queued));
    EXPECT_FALSE(is_finished(JobState::running));
    EXPECT_FALSE(is_finished(JobState::preempting));
    EXPECT_FALSE(is_finished(JobState::stopping));
    EXPECT_TRUE(is_finished(JobState::succeeded));
    EXPECT_TRUE(is_finished(JobState::failed));
    EXPECT_TRUE(is_finished(JobState::cancelled));
    EXPECT_TRUE(is_finished(JobState::stopped));
    EXPECT_TRUE(is_finished(std::string_view("stopped")));
    EXPECT_FALSE(is_finished(std::string_view("running")));
    EXPECT_FALSE(is_finished(std::string_view("no such state")));
    EXPECT_EQ(finished_states_sql(), "'succeeded','failed','cancelled','stopped'");
    EXPECT_FALSE(is_active(JobState::queued));
    EXPECT_TRUE(is_active(JobState::stopping));
    EXPECT_FALSE(is_active(JobState::failed));
}

TEST(JobState, TheCatalogAlsoCountsLostJobsAsFinished) {
    EXPECT_EQ(catalog_finished_states_sql(), "'succeeded','failed','cancelled','stopped','lost'");
    EXPECT_TRUE(is_finished_in_catalog("lost"));
    for (const char* state : {"succeeded", "failed", "cancelled", "stopped"})
        EXPECT_TRUE(is_finished_in_catalog(state)) << state;
    for (const char* state : {"queued", "running", "preempting", "stopping", "", "Lost"})
        EXPECT_FALSE(is_finished_in_catalog(state)) << state;
    // The worker's own set is unchanged: "lost" is the console's word, never a worker's state.
    EXPECT_FALSE(is_finished(std::string_view("lost")));
    EXPECT_FALSE(job_state_from_string("lost").has_value());
}

TEST(JobState, StopReasonsHaveTheirNames) {
    for (StopReason reason : {StopReason::none, StopReason::preempt, StopReason::cancel, StopReason::budget,
                              StopReason::idle, StopReason::pause})
        EXPECT_EQ(stop_reason_from_string(to_string(reason)), reason);
    EXPECT_EQ(to_string(StopReason::budget), "budget");
    EXPECT_EQ(to_string(StopReason::none), "");
    EXPECT_FALSE(stop_reason_from_string("paused").has_value());
}

TEST(JobState, AStopLeftByAPreviousWorkerIsReadFromStateAndReason) {
    EXPECT_EQ(recorded_stop_reason(JobState::preempting, "preempted by job 4; checkpointing"), StopReason::preempt);
    EXPECT_EQ(recorded_stop_reason(JobState::stopping, "cancel requested; checkpointing"), StopReason::cancel);
    EXPECT_EQ(recorded_stop_reason(JobState::stopping, "budget reached; checkpointing"), StopReason::budget);
    EXPECT_EQ(recorded_stop_reason(JobState::stopping, "idle; checkpointing"), StopReason::idle);
    EXPECT_EQ(recorded_stop_reason(JobState::stopping, "paused by its sweep; checkpointing"), StopReason::pause);
    EXPECT_EQ(recorded_stop_reason(JobState::running, "cancel requested; checkpointing"), StopReason::none);
    EXPECT_EQ(recorded_stop_reason(JobState::queued, "waiting for resources"), StopReason::none);
}
