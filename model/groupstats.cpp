// groupstats.h: the group curve in one pass over each run's points into per-bucket sums (the bucket's edges found
// once per bucket, not per point), the spread over the runs by Welford; grouping and the config diff over RunRecords.
#include "groupstats.h"

#include <algorithm>
#include <limits>
#include <map>
#include <string_view>

namespace traindeck {
namespace {

// Wide enough for (bucket + 1) * (to - from + 1) whatever the int64 range.
__extension__ using Wide = __int128;

// Welford's running mean and sum of squared deviations, with the extremes.
struct Spread {
    int n = 0;
    double mean = 0, squares = 0, min = 0, max = 0;

    void add(double value) {
        if (n == 0)
            min = max = value;
        min = std::min(min, value);
        max = std::max(max, value);
        ++n;
        const double delta = value - mean;
        mean += delta / n;
        squares += delta * (value - mean);
    }
    // The sample standard deviation; 0 for one value (the band collapses onto the mean).
    double std_dev() const { return n > 1 ? std::sqrt(squares / (n - 1)) : 0.0; }
};

// The last step of each bucket: bucket b holds the steps s with floor((s - from) * count / span) == b, i.e.
// from + ceil(b * span / count) .. from + ceil((b + 1) * span / count) - 1. With count <= span no bucket is empty,
// so the last steps rise strictly and a step's bucket is the first whose last step is at or after it.
std::vector<int64_t> last_steps(int64_t from, int64_t to, int count) {
    const Wide span = Wide(to) - Wide(from) + 1;
    std::vector<int64_t> last(static_cast<size_t>(count));
    for (int b = 0; b < count; ++b)
        last[static_cast<size_t>(b)] = static_cast<int64_t>(Wide(from) + ((b + 1) * span + count - 1) / count - 1);
    return last;
}

const ConfigValue& config_value(const RunRecord& run, const std::string& key) {
    static const ConfigValue missing;
    const auto it = run.config.find(key);
    return it == run.config.end() ? missing : it->second;
}

// Numbers, then texts, then missing (an empty text): the order groups are listed in, key by key.
int value_rank(const ConfigValue& value) { return value.is_number() ? 0 : value.text.empty() ? 2 : 1; }

// Orders two values so that equal texts (the grouping's equality) are equivalent and nothing else is.
bool value_before(const ConfigValue& a, const ConfigValue& b) {
    const int rank_a = value_rank(a), rank_b = value_rank(b);
    if (rank_a != rank_b)
        return rank_a < rank_b;
    if (rank_a == 0 && a.number != b.number)
        return a.number < b.number;
    return a.text < b.text;
}

} // namespace

GroupCurve group_curve(std::span<const std::span<const MetricPoint>> runs, int64_t from_step, int64_t to_step,
                       int buckets, Band band) {
    GroupCurve curve;
    if (buckets <= 0 || to_step < from_step || runs.empty())
        return curve;
    // More buckets than steps only adds empty ones: each non-empty bucket would still hold one step, centred on it.
    const Wide span = Wide(to_step) - Wide(from_step) + 1;
    const int count = span < buckets ? static_cast<int>(span) : buckets;
    const std::vector<int64_t> last = last_steps(from_step, to_step, count);

    std::vector<double> sum(static_cast<size_t>(count), 0.0);
    std::vector<int64_t> points_in(static_cast<size_t>(count), 0);
    std::vector<Spread> spread(static_cast<size_t>(count));
    for (const std::span<const MetricPoint> run : runs) {
        const MetricPoint* p = run.data();
        const MetricPoint* const end = p + run.size();
        size_t b = 0;
        while (p != end) {
            const int64_t step = p->step;
            if (step < from_step || step > to_step) {
                ++p;
                continue;
            }
            // In step order the next bucket is usually the one after; otherwise search the edges.
            if (step > last[b] && b + 1 < last.size() && step <= last[b + 1])
                ++b;
            else if (step > last[b] || (b > 0 && step <= last[b - 1]))
                b = static_cast<size_t>(std::lower_bound(last.begin(), last.end(), step) - last.begin());
            const int64_t lowest = b == 0 ? from_step : last[b - 1] + 1, highest = last[b];
            // One sum in point order (as numpy's bincount adds): the pass is bound by reading the points, 16 bytes
            // each, so four interleaved sums measured no faster.
            double bucket_sum = 0;
            int64_t bucket_points = 0;
            for (; p != end && p->step >= lowest && p->step <= highest; ++p) {
                const double value = p->value;
                const bool finite = std::isfinite(value);
                bucket_sum += finite ? value : 0.0;
                bucket_points += finite;
            }
            sum[b] += bucket_sum;
            points_in[b] += bucket_points;
        }
        for (size_t i = 0; i < sum.size(); ++i) {
            if (points_in[i] > 0)
                spread[i].add(sum[i] / static_cast<double>(points_in[i]));
            sum[i] = 0;
            points_in[i] = 0;
        }
    }

    for (size_t i = 0; i < spread.size(); ++i) {
        const Spread& s = spread[i];
        if (s.n == 0)
            continue;
        const int64_t lowest = i == 0 ? from_step : last[i - 1] + 1;
        curve.x.push_back(0.5 * (static_cast<double>(lowest) + static_cast<double>(last[i])));
        curve.mean.push_back(s.mean);
        curve.n.push_back(s.n);
        double low = s.min, high = s.max;
        if (band != Band::min_max) {
            const double half = band == Band::std_dev ? s.std_dev() : s.std_dev() / std::sqrt(static_cast<double>(s.n));
            low = s.mean - half;
            high = s.mean + half;
        }
        curve.low.push_back(low);
        curve.high.push_back(high);
    }
    return curve;
}

SummaryStat summary_stat(std::span<const double> values) {
    Spread spread;
    for (const double value : values)
        if (std::isfinite(value))
            spread.add(value);
    SummaryStat stat;
    stat.n = spread.n;
    if (spread.n > 0) {
        stat.mean = spread.mean;
        stat.std_dev = spread.std_dev();
    }
    return stat;
}

std::vector<RunGroup> group_runs(std::span<const RunRecord* const> runs, std::span<const std::string> keys) {
    // Each run's values once (pointers into the records), then a stable sort: runs keep their given order
    // within a group, and equal neighbours form one group.
    std::vector<const ConfigValue*> values(runs.size() * keys.size());
    for (size_t r = 0; r < runs.size(); ++r)
        for (size_t k = 0; k < keys.size(); ++k)
            values[r * keys.size() + k] = &config_value(*runs[r], keys[k]);
    auto value_of = [&](size_t run, size_t key) -> const ConfigValue& { return *values[run * keys.size() + key]; };
    auto before = [&](size_t a, size_t b) {
        for (size_t k = 0; k < keys.size(); ++k) {
            const ConfigValue &x = value_of(a, k), &y = value_of(b, k);
            if (x.text != y.text)
                return value_before(x, y);
        }
        return false;
    };
    std::vector<size_t> order(runs.size());
    for (size_t r = 0; r < order.size(); ++r)
        order[r] = r;
    std::stable_sort(order.begin(), order.end(), before);

    std::vector<RunGroup> groups;
    for (size_t i = 0; i < order.size(); ++i) {
        if (i == 0 || before(order[i - 1], order[i])) {
            RunGroup& group = groups.emplace_back();
            for (size_t k = 0; k < keys.size(); ++k)
                group.values.push_back(value_of(order[i], k).text);
        }
        groups.back().runs.push_back(runs[order[i]]->id);
    }
    return groups;
}

std::vector<std::string> differing_config_keys(std::span<const RunRecord* const> runs) {
    struct Seen {
        std::string_view first; // the first run's text for the key
        size_t runs = 0;
        bool differs = false;
    };
    // Keyed by views into the records, which outlive the call: no key is copied per run.
    std::map<std::string_view, Seen> seen;
    for (const RunRecord* run : runs)
        for (const auto& [key, value] : run->config) {
            auto [it, added] = seen.try_emplace(key);
            Seen& s = it->second;
            if (added)
                s.first = value.text;
            else if (!s.differs && value.text != s.first)
                s.differs = true;
            ++s.runs;
        }
    std::vector<std::string> keys;
    if (runs.size() < 2)
        return keys;
    for (const auto& [key, s] : seen)
        if (s.differs || s.runs < runs.size())
            keys.emplace_back(key);
    return keys;
}

} // namespace traindeck
