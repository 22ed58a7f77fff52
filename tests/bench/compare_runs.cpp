// Benchmark: the runs as data at issue 12's scale ("Speed"), the group statistics side by side with numpy.
//   compare_runs [--rounds 7] [--points 100000] [--keep]
// Fills a temp catalog file through Catalog (one transaction per 1,000 jobs) with 10,000 runs × 20 config keys
// (set_config) × 5 summary values (kept by ingest from metric events), 100 of them with a loss series of --points
// points (10 configs × 10 seeds), then prints (run it at normal priority: under `nice` a busy machine's other work
// goes first and every time grows; the ratio to numpy holds, the absolute times do not):
//   - reading the 10,000 RunRecords back (Catalog::runs) and the 100 series' points (SeriesStore::points), each
//     through a reader's connection (no target; printed apart from the grouping);
//   - grouping them (differing config keys without seed → group_runs → 10 groups) and group_curve for each group at
//     4,000 buckets with ± std bands (what the group chart 2,000 px wide asks for: clamp(width × 2, 200, 4000),
//     ui/groupchart.cpp): target < 50 ms for all ten curves, against numpy (Debian python3-numpy,
//     tests/bench/compare_runs_peer.py) computing the same statistics from the same raw points, both sides
//     alternating over --rounds rounds (3 repetitions each), median of each, the ratio numpy / ours, and the max
//     abs and relative difference of the results (means, lows, highs, N, x);
//   - RunQuery::parse(...).matches over all 10,000 RunRecords for a representative query: target < 50 ms;
//   - differing_config_keys + group_runs over all 10,000 runs (no target, printed for the runs table's suggestion).
// Exits 1 when a target is missed or the results differ by more than 1e-9 relative; 2 when it cannot run.
//   - the runs table (JobTableModel in a QTableView, offscreen) over the whole catalog: first paint, from opening
//     the catalog to the painted table (< 200 ms); the first paint with details, until the configs, summaries and
//     tags read on a pool thread are in and painted (held to the same < 200 ms when it meets it, else printed as
//     informational, saying so; it does not decide the exit status); a sort by a summary column
//     (best.val/accuracy, < 100 ms);
//   - the parallel coordinates with all 10,000 runs × 5 config axes + a metric: the full repaint (< 30 ms).
#include "catalog.h"
#include "groupstats.h"
#include "jobtablemodel.h"
#include "parallelcoordinates.h"
#include "process.h"
#include "runquery.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <QApplication>
#include <QHeaderView>
#include <QTableView>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace traindeck;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

namespace {

// What the group chart asks for at 2,000 px (groupchart.cpp: clamp(width * 2, 200, 4000)): 4,000 buckets.
constexpr int kGroupChartPixels = 2000;
constexpr int kBuckets = std::clamp(kGroupChartPixels * 2, 200, 4000);
constexpr int kRuns = 10'000, kGroups = 10, kSeeds = 10, kJobsPerTransaction = 1000;
constexpr size_t kSeriesRuns = size_t{kGroups} * kSeeds;
constexpr double kGroupTargetMs = 50, kQueryTargetMs = 50, kTolerance = 1e-9;
constexpr double kPaintTargetMs = 200, kSortTargetMs = 100, kParallelTargetMs = 30;
constexpr const char* kQuery = R"(optimizer.lr < 0.01 and model == "cnn" and not tag:discarded or name ~ "seed.*")";

double ms_since(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}
double median(std::vector<double> v) {
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    const size_t mid = v.size() / 2;
    return v.size() % 2 ? v[mid] : 0.5 * (v[mid - 1] + v[mid]);
}

// Run i's configuration: 20 keys. The first 100 runs are the series runs: 10 configs (model × lr) × 10 seeds, equal
// in every other key, so their differing keys are model, optimizer.lr and seed.
json config_of(int i, std::mt19937_64& random) {
    const bool series_run = i < kGroups * kSeeds;
    const int group = i / kSeeds;
    const double lrs[] = {0.001, 0.003, 0.01, 0.03, 0.1};
    const char* models[] = {"cnn", "mlp", "resnet"};
    auto pick = [&](int n) { return static_cast<int>(random() % static_cast<uint64_t>(n)); };
    json c;
    c["model"] = series_run ? models[group % 2] : models[pick(3)];
    c["optimizer"] = {{"name", series_run ? "adam" : (pick(2) ? "adam" : "sgd")},
                      {"lr", series_run ? lrs[group / 2] : lrs[pick(5)]},
                      {"momentum", series_run ? 0.9 : 0.8 + 0.05 * pick(4)},
                      {"weight_decay", series_run ? 1e-4 : 1e-5 * (1 + pick(10))}};
    c["batch_size"] = series_run ? 128 : 32 << pick(4);
    c["epochs"] = series_run ? 10 : 5 + pick(20);
    c["hidden"] = series_run ? json{256, 128, 64} : json{64 << pick(3), 32 << pick(3), 16 << pick(3)};
    c["dropout"] = series_run ? 0.1 : 0.05 * pick(8);
    c["activation"] = series_run ? "relu" : (pick(2) ? "relu" : "gelu");
    c["dataset"] = series_run ? "fashion-mnist" : (pick(2) ? "fashion-mnist" : "mnist");
    c["augment"] = series_run ? true : pick(2) == 1;
    c["schedule"] = series_run ? "cosine" : (pick(2) ? "cosine" : "step");
    c["warmup_steps"] = series_run ? 500 : 100 * pick(10);
    c["seed"] = series_run ? i % kSeeds : pick(1000);
    c["precision"] = series_run ? "fp32" : (pick(3) ? "fp32" : "bf16");
    c["label_smoothing"] = series_run ? 0.0 : 0.05 * pick(3);
    c["init"] = series_run ? "kaiming" : (pick(2) ? "kaiming" : "xavier");
    return c;
}

// What run i is, deterministically from the seed; the catalog is filled from it and the RunRecords are read back.
struct PlannedRun {
    std::string name, backend, state;
    json config;
    std::vector<std::string> tags;
    bool starred = false;
    double created = 0;
    std::vector<json> events; // state and metric records: ingest maintains the summaries from them
};

// Five summaries a run (loss, accuracy, lr from two metric records; val/loss and val/accuracy from an eval record).
// The 100 series runs' metric records carry no loss: their 100,000-point loss series goes in through SeriesStore
// directly (as events it would take the bench half a minute), so their loss summary is the one not kept.
std::vector<PlannedRun> plan_runs() {
    std::mt19937_64 random(12);
    std::normal_distribution<double> noise;
    std::vector<PlannedRun> runs(kRuns);
    const char* states[] = {"succeeded", "succeeded", "succeeded", "failed", "running", "cancelled"};
    for (int i = 0; i < kRuns; ++i) {
        PlannedRun& r = runs[static_cast<size_t>(i)];
        const bool series_run = i < kGroups * kSeeds;
        r.config = config_of(i, random);
        r.name =
            i % 7 == 0 ? "seed-" + std::to_string(i % 10) + " sweep " + std::to_string(i) : "run-" + std::to_string(i);
        r.state = states[random() % 6];
        r.backend = i % 3 ? "local" : "gpu-box";
        r.created = 1.7e9 + 60.0 * i;
        r.starred = i % 50 == 0;
        if (i % 10 == 3)
            r.tags.emplace_back("discarded");
        if (i % 25 == 0)
            r.tags.emplace_back("baseline");
        const double loss = 0.2 + 0.1 * std::abs(noise(random)), accuracy = 0.8 + 0.1 * std::abs(noise(random));
        auto event = [&](int64_t seq, double time, const char* type, json data) {
            r.events.push_back({{"seq", seq}, {"time", time}, {"type", type}, {"data", std::move(data)}});
        };
        auto metric = [&](int64_t step, double fraction) {
            json data = {
                {"type", "metric"}, {"step", step}, {"accuracy", accuracy * fraction}, {"lr", 0.01 / fraction}};
            if (!series_run)
                data["loss"] = loss / fraction;
            return data;
        };
        event(1, r.created + 5, "state", {{"state", "running"}, {"reason", "started"}});
        event(2, r.created + 300, "record", metric(50'000, 0.5));
        event(3, r.created + 600, "record", metric(100'000, 1.0));
        event(4, r.created + 600, "record",
              {{"type", "eval"},
               {"split", "val"},
               {"step", 100'000},
               {"loss", loss + 0.05},
               {"accuracy", accuracy - 0.02}});
        if (r.state != "running")
            event(5, r.created + 605, "state",
                  {{"state", r.state}, {"reason", r.state == "failed" ? "exit 1" : "done"}});
    }
    return runs;
}

// A loss curve per run: the group's level and decay, the seed's offset, noise per point.
void fill_series(std::vector<MetricPoint>& points, int run, int64_t count) {
    std::mt19937_64 random(1000 + run);
    std::normal_distribution<double> noise;
    const int group = run / kSeeds;
    const double floor = 0.3 + 0.05 * group, tau = 5000.0 * (1 + group % 5), offset = 0.02 * noise(random);
    points.resize(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) {
        const int64_t step = i + 1;
        points[static_cast<size_t>(i)] = {step, floor + offset + 2.0 * std::exp(-step / tau) + 0.01 * noise(random)};
    }
}

template <typename T>
void put(std::ofstream& out, const T* data, size_t count) {
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(count * sizeof(T)));
}

// The numpy side, kept running across the rounds: one line in ("round"/"quit"), one JSON line out.
class Peer {
public:
    bool start(const std::string& script, const std::string& input, const std::string& output) {
        int to_child[2], from_child[2];
        if (::pipe2(to_child, O_CLOEXEC) != 0 || ::pipe2(from_child, O_CLOEXEC) != 0)
            return false;
        SpawnOptions options;
        options.argv = {"/usr/bin/python3", script, input, output};
        options.fds = {{to_child[0], 0}, {from_child[1], 1}};
        int error = 0;
        pid_ = spawn_process(options, error);
        ::close(to_child[0]);
        ::close(from_child[1]);
        if (pid_ < 0) {
            std::fprintf(stderr, "cannot start /usr/bin/python3: %s (install Debian's python3-numpy)\n",
                         std::strerror(error));
            return false;
        }
        in_ = ::fdopen(to_child[1], "w");
        out_ = ::fdopen(from_child[0], "r");
        const json ready = read();
        if (ready.value("type", "") != "ready")
            return false;
        std::printf("peer: numpy %s, %d groups loaded\n", ready.value("numpy", "?").c_str(), ready.value("groups", 0));
        return true;
    }
    // The seconds of each repetition of one round; empty when the peer failed.
    std::vector<double> round() {
        std::fputs("round\n", in_);
        std::fflush(in_);
        const json answer = read();
        if (answer.value("type", "") != "round")
            return {};
        return answer["seconds"].get<std::vector<double>>();
    }
    int finish() {
        if (pid_ <= 0)
            return -1;
        if (in_) {
            std::fputs("quit\n", in_);
            std::fclose(in_);
        }
        if (out_)
            std::fclose(out_);
        int status = 0;
        ::waitpid(pid_, &status, 0);
        pid_ = 0;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    ~Peer() { finish(); }

private:
    json read() {
        char line[1 << 12];
        if (!out_ || !std::fgets(line, sizeof(line), out_)) {
            std::fprintf(stderr, "compare_runs_peer.py stopped answering (its error is above)\n");
            return json::object();
        }
        json answer = json::parse(line, nullptr, false);
        return answer.is_object() ? answer : json::object();
    }

    pid_t pid_ = 0;
    std::FILE* in_ = nullptr;
    std::FILE* out_ = nullptr;
};

struct Difference {
    double abs = 0, relative = 0;
    bool shape_differs = false;
    void compare(double ours, double theirs) {
        const double d = std::abs(ours - theirs);
        abs = std::max(abs, d);
        relative = std::max(relative, d / std::max({std::abs(ours), std::abs(theirs), 1e-300}));
    }
};

// The peer's output file (see compare_runs_peer.py) against our curves.
Difference compare_with_peer(const std::string& path, const std::vector<GroupCurve>& ours) {
    Difference diff;
    std::ifstream in(path, std::ios::binary);
    for (const GroupCurve& curve : ours) {
        int64_t count = -1;
        in.read(reinterpret_cast<char*>(&count), sizeof(count));
        if (!in || count != static_cast<int64_t>(curve.x.size())) {
            diff.shape_differs = true;
            return diff;
        }
        std::vector<double> column(static_cast<size_t>(count));
        for (const std::vector<double>* mine : {&curve.x, &curve.mean, &curve.low, &curve.high}) {
            in.read(reinterpret_cast<char*>(column.data()), static_cast<std::streamsize>(count * sizeof(double)));
            for (size_t i = 0; i < column.size(); ++i)
                diff.compare((*mine)[i], column[i]);
        }
        std::vector<int64_t> n(static_cast<size_t>(count));
        in.read(reinterpret_cast<char*>(n.data()), static_cast<std::streamsize>(count * sizeof(int64_t)));
        if (!in)
            diff.shape_differs = true;
        for (size_t i = 0; i < n.size(); ++i)
            if (n[i] != curve.n[i])
                diff.shape_differs = true;
    }
    return diff;
}

} // namespace

int main(int argc, char** argv) {
    int rounds = 7;
    int64_t points_per_run = 100'000;
    bool keep = false;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--rounds" && i + 1 < argc)
            rounds = std::max(5, std::atoi(argv[++i]));
        else if (arg == "--points" && i + 1 < argc)
            points_per_run = std::max<int64_t>(kBuckets, std::atoll(argv[++i]));
        else if (arg == "--keep")
            keep = true;
        else {
            std::fprintf(stderr, "usage: compare_runs [--rounds 7 (at least 5)] [--points 100000] [--keep]\n");
            return 2;
        }
    }
    std::signal(SIGPIPE, SIG_IGN); // a peer that died is reported by its missing answer
    std::string pattern = (fs::temp_directory_path() / "traindeck-compare-runs-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) {
        std::fprintf(stderr, "cannot create a folder under %s: %s\n", fs::temp_directory_path().c_str(),
                     std::strerror(errno));
        return 2;
    }
    const fs::path dir = pattern;
    struct Cleanup {
        fs::path dir;
        bool keep;
        ~Cleanup() {
            if (!keep)
                fs::remove_all(dir);
        }
    } cleanup{dir, keep};

    // 1. The catalog: 10,000 jobs with their config (set_config: the catalog's flattened keys), tags, star and
    // events (ingest keeps the summaries); 100 loss series.
    const std::vector<PlannedRun> plan = plan_runs();
    std::vector<int64_t> ids(plan.size());
    Catalog catalog;
    if (const std::string error = catalog.open((dir / "catalog.db").string()); !error.empty()) {
        std::fprintf(stderr, "%s\n", error.c_str());
        return 2;
    }
    auto start = Clock::now();
    for (size_t first = 0; first < plan.size(); first += kJobsPerTransaction) {
        catalog.db().exec("BEGIN");
        for (size_t i = first; i < std::min(plan.size(), first + kJobsPerTransaction); ++i) {
            const PlannedRun& run = plan[i];
            ids[i] = catalog.add_job(run.name, run.backend, std::to_string(i), run.config);
            if (const std::string left_out = catalog.set_config(ids[i], run.config); !left_out.empty())
                std::fprintf(stderr, "set_config left out: %s\n", left_out.c_str());
            catalog.ingest(ids[i], run.events);
            if (!run.tags.empty())
                catalog.add_tags(ids[i], run.tags);
            if (run.starred)
                catalog.set_starred(ids[i], true);
        }
        catalog.db().exec("COMMIT");
    }
    const double jobs_ms = ms_since(start);
    std::vector<int64_t> series_of(kSeriesRuns);
    start = Clock::now();
    {
        SeriesStore store(catalog.db());
        std::vector<MetricPoint> points;
        for (int run = 0; run < kGroups * kSeeds; ++run) {
            fill_series(points, run, points_per_run);
            catalog.db().exec("BEGIN");
            series_of[static_cast<size_t>(run)] = catalog.series(ids[static_cast<size_t>(run)], "loss", true);
            for (size_t i = 0; i < points.size(); i += 10'000)
                store.append(series_of[static_cast<size_t>(run)],
                             std::span(points).subspan(i, std::min<size_t>(10'000, points.size() - i)));
            catalog.db().exec("COMMIT");
        }
    }
    const double series_ms = ms_since(start);

    // 2. The runs as a reader's connection sees them (Catalog::runs: fields, config, summaries, tags), then the 100
    // series' points, as the compare view would read them.
    Catalog reader;
    if (const std::string error = reader.open((dir / "catalog.db").string(), true); !error.empty()) {
        std::fprintf(stderr, "%s\n", error.c_str());
        return 2;
    }
    std::vector<RunRecord> records;
    std::vector<double> runs_ms;
    for (int rep = 0; rep < 3; ++rep) {
        start = Clock::now();
        int64_t revision = 0;
        records = reader.runs(0, &revision);
        runs_ms.push_back(ms_since(start));
    }
    if (records.size() != plan.size() || records.front().id != ids.front() || records.back().id != ids.back() ||
        records[kSeriesRuns].config.size() != 20 || records[kSeriesRuns].summaries.size() != 5) {
        std::fprintf(stderr,
                     "the catalog gave back %zu runs (%zu config keys, %zu summaries) for %zu written (20, 5)\n",
                     records.size(), records.empty() ? 0 : records[kSeriesRuns].config.size(),
                     records.empty() ? 0 : records[kSeriesRuns].summaries.size(), plan.size());
        return 2;
    }
    std::printf("compare_runs: %d runs x %zu config keys x %zu summaries; %d runs x %lld points; SQLite %s\n", kRuns,
                records[kSeriesRuns].config.size(), records[kSeriesRuns].summaries.size(), kGroups * kSeeds,
                static_cast<long long>(points_per_run), sqlite3_libversion());
    std::printf("fill: %d jobs in %.0f ms (a transaction per %d), %d series in %.0f ms; file %.0f MB\n", kRuns, jobs_ms,
                kJobsPerTransaction, kGroups * kSeeds, series_ms, fs::file_size(dir / "catalog.db") / 1e6);
    std::printf("read %d RunRecords (Catalog::runs):                  median %7.1f ms (no target; part of the table's "
                "first paint)\n",
                kRuns, median(runs_ms));
    std::map<int64_t, std::vector<MetricPoint>> points_of; // by run id
    std::vector<double> read_ms;
    for (int rep = 0; rep < 3; ++rep) {
        start = Clock::now();
        for (int run = 0; run < kGroups * kSeeds; ++run)
            points_of[records[static_cast<size_t>(run)].id] =
                SeriesStore::points(reader.db(), series_of[static_cast<size_t>(run)], 1, points_per_run);
        read_ms.push_back(ms_since(start));
    }
    size_t points_read = 0;
    for (const auto& [id, points] : points_of)
        points_read += points.size();
    std::printf("read %d series, %zu points, from the catalog:        median %7.1f ms (no target; printed apart)\n",
                kGroups * kSeeds, points_read, median(read_ms));

    // 3. The groups: the keys that differ among the 100 runs, without seed.
    std::vector<const RunRecord*> series_runs;
    series_runs.reserve(kSeriesRuns);
    for (int run = 0; run < kGroups * kSeeds; ++run)
        series_runs.push_back(&records[static_cast<size_t>(run)]);
    start = Clock::now();
    std::vector<std::string> keys = differing_config_keys(series_runs);
    std::erase(keys, "seed");
    const std::vector<RunGroup> groups = group_runs(series_runs, keys);
    const double grouping_ms = ms_since(start);
    std::string key_list;
    for (const std::string& key : keys)
        key_list += (key_list.empty() ? "" : ", ") + key;
    std::printf("group 100 runs by [%s]: %zu groups in %.2f ms\n", key_list.c_str(), groups.size(), grouping_ms);
    if (groups.size() != kGroups) {
        std::fprintf(stderr, "expected %d groups, got %zu: the bench's configs are wrong\n", kGroups, groups.size());
        return 2;
    }
    std::vector<std::vector<std::span<const MetricPoint>>> group_points(groups.size());
    for (size_t g = 0; g < groups.size(); ++g)
        for (const int64_t id : groups[g].runs)
            group_points[g].emplace_back(points_of.at(id));

    // 4. The peer's input: the same groups' raw points.
    const int64_t from_step = 1, to_step = points_per_run;
    const std::string input = (dir / "peer-input.bin").string(), output = (dir / "peer-output.bin").string();
    {
        std::ofstream out(input, std::ios::binary);
        const int64_t repetitions = 3;
        const int64_t header[] = {static_cast<int64_t>(groups.size()), kBuckets, from_step, to_step, 0, repetitions};
        put(out, header, 6);
        std::vector<int64_t> steps;
        std::vector<double> values;
        for (const auto& runs : group_points) {
            const int64_t run_count = static_cast<int64_t>(runs.size());
            put(out, &run_count, 1);
            for (const std::span<const MetricPoint> run : runs) {
                const int64_t count = static_cast<int64_t>(run.size());
                steps.resize(run.size());
                values.resize(run.size());
                for (size_t i = 0; i < run.size(); ++i) {
                    steps[i] = run[i].step;
                    values[i] = run[i].value;
                }
                put(out, &count, 1);
                put(out, steps.data(), steps.size());
                put(out, values.data(), values.size());
            }
        }
        if (!out.flush()) {
            std::fprintf(stderr, "cannot write %s: %s\n", input.c_str(), std::strerror(errno));
            return 2;
        }
    }
    Peer peer;
    if (!peer.start(std::string(TRAINDECK_SOURCE_DIR) + "/tests/bench/compare_runs_peer.py", input, output))
        return 2;

    // 5. Both sides in turns: ours (three repetitions), then numpy's (three, timed inside Python).
    std::vector<double> ours_ms, numpy_ms;
    std::vector<GroupCurve> curves(groups.size());
    for (int round = 0; round < rounds; ++round) {
        for (int rep = 0; rep < 3; ++rep) {
            start = Clock::now();
            for (size_t g = 0; g < groups.size(); ++g)
                curves[g] = group_curve(group_points[g], from_step, to_step, kBuckets, Band::std_dev);
            ours_ms.push_back(ms_since(start));
        }
        const std::vector<double> seconds = peer.round();
        if (seconds.empty())
            return 2;
        for (const double s : seconds)
            numpy_ms.push_back(s * 1000);
    }
    if (const int status = peer.finish(); status != 0) {
        std::fprintf(stderr, "compare_runs_peer.py exited with status %d\n", status);
        return 2;
    }
    const Difference diff = compare_with_peer(output, curves);
    size_t buckets_out = 0;
    int min_n = kSeeds;
    for (const GroupCurve& curve : curves) {
        buckets_out += curve.x.size();
        for (const int n : curve.n)
            min_n = std::min(min_n, n);
    }
    const double ours = median(ours_ms), theirs = median(numpy_ms);
    const bool group_met = ours < kGroupTargetMs;
    const bool same = !diff.shape_differs && diff.relative <= kTolerance;
    std::printf("group_curve, %zu groups x %d runs, %d buckets (the group chart at %d px), std band (%zu buckets out, "
                "N >= %d), %d rounds:\n",
                groups.size(), kSeeds, kBuckets, kGroupChartPixels, buckets_out, min_n, rounds);
    std::printf("  ours:  median %7.2f ms   target < %.0f ms: ratio %.2f -> %s\n", ours, kGroupTargetMs,
                ours / kGroupTargetMs, group_met ? "met" : "MISSED");
    std::printf("  numpy: median %7.2f ms   numpy / ours: %.1f\n", theirs, theirs / ours);
    std::printf("  results: max abs difference %.3g, max relative %.3g (tolerance %.0e)%s -> %s\n", diff.abs,
                diff.relative, kTolerance, diff.shape_differs ? ", bucket counts or N DIFFER" : "",
                same ? "same" : "DIFFER");

    // 6. A query over all 10,000 runs, as Catalog::runs gave them.
    bool query_met = true;
    {
        QueryError error;
        const RunQuery query = RunQuery::parse(kQuery, &error);
        if (!query.valid()) {
            std::printf("query %s: does not parse (at %zu: %s): not measured\n", kQuery, error.position,
                        error.message.c_str());
            query_met = false;
        } else {
            const double now = 1.7e9 + 60.0 * kRuns;
            std::vector<double> query_ms;
            size_t matched = 0;
            for (int rep = 0; rep < 21; ++rep) {
                start = Clock::now();
                matched = 0;
                for (const RunRecord& run : records)
                    matched += query.matches(run, now);
                query_ms.push_back(ms_since(start));
            }
            const double q = median(query_ms);
            query_met = q < kQueryTargetMs;
            std::printf("query over %d runs (%zu match): median %7.2f ms   target < %.0f ms: ratio %.2f -> %s\n", kRuns,
                        matched, q, kQueryTargetMs, q / kQueryTargetMs, query_met ? "met" : "MISSED");
            std::printf("  %s\n", kQuery);
        }
    }

    // 7. The runs table's grouping suggestion over every run (no target).
    {
        std::vector<const RunRecord*> all;
        all.reserve(records.size());
        for (const RunRecord& run : records)
            all.push_back(&run);
        std::vector<double> suggest_ms;
        size_t differing = 0, all_groups = 0;
        for (int rep = 0; rep < 5; ++rep) {
            start = Clock::now();
            std::vector<std::string> all_keys = differing_config_keys(all);
            differing = all_keys.size();
            std::erase(all_keys, "seed");
            all_groups = group_runs(all, all_keys).size();
            suggest_ms.push_back(ms_since(start));
        }
        std::printf("differing keys + group_runs over %d runs: %zu keys, %zu groups, median %.1f ms (no target)\n",
                    kRuns, differing, all_groups, median(suggest_ms));
    }

    // 8. The runs table and the parallel coordinates, painted offscreen, each measured several times (a fresh
    // model and view for each first paint: nothing cached from the round before).
    bool paint_met = true, sort_met = true, parallel_met = true;
    {
        qputenv("QT_QPA_PLATFORM", "offscreen");
        int qt_argc = 1;
        char name[] = "compare_runs";
        char* qt_argv[] = {name, nullptr};
        QApplication app(qt_argc, qt_argv);
        const QString path = QString::fromStdString((dir / "catalog.db").string());
        std::vector<double> paint_ms, details_ms, sort_ms, parallel_ms;
        int rows = 0;
        for (int rep = 0; rep < 5; ++rep) {
            // As the console opens it: the runs' own fields, painted; their configs and summaries on a pool thread.
            start = Clock::now();
            JobTableModel model(path);
            model.setLoadDetailsInBackground(true);
            model.refresh();
            QTableView view;
            view.setModel(&model);
            view.setSortingEnabled(true);
            view.horizontalHeader()->setSortIndicator(-1, Qt::AscendingOrder);
            view.resize(900, 700);
            (void)view.grab(); // lays out and paints the visible rows
            paint_ms.push_back(ms_since(start));
            rows = model.rowCount();
            while (!model.detailsLoaded())
                QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents, 50);
            (void)view.grab();
            details_ms.push_back(ms_since(start));
            model.setExtraColumns({"optimizer.lr", "best.val/accuracy"});
            for (const Qt::SortOrder order : {Qt::DescendingOrder, Qt::AscendingOrder}) {
                start = Clock::now();
                model.sort(JobTableModel::ColumnCount + 1, order);
                (void)view.grab();
                sort_ms.push_back(ms_since(start));
            }
        }
        ParallelCoordinates parallel;
        parallel.resize(1200, 600);
        parallel.setRuns(records);
        const QStringList axes{"model", "optimizer.lr", "batch_size", "dropout", "seed"};
        for (int rep = 0; rep < 7; ++rep) {
            // A full repaint: new axes (so the cached lines are redrawn), then a paint.
            parallel.setAxes(rep % 2 ? axes : QStringList(axes.mid(1)) << axes.front(), "best.val/accuracy");
            (void)parallel.grab();
            parallel_ms.push_back(parallel.paintMilliseconds());
        }
        const double paint = median(paint_ms), sort = median(sort_ms), repaint = median(parallel_ms);
        paint_met = paint < kPaintTargetMs && rows == kRuns;
        sort_met = sort < kSortTargetMs;
        parallel_met = repaint < kParallelTargetMs;
        std::printf("runs table first paint (%d rows, open + read + paint): median %7.2f ms   target < %.0f ms: ratio "
                    "%.2f -> %s\n",
                    rows, paint, kPaintTargetMs, paint / kPaintTargetMs, paint_met ? "met" : "MISSED");
        // With details: held to the same target when it meets it, else informational and said so (the table is
        // painted and usable at the first paint; the details come from a pool thread).
        const double details = median(details_ms);
        if (details < kPaintTargetMs)
            std::printf("runs table first paint with details (configs, summaries, tags in): median %7.2f ms   target "
                        "< %.0f ms: ratio %.2f -> met\n",
                        details, kPaintTargetMs, details / kPaintTargetMs);
        else
            std::printf("runs table first paint with details (configs, summaries, tags in): median %7.2f ms   "
                        "informational, not a target: over the first paint's %.0f ms (ratio %.2f); the details are "
                        "read on a pool thread after the table is painted\n",
                        details, kPaintTargetMs, details / kPaintTargetMs);
        std::printf("sort by best.val/accuracy + repaint:                  median %7.2f ms   target < %.0f ms: ratio "
                    "%.2f -> %s\n",
                    sort, kSortTargetMs, sort / kSortTargetMs, sort_met ? "met" : "MISSED");
        std::printf("parallel coordinates, %zu runs x 6 axes, full repaint: median %7.2f ms   target < %.0f ms: ratio "
                    "%.2f -> %s\n",
                    records.size(), repaint, kParallelTargetMs, repaint / kParallelTargetMs,
                    parallel_met ? "met" : "MISSED");
    }
    return group_met && same && query_met && paint_met && sort_met && parallel_met ? 0 : 1;
}
