// The provider file and its commands (provider.h).
#include "provider.h"

#include "process.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <set>

namespace traindeck::client {

using nlohmann::json;

namespace {

bool is_word(std::string_view word) {
    if (word.empty() || word.size() > 200)
        return false;
    for (const char c : word)
        if (c <= ' ' || c > '~' || c == '"' || c == '\'' || c == '\\')
            return false;
    return true;
}

// An id a cloud printed: a word that cannot be taken for an option where it becomes an argument.
bool is_id(std::string_view word) { return is_word(word) && word.front() != '-'; }

// Where the placeholder "{name}" (lower-case letters) that starts at text[open] ends (its '}'), with *name set;
// npos when no placeholder starts there (other braces, as in AWS's Tags=[{Key=...}], are plain text).
size_t placeholder_at(const std::string& text, size_t open, std::string* name) {
    size_t at = open + 1;
    while (at < text.size() && text[at] >= 'a' && text[at] <= 'z')
        ++at;
    if (at == open + 1 || at >= text.size() || text[at] != '}')
        return std::string::npos;
    *name = text.substr(open + 1, at - open - 1);
    return at;
}

std::string trim(std::string_view text) {
    const size_t begin = text.find_first_not_of(" \t\r\n");
    if (begin == std::string_view::npos)
        return {};
    const size_t end = text.find_last_not_of(" \t\r\n");
    return std::string(text.substr(begin, end - begin + 1));
}

// A command template: a non-empty array of strings whose placeholders are all among allowed.
std::string read_command(const json& file, const char* key, const std::set<std::string>& allowed, bool required,
                         std::vector<std::string>* words) {
    if (!file.contains(key))
        return required ? std::string("\"") + key + "\" is missing: the command, as an array of words" : "";
    const json& value = file[key];
    if (!value.is_array() || value.empty())
        return std::string("\"") + key + "\" must be a non-empty array of words (argv, no shell)";
    for (const json& word : value) {
        if (!word.is_string())
            return std::string("\"") + key + "\": every word must be a string";
        const std::string text = word.get<std::string>();
        for (size_t open = text.find('{'); open != std::string::npos; open = text.find('{', open + 1)) {
            std::string name;
            if (placeholder_at(text, open, &name) == std::string::npos)
                continue;
            if (!allowed.contains(name)) {
                std::string known;
                for (const std::string& a : allowed) {
                    known += known.empty() ? "{" : ", {";
                    known += a;
                    known += "}";
                }
                std::string message = std::string("\"") + key + "\": {";
                message += name;
                message += "} is not known here (";
                message += known;
                message += ")";
                return message;
            }
        }
        words->push_back(text);
    }
    return {};
}

template <typename T>
std::string read_number(const json& object, const char* key, const std::string& where, T* out, double min, double max) {
    if (!object.contains(key))
        return {};
    const json& value = object[key];
    if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < min ||
        value.get<double>() > max)
        return where + "\"" + key + "\" must be a number from " + json(min).dump() + " to " + json(max).dump();
    if constexpr (std::is_integral_v<T>) {
        if (!value.is_number_integer())
            return where + "\"" + key + "\" must be a whole number";
        *out = value.get<T>();
    } else {
        *out = value.get<T>();
    }
    return {};
}

std::string check_keys(const json& object, const std::set<std::string>& known, const std::string& where) {
    for (const auto& [key, value] : object.items())
        if (!known.contains(key))
            return where + "unknown key \"" + std::string(key).append("\"");
    return {};
}

std::string read_type(const json& entry, size_t index, InstanceType* type) {
    const std::string where = "types[" + std::to_string(index) + "]: ";
    if (!entry.is_object())
        return where + "must be an object like {\"name\": \"g5.xlarge\", \"gpus\": 1, \"price_per_hour\": 1.0}";
    if (std::string e = check_keys(entry, {"name", "gpus", "cpus", "memory_mb", "price_per_hour", "spot"}, where);
        !e.empty())
        return e;
    if (!entry.contains("name") || !entry["name"].is_string() || !is_word(entry["name"].get<std::string>()))
        return where + "\"name\" must be the cloud's name of the type (one word)";
    type->name = entry["name"].get<std::string>();
    if (!entry.contains("price_per_hour"))
        return where + "\"price_per_hour\" is missing (what an hour of it costs: the spend ceiling counts it)";
    for (const std::string& e : {read_number(entry, "gpus", where, &type->gpus, 0, 64),
                                 read_number(entry, "cpus", where, &type->cpus, 0, 4096),
                                 read_number(entry, "memory_mb", where, &type->memory_mb, 0, 1e9),
                                 read_number(entry, "price_per_hour", where, &type->price_per_hour, 0, 1e5)})
        if (!e.empty())
            return e;
    if (entry.contains("spot")) {
        if (!entry["spot"].is_boolean())
            return where + "\"spot\" must be true or false";
        type->spot = entry["spot"].get<bool>();
    }
    return {};
}

} // namespace

std::string parse_provider_config(const std::string& text, ProviderConfig* config) {
    const json file = json::parse(text, nullptr, false);
    if (file.is_discarded() || !file.is_object())
        return "not a JSON object";
    if (std::string e = check_keys(file,
                                   {"label", "create", "list", "address", "delete", "ssh", "types", "max_instances",
                                    "max_spend_per_hour", "idle_minutes", "boot_timeout_minutes",
                                    "command_timeout_seconds", "comment"},
                                   "");
        !e.empty())
        return e;
    ProviderConfig c;
    if (file.contains("label")) {
        const std::string label = file["label"].is_string() ? file["label"].get<std::string>() : std::string();
        if (label.empty() || label.size() > 40 ||
            label.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") != std::string::npos)
            return "\"label\" must be lower-case letters, digits and '-', at most 40 (the tag on every instance "
                   "TrainDeck rents, and part of their names)";
        c.label = file["label"].get<std::string>();
    }
    for (const std::string& e : {read_command(file, "create", {"name", "type", "label", "spot"}, true, &c.create),
                                 read_command(file, "list", {"label"}, true, &c.list),
                                 read_command(file, "address", {"id", "name", "label"}, true, &c.address),
                                 read_command(file, "delete", {"id", "name", "label"}, true, &c.remove)})
        if (!e.empty())
            return e;
    if (file.contains("ssh")) {
        const json& ssh = file["ssh"];
        if (!ssh.is_object())
            return "\"ssh\" must be an object like {\"user\": \"ubuntu\", \"options\": [\"IdentityFile=...\"]}";
        if (std::string e = check_keys(ssh, {"user", "config", "options", "state_dir"}, "ssh: "); !e.empty())
            return e;
        for (const auto& [key, out] : {std::pair<const char*, std::string*>{"user", &c.ssh_user},
                                       {"config", &c.ssh_config},
                                       {"state_dir", &c.state_dir}})
            if (ssh.contains(key)) {
                if (!ssh[key].is_string() || ssh[key].get<std::string>().empty())
                    return std::string("ssh: \"") + key + "\" must be a non-empty string";
                *out = ssh[key].get<std::string>();
            }
        if (!c.ssh_user.empty() && !is_word(c.ssh_user))
            return "ssh: \"user\" must be one word";
        if (ssh.contains("options")) {
            if (!ssh["options"].is_array())
                return "ssh: \"options\" must be an array of NAME=VALUE strings (ssh -o)";
            for (const json& option : ssh["options"]) {
                if (!option.is_string() || option.get<std::string>().find('=') == std::string::npos ||
                    option.get<std::string>().front() == '-')
                    return "ssh: \"options\": each must be a NAME=VALUE string (ssh -o)";
                c.ssh_options.push_back(option.get<std::string>());
            }
        }
    }
    if (!file.contains("types") || !file["types"].is_array() || file["types"].empty())
        return "\"types\" must list the instance types, like [{\"name\": \"g5.xlarge\", \"gpus\": 1, "
               "\"price_per_hour\": 1.0}]";
    std::set<std::string> names;
    for (size_t i = 0; i < file["types"].size(); ++i) {
        InstanceType type;
        if (std::string e = read_type(file["types"][i], i, &type); !e.empty())
            return e;
        if (!names.insert(type.name).second)
            return "types[" + std::to_string(i) + "]: \"" + type.name + "\" is listed twice";
        c.types.push_back(type);
    }
    double idle_minutes = c.idle_seconds / 60, boot_minutes = c.boot_timeout_seconds / 60;
    for (const std::string& e : {read_number(file, "max_instances", "", &c.max_instances, 1, 1000),
                                 read_number(file, "max_spend_per_hour", "", &c.max_spend_per_hour, 0, 1e6),
                                 read_number(file, "idle_minutes", "", &idle_minutes, 0, 7 * 24 * 60),
                                 read_number(file, "boot_timeout_minutes", "", &boot_minutes, 0.01, 24 * 60),
                                 read_number(file, "command_timeout_seconds", "", &c.command_timeout_seconds, 1, 3600)})
        if (!e.empty())
            return e;
    c.idle_seconds = idle_minutes * 60;
    c.boot_timeout_seconds = boot_minutes * 60;
    *config = std::move(c);
    return {};
}

std::vector<std::string> expand_command(const std::vector<std::string>& words,
                                        const std::map<std::string, std::string>& vars, std::string* error) {
    std::vector<std::string> argv;
    for (const std::string& word : words) {
        std::string out;
        size_t at = 0;
        while (at < word.size()) {
            size_t open = word.find('{', at);
            std::string name;
            size_t close = std::string::npos;
            while (open != std::string::npos && (close = placeholder_at(word, open, &name)) == std::string::npos)
                open = word.find('{', open + 1);
            if (close == std::string::npos) {
                out += word.substr(at);
                break;
            }
            const auto var = vars.find(name);
            if (var == vars.end()) {
                if (error)
                    *error = "the command names " + word.substr(open, close - open + 1) + ", which is not known here";
                return {};
            }
            out += word.substr(at, open - at) + var->second;
            at = close + 1;
        }
        argv.push_back(out);
    }
    return argv;
}

std::vector<std::string> parse_instance_list(const std::string& output, std::vector<std::string>* problems) {
    std::vector<std::string> ids;
    size_t start = 0;
    while (start < output.size()) {
        size_t end = output.find('\n', start);
        if (end == std::string::npos)
            end = output.size();
        const std::string line = trim(std::string_view(output).substr(start, end - start));
        start = end + 1;
        if (line.empty() || line.front() == '#')
            continue;
        const std::string id = line.substr(0, line.find_first_of(" \t"));
        if (is_id(id))
            ids.push_back(id);
        else if (problems)
            problems->push_back("not an instance id: \"" + id.substr(0, 60) + "\"");
    }
    return ids;
}

std::string last_word_line(const std::string& output) {
    const std::string text = trim(output);
    const size_t nl = text.rfind('\n');
    const std::string line = trim(nl == std::string::npos ? text : text.substr(nl + 1));
    return is_id(line) ? line : std::string();
}

bool run_provider_command(const std::vector<std::string>& argv, double seconds, std::string* output, std::string* error,
                          const std::atomic<bool>* abort) {
    SpawnOptions options;
    options.argv = argv;
    options.search_path = true;
    ProgramLimits limits;
    limits.seconds = seconds;
    limits.max_output = 4 << 20;
    limits.abort = abort;
    const ProgramResult result = run_program(options, limits);
    if (output)
        *output = result.output;
    if (result.ok())
        return true;
    if (error) {
        const std::string program = argv.empty() ? std::string("(nothing)") : argv.front();
        std::string last = trim(result.errors);
        last = trim(last.substr(last.rfind('\n') == std::string::npos ? 0 : last.rfind('\n') + 1)).substr(0, 300);
        if (!result.started)
            *error = program + " could not be started: " + result.error;
        else if (result.aborted)
            *error = program + " was stopped: the backend is closing";
        else if (result.timed_out)
            *error = program + " did not finish within " + std::to_string(static_cast<int>(seconds)) + " s";
        else if (result.exit_code < 0)
            *error = program + " was killed by a signal";
        else
            *error = program + " exited with " + std::to_string(result.exit_code) + (last.empty() ? "" : ": " + last);
    }
    return false;
}

} // namespace traindeck::client
