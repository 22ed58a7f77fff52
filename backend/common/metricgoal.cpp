#include "metricgoal.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

namespace traindeck {
namespace {

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
