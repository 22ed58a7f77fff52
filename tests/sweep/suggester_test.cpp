// Suggestions as a function of (spec, index, history): a grid visits every configuration once and then stops,
// random never repeats one and stops when a finite space is spent, TPE finds a quadratic's minimum and a good
// category more often than random on the same budget, and the same inputs always give the same configuration.
#include "suggester.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <set>
#include <string>
#include <vector>

using namespace traindeck::sweep;
using nlohmann::json;

namespace {

SweepSpec spec_of(const json& space, const std::string& method, uint64_t seed = 0, const std::string& goal = "max") {
    const json document = {{"base", {{"argv", {"train"}}}},
                           {"space", space},
                           {"method", method},
                           {"seed", seed},
                           {"objective", {{"metric", "score"}, {"goal", goal}}}};
    SweepSpec spec;
    const std::string error = parse_sweep_spec(document, spec);
    EXPECT_EQ(error, "") << document.dump();
    return spec;
}

std::string text(const Params& params) { return json(params).dump(); }

// Runs a sweep one trial at a time (each finished before the next is suggested), scoring each with `objective`.
std::vector<Observation> run(const SweepSpec& spec, int trials, const std::function<double(const Params&)>& objective) {
    std::vector<Observation> history;
    for (int i = 0; i < trials; ++i) {
        const std::optional<Params> params = suggest(spec, i, history);
        if (!params) {
            ADD_FAILURE() << "no suggestion for trial " << i;
            break;
        }
        history.push_back({*params, objective(*params)});
    }
    return history;
}

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const size_t n = values.size();
    return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

const json kSmallFiniteSpace = {{"colour", {{"choice", {"red", "green", "blue"}}}}, {"size", {{"int", {1, 4}}}}};

std::set<std::string> every_small_configuration() {
    std::set<std::string> all;
    for (const char* colour : {"red", "green", "blue"})
        for (int size = 1; size <= 4; ++size)
            all.insert(text({{"colour", colour}, {"size", size}}));
    return all;
}

} // namespace

TEST(Grid, EnumeratesEveryConfigurationOnceLastKeyFastest) {
    const json space = {
        {"a", {{"choice", {"x", "y", "z"}}}}, {"b", {{"int", {1, 4}}}}, {"c", {{"choice", {true, false}}}}};
    const SweepSpec spec = spec_of(space, "grid");
    ASSERT_EQ(grid_size(spec), 24u);
    std::set<std::string> seen;
    for (int i = 0; i < 24; ++i) {
        const std::optional<Params> params = suggest(spec, i, {});
        ASSERT_TRUE(params) << i;
        EXPECT_TRUE(seen.insert(text(*params)).second) << "configuration " << i << " came before";
    }
    std::set<std::string> product;
    for (const char* a : {"x", "y", "z"})
        for (int b = 1; b <= 4; ++b)
            for (bool c : {true, false})
                product.insert(text({{"a", a}, {"b", b}, {"c", c}}));
    EXPECT_EQ(seen, product);
    EXPECT_EQ(text(*suggest(spec, 0, {})), text({{"a", "x"}, {"b", 1}, {"c", true}}));
    EXPECT_EQ(text(*suggest(spec, 1, {})), text({{"a", "x"}, {"b", 1}, {"c", false}}));
    EXPECT_EQ(text(*suggest(spec, 2, {})), text({{"a", "x"}, {"b", 2}, {"c", true}}));
    EXPECT_EQ(text(*suggest(spec, 23, {})), text({{"a", "z"}, {"b", 4}, {"c", false}}));
    EXPECT_FALSE(suggest(spec, 24, {}));
    EXPECT_FALSE(suggest(spec, -1, {}));
    // The index alone decides: the history does not move a grid.
    EXPECT_EQ(text(*suggest(spec, 5, {{*suggest(spec, 5, {}), 1.0}})), text(*suggest(spec, 5, {})));
}

TEST(Random, NeverRepeatsAConfigurationUntilTheSpaceIsSpent) {
    for (const char* method : {"random", "tpe"}) {
        for (uint64_t seed : {0u, 1u, 2u}) {
            const SweepSpec spec = spec_of(kSmallFiniteSpace, method, seed);
            std::vector<Observation> history;
            std::set<std::string> seen;
            for (int i = 0; i < 12; ++i) {
                const std::optional<Params> params = suggest(spec, i, history);
                ASSERT_TRUE(params) << method << " seed " << seed << " trial " << i;
                EXPECT_TRUE(seen.insert(text(*params)).second)
                    << method << " seed " << seed << " repeated " << text(*params) << " at trial " << i;
                // Every third one still running: its configuration counts as tried all the same.
                history.push_back({*params, i % 3 == 2 ? NAN : static_cast<double>(i % 5)});
            }
            EXPECT_EQ(seen, every_small_configuration()) << method;
            EXPECT_FALSE(suggest(spec, 12, history)) << method << ": a 13th configuration of 12";
        }
    }
}

TEST(Random, TheSameSeedDrawsTheSameAndAnotherSeedOthers) {
    const json space = {{"lr", {{"loguniform", {1e-5, 1}}}}, {"dropout", {{"uniform", {0, 0.5}}}}};
    const auto draws = [&](uint64_t seed) {
        std::vector<std::string> out;
        std::vector<Observation> history;
        for (int i = 0; i < 10; ++i) {
            const Params params = *suggest(spec_of(space, "random", seed), i, history);
            out.push_back(text(params));
            history.push_back({params, 0.5});
        }
        return out;
    };
    const std::vector<std::string> first = draws(7);
    EXPECT_EQ(draws(7), first);
    const std::vector<std::string> other = draws(8);
    for (size_t i = 0; i < first.size(); ++i)
        EXPECT_NE(other[i], first[i]) << "trial " << i << " drew the same under seeds 7 and 8";
    EXPECT_EQ(std::set<std::string>(first.begin(), first.end()).size(), first.size());
}

TEST(Random, SamplesEachKindInsideItsRangeLogKindsInLogSpace) {
    const json space = {{"u", {{"uniform", {-1, 0.5}}}},
                        {"log", {{"loguniform", {1e-4, 1}}}},
                        {"q", {{"qloguniform", {1e-4, 1e-1, 1e-4}}}},
                        {"n", {{"int", {1, 4}}}},
                        {"c", {{"choice", {"a", "b", "c"}}}}};
    const SweepSpec spec = spec_of(space, "random", 3);
    const int draws = 4000;
    int log_below_middle = 0, q_below_middle = 0;
    std::map<int64_t, int> ints;
    std::map<std::string, int> choices;
    for (int i = 0; i < draws; ++i) {
        const Params p = *suggest(spec, i, {});
        const double u = p.at("u").get<double>(), log = p.at("log").get<double>(), q = p.at("q").get<double>();
        ASSERT_TRUE(u >= -1 && u <= 0.5) << u;
        ASSERT_TRUE(log >= 1e-4 && log <= 1) << log;
        ASSERT_TRUE(q >= 1e-4 && q <= 1e-1) << q;
        EXPECT_NEAR(q / 1e-4, std::round(q / 1e-4), 1e-6) << q << " is not a multiple of q";
        ASSERT_TRUE(p.at("n").is_number_integer()) << p.at("n");
        ++ints[p.at("n").get<int64_t>()];
        ++choices[p.at("c").get<std::string>()];
        log_below_middle += log < 1e-2; // the geometric middle: half the draws in log space, 1% on a linear axis
        q_below_middle += q < std::sqrt(1e-4 * 1e-1);
    }
    EXPECT_NEAR(log_below_middle / double(draws), 0.5, 0.04);
    EXPECT_NEAR(q_below_middle / double(draws), 0.5, 0.04);
    EXPECT_EQ(ints.size(), 4u); // 1 and 4 included, nothing outside
    for (const auto& [value, count] : ints) {
        EXPECT_TRUE(value >= 1 && value <= 4) << value;
        EXPECT_NEAR(count / double(draws), 0.25, 0.04) << value;
    }
    EXPECT_EQ(choices.size(), 3u);
    for (const auto& [value, count] : choices)
        EXPECT_NEAR(count / double(draws), 1 / 3.0, 0.04) << value;
}

// The same budget of 40 sequential trials, 10 of them TPE's random start, over 40 seeds: the median over seeds of
// the best distance to the minimum. Random's expected best distance on [-2, 2] is about 4 / (2 x 41) = 0.05. Over
// 25 disjoint blocks of 40 seeds (0-999) TPE's median was 2.8 to 8.7 times closer on the uniform axis and 2.2 to
// 8.3 times on the log one; the test asks for 1.5, so that it holds for any seeds and fails only if TPE stops
// learning.
TEST(Tpe, FindsAQuadraticsMinimumCloserThanRandom) {
    struct Case {
        const char* name;
        json space;
        std::function<double(double)> distance; // from the optimum, on the axis the space samples
    };
    const std::vector<Case> cases = {
        {"uniform [-2, 2], minimum at 0.3", {{"x", {{"uniform", {-2, 2}}}}}, [](double x) { return x - 0.3; }},
        {"loguniform [1e-5, 1], minimum at 0.003",
         {{"x", {{"loguniform", {1e-5, 1}}}}},
         [](double x) { return std::log10(x) - std::log10(0.003); }},
    };
    for (const Case& c : cases) {
        std::map<std::string, double> medians;
        for (const char* method : {"random", "tpe"}) {
            std::vector<double> best;
            for (uint64_t seed = 0; seed < 40; ++seed) {
                const auto objective = [&](const Params& p) {
                    const double d = c.distance(p.at("x").get<double>());
                    return d * d;
                };
                const std::vector<Observation> history = run(spec_of(c.space, method, seed, "min"), 40, objective);
                double lowest = INFINITY;
                for (const Observation& o : history)
                    lowest = std::min(lowest, o.objective);
                best.push_back(std::sqrt(lowest));
            }
            medians[method] = median(best);
        }
        std::printf("%s: median best distance over 40 seeds, random %.5f, tpe %.5f (%.1f times closer)\n", c.name,
                    medians["random"], medians["tpe"], medians["random"] / medians["tpe"]);
        EXPECT_LT(medians["tpe"] * 1.5, medians["random"]) << c.name;
    }
}

// Four optimisers, one of them good, and a learning rate that matters less: after its 10 random trials TPE should
// pick the good one far more often than random's one in four. Over 10 disjoint blocks of 10 seeds (0-99) TPE's
// share was 0.73 to 0.75, random's 0.20 to 0.28.
TEST(Tpe, PicksTheGoodCategoryMoreOftenAfterItsStart) {
    const json space = {{"optimizer", {{"choice", {"sgd", "adam", "rmsprop", "adagrad"}}}},
                        {"lr", {{"uniform", {0, 1}}}}};
    const auto loss = [](const Params& p) {
        const double lr = p.at("lr").get<double>();
        return (p.at("optimizer") == "adam" ? 0.0 : 1.0) + (lr - 0.5) * (lr - 0.5);
    };
    std::map<std::string, double> share;
    for (const char* method : {"random", "tpe"}) {
        int good = 0, after_start = 0;
        for (uint64_t seed = 0; seed < 10; ++seed) {
            const std::vector<Observation> history = run(spec_of(space, method, seed, "min"), 40, loss);
            for (size_t i = 10; i < history.size(); ++i, ++after_start)
                good += history[i].params.at("optimizer") == "adam";
        }
        share[method] = good / double(after_start);
    }
    std::printf("share of trials 10-39 on the good optimizer, over 10 seeds: random %.2f, tpe %.2f\n", share["random"],
                share["tpe"]);
    EXPECT_LT(share["random"], 0.35);
    EXPECT_GT(share["tpe"], 0.6);
}

TEST(Tpe, IgnoresTrialsWithoutAnObjectiveButNeverRepeatsThem) {
    const json space = {{"x", {{"uniform", {-2, 2}}}}, {"k", {{"choice", {1, 2, 3}}}}};
    const SweepSpec tpe = spec_of(space, "tpe", 5, "min");
    const std::vector<Observation> finished = run(tpe, 15, [](const Params& p) {
        const double x = p.at("x").get<double>();
        return x * x + p.at("k").get<double>();
    });
    // Running trials (NaN) in between: the estimators are fitted on the same 15, so the same candidate wins.
    std::vector<Observation> with_running = finished;
    for (int i = 0; i < 5; ++i)
        with_running.insert(with_running.begin() + 3L * i, {{{"x", -1.9 + 0.01 * i}, {"k", 3}}, NAN});
    for (int index : {15, 20, 21}) {
        const std::optional<Params> without = suggest(tpe, index, finished);
        ASSERT_TRUE(without);
        EXPECT_EQ(text(*suggest(tpe, index, with_running)), text(*without)) << index;
    }
    // Fewer than 10 with an objective, whatever the NaN ones: still the random start, draw for draw.
    std::vector<Observation> nine(finished.begin(), finished.begin() + 9);
    for (int i = 0; i < 20; ++i)
        nine.push_back({{{"x", 0.1 * i}, {"k", 1}}, NAN});
    const SweepSpec random = spec_of(space, "random", 5, "min");
    EXPECT_EQ(text(*suggest(tpe, 29, nine)), text(*suggest(random, 29, nine)));
    // A running trial's exact configuration is never suggested again, even when TPE would like it best: the only
    // configuration of a one-point space is taken, so there is none.
    const SweepSpec single = spec_of({{"k", {{"choice", {7}}}}}, "tpe");
    std::vector<Observation> taken(12, {{{"k", 7}}, 1.0});
    taken.push_back({{{"k", 7}}, NAN});
    EXPECT_FALSE(suggest(single, 13, taken));
}

TEST(Tpe, FollowsTheObjectivesDirection) {
    const json space = {{"x", {{"uniform", {-2, 2}}}}, {"k", {{"choice", {"a", "b", "c"}}}}};
    const SweepSpec minimize = spec_of(space, "tpe", 11, "min");
    const SweepSpec maximize = spec_of(space, "tpe", 11, "max");
    const std::vector<Observation> history = run(minimize, 20, [](const Params& p) {
        return std::abs(p.at("x").get<double>() - 1) + (p.at("k") == "b" ? 0 : 1);
    });
    std::vector<Observation> negated = history;
    for (Observation& o : negated)
        o.objective = -o.objective;
    for (int index : {20, 21, 22}) {
        // Maximising -f is minimising f: the same split, the same suggestion...
        EXPECT_EQ(text(*suggest(maximize, index, negated)), text(*suggest(minimize, index, history))) << index;
        // ...and maximising f is something else.
        EXPECT_NE(text(*suggest(maximize, index, history)), text(*suggest(minimize, index, history))) << index;
    }
}

TEST(Suggest, TheSameInputsGiveTheSameConfiguration) {
    const json space = {{"lr", {{"loguniform", {1e-4, 0.3}}}},
                        {"layers", {{"int", {1, 4}}}},
                        {"batch", {{"choice", {64, 128, 256}}}},
                        {"lr2", {{"qloguniform", {1e-4, 1e-1, 1e-4}}}}};
    for (const char* method : {"random", "tpe"}) {
        const SweepSpec spec = spec_of(space, method, 42);
        const std::vector<Observation> history =
            run(spec, 25, [](const Params& p) { return p.at("lr").get<double>() * p.at("layers").get<double>(); });
        for (int index : {0, 9, 25, 26}) {
            const std::optional<Params> first = suggest(spec, index, history);
            ASSERT_TRUE(first);
            EXPECT_EQ(text(*suggest(spec, index, history)), text(*first)) << method << " " << index;
        }
        EXPECT_NE(text(*suggest(spec, 25, history)), text(*suggest(spec, 26, history))) << method;
        // The run itself is a function of the seed: run it again, trial for trial.
        const std::vector<Observation> again =
            run(spec, 25, [](const Params& p) { return p.at("lr").get<double>() * p.at("layers").get<double>(); });
        for (size_t i = 0; i < history.size(); ++i)
            EXPECT_EQ(text(again[i].params), text(history[i].params)) << method << " trial " << i;
    }
}
