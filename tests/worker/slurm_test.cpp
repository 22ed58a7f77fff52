// The Slurm executor against a real single-node Slurm (slurmctld, slurmd, munged, slurmrestd) that this test
// starts with installer/slurm-single-node.sh: built-in and PyTorch jobs end to end, through slurmrestd (JWT) and
// through sbatch/squeue/scancel, resources mapped to Slurm's options, cancel reaching the job on its node.
#include "checkpoint.h"
#include "jobchecks.h"
#include "requireall.h"
#include "workerprocess.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include <unistd.h>

using namespace traindeck::test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr int kRestPort = 16820;

std::string cluster_dir() { return (fs::temp_directory_path() / "traindeck-slurm-test").string(); }
std::string slurm_conf() { return cluster_dir() + "/slurm.conf"; }

std::string run(const std::string& command) {
    FILE* pipe = ::popen(command.c_str(), "r");
    std::string out;
    char buffer[512];
    while (pipe && std::fgets(buffer, sizeof(buffer), pipe))
        out += buffer;
    if (pipe)
        ::pclose(pipe);
    return out;
}

// What squeue says of a finished job once Slurm has settled it. The worker learns that the job's program ended
// from the job itself; Slurm may still show COMPLETING while its node tidies up, so this waits for that to pass.
std::string settled(const std::string& slurm, const std::string& format) {
    const std::string state = "squeue -h -t all -j " + slurm + " -o '%T'";
    for (int i = 0; i < 1200 && run(state) == "COMPLETING\n"; ++i)
        ::usleep(100000);
    return run("squeue -h -t all -j " + slurm + " -o '" + format + "'");
}

bool fashion_mnist() { return fs::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"); }

class Slurm : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        if (::getuid() != 0) {
            skip_ = "the single-node Slurm needs root (munged, slurmd)";
            return;
        }
        if (run("for p in slurmctld slurmd slurmrestd munged sbatch; do command -v $p; done | wc -l").find('5') != 0) {
            skip_ = "Slurm is not installed (installer/install-deps.sh --tests installs it)";
            return;
        }
        const std::string command = "SLURMRESTD_PORT=" + std::to_string(kRestPort) +
                                    " SLURMCTLD_PORT=16817 SLURMD_PORT=16818 bash '" + source_dir() +
                                    "/installer/slurm-single-node.sh' start '" + cluster_dir() + "' 8 2>&1";
        const std::string output = run(command);
        if (output.find("slurm-single-node: up") == std::string::npos)
            started_error_ = output;
    }
    static void TearDownTestSuite() {
        if (skip_.empty())
            run("bash '" + source_dir() + "/installer/slurm-single-node.sh' stop '" + cluster_dir() + "' 2>&1");
    }
    void SetUp() override {
        if (!skip_.empty()) {
            TRAINDECK_SKIP(skip_);
        }
        ASSERT_TRUE(started_error_.empty()) << "the test cluster did not start:\n" << started_error_;
        ::setenv("SLURM_CONF", slurm_conf().c_str(), 1);
    }
    // Not left for the tests that follow in this process: a worker passes it on to its jobs.
    void TearDown() override { ::unsetenv("SLURM_CONF"); }
    std::vector<std::string> rest_args() const {
        return {"--executor", "slurm", "--slurm-conf", slurm_conf(), "--slurm-rest", "http://127.0.0.1:" + std::to_string(kRestPort),
                "--slurm-token-file", cluster_dir() + "/jwt.token", "--slurm-user", "root", "--stop-grace", "20"};
    }
    std::vector<std::string> cli_args() const { return {"--executor", "slurm", "--slurm-conf", slurm_conf(), "--slurm-user", "root"}; }
    static std::string slurm_id(const WorkerProcess& worker, int64_t job) {
        std::ifstream in(worker.state_dir() + "/jobs/" + std::to_string(job) + "/slurm_job");
        std::string id;
        in >> id;
        return id;
    }
    static inline std::string skip_, started_error_;
};

long metric_steps(const std::vector<json>& events) {
    std::set<long> steps;
    for (const auto& e : events)
        if (e["type"] == "record" && e["data"].value("type", "") == "metric")
            steps.insert(e["data"]["step"].get<long>());
    return steps.empty() ? 0 : (*steps.rbegin() == static_cast<long>(steps.size()) ? static_cast<long>(steps.size()) : -1);
}

} // namespace

TEST_F(Slurm, BuiltinJobThroughSlurmrestdStreamsEveryEvent) {
    if (!fashion_mnist()) {
        TRAINDECK_SKIP("dataset-fashion-mnist is not installed");
    }
    WorkerProcess worker(rest_args());
    const json spec = {{"model", "mlp"}, {"hidden", {32}}, {"data", {{"dataset", "fashion-mnist"}, {"limit", 3000}}},
                       {"epochs", 2}, {"batch_size", 64}, {"seed", 4}, {"checkpoint_every", 10}};
    const int64_t id = worker.submit({{"name", "on slurm"}, {"builtin", spec}, {"resources", {{"cpus", 2}, {"memory_mb", 500}, {"time_minutes", 7}}}});
    ASSERT_GT(id, 0) << worker.last_error;
    const auto events = worker.drain(id, 180);
    expect_gapless(events);
    const json job = worker.job(id);
    EXPECT_EQ(job["state"], "succeeded") << job.dump();
    EXPECT_EQ(metric_steps(events), 2 * 43); // 2,700 training samples / 64 → 43 steps an epoch
    bool said_slurm = false;
    for (const auto& e : events)
        if (e["type"] == "state")
            said_slurm |= e["data"].value("reason", "").find("Slurm job") != std::string::npos;
    EXPECT_TRUE(said_slurm);
    // Slurm ran it with the resources asked for.
    const std::string slurm = slurm_id(worker, id);
    ASSERT_FALSE(slurm.empty());
    EXPECT_EQ(settled(slurm, "%T|%C|%m|%l"), "COMPLETED|2|500M|7:00\n");
    // The worker reports the cluster's size, not the login node's.
    const json resources = worker.client().get("/v1/resources").json();
    EXPECT_EQ(resources["cpus"], 8) << resources.dump();
    EXPECT_EQ(resources["cluster"]["nodes"], 1) << resources.dump();
    EXPECT_NE(resources["executor"].get<std::string>().find("slurmrestd"), std::string::npos);
}

TEST_F(Slurm, PyTorchExampleThroughSbatch) {
    if (!fashion_mnist()) {
        TRAINDECK_SKIP("dataset-fashion-mnist is not installed");
    }
    if (!torch_available()) {
        TRAINDECK_SKIP("Debian's python3-torch is not installed");
    }
    WorkerProcess worker(cli_args());
    const int64_t id = worker.submit(pytorch_example_job("pytorch on slurm"));
    ASSERT_GT(id, 0) << worker.last_error;
    const auto events = worker.drain(id, 300);
    expect_gapless(events);
    EXPECT_EQ(worker.job(id)["state"], "succeeded") << worker.job(id).dump();
    EXPECT_EQ(metric_steps(events), 20);
    // The job saw its Slurm allocation.
    const std::string slurm = slurm_id(worker, id);
    ASSERT_FALSE(slurm.empty());
    EXPECT_EQ(settled(slurm, "%T"), "COMPLETED\n");
}

TEST_F(Slurm, CancelReachesTheJobOnItsNodeAndKeepsTheCheckpoint) {
    if (!fashion_mnist()) {
        TRAINDECK_SKIP("dataset-fashion-mnist is not installed");
    }
    WorkerProcess worker(rest_args());
    const json spec = {{"model", "cnn"}, {"data", {{"dataset", "fashion-mnist"}, {"limit", 20000}}}, {"epochs", 5},
                       {"batch_size", 64}, {"seed", 4}, {"checkpoint_every", 5}};
    const int64_t id = worker.submit({{"name", "long"}, {"builtin", spec}, {"resources", {{"cpus", 1}}}});
    ASSERT_GT(id, 0) << worker.last_error;
    const std::string checkpoints = worker.state_dir() + "/jobs/" + std::to_string(id) + "/checkpoints";
    for (int i = 0; i < 600 && (!fs::exists(checkpoints) || fs::is_empty(checkpoints)); ++i)
        ::usleep(100000);
    ASSERT_FALSE(fs::is_empty(checkpoints)) << worker.job(id).dump();
    ASSERT_TRUE(worker.client().post("/v1/jobs/" + std::to_string(id) + "/cancel", std::string("{}")).ok());
    const json done = worker.wait_for_state(id, {"cancelled", "failed", "succeeded"}, 60);
    EXPECT_EQ(done["state"], "cancelled") << done.dump();
    EXPECT_EQ(done["exit_code"], 75) << "SIGTERM reached the trainer, which checkpointed and exited 75";
    auto found = traindeck::engine::find_latest_checkpoint(checkpoints);
    ASSERT_TRUE(found);
    EXPECT_FALSE(found->path.empty());
    // Resume continues on Slurm from that checkpoint.
    ASSERT_TRUE(worker.client().post("/v1/jobs/" + std::to_string(id) + "/resume", std::string("{}")).ok());
    const json resumed = worker.wait_for_state(id, {"running"}, 30);
    EXPECT_NE(resumed["reason"].get<std::string>().find("resumed"), std::string::npos) << resumed.dump();
    ASSERT_TRUE(worker.client().post("/v1/jobs/" + std::to_string(id) + "/cancel", std::string("{}")).ok());
    EXPECT_EQ(worker.wait_for_state(id, {"cancelled", "failed"}, 60)["state"], "cancelled");
}

TEST_F(Slurm, ASweepRunsEachTrialAsABatchJobAndPromotesThroughTheCheckpoint) {
    if (!fashion_mnist()) {
        TRAINDECK_SKIP("dataset-fashion-mnist is not installed");
    }
    WorkerProcess worker(cli_args());
    // Two trials held after step 86 (past their first validation, the rung at 1 epoch) until released: the ASHA
    // pause, a SIGTERM through scancel, is what ends each hold; the promoted trial, back at step 86 on a new batch
    // job, holds again until the test releases it.
    const std::string release = worker.state_dir() + "/release";
    const json spec = {{"model", "mlp"},
                       {"hidden", {64}},
                       {"data", {{"dataset", "fashion-mnist"}, {"limit", 6000}}},
                       {"batch_size", 64},
                       {"seed", 7},
                       {"checkpoint_every", 0},
                       {"optimizer", {{"type", "sgd"}}}};
    const auto created = worker.client().post(
        "/v1/sweeps", json{{"name", "slurm-asha"},
                           {"base", held({{"builtin", spec}, {"resources", {{"cpus", 1}}}}, 86, release)},
                           {"space", {{"optimizer.lr", {{"choice", {0.002, 0.05}}}}}},
                           {"method", "grid"},
                           {"early_stopping",
                            {{"method", "asha"}, {"min_resource", 1}, {"max_resource", 2}, {"reduction_factor", 2}}},
                           {"max_trials", 2},
                           {"max_concurrent", 2}});
    ASSERT_EQ(created.status, 201) << created.body;
    const std::string path = "/v1/sweeps/" + created.json()["id"].dump();
    json sweep;
    for (int i = 0; i < 3000; ++i) { // a guard against a hang (5 min), not a pace
        sweep = worker.client().get(path).json();
        // Released only once one trial is promoted AND the other's pause has taken effect (its batch job got the
        // SIGTERM through scancel and ended): released earlier, on a loaded machine the other trial could pass its
        // hold before the signal arrived and train to the end.
        bool promoted = false, other_paused = false;
        for (const json& trial : sweep.value("trials", json::array())) {
            promoted |= trial["rung"] == 1;
            other_paused |= trial["rung"] == 0 && trial["state"] == "paused";
        }
        if (promoted && other_paused)
            break;
        ::usleep(100000);
    }
    touch(release);
    for (int i = 0; i < 3000 && sweep.value("state", "") == "running"; ++i) {
        ::usleep(100000);
        sweep = worker.client().get(path).json();
    }
    ASSERT_EQ(sweep["state"], "finished") << sweep.dump(2);
    ASSERT_EQ(sweep["trials"].size(), 2u);
    std::set<std::string> states;
    for (const json& trial : sweep["trials"]) {
        states.insert(trial["state"].get<std::string>());
        // Each trial ran as a batch job of its own (the promoted one's last run is a new batch job).
        EXPECT_FALSE(slurm_id(worker, trial["job"].get<int64_t>()).empty()) << trial.dump();
    }
    EXPECT_EQ(states, (std::set<std::string>{"completed", "pruned"}));
}

TEST_F(Slurm, AJobSlurmCannotRunFailsWithSlurmsReason) {
    WorkerProcess worker(rest_args());
    const int64_t id = worker.submit({{"name", "too big"}, {"argv", {"/bin/true"}}, {"resources", {{"cpus", 64}}}});
    ASSERT_GT(id, 0) << worker.last_error; // the worker takes it: only Slurm knows the cluster's size
    const json done = worker.wait_for_state(id, {"failed", "succeeded"}, 30);
    EXPECT_EQ(done["state"], "failed") << done.dump();
    EXPECT_NE(done["reason"].get<std::string>().find("slurmrestd"), std::string::npos) << done.dump();
}
