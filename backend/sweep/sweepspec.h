#pragma once
// A sweep: a base job, a search space over its parameters, how to search it (grid, random without replacement,
// TPE), what to optimise, early stopping (ASHA), how many trials and how many at once, and a hard budget. Parsed
// and validated here with errors that name the key ("space.optimizer.lr.loguniform: low (0.3) must be below high
// (0.1)"), so a bad spec starts nothing. The JSON form is README's "Sweeps" section (and sweepspec.cpp's first
// comment). Plain C++, no Qt.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace traindeck::sweep {

// The worker's limit on jobs sharing one GPU (its resources.gpu_share).
inline constexpr int max_trials_per_gpu = 8;

// One dimension of the space. Keys are dotted paths into the trial's parameters ("optimizer.lr", "hidden[1]").
struct Param {
    enum class Kind { choice, uniform, loguniform, integer, qloguniform };
    std::string key;
    Kind kind = Kind::uniform;
    double low = 0, high = 0;           // uniform, loguniform, integer (inclusive), qloguniform
    double q = 0;                       // qloguniform: values are round(x / q) * q
    std::vector<nlohmann::json> values; // choice: the values as given (numbers, strings, booleans, objects)
};

enum class Method { grid, random, tpe };

struct Objective {
    std::string metric = "val/accuracy"; // as the catalog names curves: a metric key, or "split/key" of an eval
    bool maximize = true;
};

// Asynchronous successive halving (Li et al. 2020): rungs at min_resource × eta^k up to max_resource, in steps or
// epochs of the trial's own reports.
struct Asha {
    bool enabled = false;
    bool epochs = true; // the resource: epochs (an eval/epoch record's "epoch") or optimiser steps ("step")
    double min_resource = 1, max_resource = 9, reduction_factor = 3;
};

// A trial whose objective turns NaN/inf, or whose watched metric (default "loss") exceeds factor × its best so
// far, is stopped at once.
struct Divergence {
    std::string metric = "loss";
    double factor = 10;
};

struct SweepSpec {
    std::string name;
    // The worker job request every trial starts from ({"builtin": SPEC} or {"argv": [...]}, with cwd, env,
    // resources, ...); each trial's parameters are applied to "builtin" and passed as TRAINDECK_PARAMS either way.
    nlohmann::json base;
    std::vector<Param> space;
    Method method = Method::tpe;
    Objective objective;
    Asha asha;
    Divergence divergence;
    int max_trials = 20, max_concurrent = 2;
    int trials_per_gpu = 1; // N small trials share a GPU when asked (1..max_trials_per_gpu)
    uint64_t seed = 0;
    double budget = 0;           // money for the whole sweep, in the worker's currency; 0 = no cap
    double budget_gpu_hours = 0; // 0 = no cap
};

// "" and *out filled, or what is wrong, naming the key.
std::string parse_sweep_spec(const nlohmann::json& json, SweepSpec& out);
nlohmann::json to_json(const SweepSpec& spec);

// A trial's parameters: key → value, in key order.
using Params = std::map<std::string, nlohmann::json>;

// The base built-in spec with each parameter set at its dotted path ("optimizer.lr" sets spec["optimizer"]["lr"],
// "hidden[1]" the second element of spec["hidden"]); objects on the way are created, arrays must be long enough.
// "" or what stopped it (naming the key).
std::string apply_params(nlohmann::json& builtin, const Params& params);

// How many configurations a grid has (choices × integer ranges; a continuous dimension makes it unbounded: 0).
uint64_t grid_size(const SweepSpec& spec);

} // namespace traindeck::sweep
