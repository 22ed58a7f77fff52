// The names of job states and stop reasons: one table each, read both ways.
#include "jobstate.h"

#include "nametable.h"

#include <array>
#include <string>
#include <utility>

namespace traindeck {

namespace {

constexpr auto kStates = name_table<JobState>({
    {JobState::queued, "queued"},
    {JobState::running, "running"},
    {JobState::preempting, "preempting"},
    {JobState::stopping, "stopping"},
    {JobState::succeeded, "succeeded"},
    {JobState::failed, "failed"},
    {JobState::cancelled, "cancelled"},
    {JobState::stopped, "stopped"},
});

constexpr auto kStopReasons = name_table<StopReason>({
    {StopReason::none, ""},
    {StopReason::preempt, "preempt"},
    {StopReason::cancel, "cancel"},
    {StopReason::budget, "budget"},
    {StopReason::idle, "idle"},
    {StopReason::pause, "pause"},
});

} // namespace

std::string_view to_string(JobState state) { return kStates.name(state).value_or("unknown"); }

std::optional<JobState> job_state_from_string(std::string_view text) { return kStates.value(text); }

std::string_view to_string(StopReason reason) { return kStopReasons.name(reason).value_or("unknown"); }

std::optional<StopReason> stop_reason_from_string(std::string_view text) { return kStopReasons.value(text); }

bool is_finished(std::string_view state) {
    const std::optional<JobState> known = job_state_from_string(state);
    return known && is_finished(*known);
}

std::string_view finished_states_sql() {
    static const std::string text = [] {
        std::string list;
        for (const auto& [value, name] : kStates.entries)
            if (is_finished(value))
                list += (list.empty() ? "'" : ",'") + std::string(name) + "'";
        return list;
    }();
    return text;
}

bool is_finished_in_catalog(std::string_view state) { return state == "lost" || is_finished(state); }

std::string_view catalog_finished_states_sql() {
    static const std::string text = std::string(finished_states_sql()) + ",'lost'";
    return text;
}

StopReason recorded_stop_reason(JobState state, std::string_view reason) {
    if (state == JobState::preempting)
        return StopReason::preempt;
    if (state != JobState::stopping)
        return StopReason::none;
    return reason.starts_with("cancel")   ? StopReason::cancel
           : reason.starts_with("budget") ? StopReason::budget
           : reason.starts_with("paused") ? StopReason::pause
                                          : StopReason::idle;
}

} // namespace traindeck
