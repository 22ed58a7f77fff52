// Fuzz target: a sweep spec as a user's file or a request body hands it in (nlohmann's parse without exceptions,
// then parse_sweep_spec), and what the controller does next with an accepted one: store it (to_json), suggest
// trials, apply them to the base spec, lay out ASHA's rungs.
// Properties, not just "does not crash":
//  - a refusal has a message, valid UTF-8 (it goes back in a JSON reply), and leaves the output spec as it was;
//  - an accepted spec keeps the rules parse_sweep_spec states: a space in key order with ordered bounds, positive
//    log bounds and q, distinct choices; counts of at least 1; a grid only over choices and int ranges;
//  - what the controller stores (to_json, dumped) parses back to the same spec;
//  - the first trials' suggestions hold every key of the space with a value inside its dimension, never repeat,
//    and apply to a built-in base; a grid stops exactly at grid_size; random stops early only on a spent finite
//    space (or one with a qloguniform dimension, whose few steps it may exhaust);
//  - ASHA's rungs rise from min_resource to max_resource.
#include "asha.h"
#include "fuzzsupport.h"
#include "suggester.h"
#include "sweepspec.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>

using nlohmann::json;
using namespace traindeck::sweep;

namespace {

bool inside(const Param& param, const json& value) {
    switch (param.kind) {
    case Param::Kind::choice:
        return std::find(param.values.begin(), param.values.end(), value) != param.values.end();
    case Param::Kind::integer:
        return value.is_number_integer() && value.get<double>() >= param.low && value.get<double>() <= param.high;
    case Param::Kind::uniform:
    case Param::Kind::loguniform:
    case Param::Kind::qloguniform:
        return value.is_number() && value.get<double>() >= param.low && value.get<double>() <= param.high;
    }
    return false;
}

void check_configuration(const SweepSpec& spec, const Params& params) {
    FUZZ_CHECK(params.size() == spec.space.size(), "a suggestion without every key of the space");
    for (const Param& param : spec.space) {
        const auto value = params.find(param.key);
        FUZZ_CHECK(value != params.end(), "a suggestion misses a key of the space");
        FUZZ_CHECK(inside(param, value->second), "a suggested value outside its dimension");
    }
    if (spec.base.contains("builtin")) {
        json builtin = spec.base.at("builtin");
        FUZZ_CHECK(apply_params(builtin, params).empty(), "an accepted spec's suggestion does not apply to its base");
    }
}

void check_spec(const SweepSpec& spec) {
    FUZZ_CHECK(!spec.name.empty() && !spec.space.empty(), "accepted without a name or a space");
    FUZZ_CHECK(spec.base.is_object() && spec.base.contains("builtin") != spec.base.contains("argv"),
               "accepted a base without exactly one of builtin and argv");
    for (size_t i = 0; i < spec.space.size(); ++i) {
        const Param& param = spec.space[i];
        FUZZ_CHECK(i == 0 || spec.space[i - 1].key < param.key, "a space not in key order");
        if (param.kind == Param::Kind::choice) {
            FUZZ_CHECK(!param.values.empty(), "accepted an empty choice");
            for (size_t a = 0; a < param.values.size(); ++a)
                for (size_t b = 0; b < a; ++b)
                    FUZZ_CHECK(param.values[a] != param.values[b], "accepted a choice with a value twice");
            continue;
        }
        FUZZ_CHECK(std::isfinite(param.low) && std::isfinite(param.high) && param.low < param.high,
                   "accepted bounds out of order");
        if (param.kind == Param::Kind::loguniform || param.kind == Param::Kind::qloguniform)
            FUZZ_CHECK(param.low > 0, "accepted a log dimension from 0 or below");
        if (param.kind == Param::Kind::qloguniform)
            FUZZ_CHECK(param.q > 0 && std::isfinite(param.q), "accepted a q of 0 or below");
        if (param.kind == Param::Kind::integer)
            FUZZ_CHECK(std::floor(param.low) == param.low && std::floor(param.high) == param.high,
                       "accepted an int range with a fraction");
    }
    FUZZ_CHECK(spec.max_trials >= 1 && spec.max_concurrent >= 1 && spec.trials_per_gpu >= 1,
               "accepted a count below 1");
    FUZZ_CHECK(spec.budget >= 0 && spec.budget_gpu_hours >= 0, "accepted a negative budget");
    FUZZ_CHECK(spec.divergence.factor > 1, "accepted a divergence factor of 1 or below");
    if (spec.method == Method::grid)
        FUZZ_CHECK(grid_size(spec) > 0, "accepted a grid with a continuous dimension");
}

void check_suggestions(const SweepSpec& spec) {
    const uint64_t size = grid_size(spec);
    if (spec.method == Method::grid) {
        check_configuration(spec, *suggest(spec, 0, {}));
        if (size <= 1000) {
            const auto last = static_cast<int>(size - 1);
            const std::optional<Params> params = suggest(spec, last, {});
            FUZZ_CHECK(params.has_value(), "a grid without its last configuration");
            check_configuration(spec, *params);
            FUZZ_CHECK(!suggest(spec, last + 1, {}), "a grid with a configuration past grid_size");
        }
        return;
    }
    // Twelve trials, so that TPE leaves its random start; every fourth one still running.
    std::vector<Observation> history;
    std::set<std::string> seen;
    bool quantised = false;
    for (const Param& param : spec.space)
        quantised = quantised || param.kind == Param::Kind::qloguniform;
    for (int i = 0; i < 12; ++i) {
        const std::optional<Params> params = suggest(spec, i, history);
        if (!params) {
            FUZZ_CHECK(quantised || size == 0 || size > 65536 || size == history.size(),
                       "no suggestion although a finite space has configurations left");
            return;
        }
        check_configuration(spec, *params);
        FUZZ_CHECK(suggest(spec, i, history) == params, "two suggestions from the same inputs differ");
        FUZZ_CHECK(seen.insert(json(*params).dump()).second, "a configuration suggested twice");
        history.push_back({*params, i % 4 == 3 ? NAN : static_cast<double>((i * 7) % 5)});
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const json document = json::parse(data, data + size, nullptr, false);
    if (document.is_discarded())
        return 0;
    SweepSpec spec;
    spec.name = "untouched";
    const std::string error = parse_sweep_spec(document, spec);
    if (!error.empty()) {
        FUZZ_CHECK(spec.name == "untouched" && spec.space.empty(), "a refused spec changed the output");
        // The refusal goes back in a JSON reply: it must be text that JSON can hold.
        bool dumps = true;
        try {
            (void)json(error).dump();
        } catch (const json::exception&) {
            dumps = false;
        }
        FUZZ_CHECK(dumps, "a refusal that is not valid UTF-8");
        return 0;
    }
    check_spec(spec);

    // What the controller stores and a restarted one reads back.
    const json stored = to_json(spec);
    SweepSpec again;
    FUZZ_CHECK(parse_sweep_spec(json::parse(stored.dump()), again).empty(), "a stored spec does not parse back");
    FUZZ_CHECK(to_json(again) == stored, "a stored spec parses back as a different spec");

    check_suggestions(spec);

    if (spec.asha.enabled) {
        const std::vector<double> rungs =
            asha_rungs(spec.asha.min_resource, spec.asha.max_resource, spec.asha.reduction_factor);
        FUZZ_CHECK(rungs.size() >= 2 && rungs.size() <= 65, "ASHA rungs of an accepted spec out of count");
        FUZZ_CHECK(rungs.front() == spec.asha.min_resource && rungs.back() == spec.asha.max_resource,
                   "ASHA rungs that do not run from min_resource to max_resource");
        for (size_t i = 1; i < rungs.size(); ++i)
            FUZZ_CHECK(rungs[i - 1] < rungs[i], "ASHA rungs that do not rise");
    }
    return 0;
}
