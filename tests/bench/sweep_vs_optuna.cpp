// Benchmark: issue 16's sweep against Optuna, side by side in one run. TrainDeck's TPE + ASHA sweep runs in a real
// traindeck-worker on loopback (each trial a traindeck-train job on one CPU); then Optuna 3.1 (Debian python3-optuna,
// tests/bench/sweep_vs_optuna_peer.py) runs its TPESampler and SuccessiveHalvingPruner over the same space, budget,
// data and model in PyTorch, two trials at a time (study.optimize n_jobs=2: two threads, one torch thread a trial).
//
//   sweep_vs_optuna [--trials 40] [--epochs 9] [--limit 20000] [--seed 1] [--concurrent 2]
//
// The space: optimizer.lr loguniform 1e-4..0.3, hidden width 64/128/256/512, weight decay loguniform 1e-6..1e-2,
// batch size 64/128/256; the built-in MLP (flatten, linear W, relu, linear 10; SGD, momentum 0.9, constant learning
// rate) on the first --limit Fashion-MNIST training images, 10 % of them the validation split (the same images on
// both sides), tested on all of t10k; ASHA and the pruner at 1, 3, 9 epochs (reduction factor 3). Both sides use
// --seed: the sweep's (TPE) and every trial's (weights, shuffles), the sampler's and every trial's generator.
// Prints for each side the best validation accuracy, the best completed trial's validation and test accuracy (a
// trial stopped early has no test evaluation; "best" is by its best validation accuracy, the sweep's objective), the
// epochs trained and the wall time, then the ratios; for reading them, the highest test accuracy of any completed
// trial, the wall time per epoch and slot, how many trials reached each rung, and each diverged trial; and:
//   - the controller's cost per decision, in-process: suggest() over the sweep's real history of trials (each
//     trial's decision with the trials before it, at their final objectives) and asha_promotion() over the real
//     rung table, median and max; and in the worker, from its event times: a slot freed (a trial paused at its rung
//     or finished) to the next trial's job queued (the decision) and running, and the rung report to the pause
//     (the trainer's checkpoint and exit, not the controller's);
//   - targets: TrainDeck's best test accuracy at least Optuna's - 0.3 points; its epochs <= 1.0x Optuna's; the
//     controller's decision < 100 ms (in-process max, and the worker's median from a freed slot to the next job
//     queued); ASHA's epochs <= 40 % of --trials x --epochs. The wall-time ratio is printed, not a target.
// TrainDeck's epochs are counted honestly: a paused trial trains on until the SIGTERM lands, so its epochs are its
// highest step over its steps per epoch, partial epochs included (the whole epochs are printed too).
// One round: the accuracies and epochs are not timing noise (each side's is one sweep; TPE is not repeated), and
// both sides take minutes. Exits 1 when a target is missed, 2 when it cannot run (with the reason).
#include "asha.h"
#include "suggester.h"
#include "sweepspec.h"
#include "workerprocess.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace traindeck;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr double kAccuracyPoints = 0.3, kEpochRatio = 1.0, kDecisionMs = 100, kAshaShare = 0.40;
constexpr int kTimingRounds = 5; // each decision timed this many times in-process

struct Options {
    int trials = 40, epochs = 9, limit = 20000, concurrent = 2;
    uint64_t seed = 1;
};

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

double median(std::vector<double> values) {
    if (values.empty())
        return NAN;
    std::sort(values.begin(), values.end());
    const size_t mid = values.size() / 2;
    return values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

double maximum(const std::vector<double>& values) {
    return values.empty() ? NAN : *std::max_element(values.begin(), values.end());
}

double number_or_nan(const json& value) { return value.is_number() ? value.get<double>() : NAN; }

// What one side's sweep comes to.
struct Side {
    int trials = 0;
    std::map<std::string, int> states;
    double best_val = NAN;  // over every trial and epoch
    int best_completed = 0; // the 1-based trial; 0: none completed
    double best_completed_val = NAN, best_completed_test = NAN;
    double highest_test = NAN; // of any completed trial (informational: the target takes the best trial's)
    json best_params;
    double epochs = 0;    // trained, partial epochs included
    int whole_epochs = 0; // completed epochs (epoch records)
    double wall_seconds = 0;
    std::vector<int> reached; // trials that trained to each rung
    long train_samples = 0, val_samples = 0, test_samples = 0;
};

// A completed trial (test accuracy known) whose best validation accuracy beats the side's best so far.
void consider_completed(Side& side, int trial, double best_val, double test, const json& params) {
    if (std::isnan(test) || std::isnan(best_val))
        return;
    side.highest_test = std::isnan(side.highest_test) ? test : std::max(side.highest_test, test);
    if (side.best_completed == 0 || best_val > side.best_completed_val) {
        side.best_completed = trial;
        side.best_completed_val = best_val;
        side.best_completed_test = test;
        side.best_params = params;
    }
}

json sweep_spec(const Options& o) {
    const json base = {{"model", "mlp"},
                       {"hidden", {128}},
                       {"data", {{"dataset", "fashion-mnist"}, {"limit", o.limit}}},
                       {"optimizer", {{"type", "sgd"}, {"lr", 0.05}, {"momentum", 0.9}, {"weight_decay", 0}}},
                       {"batch_size", 128},
                       {"epochs", o.epochs},
                       {"seed", o.seed}};
    return {{"name", "sweep_vs_optuna"},
            {"base", {{"builtin", base}, {"resources", {{"cpus", 1}}}}},
            {"space",
             {{"optimizer.lr", {{"loguniform", {1e-4, 0.3}}}},
              {"hidden[0]", {{"choice", {64, 128, 256, 512}}}},
              {"optimizer.weight_decay", {{"loguniform", {1e-6, 1e-2}}}},
              {"batch_size", {{"choice", {64, 128, 256}}}}}},
            {"method", "tpe"},
            {"objective", {{"metric", "val/accuracy"}, {"goal", "max"}}},
            {"early_stopping",
             {{"method", "asha"},
              {"resource", "epochs"},
              {"min_resource", 1},
              {"max_resource", o.epochs},
              {"reduction_factor", 3}}},
            {"max_trials", o.trials},
            {"max_concurrent", o.concurrent},
            {"seed", o.seed}};
}

// The worker's view of one trial's job: its records and state changes, with the worker's event times.
struct TrialEvents {
    int trial = 0;
    int64_t job = 0;
    bool diverged = false; // killed by the sweep on a record: its slot was given back then, not at its job's end
    std::vector<std::pair<double, json>> records; // (time, record)
    std::vector<std::pair<double, std::string>> states;
};

// A state change of any trial's job, for the decision latencies.
struct StateChange {
    double time;
    int64_t job;
    std::string state;
};

struct WorkerLatencies {
    std::vector<double> freed_to_queued, freed_to_running, report_to_paused; // ms
};

// Each slot freed (a trial's job stopped at its rung or ended; a diverged trial's at the record it was killed on, as
// the sweep starts the next trial then, before the killed job's end is written) is answered by the next job queued
// (a new trial, or a paused one promoted by resuming it): each queued job answers the latest slot freed before it
// that no job answered yet, so a slot that nothing answers (the sweep's last ones) shifts no later pair. The first
// --concurrent jobs answer nothing.
WorkerLatencies worker_latencies(const std::vector<TrialEvents>& trials) {
    std::vector<StateChange> changes;
    auto frees = [](const std::string& s) {
        return s == "stopped" || s == "succeeded" || s == "failed" || s == "cancelled";
    };
    for (const TrialEvents& t : trials)
        for (const auto& [time, state] : t.states) {
            if (t.diverged && state == "cancelled") {
                double killed_at = time;
                for (const auto& [record_time, record] : t.records)
                    if (record_time <= time)
                        killed_at = record_time;
                changes.push_back({killed_at, t.job, state});
            } else {
                changes.push_back({time, t.job, state});
            }
        }
    // Equal times: the freeing change first (the worker writes it before the sweep's tick decides).
    std::stable_sort(changes.begin(), changes.end(), [&](const StateChange& a, const StateChange& b) {
        return a.time != b.time ? a.time < b.time : frees(a.state) && !frees(b.state);
    });
    WorkerLatencies out;
    std::vector<double> freed;         // not yet answered, oldest first
    std::map<int64_t, double> waiting; // job queued in answer to a freed slot -> when the slot was freed
    for (const StateChange& change : changes) {
        if (frees(change.state)) {
            freed.push_back(change.time);
        } else if (change.state == "queued" && !freed.empty()) {
            out.freed_to_queued.push_back(1000 * (change.time - freed.back()));
            waiting[change.job] = freed.back();
            freed.pop_back();
        } else if (change.state == "running") {
            if (const auto it = waiting.find(change.job); it != waiting.end()) {
                out.freed_to_running.push_back(1000 * (change.time - it->second));
                waiting.erase(it);
            }
        }
    }
    // A pause: the job's validation record at its rung, then its "stopped".
    for (const TrialEvents& t : trials)
        for (const auto& [time, state] : t.states) {
            if (state != "stopped")
                continue;
            double report = NAN;
            for (const auto& [record_time, record] : t.records)
                if (record_time <= time && record.value("type", "") == "eval" && record.value("split", "") == "val")
                    report = record_time;
            if (!std::isnan(report))
                out.report_to_paused.push_back(1000 * (time - report));
        }
    return out;
}

bool command_ok(const std::string& command) { return std::system((command + " >/dev/null 2>&1").c_str()) == 0; }

int cannot_run(const std::string& why) {
    std::fprintf(stderr, "sweep_vs_optuna cannot run: %s\n", why.c_str());
    return 2;
}

} // namespace

int main(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (i + 1 >= argc) {
            std::fprintf(stderr, "%s needs a value (options: --trials --epochs --limit --seed --concurrent)\n",
                         arg.c_str());
            return 2;
        }
        const std::string value = argv[++i];
        if (arg == "--trials")
            o.trials = std::atoi(value.c_str());
        else if (arg == "--epochs")
            o.epochs = std::atoi(value.c_str());
        else if (arg == "--limit")
            o.limit = std::atoi(value.c_str());
        else if (arg == "--seed")
            o.seed = std::strtoull(value.c_str(), nullptr, 10);
        else if (arg == "--concurrent")
            o.concurrent = std::atoi(value.c_str());
        else {
            std::fprintf(stderr, "unknown option %s (options: --trials --epochs --limit --seed --concurrent)\n",
                         arg.c_str());
            return 2;
        }
    }
    if (o.trials < 1 || o.epochs < 2 || o.limit < 100 || o.concurrent < 1)
        return cannot_run("--trials and --concurrent must be at least 1, --epochs at least 2 (ASHA needs two rungs), "
                          "--limit at least 100 images");
    if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
        return cannot_run("Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist, or "
                          "installer/install-deps.sh)");
    if (!command_ok("/usr/bin/python3 -c 'import torch, optuna'"))
        return cannot_run("Debian's /usr/bin/python3 cannot import torch and optuna (apt-get install python3-torch "
                          "python3-optuna, or installer/install-deps.sh)");

    const json spec_json = sweep_spec(o);
    sweep::SweepSpec spec;
    if (const std::string error = sweep::parse_sweep_spec(spec_json, spec); !error.empty())
        return cannot_run("the bench's sweep spec is refused: " + error);
    const std::vector<double> rungs = sweep::asha_rungs(1, o.epochs, 3);
    std::string rung_text;
    for (const double r : rungs)
        rung_text += (rung_text.empty() ? "" : "/") + std::to_string(static_cast<int>(r));

    std::printf("sweep_vs_optuna: %d trials, up to %d epochs each, %d at a time, seed %llu; Fashion-MNIST: the first "
                "%d training images (10 %% of them validation), all 10,000 test images\n",
                o.trials, o.epochs, o.concurrent, static_cast<unsigned long long>(o.seed), o.limit);
    std::printf("TrainDeck: TPE + ASHA (rungs %s epochs, eta 3), each trial a traindeck-train job on 1 CPU "
                "(--threads 1) in a loopback traindeck-worker --cpus %d\n",
                rung_text.c_str(), o.concurrent);
    std::printf("Optuna: TPESampler + SuccessiveHalvingPruner (min_resource 1, reduction_factor 3), PyTorch, "
                "n_jobs=%d (threads in one process), torch threads per trial = 1\n",
                o.concurrent);
    std::printf("One round each (accuracies and epochs are not timing noise); TrainDeck runs first, then Optuna.\n\n");
    std::fflush(stdout);

    // ---- TrainDeck ----
    Side td;
    json sweep;
    std::vector<TrialEvents> trial_events;
    {
        test::WorkerProcess worker({"--cpus", std::to_string(o.concurrent)});
        if (!worker.running())
            return cannot_run("traindeck-worker did not start (its output: " + worker.output() + ")");
        const auto start = Clock::now();
        const auto created = worker.client().post("/v1/sweeps", spec_json);
        if (created.status != 201)
            return cannot_run("POST /v1/sweeps answered " + created.message());
        const int64_t id = created.json()["id"].get<int64_t>();
        const std::string path = "/v1/sweeps/" + std::to_string(id);
        size_t reported = 0;
        while (true) {
            sweep = worker.client().get(path).json();
            if (!sweep.is_object()) {
                std::this_thread::sleep_for(std::chrono::milliseconds(200));
                continue;
            }
            const std::string state = sweep.value("state", "");
            if (state != "running")
                break;
            size_t ended = 0;
            for (const json& t : sweep["trials"])
                ended += t["state"] != "running" && t["state"] != "pausing";
            if (ended != reported) {
                reported = ended;
                std::fprintf(stderr, "[traindeck %5.0f s] %zu trials started; %s\n", seconds_since(start),
                             sweep["trials"].size(), sweep["trial_states"].dump().c_str());
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(250));
        }
        td.wall_seconds = seconds_since(start);
        if (sweep["state"] != "finished")
            return cannot_run("the sweep ended " + sweep.value("state", std::string("?")) + ": " +
                              sweep.value("reason", std::string()));
        for (const json& t : sweep["trials"]) {
            TrialEvents events;
            events.trial = t["trial"].get<int>();
            events.job = t["job"].get<int64_t>();
            events.diverged = t["state"] == "diverged";
            if (events.job > 0)
                for (const json& event : worker.drain(events.job, 60)) {
                    const double time = event["time"].get<double>();
                    if (event["type"] == "record")
                        events.records.emplace_back(time, event["data"]);
                    else if (event["type"] == "state")
                        events.states.emplace_back(time, event["data"].value("state", ""));
                }
            trial_events.push_back(std::move(events));
        }
    }
    td.trials = static_cast<int>(sweep["trials"].size());
    td.reached.assign(rungs.size(), 0);
    for (size_t i = 0; i < sweep["trials"].size(); ++i) {
        const json& t = sweep["trials"][i];
        const TrialEvents& events = trial_events[i];
        ++td.states[t["state"].get<std::string>()];
        for (size_t k = 0; k < rungs.size() && k < t["objectives"].size(); ++k)
            ++td.reached[k];
        double test = NAN, best_val = number_or_nan(t["best"]);
        long max_step = 0, train_samples = 0;
        for (const auto& [time, r] : events.records) {
            const std::string type = r.value("type", "");
            if (type == "eval" && r.value("split", "") == "test")
                test = r["accuracy"].get<double>();
            else if (type == "metric")
                max_step = std::max(max_step, r["step"].get<long>());
            else if (type == "epoch")
                ++td.whole_epochs;
            else if (type == "status" && r.contains("train_samples")) {
                train_samples = r["train_samples"].get<long>();
                td.train_samples = train_samples;
                td.val_samples = r["val_samples"].get<long>();
                td.test_samples = r["test_samples"].get<long>();
            }
        }
        const long batch = t["params"].value("batch_size", 128);
        const long steps_per_epoch = (train_samples + batch - 1) / batch; // the last partial batch is a step
        if (steps_per_epoch > 0)
            td.epochs += static_cast<double>(max_step) / static_cast<double>(steps_per_epoch);
        if (!std::isnan(best_val))
            td.best_val = std::isnan(td.best_val) ? best_val : std::max(td.best_val, best_val);
        if (t["state"] == "completed")
            consider_completed(td, t["trial"].get<int>(), best_val, test, t["params"]);
    }

    // The controller's decisions, in-process, over this sweep's real trials: trial i's suggestion from the i trials
    // before it (at their final objectives), and the promotion rule over the final rung table.
    std::vector<sweep::Observation> history;
    std::vector<sweep::RungTrial> rung_table;
    for (const json& t : sweep["trials"]) {
        sweep::Observation observation;
        for (const auto& [key, value] : t["params"].items())
            observation.params[key] = value;
        observation.objective = number_or_nan(t["best"]);
        history.push_back(observation);
        sweep::RungTrial rung_trial;
        rung_trial.trial = t["trial"].get<int>() - 1;
        for (const json& value : t["objectives"])
            rung_trial.objectives.push_back(number_or_nan(value));
        rung_trial.rung = t["rung"].get<int>();
        rung_trial.stopped = t["state"] != "pruned" && t["state"] != "paused";
        rung_table.push_back(rung_trial);
    }
    std::vector<double> suggest_ms, promote_ms;
    volatile size_t sink = 0; // keeps the calls from being optimised away
    for (int round = 0; round < kTimingRounds; ++round)
        for (size_t i = 0; i < history.size(); ++i) {
            const std::vector<sweep::Observation> before(history.begin(), history.begin() + static_cast<long>(i));
            auto begin = Clock::now();
            const std::optional<sweep::Params> params = sweep::suggest(spec, static_cast<int>(i), before);
            suggest_ms.push_back(1000 * seconds_since(begin));
            sink = sink + (params ? params->size() : 0);
            const std::vector<sweep::RungTrial> table(rung_table.begin(), rung_table.begin() + static_cast<long>(i));
            begin = Clock::now();
            const sweep::Promotion promotion = sweep::asha_promotion(table, rungs.size(), 3, true);
            promote_ms.push_back(1000 * seconds_since(begin));
            sink = sink + static_cast<size_t>(promotion.trial + 1);
        }
    const WorkerLatencies latency = worker_latencies(trial_events);

    // ---- Optuna ----
    Side op;
    {
        const std::string command = "OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 /usr/bin/python3 " +
                                    std::string(TRAINDECK_SOURCE_DIR) + "/tests/bench/sweep_vs_optuna_peer.py" +
                                    " --trials " + std::to_string(o.trials) + " --epochs " + std::to_string(o.epochs) +
                                    " --limit " + std::to_string(o.limit) + " --seed " + std::to_string(o.seed) +
                                    " --jobs " + std::to_string(o.concurrent) +
                                    " --min-resource 1 --reduction-factor 3";
        const auto start = Clock::now();
        std::FILE* pipe = ::popen(command.c_str(), "r");
        if (!pipe)
            return cannot_run("cannot start " + command);
        json result;
        char buffer[1 << 16];
        std::string line;
        while (std::fgets(buffer, sizeof buffer, pipe)) {
            line += buffer;
            if (line.empty() || line.back() != '\n')
                continue;
            const json parsed = json::parse(line, nullptr, false);
            if (parsed.is_object() && parsed.value("type", "") == "result")
                result = parsed;
            line.clear();
        }
        const int status = ::pclose(pipe);
        op.wall_seconds = seconds_since(start);
        if (status != 0 || !result.is_object())
            return cannot_run("the Optuna peer failed (status " + std::to_string(status) + "): " + command);
        op.trials = static_cast<int>(result["trials"].size());
        op.epochs = result["epochs"].get<double>();
        op.train_samples = result["train_samples"].get<long>();
        op.val_samples = result["val_samples"].get<long>();
        op.test_samples = result["test_samples"].get<long>();
        op.reached.assign(rungs.size(), 0);
        for (const json& t : result["trials"]) {
            ++op.states[t["state"].get<std::string>()];
            double best_val = NAN;
            for (const json& value : t["val"])
                best_val = std::isnan(best_val) ? value.get<double>() : std::max(best_val, value.get<double>());
            op.whole_epochs += static_cast<int>(t["val"].size());
            for (size_t k = 0; k < rungs.size(); ++k)
                op.reached[k] += static_cast<double>(t["val"].size()) >= rungs[k];
            if (!std::isnan(best_val))
                op.best_val = std::isnan(op.best_val) ? best_val : std::max(op.best_val, best_val);
            if (t["state"] == "completed")
                consider_completed(op, t["trial"].get<int>(), best_val, number_or_nan(t["test"]), t["params"]);
        }
        std::printf("Optuna %s, PyTorch %s; its optimize() took %.1f s of the %.1f s below (the rest: start-up and "
                    "data loading)\n\n",
                    result["optuna"].get<std::string>().c_str(), result["torch"].get<std::string>().c_str(),
                    result["wall_seconds"].get<double>(), op.wall_seconds);
    }

    // ---- figures ----
    auto states_text = [](const Side& side) {
        std::string text;
        for (const auto& [state, count] : side.states)
            text += (text.empty() ? "" : ", ") + std::to_string(count) + " " + state;
        return text;
    };
    std::printf("split: TrainDeck %ld train / %ld val / %ld test; Optuna %ld / %ld / %ld\n\n", td.train_samples,
                td.val_samples, td.test_samples, op.train_samples, op.val_samples, op.test_samples);
    std::printf("%-44s %14s %14s %9s\n", "", "TrainDeck", "Optuna", "ratio");
    std::printf("%-44s %14d %14d\n", "trials", td.trials, op.trials);
    std::printf("%-44s %13.2f%% %13.2f%% %+8.2f pt\n", "best validation accuracy (any trial, epoch)", 100 * td.best_val,
                100 * op.best_val, 100 * (td.best_val - op.best_val));
    std::printf("%-44s %13.2f%% %13.2f%% %+8.2f pt\n", "best completed trial: its best val accuracy",
                100 * td.best_completed_val, 100 * op.best_completed_val,
                100 * (td.best_completed_val - op.best_completed_val));
    std::printf("%-44s %13.2f%% %13.2f%% %+8.2f pt\n", "best completed trial: its test accuracy",
                100 * td.best_completed_test, 100 * op.best_completed_test,
                100 * (td.best_completed_test - op.best_completed_test));
    std::printf("%-44s %13.2f%% %13.2f%% %+8.2f pt  (informational)\n", "highest test accuracy of a completed trial",
                100 * td.highest_test, 100 * op.highest_test, 100 * (td.highest_test - op.highest_test));
    std::printf("%-44s %14.2f %14.2f %8.2fx\n", "epochs trained (partial epochs included)", td.epochs, op.epochs,
                td.epochs / op.epochs);
    std::printf("%-44s %14d %14d %8.2fx\n", "whole epochs (epoch records / reports)", td.whole_epochs, op.whole_epochs,
                static_cast<double>(td.whole_epochs) / op.whole_epochs);
    std::printf("%-44s %13.1fs %13.1fs %8.2fx  (informational)\n", "wall time", td.wall_seconds, op.wall_seconds,
                td.wall_seconds / op.wall_seconds);
    const double td_slot_seconds = td.wall_seconds * o.concurrent / td.epochs;
    const double op_slot_seconds = op.wall_seconds * o.concurrent / op.epochs;
    std::printf("%-44s %13.2fs %13.2fs %8.2fx  (informational)\n", "wall time x slots per epoch trained",
                td_slot_seconds, op_slot_seconds, td_slot_seconds / op_slot_seconds);
    auto reached_text = [](const Side& side) {
        std::string text;
        for (const int count : side.reached)
            text += (text.empty() ? "" : " / ") + std::to_string(count);
        return text;
    };
    std::printf("%-44s %14s %14s\n", ("trials that reached rung " + rung_text + " epochs").c_str(),
                reached_text(td).c_str(), reached_text(op).c_str());
    std::printf("  TrainDeck trials: %s; best completed #%d %s\n", states_text(td).c_str(), td.best_completed,
                td.best_params.dump().c_str());
    std::printf("  Optuna trials:    %s; best completed #%d %s\n", states_text(op).c_str(), op.best_completed,
                op.best_params.dump().c_str());
    if (sweep["best"].is_object())
        std::printf("  the sweep's own best: trial #%d, val accuracy %.2f%%\n", sweep["best"]["trial"].get<int>(),
                    100 * sweep["best"]["best"].get<double>());
    for (const json& t : sweep["trials"])
        if (t["state"] == "diverged" || t["state"] == "failed")
            std::printf("  TrainDeck trial #%d %s after %.0f epochs (best val accuracy %.2f%%): %s\n",
                        t["trial"].get<int>(), t["state"].get<std::string>().c_str(), number_or_nan(t["resource"]),
                        100 * number_or_nan(t["best"]), t["reason"].get<std::string>().c_str());
    const double full_epochs = static_cast<double>(o.trials) * o.epochs;
    std::printf("\nASHA: %.2f epochs of the %.0f that %d trials x %d epochs take = %.1f %%\n", td.epochs, full_epochs,
                o.trials, o.epochs, 100 * td.epochs / full_epochs);
    const double decision_max = maximum(suggest_ms) + maximum(promote_ms);
    std::printf("\ncontroller, in-process (%d decisions x %d rounds):\n", td.trials, kTimingRounds);
    std::printf("  suggest() (TPE) over the history:  median %8.3f ms  max %8.3f ms\n", median(suggest_ms),
                maximum(suggest_ms));
    std::printf("  asha_promotion() over the rungs:    median %8.3f ms  max %8.3f ms\n", median(promote_ms),
                maximum(promote_ms));
    std::printf("controller, in the worker (event times; %zu decisions):\n", latency.freed_to_queued.size());
    std::printf("  slot freed -> next trial's job queued:   median %8.1f ms  max %8.1f ms\n",
                median(latency.freed_to_queued), maximum(latency.freed_to_queued));
    std::printf("  slot freed -> next trial's job running:  median %8.1f ms  max %8.1f ms\n",
                median(latency.freed_to_running), maximum(latency.freed_to_running));
    std::printf("  rung report -> trial paused (SIGTERM, checkpoint, exit; the trainer's part): median %.1f ms  "
                "max %.1f ms (%zu pauses)\n",
                median(latency.report_to_paused), maximum(latency.report_to_paused), latency.report_to_paused.size());

    std::printf("\ntargets:\n");
    bool all_met = true;
    auto target = [&](bool met, const std::string& text) {
        all_met = all_met && met;
        std::printf("  %-96s %s\n", text.c_str(), met ? "met" : "MISSED");
    };
    char text[256];
    std::snprintf(text, sizeof text, "best test accuracy %.2f%% >= Optuna's %.2f%% - %.1f points",
                  100 * td.best_completed_test, 100 * op.best_completed_test, kAccuracyPoints);
    target(td.best_completed_test >= op.best_completed_test - kAccuracyPoints / 100, text);
    std::snprintf(text, sizeof text, "epochs %.2f <= %.1fx Optuna's %.2f", td.epochs, kEpochRatio, op.epochs);
    target(td.epochs <= kEpochRatio * op.epochs, text);
    std::snprintf(text, sizeof text, "decision in-process: max suggest + max promotion %.3f ms < %.0f ms", decision_max,
                  kDecisionMs);
    target(decision_max < kDecisionMs, text);
    std::snprintf(text, sizeof text, "decision in the worker: median slot freed -> next job queued %.1f ms < %.0f ms",
                  median(latency.freed_to_queued), kDecisionMs);
    target(median(latency.freed_to_queued) < kDecisionMs, text);
    std::snprintf(text, sizeof text, "ASHA epochs %.1f %% <= %.0f %% of %d x %d", 100 * td.epochs / full_epochs,
                  100 * kAshaShare, o.trials, o.epochs);
    target(td.epochs <= kAshaShare * full_epochs, text);
    return all_met ? 0 : 1;
}
