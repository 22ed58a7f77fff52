// The names of job states and stop reasons: one table each, read both ways.
#include "jobstate.h"

#include <array>
#include <string>
#include <utility>

namespace traindeck::worker {

namespace {

constexpr std::array<std::pair<JobState, std::string_view>, 8> kStates = {{
    {JobState::queued, "queued"},
    {JobState::running, "running"},
    {JobState::preempting, "preempting"},
    {JobState::stopping, "stopping"},
    {JobState::succeeded, "succeeded"},
    {JobState::failed, "failed"},
    {JobState::cancelled, "cancelled"},
    {JobState::stopped, "stopped"},
}};

constexpr std::array<std::pair<StopReason, std::string_view>, 5> kStopReasons = {{
    {StopReason::none, ""},
    {StopReason::preempt, "preempt"},
    {StopReason::cancel, "cancel"},
    {StopReason::budget, "budget"},
    {StopReason::idle, "idle"},
}};

} // namespace

std::string_view to_string(JobState state) {
    for (const auto& [value, name] : kStates)
        if (value == state)
            return name;
    return "unknown";
}

std::optional<JobState> job_state_from_string(std::string_view text) {
    for (const auto& [value, name] : kStates)
        if (name == text)
            return value;
    return std::nullopt;
}

std::string_view to_string(StopReason reason) {
    for (const auto& [value, name] : kStopReasons)
        if (value == reason)
            return name;
    return "unknown";
}

std::optional<StopReason> stop_reason_from_string(std::string_view text) {
    for (const auto& [value, name] : kStopReasons)
        if (name == text)
            return value;
    return std::nullopt;
}

bool is_finished(std::string_view state) {
    const std::optional<JobState> known = job_state_from_string(state);
    return known && is_finished(*known);
}

std::string_view finished_states_sql() {
    static const std::string text = [] {
        std::string list;
        for (const auto& [value, name] : kStates)
            if (is_finished(value))
                list += (list.empty() ? "'" : ",'") + std::string(name) + "'";
        return list;
    }();
    return text;
}

StopReason recorded_stop_reason(JobState state, std::string_view reason) {
    if (state == JobState::preempting)
        return StopReason::preempt;
    if (state != JobState::stopping)
        return StopReason::none;
    return reason.starts_with("cancel") ? StopReason::cancel : reason.starts_with("budget") ? StopReason::budget : StopReason::idle;
}

} // namespace traindeck::worker
