// The worker as a real process on loopback: real jobs, real kills, real restarts.
#include "checkpoint.h"
#include "jobchecks.h"
#include "requireall.h"
#include "smalldisk.h"
#include "supervisor.h"
#include "tfevents.h"
#include "workerprocess.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include <sys/wait.h>

using namespace traindeck::test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

bool fashion_mnist() { return fs::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"); }

#define REQUIRE_FASHION_MNIST()                                                                                        \
    if (!fashion_mnist()) {                                                                                            \
        TRAINDECK_SKIP("dataset-fashion-mnist is not installed (installer/install-deps.sh installs it)");              \
    }                                                                                                                  \
    static_assert(true)

json small_mlp(long limit = 4000, int epochs = 2) {
    return {{"model", "mlp"}, {"hidden", {64}}, {"data", {{"dataset", "fashion-mnist"}, {"limit", limit}}},
            {"batch_size", 64}, {"epochs", epochs}, {"seed", 7}, {"checkpoint_every", 5}};
}

std::vector<json> of_type(const std::vector<json>& events, const std::string& type, const std::string& record = "") {
    std::vector<json> found;
    for (const auto& e : events)
        if (e["type"] == type && (record.empty() || e["data"].value("type", "") == record))
            found.push_back(e);
    return found;
}

// The last value the job reported for every step: what a chart of the run shows.
std::map<long, double> loss_curve(const std::vector<json>& events) {
    std::map<long, double> curve;
    for (const auto& e : of_type(events, "record", "metric"))
        curve[e["data"]["step"].get<long>()] = e["data"]["loss"].get<double>();
    return curve;
}

std::vector<float> final_weights(const std::string& checkpoint_dir) {
    auto found = traindeck::engine::find_latest_checkpoint(checkpoint_dir);
    return found && !found->path.empty() ? found->checkpoint.params : std::vector<float>{};
}

// The same spec trained directly by traindeck-train, uninterrupted: the reference for exact resumes.
std::vector<float> reference_weights(const json& spec, const std::string& dir, int threads) {
    const std::string spec_path = dir + "/reference.json";
    std::ofstream(spec_path) << spec.dump();
    const std::string command = train_binary() + " " + spec_path + " --threads " + std::to_string(threads) +
                                " --checkpoint-dir " + dir + "/reference >/dev/null 2>&1";
    if (std::system(command.c_str()) != 0)
        return {};
    return final_weights(dir + "/reference");
}

std::string job_dir(const WorkerProcess& worker, int64_t id) { return worker.state_dir() + "/jobs/" + std::to_string(id); }

// The job's final weights are exactly an uninterrupted run's, and neither side is empty.
void expect_weights_of_uninterrupted_run(const WorkerProcess& worker, int64_t id, const json& spec) {
    const auto ours = final_weights(job_dir(worker, id) + "/checkpoints");
    const auto reference = reference_weights(spec, worker.state_dir(), 1);
    ASSERT_FALSE(ours.empty()) << "the job left no checkpoint";
    ASSERT_FALSE(reference.empty()) << "the reference run failed";
    EXPECT_EQ(ours, reference);
}

// The value of `key` in the last record of `record` type (status, checkpoint, ...) before index `before`.
long step_of_last(const std::vector<json>& events, const std::string& record, const std::string& state = "") {
    long step = -1;
    for (const auto& e : of_type(events, "record", record))
        if (state.empty() || e["data"].value("state", "") == state)
            step = e["data"].value("step", -1L);
    return step;
}

} // namespace

TEST(Worker, BuiltinJobStreamsEveryMetricNumberedWithoutGaps) {
    REQUIRE_FASHION_MNIST();
    WorkerProcess worker;
    ASSERT_TRUE(worker.running());
    const int64_t id = worker.submit({{"name", "mlp"}, {"builtin", small_mlp()}, {"resources", {{"cpus", 1}}}});
    ASSERT_GT(id, 0) << worker.last_error;
    const auto events = worker.drain(id);
    expect_gapless(events);
    const json job = worker.job(id);
    EXPECT_EQ(job["state"], "succeeded") << job.dump();
    // 3600 training samples / 64 = 57 steps per epoch, 2 epochs: every step's metric line arrived once.
    const auto metrics = of_type(events, "record", "metric");
    ASSERT_EQ(metrics.size(), 114u);
    for (size_t i = 0; i < metrics.size(); ++i)
        EXPECT_EQ(metrics[i]["data"]["step"], static_cast<long>(i + 1));
    EXPECT_EQ(of_type(events, "record", "status").back()["data"]["state"], "finished");
    EXPECT_EQ(of_type(events, "record", "eval").size(), 3u); // val per epoch + test
    EXPECT_EQ(of_type(events, "state").back()["data"]["state"], "succeeded");
    EXPECT_EQ(job["last_seq"].get<int64_t>(), static_cast<int64_t>(events.size()));
}

TEST(Worker, PyTorchExampleScriptRunsThroughTheHelper) {
    REQUIRE_FASHION_MNIST();
    if (!torch_available()) {
        TRAINDECK_SKIP("Debian's python3-torch is not installed");
    }
    WorkerProcess worker;
    const int64_t id = worker.submit(pytorch_example_job("pytorch"));
    ASSERT_GT(id, 0) << worker.last_error;
    const auto events = worker.drain(id, 300);
    expect_gapless(events);
    EXPECT_EQ(worker.job(id)["state"], "succeeded") << worker.job(id).dump();
    const auto curve = loss_curve(events);
    ASSERT_EQ(curve.size(), 20u); // 2560 / 128
    EXPECT_EQ(curve.begin()->first, 1);
    EXPECT_EQ(curve.rbegin()->first, 20);
    const auto test = of_type(events, "record", "eval");
    ASSERT_EQ(test.size(), 1u);
    EXPECT_GT(test[0]["data"]["accuracy"].get<double>(), 0.4);
    bool saw_log = false;
    for (const auto& e : of_type(events, "log"))
        saw_log |= e["data"]["line"].get<std::string>().find("test accuracy") != std::string::npos;
    EXPECT_TRUE(saw_log);
}

// The same job written for TensorBoard (resources/examples/pytorch_fashion_tensorboard.py: its import line changed to
// traindeck's drop-in SummaryWriter, nothing else of TrainDeck in it): every training loss arrives as a metric record
// at its step, once; the hparams as the config; the histograms and the image, which the protocol has no record for,
// in the event file the job's log names.
TEST(Worker, TensorBoardScriptWithTheDropInSummaryWriterReportsEveryLoss) {
    REQUIRE_FASHION_MNIST();
    if (!torch_available()) {
        TRAINDECK_SKIP("Debian's python3-torch is not installed");
    }
    WorkerProcess worker;
    json request = pytorch_example_job("tensorboard");
    request["argv"][1] = source_dir() + "/resources/examples/pytorch_fashion_tensorboard.py";
    const int64_t id = worker.submit(request);
    ASSERT_GT(id, 0) << worker.last_error;
    const auto events = worker.drain(id, 300);
    expect_gapless(events);
    EXPECT_EQ(worker.job(id)["state"], "succeeded") << worker.job(id).dump();
    std::map<long, int> losses;
    std::vector<json> test_accuracy, hparam_metrics;
    for (const auto& record : of_type(events, "record", "metric")) {
        const json& data = record["data"];
        if (data.contains("Loss/train")) {
            ++losses[data["step"].get<long>()];
            EXPECT_TRUE(data["Loss/train"].is_number()) << data.dump();
        }
        if (data.contains("Accuracy/test"))
            test_accuracy.push_back(data);
        if (data.contains("hparam/test_accuracy"))
            hparam_metrics.push_back(data);
    }
    ASSERT_EQ(losses.size(), 20u); // 2560 / 128
    EXPECT_EQ(losses.begin()->first, 1);
    EXPECT_EQ(losses.rbegin()->first, 20);
    for (const auto& [step, count] : losses)
        EXPECT_EQ(count, 1) << "step " << step;
    ASSERT_EQ(test_accuracy.size(), 1u);
    EXPECT_EQ(test_accuracy[0]["step"], 20);
    EXPECT_GT(test_accuracy[0]["Accuracy/test"].get<double>(), 0.4);
    ASSERT_EQ(hparam_metrics.size(), 1u);
    EXPECT_EQ(hparam_metrics[0]["step"], 20) << "add_hparams' metrics at the last step";
    const auto configs = of_type(events, "record", "config");
    ASSERT_EQ(configs.size(), 1u);
    EXPECT_EQ(configs[0]["data"]["config"], (json{{"lr", 0.05}, {"batch_size", 128}, {"epochs", 1}, {"limit", 2560}}));

    std::string event_file;
    const std::string said = "histograms and images go to ";
    for (const auto& e : of_type(events, "log"))
        if (const std::string line = e["data"]["line"]; line.find(said) != std::string::npos)
            event_file = line.substr(line.find(said) + said.size(), line.find(" (") - line.find(said) - said.size());
    ASSERT_FALSE(event_file.empty()) << "the job's log names no event file";
    auto runs = traindeck::importers::read_tensorboard_logdir(event_file);
    ASSERT_TRUE(runs) << runs.error();
    ASSERT_EQ(runs->size(), 1u);
    const auto& run = runs->front();
    EXPECT_TRUE(run.damage.empty());
    EXPECT_TRUE(run.scalars.empty()) << "scalars went to the worker, not to the file";
    ASSERT_EQ(run.histograms.size(), 6u); // weight and bias of three layers
    ASSERT_EQ(run.histograms.count("0.weight"), 1u);
    EXPECT_EQ(run.histograms.at("0.weight").at(0).num, 784 * 256);
    EXPECT_EQ(run.histograms.at("0.weight").at(0).step, 20);
    ASSERT_EQ(run.images.count("test image 0"), 1u);
    EXPECT_EQ(run.images.at("test image 0").at(0).width, 28);
    EXPECT_EQ(run.images.at("test image 0").at(0).height, 28);
}

TEST(Worker, KilledJobRetriesFromItsCheckpointWithAContinuousCurve) {
    REQUIRE_FASHION_MNIST();
    WorkerProcess worker;
    json spec = small_mlp(6000, 2);
    const std::string release = worker.state_dir() + "/release";
    const int64_t id = worker.submit(held({{"builtin", spec}, {"resources", {{"cpus", 1}}}, {"max_restarts", 2}}, 23, release));
    ASSERT_GT(id, 0) << worker.last_error;
    // The job holds after step 23 (its last checkpoint was at step 20); it is killed outright while it waits.
    ASSERT_FALSE(wait_for_event(worker, id, [](const json& e) { return is_held_at(e, 23); }).is_null());
    const json running = worker.job(id);
    ASSERT_GT(running["pid"].get<int>(), 0);
    ASSERT_EQ(::kill(running["pid"].get<int>(), SIGKILL), 0);
    touch(release);

    const auto events = worker.drain(id);
    expect_gapless(events);
    const json job = worker.job(id);
    EXPECT_EQ(job["state"], "succeeded") << job.dump();
    EXPECT_EQ(job["restarts"], 1);
    bool saw_retry = false;
    for (const auto& e : of_type(events, "state"))
        saw_retry |= e["data"]["reason"].get<std::string>().find("killed by signal 9; retry 1 of 2") != std::string::npos;
    EXPECT_TRUE(saw_retry);
    // Continuous: every step of both epochs is on the curve (5400 / 64 → 85 steps per epoch); the retry resumed from
    // the checkpoint at step 20 and replayed 21..23, and the weights are exactly those of a run that was never killed.
    const auto curve = loss_curve(events);
    ASSERT_EQ(curve.size(), 170u);
    EXPECT_EQ(curve.rbegin()->first, 170);
    expect_resumed_from(events, 20, 3);
    expect_weights_of_uninterrupted_run(worker, id, spec);
}

TEST(Worker, KilledWorkerLosesAndDuplicatesNoEvent) {
    REQUIRE_FASHION_MNIST();
    WorkerProcess worker;
    const std::string first = worker.state_dir() + "/release-30", second = worker.state_dir() + "/release-60";
    const int64_t id = worker.submit(held(held({{"builtin", small_mlp(12000, 2)}, {"resources", {{"cpus", 1}}}}, 30, first), 60, second));
    ASSERT_GT(id, 0);
    ASSERT_FALSE(wait_for_event(worker, id, [](const json& e) { return is_held_at(e, 30); }).is_null());
    worker.kill_hard();
    // With no worker watching, the job trains on from step 30 to its next hold at 60: its own metrics file says so.
    touch(first);
    const std::string metrics_file = job_dir(worker, id) + "/metrics.jsonl";
    bool reached_60 = false;
    for (int i = 0; i < 18000 && !reached_60; ++i) {
        std::ifstream in(metrics_file);
        for (std::string line; std::getline(in, line) && !reached_60;)
            reached_60 = line.find("\"held\"") != std::string::npos && line.find("\"step\":60") != std::string::npos;
        if (!reached_60)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_TRUE(reached_60) << "the job did not go on training while the worker was down";
    ASSERT_TRUE(worker.restart());
    touch(second);
    const auto events = worker.drain(id);
    expect_gapless(events);
    EXPECT_EQ(worker.job(id)["state"], "succeeded");
    EXPECT_EQ(worker.job(id)["restarts"], 0) << "the job should have been re-adopted, not restarted";
    const auto metrics = of_type(events, "record", "metric");
    ASSERT_EQ(metrics.size(), 338u); // 10800 / 64 = 169 steps, 2 epochs
    for (size_t i = 0; i < metrics.size(); ++i)
        ASSERT_EQ(metrics[i]["data"]["step"], static_cast<long>(i + 1)) << "lost or repeated metric line";
    bool readopted = false;
    for (const auto& e : of_type(events, "warning"))
        readopted |= e["data"]["message"] == "worker restarted; job re-adopted";
    EXPECT_TRUE(readopted);
}

TEST(Worker, ASecondWorkerOnTheSameStateFolderRefusesToStart) {
    WorkerProcess worker;
    const std::string port_before = [&] {
        std::ifstream in(worker.state_dir() + "/port");
        std::string port;
        in >> port;
        return port;
    }();
    ASSERT_FALSE(port_before.empty());
    const std::string log = worker.state_dir() + "/second.log";
    const int status = std::system(("'" + worker_binary() + "' --listen 127.0.0.1:0 --state-dir '" + worker.state_dir() +
                                    "' >'" + log + "' 2>&1").c_str());
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 3);
    std::ifstream in(log);
    const std::string said((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(said.find("another traindeck-worker (pid " + std::to_string(worker.pid()) + ") runs on"), std::string::npos) << said;
    // The first one is untouched: same port file, still answering.
    std::ifstream port_in(worker.state_dir() + "/port");
    std::string port_after;
    port_in >> port_after;
    EXPECT_EQ(port_after, port_before);
    EXPECT_EQ(worker.client().get("/v1/health").status, 200);
    // A worker that died (kill -9) leaves no lock behind: the next one starts on the folder.
    worker.kill_hard();
    ASSERT_TRUE(worker.restart()) << worker.last_error;
    EXPECT_EQ(worker.client().get("/v1/health").status, 200);
}

TEST(Worker, HighPriorityJobPreemptsAndTheLowOneResumesExactly) {
    REQUIRE_FASHION_MNIST();
    WorkerProcess worker({"--cpus", "1"});
    json low_spec = small_mlp(12000, 2);
    const std::string release = worker.state_dir() + "/release";
    const int64_t low = worker.submit(held({{"name", "low"}, {"builtin", low_spec}, {"resources", {{"cpus", 1}}}, {"priority", 0}}, 23, release));
    ASSERT_GT(low, 0);
    // The low job is mid-run (held after step 23) when the high one arrives and needs its only CPU slot.
    ASSERT_FALSE(wait_for_event(worker, low, [](const json& e) { return is_held_at(e, 23); }).is_null());
    const int64_t high = worker.submit({{"name", "high"}, {"builtin", small_mlp(2000, 1)}, {"resources", {{"cpus", 1}}}, {"priority", 10}});
    ASSERT_GT(high, 0);
    ASSERT_FALSE(worker.wait_for_state(high, {"running", "succeeded"}).is_null());
    touch(release);

    const auto high_events = worker.drain(high);
    EXPECT_EQ(worker.job(high)["state"], "succeeded");
    const auto low_events = worker.drain(low, 180);
    expect_gapless(low_events);
    const json low_job = worker.job(low);
    EXPECT_EQ(low_job["state"], "succeeded") << low_job.dump();
    std::vector<std::string> states;
    for (const auto& e : of_type(low_events, "state"))
        states.push_back(e["data"]["state"]);
    EXPECT_EQ(states, (std::vector<std::string>{"queued", "running", "preempting", "queued", "running", "succeeded"}));
    // The preempted job checkpointed where it stood (step 23), resumed from exactly there (nothing replayed), and
    // ends with the weights it would have had anyway.
    EXPECT_EQ(step_of_last(low_events, "status", "preempted"), 23);
    expect_resumed_from(low_events, 23, 0);
    expect_weights_of_uninterrupted_run(worker, low, low_spec);
    EXPECT_EQ(loss_curve(low_events).size(), 338u);
}

TEST(Worker, BadInputGetsClearErrorsAndTheWorkerStaysUp) {
    WorkerProcess worker;
    auto& client = worker.client();
    auto malformed = client.post("/v1/jobs", std::string("{\"argv\": [\"echo\""));
    EXPECT_EQ(malformed.status, 400);
    EXPECT_EQ(malformed.message(), "the body is not valid JSON");
    auto unknown = client.post("/v1/jobs", json{{"argv", {"true"}}, {"priorty", 3}});
    EXPECT_EQ(unknown.status, 400);
    EXPECT_NE(unknown.message().find("unknown field \"priorty\""), std::string::npos);
    auto both = client.post("/v1/jobs", json{{"argv", {"true"}}, {"builtin", json::object()}});
    EXPECT_EQ(both.status, 400);
    auto too_big = client.post("/v1/jobs", json{{"argv", {std::string(2 << 20, 'x')}}});
    EXPECT_EQ(too_big.status, 413);
    auto impossible = client.post("/v1/jobs", json{{"argv", {"true"}}, {"resources", {{"gpus", 64}}}});
    EXPECT_EQ(impossible.status, 422);
    EXPECT_NE(impossible.message().find("could never run"), std::string::npos);
    for (int share : {0, 9}) {
        auto shared = client.post("/v1/jobs", json{{"argv", {"true"}}, {"resources", {{"gpu_share", share}}}});
        EXPECT_EQ(shared.status, 400);
        EXPECT_NE(shared.message().find("\"gpu_share\" must be a whole number from 1"), std::string::npos)
            << shared.message();
    }

    traindeck::client::WorkerClient wrong(worker.url(), "not-the-token");
    EXPECT_EQ(wrong.get("/v1/jobs").status, 401);
    traindeck::client::WorkerClient none(worker.url(), "");
    EXPECT_EQ(none.post("/v1/jobs", json{{"argv", {"true"}}}).status, 401);
    EXPECT_EQ(client.get("/v1/jobs/999").status, 404);
    // Found by the fuzzers: an id beyond int64 was a 500, nesting deep enough overflowed the worker's stack, and
    // integers that do not fit their field were cast (undefined behaviour).
    EXPECT_EQ(client.get("/v1/jobs/99999999999999999999").status, 404);
    EXPECT_EQ(client.post("/v1/jobs/99999999999999999999/cancel", std::string("{}")).status, 404);
    const std::string deep = "{\"argv\":[\"true\"],\"env\":{\"x\":" + std::string(200000, '[') + std::string(200000, ']') + "}}";
    EXPECT_EQ(client.post("/v1/jobs", deep).status, 400);
    EXPECT_EQ(client.post("/v1/jobs", json{{"argv", {"true"}}, {"priority", 1e10}}).status, 400);
    EXPECT_EQ(client.post("/v1/jobs", json{{"argv", {"true"}}, {"resources", {{"gpus", 4294967297LL}}}}).status, 400);
    EXPECT_EQ(client.get("/v1/jobs/1/events?after=-3").status, 400);

    const int64_t missing = worker.submit({{"argv", {"/no/such/program", "--flag"}}, {"max_restarts", 3}});
    ASSERT_GT(missing, 0);
    const json failed = worker.wait_for_state(missing, {"failed"});
    ASSERT_FALSE(failed.is_null());
    EXPECT_EQ(failed["reason"], "cannot execute \"/no/such/program\": No such file or directory");
    EXPECT_EQ(failed["restarts"], 0) << "a program that does not exist is not retried";

    // A job that writes garbage on its metrics fd: each bad line is a counted warning, the job goes on.
    const int64_t noisy = worker.submit(
        {{"argv", {"/bin/sh", "-c",
                   "echo '{\"type\":\"metric\",\"step\":1,\"loss\":1}' >&3; echo 'loss=0.5 oops' >&3; echo '[1,2]' >&3; "
                   "echo '{\"type\":\"metric\",\"step\":2,\"loss\":0.5}' >&3; echo '@traindeck {broken' ; echo done"}}});
    const auto events = worker.drain(noisy);
    expect_gapless(events);
    EXPECT_EQ(worker.job(noisy)["state"], "succeeded");
    EXPECT_EQ(worker.job(noisy)["warnings"], 3);
    EXPECT_EQ(of_type(events, "warning").size(), 3u);
    EXPECT_EQ(loss_curve(events), (std::map<long, double>{{1, 1.0}, {2, 0.5}}));
    EXPECT_EQ(client.get("/v1/health").status, 200);
}

// A job quiet for a while (the worker then reads it only every 100 ms) that writes 40 MB at once and ends: every
// line is delivered, though one read takes at most about 8 MB of a file and the run's end leaves no later tick to
// read the rest in. The job waits for a release file, given once the worker has metered it three times (a telemetry
// event a second): by then the worker has found it quiet on every read for at least two seconds.
TEST(Worker, AQuietJobsLastBurstIsReadWholeWhenItEnds) {
    WorkerProcess worker;
    const std::string burst = worker.state_dir() + "/burst.txt";
    {
        std::ofstream out(burst);
        char line[128];
        for (int i = 1; i <= 400000; ++i) {
            std::snprintf(line, sizeof(line), "%0100d\n", i);
            out << line;
        }
    }
    const std::string release = worker.state_dir() + "/release";
    const int64_t id = worker.submit(
        {{"argv", {"/bin/sh", "-c", "while [ ! -e \"$1\" ]; do sleep 0.05; done; exec cat \"$0\"", burst, release}}});
    ASSERT_GT(id, 0) << worker.last_error;
    int telemetry = 0;
    int64_t after = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (telemetry < 3 && std::chrono::steady_clock::now() < deadline) {
        const json reply =
            worker.client()
                .get("/v1/jobs/" + std::to_string(id) + "/events?after=" + std::to_string(after) + "&wait_ms=2000",
                     10000)
                .json();
        if (!reply.is_object() || !reply.contains("next"))
            continue;
        for (const json& event : reply["events"])
            telemetry += event["type"] == "telemetry";
        after = reply["next"].get<int64_t>();
    }
    ASSERT_GE(telemetry, 3) << "the job was never metered: it never ran";
    touch(release);
    const auto events = worker.drain(id, 300);
    expect_gapless(events);
    EXPECT_EQ(worker.job(id)["state"], "succeeded") << worker.job(id).dump();
    const auto lines = of_type(events, "log");
    ASSERT_EQ(lines.size(), 400000u);
    char last[128];
    std::snprintf(last, sizeof(last), "%0100d", 400000);
    EXPECT_EQ(lines.back()["data"]["line"], last);
}

TEST(Worker, MetricLinesWithBadTextOrNumbersAreRepairedAndCounted) {
    WorkerProcess worker;
    // Between good lines: a string with a lone Latin-1 byte (0xE9), a lone surrogate escape, a number no double holds.
    const int64_t id = worker.submit(
        {{"argv", {"/bin/sh", "-c",
                   "printf '{\"type\":\"metric\",\"step\":1,\"loss\":1}\\n' >&3; "
                   "printf '{\"type\":\"metric\",\"step\":2,\"loss\":0.5,\"note\":\"caf\\351 \\\\ud800\"}\\n' >&3; "
                   "printf '{\"type\":\"metric\",\"step\":3,\"loss\":1e999,\"accuracy\":0.75}\\n' >&3; "
                   "printf '{\"type\":\"metric\",\"step\":4,\"loss\":0.25}\\n' >&3"}}});
    ASSERT_GT(id, 0) << worker.last_error;
    const auto events = worker.drain(id);
    expect_gapless(events);
    EXPECT_EQ(worker.job(id)["state"], "succeeded");
    const auto metrics = of_type(events, "record", "metric");
    ASSERT_EQ(metrics.size(), 4u) << "a repaired line is kept, not dropped";
    EXPECT_EQ(metrics[1]["data"]["loss"], 0.5);
    EXPECT_EQ(metrics[1]["data"]["note"], "caf\xEF\xBF\xBD \xEF\xBF\xBD");
    EXPECT_TRUE(metrics[2]["data"]["loss"].is_null()) << "the out-of-range value is dropped";
    EXPECT_EQ(metrics[2]["data"]["accuracy"], 0.75) << "the rest of the line survives";
    EXPECT_EQ(metrics[3]["data"]["loss"], 0.25);
    const auto warnings = of_type(events, "warning");
    ASSERT_EQ(warnings.size(), 2u);
    EXPECT_EQ(warnings[0]["data"]["message"], "metrics line repaired: 2 invalid UTF-8 sequence(s) replaced by U+FFFD");
    EXPECT_EQ(warnings[1]["data"]["message"], "metrics line repaired: 1 number(s) out of range dropped (stored as null)");
    EXPECT_EQ(worker.job(id)["warnings"], 2);
}

TEST(Worker, JobsGetTheirEnvironmentAndRunWithoutAShell) {
    // The worker's own environment holds secrets a job must never see; only the allow-list reaches it.
    ::setenv("SLURM_JWT", "secret-jwt", 1);
    ::setenv("AWS_SECRET_ACCESS_KEY", "secret-key", 1);
    ::setenv("LC_MEASUREMENT", "C", 1);
    WorkerProcess worker;
    ::unsetenv("SLURM_JWT");
    ::unsetenv("AWS_SECRET_ACCESS_KEY");
    ::unsetenv("LC_MEASUREMENT");
    // A shell metacharacter in an argument stays a literal argument: nothing interprets it.
    const int64_t id = worker.submit({{"argv", {"/usr/bin/env"}}, {"env", {{"MY_SETTING", "a;b $(x)"}}}});
    const auto events = worker.drain(id);
    std::set<std::string> lines;
    for (const auto& e : of_type(events, "log"))
        lines.insert(e["data"]["line"].get<std::string>());
    const std::string dir = job_dir(worker, id);
    for (const std::string& expected : std::vector<std::string>{"TRAINDECK_METRICS_FD=3", "TRAINDECK_CHECKPOINT_DIR=" + dir + "/checkpoints",
                                       "TRAINDECK_DATASET_DIR=" + dir + "/data", "CUDA_VISIBLE_DEVICES=", "WORLD_SIZE=1",
                                       "LOCAL_RANK=0", "MY_SETTING=a;b $(x)", "TRAINDECK_RESUME=0"})
        EXPECT_TRUE(lines.count(expected)) << expected;
    EXPECT_TRUE(lines.count("LC_MEASUREMENT=C")) << "locale settings are inherited";
    EXPECT_TRUE(lines.count(std::string("PATH=") + std::getenv("PATH")));
    for (const auto& line : lines) {
        EXPECT_EQ(line.find("secret"), std::string::npos) << "a secret of the worker reached the job: " << line;
        const std::string name = line.substr(0, line.find('='));
        EXPECT_TRUE(traindeck::worker::inherited_by_jobs(name) || name.rfind("TRAINDECK_", 0) == 0 || name == "MY_SETTING" ||
                    name == "CUDA_VISIBLE_DEVICES" || name == "WORLD_SIZE" || name == "RANK" || name == "LOCAL_RANK" ||
                    name == "OMP_NUM_THREADS")
            << "not on the allow-list: " << line;
    }
    const int64_t echo = worker.submit({{"argv", {"/bin/echo", "$(whoami)", "&&", "ls"}}});
    const auto echoed = of_type(worker.drain(echo), "log");
    ASSERT_EQ(echoed.size(), 1u);
    EXPECT_EQ(echoed[0]["data"]["line"], "$(whoami) && ls");
}

TEST(Worker, BudgetStopsTheJobThroughTheCheckpointPath) {
    REQUIRE_FASHION_MNIST();
    // 3600 per hour = 1 per second of running. The job holds after step 5 and is never released, so however fast
    // the machine trains, the budget of 2 is what ends it.
    WorkerProcess worker({"--price-base", "3600"});
    const std::string never = worker.state_dir() + "/never-released";
    const int64_t id = worker.submit(held({{"builtin", small_mlp(30000, 3)}, {"resources", {{"cpus", 1}}}, {"budget", 2.0}}, 5, never));
    const auto events = worker.drain(id);
    const json job = worker.job(id);
    EXPECT_EQ(job["state"], "stopped") << job.dump();
    EXPECT_NE(job["reason"].get<std::string>().find("budget of 2"), std::string::npos) << job["reason"];
    // The spend is what the worker's own meter says: its rate times the run time it reports, and the stop was
    // ordered at the first meter reading at or over the budget.
    const double rate = of_type(events, "telemetry").back()["data"]["rate_per_hour"].get<double>();
    EXPECT_EQ(rate, 3600.0);
    EXPECT_NEAR(job["spend"].get<double>(), rate * job["run_seconds"].get<double>() / 3600.0, 1e-6);
    EXPECT_GE(job["spend"].get<double>(), 2.0);
    double spend_before_stop = -1, spend_at_stop = -1;
    for (const auto& e : events) {
        if (e["type"] == "telemetry" && spend_at_stop < 0)
            spend_before_stop = e["data"]["spend"].get<double>();
        if (e["type"] == "warning" && e["data"].value("alert", "") == "budget_100")
            spend_at_stop = e["data"]["spend"].get<double>();
    }
    EXPECT_GE(spend_at_stop, 2.0);
    EXPECT_EQ(spend_before_stop, spend_at_stop) << "the stop was ordered at the reading that crossed the budget";
    double previous = 0;
    for (const auto& e : of_type(events, "telemetry")) {
        if (e["data"]["spend"].get<double>() >= spend_at_stop)
            break;
        previous = e["data"]["spend"].get<double>();
    }
    EXPECT_LT(previous, 2.0) << "the reading before the stop was already over budget";
    std::set<std::string> alerts;
    for (const auto& e : of_type(events, "warning"))
        if (e["data"].contains("alert"))
            alerts.insert(e["data"]["alert"]);
    EXPECT_EQ(alerts, (std::set<std::string>{"budget_80", "budget_100"}));
    EXPECT_FALSE(of_type(events, "record", "checkpoint").empty());
    const auto preempted = of_type(events, "record", "status");
    EXPECT_EQ(preempted.back()["data"]["state"], "preempted") << "the trainer did not checkpoint before stopping";
    EXPECT_FALSE(final_weights(job_dir(worker, id) + "/checkpoints").empty());
    double last_spend = 0;
    for (const auto& e : of_type(events, "telemetry")) {
        EXPECT_GE(e["data"]["spend"].get<double>(), last_spend);
        last_spend = e["data"]["spend"].get<double>();
    }
}

TEST(Worker, IdlePolicyReportsAndStopsAnIdleJob) {
    WorkerProcess worker({"--idle-seconds", "2", "--idle-percent", "5", "--idle-stop", "--stop-grace", "5"});
    const int64_t id = worker.submit({{"argv", {"/bin/sleep", "3600"}}});
    const auto events = worker.drain(id, 300);
    const json job = worker.job(id);
    EXPECT_EQ(job["state"], "stopped") << job.dump();
    EXPECT_NE(job["reason"].get<std::string>().find("idle policy"), std::string::npos);
    bool alerted = false;
    for (const auto& e : of_type(events, "warning"))
        alerted |= e["data"].value("alert", "") == "idle";
    EXPECT_TRUE(alerted);
    EXPECT_NE(job["reason"].get<std::string>().find("signal 15"), std::string::npos) << "the idle stop ended it, not the sleep";
}

TEST(Worker, CancelStopsRunningAndQueuedJobs) {
    WorkerProcess worker({"--cpus", "1"});
    const int64_t running = worker.submit({{"argv", {"/bin/sleep", "60"}}});
    ASSERT_FALSE(worker.wait_for_state(running, {"running"}).is_null());
    const int64_t queued = worker.submit({{"argv", {"/bin/sleep", "60"}}});
    EXPECT_EQ(worker.job(queued)["state"], "queued");
    EXPECT_EQ(worker.client().post("/v1/jobs/" + std::to_string(queued) + "/cancel", std::string("{}")).status, 202);
    EXPECT_EQ(worker.client().post("/v1/jobs/" + std::to_string(running) + "/cancel", std::string("{}")).status, 202);
    EXPECT_FALSE(worker.wait_for_state(queued, {"cancelled"}, 10).is_null());
    const json cancelled = worker.wait_for_state(running, {"cancelled"}, 10);
    ASSERT_FALSE(cancelled.is_null());
    EXPECT_NE(cancelled["reason"].get<std::string>().find("signal 15"), std::string::npos);
    EXPECT_EQ(worker.client().post("/v1/jobs/" + std::to_string(running) + "/cancel", std::string("{}")).status, 409);
}

TEST(Worker, DeleteRemovesAFinishedJobForGoodAndNeverReusesItsId) {
    WorkerProcess worker({"--cpus", "1"});
    // A job that leaves a 100 kB checkpoint in its folder, and one still running.
    const int64_t done = worker.submit(
        {{"argv", {"/bin/sh", "-c", "head -c 100000 /dev/zero > \"$TRAINDECK_CHECKPOINT_DIR/ckpt-0000000001.tdck\""}}});
    ASSERT_EQ(worker.wait_for_state(done, {"succeeded", "failed"})["state"], "succeeded");
    const int64_t running = worker.submit({{"argv", {"/bin/sleep", "60"}}});
    ASSERT_FALSE(worker.wait_for_state(running, {"running"}).is_null());
    const std::string path = "/v1/jobs/" + std::to_string(running);
    const auto refused = worker.client().del(path);
    EXPECT_EQ(refused.status, 409);
    EXPECT_NE(refused.message().find("cancel it first"), std::string::npos) << refused.message();
    EXPECT_EQ(worker.job(running)["state"], "running");
    EXPECT_TRUE(std::filesystem::is_directory(job_dir(worker, running)));

    ASSERT_TRUE(std::filesystem::exists(job_dir(worker, done) + "/checkpoints/ckpt-0000000001.tdck"));
    const auto deleted = worker.client().del("/v1/jobs/" + std::to_string(done));
    ASSERT_EQ(deleted.status, 200) << deleted.body;
    EXPECT_GE(deleted.json()["bytes"].get<int64_t>(), 100000);
    EXPECT_FALSE(std::filesystem::exists(job_dir(worker, done)));
    EXPECT_EQ(worker.client().get("/v1/jobs/" + std::to_string(done)).status, 404);
    // The event board still knows the deleted job (it published while it ran): a watch of it says it is missing.
    const auto watched = worker.client().post("/v1/events/watch", json{{"after", {{std::to_string(done), 0}}}});
    ASSERT_EQ(watched.status, 200) << watched.body;
    EXPECT_EQ(watched.json()["missing"], json::array({done})) << watched.body;
    EXPECT_TRUE(watched.json()["jobs"].empty()) << watched.body;
    EXPECT_EQ(worker.client().del("/v1/jobs/" + std::to_string(done)).status, 404);
    EXPECT_EQ(worker.client().del("/v1/jobs/" + std::to_string(done + 1000)).status, 404);

    // The running job, once cancelled, can go too; it was the newest, and the next job does not get its id.
    ASSERT_EQ(worker.client().post(path + "/cancel", std::string("{}")).status, 202);
    ASSERT_FALSE(worker.wait_for_state(running, {"cancelled"}, 20).is_null());
    ASSERT_EQ(worker.client().del(path).status, 200);
    const int64_t next = worker.submit({{"argv", {"/bin/true"}}});
    EXPECT_GT(next, running);
    const json listed = worker.client().get("/v1/jobs").json();
    ASSERT_TRUE(listed.is_object()) << listed.dump();
    for (const json& job : listed["jobs"])
        EXPECT_TRUE(job["id"] != done && job["id"] != running) << job.dump();
}

// The console's Settings change what the machine costs while the worker runs (PUT /v1/policy): a running job that
// cost nothing (price 0, so its budget of 2 never comes) is charged the new price from then on, and its budget stops
// it. Wrong values are refused whole, the field named, and change nothing.
TEST(Worker, APriceChangedWhileAJobRunsIsChargedFromThenOn) {
    REQUIRE_FASHION_MNIST();
    WorkerProcess worker({"--price-base", "0"});
    auto& http = worker.client();
    const auto put = [&](const json& body) { return http.put("/v1/policy", body.dump(), "application/json"); };
    const auto negative = put({{"price_base", -1}});
    EXPECT_EQ(negative.status, 400);
    EXPECT_NE(negative.body.find("price_base"), std::string::npos) << negative.body;
    EXPECT_EQ(put({{"price_gpu", 2}, {"idle_percent", 150}}).status, 400); // one wrong: none taken
    EXPECT_EQ(put({{"colour", "blue"}}).status, 400);
    const auto lower_case = put({{"currency", "eur"}});
    EXPECT_EQ(lower_case.status, 400);
    EXPECT_NE(lower_case.body.find("ISO 4217"), std::string::npos) << lower_case.body;
    EXPECT_EQ(put({{"budget_warn_percent", 100}}).status, 400); // the stop is at 100
    EXPECT_EQ(http.get("/v1/policy").json()["price_gpu"], 0.0);
    EXPECT_EQ(http.get("/v1/policy").json()["currency"], "USD");
    EXPECT_EQ(http.get("/v1/policy").json()["budget_warn_percent"], 80.0);

    const std::string never = worker.state_dir() + "/never-released";
    const int64_t id = worker.submit(
        held({{"builtin", small_mlp(30000, 3)}, {"resources", {{"cpus", 1}}}, {"budget", 2.0}}, 5, never));
    // Running, and metered at 0 a second (a telemetry event says its rate).
    json seen;
    int64_t after = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (seen.is_null() && std::chrono::steady_clock::now() < deadline) {
        const json reply =
            http.get("/v1/jobs/" + std::to_string(id) + "/events?after=" + std::to_string(after) + "&wait_ms=2000",
                     10000)
                .json();
        if (!reply.is_object() || !reply.contains("next"))
            continue;
        for (const json& event : reply["events"])
            if (event["type"] == "telemetry")
                seen = event;
        after = reply["next"].get<int64_t>();
    }
    ASSERT_FALSE(seen.is_null()) << "no telemetry: the job never ran";
    EXPECT_EQ(seen["data"]["rate_per_hour"], 0.0);

    const auto changed = put({{"price_base", 3600},
                              {"idle_percent", 1},
                              {"idle_stop", false},
                              {"currency", "EUR"},
                              {"budget_warn_percent", 50}});
    ASSERT_EQ(changed.status, 200) << changed.body;
    EXPECT_EQ(changed.json()["price_base"], 3600.0);
    EXPECT_EQ(changed.json()["idle_percent"], 1.0);
    EXPECT_EQ(changed.json()["currency"], "EUR");
    const auto events = worker.drain(id);
    const json job = worker.job(id);
    EXPECT_EQ(job["state"], "stopped") << job.dump();
    EXPECT_NE(job["reason"].get<std::string>().find("budget of 2"), std::string::npos) << job["reason"];
    EXPECT_EQ(of_type(events, "telemetry").back()["data"]["rate_per_hour"], 3600.0);
    // The warning came at the share of the budget the policy names now, once, before the stop.
    std::vector<json> budget_warnings;
    for (const json& warning : of_type(events, "warning"))
        if (warning["data"]["alert"] == "budget_80" || warning["data"]["alert"] == "budget_100")
            budget_warnings.push_back(warning);
    ASSERT_EQ(budget_warnings.size(), 2u);
    EXPECT_EQ(budget_warnings[0]["data"]["message"], "50% of the budget spent") << budget_warnings[0].dump();
    EXPECT_GE(budget_warnings[0]["data"]["spend"].get<double>(), 1.0);
    EXPECT_EQ(budget_warnings[1]["data"]["alert"], "budget_100");
    EXPECT_NE(job["reason"].get<std::string>().find("EUR"), std::string::npos) << job["reason"];
    EXPECT_EQ(http.get("/v1/resources").json()["prices"]["currency"], "EUR");
    // Charged from the change on, not for the time it ran free: 1 a second for less than all of its run time.
    EXPECT_LT(job["spend"].get<double>(), job["run_seconds"].get<double>()) << job.dump();
    EXPECT_EQ(http.get("/v1/resources").json()["prices"]["base_per_hour"], 3600.0);
}

TEST(Worker, ResourcesReportHostAndNoGpuHonestly) {
    WorkerProcess worker({"--price-gpu", "2.5", "--cpus", "2"});
    const json resources = worker.client().get("/v1/resources").json();
    ASSERT_TRUE(resources.is_object());
    EXPECT_EQ(resources["cpus"], 2);
    EXPECT_GT(resources["host"]["memory_total_mb"].get<double>(), 100.0);
    EXPECT_EQ(resources["prices"]["gpu_per_hour"], 2.5);
    if (resources["gpus"].empty()) {
        EXPECT_NE(resources["gpu_status"].get<std::string>().find("no NVIDIA GPU"), std::string::npos);
    }
}

TEST(Worker, SmallJobsShareAGpuAndAWholeGpuJobWaitsForAllOfThem) {
    // One GPU (NVML's test double): two half-GPU jobs run on it at once, both told CUDA_VISIBLE_DEVICES=0; a
    // whole-GPU job behind them starts only when both have ended; each pays half the GPU's price.
    WorkerProcess worker({"--cpus", "4", "--price-gpu", "3600"}, {}, test_gpus(1));
    const json resources = worker.client().get("/v1/resources").json();
    ASSERT_EQ(resources["gpus"].size(), 1u) << resources.dump();
    const auto job = [&](const std::string& name, int share) {
        // Writes the GPUs it was given, then waits for its release file.
        const std::string script =
            "echo \"$CUDA_VISIBLE_DEVICES\" > \"$1.visible\"; while [ ! -e \"$1\" ]; do sleep 0.05; done";
        return worker.submit({{"name", name},
                              {"argv", {"/bin/sh", "-c", script, "sh", worker.state_dir() + "/" + name}},
                              {"resources", {{"gpus", 1}, {"gpu_share", share}, {"cpus", 1}}}});
    };
    const int64_t a = job("a", 2), b = job("b", 2), whole = job("whole", 1);
    ASSERT_GT(a, 0);
    ASSERT_GT(b, 0);
    ASSERT_GT(whole, 0);
    ASSERT_FALSE(worker.wait_for_state(a, {"running"}).is_null());
    ASSERT_FALSE(worker.wait_for_state(b, {"running"}).is_null());
    const auto visible = [&](const std::string& name) {
        return wait_for_word(worker.state_dir() + "/" + name + ".visible");
    };
    EXPECT_EQ(visible("a"), "0");
    EXPECT_EQ(visible("b"), "0");
    EXPECT_EQ(worker.job(a)["gpus"], json::array({0}));
    EXPECT_EQ(worker.job(whole)["state"], "queued");
    EXPECT_EQ(wait_for_gpu_share(worker, 0, 1.0), 1.0);

    touch(worker.state_dir() + "/a");
    ASSERT_FALSE(worker.wait_for_state(a, {"succeeded"}).is_null());
    touch(worker.state_dir() + "/b");
    const json b_done = worker.wait_for_state(b, {"succeeded"});
    ASSERT_FALSE(b_done.is_null());
    ASSERT_FALSE(worker.wait_for_state(whole, {"running"}).is_null());
    EXPECT_EQ(visible("whole"), "0");
    // The whole-GPU job started after the last job sharing the GPU ended, not when the first one did.
    EXPECT_GE(worker.job(whole)["started"].get<double>(), b_done["finished"].get<double>());
    EXPECT_EQ(wait_for_gpu_share(worker, 0, 1.0), 1.0);
    touch(worker.state_dir() + "/whole");
    const json whole_done = worker.wait_for_state(whole, {"succeeded"});
    ASSERT_FALSE(whole_done.is_null());
    // Spend is the run time at the job's rate: half of $3,600 an hour for a half-GPU job (a second each), the whole
    // price for the whole-GPU one.
    const json a_done = worker.job(a);
    ASSERT_GT(a_done["run_seconds"].get<double>(), 0.0);
    EXPECT_NEAR(a_done["spend"].get<double>() / a_done["run_seconds"].get<double>(), 0.5, 0.01) << a_done.dump();
    EXPECT_NEAR(whole_done["spend"].get<double>() / whole_done["run_seconds"].get<double>(), 1.0, 0.01);
    EXPECT_EQ(wait_for_gpu_share(worker, 0, 0.0), 0.0);
}

TEST(Worker, TokenFileIsPrivateAndRemoteListeningNeedsTls) {
    WorkerProcess worker;
    struct stat info {};
    ASSERT_EQ(::stat((worker.state_dir() + "/token").c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0600);
    EXPECT_EQ(worker.token().size(), 64u);
    const std::string command = worker_binary() + " --listen 0.0.0.0:0 --state-dir " + worker.state_dir() + "/x 2>/dev/null";
    EXPECT_EQ(WEXITSTATUS(std::system(command.c_str())), 2);
}

TEST(Worker, TheSlurmExecutorNeverRunsJobsAsRootByDefault) {
    if (::geteuid() != 0) {
        TRAINDECK_SKIP("needs root: the default is only refused for a worker running as root");
    }
    WorkerProcess scratch;
    const std::string command = worker_binary() + " --executor slurm --listen 127.0.0.1:0 --state-dir " + scratch.state_dir() +
                                "/slurm 2>&1";
    FILE* pipe = ::popen(command.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::string output;
    char buffer[512];
    while (std::fgets(buffer, sizeof(buffer), pipe))
        output += buffer;
    const int status = ::pclose(pipe);
    EXPECT_EQ(WEXITSTATUS(status), 2) << output;
    EXPECT_NE(output.find("would run every job as root; give --slurm-user USER"), std::string::npos) << output;
}

TEST(Worker, ServesHttpsWithTheTokenWhenGivenACertificate) {
    WorkerProcess scratch;
    const std::string& dir = scratch.state_dir();
    const std::string make_cert = "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost -addext "
                                  "subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout " + dir + "/key.pem -out " + dir +
                                  "/cert.pem >/dev/null 2>&1";
    if (std::system(make_cert.c_str()) != 0) {
        TRAINDECK_SKIP("the openssl command is not available to make a test certificate");
    }
    WorkerProcess worker({"--tls-cert", dir + "/cert.pem", "--tls-key", dir + "/key.pem"});
    ASSERT_TRUE(worker.running());
    const std::string https = "https://127.0.0.1:" + worker.url().substr(worker.url().rfind(':') + 1);
    traindeck::client::WorkerClient secure(https, worker.token());
    secure.set_tls("", dir + "/cert.pem");
    const auto health = secure.get("/v1/health");
    EXPECT_EQ(health.status, 200) << health.message();
    traindeck::client::WorkerClient untrusted(https, worker.token());
    EXPECT_FALSE(untrusted.get("/v1/health").error.empty()) << "an unknown certificate must not be accepted";
    traindeck::client::WorkerClient plain(worker.url(), worker.token());
    EXPECT_NE(plain.get("/v1/health").status, 200);
}

TEST(Worker, CancelledJobResumesFromItsCheckpointExactly) {
    REQUIRE_FASHION_MNIST();
    WorkerProcess worker;
    json spec = small_mlp(12000, 2);
    const std::string release = worker.state_dir() + "/release";
    const int64_t id = worker.submit(held({{"builtin", spec}, {"resources", {{"cpus", 1}}}}, 42, release));
    ASSERT_GT(id, 0);
    ASSERT_FALSE(wait_for_event(worker, id, [](const json& e) { return is_held_at(e, 42); }).is_null());
    ASSERT_EQ(worker.client().post("/v1/jobs/" + std::to_string(id) + "/cancel", std::string("{}")).status, 202);
    ASSERT_FALSE(worker.wait_for_state(id, {"cancelled"}).is_null());
    touch(release);
    EXPECT_EQ(worker.client().post("/v1/jobs/" + std::to_string(id) + "/resume", std::string("{\"bogus\":1}")).status, 400);
    EXPECT_EQ(worker.client().post("/v1/jobs/999/resume", std::string("{}")).status, 404);
    ASSERT_EQ(worker.client().post("/v1/jobs/" + std::to_string(id) + "/resume", std::string("{}")).status, 202);
    const auto events = worker.drain(id);
    expect_gapless(events);
    EXPECT_EQ(worker.job(id)["state"], "succeeded") << worker.job(id).dump();
    std::vector<std::string> states;
    for (const auto& e : of_type(events, "state"))
        states.push_back(e["data"]["state"]);
    EXPECT_EQ(states, (std::vector<std::string>{"queued", "running", "stopping", "cancelled", "queued", "running", "succeeded"}));
    EXPECT_EQ(loss_curve(events).size(), 338u);
    // The cancel checkpointed at step 42 where the job stood; the resume continued from there, replaying nothing.
    EXPECT_EQ(step_of_last(events, "status", "preempted"), 42);
    expect_resumed_from(events, 42, 0);
    expect_weights_of_uninterrupted_run(worker, id, spec);
    EXPECT_EQ(worker.client().post("/v1/jobs/" + std::to_string(id) + "/resume", std::string("{}")).status, 409);
}

namespace {


std::string read_text(const std::string& path) {
    std::ifstream in(path);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

} // namespace

TEST(Worker, AFullDiskUnderTheDatabaseLosesNothingAndTheWorkerRecoversWithoutARestart) {
    std::string pattern = (fs::temp_directory_path() / "traindeck-full-XXXXXX").string();
    const std::string root = ::mkdtemp(pattern.data());
    const std::string state = root + "/state";
    fs::create_directories(state);
    struct Cleanup {
        std::string root;
        ~Cleanup() { fs::remove_all(root); }
    } cleanup{root};
    // The worker's database lives on a 3 MB disk of its own (through a symlink: SQLite keeps its WAL beside the
    // real file); the job's own files stay on the big disk, so only the worker's writes fail.
    traindeck::test::SmallDisk disk(root + "/db", "3m");
    if (!disk.mounted) {
        TRAINDECK_SKIP("cannot mount a small tmpfs here to fill up (needs root)");
    }
    ASSERT_EQ(::symlink((disk.path + "/worker.db").c_str(), (state + "/worker.db").c_str()), 0);
    std::optional<WorkerProcess> worker_storage;
    worker_storage.emplace(std::vector<std::string>{}, state);
    WorkerProcess& worker = *worker_storage;
    ASSERT_TRUE(worker.running());
    ASSERT_TRUE(fs::exists(disk.path + "/worker.db-wal")) << "the WAL is not on the small disk";

    // 300 metric lines in three paced blocks: 1..100, then (once go1 exists) 101..200, then (go2) 201..300.
    const std::string block = "i=$1; while [ $i -le $2 ]; do printf '{\"type\":\"metric\",\"step\":%d,\"loss\":0.5}\\n' $i >&3; "
                              "i=$((i+1)); done";
    const std::string script = "b() { " + block + "; }; b 1 100; while [ ! -e " + root + "/go1 ]; do sleep 0.01; done; b 101 200; "
                               "while [ ! -e " + root + "/go2 ]; do sleep 0.01; done; b 201 300";
    const int64_t id = worker.submit({{"argv", {"/bin/sh", "-c", script}}});
    ASSERT_GT(id, 0) << worker.last_error;
    ASSERT_FALSE(wait_for_event(worker, id, [](const json& e) {
                     return e["type"] == "record" && e["data"].value("step", 0) == 100;
                 }).is_null());

    // Fill the disk, let the job write its second block: the worker cannot commit it.
    [[maybe_unused]] const int filled = // dd ends with "no space left", a failure status: the full disk is the point
        std::system(("dd if=/dev/zero of='" + disk.path + "/filler' bs=64k >/dev/null 2>&1").c_str());
    touch(root + "/go1");
    bool failing = false;
    for (int i = 0; i < 12000 && !failing; ++i) {
        failing = read_text(worker.output()).find("disk is full") != std::string::npos; // SQLite's SQLITE_FULL
        if (!failing)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_TRUE(failing) << "the worker never hit the full disk:\n" << read_text(worker.output());
    // A submission meanwhile is refused with a reason, and leaves no job behind.
    const auto refused = worker.client().post("/v1/jobs", json{{"argv", {"true"}}, {"name", "during"}});
    EXPECT_EQ(refused.status, 507) << refused.body;
    EXPECT_NE(refused.message().find("submit it again"), std::string::npos) << refused.body;
    EXPECT_EQ(worker.client().get("/v1/health").status, 200);

    // Free the disk and let the job finish: every line once, numbered without a gap, by the same worker process.
    const int pid = worker.pid();
    fs::remove(disk.path + "/filler");
    touch(root + "/go2");
    const auto events = worker.drain(id);
    expect_gapless(events);
    EXPECT_EQ(worker.job(id)["state"], "succeeded");
    const auto metrics = of_type(events, "record", "metric");
    ASSERT_EQ(metrics.size(), 300u);
    for (size_t i = 0; i < metrics.size(); ++i)
        ASSERT_EQ(metrics[i]["data"]["step"], static_cast<long>(i + 1)) << "lost or repeated line";
    EXPECT_EQ(worker.pid(), pid);
    EXPECT_NE(read_text(worker.output()).find("takes writes again"), std::string::npos);
    // No phantom: the refused job is nowhere, and the next submission works.
    const json listed = worker.client().get("/v1/jobs").json();
    ASSERT_TRUE(listed.is_object()) << listed.dump();
    ASSERT_EQ(listed["jobs"].size(), 1u) << listed.dump();
    const int64_t after = worker.submit({{"argv", {"true"}}, {"name", "after"}});
    ASSERT_EQ(after, id + 1) << "the refused submission used up an id or left a row";
    EXPECT_FALSE(worker.wait_for_state(after, {"succeeded"}).is_null());
    worker_storage.reset(); // the worker lets go of the small disk before it is unmounted
}

TEST(Worker, OneLongPollWatchesManyJobs) {
    WorkerProcess worker;
    const int64_t a = worker.submit({{"argv", {"/bin/echo", "from a"}}});
    const int64_t b = worker.submit({{"argv", {"/bin/echo", "from b"}}});
    ASSERT_GT(a, 0);
    ASSERT_GT(b, 0);
    std::map<int64_t, std::vector<json>> seen;
    json after = {{std::to_string(a), 0}, {std::to_string(b), 0}, {"999", 0}};
    std::set<int64_t> finished;
    for (int i = 0; i < 200 && finished.size() < 2; ++i) {
        const auto reply = worker.client().post("/v1/events/watch", json{{"after", after}, {"wait_ms", 2000}});
        ASSERT_EQ(reply.status, 200) << reply.body;
        const json body = reply.json();
        EXPECT_EQ(body["missing"], json::array({999}));
        for (const auto& [id, answer] : body["jobs"].items()) {
            for (const auto& e : answer["events"])
                seen[std::stoll(id)].push_back(e);
            after[id] = answer["next"];
            if (answer["state"] == "succeeded" && answer["events"].empty())
                finished.insert(std::stoll(id));
        }
        for (int64_t id : finished)
            after.erase(std::to_string(id));
    }
    ASSERT_EQ(finished, (std::set<int64_t>{a, b}));
    for (int64_t id : {a, b}) {
        expect_gapless(seen[id]);
        EXPECT_EQ(seen[id].size(), worker.drain(id).size()) << "the watch and the per-job stream differ for job " << id;
        bool logged = false;
        for (const auto& e : of_type(seen[id], "log"))
            logged |= e["data"]["line"] == (id == a ? "from a" : "from b");
        EXPECT_TRUE(logged);
    }
    EXPECT_EQ(worker.client().post("/v1/events/watch", json{{"after", {{"x", 1}}}}).status, 400);
    EXPECT_EQ(worker.client().post("/v1/events/watch", json{{"after", json::object()}, {"wait", 5}}).status, 400);
    EXPECT_EQ(worker.client().post("/v1/events/watch", std::string("[]")).status, 400);
}

// A watch that waited for news answers with the news that woke it, from the per-job stream and from the long poll
// of many jobs: neither reads the database as it was before the wait (a statement left stepping kept SQLite's read
// snapshot open across the wait, and the woken watch found nothing new). The running job's telemetry, once a
// second, is the news.
TEST(Worker, AWatchThatWaitedAnswersWithTheNewsThatWokeIt) {
    WorkerProcess worker;
    const int64_t id = worker.submit({{"argv", {"/bin/sleep", "60"}}, {"capture", false}});
    ASSERT_GT(id, 0);
    const std::string key = std::to_string(id);
    int64_t next = 0;
    bool running = false;
    for (int i = 0; i < 100 && !running; ++i) {
        const auto reply = worker.client().post("/v1/events/watch", json{{"after", {{key, next}}}, {"wait_ms", 5000}});
        ASSERT_EQ(reply.status, 200) << reply.body;
        const json body = reply.json();
        if (!body["jobs"].contains(key))
            continue;
        next = body["jobs"][key]["next"];
        running = body["jobs"][key]["state"] == "running";
    }
    ASSERT_TRUE(running);
    for (int round = 0; round < 3; ++round) {
        // Everything so far read: the reply comes only once something new is committed.
        const auto reply = worker.client().post("/v1/events/watch", json{{"after", {{key, next}}}, {"wait_ms", 20000}});
        ASSERT_EQ(reply.status, 200) << reply.body;
        const json body = reply.json();
        ASSERT_TRUE(body["jobs"].contains(key)) << "round " << round << ": woken with nothing new: " << reply.body;
        ASSERT_FALSE(body["jobs"][key]["events"].empty()) << reply.body;
        EXPECT_EQ(body["jobs"][key]["events"][0]["seq"], next + 1);
        next = body["jobs"][key]["next"];
        const auto single =
            worker.client().get("/v1/jobs/" + key + "/events?after=" + std::to_string(next) + "&wait_ms=20000");
        ASSERT_EQ(single.status, 200) << single.body;
        const json events = single.json()["events"];
        ASSERT_FALSE(events.empty()) << "round " << round << ": the per-job stream woke with nothing new";
        EXPECT_EQ(events[0]["seq"], next + 1);
        next = single.json()["next"];
    }
    EXPECT_EQ(worker.client().post("/v1/jobs/" + key + "/cancel", std::string("{}")).status, 202);
}

// A job's last line is kept even when it has no newline (a print with end="", a crash mid-line): at the run's end
// what is left of each stream is a line. Metrics too. Before, it waited forever for a newline that never came.
TEST(Worker, AJobsLastLineWithoutANewlineIsKept) {
    WorkerProcess worker;
    const int64_t id = worker.submit(
        {{"argv",
          {"/bin/sh", "-c",
           "echo first; printf 'last words'; printf '{\"type\": \"metric\", \"step\": 7, \"loss\": 0.25}' >&3"}},
         {"capture", false}});
    ASSERT_GT(id, 0);
    const auto events = worker.drain(id);
    EXPECT_EQ(worker.job(id)["state"], "succeeded");
    std::vector<std::string> lines;
    for (const auto& e : of_type(events, "log"))
        lines.push_back(e["data"]["line"]);
    EXPECT_EQ(lines, (std::vector<std::string>{"first", "last words"}));
    const auto metrics = of_type(events, "record", "metric");
    ASSERT_EQ(metrics.size(), 1u);
    EXPECT_EQ(metrics[0]["data"]["step"], 7);
    EXPECT_EQ(metrics[0]["data"]["loss"], 0.25);
}

// A shim that cannot fork its job (the machine out of processes: fork() fails with EAGAIN in the shim alone,
// through a preloaded library) ends the job failed, saying why. It used to record exit code 0: a success.
TEST(Worker, AJobWhoseShimCannotForkFailsAndSaysWhy) {
    WorkerProcess worker({}, {}, {std::string("LD_PRELOAD=") + TRAINDECK_TEST_FAILFORK});
    const int64_t id = worker.submit({{"argv", {"/bin/true"}}, {"capture", false}, {"max_restarts", 2}});
    ASSERT_GT(id, 0) << worker.last_error;
    const json job = worker.wait_for_state(id, {"failed", "succeeded"});
    ASSERT_FALSE(job.is_null());
    EXPECT_EQ(job["state"], "failed") << job.dump();
    // Not retried (a job that never started is not a crash to restart from), and no pid was ever recorded.
    EXPECT_EQ(job["restarts"], 0) << job.dump();
    EXPECT_FALSE(fs::exists(worker.state_dir() + "/jobs/" + std::to_string(id) + "/pid"));
    EXPECT_NE(job.dump().find("fork failed: Resource temporarily unavailable"), std::string::npos) << job.dump();
    // The worker itself still starts jobs' shims and answers.
    EXPECT_EQ(worker.client().get("/v1/health").status, 200);
}

// "total" caps a whole reply and is shared among the jobs with news: a job with few events takes all of them, what
// it leaves goes to the busy one, "limit" still caps each job, and every job with news gets at least one.
TEST(Worker, AWatchSharesItsReplyAmongTheJobsWithNews) {
    WorkerProcess worker;
    const int64_t busy = worker.submit({{"argv", {"/usr/bin/seq", "1", "3000"}}, {"capture", false}});
    const int64_t busier = worker.submit({{"argv", {"/usr/bin/seq", "1", "4000"}}, {"capture", false}});
    const int64_t small = worker.submit({{"argv", {"/usr/bin/seq", "1", "5"}}, {"capture", false}});
    const int64_t done = worker.submit({{"argv", {"true"}}, {"capture", false}});
    ASSERT_GT(busy, 0);
    ASSERT_GT(busier, 0);
    ASSERT_GT(small, 0);
    ASSERT_GT(done, 0);
    const size_t busy_events = worker.drain(busy).size(), small_events = worker.drain(small).size();
    const size_t busier_events = worker.drain(busier).size();
    const int64_t done_last = worker.drain(done).back()["seq"].get<int64_t>();
    ASSERT_GT(busy_events, 3000u);
    ASSERT_GT(busier_events, 4000u);
    ASSERT_LT(small_events, 40u);
    const json after = {{std::to_string(busy), 0},
                        {std::to_string(busier), 0},
                        {std::to_string(small), 0},
                        {std::to_string(done), done_last}};
    const auto watch = [&](const json& extra) {
        json request{{"after", after}};
        request.update(extra);
        const auto reply = worker.client().post("/v1/events/watch", request);
        EXPECT_EQ(reply.status, 200) << reply.body;
        std::map<int64_t, size_t> counts;
        const json body = reply.json();
        for (const auto& [id, answer] : body["jobs"].items()) {
            counts[std::stoll(id)] = answer["events"].size();
            if (!answer["events"].empty()) {
                EXPECT_EQ(answer["next"], answer["events"].back()["seq"]) << id;
            }
        }
        return counts;
    };
    // 300 in all: the small job has fewer than its third, and the two busy ones share the rest equally. The ended
    // job with nothing new is still answered (with no events), so the console learns it ended.
    const size_t half = (300 - small_events) / 2;
    std::map<int64_t, size_t> counts = watch({{"total", 300}, {"limit", 1000}});
    EXPECT_EQ(counts[small], small_events);
    EXPECT_EQ(counts[done], 0u);
    EXPECT_GE(counts[busy], half);
    EXPECT_LE(counts[busy], half + 1);
    EXPECT_GE(counts[busier], half);
    EXPECT_LE(counts[busier], half + 1);
    EXPECT_EQ(counts[busy] + counts[busier] + counts[small], 300u);
    // A per-job limit below the share still holds.
    counts = watch({{"total", 1000}, {"limit", 30}});
    EXPECT_EQ(counts, (std::map<int64_t, size_t>{{busy, 30}, {busier, 30}, {small, small_events}, {done, 0}}));
    // A budget smaller than the jobs with news: one event each, none starved.
    counts = watch({{"total", 1}, {"limit", 1000}});
    EXPECT_EQ(counts, (std::map<int64_t, size_t>{{busy, 1}, {busier, 1}, {small, 1}, {done, 0}}));
    // Without "total", as an older console asks: "limit" a job.
    counts = watch({{"limit", 500}});
    EXPECT_EQ(counts, (std::map<int64_t, size_t>{{busy, 500}, {busier, 500}, {small, small_events}, {done, 0}}));
    // With budget enough, everything each job wrote in one reply.
    counts = watch({{"total", 100000}, {"limit", 50000}});
    EXPECT_EQ(counts, (std::map<int64_t, size_t>{
                          {busy, busy_events}, {busier, busier_events}, {small, small_events}, {done, 0}}));
    for (const json& bad : {json{{"total", 0}}, json{{"total", -5}}, json{{"total", "many"}}, json{{"limit", 0}}}) {
        json request{{"after", after}};
        request.update(bad);
        const auto reply = worker.client().post("/v1/events/watch", request);
        EXPECT_EQ(reply.status, 400) << bad.dump();
        EXPECT_NE(reply.body.find("total"), std::string::npos) << reply.body;
    }
    // Numbers past a signed 64-bit integer are refused or capped, never wrapped around.
    EXPECT_EQ(worker.client()
                  .post("/v1/events/watch", json{{"after", {{std::to_string(busy), uint64_t(1) << 63}}}, {"total", 10}})
                  .status,
              400);
    counts = watch({{"total", 300}, {"limit", std::numeric_limits<uint64_t>::max()}, {"wait_ms", uint64_t(1) << 63}});
    EXPECT_EQ(counts[busy] + counts[busier] + counts[small], 300u);
}
