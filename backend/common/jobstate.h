#pragma once
// A job's state and why it is being stopped, as types shared by the worker and the console. This is the one place
// that names them: the database and the JSON API carry exactly these strings ("queued", "preempting", ...), and the
// set of finished states is written out here once.
#include <optional>
#include <string_view>

namespace traindeck {

enum class JobState {
    queued, // waiting for resources (or handed to a cluster that has not started it)
    running,
    preempting, // asked to checkpoint and leave for a higher-priority job; goes back to the queue
    stopping,   // asked to checkpoint and stop (cancel, budget, idle policy)
    succeeded,
    failed,
    cancelled,
    stopped, // by the budget or the idle policy, checkpoint kept; can be resumed
};

// What a stopping job was asked to do; decides what its exit means.
// pause: a sweep's trial at an ASHA rung (checkpointed; resumed when promoted).
enum class StopReason { none, preempt, cancel, budget, idle, pause };

std::string_view to_string(JobState state);
std::optional<JobState> job_state_from_string(std::string_view text);
std::string_view to_string(StopReason reason);
std::optional<StopReason> stop_reason_from_string(std::string_view text);

// Succeeded, failed, cancelled or stopped: nothing more happens to the job unless a user resumes it.
constexpr bool is_finished(JobState state) {
    return state == JobState::succeeded || state == JobState::failed || state == JobState::cancelled ||
           state == JobState::stopped;
}
// The same for a state as the database stores it (an unknown text is not finished).
bool is_finished(std::string_view state);
// Holds resources: started and not yet ended (running, preempting, stopping).
constexpr bool is_active(JobState state) { return state != JobState::queued && !is_finished(state); }

// "'succeeded','failed','cancelled','stopped'", for SQL's IN (...).
std::string_view finished_states_sql();

// The console's catalog knows one more end than the worker: "lost", a job whose worker stopped answering or forgot
// it. Nothing more comes of a lost job where it ran (a job allowed to move continues elsewhere as a new copy), so
// the console no longer watches it. "lost" is no JobState: no worker ever writes it.
bool is_finished_in_catalog(std::string_view state);
// finished_states_sql() and 'lost', for the catalog's IN (...).
std::string_view catalog_finished_states_sql();

// The stop a job was under when a previous worker left it: its state and reason remember it.
StopReason recorded_stop_reason(JobState state, std::string_view reason);

} // namespace traindeck
