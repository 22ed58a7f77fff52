// Sweep specs: parsing and validation (every refusal names its key and says what would be accepted), the JSON form
// back (to_json, which parses to the same spec), a trial's parameters applied to the base spec, and a grid's size.
//
// The JSON form, README's "Sweeps":
//
//   {
//     "name": "mlp-lr",                  optional string, not empty; default "sweep"
//     "base": {"builtin": {...}, ...}    required object: the worker job request every trial starts from. It has
//          or {"argv": ["python3", ...], ...}   "builtin" (an object, the trainer spec) or "argv" (a non-empty array
//                                        of strings), not both; its other keys (cwd, env, resources, ...) are the job
//                                        request's and are checked by the worker.
//     "space": {                         required, not empty. Each key is a dotted path into the trial's parameters:
//                                        names separated by '.', each name followed by any number of [i] indexes
//                                        (digits, no leading zero); a name is any characters but '.', '[', ']',
//                                        spaces and control characters. No key may lie inside another
//                                        ("optimizer" and "optimizer.lr"). With "builtin", each path must reach into
//                                        it as apply_params does (an [i] into an existing array).
//       "optimizer.lr": {"loguniform": [1e-4, 0.3]},     low > 0, low < high; sampled uniformly in log space
//       "dropout":      {"uniform": [0, 0.5]},           low < high, high - low a finite double
//       "layers":       {"int": [1, 4]},                 whole numbers (|x| <= 2^53), low < high, both included
//       "lr2":          {"qloguniform": [1e-4, 0.1, 1e-4]},   low > 0, low < high, q > 0: round(x / q) * q of a
//                                                             log-uniform x, clipped to [low, high]
//       "hidden[0]":    {"choice": [64, 128, 256]}       a non-empty array of distinct values of any JSON type
//     },                                 each dimension is an object with exactly one of these kinds
//     "method": "tpe",                   "grid", "random" or "tpe" (default); a grid takes only choice and int
//                                        dimensions
//     "objective": {"metric": "val/accuracy", "goal": "max"},   both optional: a non-empty metric name, and "max" or
//                                        "min"; default val/accuracy, max (a built-in regression: val/loss, min,
//                                        and no accuracy); a metric without a goal takes the catalog's for its name
//                                        (metricgoal.h: a loss or error is minimised), else is maximised
//     "early_stopping": {"method": "none"}   the default; or {"method": "asha", "resource": "epochs" | "steps",
//                                        "min_resource": 1, "max_resource": 9, "reduction_factor": 3} (those
//                                        defaults): 0 < min_resource < max_resource (by more than a part in
//                                        10^9), reduction_factor > 1, and at most 64 rungs below max_resource
//                                        (see asha.cpp)
//     "divergence": {"metric": "loss", "factor": 10},   optional, both keys too: a non-empty metric, factor > 1
//     "max_trials": 20, "max_concurrent": 2,   whole numbers from 1 to 2^31 - 1 (defaults)
//     "trials_per_gpu": 1,               1 (default: a GPU each) to 8: trials sharing one GPU, where there are GPUs
//     "seed": 0,                         a whole number from 0 to 2^64 - 1
//     "budget": {"money": 5.0, "gpu_hours": 2.0}   optional, both keys too: numbers >= 0; 0 or absent is no cap
//   }
//
// Any other key, at the top or inside objective, early_stopping, divergence or budget, is refused. Whole numbers may
// be written 3 or 3.0; anything else must have the JSON type shown. to_json writes every key (budget only where a cap
// is set), numbers of int dimensions as JSON integers, the seed as an unsigned integer.
#include "sweepspec.h"

#include "metricgoal.h"

#include <charconv>
#include <cmath>
#include <cstddef>
#include <initializer_list>
#include <limits>
#include <set>
#include <string_view>
#include <utility>

namespace traindeck::sweep {

using nlohmann::json;

namespace {

// Copying or printing JSON recurses once per level, and a spec is a user's file or an HTTP body: as in the worker's
// job requests, the depth is measured iteratively before anything copies the spec. Real specs nest a few levels.
constexpr int kMaxDepth = 64;
// Rungs below max_resource that the controller can still show and store; parse refuses specs with more, and
// asha_rungs stops there.
constexpr int kMaxRungs = 64;
// Whole numbers of int dimensions stay exact in the double they are kept in.
constexpr double kMaxExactInteger = 9007199254740992.0; // 2^53

bool nests_deeper_than(const json& root, int limit) {
    std::vector<std::pair<const json*, int>> pending{{&root, 0}};
    while (!pending.empty()) {
        const auto [value, depth] = pending.back();
        pending.pop_back();
        if (depth > limit)
            return true;
        if (value->is_structured())
            for (const json& child : *value)
                pending.emplace_back(&child, depth + 1);
    }
    return false;
}

// A value as the error shows it: short, and valid UTF-8 even when a string holds invalid bytes (the error may go
// back in a JSON reply, whose dump refuses them), so it is cut before a character, never inside one.
std::string shown(const json& value) {
    std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
    if (text.size() > 60) {
        size_t cut = 57;
        while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
            --cut;
        text = text.substr(0, cut) + "...";
    }
    return text;
}

// A double the shortest way that reads back as it (9, not 9.0; 0.1, not 0.10000000000000001).
std::string shown(double number) {
    char text[32];
    const auto end = std::to_chars(text, text + sizeof text, number).ptr;
    return std::string(text, end);
}

std::string listed(const std::set<std::string>& names) {
    std::string list;
    for (const std::string& name : names)
        list += (list.empty() ? "" : ", ") + name;
    return list;
}

std::string check_keys(const json& object, const std::set<std::string>& known, const std::string& where) {
    for (const auto& item : object.items())
        if (!known.count(item.key()))
            return where + item.key() + ": unknown key (known: " + listed(known) + ")";
    return "";
}

// "where: what must be ...": `what` names the element when `where` is the whole array ("low", "q").
std::string must(const std::string& where, const std::string& what, const std::string& rule) {
    return where + ": " + (what.empty() ? "" : what + " ") + "must be " + rule;
}

std::string read_number(const json& value, const std::string& where, const std::string& what, double& out) {
    if (!value.is_number())
        return must(where, what, "a number (it is " + shown(value) + ")");
    out = value.get<double>();
    if (!std::isfinite(out))
        return must(where, what, "a finite number (it is " + shown(value) + ")");
    return "";
}

// A whole number in [low, high], written as an integer or as a float with no fraction (3.0, 1e3).
std::string read_whole(const json& value, const std::string& where, const std::string& what, double low, double high,
                       double& out) {
    if (!value.is_number())
        return must(where, what, "a whole number (it is " + shown(value) + ")");
    if (value.is_number_unsigned())
        out = static_cast<double>(value.get<uint64_t>());
    else if (value.is_number_integer())
        out = static_cast<double>(value.get<int64_t>());
    else
        out = value.get<double>();
    if (!std::isfinite(out) || std::floor(out) != out)
        return must(where, what, "a whole number (it is " + shown(value) + ")");
    if (out < low || out > high)
        return must(where, what,
                    "from " + shown(json(static_cast<int64_t>(low))) + " to " +
                        shown(json(static_cast<int64_t>(high))) + " (it is " + shown(value) + ")");
    return "";
}

std::string read_count(const json& object, const char* key, int& out) {
    if (!object.contains(key))
        return "";
    double number = 0;
    if (std::string error =
            read_whole(object.at(key), key, "", 1, static_cast<double>(std::numeric_limits<int>::max()), number);
        !error.empty())
        return error;
    out = static_cast<int>(number);
    return "";
}

std::string read_seed(const json& value, uint64_t& out) {
    std::string wrong = "seed: must be a whole number from 0 to 2^64 - 1 (it is " + shown(value) + ")";
    if (value.is_number_unsigned()) {
        out = value.get<uint64_t>();
        return "";
    }
    if (value.is_number_integer()) { // signed: a json built in code holds 5 as int64
        if (value.get<int64_t>() < 0)
            return wrong;
        out = static_cast<uint64_t>(value.get<int64_t>());
        return "";
    }
    if (!value.is_number_float())
        return wrong;
    const double number = value.get<double>();
    // 2^64 is the first double past the range.
    if (!std::isfinite(number) || std::floor(number) != number || number < 0 || number >= 18446744073709551616.0)
        return wrong;
    out = static_cast<uint64_t>(number);
    return "";
}

std::string read_text(const json& object, const char* key, const std::string& where, std::string& out) {
    if (!object.contains(key))
        return "";
    const json& value = object.at(key);
    if (!value.is_string() || value.get_ref<const std::string&>().empty())
        return where + key + ": must be a non-empty string (it is " + shown(value) + ")";
    out = value.get<std::string>();
    return "";
}

// One step of a dotted path: a name inside an object, or an index into an array.
struct PathStep {
    bool is_index = false;
    std::string name;
    size_t index = 0;
};

bool is_name_char(char c) {
    const auto byte = static_cast<unsigned char>(c);
    return c != '.' && c != '[' && c != ']' && byte > ' ' && byte != 0x7f;
}

// "" and the steps of `path`, or what is wrong with it (without the key: the caller says where).
std::string parse_path(const std::string& path, std::vector<PathStep>& steps) {
    steps.clear();
    const std::string example = "; write a path like \"optimizer.lr\" or \"hidden[0]\"";
    if (path.empty())
        return "the path is empty" + example;
    size_t i = 0;
    while (true) {
        const size_t start = i;
        while (i < path.size() && is_name_char(path[i]))
            ++i;
        if (i == start) {
            if (i < path.size() && path[i] != '.' && path[i] != '[')
                return "character " + std::to_string(i + 1) + " (" + shown(json(path.substr(i, 1))) +
                       ") cannot be part of a name" + example;
            return "empty name at character " + std::to_string(i + 1) + example;
        }
        steps.push_back({false, path.substr(start, i - start), 0});
        while (i < path.size() && path[i] == '[') {
            const size_t digits = ++i;
            while (i < path.size() && path[i] >= '0' && path[i] <= '9')
                ++i;
            const size_t length = i - digits;
            if (length == 0 || i == path.size() || path[i] != ']')
                return "a [ at character " + std::to_string(digits) + " must hold an index like [0] and close with ]";
            if (length > 1 && path[digits] == '0')
                return "index [" + path.substr(digits, length) + "] has a leading zero; write it without";
            if (length > 9)
                return "index [" + path.substr(digits, length) + "] is too large (at most 9 digits)";
            steps.push_back({true, "", static_cast<size_t>(std::stoul(path.substr(digits, length)))});
            ++i;
        }
        if (i == path.size())
            return "";
        if (path[i] != '.')
            return "character " + std::to_string(i + 1) + " (" + shown(json(path.substr(i, 1))) + ")" +
                   (is_name_char(path[i]) || path[i] == ']' ? " must be '.', '[' or the end"
                                                            : " cannot be part of a name") +
                   example;
        ++i;
    }
}

const std::map<std::string, Param::Kind>& kinds() {
    static const std::map<std::string, Param::Kind> all{{"choice", Param::Kind::choice},
                                                        {"uniform", Param::Kind::uniform},
                                                        {"loguniform", Param::Kind::loguniform},
                                                        {"int", Param::Kind::integer},
                                                        {"qloguniform", Param::Kind::qloguniform}};
    return all;
}

const char* kind_name(Param::Kind kind) {
    for (const auto& [name, k] : kinds())
        if (k == kind)
            return name.c_str();
    return "?";
}

std::string kind_list() {
    std::set<std::string> names;
    for (const auto& [name, kind] : kinds())
        names.insert(name);
    return listed(names);
}

std::string parse_dimension(const std::string& key, const json& dim, Param& param) {
    std::string where = "space." + key;
    param.key = key;
    const std::string like = " like {\"uniform\": [0, 0.5]} (kinds: " + kind_list() + ")";
    if (!dim.is_object())
        return where + ": must be an object with one kind," + like + "; it is " + shown(dim);
    if (dim.empty())
        return where + ": names no kind; give exactly one," + like;
    if (dim.size() > 1) {
        std::set<std::string> names;
        for (const auto& item : dim.items())
            names.insert(item.key());
        return where + ": names " + std::to_string(dim.size()) + " kinds (" + listed(names) + "); give exactly one";
    }
    const auto kind = kinds().find(dim.begin().key());
    if (kind == kinds().end())
        return where + ": unknown kind \"" + dim.begin().key() + "\" (known: " + kind_list() + ")";
    param.kind = kind->second;
    where += "." + kind->first;
    const json& value = dim.begin().value();

    if (param.kind == Param::Kind::choice) {
        if (!value.is_array() || value.empty())
            return where + ": must be a non-empty array of the values to try, like [64, 128] (it is " + shown(value) +
                   ")";
        for (size_t i = 0; i < value.size(); ++i) {
            for (size_t j = 0; j < i; ++j)
                if (value[j] == value[i])
                    return where + ": " + shown(value[i]) + " is given twice (elements " + std::to_string(j) + " and " +
                           std::to_string(i) + "); each value once";
            param.values.push_back(value[i]);
        }
        return "";
    }

    const bool quantised = param.kind == Param::Kind::qloguniform;
    const size_t arity = quantised ? 3 : 2;
    if (!value.is_array() || value.size() != arity)
        return where +
               (quantised ? ": must be [low, high, q], like [0.0001, 0.1, 0.0001]"
                          : ": must be [low, high], like [1, 4]") +
               " (it is " + shown(value) + ")";
    if (param.kind == Param::Kind::integer) {
        if (std::string error = read_whole(value[0], where, "low", -kMaxExactInteger, kMaxExactInteger, param.low);
            !error.empty())
            return error;
        if (std::string error = read_whole(value[1], where, "high", -kMaxExactInteger, kMaxExactInteger, param.high);
            !error.empty())
            return error;
    } else {
        if (std::string error = read_number(value[0], where, "low", param.low); !error.empty())
            return error;
        if (std::string error = read_number(value[1], where, "high", param.high); !error.empty())
            return error;
        if (quantised)
            if (std::string error = read_number(value[2], where, "q", param.q); !error.empty())
                return error;
    }
    if (!(param.low < param.high))
        return where + ": low (" + shown(value[0]) + ") must be below high (" + shown(value[1]) + ")";
    if (!std::isfinite(param.high - param.low)) // sampling and TPE's bandwidths work with the width
        return where + ": the range from low (" + shown(value[0]) + ") to high (" + shown(value[1]) +
               ") is wider than a double holds; narrow it";
    if ((param.kind == Param::Kind::loguniform || quantised) && param.low <= 0)
        return where + ": low (" + shown(value[0]) + ") must be above 0 (the range is sampled in log space)";
    if (quantised && param.q <= 0)
        return where + ": q (" + shown(value[2]) + ") must be above 0";
    return "";
}

std::string parse_space(const json& space, SweepSpec& spec) {
    if (!space.is_object())
        return "space: must be an object of dimensions, like {\"optimizer.lr\": {\"loguniform\": [0.0001, 0.3]}}";
    if (space.empty())
        return "space: is empty; name at least one parameter to sweep, like {\"optimizer.lr\": {\"loguniform\": "
               "[0.0001, 0.3]}}";
    std::set<std::string> keys;
    for (const auto& item : space.items()) {
        std::vector<PathStep> steps;
        if (std::string error = parse_path(item.key(), steps); !error.empty())
            return "space." + item.key() + ": " + error;
        Param param;
        if (std::string error = parse_dimension(item.key(), item.value(), param); !error.empty())
            return error;
        spec.space.push_back(std::move(param));
        keys.insert(item.key());
    }
    // A key inside another: setting the outer one replaces the inner one's object, or the inner one has nowhere to
    // go. Each '.' or '[' of a key ends one of its prefixes.
    for (const std::string& key : keys)
        for (size_t i = 0; i < key.size(); ++i)
            if ((key[i] == '.' || key[i] == '[') && keys.count(key.substr(0, i)))
                return "space." + key + ": lies inside space." + key.substr(0, i) +
                       ", which is swept itself; keep one of the two";
    return "";
}

std::string parse_base(const json& base) {
    const std::string needs =
        "needs \"builtin\" (the trainer spec, an object) or \"argv\" (the command line, a non-empty array of strings)";
    if (!base.is_object())
        return "base: must be a job request object that " + needs;
    const bool builtin = base.contains("builtin"), argv = base.contains("argv");
    if (builtin && argv)
        return "base: has both \"builtin\" and \"argv\"; a trial runs one of them, so keep one";
    if (!builtin && !argv)
        return "base: " + needs;
    if (builtin && !base.at("builtin").is_object())
        return "base.builtin: must be an object, the trainer spec (it is " + shown(base.at("builtin")) + ")";
    if (argv) {
        const json& line = base.at("argv");
        if (!line.is_array() || line.empty())
            return "base.argv: must be a non-empty array of strings, like [\"python3\", \"train.py\"] (it is " +
                   shown(line) + ")";
        for (size_t i = 0; i < line.size(); ++i)
            if (!line[i].is_string())
                return "base.argv[" + std::to_string(i) + "]: must be a string (it is " + shown(line[i]) + ")";
    }
    return "";
}

std::string parse_objective(const json& objective, Objective& out) {
    if (!objective.is_object())
        return "objective: must be an object like {\"metric\": \"val/accuracy\", \"goal\": \"max\"}";
    if (std::string error = check_keys(objective, {"metric", "goal"}, "objective."); !error.empty())
        return error;
    if (std::string error = read_text(objective, "metric", "objective.", out.metric); !error.empty())
        return error;
    if (objective.contains("goal")) {
        const json& goal = objective.at("goal");
        if (goal != "max" && goal != "min")
            return "objective.goal: must be \"max\" or \"min\" (it is " + shown(goal) + ")";
        out.maximize = goal == "max";
    } else if (objective.contains("metric")) {
        // The catalog's rule (metricgoal.h): val/loss, val/rmse, val/mae, … minimised; anything it does not know of
        // maximised, as the default objective is.
        out.maximize = default_goal(out.metric) != MetricGoal::minimize;
    }
    return "";
}

// How many rungs lie below max_resource, counted as asha_rungs makes them (a rung within a part in 10^9 of max is
// max), stopping at kMaxRungs + 1.
int rungs_below_max(const Asha& asha) {
    int count = 0;
    for (double resource = asha.min_resource; resource < asha.max_resource * (1 - 1e-9) && count <= kMaxRungs;
         resource *= asha.reduction_factor)
        ++count;
    return count;
}

std::string parse_early_stopping(const json& stopping, Asha& out) {
    if (!stopping.is_object())
        return "early_stopping: must be an object like {\"method\": \"asha\", \"min_resource\": 1, \"max_resource\": "
               "9, \"reduction_factor\": 3} or {\"method\": \"none\"}";
    if (!stopping.contains("method"))
        return "early_stopping.method: missing; give \"asha\" or \"none\"";
    const json& method = stopping.at("method");
    if (method == "none") {
        if (stopping.size() > 1)
            return check_keys(stopping, {"method"}, "early_stopping.") + " (method \"none\" takes no other key)";
        out = Asha{};
        return "";
    }
    if (method != "asha")
        return "early_stopping.method: unknown method " + shown(method) + " (known: asha, none)";
    if (std::string error = check_keys(
            stopping, {"method", "resource", "min_resource", "max_resource", "reduction_factor"}, "early_stopping.");
        !error.empty())
        return error;
    out = Asha{};
    out.enabled = true;
    if (stopping.contains("resource")) {
        const json& resource = stopping.at("resource");
        if (resource != "epochs" && resource != "steps")
            return "early_stopping.resource: must be \"epochs\" or \"steps\" (it is " + shown(resource) + ")";
        out.epochs = resource == "epochs";
    }
    for (const auto& [key, field] :
         {std::pair{"min_resource", &out.min_resource}, std::pair{"max_resource", &out.max_resource},
          std::pair{"reduction_factor", &out.reduction_factor}})
        if (stopping.contains(key))
            if (std::string error = read_number(stopping.at(key), std::string("early_stopping.") + key, "", *field);
                !error.empty())
                return error;
    if (out.min_resource <= 0)
        return "early_stopping.min_resource: must be above 0 (it is " + shown(out.min_resource) + ")";
    if (out.min_resource >= out.max_resource || rungs_below_max(out) == 0) // within 10^-9 of max is max
        return "early_stopping.min_resource: min_resource (" + shown(out.min_resource) +
               ") must be below max_resource (" + shown(out.max_resource) + ")";
    if (out.reduction_factor <= 1)
        return "early_stopping.reduction_factor: must be above 1 (it is " + shown(out.reduction_factor) +
               "); 3 keeps the best third at each rung";
    if (rungs_below_max(out) > kMaxRungs)
        return "early_stopping: min_resource " + shown(out.min_resource) + " times reduction_factor^k reaches " +
               "max_resource " + shown(out.max_resource) + " only after more than " + std::to_string(kMaxRungs) +
               " rungs; raise min_resource or reduction_factor";
    return "";
}

std::string parse_divergence(const json& divergence, Divergence& out) {
    if (!divergence.is_object())
        return "divergence: must be an object like {\"metric\": \"loss\", \"factor\": 10}";
    if (std::string error = check_keys(divergence, {"metric", "factor"}, "divergence."); !error.empty())
        return error;
    if (std::string error = read_text(divergence, "metric", "divergence.", out.metric); !error.empty())
        return error;
    if (divergence.contains("factor")) {
        if (std::string error = read_number(divergence.at("factor"), "divergence.factor", "", out.factor);
            !error.empty())
            return error;
        if (out.factor <= 1)
            return "divergence.factor: must be above 1 (it is " + shown(out.factor) +
                   "): a trial is stopped when its metric exceeds factor × its best";
    }
    return "";
}

std::string parse_budget(const json& budget, SweepSpec& out) {
    if (!budget.is_object())
        return "budget: must be an object like {\"money\": 5.0, \"gpu_hours\": 2.0}";
    if (std::string error = check_keys(budget, {"money", "gpu_hours"}, "budget."); !error.empty())
        return error;
    for (const auto& [key, field] : {std::pair{"money", &out.budget}, std::pair{"gpu_hours", &out.budget_gpu_hours}})
        if (budget.contains(key)) {
            if (std::string error = read_number(budget.at(key), std::string("budget.") + key, "", *field);
                !error.empty())
                return error;
            if (*field < 0)
                return std::string("budget.") + key + ": must be 0 (no cap) or more (it is " + shown(*field) + ")";
        }
    return "";
}

} // namespace

std::string parse_sweep_spec(const json& root, SweepSpec& out) {
    if (!root.is_object())
        return "a sweep spec must be a JSON object like {\"base\": {\"builtin\": {...}}, \"space\": {...}}";
    if (nests_deeper_than(root, kMaxDepth))
        return "the sweep spec nests deeper than " + std::to_string(kMaxDepth) + " levels";
    if (std::string error = check_keys(root,
                                       {"name", "base", "space", "method", "objective", "early_stopping", "divergence",
                                        "max_trials", "max_concurrent", "trials_per_gpu", "seed", "budget"},
                                       "");
        !error.empty())
        return error;

    SweepSpec spec;
    spec.name = "sweep";
    if (std::string error = read_text(root, "name", "", spec.name); !error.empty())
        return error + "; leave it out for \"sweep\"";
    if (!root.contains("base"))
        return "base: missing; give the job every trial starts from, like {\"builtin\": {...trainer spec...}}";
    if (std::string error = parse_base(root.at("base")); !error.empty())
        return error;
    spec.base = root.at("base");
    if (!root.contains("space"))
        return "space: missing; name the parameters to sweep, like {\"optimizer.lr\": {\"loguniform\": [0.0001, 0.3]}}";
    if (std::string error = parse_space(root.at("space"), spec); !error.empty())
        return error;

    if (root.contains("method")) {
        const json& method = root.at("method");
        if (method == "grid")
            spec.method = Method::grid;
        else if (method == "random")
            spec.method = Method::random;
        else if (method == "tpe")
            spec.method = Method::tpe;
        else
            return "method: unknown method " + shown(method) + " (known: grid, random, tpe)";
    }
    if (spec.method == Method::grid)
        for (const Param& param : spec.space)
            if (param.kind != Param::Kind::choice && param.kind != Param::Kind::integer)
                return "method: a grid takes only choice and int dimensions, and space." + param.key + " is " +
                       kind_name(param.kind) + "; make it a choice, or use \"random\" or \"tpe\"";

    // A built-in regression reports no accuracy: its default objective is its validation loss (the squared error),
    // and an accuracy objective would run the whole budget blind.
    const bool regression = spec.base.contains("builtin") && spec.base.at("builtin").is_object() &&
                            spec.base.at("builtin").value("task", json()) == "regression";
    if (regression)
        spec.objective = Objective{"val/loss", false};
    if (root.contains("objective"))
        if (std::string error = parse_objective(root.at("objective"), spec.objective); !error.empty())
            return error;
    if (regression && (spec.objective.metric == "val/accuracy" || spec.objective.metric == "accuracy" ||
                       spec.objective.metric == "test/accuracy"))
        return "objective.metric: a regression (\"task\": \"regression\") reports no accuracy; watch val/loss (its "
               "mean "
               "squared error, min), val/rmse, val/mae (min) or val/r2 (max)";
    if (root.contains("early_stopping"))
        if (std::string error = parse_early_stopping(root.at("early_stopping"), spec.asha); !error.empty())
            return error;
    if (root.contains("divergence"))
        if (std::string error = parse_divergence(root.at("divergence"), spec.divergence); !error.empty())
            return error;
    for (const auto& [key, field] :
         {std::pair{"max_trials", &spec.max_trials}, std::pair{"max_concurrent", &spec.max_concurrent},
          std::pair{"trials_per_gpu", &spec.trials_per_gpu}})
        if (std::string error = read_count(root, key, *field); !error.empty())
            return error;
    if (spec.trials_per_gpu > max_trials_per_gpu)
        return "trials_per_gpu: at most " + std::to_string(max_trials_per_gpu) + " trials share a GPU, not " +
               std::to_string(spec.trials_per_gpu);
    if (root.contains("seed"))
        if (std::string error = read_seed(root.at("seed"), spec.seed); !error.empty())
            return error;
    if (root.contains("budget"))
        if (std::string error = parse_budget(root.at("budget"), spec); !error.empty())
            return error;

    // Every path must reach into the trainer spec now, not when the first trial starts. The values do not matter
    // for where a path goes: each dimension's first.
    if (spec.base.contains("builtin")) {
        Params probe;
        for (const Param& param : spec.space)
            probe[param.key] = param.kind == Param::Kind::choice ? param.values.front() : json(param.low);
        json builtin = spec.base.at("builtin");
        if (std::string error = apply_params(builtin, probe); !error.empty())
            return "space." + error;
    }
    out = std::move(spec);
    return "";
}

json to_json(const SweepSpec& spec) {
    json space = json::object();
    for (const Param& param : spec.space) {
        json range;
        switch (param.kind) {
        case Param::Kind::choice:
            range = param.values;
            break;
        case Param::Kind::integer:
            range = {static_cast<int64_t>(param.low), static_cast<int64_t>(param.high)};
            break;
        case Param::Kind::qloguniform:
            range = {param.low, param.high, param.q};
            break;
        case Param::Kind::uniform:
        case Param::Kind::loguniform:
            range = {param.low, param.high};
            break;
        }
        space[param.key] = {{kind_name(param.kind), std::move(range)}};
    }
    json early_stopping = {{"method", "none"}};
    if (spec.asha.enabled)
        early_stopping = {{"method", "asha"},
                          {"resource", spec.asha.epochs ? "epochs" : "steps"},
                          {"min_resource", spec.asha.min_resource},
                          {"max_resource", spec.asha.max_resource},
                          {"reduction_factor", spec.asha.reduction_factor}};
    const char* method = spec.method == Method::grid ? "grid" : spec.method == Method::random ? "random" : "tpe";
    json out = {{"name", spec.name},
                {"base", spec.base},
                {"space", std::move(space)},
                {"method", method},
                {"objective", {{"metric", spec.objective.metric}, {"goal", spec.objective.maximize ? "max" : "min"}}},
                {"early_stopping", std::move(early_stopping)},
                {"divergence", {{"metric", spec.divergence.metric}, {"factor", spec.divergence.factor}}},
                {"max_trials", spec.max_trials},
                {"max_concurrent", spec.max_concurrent},
                {"trials_per_gpu", spec.trials_per_gpu},
                {"seed", spec.seed}};
    json budget = json::object();
    if (spec.budget != 0)
        budget["money"] = spec.budget;
    if (spec.budget_gpu_hours != 0)
        budget["gpu_hours"] = spec.budget_gpu_hours;
    if (!budget.empty())
        out["budget"] = std::move(budget);
    return out;
}

namespace {

// An error put together in one allocation: apply_params builds its refusals inside a loop.
std::string joined(std::initializer_list<std::string_view> parts) {
    std::string out;
    for (std::string_view part : parts)
        out += part;
    return out;
}

} // namespace

std::string apply_params(json& builtin, const Params& params) {
    // On a copy: a path that fails halfway leaves the caller's spec as it was.
    json result = builtin.is_null() ? json::object() : builtin;
    if (!result.is_object())
        return "the built-in spec must be a JSON object to set parameters in (it is " + shown(result) + ")";
    for (const auto& [key, value] : params) {
        std::vector<PathStep> steps;
        if (std::string error = parse_path(key, steps); !error.empty())
            return joined({key, ": ", error});
        json* at = &result;
        std::string walked;
        for (const PathStep& step : steps) {
            if (!step.is_index) {
                if (at->is_null())
                    *at = json::object(); // made on the way, or a null the spec holds
                if (!at->is_object())
                    return joined({key, ": \"", walked, "\" is ", shown(*at), ", not an object, so it has no \"",
                                   step.name, "\""});
                at = &(*at)[step.name];
                if (!walked.empty())
                    walked += '.';
                walked += step.name;
            } else {
                const std::string index = std::to_string(step.index);
                if (!at->is_array())
                    return joined({key, ": \"", walked, "\" is ", at->is_null() ? "not in the spec" : shown(*at),
                                   ", not an array; [", index, "] indexes an existing array"});
                if (step.index >= at->size())
                    return joined({key, ": \"", walked, "\" has ", std::to_string(at->size()), " elements, so [", index,
                                   "] is past its end; give the array in the base spec at its full length"});
                at = &(*at)[step.index];
                walked += '[';
                walked += index;
                walked += ']';
            }
        }
        *at = value;
    }
    builtin = std::move(result);
    return "";
}

uint64_t grid_size(const SweepSpec& spec) {
    constexpr uint64_t most = std::numeric_limits<uint64_t>::max();
    uint64_t size = 1;
    for (const Param& param : spec.space) {
        uint64_t count = 0;
        if (param.kind == Param::Kind::choice) {
            count = param.values.size();
        } else if (param.kind == Param::Kind::integer) {
            if (!(param.high >= param.low))
                return 0;
            // high - low is exact within 2^53 (what parse accepts); wider ranges saturate, as the product does.
            const double span = param.high - param.low;
            count = span >= 1.8e19 ? most : static_cast<uint64_t>(span) + 1;
        } else {
            return 0;
        }
        if (count == 0)
            return 0;
        size = size > most / count ? most : size * count;
    }
    return size;
}

} // namespace traindeck::sweep
