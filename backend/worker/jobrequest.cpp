#include "jobrequest.h"

#include "manifest.h"

#include <limits>
#include <set>
#include <type_traits>
#include <utility>
#include <vector>

namespace traindeck::worker {

using nlohmann::json;

json JobRequest::to_json() const {
    json out = {{"name", name},
                {"cwd", cwd},
                {"env", env},
                {"resources",
                 {{"gpus", resources.gpus},
                  {"gpu_share", resources.gpu_share},
                  {"cpus", resources.cpus},
                  {"memory_mb", resources.memory_mb},
                  {"time_minutes", resources.time_minutes}}},
                {"priority", priority},
                {"budget", budget},
                {"max_restarts", max_restarts}};
    if (!dataset.empty())
        out["dataset"] = dataset;
    if (!checkpoint_from.empty())
        out["checkpoint_from"] = checkpoint_from;
    if (!code.empty())
        out["code"] = code, out["code_cwd"] = code_cwd;
    if (!capture)
        out["capture"] = false;
    if (builtin.is_null()) {
        out["argv"] = argv;
        out["shell"] = shell;
    } else {
        out["builtin"] = builtin;
    }
    return out;
}

namespace {

// The error for a field the request does not have, with the ones it has.
std::string unknown_field(const std::string& where, const std::string& key, const std::set<std::string>& known) {
    std::string list;
    for (const auto& k : known)
        list += (list.empty() ? "" : ", ") + k;
    return where + "unknown field \"" + key + "\" (known: " + list + ")";
}

bool check_keys(const json& object, const std::set<std::string>& known, const std::string& where, std::string& error) {
    for (const auto& [key, value] : object.items()) {
        if (!known.count(key)) {
            error = unknown_field(where, key, known);
            return false;
        }
    }
    return true;
}

// Whether a JSON number fits the integer it is read into. nlohmann converts with a plain cast: undefined behaviour
// for 1e10 into an int, and 4294967297 wraps to 1 (one GPU asked for as four billion).
template <typename T>
bool fits(const json& value) {
    if (value.is_number_unsigned())
        return value.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max());
    if (value.is_number_integer())
        return value.get<int64_t>() >= std::numeric_limits<T>::min() && value.get<int64_t>() <= std::numeric_limits<T>::max();
    const double number = value.get<double>(); // T is signed: [min, -min) is its range, exactly representable
    return number >= static_cast<double>(std::numeric_limits<T>::min()) && number < -static_cast<double>(std::numeric_limits<T>::min());
}

template <typename T>
bool read(const json& object, const char* key, T& out, std::string& error, const std::string& where = "") {
    if (!object.contains(key))
        return true;
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        if (object.at(key).is_number() && !fits<T>(object.at(key))) {
            error = where + "\"" + key + "\" is out of range (" + object.at(key).dump() + ")";
            return false;
        }
    }
    try {
        out = object.at(key).get<T>();
        return true;
    } catch (const json::exception&) {
        error = where + "\"" + key + "\" has the wrong type (" + object.at(key).dump() + ")";
        return false;
    }
}

// Copying or printing a JSON value recurses once per level: a 400 KB body of nested brackets (200 000 levels, well
// inside max_body_bytes) overflowed the HTTP thread's stack and killed the worker. Parsing is iterative, so the
// depth is measured here, iteratively, before anything copies or prints the request; real requests nest a few levels.
constexpr int kMaxDepth = 64;

bool nests_deeper_than(const json& root, int limit) {
    std::vector<std::pair<const json*, int>> pending{{&root, 0}};
    while (!pending.empty()) {
        const auto [value, depth] = pending.back();
        pending.pop_back();
        if (depth > limit)
            return true;
        if (value->is_structured())
            for (const json& child : *value)
                pending.push_back({&child, depth + 1});
    }
    return false;
}

} // namespace

bool parse_job_request(const json& body, JobRequest& r, std::string& error) {
    if (!body.is_object()) {
        error = "the request body must be a JSON object";
        return false;
    }
    if (nests_deeper_than(body, kMaxDepth)) {
        error = "the request nests deeper than " + std::to_string(kMaxDepth) + " levels";
        return false;
    }
    if (!check_keys(body,
                    {"name", "builtin", "argv", "shell", "cwd", "env", "resources", "priority", "budget",
                     "max_restarts", "dataset", "checkpoint_from", "code", "code_cwd", "capture"},
                    "", error))
        return false;
    if (!read(body, "name", r.name, error) || !read(body, "argv", r.argv, error) ||
        !read(body, "shell", r.shell, error) || !read(body, "cwd", r.cwd, error) || !read(body, "env", r.env, error) ||
        !read(body, "priority", r.priority, error) || !read(body, "budget", r.budget, error) ||
        !read(body, "max_restarts", r.max_restarts, error) || !read(body, "dataset", r.dataset, error) ||
        !read(body, "checkpoint_from", r.checkpoint_from, error) || !read(body, "code", r.code, error) ||
        !read(body, "code_cwd", r.code_cwd, error) || !read(body, "capture", r.capture, error))
        return false;
    for (const auto& [key, value] : {std::pair<const char*, const std::string*>{"dataset", &r.dataset},
                                     {"checkpoint_from", &r.checkpoint_from},
                                     {"code", &r.code}}) {
        if (!value->empty() && (value->size() != 64 || value->find_first_not_of("0123456789abcdef") != std::string::npos)) {
            error = "\"" + std::string(key) + "\" must be a version in the worker's store: 64 lower-case hex digits";
            return false;
        }
    }
    if (!r.code_cwd.empty() && (r.code.empty() || !dataset::is_safe_relative_path(r.code_cwd))) {
        error = "\"code_cwd\" is a folder inside the \"code\" snapshot: a relative path without \"..\"";
        return false;
    }
    if (!r.code.empty() && !r.cwd.empty()) {
        error = "give \"cwd\" or \"code\", not both: a job with a code snapshot runs in its copy of it";
        return false;
    }
    if (body.contains("builtin"))
        r.builtin = body["builtin"];
    if (body.contains("resources")) {
        const json& res = body["resources"];
        if (!res.is_object()) {
            error = "\"resources\" must be an object like {\"gpus\":1,\"cpus\":2,\"memory_mb\":4096}";
            return false;
        }
        if (!check_keys(res, {"gpus", "gpu_share", "cpus", "memory_mb", "time_minutes"}, "resources: ", error) ||
            !read(res, "time_minutes", r.resources.time_minutes, error, "resources: ") ||
            !read(res, "gpus", r.resources.gpus, error, "resources: ") ||
            !read(res, "gpu_share", r.resources.gpu_share, error, "resources: ") ||
            !read(res, "cpus", r.resources.cpus, error, "resources: ") ||
            !read(res, "memory_mb", r.resources.memory_mb, error, "resources: "))
            return false;
    }
    if (r.builtin.is_null() == r.argv.empty()) {
        error = "give exactly one of \"builtin\" (a traindeck-train spec) and \"argv\" (a command as a list of words)";
        return false;
    }
    if (!r.builtin.is_null() && !r.builtin.is_object()) {
        error = "\"builtin\" must be a traindeck-train job spec object";
        return false;
    }
    if (r.shell && r.argv.size() != 1) {
        error = "with \"shell\": true, \"argv\" must hold exactly one command line for /bin/sh -c";
        return false;
    }
    if (r.resources.gpus < 0 || r.resources.cpus < 0 || r.resources.memory_mb < 0 || r.resources.time_minutes < 0 ||
        r.max_restarts < 0 ||
        r.budget < 0) {
        error = "resources, budget and max_restarts must not be negative";
        return false;
    }
    if (r.resources.gpu_share < 1 || r.resources.gpu_share > max_gpu_share) {
        error = "resources: \"gpu_share\" must be a whole number from 1 (a whole GPU) to " +
                std::to_string(max_gpu_share) + " (jobs sharing each GPU)";
        return false;
    }
    for (const auto& [key, value] : r.env) {
        if (key.empty() || key.find('=') != std::string::npos) {
            error = "env: \"" + key + "\" is not a valid variable name";
            return false;
        }
    }
    // value<std::string>() would throw on a "name" that is not a string; the request is refused instead.
    if (!r.builtin.is_null() && r.builtin.contains("name") && !r.builtin["name"].is_string()) {
        error = "\"builtin\": \"name\" must be a string";
        return false;
    }
    if (r.name.empty())
        r.name = r.builtin.is_null() ? r.argv.front() : r.builtin.value("name", std::string("built-in job"));
    return true;
}

} // namespace traindeck::worker
