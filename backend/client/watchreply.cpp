// The watch reply read two ways (watchreply.h): simdjson's DOM checks and reads it, a walk over its text finds where
// each job's events array starts and ends; nlohmann reads any other shape. (simdjson's on-demand reader could find
// them too, but as Debian builds it for any x86-64, its inline code is the library's slow fallback.)
#include "watchreply.h"

#include "jsondom.h"

#include <simdjson.h>

#include <algorithm>
#include <string_view>

namespace traindeck::client {

namespace {

bool is_json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// A walk over a reply simdjson has checked, finding where each job's events array starts and ends. It reads no
// value, only steps over them: the text is well formed, so a value ends where its brackets close. Keys with an
// escape are refused (the DOM unescapes them; comparing raw text would not), and every step stays inside the text.
class Walk {
public:
    explicit Walk(std::string_view text) : at_(text.data()), end_(text.data() + text.size()) {}

    bool take(char c) {
        skip_space();
        if (at_ == end_ || *at_ != c)
            return false;
        ++at_;
        return true;
    }
    // A key without escapes, and the ":" after it.
    bool key(std::string_view& out) {
        skip_space();
        if (at_ == end_ || *at_ != '"')
            return false;
        const char* start = ++at_;
        while (at_ != end_ && *at_ != '"') {
            if (*at_ == '\\')
                return false;
            ++at_;
        }
        if (at_ == end_)
            return false;
        out = std::string_view(start, static_cast<size_t>(at_ - start));
        ++at_;
        return take(':');
    }
    // The text of the value here, stepped over.
    std::string_view value() {
        skip_space();
        const char* start = at_;
        if (at_ != end_ && (*at_ == '[' || *at_ == '{')) {
            size_t depth = 0;
            do {
                const char c = *at_;
                if (c == '"') {
                    skip_string();
                    continue;
                }
                if (c == '[' || c == '{')
                    ++depth;
                else if (c == ']' || c == '}')
                    --depth;
                ++at_;
            } while (depth > 0 && at_ != end_);
        } else if (at_ != end_ && *at_ == '"')
            skip_string();
        else
            while (at_ != end_ && *at_ != ',' && *at_ != '}' && *at_ != ']' && !is_json_space(*at_))
                ++at_;
        return std::string_view(start, static_cast<size_t>(at_ - start));
    }

private:
    void skip_space() {
        while (at_ != end_ && is_json_space(*at_))
            ++at_;
    }
    void skip_string() {
        ++at_;
        while (at_ != end_ && *at_ != '"')
            at_ += *at_ == '\\' && at_ + 1 != end_ ? 2 : 1;
        if (at_ != end_)
            ++at_;
    }

    const char* at_;
    const char* end_;
};

// Each job's events array in the reply's text, in the order of the jobs object (the DOM's order); a job without
// "events" has an empty view. false when a key has an escape, or the text is not as the DOM found it.
bool find_events(std::string_view body, std::vector<std::string_view>& events) {
    Walk walk(body);
    std::string_view key;
    if (!walk.take('{') || walk.take('}'))
        return false;
    do {
        if (!walk.key(key))
            return false;
        if (key != "jobs") {
            walk.value();
            continue;
        }
        if (!walk.take('{'))
            return false;
        if (walk.take('}'))
            continue;
        do {
            std::string_view id, field;
            if (!walk.key(id) || !walk.take('{'))
                return false;
            std::string_view found;
            if (!walk.take('}')) {
                do {
                    if (!walk.key(field))
                        return false;
                    const std::string_view value = walk.value();
                    if (field == "events")
                        found = value;
                } while (walk.take(','));
                if (!walk.take('}'))
                    return false;
            }
            events.push_back(found);
        } while (walk.take(','));
        if (!walk.take('}'))
            return false;
    } while (walk.take(','));
    return walk.take('}');
}

// A DOM integer as nlohmann's is_number_integer() and get<int64_t>() take it (uint64 past int64's range refused).
bool dom_int64(simdjson::dom::element element, int64_t& out) {
    return element.type() == simdjson::dom::element_type::INT64 && element.get_int64().get(out) == simdjson::SUCCESS;
}

} // namespace

std::optional<std::vector<WatchedJob>> read_watch_reply(const std::string& body) {
    // The watch loop thread's parser (each backend has its own thread), its buffers kept for the next reply.
    simdjson::dom::parser& parser = thread_parser();
    simdjson::dom::element root;
    simdjson::dom::object reply, parts;
    if (parser.parse(body.data(), body.size()).get(root) != simdjson::SUCCESS ||
        root.get_object().get(reply) != simdjson::SUCCESS)
        return std::nullopt;
    bool seen_jobs = false, seen_missing = false;
    for (const simdjson::dom::key_value_pair field : reply) {
        if (field.key == "jobs") {
            if (seen_jobs || field.value.get_object().get(parts) != simdjson::SUCCESS)
                return std::nullopt;
            seen_jobs = true;
        } else if (field.key == "missing") {
            // Jobs the worker does not know: the watch loop warns about them once, from nlohmann's reading.
            simdjson::dom::array missing;
            if (seen_missing || field.value.get_array().get(missing) != simdjson::SUCCESS || missing.size() > 0)
                return std::nullopt;
            seen_missing = true;
        }
    }
    std::vector<std::string_view> texts;
    if (!seen_jobs || !find_events(body, texts) || texts.size() != parts.size())
        return std::nullopt;
    std::vector<WatchedJob> jobs;
    std::vector<std::string_view> ids;
    size_t index = 0;
    for (const simdjson::dom::key_value_pair part_field : parts) {
        simdjson::dom::object part;
        if (part_field.value.get_object().get(part) != simdjson::SUCCESS)
            return std::nullopt;
        WatchedJob& job = jobs.emplace_back();
        job.id = part_field.key;
        ids.push_back(part_field.key);
        bool seen_events = false, seen_next = false, seen_state = false;
        for (const simdjson::dom::key_value_pair field : part) {
            if (field.key == "events") {
                simdjson::dom::array events;
                if (seen_events || field.value.get_array().get(events) != simdjson::SUCCESS)
                    return std::nullopt;
                seen_events = true;
                job.count = events.size();
            } else if (field.key == "next") {
                int64_t next = 0;
                if (seen_next || !dom_int64(field.value, next))
                    return std::nullopt;
                seen_next = true;
                job.next = next;
            } else if (field.key == "state") {
                std::string_view state;
                if (seen_state || field.value.get_string().get(state) != simdjson::SUCCESS)
                    return std::nullopt;
                seen_state = true;
                job.state = state;
            }
        }
        const std::string_view text = texts[index++];
        if (!seen_next || seen_events != !text.empty() || (seen_events && (text.front() != '[' || text.back() != ']')))
            return std::nullopt;
        if (seen_events)
            job.events = text;
    }
    // A job given twice: nlohmann keeps the last, so the reply goes its way.
    std::sort(ids.begin(), ids.end());
    if (std::adjacent_find(ids.begin(), ids.end()) != ids.end())
        return std::nullopt;
    return jobs;
}

std::vector<WatchedJob> watched_jobs_of(const nlohmann::json& jobs) {
    std::vector<WatchedJob> watched;
    if (!jobs.is_object())
        return watched;
    for (const auto& [id, part] : jobs.items()) {
        WatchedJob& job = watched.emplace_back();
        job.id = id;
        if (!part.is_object())
            continue;
        if (const auto events = part.find("events"); events != part.end() && events->is_array()) {
            job.count = events->size();
            job.events = events->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
            if (const auto next = part.find("next"); next == part.end() || !next->is_number_integer())
                for (const auto& event : *events)
                    if (event.is_object() && event.contains("seq") && event["seq"].is_number_integer())
                        job.next =
                            std::max(job.next.value_or(event["seq"].get<int64_t>()), event["seq"].get<int64_t>());
        }
        if (const auto next = part.find("next"); next != part.end() && next->is_number_integer())
            job.next = next->get<int64_t>();
        if (const auto state = part.find("state"); state != part.end() && state->is_string())
            job.state = state->get<std::string>();
    }
    return watched;
}

} // namespace traindeck::client
