// Sweeps in a real worker with real trials: ASHA pausing and promoting through checkpoints, divergence stops, the
// money cap, bad specs, a worker killed mid-sweep. Trials are paced by holds and release files (tests wait for
// events, never for time).
#include "jobchecks.h"
#include "requireall.h"
#include "sqlitedb.h"
#include "workerprocess.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include <sys/wait.h>

using namespace traindeck::test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

bool fashion_mnist() { return fs::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"); }

// 6,000 images: 5,400 to train on, 85 steps an epoch at batch 64 (the validation at step 85, 170, 255).
json small_mlp() {
    return {{"model", "mlp"},
            {"hidden", {64}},
            {"data", {{"dataset", "fashion-mnist"}, {"limit", 6000}}},
            {"batch_size", 64},
            {"epochs", 3},
            {"seed", 7},
            {"checkpoint_every", 0},
            {"optimizer", {{"type", "sgd"}, {"lr", 0.05}}}};
}

int64_t create(WorkerProcess& worker, const json& spec) {
    const auto reply = worker.client().post("/v1/sweeps", spec);
    EXPECT_EQ(reply.status, 201) << reply.body;
    return reply.ok() ? reply.json()["id"].get<int64_t>() : 0;
}

json sweep_of(WorkerProcess& worker, int64_t id) {
    return worker.client().get("/v1/sweeps/" + std::to_string(id)).json();
}

// Polls the sweep until its state is one of `states` (the timeout guards against a hang; it is not a pace).
json wait_for_sweep(WorkerProcess& worker, int64_t id, const std::set<std::string>& states, double timeout_s = 300) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    json sweep;
    while (std::chrono::steady_clock::now() < deadline) {
        sweep = sweep_of(worker, id);
        if (sweep.is_object() && states.count(sweep.value("state", "")))
            return sweep;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << "sweep " << id << " never reached the state asked for: " << sweep.dump();
    return nullptr;
}

std::vector<json> records(const std::vector<json>& events, const std::string& type) {
    std::vector<json> found;
    for (const json& event : events)
        if (event["type"] == "record" && event["data"].value("type", "") == type)
            found.push_back(event["data"]);
    return found;
}

std::string write_script(const std::string& dir, const std::string& name, const std::string& body) {
    std::string path = dir + "/" + name;
    std::ofstream(path) << "import os, sys, time\nsys.path.insert(0, "
                        << json(source_dir() + "/resources/python").dump() << ")\nimport traindeck\n"
                        << body;
    return path;
}

} // namespace

TEST(Sweep, AshaPausesTrialsAtTheirRungAndPromotesTheBestFromItsCheckpoint) {
    if (!fashion_mnist()) {
        TRAINDECK_SKIP("dataset-fashion-mnist is not installed (installer/install-deps.sh installs it)");
    }
    WorkerProcess worker({"--cpus", "2"});
    // Every trial holds after step 86, just past its first validation (the rung at 1 epoch), until released: the
    // pause is what ends the hold of each, however fast the machine trains. The promoted trial, back at step 86,
    // holds again until the test releases it.
    const std::string release = worker.state_dir() + "/release";
    const json base = held({{"builtin", small_mlp()}, {"resources", {{"cpus", 1}}}}, 86, release);
    const int64_t id = create(worker, {{"name", "asha"},
                                       {"base", base},
                                       {"space", {{"optimizer.lr", {{"choice", {0.002, 0.1, 0.02}}}}}},
                                       {"method", "grid"},
                                       {"early_stopping",
                                        {{"method", "asha"},
                                         {"resource", "epochs"},
                                         {"min_resource", 1},
                                         {"max_resource", 3},
                                         {"reduction_factor", 3}}},
                                       {"max_trials", 3},
                                       {"max_concurrent", 1}});
    ASSERT_GT(id, 0);
    json promoted;
    for (const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
         std::chrono::steady_clock::now() < deadline && promoted.is_null();) {
        const json sweep = sweep_of(worker, id);
        for (const json& trial : sweep["trials"])
            if (trial["rung"] == 1)
                promoted = trial;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_FALSE(promoted.is_null());
    EXPECT_EQ(sweep_of(worker, id)["trial_states"], json({{"paused", 2}, {"running", 1}}));
    touch(release);
    const json done = wait_for_sweep(worker, id, {"finished"});
    ASSERT_TRUE(done.is_object());
    EXPECT_EQ(done["rungs"], json({1.0, 3.0}));
    ASSERT_EQ(done["trials"].size(), 3u) << done.dump(2);
    // Rung 0 holds all three; floor(3 / 3) = 1 goes on: the best at rung 0, and no other.
    int best = -1;
    for (int i = 0; i < 3; ++i)
        if (best < 0 || done["trials"][i]["objectives"][0] > done["trials"][best]["objectives"][0])
            best = i;
    int epochs_trained = 0;
    for (int i = 0; i < 3; ++i) {
        const json& trial = done["trials"][i];
        const std::vector<json> events = worker.drain(trial["job"].get<int64_t>());
        const std::vector<json> epochs = records(events, "epoch");
        epochs_trained += static_cast<int>(epochs.size());
        EXPECT_EQ(trial["params"]["optimizer.lr"], json({0.002, 0.1, 0.02})[i]); // the grid's order
        if (i == best) {
            EXPECT_EQ(trial["state"], "completed") << trial.dump();
            EXPECT_EQ(trial["objectives"].size(), 2u);
            // Promoted by resuming its checkpoint: it was stopped once, its trainer came back from the step it paused
            // at (85, the rung's validation, or 86, the hold), and each of its three epochs was trained once.
            bool paused = false, promoted = false;
            for (const json& event : events)
                if (event["type"] == "state") {
                    paused |=
                        event["data"]["reason"].get<std::string>().find("paused by its sweep") != std::string::npos;
                    promoted |=
                        event["data"]["reason"].get<std::string>().find("promoted to rung 1") != std::string::npos;
                }
            EXPECT_TRUE(paused && promoted);
            int64_t resumed_from = 0;
            for (const json& status : records(events, "status"))
                resumed_from = std::max<int64_t>(resumed_from, status.value("resumed_from_step", int64_t(0)));
            EXPECT_GE(resumed_from, 85);
            ASSERT_EQ(epochs.size(), 3u);
            for (int e = 0; e < 3; ++e)
                EXPECT_EQ(epochs[e]["epoch"], e + 1);
        } else {
            EXPECT_EQ(trial["state"], "pruned") << trial.dump();
            EXPECT_EQ(trial["objectives"].size(), 1u);
            EXPECT_EQ(worker.job(trial["job"].get<int64_t>())["state"], "stopped");
            EXPECT_EQ(epochs.size(), 1u);
        }
    }
    EXPECT_EQ(epochs_trained, 5); // 3 + 1 + 1, where running all three to the end trains 9
    EXPECT_EQ(done["best"]["trial"], best + 1);
}

TEST(Sweep, ADivergingTrialIsStoppedOnTheLineAndScriptsGetTheirParameters) {
    WorkerProcess worker;
    const std::string release = worker.state_dir() + "/never";
    // The loss falls to 0.2 by step 5, jumps to 50 at step 6 (over 10 × the lowest its moving average has been, 0.762),
    // then the script would go on until released, which it never is.
    const std::string script = write_script(worker.state_dir(), "diverge.py", R"(
p = traindeck.params({"width": 1})
print("params", p, flush=True)
for step in range(1, 6):
    traindeck.log(step, loss=1.0 / step)
traindeck.log(6, loss=50.0)
step = 7
while not os.path.exists()" + json(release).dump() + R"():
    traindeck.log(step, loss=0.1)
    step += 1
    time.sleep(0.05)
)");
    const int64_t id = create(worker, {{"base", {{"argv", {"/usr/bin/python3", script}}}},
                                       {"space", {{"lr", {{"choice", {0.5}}}}}},
                                       {"method", "grid"},
                                       {"objective", {{"metric", "loss"}, {"goal", "min"}}},
                                       {"max_trials", 1}});
    ASSERT_GT(id, 0);
    const json done = wait_for_sweep(worker, id, {"finished"});
    ASSERT_TRUE(done.is_object());
    ASSERT_EQ(done["trials"].size(), 1u);
    const json& trial = done["trials"][0];
    EXPECT_EQ(trial["state"], "diverged") << trial.dump();
    EXPECT_NE(
        trial["reason"].get<std::string>().find("loss 50 at step 6 is over 10 × its lowest moving average 0.76205"),
        std::string::npos)
        << trial["reason"];
    EXPECT_EQ(worker.job(trial["job"].get<int64_t>())["state"], "cancelled");
    // The script read its parameters from TRAINDECK_PARAMS, over its defaults, and recorded them as its config.
    const std::vector<json> events = worker.drain(trial["job"].get<int64_t>());
    const std::vector<json> configs = records(events, "config");
    ASSERT_EQ(configs.size(), 1u);
    EXPECT_EQ(configs[0]["config"], json({{"lr", 0.5}, {"width", 1}}));
}

TEST(Sweep, ABadSpecIsAClearErrorAndStartsNothing) {
    WorkerProcess worker;
    const json base = {{"argv", {"/bin/true"}}};
    const std::vector<std::pair<json, std::string>> bad = {
        {{{"base", base}, {"space", {{"x", {{"uniform", {0, 1}}}}}}, {"method", "bayes"}}, "method"},
        {{{"base", base}, {"space", json::object()}}, "space"},
        {{{"base", base}, {"space", {{"optimizer.lr", {{"loguniform", {0.3, 0.1}}}}}}}, "space.optimizer.lr"},
        {{{"space", {{"x", {{"uniform", {0, 1}}}}}}}, "base"},
        {{{"base", {{"argv", {"/bin/true"}}, {"colour", "red"}}}, {"space", {{"x", {{"choice", {1, 2}}}}}}}, "colour"},
    };
    for (const auto& [spec, key] : bad) {
        const auto reply = worker.client().post("/v1/sweeps", spec);
        EXPECT_EQ(reply.status, 400) << spec.dump();
        EXPECT_NE(reply.message().find(key), std::string::npos) << reply.message();
    }
    EXPECT_EQ(worker.client().post("/v1/sweeps", std::string("{not json")).status, 400);
    EXPECT_EQ(worker.client().get("/v1/sweeps").json()["sweeps"].size(), 0u);
    EXPECT_EQ(worker.client().get("/v1/jobs").json()["jobs"].size(), 0u);
    EXPECT_EQ(worker.client().get("/v1/sweeps/7").status, 404);
    EXPECT_EQ(worker.client().post("/v1/sweeps/7/stop", std::string("{}")).status, 404);
}

TEST(Sweep, TheMoneyCapStopsTheSweepWithEveryRunningTrialCheckpointed) {
    if (!fashion_mnist()) {
        TRAINDECK_SKIP("dataset-fashion-mnist is not installed (installer/install-deps.sh installs it)");
    }
    // 3600 an hour: each running trial spends 1 a second. Trials hold after step 5 for good, so the cap of 3 is what
    // ends them, however fast the machine trains.
    WorkerProcess worker({"--price-base", "3600", "--cpus", "2"});
    const json base = held({{"builtin", small_mlp()}, {"resources", {{"cpus", 1}}}}, 5, worker.state_dir() + "/never");
    const int64_t id = create(worker, {{"base", base},
                                       {"space", {{"optimizer.lr", {{"loguniform", {0.001, 0.1}}}}}},
                                       {"method", "random"},
                                       {"max_trials", 10},
                                       {"max_concurrent", 2},
                                       {"budget", {{"money", 3.0}}}});
    ASSERT_GT(id, 0);
    const json capped = wait_for_sweep(worker, id, {"budget", "finished"});
    ASSERT_TRUE(capped.is_object());
    EXPECT_EQ(capped["state"], "budget") << capped.dump(2);
    EXPECT_NE(capped["reason"].get<std::string>().find("budget of 3 is spent"), std::string::npos) << capped["reason"];
    // Every trial that was running is checkpointed and stopped (resumable), none failed, none still running.
    json after;
    for (const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
         std::chrono::steady_clock::now() < deadline;) {
        after = sweep_of(worker, id);
        if (after["trial_states"].value("stopping", 0) == 0)
            break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ASSERT_GE(after["trials"].size(), 2u);
    for (const json& trial : after["trials"]) {
        EXPECT_EQ(trial["state"], "stopped") << trial.dump();
        const int64_t job = trial["job"].get<int64_t>();
        EXPECT_EQ(worker.job(job)["state"], "stopped");
        bool checkpointed = false;
        for (const auto& entry :
             fs::directory_iterator(worker.state_dir() + "/jobs/" + std::to_string(job) + "/checkpoints"))
            checkpointed |= entry.path().extension() == ".tdck";
        EXPECT_TRUE(checkpointed) << "trial " << trial["trial"] << " left no checkpoint";
    }
    EXPECT_GE(after["spend"].get<double>(), 3.0);
    // Resuming needs a higher cap first.
    EXPECT_EQ(worker.client().post("/v1/sweeps/" + std::to_string(id) + "/resume", std::string("{}")).status, 422);
}

TEST(Sweep, AWorkerKilledMidSweepComesBackWithEveryTrialOnce) {
    auto worker = std::make_unique<WorkerProcess>(std::vector<std::string>{"--cpus", "2"});
    const std::string release = worker->state_dir() + "/release";
    // Each trial waits for the release file, then reports its objective and ends.
    const std::string script = write_script(worker->state_dir(), "trial.py", R"(
p = traindeck.params()
while not os.path.exists()" + json(release).dump() + R"():
    time.sleep(0.05)
traindeck.evaluate("val", 1, accuracy=1.0 - abs(p["x"] - 0.3))
)");
    const int64_t id =
        create(*worker, {{"base", {{"argv", {"/usr/bin/python3", script}}, {"resources", {{"cpus", 1}}}}},
                         {"space", {{"x", {{"uniform", {0, 1}}}}}},
                         {"method", "random"},
                         {"seed", 11},
                         {"max_trials", 4},
                         {"max_concurrent", 2}});
    ASSERT_GT(id, 0);
    // Two trials running, then the worker dies as a crash would, and comes back on the same state folder.
    json sweep;
    for (const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
         std::chrono::steady_clock::now() < deadline;) {
        sweep = sweep_of(*worker, id);
        if (sweep["trials"].size() == 2 && worker->job(sweep["trials"][1]["job"].get<int64_t>())["state"] == "running")
            break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_EQ(sweep["trials"].size(), 2u);
    const json before = sweep["trials"];
    worker->kill_hard();
    touch(release);
    ASSERT_TRUE(worker->restart());
    const json done = wait_for_sweep(*worker, id, {"finished"});
    ASSERT_TRUE(done.is_object());
    ASSERT_EQ(done["trials"].size(), 4u) << done.dump(2);
    // The trials from before the kill are the same trials (same jobs, same parameters), each trial one job, each
    // job one trial, all finished; and the worker holds no job that is no trial.
    std::set<int64_t> jobs;
    std::set<double> xs;
    for (size_t i = 0; i < 4; ++i) {
        const json& trial = done["trials"][i];
        EXPECT_EQ(trial["state"], "completed") << trial.dump();
        jobs.insert(trial["job"].get<int64_t>());
        xs.insert(trial["params"]["x"].get<double>());
        if (i < 2) {
            EXPECT_EQ(trial["job"], before[i]["job"]);
            EXPECT_EQ(trial["params"], before[i]["params"]);
        }
        EXPECT_NEAR(trial["best"].get<double>(), 1.0 - std::abs(trial["params"]["x"].get<double>() - 0.3), 1e-12);
    }
    EXPECT_EQ(jobs.size(), 4u);
    EXPECT_EQ(xs.size(), 4u); // random without repeats
    EXPECT_EQ(worker->client().get("/v1/jobs").json()["jobs"].size(), 4u);
}

TEST(Sweep, TrialsTakeAGpuEachByDefaultAndShareOneWhenAsked) {
    // One GPU (NVML's test double). Each trial writes the GPUs it was given, waits for its sweep's release file,
    // then reports its objective.
    WorkerProcess worker({"--cpus", "4"}, {}, test_gpus(1));
    const std::string dir = worker.state_dir();
    const std::string script = write_script(dir, "trial.py", R"(
p = traindeck.params()
tag = os.environ["TRAINDECK_SWEEP"] + "-" + os.environ["TRAINDECK_TRIAL"]
with open(os.path.join()" + json(dir).dump() + R"(, "visible-" + tag), "w") as out:
    out.write(os.environ.get("CUDA_VISIBLE_DEVICES", "unset"))
while not os.path.exists(os.path.join()" + json(dir).dump() + R"(, "release-" + os.environ["TRAINDECK_SWEEP"])):
    time.sleep(0.05)
traindeck.evaluate("val", 1, accuracy=p["x"])
)");
    const auto start = [&](int trials_per_gpu) {
        return create(worker, {{"base", {{"argv", {"/usr/bin/python3", script}}, {"resources", {{"cpus", 1}}}}},
                               {"space", {{"x", {{"choice", {0.1, 0.2, 0.3}}}}}},
                               {"method", "grid"},
                               {"max_trials", 3},
                               {"max_concurrent", 3},
                               {"trials_per_gpu", trials_per_gpu}});
    };
    // Waits until the sweep has three trial jobs and `running` of them run; returns the sweep then.
    const auto wait_running = [&](int64_t id, size_t running) {
        json sweep;
        for (const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
             std::chrono::steady_clock::now() < deadline; std::this_thread::sleep_for(std::chrono::milliseconds(50))) {
            sweep = sweep_of(worker, id);
            if (sweep["trials"].size() != 3)
                continue;
            size_t now = 0;
            for (const json& trial : sweep["trials"])
                now += worker.job(trial["job"].get<int64_t>())["state"] == "running";
            if (now == running)
                return sweep;
        }
        ADD_FAILURE() << "sweep " << id << " never had " << running << " trials running: " << sweep.dump();
        return json();
    };
    const auto states = [&](const json& sweep) {
        std::multiset<std::string> found;
        for (const json& trial : sweep["trials"])
            found.insert(worker.job(trial["job"].get<int64_t>())["state"].get<std::string>());
        return found;
    };
    const auto visible = [&](int64_t id, int trial) {
        return wait_for_word(dir + "/visible-" + std::to_string(id) + "-" + std::to_string(trial));
    };

    // By default a trial holds the GPU: one runs, two wait, though three may run at once.
    const int64_t whole = start(1);
    ASSERT_GT(whole, 0);
    json sweep = wait_running(whole, 1);
    ASSERT_TRUE(sweep.is_object());
    EXPECT_EQ(states(sweep), (std::multiset<std::string>{"queued", "queued", "running"}));
    const json first = worker.job(sweep["trials"][0]["job"].get<int64_t>());
    EXPECT_EQ(first["request"]["resources"]["gpus"], 1);
    EXPECT_EQ(first["request"]["resources"]["gpu_share"], 1);
    EXPECT_EQ(visible(whole, 1), "0");
    touch(dir + "/release-" + std::to_string(whole));
    const json whole_done = wait_for_sweep(worker, whole, {"finished"});
    ASSERT_TRUE(whole_done.is_object());
    for (const json& trial : whole_done["trials"])
        EXPECT_EQ(trial["state"], "completed") << trial.dump();

    // trials_per_gpu 2: two share the GPU, both told CUDA_VISIBLE_DEVICES=0, and the third waits for room.
    const int64_t shared = start(2);
    ASSERT_GT(shared, 0);
    sweep = wait_running(shared, 2);
    ASSERT_TRUE(sweep.is_object());
    EXPECT_EQ(states(sweep), (std::multiset<std::string>{"queued", "running", "running"}));
    for (const json& trial : sweep["trials"]) {
        const json job = worker.job(trial["job"].get<int64_t>());
        EXPECT_EQ(job["request"]["resources"]["gpus"], 1);
        EXPECT_EQ(job["request"]["resources"]["gpu_share"], 2);
    }
    EXPECT_EQ(visible(shared, 1), "0");
    EXPECT_EQ(visible(shared, 2), "0");
    EXPECT_EQ(wait_for_gpu_share(worker, 0, 1.0), 1.0);
    touch(dir + "/release-" + std::to_string(shared));
    const json shared_done = wait_for_sweep(worker, shared, {"finished"});
    ASSERT_TRUE(shared_done.is_object());
    ASSERT_EQ(shared_done["trials"].size(), 3u);
    for (const json& trial : shared_done["trials"])
        EXPECT_EQ(trial["state"], "completed") << trial.dump();
    EXPECT_EQ(visible(shared, 3), "0");
}

TEST(Sweep, ASweepStoredWithMoreTrialsPerGpuThanTheLimitStillLoads) {
    // Workers before the limit of 8 stored any trials_per_gpu: a worker of today starts on such a database and the
    // sweep goes on with 8 (it is not refused, which would keep the worker from starting at all).
    auto worker = std::make_unique<WorkerProcess>(std::vector<std::string>{"--cpus", "1"});
    const int64_t id = create(*worker, {{"base", {{"argv", {"/bin/true"}}}},
                                        {"space", {{"x", {{"choice", {1}}}}}},
                                        {"method", "grid"},
                                        {"objective", {{"metric", "loss"}, {"goal", "min"}}},
                                        {"max_trials", 1},
                                        {"trials_per_gpu", 2}});
    ASSERT_GT(id, 0);
    worker->kill_hard();
    {
        traindeck::Database db;
        ASSERT_EQ(db.open(worker->state_dir() + "/worker.db", false), "");
        db.exec("UPDATE sweeps SET spec=json_set(spec, '$.trials_per_gpu', 100) WHERE id=" + std::to_string(id));
    }
    ASSERT_TRUE(worker->restart()) << "the worker did not start on a sweep stored with trials_per_gpu 100";
    const json sweep = sweep_of(*worker, id);
    ASSERT_TRUE(sweep.is_object()) << sweep.dump();
    EXPECT_EQ(sweep["spec"]["trials_per_gpu"], 8);
}

TEST(Sweep, TheCommandLineStartsASweepAndFollowsItToItsEnd) {
    WorkerProcess worker;
    const std::string script = write_script(worker.state_dir(), "quadratic.py", R"(
p = traindeck.params()
traindeck.evaluate("val", 1, loss=(p["x"] - 0.3) ** 2)
)");
    const std::string spec_path = worker.state_dir() + "/spec.json";
    std::ofstream(spec_path) << json({{"name", "cli"},
                                      {"base", {{"argv", {"/usr/bin/python3", script}}}},
                                      {"space", {{"x", {{"uniform", {-1, 1}}}}}},
                                      {"method", "tpe"},
                                      {"objective", {{"metric", "val/loss"}, {"goal", "min"}}},
                                      {"max_trials", 3},
                                      {"max_concurrent", 1}})
                                    .dump();
    const auto run = [&](const std::string& arguments, std::string& output) {
        FILE* pipe = ::popen((train_binary() + " sweep " + arguments + " 2>&1").c_str(), "r");
        char buffer[4096];
        for (size_t n; pipe && (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;)
            output.append(buffer, n);
        const int status = pipe ? ::pclose(pipe) : -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    };
    const std::string worker_args = " --worker " + worker.url() + " --token-file " + worker.state_dir() + "/token";
    std::string output;
    EXPECT_EQ(run(spec_path + worker_args + " --watch", output), 0) << output;
    EXPECT_NE(output.find("sweep 1 started"), std::string::npos) << output;
    EXPECT_NE(output.find("sweep 1: finished — 3 trials; best val/loss"), std::string::npos) << output;
    EXPECT_EQ(sweep_of(worker, 1)["trial_states"], json({{"completed", 3}}));
    // A bad spec is refused before it reaches the worker, naming the key; a wrong token by the worker.
    std::ofstream(spec_path) << R"({"base": {"argv": ["/bin/true"]}, "space": {"x": {"uniform": [1, 0]}}})";
    output.clear();
    EXPECT_EQ(run(spec_path + worker_args, output), 2) << output;
    EXPECT_NE(output.find("space.x"), std::string::npos) << output;
    output.clear();
    EXPECT_EQ(run("--status 1 --worker " + worker.url(), output), 3) << output;
    EXPECT_NE(output.find("missing \"Authorization: Bearer"), std::string::npos) << output;
    EXPECT_EQ(worker.client().get("/v1/sweeps").json()["sweeps"].size(), 1u);
}
