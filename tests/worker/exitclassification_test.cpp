// Exit classification: how a run ended and what the worker had asked → the job's next state and reason.
#include "exitclassification.h"

#include <gtest/gtest.h>

using namespace traindeck;
using namespace traindeck::worker;

namespace {

ExitStatus exited(int code) {
    ExitStatus status;
    status.present = true;
    status.exit_code = code;
    return status;
}

ExitStatus killed(int signal) {
    ExitStatus status;
    status.present = true;
    status.signal = signal;
    return status;
}

ExitContext asked(StopReason stop, int restarts = 0, int max_restarts = 0) {
    ExitContext context;
    context.stop = stop;
    context.restarts = restarts;
    context.max_restarts = max_restarts;
    context.preempted_by = 7;
    context.budget = 2.5;
    context.currency = "EUR";
    return context;
}

} // namespace

TEST(ExitClassification, ACleanExitSucceeds) {
    const ExitDecision d = classify_exit(exited(0), asked(StopReason::none, 0, 3));
    EXPECT_EQ(d.state, JobState::succeeded);
    EXPECT_EQ(d.reason, "finished");
    EXPECT_EQ(d.exit_code, 0);
    EXPECT_FALSE(d.retry);
}

TEST(ExitClassification, TheAskedForStopDecidesWhateverTheExitCode) {
    const ExitDecision cancelled = classify_exit(killed(15), asked(StopReason::cancel, 0, 3));
    EXPECT_EQ(cancelled.state, JobState::cancelled);
    EXPECT_EQ(cancelled.reason, "cancelled by the user (killed by signal 15)");
    EXPECT_EQ(cancelled.exit_code, 143);
    EXPECT_FALSE(cancelled.retry);

    const ExitDecision preempted = classify_exit(exited(75), asked(StopReason::preempt, 0, 0));
    EXPECT_EQ(preempted.state, JobState::queued);
    EXPECT_EQ(preempted.reason, "preempted by job 7 (exit code 75); resumes from its checkpoint");
    EXPECT_FALSE(preempted.retry); // a preemption spends no restart

    const ExitDecision budget = classify_exit(exited(75), asked(StopReason::budget));
    EXPECT_EQ(budget.state, JobState::stopped);
    EXPECT_EQ(budget.reason, "budget of 2.500000 EUR reached (exit code 75); checkpoint kept");

    const ExitDecision idle = classify_exit(exited(0), asked(StopReason::idle));
    EXPECT_EQ(idle.state, JobState::stopped);
    EXPECT_EQ(idle.reason, "stopped by the idle policy (exit code 0); checkpoint kept");
}

TEST(ExitClassification, AFailureRetriesWhileRestartsAreLeft) {
    const ExitDecision first = classify_exit(exited(1), asked(StopReason::none, 0, 2));
    EXPECT_EQ(first.state, JobState::queued);
    EXPECT_TRUE(first.retry);
    EXPECT_EQ(first.reason, "exit code 1; retry 1 of 2 from the last checkpoint");

    const ExitDecision last = classify_exit(killed(9), asked(StopReason::none, 2, 2));
    EXPECT_EQ(last.state, JobState::failed);
    EXPECT_FALSE(last.retry);
    EXPECT_EQ(last.exit_code, 137);
    EXPECT_EQ(last.reason, "killed by signal 9; no restarts left");

    const ExitDecision never = classify_exit(exited(3), asked(StopReason::none, 0, 0));
    EXPECT_EQ(never.state, JobState::failed);
    EXPECT_EQ(never.reason, "exit code 3");
}

TEST(ExitClassification, AProgramThatCannotStartFailsAtOnce) {
    ExitStatus status = exited(127);
    status.exec_error = "cannot run ./train.py: No such file or directory";
    const ExitDecision d = classify_exit(status, asked(StopReason::none, 0, 5));
    EXPECT_EQ(d.state, JobState::failed);
    EXPECT_EQ(d.reason, status.exec_error);
    EXPECT_FALSE(d.retry);
}

TEST(ExitClassification, ARunThatVanishedFollowsTheAskedForStopThenRetries) {
    const std::string what = "the job's supervisor process vanished without recording an exit";
    EXPECT_EQ(classify_vanished(what, asked(StopReason::cancel)).state, JobState::cancelled);
    EXPECT_EQ(classify_vanished(what, asked(StopReason::preempt)).state, JobState::queued);
    const ExitDecision idle = classify_vanished(what, asked(StopReason::idle));
    EXPECT_EQ(idle.state, JobState::stopped);
    EXPECT_EQ(idle.reason, "stopped (idle, " + what + "); checkpoint kept");
    const ExitDecision retry = classify_vanished(what, asked(StopReason::none, 1, 3));
    EXPECT_EQ(retry.state, JobState::queued);
    EXPECT_TRUE(retry.retry);
    EXPECT_EQ(retry.reason, what + "; retrying from the last checkpoint");
    EXPECT_EQ(retry.exit_code, -1);
    const ExitDecision failed = classify_vanished(what, asked(StopReason::none, 3, 3));
    EXPECT_EQ(failed.state, JobState::failed);
    EXPECT_EQ(failed.reason, what);
}

TEST(ExitClassification, APausedTrialWaitsAtItsRungUnlessItHadFinished) {
    const ExitDecision paused = classify_exit(exited(75), asked(StopReason::pause, 0, 3));
    EXPECT_EQ(paused.state, JobState::stopped);
    EXPECT_EQ(paused.reason,
              "paused by its sweep (exit code 75); checkpoint kept, resumes when its sweep goes on with it");
    EXPECT_FALSE(paused.retry);
    // The pause arrived as it ended on its own: it finished, nothing to resume.
    EXPECT_EQ(classify_exit(exited(0), asked(StopReason::pause, 0, 3)).state, JobState::succeeded);
}
