#pragma once
// Which way is better for a metric, from its name: what the catalog's summaries call "best", what the runs table and
// the compare views rank by, and the goal a sweep's objective takes when its spec gives none. Plain C++.
#include <string_view>

namespace traindeck {

// None when nothing says (then a summary's best is NaN).
enum class MetricGoal { none, minimize, maximize };

// "loss", "val/loss", "error", "perplexity", ... are minimised; "accuracy", "f1", "auc", "r2", ... maximised; others:
// none.
MetricGoal default_goal(std::string_view metric);
const char* goal_name(MetricGoal goal);      // "min", "max", ""
MetricGoal goal_from(std::string_view name); // "min"/"minimize" → minimize, "max"/"maximize" → maximize, else none

} // namespace traindeck
