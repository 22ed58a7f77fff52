// traindeck-train as a real process on real data: resume is bit for bit, SIGTERM checkpoints,
// bad input is one clear line and a distinct exit code, and the models really learn.
#include "base64.h"
#include "checkpoint.h"
#include "dataset.h"
#include "requireall.h"
#include "testsupport.h"
#include "trainer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

using namespace traindeck::engine;
using namespace traindeck::test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string write_spec(const TempDir& dir, const std::string& name, const json& spec) {
    std::string path = dir.file(name);
    write_text(path, spec.dump(2));
    return path;
}

std::vector<float> final_params(const std::string& checkpoint_dir) {
    auto found = find_latest_checkpoint(checkpoint_dir);
    if (!found || found->path.empty())
        return {};
    return found->checkpoint.params;
}

// step -> (loss, accuracy, lr) for every metric record; the numbers a curve is drawn from.
std::map<long, std::tuple<double, double, double>> curve(const ProcessResult& run) {
    std::map<long, std::tuple<double, double, double>> points;
    for (const auto& r : run.records("metric"))
        points[r["step"].get<long>()] = {r["loss"].get<double>(), r["accuracy"].get<double>(), r["lr"].get<double>()};
    return points;
}

size_t checkpoint_files(const std::string& dir) {
    size_t count = 0;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec))
        count += entry.path().extension() == ".tdck";
    return count;
}

size_t line_count(const std::string& text) { return std::count(text.begin(), text.end(), '\n'); }

const json kSmallMlp = {{"model", "mlp"},
                        {"hidden", {32}},
                        {"dropout", 0.2},
                        {"data", {{"dataset", "fashion-mnist"}, {"limit", 3000}}},
                        {"optimizer", {{"type", "adamw"}, {"lr", 0.003}}},
                        {"schedule", {{"warmup_steps", 10}, {"decay", "cosine"}}},
                        {"batch_size", 64},
                        {"epochs", 2},
                        {"seed", 9},
                        {"checkpoint_every", 7}};

class Trainer : public ::testing::Test {
protected:
    void SetUp() override {
        if (!fashion_mnist_installed()) {
            TRAINDECK_SKIP("dataset-fashion-mnist is not installed (installer/install-deps.sh installs it)");
        }
    }
    TempDir dir;
};

} // namespace

TEST_F(Trainer, InterruptedAndResumedRunIsBitIdentical) {
    const std::string spec = write_spec(dir, "mlp.json", kSmallMlp);
    const ProcessResult whole = run_trainer({spec, "--checkpoint-dir", dir.file("whole"), "--threads", "2"});
    ASSERT_EQ(whole.exit_code, 0) << whole.err;

    // Stop mid-epoch (step 20 of 43), then resume in a new process.
    const ProcessResult first = run_trainer({spec, "--checkpoint-dir", dir.file("split"), "--threads", "2", "--set", "max_steps=20"});
    ASSERT_EQ(first.exit_code, 0) << first.err;
    ASSERT_EQ(first.records("status").back()["state"], "stopped");
    const ProcessResult second = run_trainer({spec, "--checkpoint-dir", dir.file("split"), "--threads", "2", "--resume"});
    ASSERT_EQ(second.exit_code, 0) << second.err;
    EXPECT_EQ(second.records("status").front()["resumed_from_step"], 20);

    const auto whole_params = final_params(dir.file("whole"));
    ASSERT_FALSE(whole_params.empty());
    EXPECT_EQ(whole_params, final_params(dir.file("split"))) << "resumed weights differ from the uninterrupted run";

    auto whole_curve = curve(whole);
    auto resumed_curve = curve(first);
    for (const auto& [step, point] : curve(second))
        resumed_curve[step] = point;
    EXPECT_EQ(whole_curve.size(), 86u);
    EXPECT_EQ(whole_curve, resumed_curve) << "resumed loss curve differs from the uninterrupted run";
    const auto whole_test = whole.records("eval").back(), resumed_test = second.records("eval").back();
    EXPECT_EQ(whole_test["split"], "test");
    EXPECT_EQ(whole_test["accuracy"], resumed_test["accuracy"]);
    EXPECT_EQ(whole_test["confusion"], resumed_test["confusion"]);
}

TEST_F(Trainer, ResnetWithBatchNormResumesBitIdentically) {
    // Batchnorm's running statistics live among the parameters: a resumed run normalises exactly as the whole one.
    const json spec_json = {{"model", "resnet"},
                            {"width", 4},
                            {"stages", 2},
                            {"data", {{"dataset", "fashion-mnist"}, {"limit", 384}}},
                            {"label_smoothing", 0.1},
                            {"batch_size", 32},
                            {"epochs", 2},
                            {"seed", 4}};
    const std::string spec = write_spec(dir, "resnet.json", spec_json);
    const ProcessResult whole = run_trainer({spec, "--checkpoint-dir", dir.file("whole"), "--threads", "2"});
    ASSERT_EQ(whole.exit_code, 0) << whole.err;
    const ProcessResult first =
        run_trainer({spec, "--checkpoint-dir", dir.file("split"), "--threads", "2", "--set", "max_steps=15"});
    ASSERT_EQ(first.exit_code, 0) << first.err;
    const ProcessResult second =
        run_trainer({spec, "--checkpoint-dir", dir.file("split"), "--threads", "2", "--resume"});
    ASSERT_EQ(second.exit_code, 0) << second.err;
    EXPECT_EQ(second.records("status").front()["resumed_from_step"], 15); // mid-epoch 2 (11 steps an epoch)
    const auto whole_params = final_params(dir.file("whole"));
    ASSERT_FALSE(whole_params.empty());
    EXPECT_EQ(whole_params, final_params(dir.file("split")));
    EXPECT_EQ(whole.records("eval").back()["confusion"], second.records("eval").back()["confusion"]);
}

TEST_F(Trainer, EarlyStoppingKeepsTheBestEpochAndExportsIt) {
    // min_delta 10 on the validation loss: only the first epoch counts as an improvement, whatever the numbers, so
    // with patience 2 the run stops after epoch 3 of 6, and epoch 1 is the best.
    json spec_json = kSmallMlp;
    spec_json.erase("checkpoint_every");
    spec_json["epochs"] = 6;
    spec_json["data"]["limit"] = 1000;
    spec_json["early_stopping"] = {{"metric", "val_loss"}, {"patience", 2}, {"min_delta", 10}};
    const std::string spec = write_spec(dir, "early.json", spec_json);
    // Cut after epoch 2 (15 steps an epoch), then resumed: the count of epochs without improvement carries over
    // in the checkpoint (a run that forgot it would call epoch 3 its best and stop after epoch 5).
    const ProcessResult first =
        run_trainer({spec, "--checkpoint-dir", dir.file("ck"), "--threads", "2", "--set", "max_steps=30"});
    ASSERT_EQ(first.exit_code, 0) << first.err;
    ASSERT_EQ(first.records("epoch").size(), 2u);
    const ProcessResult run = run_trainer({spec, "--checkpoint-dir", dir.file("ck"), "--threads", "2", "--resume"});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    ASSERT_EQ(run.records("epoch").size(), 1u);
    EXPECT_EQ(run.records("epoch").back()["epoch"], 3);
    json stopped, restored, best_event;
    for (const auto& r : first.records("event"))
        if (r["event"] == "best_epoch")
            best_event = r;
    for (const auto& r : run.records("event")) {
        if (r["event"] == "early_stopped")
            stopped = r;
        if (r["event"] == "restored_best")
            restored = r;
        EXPECT_NE(r["event"], "best_epoch") << "only epoch 1 improved";
    }
    ASSERT_TRUE(best_event.is_object());
    EXPECT_EQ(best_event["epoch"], 1);
    ASSERT_TRUE(stopped.is_object()) << run.out;
    EXPECT_EQ(stopped["epoch"], 3);
    EXPECT_EQ(stopped["best_epoch"], 1);
    ASSERT_TRUE(restored.is_object());
    const json test = run.records("eval").back();
    EXPECT_EQ(test["split"], "test");
    EXPECT_EQ(test["epoch"], 1);
    EXPECT_EQ(test["step"], best_event["step"]);
    EXPECT_TRUE(test["restored_best"].get<bool>());

    // best.tdck is epoch 1's checkpoint; pruning (keep 3) left it alone.
    const auto best = read_checkpoint(dir.file("ck/best.tdck"));
    ASSERT_TRUE(best) << best.error();
    EXPECT_EQ(best->state.step, best_event["step"].get<long>());
    EXPECT_EQ(best->state.best_epoch, 1);
    // Export takes it (restore best), and scores the test set as the run's restored test record did.
    const ProcessResult exported =
        run_trainer({"export", spec, "--checkpoint", dir.file("ck"), "--out", dir.file("out"), "--no-int8"});
    ASSERT_EQ(exported.exit_code, 0) << exported.err;
    const json report = json::parse(exported.out);
    EXPECT_EQ(report["step"], best_event["step"]);
    EXPECT_DOUBLE_EQ(report["test_accuracy_fp32"].get<double>(), test["accuracy"].get<double>());
    std::ifstream card_file(dir.file("out/model.json"));
    EXPECT_EQ(json::parse(card_file)["checkpoint"]["file"], "best.tdck");
    const ProcessResult latest = run_trainer(
        {"export", spec, "--checkpoint", dir.file("ck"), "--out", dir.file("latest"), "--no-int8", "--latest"});
    ASSERT_EQ(latest.exit_code, 0) << latest.err;
    EXPECT_EQ(json::parse(latest.out)["step"], run.records("status").back()["step"]);

    // A resume of the stopped run trains nothing more.
    const ProcessResult again = run_trainer({spec, "--checkpoint-dir", dir.file("ck"), "--threads", "2", "--resume"});
    ASSERT_EQ(again.exit_code, 0) << again.err;
    EXPECT_TRUE(again.records("epoch").empty());
}

TEST_F(Trainer, SigtermWritesCheckpointAndExits75ThenResumesExactly) {
    json cnn = {{"model", "cnn"}, {"conv", {8, 16}}, {"fc", {32}},
                {"data", {{"dataset", "fashion-mnist"}, {"limit", 2500}}},
                {"batch_size", 32}, {"epochs", 1}, {"seed", 5}};
    const std::string spec = write_spec(dir, "cnn.json", cnn);
    const ProcessResult whole = run_trainer({spec, "--checkpoint-dir", dir.file("whole"), "--threads", "2"});
    ASSERT_EQ(whole.exit_code, 0) << whole.err;

    RunningProcess running = start_trainer({spec, "--checkpoint-dir", dir.file("split"), "--threads", "2"});
    std::string seen;
    ASSERT_TRUE(read_until(running, "\"step\":10,", seen));
    ::kill(running.pid, SIGTERM);
    ProcessResult stopped = finish(running);
    stopped.out = seen + stopped.out;
    ASSERT_EQ(stopped.exit_code, kExitPreempted);
    const auto status = stopped.records("status").back();
    EXPECT_EQ(status["state"], "preempted");
    const long stopped_at = status["step"].get<long>();
    EXPECT_GE(stopped_at, 10);
    EXPECT_LT(stopped_at, 71) << "SIGTERM arrived too late to test anything";
    EXPECT_TRUE(fs::exists(status["checkpoint"].get<std::string>()));

    const ProcessResult resumed = run_trainer({spec, "--checkpoint-dir", dir.file("split"), "--threads", "2", "--resume"});
    ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
    EXPECT_EQ(resumed.records("status").front()["resumed_from_step"], stopped_at);
    EXPECT_EQ(final_params(dir.file("whole")), final_params(dir.file("split")));
}

// Convolutions run in oneDNN and the run says so; TRAINDECK_ONEDNN=0 runs the engine's own im2col path, which
// computes the same model (the first steps' losses agree to rounding). The profile covers every layer that computes.
TEST_F(Trainer, ConvolutionsRunInOneDnnUnlessTurnedOffAndTheProfileSaysWhereTimeWent) {
    const json cnn = {
        {"model", "cnn"},   {"conv", {8, 16}}, {"fc", {32}}, {"data", {{"dataset", "fashion-mnist"}, {"limit", 640}}},
        {"batch_size", 64}, {"epochs", 1},     {"seed", 5}};
    const std::string spec = write_spec(dir, "cnn.json", cnn);
    const ProcessResult onednn = run_trainer({spec, "--checkpoint-dir", dir.file("onednn"), "--threads", "2"});
    ASSERT_EQ(onednn.exit_code, 0) << onednn.err;
    const ProcessResult own =
        run_trainer({spec, "--checkpoint-dir", dir.file("own"), "--threads", "2"}, {"TRAINDECK_ONEDNN=0"});
    ASSERT_EQ(own.exit_code, 0) << own.err;

    auto convolutions = [](const ProcessResult& run) {
        return run.records("status").front().value("convolutions", json());
    };
    const json ran_in = convolutions(onednn);
    ASSERT_EQ(ran_in.size(), 2u) << ran_in.dump();
    for (const auto& where : ran_in)
        EXPECT_TRUE(where.get<std::string>().starts_with("oneDNN ")) << ran_in.dump();
    EXPECT_EQ(convolutions(own), json::array({"im2col + BLAS", "im2col + BLAS"}));

    const auto ours = curve(onednn), theirs = curve(own);
    ASSERT_EQ(ours.size(), theirs.size());
    ASSERT_GE(ours.size(), 2u);
    for (long step : {ours.begin()->first, std::next(ours.begin())->first}) {
        const double a = std::get<0>(ours.at(step)), b = std::get<0>(theirs.at(step));
        EXPECT_NEAR(a, b, 1e-4 * std::abs(b)) << "step " << step;
    }

    const json layers = onednn.records("status").back()["layers"];
    ASSERT_EQ(onednn.records("status").back()["state"], "finished");
    std::vector<std::string> types;
    for (const auto& layer : layers) {
        types.push_back(layer["type"]);
        EXPECT_EQ(layer["samples"], 576) << layer.dump(); // 640 less the 10 % validation split
        EXPECT_GT(layer["forward_seconds"].get<double>(), 0.0) << layer.dump();
        EXPECT_GT(layer["backward_seconds"].get<double>(), 0.0) << layer.dump();
        EXPECT_EQ(layer["input_gradient"], &layer != &layers.front()) << layer.dump();
        EXPECT_EQ(layer["forward_flops_per_sample"].get<double>() > 0,
                  layer["type"] == "conv2d" || layer["type"] == "linear")
            << layer.dump();
    }
    const std::vector<std::string> expected = {"conv2d", "maxpool", "relu", "conv2d", "maxpool",
                                               "relu",   "linear",  "relu", "linear"};
    EXPECT_EQ(types, expected);
    // The first convolution: 26x26 outputs of 8 channels, a 3x3 patch of 1 channel each, two FLOPs a multiply-add.
    EXPECT_EQ(layers.front()["forward_flops_per_sample"], 2.0 * 26 * 26 * 8 * 9);

    const ProcessResult version = run_trainer({"--version"});
    EXPECT_NE(version.out.find("; oneDNN 2."), std::string::npos) << version.out;
}

TEST_F(Trainer, ResumeRefusesACheckpointOfAnotherSpec) {
    const std::string spec = write_spec(dir, "mlp.json", kSmallMlp);
    ASSERT_EQ(run_trainer({spec, "--checkpoint-dir", dir.file("ck"), "--set", "max_steps=3"}).exit_code, 0);
    const ProcessResult other = run_trainer({spec, "--checkpoint-dir", dir.file("ck"), "--resume", "--set", "seed=10"});
    EXPECT_EQ(other.exit_code, kExitUsage);
    EXPECT_NE(other.err.find("different spec"), std::string::npos) << other.err;
}

TEST_F(Trainer, GradientAccumulationEqualsTheLargerBatch) {
    json base = {{"model", "mlp"}, {"hidden", {64}}, {"data", {{"dataset", "fashion-mnist"}, {"limit", 2048}}},
                 {"optimizer", {{"type", "sgd"}, {"lr", 0.05}}}, {"epochs", 1}, {"seed", 3}};
    json big = base, accumulated = base;
    big["batch_size"] = 128;
    accumulated["batch_size"] = 64;
    accumulated["grad_accum"] = 2;
    ASSERT_EQ(run_trainer({write_spec(dir, "big.json", big), "--checkpoint-dir", dir.file("big")}).exit_code, 0);
    ASSERT_EQ(run_trainer({write_spec(dir, "acc.json", accumulated), "--checkpoint-dir", dir.file("acc")}).exit_code, 0);
    const auto a = final_params(dir.file("big")), b = final_params(dir.file("acc"));
    ASSERT_EQ(a.size(), b.size());
    ASSERT_FALSE(a.empty());
    float worst = 0.0f;
    for (size_t i = 0; i < a.size(); ++i)
        worst = std::max(worst, std::abs(a[i] - b[i]));
    EXPECT_LT(worst, 1e-4f);
}

TEST_F(Trainer, NanLossIsAnEventAnExitCodeAndLeavesNoCheckpoint) {
    json exploding = kSmallMlp;
    exploding["optimizer"] = {{"type", "sgd"}, {"lr", 1e6}};
    exploding["schedule"] = {{"decay", "constant"}};
    exploding["checkpoint_every"] = 0;
    exploding["dropout"] = 0.0;
    const ProcessResult run = run_trainer({write_spec(dir, "boom.json", exploding), "--checkpoint-dir", dir.file("ck")});
    EXPECT_EQ(run.exit_code, kExitNonFinite);
    ASSERT_FALSE(run.records("event").empty());
    EXPECT_EQ(run.records("event").back()["event"], "nan_loss");
    EXPECT_EQ(line_count(run.err), 1u) << run.err;
    EXPECT_NE(run.err.find("lower the learning rate"), std::string::npos);
    EXPECT_EQ(checkpoint_files(dir.file("ck")), 0u);
}

TEST_F(Trainer, BadInputIsOneLineAndADistinctExitCode) {
    const ProcessResult missing = run_trainer(
        {write_spec(dir, "m.json", {{"data", {{"train_images", dir.file("none.gz")}, {"train_labels", dir.file("none2.gz")}}}}),
         "--checkpoint-dir", dir.file("ck")});
    EXPECT_EQ(missing.exit_code, kExitBadData);
    EXPECT_EQ(line_count(missing.err), 1u) << missing.err;
    EXPECT_NE(missing.err.find("none.gz: cannot open"), std::string::npos);

    const ProcessResult layer = run_trainer({write_spec(dir, "l.json", {{"layers", {{{"type", "attention"}}}}})});
    EXPECT_EQ(layer.exit_code, kExitUsage);
    EXPECT_EQ(line_count(layer.err), 1u) << layer.err;
    EXPECT_NE(layer.err.find("unknown layer type \"attention\""), std::string::npos);

    write_text(dir.file("broken.json"), "{\"model\": \"mlp\",");
    const ProcessResult json_error = run_trainer({dir.file("broken.json")});
    EXPECT_EQ(json_error.exit_code, kExitUsage);
    EXPECT_NE(json_error.err.find("not valid JSON"), std::string::npos);

    write_text(dir.file("t.csv"), "a,b,label\n1,2,x\n3,?,y\n");
    const ProcessResult csv = run_trainer(
        {write_spec(dir, "c.json", {{"data", {{"format", "csv"}, {"train_csv", dir.file("t.csv")}}}}), "--checkpoint-dir", dir.file("ck")});
    EXPECT_EQ(csv.exit_code, kExitBadData);
    // "?" is a missing cell; missing cells are an error unless the spec says to drop or fill them.
    EXPECT_NE(csv.err.find("t.csv:3: column \"b\" is missing (set data.missing to \"drop\" or \"fill\")"),
              std::string::npos)
        << csv.err;
    EXPECT_FALSE(fs::exists(dir.file("ck"))) << "a failed start must not leave a checkpoint folder";

    const ProcessResult flag = run_trainer({"--bogus"});
    EXPECT_EQ(flag.exit_code, kExitUsage);
}

TEST_F(Trainer, LearnsFashionMnistWithPerClassConfusion) {
    json spec = {{"model", "mlp"}, {"data", {{"dataset", "fashion-mnist"}, {"limit", 6000}}}, {"epochs", 1}, {"seed", 1}};
    const ProcessResult run = run_trainer({write_spec(dir, "f.json", spec), "--checkpoint-dir", dir.file("ck")});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const auto val = run.records("eval").front();
    EXPECT_EQ(val["split"], "val");
    EXPECT_GT(val["accuracy"].get<double>(), 0.72);
    long total = 0, diagonal = 0;
    ASSERT_EQ(val["confusion"].size(), 10u);
    for (size_t t = 0; t < 10; ++t)
        for (size_t p = 0; p < 10; ++p) {
            total += val["confusion"][t][p].get<long>();
            diagonal += t == p ? val["confusion"][t][p].get<long>() : 0;
        }
    EXPECT_EQ(total, 600);
    EXPECT_NEAR(double(diagonal) / total, val["accuracy"].get<double>(), 1e-9);
    const auto metrics = run.records("metric");
    ASSERT_EQ(metrics.size(), 43u);
    for (const char* key : {"step", "epoch", "loss", "lr", "samples_per_s", "train_seconds", "time"})
        EXPECT_TRUE(metrics.front().contains(key)) << key;
    EXPECT_LT(metrics.back()["loss"].get<double>(), metrics.front()["loss"].get<double>());
}

TEST_F(Trainer, TheTestRecordCarriesTheGallerysExamplesAsTheImagesThemselves) {
    json spec = {
        {"model", "mlp"}, {"data", {{"dataset", "fashion-mnist"}, {"limit", 3000}}}, {"epochs", 1}, {"seed", 2}};
    const ProcessResult run = run_trainer({write_spec(dir, "f.json", spec), "--checkpoint-dir", dir.file("ck")});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const auto evals = run.records("eval");
    ASSERT_EQ(evals.size(), 2u);
    EXPECT_FALSE(evals.front().contains("examples")) << "a run with a test set shows the test set's";
    const json& test = evals.back();
    ASSERT_EQ(test["split"], "test");
    ASSERT_TRUE(test.contains("examples"));
    const json& examples = test["examples"];
    EXPECT_EQ(examples["height"], 28);
    EXPECT_EQ(examples["width"], 28);
    EXPECT_EQ(examples["channels"], 1);
    const json& items = examples["items"];
    ASSERT_GT(items.size(), 50u);
    EXPECT_LE(test.dump().size(), 500u << 10) << "an eval record must stay far under the 1 MiB line limit";
    auto images = traindeck::engine::load_idx(std::string(kFashionMnistDir) + "/t10k-images-idx3-ubyte.gz",
                                              std::string(kFashionMnistDir) + "/t10k-labels-idx1-ubyte.gz");
    ASSERT_TRUE(images) << images.error();
    std::map<std::pair<int, int>, int> per_cell;
    std::set<std::pair<int, int>> first_round;
    double last_confidence = 2;
    bool in_first_round = true, mistakes = true;
    for (const json& item : items) {
        const int truth = item[0], predicted = item[1];
        const double confidence = item[2];
        const size_t index = item[4];
        // The true class is the test file's label for that image, and the pixels are that image's, exactly.
        ASSERT_LT(index, images->size());
        EXPECT_EQ(images->y[index], truth) << index;
        const std::string pixels = item[3];
        std::string expected;
        for (size_t f = 0; f < 784; ++f)
            expected += static_cast<char>(std::lround(images->x[index * 784 + f] * 255.0f));
        EXPECT_EQ(pixels, traindeck::base64_encode(reinterpret_cast<const uint8_t*>(expected.data()), 784)) << index;
        // At most three a cell, and never more than the matrix counts there.
        const int count = ++per_cell[{truth, predicted}];
        EXPECT_LE(count, 3);
        EXPECT_LE(count, test["confusion"][truth][predicted].get<int>());
        // The first round: one of each cell, mistakes first, each part most confident first.
        if (in_first_round && count == 2)
            in_first_round = false, mistakes = true, last_confidence = 2;
        if (in_first_round)
            first_round.insert({truth, predicted});
        if (mistakes && truth == predicted)
            mistakes = false, last_confidence = 2;
        EXPECT_TRUE(mistakes || truth == predicted) << "a mistake after the correct ones of its round";
        EXPECT_LE(confidence, last_confidence + 1e-12);
        last_confidence = confidence;
        EXPECT_GT(confidence, 0.0);
        EXPECT_LE(confidence, 1.0);
    }
    long cells = 0;
    for (int t = 0; t < 10; ++t)
        for (int p = 0; p < 10; ++p)
            cells += test["confusion"][t][p].get<long>() > 0;
    EXPECT_EQ(static_cast<long>(first_round.size()), cells) << "every cell with a sample has an example";
}

TEST_F(Trainer, LearnsACsvTableAndWritesMetricsToTheNamedFd) {
    // Three separable blobs with string labels; the test file reuses the training file's class order.
    std::string train = "x,y,z,kind\n", test = train;
    Rng rng(4);
    const char* names[] = {"cat", "dog", "eel"};
    for (int i = 0; i < 600; ++i) {
        const int k = i % 3;
        std::string row = std::to_string(k * 3 + rng.uniform(-1, 1)) + "," + std::to_string(-k * 2 + rng.uniform(-1, 1)) +
                          "," + std::to_string(rng.uniform(-1, 1)) + "," + names[k] + "\n";
        (i < 450 ? train : test) += row;
    }
    write_text(dir.file("train.csv"), train);
    write_text(dir.file("test.csv"), test);
    json spec = {{"model", "mlp"}, {"hidden", {16}},
                 {"data", {{"format", "csv"}, {"train_csv", "train.csv"}, {"test_csv", "test.csv"}, {"label_column", "kind"}}},
                 {"optimizer", {{"type", "adamw"}, {"lr", 0.01}}}, {"batch_size", 32}, {"epochs", 10}};
    const ProcessResult run = run_trainer({write_spec(dir, "csv.json", spec), "--checkpoint-dir", dir.file("ck")},
                                          {"TRAINDECK_DATASET_DIR=" + dir.path().string()}, dir.file("metrics.jsonl"));
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_EQ(run.out.find("@traindeck"), std::string::npos) << "metrics went to stdout despite TRAINDECK_METRICS_FD";
    std::ifstream lines(dir.file("metrics.jsonl"));
    std::string line;
    json test_eval;
    size_t count = 0;
    while (std::getline(lines, line)) {
        const json record = json::parse(line);
        EXPECT_EQ(record["v"], 1);
        ++count;
        if (record["type"] == "eval" && record["split"] == "test")
            test_eval = record;
    }
    EXPECT_GT(count, 100u);
    ASSERT_FALSE(test_eval.is_null());
    EXPECT_GT(test_eval["accuracy"].get<double>(), 0.95);
}

TEST_F(Trainer, LearnsACsvWithCategoriesAndMissingCellsAndExportsTheEncoding) {
    // The label follows the colour (a category) and the weight; a tenth of the weights are missing (NA).
    std::string train = "weight,colour,label\n", test = train;
    Rng rng(6);
    const char* colours[] = {"blue", "green", "red"};
    for (int i = 0; i < 600; ++i) {
        const int k = static_cast<int>(rng.below(3));
        const float weight = rng.uniform(0, 10);
        const std::string label = (k == 2) != (weight > 8) ? "hot" : "cold";
        const std::string cell = i % 10 == 3 ? std::string("NA") : std::to_string(weight);
        (i < 450 ? train : test).append(cell).append(",").append(colours[k]).append(",").append(label).append("\n");
    }
    test += "5,purple,cold\n"; // a colour training never had
    write_text(dir.file("train.csv"), train);
    write_text(dir.file("test.csv"), test);
    json spec = {{"model", "mlp"},
                 {"hidden", {16}},
                 {"data",
                  {{"format", "csv"},
                   {"train_csv", "train.csv"},
                   {"test_csv", "test.csv"},
                   {"label_column", "label"},
                   {"missing", "fill"}}},
                 {"optimizer", {{"type", "adamw"}, {"lr", 0.01}}},
                 {"batch_size", 32},
                 {"epochs", 15}};
    const std::string spec_path = write_spec(dir, "csv.json", spec);
    const ProcessResult run =
        run_trainer({spec_path, "--checkpoint-dir", dir.file("ck")}, {"TRAINDECK_DATASET_DIR=" + dir.path().string()});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    json data_event;
    for (const auto& r : run.records("event"))
        if (r["event"] == "data")
            data_event = r;
    ASSERT_TRUE(data_event.is_object()) << run.out;
    const std::string message = data_event["message"];
    EXPECT_NE(message.find("4 features (1 categorical columns one-hot)"), std::string::npos) << message;
    EXPECT_NE(message.find("train: 45 missing cells filled"), std::string::npos) << message;
    EXPECT_NE(message.find("test: 1 category values the training file does not have"), std::string::npos) << message;
    EXPECT_EQ(data_event["data"]["csv"]["categorical"]["colour"], json::array({"blue", "green", "red"}));
    EXPECT_GT(run.records("eval").back()["accuracy"].get<double>(), 0.85) << "the colour decides most labels";

    // The model card says what each input value is.
    const ProcessResult exported =
        run_trainer({"export", spec_path, "--checkpoint", dir.file("ck"), "--out", dir.file("out"), "--no-int8"},
                    {"TRAINDECK_DATASET_DIR=" + dir.path().string()});
    ASSERT_EQ(exported.exit_code, 0) << exported.err;
    std::ifstream card(dir.file("out/model.json"));
    EXPECT_EQ(json::parse(card)["input"]["features"],
              json::array({"weight", "colour=blue", "colour=green", "colour=red"}));
}

TEST_F(Trainer, LearnsARegressionAndReportsItsErrorsInTheTargetsUnits) {
    // A price from two numbers and a colour, in the hundreds of thousands: the trainer standardises the target and
    // reports every error in its own units.
    std::string train = "a,b,colour,price\n", test = train;
    Rng rng(8);
    const char* colours[] = {"blue", "green", "red"};
    const double colour_effect[] = {0.0, 10000.0, -5000.0};
    for (int i = 0; i < 1600; ++i) {
        const int k = static_cast<int>(rng.below(3));
        const double a = rng.uniform(0, 5), b = rng.uniform(0, 5);
        const double price = 250000 + 20000 * a - 15000 * b + colour_effect[k] + 500 * rng.uniform(-1, 1);
        (i < 1200 ? train : test) +=
            std::to_string(a) + "," + std::to_string(b) + "," + colours[k] + "," + std::to_string(price) + "\n";
    }
    write_text(dir.file("train.csv"), train);
    write_text(dir.file("test.csv"), test);
    json spec = {
        {"task", "regression"},
        {"model", "mlp"},
        {"hidden", {32}},
        {"data", {{"format", "csv"}, {"train_csv", "train.csv"}, {"test_csv", "test.csv"}, {"label_column", "price"}}},
        {"optimizer", {{"type", "adamw"}, {"lr", 0.01}}},
        {"batch_size", 32},
        {"epochs", 12}};
    const ProcessResult run = run_trainer({write_spec(dir, "reg.json", spec), "--checkpoint-dir", dir.file("ck")},
                                          {"TRAINDECK_DATASET_DIR=" + dir.path().string()});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const json status = run.records("status").front();
    EXPECT_EQ(status["task"], "regression");
    EXPECT_EQ(status["classes"], 1);
    const auto metrics = run.records("metric");
    ASSERT_FALSE(metrics.empty());
    for (const json& metric : metrics)
        ASSERT_FALSE(metric.contains("accuracy")) << metric.dump();
    // The first steps' squared error is of the price's own size (its variance is about 2e9), not a standardised 1.
    EXPECT_GT(metrics.front()["loss"].get<double>(), 1e8);
    const auto evals = run.records("eval");
    ASSERT_EQ(evals.size(), 13u); // val after each epoch, then test
    const json& last = evals.back();
    ASSERT_EQ(last["split"], "test");
    for (const json& eval : evals) {
        EXPECT_FALSE(eval.contains("accuracy") || eval.contains("confusion")) << eval.dump().substr(0, 200);
        EXPECT_NEAR(eval["rmse"].get<double>(), std::sqrt(eval["loss"].get<double>()),
                    1e-6 * eval["rmse"].get<double>());
    }
    EXPECT_GT(last["r2"].get<double>(), 0.97) << last["r2"];
    EXPECT_LT(evals.front()["r2"].get<double>(), last["r2"].get<double>());
    // Every test sample came back as (true, predicted): its MSE, MAE and R² counted here are the record's.
    ASSERT_EQ(last["samples"], 400);
    ASSERT_EQ(last["pairs"].size(), 400u);
    double squared = 0, absolute = 0, sum = 0;
    for (const json& pair : last["pairs"]) {
        const double error = pair[1].get<double>() - pair[0].get<double>();
        squared += error * error;
        absolute += std::abs(error);
        sum += pair[0].get<double>();
    }
    double total = 0;
    for (const json& pair : last["pairs"])
        total += (pair[0].get<double>() - sum / 400) * (pair[0].get<double>() - sum / 400);
    EXPECT_NEAR(squared / 400, last["loss"].get<double>(), 1e-3 * last["loss"].get<double>());
    EXPECT_NEAR(absolute / 400, last["mae"].get<double>(), 1e-3 * last["mae"].get<double>());
    EXPECT_NEAR(1 - squared / total, last["r2"].get<double>(), 1e-5);
    // The test file's prices, in its order, are the pairs' truths (not standardised values).
    EXPECT_NEAR(last["pairs"][0][0].get<double>(), std::stod(test.substr(test.rfind(',', test.find('\n', 20)) + 1)),
                0.1);

    // Cut at step 50 (mid-epoch 2) and resumed in a new process, it ends bit for bit where the whole run did.
    const std::string spec_path = dir.file("reg.json");
    const std::vector<std::string> env = {"TRAINDECK_DATASET_DIR=" + dir.path().string()};
    const ProcessResult first =
        run_trainer({spec_path, "--checkpoint-dir", dir.file("split"), "--set", "max_steps=50"}, env);
    ASSERT_EQ(first.exit_code, 0) << first.err;
    ASSERT_EQ(first.records("status").back()["state"], "stopped");
    const ProcessResult second = run_trainer({spec_path, "--checkpoint-dir", dir.file("split"), "--resume"}, env);
    ASSERT_EQ(second.exit_code, 0) << second.err;
    EXPECT_EQ(second.records("status").front()["resumed_from_step"], 50);
    const auto whole_params = final_params(dir.file("ck"));
    ASSERT_FALSE(whole_params.empty());
    EXPECT_EQ(whole_params, final_params(dir.file("split")));
    EXPECT_EQ(second.records("eval").back()["pairs"], last["pairs"]);

    // Inputs left as they are ("normalize": false): the target is standardised all the same, and it trains.
    spec["data"]["normalize"] = false;
    const ProcessResult raw =
        run_trainer({write_spec(dir, "raw.json", spec), "--checkpoint-dir", dir.file("raw")}, env);
    ASSERT_EQ(raw.exit_code, 0) << raw.err;
    EXPECT_GT(raw.records("eval").back()["r2"].get<double>(), 0.9);
}

TEST(TrainerConfig, TheConfigRecordIsTheFullSpecButNotTheRunsName) {
    TempDir dir;
    std::string table = "x,y,kind\n";
    for (int i = 0; i < 40; ++i)
        table += std::to_string(i % 2) + "," + std::to_string(i % 5) + "," + (i % 2 ? "odd" : "even") + "\n";
    write_text(dir.file("t.csv"), table);
    const json spec = {{"name", "blobs seed 3"},
                       {"model", "mlp"},
                       {"hidden", {4}},
                       {"data", {{"format", "csv"}, {"train_csv", "t.csv"}, {"label_column", "kind"}}},
                       {"batch_size", 8},
                       {"epochs", 1},
                       {"seed", 3}};
    const ProcessResult run = run_trainer({write_spec(dir, "named.json", spec), "--checkpoint-dir", dir.file("ck")},
                                          {"TRAINDECK_DATASET_DIR=" + dir.path().string()});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const auto configs = run.records("config");
    ASSERT_EQ(configs.size(), 1u);
    const json& config = configs.front()["config"];
    // The name is the run's own column: as a config key every run would differ in it.
    EXPECT_FALSE(config.contains("name")) << config.dump();
    EXPECT_EQ(config["seed"], 3);
    EXPECT_EQ(config["batch_size"], 8);
    EXPECT_TRUE(config.contains("optimizer")) << "defaults are filled in: " << config.dump();
}
