#include "jobrequest.h"

#include <set>

namespace traindeck::worker {

using nlohmann::json;

json JobRequest::to_json() const {
    json out = {{"name", name},
                {"cwd", cwd},
                {"env", env},
                {"resources", {{"gpus", resources.gpus}, {"cpus", resources.cpus}, {"memory_mb", resources.memory_mb},
                               {"time_minutes", resources.time_minutes}}},
                {"priority", priority},
                {"budget", budget},
                {"max_restarts", max_restarts}};
    if (!dataset.empty())
        out["dataset"] = dataset;
    if (!checkpoint_from.empty())
        out["checkpoint_from"] = checkpoint_from;
    if (builtin.is_null()) {
        out["argv"] = argv;
        out["shell"] = shell;
    } else {
        out["builtin"] = builtin;
    }
    return out;
}

namespace {

bool check_keys(const json& object, const std::set<std::string>& known, const std::string& where, std::string& error) {
    for (const auto& [key, value] : object.items()) {
        if (!known.count(key)) {
            std::string list;
            for (const auto& k : known)
                list += (list.empty() ? "" : ", ") + k;
            error = where + "unknown field \"" + key + "\" (known: " + list + ")";
            return false;
        }
    }
    return true;
}

template <typename T>
bool read(const json& object, const char* key, T& out, std::string& error, const std::string& where = "") {
    if (!object.contains(key))
        return true;
    try {
        out = object.at(key).get<T>();
        return true;
    } catch (const json::exception&) {
        error = where + "\"" + key + "\" has the wrong type (" + object.at(key).dump() + ")";
        return false;
    }
}

} // namespace

bool parse_job_request(const json& body, JobRequest& r, std::string& error) {
    if (!body.is_object()) {
        error = "the request body must be a JSON object";
        return false;
    }
    if (!check_keys(body, {"name", "builtin", "argv", "shell", "cwd", "env", "resources", "priority", "budget",
                           "max_restarts", "dataset", "checkpoint_from"},
                    "", error))
        return false;
    if (!read(body, "name", r.name, error) || !read(body, "argv", r.argv, error) || !read(body, "shell", r.shell, error) ||
        !read(body, "cwd", r.cwd, error) || !read(body, "env", r.env, error) ||
        !read(body, "priority", r.priority, error) || !read(body, "budget", r.budget, error) ||
        !read(body, "max_restarts", r.max_restarts, error) || !read(body, "dataset", r.dataset, error) ||
        !read(body, "checkpoint_from", r.checkpoint_from, error))
        return false;
    for (const auto& [key, value] : {std::pair<const char*, const std::string*>{"dataset", &r.dataset}, {"checkpoint_from", &r.checkpoint_from}}) {
        if (!value->empty() && (value->size() != 64 || value->find_first_not_of("0123456789abcdef") != std::string::npos)) {
            error = "\"" + std::string(key) + "\" must be a version in the worker's store: 64 lower-case hex digits";
            return false;
        }
    }
    if (body.contains("builtin"))
        r.builtin = body["builtin"];
    if (body.contains("resources")) {
        const json& res = body["resources"];
        if (!res.is_object()) {
            error = "\"resources\" must be an object like {\"gpus\":1,\"cpus\":2,\"memory_mb\":4096}";
            return false;
        }
        if (!check_keys(res, {"gpus", "cpus", "memory_mb", "time_minutes"}, "resources: ", error) ||
            !read(res, "time_minutes", r.resources.time_minutes, error, "resources: ") ||
            !read(res, "gpus", r.resources.gpus, error, "resources: ") ||
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
    for (const auto& [key, value] : r.env) {
        if (key.empty() || key.find('=') != std::string::npos) {
            error = "env: \"" + key + "\" is not a valid variable name";
            return false;
        }
    }
    if (r.name.empty())
        r.name = r.builtin.is_null() ? r.argv.front() : r.builtin.value("name", std::string("built-in job"));
    return true;
}

} // namespace traindeck::worker
