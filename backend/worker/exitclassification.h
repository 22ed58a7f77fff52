#pragma once
// How a run ended → what becomes of the job: its next state, the reason shown to the user, the exit code kept,
// and whether a restart is spent. A pure function of what the shim recorded (or what the executor saw when no
// record came) and of what the worker had asked the job to do.
#include "jobshim.h"
#include "jobstate.h"

#include <cstdint>
#include <string>

namespace traindeck::worker {

struct ExitContext {
    StopReason stop = StopReason::none; // what the worker asked of the job before it ended
    int restarts = 0, max_restarts = 0;
    int64_t preempted_by = 0;           // the job it made room for (StopReason::preempt)
    double budget = 0;
    std::string currency;
};

struct ExitDecision {
    JobState state = JobState::failed;
    std::string reason;
    int exit_code = -1;  // the job's exit code, 128 + N for signal N, -1 when unknown
    bool retry = false;  // goes back to the queue spending one restart
};

// The shim recorded how the job ended (status.present).
ExitDecision classify_exit(const ExitStatus& status, const ExitContext& context);
// The run ended without a record: `what` says what the executor saw ("the job's supervisor process vanished...").
ExitDecision classify_vanished(const std::string& what, const ExitContext& context);

} // namespace traindeck::worker
