// Chaos, end to end: a real traindeck-worker, the real traindeck console (offscreen) and a built-in CNN job with
// checkpoints. Twenty kill -9s of the trainer, the worker and the console, at moments drawn from one seed (printed;
// TRAINDECK_CHAOS_SEED replays it), each followed by what a user's machine would do: the worker retries a dead
// trainer, a dead worker is started again on the same state folder on a port of its own choosing (the console finds
// it there through STATE/port), a dead console is started again on the same catalog. Then both SQLite files are read directly and every
// guarantee is checked: the worker's events of the job numbered 1..N without a gap, every run's metric steps
// consecutive from its checkpoint, every step in the console's catalog exactly once with an uninterrupted run's
// values, and final weights bit for bit those of that uninterrupted run. A broken guarantee fails the test; nothing
// is retried until it passes.
//
// How the job gets into the console's catalog: the console only watches jobs its catalog holds, and it has no
// command-line way to submit a spec or to adopt a job it did not submit. So the test does what JobSync::submit
// does, in its two parts: POST /v1/jobs to the worker, then Catalog::add_job in the catalog file, before the
// console's first start. Everything after that (watching, ingesting, resuming from the catalog's last event) is
// the console's own.
#include "catalog.h"
#include "chaosplan.h"
#include "checkpoint.h"
#include "childprocess.h"
#include "jobobserver.h"
#include "jobtable.h"
#include "requireall.h"
#include "seriesstore.h"
#include "sqlitedb.h"
#include "workerclient.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string_view>
#include <thread>

#include <sys/stat.h>
#include <unistd.h>

using namespace traindeck;
using namespace traindeck::test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// Every wait below is for an event; this bounds each one so a hang fails with what was seen instead of hanging
// CTest. Generous: a trainer retry on a loaded 2-core machine reloads the dataset first.
constexpr double kGuardSeconds = 240;
constexpr int kThreads = 1; // the job's resources.cpus: the worker runs it with --threads 1

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

std::string first_word(const std::string& path) {
    std::ifstream in(path);
    std::string word;
    in >> word;
    return word;
}

uint64_t chaos_seed() {
    if (const char* given = std::getenv("TRAINDECK_CHAOS_SEED"); given && *given)
        return std::strtoull(given, nullptr, 10);
    std::random_device device;
    return (static_cast<uint64_t>(device()) << 32 | device()) % 1000000000ULL;
}

// What an uninterrupted run reported, step by step.
struct Curve {
    long total_steps = 0;
    std::map<long, double> loss, accuracy, lr;
    std::map<long, double> val_loss, test_loss;
};

Curve parse_curve(const std::string& stdout_text) {
    Curve curve;
    std::istringstream lines(stdout_text);
    constexpr std::string_view prefix = "@traindeck ";
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind(prefix, 0) != 0)
            continue;
        const json record = json::parse(line.substr(prefix.size()), nullptr, false);
        if (!record.is_object())
            continue;
        const std::string type = record.value("type", "");
        const long step = record.value("step", -1L);
        if (type == "status" && record.value("state", "") == "running")
            curve.total_steps = record.value("total_steps", 0L);
        if (type == "metric") {
            curve.loss[step] = record["loss"].get<double>();
            curve.accuracy[step] = record["accuracy"].get<double>();
            curve.lr[step] = record["lr"].get<double>();
        }
        if (type == "eval")
            (record.value("split", "") == "test" ? curve.test_loss : curve.val_loss)[step] =
                record["loss"].get<double>();
    }
    return curve;
}

// One run of the job as the worker recorded it: from a "running" status record to the next one (or the end).
struct TrainerRun {
    long resumed_from = -1;
    std::vector<long> steps; // metric steps in the order they were reported
    bool finished = false;   // it reported "finished"
};

// The points of one catalog series, decoded straight from its chunks (metric_chunk_data, SeriesStore::decode_chunk),
// in chunk order, with each chunk's summary row checked against its blob.
std::vector<MetricPoint> catalog_points(Database& db, int64_t job, const std::string& name, std::string* problem) {
    Statement series = db.prepare("SELECT id FROM series WHERE job=? AND name=?");
    series.bind(1, job).bind(2, name);
    if (!series.step()) {
        *problem = "the catalog has no series \"" + name + "\" for the job";
        return {};
    }
    const int64_t id = series.integer(0);
    std::vector<MetricPoint> all;
    Statement chunks = db.prepare(
        "SELECT c.chunk, c.first_step, c.last_step, c.count, d.data FROM metric_chunks c JOIN metric_chunk_data d "
        "ON d.series=c.series AND d.chunk=c.chunk WHERE c.series=? ORDER BY c.chunk");
    chunks.bind(1, id);
    int64_t chunk_rows = 0;
    while (chunks.step()) {
        ++chunk_rows;
        const std::string_view blob = chunks.text_view(4);
        bool damaged = false;
        const std::vector<MetricPoint> points = SeriesStore::decode_chunk(blob, &damaged);
        if (damaged || points.empty() || static_cast<int64_t>(points.size()) != chunks.integer(3) ||
            points.front().step != chunks.integer(1) || points.back().step != chunks.integer(2))
            *problem = "series \"" + name + "\" chunk " + std::to_string(chunks.integer(0)) +
                       ": its summary row does not match its points";
        all.insert(all.end(), points.begin(), points.end());
    }
    Statement data_rows = db.prepare("SELECT count(*) FROM metric_chunk_data WHERE series=?");
    data_rows.bind(1, id);
    if (data_rows.step() && data_rows.integer(0) != chunk_rows)
        *problem = "series \"" + name + "\" has chunk data without a summary row";
    return all;
}

// Steps 1..total each exactly once, in order, with the reference's values (bit for bit: the resumes are exact).
void expect_every_step_once(const std::vector<MetricPoint>& points, const std::map<long, double>& reference,
                            const std::string& name) {
    std::map<long, int> seen;
    for (const MetricPoint& p : points)
        ++seen[p.step];
    int repeated = 0, missing = 0, wrong = 0;
    // The first few of each kind are named; the counts say how many there were.
    for (const auto& [step, count] : seen)
        if (count > 1 && ++repeated <= 5) {
            ADD_FAILURE() << name << ": step " << step << " is in the catalog " << count << " times";
        }
    for (const auto& [step, value] : reference)
        if (!seen.count(step) && ++missing <= 5) {
            ADD_FAILURE() << name << ": step " << step << " is missing from the catalog";
        }
    for (const MetricPoint& p : points) {
        const auto it = reference.find(p.step);
        if (it == reference.end()) {
            if (++wrong <= 5) {
                ADD_FAILURE() << name << ": step " << p.step << " is in the catalog but no run of the job has it";
            }
        } else if (it->second != p.value && ++wrong <= 5) {
            ADD_FAILURE() << name << " at step " << p.step << ": catalog " << p.value << ", uninterrupted run "
                          << it->second;
        }
    }
    for (size_t i = 1; i < points.size(); ++i)
        if (points[i].step <= points[i - 1].step) {
            ADD_FAILURE() << name << ": the catalog's points are out of order at step " << points[i].step;
            break;
        }
    EXPECT_EQ(repeated + missing + wrong, 0)
        << name << ": " << repeated << " repeated, " << missing << " missing, " << wrong << " wrong (" << points.size()
        << " points, " << reference.size() << " steps)";
}

// The job's trainer is gone when the test ends, passed or failed (it runs in a session of its own, so the end of
// the worker, which ChildProcess sees to, does not end it), and the folder is removed unless something failed.
// Declared before the processes, so it runs after they are killed.
struct Cleanup {
    std::string job_dir, dir;
    ~Cleanup() {
        if (!job_dir.empty()) {
            const pid_t trainer = std::atoi(first_word(job_dir + "/pid").c_str());
            if (process_matches(trainer, job_dir + "/spec.json"))
                ::kill(trainer, SIGKILL);
        }
        if (::testing::Test::HasFailure()) {
            std::printf("chaos: kept %s for a look (worker.log, console.log, state/, catalog.db)\n", dir.c_str());
        } else if (!dir.empty()) {
            std::error_code ec;
            fs::remove_all(dir, ec);
        }
    }
};

} // namespace

TEST(ChaosPlan, EverySeedGivesKillsThatFitTheJobAndLandWhereTheyClaim) {
    // The job of the chaos test: 197 steps an epoch, two epochs, a checkpoint every 5 steps and at 197.
    const long total = 394, per_epoch = 197, every = 5;
    for (uint64_t seed = 0; seed < 3000; ++seed) {
        const ChaosPlan plan = make_chaos_plan(seed, total, per_epoch, every);
        ASSERT_TRUE(plan.error.empty()) << "seed " << seed << ": " << plan.error;
        ASSERT_EQ(plan.kills.size(), 20u);
        for (ChaosTarget t : {ChaosTarget::trainer, ChaosTarget::worker, ChaosTarget::console})
            ASSERT_GE(plan.count(t), 4) << "seed " << seed;
        bool first_trainer = true;
        long previous_gate = 0;
        for (const ChaosKill& k : plan.kills) {
            ASSERT_GT(k.trigger_step, previous_gate)
                << "seed " << seed << ": a kill before the previous one is released";
            ASSERT_GE(k.gate_step, k.trigger_step) << "seed " << seed;
            previous_gate = k.gate_step;
            if (k.target == ChaosTarget::trainer) {
                if (first_trainer) {
                    ASSERT_GE(k.resume_step, 0)
                        << "seed " << seed << ": the first trainer kill must land between checkpoints";
                }
                first_trainer = false;
            }
            if (k.resume_step < 0)
                continue;
            ASSERT_EQ(k.target, ChaosTarget::trainer);
            ASSERT_EQ(k.resume_step % every, 0);
            // No checkpoint (interval or epoch end) from the one it resumes from up to the gate.
            ASSERT_GT(k.trigger_step, k.resume_step);
            ASSERT_LT(k.gate_step, k.resume_step + every);
            ASSERT_FALSE(k.resume_step < per_epoch && per_epoch <= k.gate_step) << "seed " << seed;
        }
        ASSERT_LE(plan.kills.back().gate_step + 10, total) << "seed " << seed << ": the job must outlast the last kill";
        ASSERT_GT(plan.kills.back().trigger_step, per_epoch) << "seed " << seed << ": the second epoch goes unharmed";
        EXPECT_EQ(plan.describe(), make_chaos_plan(seed, total, per_epoch, every).describe()) << "not replayable";
    }
}

TEST(Chaos, Kill9OfTrainerWorkerAndConsoleLosesAndRepeatsNothing) {
    if (!fs::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")) {
        TRAINDECK_SKIP("dataset-fashion-mnist is not installed (installer/install-deps.sh installs it)");
    }
    const uint64_t seed = chaos_seed();
    std::printf("chaos: seed %llu (TRAINDECK_CHAOS_SEED=%llu replays this plan)\n",
                static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
    std::fflush(stdout);
    const auto test_start = std::chrono::steady_clock::now();

    std::string pattern = (fs::temp_directory_path() / "traindeck-chaos-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    const std::string dir = pattern;
    Cleanup cleanup;
    cleanup.dir = dir;
    const std::string state_dir = dir + "/state", catalog_path = dir + "/catalog.db";
    fs::create_directories(state_dir);
    fs::create_directories(dir + "/xdg/config");
    fs::create_directories(dir + "/runtime");
    ::chmod((dir + "/runtime").c_str(), 0700);

    // 14,000 samples (12,600 to train on): 197 steps an epoch; uninterrupted, about 7 s here with the data loading
    // and the test-set evaluation.
    const json spec = {{"model", "cnn"},
                       {"conv", {8, 16}},
                       {"kernel", 3},
                       {"fc", {32}},
                       {"data", {{"dataset", "fashion-mnist"}, {"limit", 14000}}},
                       {"batch_size", 64},
                       {"epochs", 2},
                       {"checkpoint_every", 5},
                       {"seed", 1 + seed % 1000}};

    // 1. The uninterrupted run, straight from traindeck-train with the threads the worker gives the job.
    std::ofstream(dir + "/reference.json") << spec.dump();
    const auto reference_start = std::chrono::steady_clock::now();
    const std::string command = "OMP_NUM_THREADS=" + std::to_string(kThreads) + " " + TRAINDECK_TRAIN_BINARY + " " +
                                dir + "/reference.json --threads " + std::to_string(kThreads) + " --checkpoint-dir " +
                                dir + "/reference > " + dir + "/reference.out 2> " + dir + "/reference.err";
    ASSERT_EQ(std::system(command.c_str()), 0) << "the reference run failed: " << read_text(dir + "/reference.err");
    const double reference_seconds = seconds_since(reference_start);
    const Curve reference = parse_curve(read_text(dir + "/reference.out"));
    ASSERT_GT(reference.total_steps, 0);
    ASSERT_EQ(static_cast<long>(reference.loss.size()), reference.total_steps);
    ASSERT_EQ(reference.total_steps % 2, 0);
    const long total_steps = reference.total_steps, per_epoch = total_steps / 2;
    const auto reference_weights = engine::find_latest_checkpoint(dir + "/reference");
    ASSERT_TRUE(reference_weights && !reference_weights->path.empty()) << "the reference run left no checkpoint";

    const ChaosPlan plan = make_chaos_plan(seed, total_steps, per_epoch, spec["checkpoint_every"].get<long>());
    ASSERT_TRUE(plan.error.empty()) << plan.error;
    std::printf("chaos: %ld steps (%ld an epoch), uninterrupted in %.1f s; plan: %s\n", total_steps, per_epoch,
                reference_seconds, plan.describe().c_str());
    std::fflush(stdout);

    // 2. The worker, the job (held at every kill's gate), the catalog row, the console.
    ChildProcess worker({TRAINDECK_WORKER_BINARY, "--listen", "127.0.0.1:0", "--state-dir", state_dir}, {},
                        dir + "/worker.log");
    auto wait_for_port = [&]() -> int {
        for (int i = 0; i < 2000 && worker.running(); ++i) {
            if (const std::string port = first_word(state_dir + "/port"); !port.empty())
                return std::atoi(port.c_str());
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        return 0;
    };
    ASSERT_TRUE(worker.start()) << worker.error();
    int port = wait_for_port();
    ASSERT_GT(port, 0) << "the worker did not come up: " << worker.log_tail();
    std::string url = "http://127.0.0.1:" + std::to_string(port);
    const std::string token = first_word(state_dir + "/token");
    ASSERT_FALSE(token.empty());

    std::string holds;
    for (size_t i = 0; i < plan.kills.size(); ++i)
        holds +=
            (i ? "," : "") + std::to_string(plan.kills[i].gate_step) + ":" + dir + "/gate-" + std::to_string(i + 1);
    const json request = {{"name", "chaos-cnn"},
                          {"builtin", spec},
                          {"resources", {{"cpus", kThreads}}},
                          {"max_restarts", 25},
                          {"env", {{"TRAINDECK_HOLD_AT", holds}}}};
    client::WorkerClient submitter(url, token);
    const auto submitted = submitter.post("/v1/jobs", request);
    ASSERT_EQ(submitted.status, 201) << submitted.message();
    const int64_t job = submitted.json()["id"].get<int64_t>();
    const std::string job_dir = state_dir + "/jobs/" + std::to_string(job);
    cleanup.job_dir = job_dir;
    int64_t catalog_job = 0;
    {
        Catalog catalog;
        ASSERT_EQ(catalog.open(catalog_path), "");
        catalog_job = catalog.add_job("chaos-cnn", "local", std::to_string(job), request);
    }

    ChildProcess console(
        {TRAINDECK_CONSOLE_BINARY, "--catalog", catalog_path, "--worker-state-dir", state_dir, "--no-demo"},
        {"QT_QPA_PLATFORM=offscreen", std::string("TRAINDECK_PLUGIN_DIR=") + TRAINDECK_PLUGIN_DIR,
         "XDG_DATA_HOME=" + dir + "/xdg", "XDG_CONFIG_HOME=" + dir + "/xdg/config",
         "XDG_CACHE_HOME=" + dir + "/xdg/cache", "XDG_RUNTIME_DIR=" + dir + "/runtime"},
        dir + "/console.log");
    Database catalog_reader;
    ASSERT_EQ(catalog_reader.open(catalog_path, true), "");
    auto catalog_last_seq = [&]() -> int64_t {
        Statement select = catalog_reader.prepare("SELECT last_seq FROM jobs WHERE id=?");
        select.bind(1, catalog_job);
        return select.step() ? select.integer(0) : -1;
    };
    // The console has ingested past `seq` (it is up and watching the job).
    auto wait_for_console = [&](int64_t seq, std::string* why) {
        const auto start = std::chrono::steady_clock::now();
        while (seconds_since(start) < kGuardSeconds) {
            if (!console.running()) {
                *why = "the console died on its own (" + console.exit_description() + "): " + console.log_tail();
                return false;
            }
            // The console starts a worker of its own (logging to STATE/worker.log) when it cannot attach to
            // ours: two workers on one state folder would make every later check meaningless.
            if (fs::exists(state_dir + "/worker.log")) {
                *why =
                    "the console started a second worker on the state folder: " + read_text(state_dir + "/worker.log");
                return false;
            }
            if (catalog_last_seq() > seq)
                return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        *why = "the catalog stayed at event " + std::to_string(catalog_last_seq()) + ": " + console.log_tail();
        return false;
    };
    ASSERT_TRUE(console.start()) << console.error();
    std::string why;
    ASSERT_TRUE(wait_for_console(0, &why)) << why;

    JobObserver observer(job);
    observer.connect(url, token);

    // 3. The kills, one at a time: each once its trigger step is seen, each followed by the restart and the sign
    // that the restarted part is back at work before the next.
    int kills_of[3] = {0, 0, 0};
    int worker_moves = 0; // worker restarts that came back on another port
    const auto chaos_start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < plan.kills.size(); ++i) {
        const ChaosKill& kill = plan.kills[i];
        ASSERT_TRUE(observer.wait_until([&] { return observer.max_step() >= kill.trigger_step || observer.finished(); },
                                        kGuardSeconds, &why))
            << "kill " << i + 1 << ": the job never reached step " << kill.trigger_step << ", " << why
            << "\nworker: " << worker.log_tail();
        ASSERT_FALSE(observer.finished()) << "kill " << i + 1 << ": the job ended (" << observer.state()
                                          << ") before its gate at step " << kill.gate_step;
        ASSERT_TRUE(worker.running()) << "the worker died on its own (" << worker.exit_description()
                                      << "): " << worker.log_tail();
        ASSERT_TRUE(console.running()) << "the console died on its own (" << console.exit_description()
                                       << "): " << console.log_tail();
        const long seen_step = observer.max_step();
        std::this_thread::sleep_for(std::chrono::microseconds(kill.jitter_us));
        const auto kill_time = std::chrono::steady_clock::now();
        ++kills_of[static_cast<int>(kill.target)];
        // The gate opens only once the kill is done: the killed part cannot have seen the job past it, and what
        // comes after it belongs to the next kill's stretch.
        const std::string gate = dir + "/gate-" + std::to_string(i + 1);
        switch (kill.target) {
        case ChaosTarget::trainer: {
            const pid_t trainer = std::atoi(first_word(job_dir + "/pid").c_str());
            ASSERT_TRUE(process_matches(trainer, job_dir + "/spec.json"))
                << "kill " << i + 1 << ": pid " << trainer << " from " << job_dir << "/pid is not the job's trainer";
            ASSERT_EQ(::kill(trainer, SIGKILL), 0) << std::strerror(errno);
            std::ofstream(gate) << "go\n";
            ASSERT_TRUE(
                observer.wait_until([&] { return observer.kill9_retries() >= kills_of[0]; }, kGuardSeconds, &why))
                << "kill " << i + 1 << ": the worker did not retry the killed trainer, " << why;
            break;
        }
        case ChaosTarget::worker: {
            worker.kill_hard();
            observer.disconnect();
            std::ofstream(gate) << "go\n"; // the job trains on with no worker watching it
            ::unlink((state_dir + "/port").c_str());
            ASSERT_TRUE(worker.start()) << worker.error();
            port = wait_for_port(); // often another one: the console must find it there
            ASSERT_GT(port, 0) << "the worker did not come back: " << worker.log_tail();
            if (url != "http://127.0.0.1:" + std::to_string(port))
                ++worker_moves;
            url = "http://127.0.0.1:" + std::to_string(port);
            observer.connect(url, token);
            ASSERT_TRUE(observer.wait_until([&] { return observer.readoptions() >= kills_of[1]; }, kGuardSeconds, &why))
                << "kill " << i + 1 << ": the restarted worker did not re-adopt the job, " << why << "\n"
                << worker.log_tail();
            break;
        }
        case ChaosTarget::console: {
            const int64_t before = catalog_last_seq();
            console.kill_hard();
            std::ofstream(gate) << "go\n";
            ASSERT_TRUE(console.start()) << console.error();
            ASSERT_TRUE(wait_for_console(before, &why))
                << "kill " << i + 1 << ": the restarted console did not resume: " << why;
            break;
        }
        }
        std::printf("chaos: kill %2zu/%zu %-7s at step %3ld (trigger %3ld, gate %3ld): back in %.2f s\n", i + 1,
                    plan.kills.size(), target_name(kill.target), seen_step, kill.trigger_step, kill.gate_step,
                    seconds_since(kill_time));
        std::fflush(stdout);
    }

    // 4. The end: the job finishes on the worker, the console has every event of it; then both stop.
    ASSERT_TRUE(observer.wait_until([&] { return observer.finished(); }, kGuardSeconds, &why)) << why;
    ASSERT_EQ(observer.state(), "succeeded") << worker.log_tail();
    const json final_job = client::WorkerClient(url, token).get("/v1/jobs/" + std::to_string(job)).json(); // where it is now
    ASSERT_TRUE(final_job.is_object()) << "the worker does not answer";
    const int64_t worker_last_seq = final_job["last_seq"].get<int64_t>();
    ASSERT_TRUE(wait_for_console(worker_last_seq - 1, &why)) << "the console never got the job's last event: " << why;
    const double chaos_seconds = seconds_since(chaos_start);
    console.stop(10);
    ASSERT_TRUE(worker.stop(30)) << "the worker ignored SIGTERM: " << worker.log_tail();

    // 5. The worker's database: every event once, in order; runs that continue each other exactly.
    Database worker_db;
    ASSERT_EQ(worker_db.open(state_dir + "/worker.db", true), "");
    std::vector<int64_t> seqs;
    std::vector<json> records;
    std::vector<std::string> retry_reasons;
    std::set<int64_t> worker_log_seqs;
    int64_t telemetry = 0, warnings = 0;
    bool started = false;
    {
        worker::read_events(
            worker_db, job, 0, std::numeric_limits<int64_t>::max(), [&](int64_t seq, std::string_view fragment) {
                const json event = json::parse(fragment, nullptr, false);
                ASSERT_TRUE(event.is_object()) << fragment;
                EXPECT_EQ(event["seq"], seq);
                seqs.push_back(seq);
                const std::string type = event["type"];
                const json& data = event["data"];
                if (type == "record")
                    records.push_back(data);
                else if (type == "log")
                    worker_log_seqs.insert(seq);
                else if (type == "telemetry")
                    ++telemetry;
                else if (type == "warning")
                    ++warnings;
                else if (type == "state" && data.value("state", "") == "running")
                    started = true;
                else if (type == "state" && data.value("state", "") == "queued" && started) // not the submission's
                    retry_reasons.push_back(data.value("reason", ""));
            });
    }
    ASSERT_FALSE(seqs.empty());
    for (size_t k = 0; k < seqs.size(); ++k)
        ASSERT_EQ(seqs[k], static_cast<int64_t>(k + 1))
            << "worker.db: the job's events have a gap or a repeat at " << k + 1;
    EXPECT_EQ(static_cast<int64_t>(seqs.size()), worker_last_seq);
    EXPECT_EQ(observer.out_of_order(), 0) << "the events API delivered events out of sequence";
    {
        Statement row = worker_db.prepare("SELECT state, restarts, next_seq FROM jobs WHERE id=?");
        row.bind(1, job);
        ASSERT_TRUE(row.step());
        EXPECT_EQ(row.text(0), "succeeded");
        EXPECT_EQ(row.integer(1), kills_of[0]) << "the job's restarts are not the trainer's kills";
        EXPECT_EQ(row.integer(2), static_cast<int64_t>(seqs.size()) + 1);
    }
    ASSERT_EQ(static_cast<int>(retry_reasons.size()), kills_of[0])
        << "every return to the queue should be a trainer kill";
    for (const std::string& reason : retry_reasons)
        EXPECT_NE(reason.find("killed by signal 9; retry"), std::string::npos) << reason;

    std::vector<TrainerRun> runs;
    long raw_metrics = 0;
    for (const json& record : records) {
        const std::string type = record.value("type", "");
        if (type == "status" && record.value("state", "") == "running") {
            runs.push_back({record.value("resumed_from_step", -1L), {}, false});
        } else if (runs.empty()) {
            continue;
        } else if (type == "metric") {
            ++raw_metrics;
            runs.back().steps.push_back(record.value("step", -1L));
        } else if (type == "status" && record.value("state", "") == "finished") {
            runs.back().finished = true;
        }
    }
    ASSERT_EQ(static_cast<int>(runs.size()), kills_of[0] + 1) << "one run per trainer kill, and the one that finished";
    EXPECT_EQ(runs.front().resumed_from, 0);
    ASSERT_TRUE(runs.back().finished);
    // Each run reports every step from its checkpoint on, once and in order: a worker restart that lost or
    // re-read a metric line shows here as a gap or a repeat.
    for (size_t r = 0; r < runs.size(); ++r) {
        const TrainerRun& run = runs[r];
        for (size_t k = 0; k < run.steps.size(); ++k)
            ASSERT_EQ(run.steps[k], run.resumed_from + 1 + static_cast<long>(k))
                << "run " << r + 1 << " (from step " << run.resumed_from << "): a metric line lost or repeated";
        if (r > 0) {
            EXPECT_LE(run.resumed_from, runs[r - 1].resumed_from + static_cast<long>(runs[r - 1].steps.size()))
                << "run " << r + 1 << " resumed past where the killed run had got to";
        }
    }
    EXPECT_EQ(runs.back().resumed_from + static_cast<long>(runs.back().steps.size()), total_steps);
    // Each trainer kill landed inside its window; those planned between checkpoints lost steps that the retry
    // trained again from exactly the checkpoint before them.
    int between_checkpoints = 0, trainer_kill = 0;
    long replayed = 0;
    for (const ChaosKill& kill : plan.kills) {
        if (kill.target != ChaosTarget::trainer)
            continue;
        const TrainerRun& killed = runs[trainer_kill];
        const TrainerRun& retry = runs[trainer_kill + 1];
        ++trainer_kill;
        const long reached = killed.resumed_from + static_cast<long>(killed.steps.size());
        EXPECT_GE(reached, kill.trigger_step) << "trainer kill " << trainer_kill;
        EXPECT_LE(reached, kill.gate_step) << "trainer kill " << trainer_kill << " landed past its gate";
        replayed += reached - retry.resumed_from;
        if (reached > retry.resumed_from)
            ++between_checkpoints;
        if (kill.resume_step >= 0) {
            EXPECT_EQ(retry.resumed_from, kill.resume_step)
                << "trainer kill " << trainer_kill << ": not resumed from the newest checkpoint";
            EXPECT_GT(reached, retry.resumed_from)
                << "trainer kill " << trainer_kill << " was planned between checkpoints";
        }
    }
    EXPECT_GE(between_checkpoints, 1);
    EXPECT_EQ(raw_metrics, total_steps + replayed);

    // 6. The console's catalog: the job complete, every step of every curve once, with the uninterrupted values.
    Database catalog_db;
    ASSERT_EQ(catalog_db.open(catalog_path, true), "");
    {
        Statement row = catalog_db.prepare("SELECT state, last_seq, seq_offset FROM jobs WHERE id=?");
        row.bind(1, catalog_job);
        ASSERT_TRUE(row.step());
        EXPECT_EQ(row.text(0), "succeeded");
        EXPECT_EQ(row.integer(1), worker_last_seq) << "the catalog does not have every event of the job";
        EXPECT_EQ(row.integer(2), 0);
    }
    std::string problem;
    const auto loss = catalog_points(catalog_db, catalog_job, "loss", &problem);
    const auto accuracy = catalog_points(catalog_db, catalog_job, "accuracy", &problem);
    const auto lr = catalog_points(catalog_db, catalog_job, "lr", &problem);
    const auto val_loss = catalog_points(catalog_db, catalog_job, "val/loss", &problem);
    const auto test_loss = catalog_points(catalog_db, catalog_job, "test/loss", &problem);
    EXPECT_EQ(problem, "");
    expect_every_step_once(loss, reference.loss, "loss");
    expect_every_step_once(accuracy, reference.accuracy, "accuracy");
    expect_every_step_once(lr, reference.lr, "lr");
    expect_every_step_once(val_loss, reference.val_loss, "val/loss");
    expect_every_step_once(test_loss, reference.test_loss, "test/loss");
    std::set<int64_t> catalog_log_seqs;
    {
        Statement logs = catalog_db.prepare("SELECT seq FROM job_logs WHERE job=?");
        logs.bind(1, catalog_job);
        while (logs.step())
            catalog_log_seqs.insert(logs.integer(0));
    }
    EXPECT_EQ(catalog_log_seqs, worker_log_seqs) << "the catalog's log lines are not the worker's";

    // 7. The weights: exactly an uninterrupted run's.
    const auto ours = engine::find_latest_checkpoint(job_dir + "/checkpoints");
    int torn = 0; // temp files of checkpoints whose writer was killed: harmless (never read), counted for the report
    for (const auto& entry : fs::directory_iterator(job_dir + "/checkpoints"))
        torn += entry.path().filename().string().find(".tmp-") != std::string::npos;
    ASSERT_TRUE(ours && !ours->path.empty()) << "the job left no checkpoint";
    EXPECT_EQ(ours->checkpoint.state.step, total_steps);
    EXPECT_EQ(ours->checkpoint.state.step, reference_weights->checkpoint.state.step);
    EXPECT_TRUE(ours->checkpoint.params == reference_weights->checkpoint.params)
        << "the final weights differ from the uninterrupted run's (" << ours->path << " vs " << reference_weights->path
        << ")";

    std::printf(
        "chaos: seed %llu: kills trainer %d (%d between checkpoints, %ld steps trained again), worker %d, "
        "console %d; restarts: trainer %d (by the worker), worker %d (%d on another port), console %d; %ld steps (%ld metric records), "
        "%zu worker events (%lld telemetry, %zu log, %lld warnings), catalog at event %lld; %d torn checkpoint "
        "temp files left; chaos %.1f s, whole test %.1f s, uninterrupted run %.1f s\n",
        static_cast<unsigned long long>(seed), kills_of[0], between_checkpoints, replayed, kills_of[1], kills_of[2],
        static_cast<int>(retry_reasons.size()), worker.starts() - 1, worker_moves, console.starts() - 1, total_steps, raw_metrics,
        seqs.size(), static_cast<long long>(telemetry), worker_log_seqs.size(), static_cast<long long>(warnings),
        static_cast<long long>(worker_last_seq), torn, chaos_seconds, seconds_since(test_start), reference_seconds);
}
