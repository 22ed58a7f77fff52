// Export of trained models, checked outside TrainDeck: the ONNX files run in onnxruntime (onnxruntime-node from
// npm, installed by installer/install-deps.sh --tests) and predict what TrainDeck predicts.
#include "checkpoint.h"
#include "requireall.h"
#include "testsupport.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

using namespace traindeck::engine;
using namespace traindeck::test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kTools = std::string(TRAINDECK_SOURCE_DIR) + "/tests/tools";

bool onnxruntime_installed() { return fs::exists(kTools + "/node_modules/onnxruntime-node/package.json"); }

#define REQUIRE_ONNXRUNTIME()                                                                                          \
    ASSERT_TRUE(onnxruntime_installed()) << "onnxruntime-node is missing in tests/tools: run installer/install-deps.sh --tests"

template <typename T>
std::vector<T> read_values(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<T> values(bytes.size() / sizeof(T));
    std::memcpy(values.data(), bytes.data(), values.size() * sizeof(T));
    return values;
}

// Runs the model in onnxruntime over the dumped inputs, writing out (ort_eval.js; mode "values": the outputs
// themselves, else each row's argmax).
void run_onnxruntime(const std::string& model, const std::string& inputs, const std::string& dims,
                     const std::string& out, const std::string& mode = {}) {
    const std::string command = "node '" + kTools + "/ort_eval.js' '" + model + "' '" + inputs + "' " + dims + " '" +
                                out + "' " + mode + " 2>&1";
    FILE* pipe = ::popen(command.c_str(), "r");
    std::string output;
    char buffer[512];
    while (std::fgets(buffer, sizeof(buffer), pipe))
        output += buffer;
    const int status = ::pclose(pipe);
    EXPECT_EQ(status, 0) << output;
}

// Its predicted classes.
std::vector<int32_t> onnxruntime_predictions(const std::string& model, const std::string& inputs,
                                             const std::string& dims, const std::string& out) {
    run_onnxruntime(model, inputs, dims, out);
    return read_values<int32_t>(out);
}

double accuracy(const std::vector<int32_t>& predictions, const std::vector<int32_t>& labels) {
    long correct = 0;
    for (size_t i = 0; i < labels.size(); ++i)
        correct += predictions.at(i) == labels[i];
    return labels.empty() ? 0 : static_cast<double>(correct) / labels.size();
}

// A safetensors file's JSON header (its size in *header_size: the tensors' bytes start 8 bytes after it).
json safetensors_header(const std::string& path, uint64_t* header_size = nullptr) {
    std::ifstream in(path, std::ios::binary);
    uint64_t size = 0;
    in.read(reinterpret_cast<char*>(&size), 8);
    std::string header(size, ' ');
    in.read(header.data(), static_cast<std::streamsize>(size));
    if (header_size)
        *header_size = size;
    return json::parse(header, nullptr, false);
}

long differences(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
    long count = 0;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
        count += a[i] != b[i];
    return count + static_cast<long>(std::max(a.size(), b.size()) - std::min(a.size(), b.size()));
}

json run_export(const std::vector<std::string>& args, ProcessResult* result_out = nullptr) {
    std::vector<std::string> all = {"export"};
    all.insert(all.end(), args.begin(), args.end());
    ProcessResult result = run_trainer(all);
    if (result_out)
        *result_out = result;
    return result.exit_code == 0 ? json::parse(result.out, nullptr, false) : json();
}

} // namespace

TEST(Export, CnnRunsInOnnxRuntimeWithTheSamePredictions) {
    if (!fashion_mnist_installed()) {
        TRAINDECK_SKIP("dataset-fashion-mnist is not installed (installer/install-deps.sh installs it)");
    }
    REQUIRE_ONNXRUNTIME();
    TempDir dir;
    // Every layer kind the exporter maps, padding and stride included, and a multi-channel flatten (whose column
    // order differs between our NHWC and ONNX's NCHW).
    const json spec = {{"layers", {{{"type", "conv2d"}, {"out", 8}, {"kernel", 3}, {"padding", 1}},
                                   {{"type", "relu"}},
                                   {{"type", "maxpool"}, {"size", 2}},
                                   {{"type", "conv2d"}, {"out", 12}, {"kernel", 3}, {"stride", 2}},
                                   {{"type", "gelu"}},
                                   {{"type", "flatten"}},
                                   {{"type", "dropout"}, {"p", 0.2}},
                                   {{"type", "linear"}, {"out", 32}},
                                   {{"type", "relu"}}}},
                       {"data", {{"dataset", "fashion-mnist"}, {"limit", 6000}}},
                       {"batch_size", 64}, {"epochs", 1}, {"seed", 5}};
    write_text(dir.file("spec.json"), spec.dump());
    const ProcessResult trained = run_trainer({dir.file("spec.json"), "--checkpoint-dir", dir.file("ck")});
    ASSERT_EQ(trained.exit_code, 0) << trained.err;
    double reported_test_accuracy = -1;
    json reported_confusion, reported_names;
    for (const auto& r : trained.records("eval"))
        if (r["split"] == "test") {
            reported_test_accuracy = r["accuracy"];
            reported_confusion = r["confusion"];
            reported_names = r["class_names"];
        }

    const json report = run_export({dir.file("spec.json"), "--checkpoint", dir.file("ck"), "--out", dir.file("out"),
                                    "--dump-eval", dir.file("dump"), "--max-drop", "0"});
    ASSERT_TRUE(report.is_object());
    ASSERT_EQ(report["artifacts"].size(), 4u);
    std::map<std::string, int64_t> sizes;
    for (const auto& artifact : report["artifacts"]) {
        EXPECT_TRUE(fs::exists(artifact["path"].get<std::string>()));
        EXPECT_EQ(fs::file_size(artifact["path"].get<std::string>()), artifact["bytes"].get<uint64_t>());
        sizes[artifact["kind"]] = artifact["bytes"];
    }
    EXPECT_LT(sizes["onnx-int8"], sizes["onnx"] * 0.4) << "int8 weights should make the model about 4x smaller";

    // The model card beside the files: what a user's code needs to run the model, and what it scored.
    std::ifstream card_file(dir.file("out/model.json"));
    const json card = json::parse(card_file, nullptr, false);
    ASSERT_TRUE(card.is_object());
    EXPECT_EQ(card["format"], "traindeck-model-card");
    ASSERT_EQ(card["classes"].size(), 10u);
    EXPECT_EQ(card["classes"][9], "Ankle boot");
    EXPECT_EQ(card["input"]["shape"], json::array({1, 1, 28, 28}));
    EXPECT_EQ(card["input"]["channels"], "grayscale");
    EXPECT_EQ(card["files"]["onnx"], "model.onnx");
    EXPECT_EQ(card["files"]["onnx-int8"], "model.int8.onnx");
    EXPECT_EQ(card["metrics"]["test_accuracy_fp32"], report["test_accuracy_fp32"]);
    EXPECT_EQ(card["metrics"]["test_accuracy_int8"], report["test_accuracy_int8"]);
    EXPECT_EQ(card["checkpoint"]["step"], report["step"]);
    // Our fp32 inference is the trainer's: the same test accuracy as the run reported.
    EXPECT_DOUBLE_EQ(report["test_accuracy_fp32"].get<double>(), reported_test_accuracy);
    EXPECT_EQ(report["accuracy_warning"].get<bool>(),
              report["val_accuracy_fp32"].get<double>() - report["val_accuracy_int8"].get<double>() > 0);

    const auto labels = read_values<int32_t>(dir.file("dump/test_labels.i32"));
    ASSERT_EQ(labels.size(), 10000u);
    const auto ours_fp32 = read_values<int32_t>(dir.file("dump/test_pred_fp32.i32"));
    const auto ort_fp32 = onnxruntime_predictions(dir.file("out/model.onnx"), dir.file("dump/test_inputs.f32"), "1,28,28",
                                                  dir.file("ort_fp32.i32"));
    ASSERT_EQ(ort_fp32.size(), labels.size());
    EXPECT_EQ(differences(ort_fp32, ours_fp32), 0)
        << "fp32 ONNX must predict the same class as TrainDeck on every test sample";
    // The run's test confusion matrix is the count of its predictions against the labels, cell for cell.
    std::vector<std::vector<long>> counted(10, std::vector<long>(10, 0));
    for (size_t i = 0; i < labels.size(); ++i)
        ++counted[labels[i]][ours_fp32[i]];
    EXPECT_EQ(reported_confusion, json(counted));
    ASSERT_EQ(reported_names.size(), 10u);
    EXPECT_EQ(reported_names[6], "Shirt") << "the Fashion-MNIST preset names its classes";

    const auto ort_int8 = onnxruntime_predictions(dir.file("out/model.int8.onnx"), dir.file("dump/test_inputs.f32"),
                                                  "1,28,28", dir.file("ort_int8.i32"));
    const double reported_int8 = report["test_accuracy_int8"];
    EXPECT_NEAR(accuracy(ort_int8, labels), reported_int8, 0.002) << "int8 ONNX accuracy must be what the export reported";
    EXPECT_GT(report["int8_agreement"].get<double>(), 0.98);

    // safetensors: PyTorch layouts. The first conv weight [8, 1, 3, 3] equals the checkpoint's [8, 3, 3, 1].
    uint64_t header_size = 0;
    const json tensors = safetensors_header(dir.file("out/model.safetensors"), &header_size);
    std::ifstream in(dir.file("out/model.safetensors"), std::ios::binary);
    EXPECT_EQ(tensors["layers.0.weight"]["shape"], json::array({8, 1, 3, 3}));
    EXPECT_EQ(tensors["layers.3.weight"]["shape"], json::array({12, 8, 3, 3}));
    EXPECT_TRUE(tensors["__metadata__"].contains("traindeck_spec"));
    const std::vector<float> params = find_latest_checkpoint(dir.file("ck"))->checkpoint.params;
    std::vector<float> first(size_t{8} * 9);
    in.seekg(static_cast<std::streamoff>(8 + header_size + tensors["layers.0.weight"]["data_offsets"][0].get<int64_t>()));
    in.read(reinterpret_cast<char*>(first.data()), static_cast<std::streamsize>(first.size() * 4));
    EXPECT_EQ(std::vector<float>(params.begin(), params.begin() + 72), first); // one input channel: same order
}

TEST(Export, ResnetWithBatchNormRunsInOnnxRuntimeWithTheSamePredictions) {
    if (!fashion_mnist_installed()) {
        TRAINDECK_SKIP("dataset-fashion-mnist is not installed (installer/install-deps.sh installs it)");
    }
    REQUIRE_ONNXRUNTIME();
    TempDir dir;
    // The resnet preset: batchnorm (running statistics at inference), residual adds, global average pooling; label
    // smoothing in the loss. The ONNX input is the pixel values 0-255 (the dump writes them so).
    const json spec = {{"model", "resnet"},
                       {"width", 8},
                       {"stages", 2},
                       {"label_smoothing", 0.1},
                       {"data", {{"dataset", "fashion-mnist"}, {"limit", 3000}}},
                       {"batch_size", 64},
                       {"epochs", 1},
                       {"seed", 9}};
    write_text(dir.file("spec.json"), spec.dump());
    const ProcessResult trained = run_trainer({dir.file("spec.json"), "--checkpoint-dir", dir.file("ck")});
    ASSERT_EQ(trained.exit_code, 0) << trained.err;
    double reported_test_accuracy = -1;
    for (const auto& r : trained.records("eval"))
        if (r["split"] == "test")
            reported_test_accuracy = r["accuracy"];
    const json report = run_export({dir.file("spec.json"), "--checkpoint", dir.file("ck"), "--out", dir.file("out"),
                                    "--dump-eval", dir.file("dump")});
    ASSERT_TRUE(report.is_object());
    EXPECT_DOUBLE_EQ(report["test_accuracy_fp32"].get<double>(), reported_test_accuracy);
    // Above chance (0.1): PyTorch's same network, optimiser and smoothing scores 0.33 after this one epoch.
    EXPECT_GT(reported_test_accuracy, 0.2) << "one epoch on 3,000 images should learn something";

    const auto inputs = read_values<float>(dir.file("dump/test_inputs.f32"));
    ASSERT_FALSE(inputs.empty());
    EXPECT_EQ(*std::max_element(inputs.begin(), inputs.end()), 255.0f) << "the ONNX input is raw pixel values";
    const auto labels = read_values<int32_t>(dir.file("dump/test_labels.i32"));
    const auto ours = read_values<int32_t>(dir.file("dump/test_pred_fp32.i32"));
    const auto ort = onnxruntime_predictions(dir.file("out/model.onnx"), dir.file("dump/test_inputs.f32"), "1,28,28",
                                             dir.file("ort.i32"));
    ASSERT_EQ(ort.size(), labels.size());
    // onnxruntime folds batchnorm its own way (a different float rounding): a near-tie may flip, nothing more.
    EXPECT_LE(differences(ort, ours), 3) << "fp32 ONNX must predict what TrainDeck predicts";
    EXPECT_NEAR(accuracy(ort, labels), reported_test_accuracy, 0.0005);
    // The int8 graph keeps batchnorm and the adds in float between its quantised convolutions.
    const auto ort_int8 = onnxruntime_predictions(dir.file("out/model.int8.onnx"), dir.file("dump/test_inputs.f32"),
                                                  "1,28,28", dir.file("ort_int8.i32"));
    EXPECT_NEAR(accuracy(ort_int8, labels), report["test_accuracy_int8"].get<double>(), 0.002);

    // safetensors carries batchnorm's four tensors under PyTorch's names.
    const json tensors = safetensors_header(dir.file("out/model.safetensors"));
    for (const char* name : {"layers.1.weight", "layers.1.bias", "layers.1.running_mean", "layers.1.running_var"})
        EXPECT_EQ(tensors[name]["shape"], json::array({8})) << name;
}

TEST(Export, CsvModelNormalisesInsideTheGraph) {
    REQUIRE_ONNXRUNTIME();
    TempDir dir;
    // Three blobs in four features on very different scales: the normalisation must travel with the model.
    std::mt19937 rng(3);
    std::normal_distribution<float> noise(0.0f, 1.0f);
    std::ofstream train(dir.file("train.csv")), test(dir.file("test.csv"));
    for (std::ofstream* out : {&train, &test}) {
        *out << "a,b,c,d,label\n";
        for (int i = 0; i < (out == &train ? 1500 : 600); ++i) {
            const int label = i % 3;
            *out << 1000 + 300 * label + 150 * noise(rng) << "," << 0.01 * label + 0.01 * noise(rng) << ","
                 << noise(rng) << "," << 5 * label + 3 * noise(rng) << "," << "class" << label << "\n";
        }
    }
    train.close();
    test.close();
    const json spec = {{"model", "mlp"}, {"hidden", {16}}, {"batch_size", 32}, {"epochs", 3}, {"seed", 2},
                       {"data", {{"format", "csv"}, {"train_csv", dir.file("train.csv")}, {"test_csv", dir.file("test.csv")}}}};
    write_text(dir.file("spec.json"), spec.dump());
    const ProcessResult trained = run_trainer({dir.file("spec.json"), "--checkpoint-dir", dir.file("ck")});
    ASSERT_EQ(trained.exit_code, 0) << trained.err;
    const json report = run_export({dir.file("spec.json"), "--checkpoint", dir.file("ck"), "--out", dir.file("out"),
                                    "--dump-eval", dir.file("dump"), "--no-int8"});
    ASSERT_TRUE(report.is_object());
    EXPECT_GT(report["test_accuracy_fp32"].get<double>(), 0.8);
    const auto ours = read_values<int32_t>(dir.file("dump/test_pred_fp32.i32"));
    const auto ort = onnxruntime_predictions(dir.file("out/model.onnx"), dir.file("dump/test_inputs.f32"), "4", dir.file("ort.i32"));
    EXPECT_EQ(ort, ours);
    EXPECT_FALSE(fs::exists(dir.file("out/model.int8.onnx")));
}

TEST(Export, ARegressionPredictsTheTargetInItsOwnUnitsInOnnxRuntime) {
    REQUIRE_ONNXRUNTIME();
    TempDir dir;
    // y = 1000 + 300·a − 4000·b: the graph must undo both the inputs' and the target's standardisation.
    std::mt19937 rng(5);
    std::normal_distribution<float> noise(0.0f, 1.0f);
    std::ofstream train(dir.file("train.csv")), test(dir.file("test.csv"));
    for (std::ofstream* out : {&train, &test}) {
        *out << "a,b,y\n";
        for (int i = 0; i < (out == &train ? 1500 : 500); ++i) {
            const float a = 10 * noise(rng), b = 0.01f * noise(rng);
            *out << a << "," << b << "," << 1000 + 300 * a - 4000 * b + noise(rng) << "\n";
        }
    }
    train.close();
    test.close();
    const json spec = {
        {"task", "regression"},
        {"model", "mlp"},
        {"hidden", {16}},
        {"batch_size", 32},
        {"epochs", 8},
        {"optimizer", {{"type", "adamw"}, {"lr", 0.01}}},
        {"data", {{"format", "csv"}, {"train_csv", dir.file("train.csv")}, {"test_csv", dir.file("test.csv")}}}};
    write_text(dir.file("spec.json"), spec.dump());
    const ProcessResult trained = run_trainer({dir.file("spec.json"), "--checkpoint-dir", dir.file("ck")});
    ASSERT_EQ(trained.exit_code, 0) << trained.err;
    const json report = run_export({dir.file("spec.json"), "--checkpoint", dir.file("ck"), "--out", dir.file("out"),
                                    "--dump-eval", dir.file("dump")});
    ASSERT_TRUE(report.is_object());
    EXPECT_EQ(report["metric"], "r2");
    EXPECT_GT(report["test_accuracy_fp32"].get<double>(), 0.98) << report.dump();
    EXPECT_GT(report["test_accuracy_int8"].get<double>(), 0.9) << report.dump();
    EXPECT_GT(report["int8_mean_difference"].get<double>(), 0.0);
    const auto targets = read_values<float>(dir.file("dump/test_targets.f32"));
    const auto ours = read_values<float>(dir.file("dump/test_pred_fp32.f32"));
    ASSERT_EQ(targets.size(), 500u);
    ASSERT_EQ(ours.size(), 500u);
    // Ours are in the target's units: their R² against the test file's values is the report's.
    double squared = 0, sum = 0, total = 0;
    for (size_t i = 0; i < targets.size(); ++i) {
        squared += (ours[i] - targets[i]) * double(ours[i] - targets[i]);
        sum += targets[i];
    }
    for (float t : targets)
        total += (t - sum / 500) * (t - sum / 500);
    EXPECT_NEAR(1 - squared / total, report["test_accuracy_fp32"].get<double>(), 1e-6);
    // onnxruntime on the raw test inputs gives the same numbers: fp32 to float rounding, int8 (whose uint8
    // activations round where the two sides' arithmetic differs by an ulp) within a hundredth of the targets' spread.
    const double spread = std::sqrt(total / 500);
    for (const char* model : {"out/model.onnx", "out/model.int8.onnx"}) {
        run_onnxruntime(dir.file(model), dir.file("dump/test_inputs.f32"), "2", dir.file("ort.f32"), "values");
        const auto ort = read_values<float>(dir.file("ort.f32"));
        ASSERT_EQ(ort.size(), 500u) << model;
        const auto& reference = std::string(model).find("int8") == std::string::npos
                                    ? ours
                                    : read_values<float>(dir.file("dump/test_pred_int8.f32"));
        double worst = 0;
        for (size_t i = 0; i < ort.size(); ++i)
            worst = std::max(worst, std::abs(double(ort[i]) - reference[i]) / spread);
        EXPECT_LT(worst, std::string(model).find("int8") == std::string::npos ? 1e-5 : 1e-2) << model;
    }
    std::ifstream card_file(dir.file("out/model.json"));
    const json card = json::parse(card_file);
    EXPECT_EQ(card["task"], "regression");
    EXPECT_EQ(card["output"]["name"], "prediction");
    EXPECT_FALSE(card.contains("classes"));
    EXPECT_NEAR(card["metrics"]["test_r2_fp32"].get<double>(), report["test_accuracy_fp32"].get<double>(), 1e-12);
    EXPECT_TRUE(card["metrics"].contains("val_r2_int8"));
    EXPECT_FALSE(card["metrics"].contains("int8_agreement"));
}

TEST(Export, BadCheckpointsAndSpecsAreClearErrors) {
    if (!fashion_mnist_installed()) {
        TRAINDECK_SKIP("dataset-fashion-mnist is not installed (installer/install-deps.sh installs it)");
    }
    TempDir dir;
    const json spec = {{"model", "mlp"}, {"hidden", {16}}, {"data", {{"dataset", "fashion-mnist"}, {"limit", 1000}}},
                       {"batch_size", 100}, {"epochs", 1}, {"seed", 1}};
    write_text(dir.file("spec.json"), spec.dump());
    ASSERT_EQ(run_trainer({dir.file("spec.json"), "--checkpoint-dir", dir.file("ck")}).exit_code, 0);
    ProcessResult result;
    // A spec the checkpoint was not trained with.
    json other = spec;
    other["seed"] = 2;
    write_text(dir.file("other.json"), other.dump());
    EXPECT_TRUE(run_export({dir.file("other.json"), "--checkpoint", dir.file("ck"), "--out", dir.file("out")}, &result).is_null());
    EXPECT_NE(result.err.find("different spec"), std::string::npos) << result.err;
    // No checkpoint yet.
    fs::create_directories(dir.file("empty"));
    EXPECT_TRUE(run_export({dir.file("spec.json"), "--checkpoint", dir.file("empty"), "--out", dir.file("out")}, &result).is_null());
    EXPECT_NE(result.err.find("no checkpoint"), std::string::npos) << result.err;
    // A damaged checkpoint file.
    const std::string file = find_latest_checkpoint(dir.file("ck"))->path;
    {
        std::fstream damage(file, std::ios::in | std::ios::out | std::ios::binary);
        damage.seekp(200);
        damage.write("XXXX", 4);
    }
    EXPECT_TRUE(run_export({dir.file("spec.json"), "--checkpoint", file, "--out", dir.file("out")}, &result).is_null());
    EXPECT_NE(result.exit_code, 0);
    EXPECT_FALSE(result.err.empty());
    EXPECT_FALSE(fs::exists(dir.file("out/model.onnx")));
    // Missing arguments.
    EXPECT_EQ(run_trainer({"export", dir.file("spec.json")}).exit_code, 2);
}
