// Sweep specs as the README gives them: what is refused and with which words (each naming its key), what a parsed
// spec holds and its defaults, that to_json parses back to the same spec, where apply_params puts a trial's
// parameters, and a grid's size.
#include "sweepspec.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

using namespace traindeck::sweep;
using nlohmann::json;

namespace {

json good_spec() {
    return json::parse(R"({
        "name": "mlp-lr",
        "base": {"builtin": {"model": "mlp", "hidden": [256, 128], "optimizer": {"type": "sgd", "lr": 0.05},
                             "batch_size": 128},
                 "resources": {"cpus": 2}},
        "space": {
            "optimizer.lr": {"loguniform": [1e-4, 0.3]},
            "hidden[0]": {"choice": [64, 128, 256, 512]},
            "weight_decay": {"loguniform": [1e-6, 1e-2]},
            "batch_size": {"choice": [64, 128, 256]},
            "dropout": {"uniform": [0, 0.5]},
            "layers": {"int": [1, 4]},
            "lr2": {"qloguniform": [1e-4, 1e-1, 1e-4]}
        },
        "method": "random",
        "objective": {"metric": "val/loss", "goal": "min"},
        "early_stopping": {"method": "asha", "resource": "steps", "min_resource": 100, "max_resource": 2700,
                           "reduction_factor": 3},
        "divergence": {"metric": "train/loss", "factor": 4},
        "max_trials": 40, "max_concurrent": 3, "trials_per_gpu": 2, "seed": 18446744073709551615,
        "budget": {"money": 5.0, "gpu_hours": 2.5}
    })");
}

json minimal_spec() {
    return {{"base", {{"argv", {"python3", "train.py"}}}}, {"space", {{"x", {{"uniform", {0, 1}}}}}}};
}

// The good spec with one top-level key replaced (or removed, for null).
json with(const std::string& key, const json& value) {
    json spec = good_spec();
    if (value.is_null())
        spec.erase(key);
    else
        spec[key] = value;
    return spec;
}

// The good spec with one dimension of its space replaced.
json with_dimension(const std::string& key, const json& dimension) {
    json spec = good_spec();
    spec["space"][key] = dimension;
    return spec;
}

json with_stopping(const json& early_stopping) { return with("early_stopping", early_stopping); }

SweepSpec parsed(const json& spec) {
    SweepSpec out;
    const std::string error = parse_sweep_spec(spec, out);
    EXPECT_EQ(error, "") << spec.dump();
    return out;
}

void expect_same(const SweepSpec& a, const SweepSpec& b) {
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.base, b.base);
    ASSERT_EQ(a.space.size(), b.space.size());
    for (size_t i = 0; i < a.space.size(); ++i) {
        EXPECT_EQ(a.space[i].key, b.space[i].key);
        EXPECT_EQ(a.space[i].kind, b.space[i].kind) << a.space[i].key;
        EXPECT_EQ(a.space[i].low, b.space[i].low) << a.space[i].key;
        EXPECT_EQ(a.space[i].high, b.space[i].high) << a.space[i].key;
        EXPECT_EQ(a.space[i].q, b.space[i].q) << a.space[i].key;
        EXPECT_EQ(a.space[i].values, b.space[i].values) << a.space[i].key;
    }
    EXPECT_EQ(a.method, b.method);
    EXPECT_EQ(a.objective.metric, b.objective.metric);
    EXPECT_EQ(a.objective.maximize, b.objective.maximize);
    EXPECT_EQ(a.asha.enabled, b.asha.enabled);
    EXPECT_EQ(a.asha.epochs, b.asha.epochs);
    EXPECT_EQ(a.asha.min_resource, b.asha.min_resource);
    EXPECT_EQ(a.asha.max_resource, b.asha.max_resource);
    EXPECT_EQ(a.asha.reduction_factor, b.asha.reduction_factor);
    EXPECT_EQ(a.divergence.metric, b.divergence.metric);
    EXPECT_EQ(a.divergence.factor, b.divergence.factor);
    EXPECT_EQ(a.max_trials, b.max_trials);
    EXPECT_EQ(a.max_concurrent, b.max_concurrent);
    EXPECT_EQ(a.trials_per_gpu, b.trials_per_gpu);
    EXPECT_EQ(a.seed, b.seed);
    EXPECT_EQ(a.budget, b.budget);
    EXPECT_EQ(a.budget_gpu_hours, b.budget_gpu_hours);
}

std::string refusal_of(const json& spec) {
    SweepSpec out;
    return parse_sweep_spec(spec, out);
}

json nested(int levels) {
    json value = 1;
    for (int i = 0; i < levels; ++i)
        value = json::array({value});
    return value;
}

struct Refusal {
    const char* what;
    json spec;
    const char* fragment;
};

} // namespace

TEST(SweepSpec, RefusesBadSpecsNamingTheKey) {
    const std::vector<Refusal> refusals = {
        {"not an object", json::array({1}), "a sweep spec must be a JSON object"},
        {"unknown top-level key", with("colour", "red"), "colour: unknown key (known: base, budget, divergence,"},
        {"missing base", with("base", nullptr), "base: missing"},
        {"base without a job", with("base", {{"cwd", "/tmp"}}), "base: needs \"builtin\""},
        {"base with both", with("base", {{"builtin", json::object()}, {"argv", {"ls"}}}),
         "base: has both \"builtin\" and \"argv\""},
        {"empty argv", with("base", {{"argv", json::array()}}), "base.argv: must be a non-empty array of strings"},
        {"argv not strings", with("base", {{"argv", {"python3", 2}}}), "base.argv[1]: must be a string (it is 2)"},
        {"builtin not an object", with("base", {{"builtin", "mlp"}}), "base.builtin: must be an object"},
        {"missing space", with("space", nullptr), "space: missing"},
        {"empty space", with("space", json::object()), "space: is empty; name at least one parameter"},
        {"space not an object", with("space", json::array()), "space: must be an object of dimensions"},
        {"dimension not an object", with_dimension("dropout", {0, 1}),
         "space.dropout: must be an object with one kind"},
        {"dimension without a kind", with_dimension("dropout", json::object()), "space.dropout: names no kind"},
        {"dimension with two kinds", with_dimension("dropout", {{"uniform", {0, 1}}, {"loguniform", {1, 2}}}),
         "space.dropout: names 2 kinds (loguniform, uniform); give exactly one"},
        {"unknown kind", with_dimension("dropout", {{"normal", {0, 1}}}),
         "space.dropout: unknown kind \"normal\" (known: choice, int, loguniform, qloguniform, uniform)"},
        {"min > max", with_dimension("optimizer.lr", {{"loguniform", {0.3, 0.1}}}),
         "space.optimizer.lr.loguniform: low (0.3) must be below high (0.1)"},
        {"min == max", with_dimension("dropout", {{"uniform", {0.5, 0.5}}}),
         "space.dropout.uniform: low (0.5) must be below high (0.5)"},
        {"int min > max", with_dimension("layers", {{"int", {4, 1}}}),
         "space.layers.int: low (4) must be below high (1)"},
        {"loguniform low 0", with_dimension("optimizer.lr", {{"loguniform", {0, 0.3}}}),
         "space.optimizer.lr.loguniform: low (0) must be above 0"},
        {"qloguniform low below 0", with_dimension("lr2", {{"qloguniform", {-1, 1, 0.1}}}),
         "space.lr2.qloguniform: low (-1) must be above 0"},
        {"q of 0", with_dimension("lr2", {{"qloguniform", {1e-4, 0.1, 0}}}),
         "space.lr2.qloguniform: q (0) must be above 0"},
        {"qloguniform without q", with_dimension("lr2", {{"qloguniform", {1e-4, 0.1}}}),
         "space.lr2.qloguniform: must be [low, high, q]"},
        {"uniform with three numbers", with_dimension("dropout", {{"uniform", {0, 0.5, 1}}}),
         "space.dropout.uniform: must be [low, high]"},
        {"int low not whole", with_dimension("layers", {{"int", {1.5, 4}}}),
         "space.layers.int: low must be a whole number (it is 1.5)"},
        {"int high a string", with_dimension("layers", {{"int", {1, "4"}}}),
         "space.layers.int: high must be a whole number (it is \"4\")"},
        {"int bound past 2^53", with_dimension("layers", {{"int", {0, 1e300}}}),
         "space.layers.int: high must be from -9007199254740992 to 9007199254740992"},
        {"range wider than a double", with_dimension("dropout", {{"uniform", {-1e308, 1e308}}}),
         "space.dropout.uniform: the range from low (-1e+308) to high (1e+308) is wider than a double holds"},
        {"uniform bound a string", with_dimension("dropout", {{"uniform", {0, "a"}}}),
         "space.dropout.uniform: high must be a number (it is \"a\")"},
        {"empty choice", with_dimension("batch_size", {{"choice", json::array()}}),
         "space.batch_size.choice: must be a non-empty array"},
        {"choice given twice", with_dimension("batch_size", {{"choice", {64, 128, 64}}}),
         "space.batch_size.choice: 64 is given twice (elements 0 and 2)"},
        {"empty path segment", with_dimension("optimizer..lr", {{"uniform", {0, 1}}}),
         "space.optimizer..lr: empty name at character 11"},
        {"path starting with a dot", with_dimension(".lr", {{"uniform", {0, 1}}}),
         "space..lr: empty name at character 1"},
        {"path ending with a dot", with_dimension("lr.", {{"uniform", {0, 1}}}),
         "space.lr.: empty name at character 4"},
        {"index not a number", with_dimension("hidden[x]", {{"uniform", {0, 1}}}),
         "space.hidden[x]: a [ at character 7 must hold an index like [0]"},
        {"index not closed", with_dimension("hidden[1", {{"uniform", {0, 1}}}),
         "space.hidden[1: a [ at character 7 must hold an index"},
        {"index with a leading zero", with_dimension("hidden[01]", {{"uniform", {0, 1}}}),
         "space.hidden[01]: index [01] has a leading zero"},
        {"text after an index", with_dimension("hidden[0]x", {{"uniform", {0, 1}}}),
         "space.hidden[0]x: character 10 (\"x\") must be '.', '[' or the end"},
        {"space in a name", with_dimension("drop out", {{"uniform", {0, 1}}}),
         "space.drop out: character 5 (\" \") cannot be part of a name"},
        {"a key inside another", with_dimension("optimizer", {{"choice", {"sgd", "adam"}}}),
         "space.optimizer.lr: lies inside space.optimizer, which is swept itself"},
        {"an element inside its array", with_dimension("hidden", {{"choice", {json::array({1})}}}),
         "space.hidden[0]: lies inside space.hidden, which is swept itself"},
        {"index past the base's array", with_dimension("hidden[5]", {{"choice", {1, 2}}}),
         "space.hidden[5]: \"hidden\" has 2 elements, so [5] is past its end"},
        {"path through a string", with_dimension("optimizer.type.name", {{"choice", {1, 2}}}),
         "space.optimizer.type.name: \"optimizer.type\" is \"sgd\", not an object"},
        {"unknown method", with("method", "bayes"), "method: unknown method \"bayes\" (known: grid, random, tpe)"},
        {"grid with a continuous dimension", with("method", "grid"),
         "method: a grid takes only choice and int dimensions, and space.dropout is uniform"},
        {"objective goal", with("objective", {{"goal", "maximize"}}),
         "objective.goal: must be \"max\" or \"min\" (it is \"maximize\")"},
        {"objective unknown key", with("objective", {{"direction", "max"}}),
         "objective.direction: unknown key (known: goal, metric)"},
        {"objective empty metric", with("objective", {{"metric", ""}}), "objective.metric: must be a non-empty string"},
        {"early stopping unknown method", with_stopping({{"method", "hyperband"}}),
         "early_stopping.method: unknown method \"hyperband\" (known: asha, none)"},
        {"early stopping without a method", with_stopping({{"min_resource", 1}}),
         "early_stopping.method: missing; give \"asha\" or \"none\""},
        {"early stopping none with more", with_stopping({{"method", "none"}, {"min_resource", 1}}),
         "early_stopping.min_resource: unknown key (known: method) (method \"none\" takes no other key)"},
        {"asha min >= max", with_stopping({{"method", "asha"}, {"min_resource", 9}, {"max_resource", 9}}),
         "early_stopping.min_resource: min_resource (9) must be below max_resource (9)"},
        {"asha min a hair below max",
         with_stopping({{"method", "asha"}, {"min_resource", 9}, {"max_resource", 9.000000001}}),
         "early_stopping.min_resource: min_resource (9) must be below max_resource (9.000000001)"},
        {"asha min above max", with_stopping({{"method", "asha"}, {"min_resource", 10}}),
         "early_stopping.min_resource: min_resource (10) must be below max_resource (9)"},
        {"asha min 0", with_stopping({{"method", "asha"}, {"min_resource", 0}}),
         "early_stopping.min_resource: must be above 0 (it is 0)"},
        {"asha reduction factor 1", with_stopping({{"method", "asha"}, {"reduction_factor", 1}}),
         "early_stopping.reduction_factor: must be above 1 (it is 1)"},
        {"asha resource", with_stopping({{"method", "asha"}, {"resource", "hours"}}),
         "early_stopping.resource: must be \"epochs\" or \"steps\" (it is \"hours\")"},
        {"asha unknown key", with_stopping({{"method", "asha"}, {"eta", 3}}), "early_stopping.eta: unknown key"},
        {"asha too many rungs",
         with_stopping({{"method", "asha"}, {"min_resource", 1e-9}, {"max_resource", 1e9}, {"reduction_factor", 1.01}}),
         "reaches max_resource 1e+09 only after more than 64 rungs"},
        {"divergence factor", with("divergence", {{"factor", 1}}), "divergence.factor: must be above 1 (it is 1)"},
        {"divergence unknown key", with("divergence", {{"limit", 3}}), "divergence.limit: unknown key"},
        {"max_trials 0", with("max_trials", 0), "max_trials: must be from 1 to 2147483647 (it is 0)"},
        {"max_trials not whole", with("max_trials", 2.5), "max_trials: must be a whole number (it is 2.5)"},
        {"max_trials past int", with("max_trials", 4294967297), "max_trials: must be from 1 to 2147483647"},
        {"max_concurrent 0", with("max_concurrent", 0), "max_concurrent: must be from 1 to 2147483647 (it is 0)"},
        {"max_concurrent a string", with("max_concurrent", "2"),
         "max_concurrent: must be a whole number (it is \"2\")"},
        {"trials_per_gpu 0", with("trials_per_gpu", 0), "trials_per_gpu: must be from 1"},
        {"trials_per_gpu 9", with("trials_per_gpu", 9), "trials_per_gpu: at most 8 trials share a GPU, not 9"},
        {"negative seed", with("seed", -1), "seed: must be a whole number from 0 to 2^64 - 1 (it is -1)"},
        {"fractional seed", with("seed", 0.5), "seed: must be a whole number"},
        {"negative budget", with("budget", {{"money", -1}}), "budget.money: must be 0 (no cap) or more (it is -1)"},
        {"budget unknown key", with("budget", {{"dollars", 3}}),
         "budget.dollars: unknown key (known: gpu_hours, money)"},
        {"budget a number", with("budget", 5), "budget: must be an object"},
        {"empty name", with("name", ""), "name: must be a non-empty string (it is \"\"); leave it out"},
        {"deep nesting", with("base", {{"builtin", {{"deep", nested(70)}}}}), "nests deeper than 64 levels"},
    };
    for (const Refusal& refusal : refusals) {
        SweepSpec out;
        out.name = "untouched";
        const std::string error = parse_sweep_spec(refusal.spec, out);
        EXPECT_NE(error.find(refusal.fragment), std::string::npos)
            << refusal.what << ": expected \"" << refusal.fragment << "\" in \"" << error << "\"";
        EXPECT_EQ(out.name, "untouched") << refusal.what << ": a refused spec changed the output";
    }
}

TEST(SweepSpec, ARefusalCutShortIsStillValidUtf8) {
    // A long value is shown cut; cut inside a two-byte character, the message could not go back in a JSON reply.
    std::string method = "a"; // so that the cut at 57 bytes falls inside a character
    for (int i = 0; i < 40; ++i)
        method += "\u00e9";
    const std::string error = refusal_of(with("method", method));
    EXPECT_NE(error.find("method: unknown method \"a\u00e9\u00e9"), std::string::npos) << error;
    EXPECT_NE(error.find("..."), std::string::npos) << error;
    EXPECT_NO_THROW((void)json(error).dump()) << error;
}

TEST(SweepSpec, ReadsEveryField) {
    const SweepSpec spec = parsed(good_spec());
    EXPECT_EQ(spec.name, "mlp-lr");
    EXPECT_EQ(spec.base["resources"]["cpus"], 2);
    EXPECT_EQ(spec.base["builtin"]["model"], "mlp");
    // In key order, whatever order the file has.
    std::vector<std::string> keys;
    for (const Param& param : spec.space)
        keys.push_back(param.key);
    EXPECT_EQ(keys, (std::vector<std::string>{"batch_size", "dropout", "hidden[0]", "layers", "lr2", "optimizer.lr",
                                              "weight_decay"}));
    EXPECT_EQ(spec.space[0].kind, Param::Kind::choice);
    EXPECT_EQ(spec.space[0].values, (std::vector<json>{64, 128, 256}));
    EXPECT_EQ(spec.space[1].kind, Param::Kind::uniform);
    EXPECT_EQ(spec.space[1].high, 0.5);
    EXPECT_EQ(spec.space[3].kind, Param::Kind::integer);
    EXPECT_EQ(spec.space[3].low, 1);
    EXPECT_EQ(spec.space[3].high, 4);
    EXPECT_EQ(spec.space[4].kind, Param::Kind::qloguniform);
    EXPECT_EQ(spec.space[4].q, 1e-4);
    EXPECT_EQ(spec.space[5].kind, Param::Kind::loguniform);
    EXPECT_EQ(spec.space[5].low, 1e-4);
    EXPECT_EQ(spec.space[5].high, 0.3);
    EXPECT_EQ(spec.method, Method::random);
    EXPECT_EQ(spec.objective.metric, "val/loss");
    EXPECT_FALSE(spec.objective.maximize);
    EXPECT_TRUE(spec.asha.enabled);
    EXPECT_FALSE(spec.asha.epochs);
    EXPECT_EQ(spec.asha.min_resource, 100);
    EXPECT_EQ(spec.asha.max_resource, 2700);
    EXPECT_EQ(spec.asha.reduction_factor, 3);
    EXPECT_EQ(spec.divergence.metric, "train/loss");
    EXPECT_EQ(spec.divergence.factor, 4);
    EXPECT_EQ(spec.max_trials, 40);
    EXPECT_EQ(spec.max_concurrent, 3);
    EXPECT_EQ(spec.trials_per_gpu, 2);
    EXPECT_EQ(spec.seed, std::numeric_limits<uint64_t>::max());
    EXPECT_EQ(spec.budget, 5.0);
    EXPECT_EQ(spec.budget_gpu_hours, 2.5);
}

TEST(SweepSpec, LeftOutKeysTakeTheirDefaults) {
    const SweepSpec spec = parsed(minimal_spec());
    EXPECT_EQ(spec.name, "sweep");
    EXPECT_EQ(spec.method, Method::tpe);
    EXPECT_EQ(spec.objective.metric, "val/accuracy");
    EXPECT_TRUE(spec.objective.maximize);
    EXPECT_FALSE(spec.asha.enabled);
    EXPECT_EQ(spec.divergence.metric, "loss");
    EXPECT_EQ(spec.divergence.factor, 10);
    EXPECT_EQ(spec.max_trials, 20);
    EXPECT_EQ(spec.max_concurrent, 2);
    EXPECT_EQ(spec.trials_per_gpu, 1);
    EXPECT_EQ(spec.seed, 0u);
    EXPECT_EQ(spec.budget, 0);
    EXPECT_EQ(spec.budget_gpu_hours, 0);

    json asha = minimal_spec();
    asha["early_stopping"] = {{"method", "asha"}};
    const SweepSpec with_asha = parsed(asha);
    EXPECT_TRUE(with_asha.asha.enabled);
    EXPECT_TRUE(with_asha.asha.epochs);
    EXPECT_EQ(with_asha.asha.min_resource, 1);
    EXPECT_EQ(with_asha.asha.max_resource, 9);
    EXPECT_EQ(with_asha.asha.reduction_factor, 3);
}

TEST(SweepSpec, ARegressionWatchesItsLossAndAGoallessMetricFollowsItsName) {
    json spec = {
        {"base", {{"builtin", {{"task", "regression"}, {"data", {{"format", "csv"}, {"train_csv", "t.csv"}}}}}}},
        {"space", {{"optimizer.lr", {{"loguniform", {1e-4, 1e-1}}}}}}};
    const SweepSpec regression = parsed(spec);
    EXPECT_EQ(regression.objective.metric, "val/loss");
    EXPECT_FALSE(regression.objective.maximize);
    spec["objective"] = {{"metric", "val/r2"}};
    EXPECT_TRUE(parsed(spec).objective.maximize);
    spec["objective"] = {{"metric", "val/rmse"}};
    EXPECT_FALSE(parsed(spec).objective.maximize);
    spec["objective"] = {{"metric", "val/accuracy"}, {"goal", "max"}};
    SweepSpec refused;
    EXPECT_NE(parse_sweep_spec(spec, refused).find("a regression (\"task\": \"regression\") reports no accuracy"),
              std::string::npos);
    // Any sweep: a metric named as an error or loss, without a goal, is minimised.
    json script = minimal_spec();
    script["objective"] = {{"metric", "val_loss"}};
    EXPECT_FALSE(parsed(script).objective.maximize);
    script["objective"] = {{"metric", "f1"}};
    EXPECT_TRUE(parsed(script).objective.maximize);
}

TEST(SweepSpec, WholeNumbersMayBeWrittenAsFloats) {
    json spec = minimal_spec();
    spec["max_trials"] = 40.0;
    spec["seed"] = 1e3;
    spec["space"]["layers"] = {{"int", {1.0, 4e0}}};
    const SweepSpec out = parsed(spec);
    EXPECT_EQ(out.max_trials, 40);
    EXPECT_EQ(out.seed, 1000u);
    EXPECT_EQ(to_json(out)["space"]["layers"]["int"], json::parse("[1, 4]"));
    EXPECT_TRUE(to_json(out)["space"]["layers"]["int"][0].is_number_integer());
}

TEST(SweepSpec, ToJsonParsesBackToTheSameSpec) {
    json grid = good_spec();
    grid["method"] = "grid";
    grid["space"] = {{"hidden[1]", {{"choice", {"a", true, 3, json::object({{"k", 1}}), nullptr}}}},
                     {"layers", {{"int", {-3, 4}}}}};
    grid.erase("budget");
    grid["early_stopping"] = {{"method", "none"}};
    for (const json& original : {good_spec(), minimal_spec(), grid}) {
        const SweepSpec first = parsed(original);
        const json written = to_json(first);
        // Through text too, as the controller stores it.
        const SweepSpec second = parsed(json::parse(written.dump()));
        expect_same(first, second);
        EXPECT_EQ(to_json(second), written);
    }
    // The cap only where one is set.
    EXPECT_FALSE(to_json(parsed(minimal_spec())).contains("budget"));
    EXPECT_EQ(to_json(parsed(good_spec()))["budget"], json::parse(R"({"money": 5.0, "gpu_hours": 2.5})"));
}

TEST(ApplyParams, SetsNestedKeysCreatingObjectsOnTheWay) {
    json builtin = json::parse(R"({"model": "mlp", "hidden": [256, 128], "optimizer": {"type": "sgd", "lr": 0.05}})");
    const Params params = {{"optimizer.lr", 0.01},
                           {"optimizer.schedule.warmup", 5},
                           {"hidden[1]", 64},
                           {"dropout", 0.2},
                           {"augment.flip", json::object({{"p", 0.5}})}};
    ASSERT_EQ(apply_params(builtin, params), "");
    EXPECT_EQ(builtin, json::parse(R"({"model": "mlp", "hidden": [256, 64], "dropout": 0.2,
                                       "augment": {"flip": {"p": 0.5}},
                                       "optimizer": {"type": "sgd", "lr": 0.01, "schedule": {"warmup": 5}}})"));
}

TEST(ApplyParams, IndexesIntoArraysOfObjectsAndArrays) {
    json builtin = json::parse(R"({"layers": [{"width": 1}, {"width": 2}], "grid": [[1, 2], [3, 4]]})");
    ASSERT_EQ(apply_params(builtin, {{"layers[1].width", 32}, {"layers[0].act", "relu"}, {"grid[1][0]", 9}}), "");
    EXPECT_EQ(builtin, json::parse(R"({"layers": [{"width": 1, "act": "relu"}, {"width": 32}],
                                       "grid": [[1, 2], [9, 4]]})"));
    json empty;
    ASSERT_EQ(apply_params(empty, {{"optimizer.lr", 0.1}}), ""); // a null spec is an empty object
    EXPECT_EQ(empty, json::parse(R"({"optimizer": {"lr": 0.1}})"));
}

TEST(ApplyParams, RefusesPathsThatDoNotFitAndChangesNothingThen) {
    const json original = json::parse(R"({"hidden": [256, 128], "optimizer": {"type": "sgd"}, "layers": {"n": 2}})");
    const std::vector<std::pair<Params, std::string>> refusals = {
        {{{"hidden[2]", 1}}, "hidden[2]: \"hidden\" has 2 elements, so [2] is past its end"},
        {{{"layers[0]", 1}}, "layers[0]: \"layers\" is {\"n\":2}, not an array; [0] indexes an existing array"},
        {{{"widths[0]", 1}}, "widths[0]: \"widths\" is not in the spec, not an array"},
        {{{"optimizer.type.name", 1}}, "optimizer.type.name: \"optimizer.type\" is \"sgd\", not an object"},
        {{{"hidden.width", 1}}, "hidden.width: \"hidden\" is [256,128], not an object"},
        {{{"optimizer..lr", 1}}, "optimizer..lr: empty name at character 11"},
        // "dropout" sorts before "hidden[9]": set first, and undone with the rest.
        {{{"dropout", 0.5}, {"hidden[9]", 1}}, "hidden[9]: \"hidden\" has 2 elements"},
    };
    for (const auto& [params, fragment] : refusals) {
        json builtin = original;
        const std::string error = apply_params(builtin, params);
        EXPECT_NE(error.find(fragment), std::string::npos) << "expected \"" << fragment << "\" in \"" << error << "\"";
        EXPECT_EQ(builtin, original) << fragment;
    }
    json not_an_object = json::array();
    EXPECT_NE(apply_params(not_an_object, {{"a", 1}}).find("the built-in spec must be a JSON object"),
              std::string::npos);
}

TEST(GridSize, IsTheProductOfChoicesAndIntRanges) {
    json spec = minimal_spec();
    spec["method"] = "grid";
    spec["space"] = {
        {"a", {{"choice", {1, 2, 3, 4}}}}, {"b", {{"choice", {"x", "y", "z"}}}}, {"c", {{"int", {-1, 2}}}}};
    EXPECT_EQ(grid_size(parsed(spec)), 48u);

    spec["method"] = "random";
    spec["space"]["d"] = {{"uniform", {0, 1}}};
    EXPECT_EQ(grid_size(parsed(spec)), 0u); // a continuous dimension: unbounded
    spec["space"]["d"] = {{"qloguniform", {1, 4, 1}}};
    EXPECT_EQ(grid_size(parsed(spec)), 0u); // quantised, but not a grid's

    // (2^53 + 1)^2 is past 2^64: it saturates instead of wrapping to a small number.
    spec["method"] = "grid";
    spec["space"] = {{"a", {{"int", {0, 9007199254740992.0}}}}, {"b", {{"int", {0, 9007199254740992.0}}}}};
    EXPECT_EQ(grid_size(parsed(spec)), std::numeric_limits<uint64_t>::max());
    spec["space"] = {{"a", {{"int", {0, 9007199254740992.0}}}}};
    EXPECT_EQ(grid_size(parsed(spec)), 9007199254740993u);
}
