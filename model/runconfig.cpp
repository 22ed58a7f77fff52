// flatten_config (runconfig.h).
#include "runconfig.h"

#include <string>

namespace traindeck {

using nlohmann::json;

namespace {

struct Flattener {
    std::map<std::string, ConfigValue>& out;
    size_t left_out = 0, cut = 0;

    void add(const std::string& key, ConfigValue value) {
        if (out.size() >= kMaxConfigKeys && !out.count(key)) {
            ++left_out;
            return;
        }
        if (value.text.size() > kMaxConfigText) {
            value.text.resize(kMaxConfigText);
            ++cut;
        }
        out[key] = std::move(value);
    }

    void walk(const json& value, const std::string& key) {
        if (key.size() > kMaxConfigKeyLength) {
            ++left_out;
            return;
        }
        if (value.is_object() && !value.empty()) {
            for (auto it = value.begin(); it != value.end(); ++it)
                walk(*it, key.empty() ? it.key() : key + "." + it.key());
        } else if (value.is_array() && !value.empty()) {
            for (size_t i = 0; i < value.size(); ++i)
                walk(value[i], key + "[" + std::to_string(i) + "]");
        } else if (key.empty()) {
            return; // a bare value has no key to file it under
        } else if (value.is_boolean()) {
            add(key, {value.get<bool>() ? "true" : "false", value.get<bool>() ? 1.0 : 0.0});
        } else if (value.is_number()) {
            // nlohmann writes the shortest text that reads back as the same double.
            add(key, {value.dump(), value.get<double>()});
        } else if (value.is_string()) {
            add(key, {value.get<std::string>(), NAN});
        } else {
            add(key, {value.dump(), NAN}); // null, {} and []
        }
    }
};

} // namespace

std::string flatten_config(const json& config, std::map<std::string, ConfigValue>& out) {
    Flattener flattener{out};
    flattener.walk(config, "");
    std::string message;
    if (flattener.left_out)
        message = std::to_string(flattener.left_out) + " config keys left out (at most " +
                  std::to_string(kMaxConfigKeys) + " keys of at most " + std::to_string(kMaxConfigKeyLength) +
                  " characters)";
    if (flattener.cut)
        message += (message.empty() ? "" : "; ") + std::to_string(flattener.cut) + " config values cut to " +
                   std::to_string(kMaxConfigText) + " characters";
    return message;
}

} // namespace traindeck
