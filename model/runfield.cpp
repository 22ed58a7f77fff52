// run_field and its helpers (runfield.h).
#include "runfield.h"

#include <algorithm>
#include <charconv>
#include <set>

namespace traindeck {

namespace {

bool same_series_name(std::string_view a, std::string_view b) {
    if (a.size() != b.size())
        return false;
    for (size_t i = 0; i < a.size(); ++i) {
        const char x = a[i] == '/' ? '_' : a[i], y = b[i] == '/' ? '_' : b[i];
        if (x != y)
            return false;
    }
    return true;
}

FieldValue number(double value) {
    if (std::isnan(value))
        return {};
    return {true, value, number_text(value)};
}

FieldValue text(std::string value) { return {true, NAN, std::move(value)}; }

FieldValue time_field(double seconds) { return seconds > 0 ? number(seconds) : FieldValue{}; }

} // namespace

std::string number_text(double value) {
    char buffer[64];
    const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
    return std::string(buffer, result.ptr);
}

const MetricSummary* find_summary(const RunRecord& run, std::string_view series) {
    if (const auto it = run.summaries.find(std::string(series)); it != run.summaries.end())
        return &it->second;
    for (const auto& [name, summary] : run.summaries)
        if (same_series_name(name, series))
            return &summary;
    return nullptr;
}

FieldValue run_field(const RunRecord& run, std::string_view field, double now) {
    if (field == "id")
        return number(static_cast<double>(run.id));
    if (field == "name")
        return text(run.name);
    if (field == "state")
        return text(run.state);
    if (field == "reason")
        return text(run.reason);
    if (field == "backend")
        return text(run.backend);
    if (field == "note")
        return text(run.note);
    if (field == "progress")
        return number(run.progress);
    if (field == "spend")
        return number(run.spend);
    if (field == "created")
        return time_field(run.created);
    if (field == "started")
        return time_field(run.started);
    if (field == "finished")
        return time_field(run.finished);
    if (field == "duration")
        return run.started > 0 ? number((run.finished > 0 ? run.finished : now) - run.started) : FieldValue{};
    static constexpr std::string_view kConfig = "config.";
    if (field.substr(0, kConfig.size()) == kConfig)
        field.remove_prefix(kConfig.size());
    else if (const size_t dot = field.find('.'); dot != std::string_view::npos) {
        const std::string_view kind = field.substr(0, dot), series = field.substr(dot + 1);
        if (kind == "best" || kind == "last" || kind == "min" || kind == "max" || kind == "count" ||
            kind == "last_step")
            if (const MetricSummary* summary = find_summary(run, series)) {
                if (kind == "best")
                    return number(summary->best);
                if (kind == "last")
                    return number(summary->last);
                if (kind == "min")
                    return number(summary->min);
                if (kind == "max")
                    return number(summary->max);
                if (kind == "count")
                    return number(static_cast<double>(summary->count));
                return number(static_cast<double>(summary->last_step));
            }
    }
    const auto it = run.config.find(std::string(field));
    if (it == run.config.end())
        return {};
    return {true, it->second.number, it->second.text};
}

std::vector<std::string> config_keys_of(const std::vector<const RunRecord*>& runs) {
    std::set<std::string> keys;
    for (const RunRecord* run : runs)
        for (const auto& [key, value] : run->config)
            keys.insert(key);
    return {keys.begin(), keys.end()};
}

std::vector<std::string> summary_fields_of(const std::vector<const RunRecord*>& runs) {
    std::set<std::string> series;
    for (const RunRecord* run : runs)
        for (const auto& [name, summary] : run->summaries)
            series.insert(name);
    std::vector<std::string> fields;
    for (const char* kind : {"best", "last", "min", "max"})
        for (const std::string& name : series)
            fields.push_back(std::string(kind) + "." + name);
    return fields;
}

} // namespace traindeck
