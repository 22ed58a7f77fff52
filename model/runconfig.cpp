// flatten_config and the metric goals (runconfig.h).
#include "runconfig.h"

#include <algorithm>
#include <array>
#include <cctype>

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

bool contains_word(std::string_view name, std::string_view word) {
    // A word of the metric's name: "val/accuracy", "top1_acc", "train-loss" all split on / _ - . and digits.
    size_t from = 0;
    while (from < name.size()) {
        size_t to = from;
        while (to < name.size() && std::isalpha(static_cast<unsigned char>(name[to])))
            ++to;
        if (to > from && name.substr(from, to - from) == word)
            return true;
        from = to + 1;
    }
    return false;
}

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

MetricGoal default_goal(std::string_view metric) {
    std::string lower(metric);
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    static constexpr std::array<std::string_view, 11> minimised = {"loss", "error", "err", "perplexity", "ppl", "mse",
                                                                   "mae",  "rmse",  "wer", "cer",        "nll"};
    static constexpr std::array<std::string_view, 12> maximised = {
        "accuracy", "acc", "f1", "auc", "precision", "recall", "map", "bleu", "iou", "dice", "score", "reward"};
    for (std::string_view word : minimised)
        if (contains_word(lower, word))
            return MetricGoal::minimize;
    for (std::string_view word : maximised)
        if (contains_word(lower, word))
            return MetricGoal::maximize;
    // R² ("r2", "val/r2", "test_r2"), a score whose digit the word split above takes apart: a part of its own.
    for (size_t from = 0; from < lower.size();) {
        size_t to = from;
        while (to < lower.size() && std::isalnum(static_cast<unsigned char>(lower[to])))
            ++to;
        if (std::string_view(lower).substr(from, to - from) == "r2")
            return MetricGoal::maximize;
        from = to + 1;
    }
    return MetricGoal::none;
}

const char* goal_name(MetricGoal goal) {
    return goal == MetricGoal::minimize ? "min" : goal == MetricGoal::maximize ? "max" : "";
}

MetricGoal goal_from(std::string_view name) {
    if (name == "min" || name == "minimize")
        return MetricGoal::minimize;
    if (name == "max" || name == "maximize")
        return MetricGoal::maximize;
    return MetricGoal::none;
}

} // namespace traindeck
