// Exit classification: the asked-for stop comes first (a cancelled job that exits 143 was cancelled, not failed),
// then success, then a retry while restarts are left.
#include "exitclassification.h"

namespace traindeck::worker {

namespace {

std::string retry_text(const ExitContext& context) {
    return "retry " + std::to_string(context.restarts + 1) + " of " + std::to_string(context.max_restarts);
}

} // namespace

ExitDecision classify_exit(const ExitStatus& status, const ExitContext& context) {
    ExitDecision decision;
    decision.exit_code = status.signal ? 128 + status.signal : status.exit_code;
    const std::string how = status.signal ? "killed by signal " + std::to_string(status.signal)
                                          : "exit code " + std::to_string(status.exit_code);
    if (!status.exec_error.empty()) {
        decision = {JobState::failed, status.exec_error, decision.exit_code, false};
    } else if (context.stop == StopReason::cancel) {
        decision.state = JobState::cancelled;
        decision.reason = "cancelled by the user (" + how + ")";
    } else if (context.stop == StopReason::preempt) {
        decision.state = JobState::queued;
        decision.reason = "preempted by job " + std::to_string(context.preempted_by) + " (" + how +
                          "); resumes from its checkpoint";
    } else if (context.stop == StopReason::budget) {
        decision.state = JobState::stopped;
        decision.reason = "budget of " + std::to_string(context.budget) + " " + context.currency + " reached (" + how +
                          "); checkpoint kept";
    } else if (context.stop == StopReason::idle) {
        decision.state = JobState::stopped;
        decision.reason = "stopped by the idle policy (" + how + "); checkpoint kept";
    } else if (context.stop == StopReason::pause && (status.signal || status.exit_code != 0)) {
        // A trial that finished before the pause reached it succeeded (below); one that stopped waits at its rung.
        decision.state = JobState::stopped;
        decision.reason = "paused by its sweep (" + how + "); checkpoint kept, resumes when its sweep goes on with it";
    } else if (!status.signal && status.exit_code == 0) {
        decision.state = JobState::succeeded;
        decision.reason = "finished";
    } else if (context.restarts < context.max_restarts) {
        decision.state = JobState::queued;
        decision.reason = how + "; " + retry_text(context) + " from the last checkpoint";
        decision.retry = true;
    } else {
        decision.state = JobState::failed;
        decision.reason = how + (context.max_restarts ? "; no restarts left" : "");
    }
    return decision;
}

ExitDecision classify_vanished(const std::string& what, const ExitContext& context) {
    ExitDecision decision;
    decision.exit_code = -1;
    if (context.stop == StopReason::cancel) {
        decision.state = JobState::cancelled;
        decision.reason = "cancelled by the user (" + what + ")";
    } else if (context.stop == StopReason::preempt) {
        decision.state = JobState::queued;
        decision.reason = "preempted by job " + std::to_string(context.preempted_by) + " (" + what +
                          "); resumes from its checkpoint";
    } else if (context.stop != StopReason::none) {
        decision.state = JobState::stopped;
        decision.reason = "stopped (" + std::string(to_string(context.stop)) + ", " + what + "); checkpoint kept";
    } else if (context.restarts < context.max_restarts) {
        decision.state = JobState::queued;
        decision.reason = what + "; retrying from the last checkpoint";
        decision.retry = true;
    } else {
        decision.state = JobState::failed;
        decision.reason = what;
    }
    return decision;
}

} // namespace traindeck::worker
