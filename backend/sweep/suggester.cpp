// A sweep's next configuration: grid in mixed radix, random without replacement, and TPE (Bergstra et al. 2011,
// "Algorithms for Hyper-Parameter Optimization", with Optuna's univariate defaults).
//
// Determinism: every random number of a call comes from one std::mt19937_64 seeded with splitmix64 of (spec.seed,
// index), and is turned into doubles, integers and normals here rather than by <random>'s distributions, whose
// algorithms each standard library picks for itself: the same spec, index and history suggest the same
// configuration with any standard library (over the same libm, for TPE's exp, log and erfc), and a restarted
// controller suggests what it would have.
//
// Without replacement: "the same configuration" is the same value at every key, numbers compared by value (64 and
// 64.0 are one). Random re-draws a configuration that is in the history, up to kRandomDraws times; a finite space
// (choices and int ranges only) of at most kEnumerable configurations is then listed, and one of those not yet
// tried is picked, so it runs to the last configuration and then says nullopt. A larger finite space, or one with
// a continuous dimension, gives up (nullopt) after those draws; with a continuous dimension that means a
// qloguniform dimension of a few steps, tried at each of them.
//
// TPE, with Optuna 3's univariate defaults (TPESampler()):
//  - the first kStartupTrials (10) trials with an objective are random; trials whose objective is NaN (running,
//    or never reported) count neither there nor below, but their configurations are never suggested again;
//  - the trials with an objective are ranked best first (the spec's direction; ties by history order) and the
//    first min(ceil(0.1 n), 25) are "below" (good), the rest "above";
//  - per dimension, independently, a Parzen estimator of each group: numbers on their sampling axis (log for
//    loguniform and qloguniform, the int range widened by half a step each side) as a mixture of truncated
//    Gaussians, one at each observation plus a prior one at the middle with sigma the whole range; each
//    observation's sigma is the larger distance to its neighbours (the outermost ones: to their one neighbour),
//    clipped to [range / min(100, kernels + 1), range] (Optuna's "magic clip"); choices as a mixture of smoothed
//    one-hot histograms with a uniform prior kernel; kernel weights 1, except that with 25 or more observations the
//    older ones ramp down linearly from 1/n (Optuna's default_weights), and the prior weighs 1;
//  - kCandidates (24) configurations drawn from the good estimators; the one with the largest sum over dimensions
//    of log l(x) - log g(x) wins, skipping those already in the history; when every candidate was, kCandidateRounds
//    draws of 24 in all, then random as above. Numbers are scored at the value the trial gets, after rounding to
//    an int or a multiple of q, by their density there (where Optuna takes the mass of the value's bin: for
//    bins narrow against the kernels, the same ranking).
#include "suggester.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <limits>
#include <numbers>
#include <numeric>
#include <random>
#include <string>
#include <unordered_set>

namespace traindeck::sweep {

using nlohmann::json;

namespace {

constexpr int kRandomDraws = 256;
constexpr uint64_t kEnumerable = uint64_t{1} << 16;
constexpr size_t kStartupTrials = 10;
constexpr int kCandidates = 24;
constexpr int kCandidateRounds = 8;
constexpr double kPriorWeight = 1.0;

uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

// The random numbers of one suggestion.
class Draw {
public:
    Draw(uint64_t seed, int index) : engine_(splitmix64(splitmix64(seed) + static_cast<uint64_t>(index))) {}

    double unit() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; } // [0, 1)

    uint64_t below(uint64_t n) { // [0, n), without modulo bias
        const uint64_t threshold = (0 - n) % n;
        while (true)
            if (const uint64_t x = engine_(); x >= threshold)
                return x % n;
    }

    double normal() { // Box-Muller; the second of the pair is dropped so that every call takes two draws
        const double u = 1.0 - unit(); // (0, 1]: log(0) never
        const double v = unit();
        return std::sqrt(-2 * std::log(u)) * std::cos(2 * std::numbers::pi * v);
    }

private:
    std::mt19937_64 engine_;
};

// A value written so that two values have the same text exactly when they are the same configuration value:
// numbers by value (an integral float as the integer), strings length-prefixed (no escaping to get wrong).
void append_canonical(const json& value, std::string& out) {
    switch (value.type()) {
    case json::value_t::number_integer:
        out += 'n' + std::to_string(value.get<int64_t>());
        return;
    case json::value_t::number_unsigned:
        out += 'n' + std::to_string(value.get<uint64_t>());
        return;
    case json::value_t::number_float: {
        const double number = value.get<double>();
        if (std::floor(number) == number && std::fabs(number) < 9.2e18) {
            out += 'n' + std::to_string(static_cast<int64_t>(number));
        } else {
            char text[32];
            std::snprintf(text, sizeof text, "%.17g", number);
            out += 'n';
            out += text;
        }
        return;
    }
    case json::value_t::string: {
        const auto& text = value.get_ref<const std::string&>();
        out += 's' + std::to_string(text.size()) + ':' + text;
        return;
    }
    case json::value_t::boolean:
        out += value.get<bool>() ? "b1" : "b0";
        return;
    case json::value_t::array:
        out += '[';
        for (const json& element : value) {
            append_canonical(element, out);
            out += ',';
        }
        out += ']';
        return;
    case json::value_t::object:
        out += '{';
        for (const auto& item : value.items()) {
            out += 's' + std::to_string(item.key().size()) + ':' + item.key() + '=';
            append_canonical(item.value(), out);
            out += ',';
        }
        out += '}';
        return;
    case json::value_t::null:
    case json::value_t::binary:
    case json::value_t::discarded:
        out += value.dump(); // null; the other two never come out of a parse
        return;
    }
}

std::string config_key(const Params& params) {
    std::string key;
    for (const auto& [name, value] : params) {
        key += 's' + std::to_string(name.size()) + ':' + name + '=';
        append_canonical(value, key);
        key += ';';
    }
    return key;
}

using Used = std::unordered_set<std::string>;

Used used_configurations(const std::vector<Observation>& history) {
    Used used;
    for (const Observation& observation : history)
        used.insert(config_key(observation.params));
    return used;
}

// How many values a choice or int dimension has (saturating), and the i-th of them.
uint64_t value_count(const Param& param) {
    if (param.kind == Param::Kind::choice)
        return param.values.size();
    if (param.kind != Param::Kind::integer || !(param.high >= param.low))
        return 0;
    const double span = param.high - param.low; // exact: parse keeps int bounds within 2^53
    return span >= 1.8e19 ? std::numeric_limits<uint64_t>::max() : static_cast<uint64_t>(span) + 1;
}

json nth_value(const Param& param, uint64_t i) {
    if (param.kind == Param::Kind::choice)
        return param.values[i];
    return static_cast<int64_t>(param.low) + static_cast<int64_t>(i);
}

bool is_logarithmic(const Param& param) {
    return param.kind == Param::Kind::loguniform || param.kind == Param::Kind::qloguniform;
}

// A numeric dimension's sampling axis: log for the log kinds, the int range widened by half a step each side so
// that every whole number gets an equal share of it.
std::pair<double, double> axis(const Param& param) {
    if (param.kind == Param::Kind::integer)
        return {param.low - 0.5, param.high + 0.5};
    if (is_logarithmic(param))
        return {std::log(param.low), std::log(param.high)};
    return {param.low, param.high};
}

json from_axis(const Param& param, double t) {
    switch (param.kind) {
    case Param::Kind::integer:
        return static_cast<int64_t>(std::clamp(std::round(t), param.low, param.high));
    case Param::Kind::loguniform:
        return std::clamp(std::exp(t), param.low, param.high);
    case Param::Kind::qloguniform:
        return std::clamp(std::round(std::exp(t) / param.q) * param.q, param.low, param.high);
    case Param::Kind::uniform:
    case Param::Kind::choice:
        break;
    }
    return std::clamp(t, param.low, param.high);
}

// Where a value a trial had lies on the axis; nullopt for one that is not a number of this dimension (a history
// from an edited spec), which its estimator then leaves out.
std::optional<double> to_axis(const Param& param, const json& value) {
    if (!value.is_number())
        return std::nullopt;
    double x = value.get<double>();
    if (!std::isfinite(x) || (is_logarithmic(param) && x <= 0))
        return std::nullopt;
    x = is_logarithmic(param) ? std::log(x) : x;
    const auto [low, high] = axis(param);
    return std::clamp(x, low, high);
}

json random_value(const Param& param, Draw& draw) {
    if (param.kind == Param::Kind::choice || param.kind == Param::Kind::integer)
        return nth_value(param, draw.below(value_count(param)));
    const auto [low, high] = axis(param);
    return from_axis(param, low + (high - low) * draw.unit());
}

Params random_configuration(const SweepSpec& spec, Draw& draw) {
    Params params;
    for (const Param& param : spec.space)
        params[param.key] = random_value(param, draw);
    return params;
}

// Mixed radix over the dimensions in key order, the last one changing fastest (as nested loops would).
std::optional<Params> grid_configuration(const SweepSpec& spec, uint64_t index) {
    const uint64_t size = grid_size(spec);
    if (size == 0 || index >= size)
        return std::nullopt;
    Params params;
    for (auto dim = spec.space.rbegin(); dim != spec.space.rend(); ++dim) {
        const uint64_t count = value_count(*dim);
        params[dim->key] = nth_value(*dim, index % count);
        index /= count;
    }
    return params;
}

std::optional<Params> fresh_random(const SweepSpec& spec, Draw& draw, const Used& used) {
    for (int attempt = 0; attempt < kRandomDraws; ++attempt)
        if (Params params = random_configuration(spec, draw); !used.count(config_key(params)))
            return params;
    const uint64_t size = grid_size(spec);
    if (size == 0 || size > kEnumerable)
        return std::nullopt;
    std::vector<uint64_t> untried;
    for (uint64_t i = 0; i < size; ++i)
        if (!used.count(config_key(*grid_configuration(spec, i))))
            untried.push_back(i);
    if (untried.empty())
        return std::nullopt;
    return grid_configuration(spec, untried[draw.below(untried.size())]);
}

// Optuna's default_weights: flat below 25 observations, then the older ones ramp from 1/n up to 1.
std::vector<double> observation_weights(size_t n) {
    std::vector<double> weights(n, 1.0);
    if (n >= 25) {
        const size_t ramp = n - 25;
        for (size_t i = 0; i < ramp; ++i)
            weights[i] = ramp == 1 ? 1.0 / static_cast<double>(n)
                                   : 1.0 / static_cast<double>(n) + (1.0 - 1.0 / static_cast<double>(n)) *
                                                                        static_cast<double>(i) /
                                                                        static_cast<double>(ramp - 1);
    }
    return weights;
}

// The kernel weights of n observations and the prior, summing to 1.
std::vector<double> kernel_weights(size_t n) {
    std::vector<double> weights = observation_weights(n);
    weights.push_back(kPriorWeight);
    const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
    for (double& weight : weights)
        weight /= total;
    return weights;
}

double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::numbers::sqrt2); }

// A mixture of Gaussians truncated to [low, high].
class Mixture {
public:
    Mixture(double low, double high, const std::vector<double>& observed) : low_(low), high_(high) {
        const size_t n = observed.size();
        const double range = high - low;
        weights_ = kernel_weights(n);
        mus_ = observed;
        mus_.push_back(0.5 * low + 0.5 * high); // low + high may overflow; the width may not (parse_sweep_spec)
        std::vector<size_t> order(mus_.size());
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [this](size_t a, size_t b) { return mus_[a] < mus_[b]; });
        sigmas_.assign(mus_.size(), range);
        for (size_t r = 0; r < order.size(); ++r) {
            const double left = r == 0 ? low : mus_[order[r - 1]];
            const double right = r + 1 == order.size() ? high : mus_[order[r + 1]];
            sigmas_[order[r]] = std::max(mus_[order[r]] - left, right - mus_[order[r]]);
        }
        if (order.size() >= 2) { // the outermost kernels look at their one neighbour, not at the bounds
            sigmas_[order.front()] = mus_[order[1]] - mus_[order[0]];
            sigmas_[order.back()] = mus_[order.back()] - mus_[order[order.size() - 2]];
        }
        // Above 0 even when the range is a few denormals wide and the division underflows.
        const double min_sigma = std::max(range / std::min(100.0, 1.0 + static_cast<double>(n + 1)),
                                          std::numeric_limits<double>::denorm_min());
        for (size_t i = 0; i < n; ++i)
            sigmas_[i] = std::clamp(sigmas_[i], min_sigma, range);
        sigmas_[n] = std::max(range, min_sigma); // the prior
        for (size_t i = 0; i < mus_.size(); ++i) {
            const double mass = normal_cdf((high - mus_[i]) / sigmas_[i]) - normal_cdf((low - mus_[i]) / sigmas_[i]);
            log_scale_.push_back(std::log(weights_[i]) - std::log(sigmas_[i]) - 0.5 * std::log(2 * std::numbers::pi) -
                                 std::log(std::max(mass, 1e-300)));
        }
    }

    double sample(Draw& draw) const {
        double u = draw.unit();
        size_t i = 0;
        while (i + 1 < weights_.size() && u >= weights_[i])
            u -= weights_[i++];
        // Rejection: a kernel's mean lies in the range and its sigma is at most the range, so at least a third of
        // its mass does too; 64 misses in a row are a 10^-11 event, answered by the mean.
        for (int attempt = 0; attempt < 64; ++attempt)
            if (const double t = mus_[i] + sigmas_[i] * draw.normal(); t >= low_ && t <= high_)
                return t;
        return mus_[i];
    }

    double log_density(double t) const {
        double most = -std::numeric_limits<double>::infinity();
        std::vector<double> terms(mus_.size());
        for (size_t i = 0; i < mus_.size(); ++i) {
            const double z = (t - mus_[i]) / sigmas_[i];
            terms[i] = log_scale_[i] - 0.5 * z * z;
            most = std::max(most, terms[i]);
        }
        double sum = 0;
        for (double term : terms)
            sum += std::exp(term - most);
        return most + std::log(sum);
    }

private:
    double low_, high_;
    std::vector<double> weights_, mus_, sigmas_, log_scale_;
};

// A mixture of smoothed one-hot histograms over a choice's values, one per observation, and a uniform prior.
class Histogram {
public:
    Histogram(size_t choices, const std::vector<size_t>& observed) : probabilities_(choices, 0.0) {
        const std::vector<double> weights = kernel_weights(observed.size());
        const auto kernels = static_cast<double>(observed.size() + 1);
        const double smoothing = kPriorWeight / kernels;
        const double row_total = static_cast<double>(choices) * smoothing + 1;
        for (size_t k = 0; k < observed.size(); ++k)
            for (size_t c = 0; c < choices; ++c)
                probabilities_[c] += weights[k] * (smoothing + (c == observed[k] ? 1.0 : 0.0)) / row_total;
        for (double& p : probabilities_)
            p += weights.back() / static_cast<double>(choices);
    }

    size_t sample(Draw& draw) const {
        double u = draw.unit();
        size_t c = 0;
        while (c + 1 < probabilities_.size() && u >= probabilities_[c])
            u -= probabilities_[c++];
        return c;
    }

    double log_probability(size_t c) const { return std::log(probabilities_[c]); }

private:
    std::vector<double> probabilities_;
};

// One dimension's estimator of one group: a Histogram for a choice, a Mixture for the rest.
struct Estimator {
    std::optional<Mixture> numeric;
    std::optional<Histogram> categorical;
};

Estimator fit(const Param& param, const std::vector<Observation>& history, const std::vector<size_t>& group) {
    Estimator estimator;
    if (param.kind == Param::Kind::choice) {
        std::vector<size_t> observed;
        for (size_t i : group) {
            const auto value = history[i].params.find(param.key);
            if (value == history[i].params.end())
                continue;
            const auto at = std::find(param.values.begin(), param.values.end(), value->second);
            if (at != param.values.end())
                observed.push_back(static_cast<size_t>(at - param.values.begin()));
        }
        estimator.categorical.emplace(param.values.size(), observed);
    } else {
        std::vector<double> observed;
        for (size_t i : group) {
            const auto value = history[i].params.find(param.key);
            if (value == history[i].params.end())
                continue;
            if (const std::optional<double> t = to_axis(param, value->second))
                observed.push_back(*t);
        }
        const auto [low, high] = axis(param);
        estimator.numeric.emplace(low, high, observed);
    }
    return estimator;
}

std::optional<Params> tpe(const SweepSpec& spec, Draw& draw, const std::vector<Observation>& history,
                          const Used& used) {
    std::vector<size_t> ranked;
    for (size_t i = 0; i < history.size(); ++i)
        if (!std::isnan(history[i].objective))
            ranked.push_back(i);
    if (ranked.size() < kStartupTrials)
        return fresh_random(spec, draw, used);
    const bool maximize = spec.objective.maximize;
    std::stable_sort(ranked.begin(), ranked.end(), [&](size_t a, size_t b) {
        return maximize ? history[a].objective > history[b].objective : history[a].objective < history[b].objective;
    });
    const size_t below_count = std::min<size_t>((ranked.size() + 9) / 10, 25); // min(ceil(0.1 n), 25)
    std::vector<size_t> below(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(below_count));
    std::vector<size_t> above(ranked.begin() + static_cast<std::ptrdiff_t>(below_count), ranked.end());
    // Back in history order: the weights favour the recent.
    std::sort(below.begin(), below.end());
    std::sort(above.begin(), above.end());

    std::vector<Estimator> good, bad;
    for (const Param& param : spec.space) {
        good.push_back(fit(param, history, below));
        bad.push_back(fit(param, history, above));
    }
    for (int round = 0; round < kCandidateRounds; ++round) {
        std::optional<Params> best;
        double best_score = -std::numeric_limits<double>::infinity();
        for (int candidate = 0; candidate < kCandidates; ++candidate) {
            Params params;
            double score = 0;
            for (size_t d = 0; d < spec.space.size(); ++d) {
                const Param& param = spec.space[d];
                if (param.kind == Param::Kind::choice) {
                    const size_t c = good[d].categorical->sample(draw);
                    params[param.key] = param.values[c];
                    score += good[d].categorical->log_probability(c) - bad[d].categorical->log_probability(c);
                } else {
                    json value = from_axis(param, good[d].numeric->sample(draw));
                    const double t = *to_axis(param, value);
                    score += good[d].numeric->log_density(t) - bad[d].numeric->log_density(t);
                    params[param.key] = std::move(value);
                }
            }
            if (score > best_score && !used.count(config_key(params))) {
                best_score = score;
                best = std::move(params);
            }
        }
        if (best)
            return best;
    }
    return fresh_random(spec, draw, used);
}

} // namespace

std::optional<Params> suggest(const SweepSpec& spec, int index, const std::vector<Observation>& history) {
    if (index < 0)
        return std::nullopt;
    if (spec.method == Method::grid)
        return grid_configuration(spec, static_cast<uint64_t>(index));
    Draw draw(spec.seed, index);
    const Used used = used_configurations(history);
    if (spec.method == Method::random)
        return fresh_random(spec, draw, used);
    return tpe(spec, draw, history, used);
}

} // namespace traindeck::sweep
