// export_model (export.h), the orchestration only: the checkpoint and the data, then the network's own forward pass
// (network.h) scores the fp32 model, observes the calibration ranges and, fed fake-quantised inputs, scores the int8
// model; quantisation.h chooses the scales, onnxwriter.h and safetensors.h make the files' bytes, and every file is
// written whole or not at all (atomicfile.h).
#include "export.h"

#include "atomicfile.h"

#include "checkpoint.h"
#include "network.h"
#include "onnxwriter.h"
#include "portablelayout.h"
#include "quantisation.h"
#include "safetensors.h"
#include "trainer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace traindeck::engine {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct Scored {
    double accuracy = 0; // a regression: R² (1 − SSE / the split's total sum of squares)
    std::vector<int32_t> predictions;
    std::vector<float> values; // a regression's predictions, in the target's units
};

// The network's predictions over data in batches of net.max_batch(), with hook (if any) shown every weighted
// layer's input. A regression (target set) is scored by R², its outputs turned back into the target's units.
Scored score(Network& net, const Dataset& data, const WeightedInputHook& hook,
             const std::optional<TargetScale>& target = std::nullopt) {
    Scored result;
    const int classes = net.classes();
    std::vector<float> buffer;
    long correct = 0;
    for (size_t start = 0; start < data.size(); start += net.max_batch()) {
        const int batch = static_cast<int>(std::min<size_t>(net.max_batch(), data.size() - start));
        const float* logits = net.forward(data.batch(start, batch, buffer), batch, hook);
        for (int b = 0; target && b < batch; ++b)
            result.values.push_back(logits[b] * target->scale + target->mean);
        for (int b = 0; !target && b < batch; ++b) {
            const float* row = logits + static_cast<size_t>(b) * classes;
            const int predicted = static_cast<int>(std::max_element(row, row + classes) - row);
            result.predictions.push_back(predicted);
            correct += predicted == data.y[start + b];
        }
    }
    result.accuracy = data.size() ? static_cast<double>(correct) / data.size() : 0.0;
    if (target)
        result.accuracy = regression_errors(data.target, result.values).r2;
    return result;
}

// Raw NHWC samples → NCHW, the layout of the ONNX input; images as the pixel values 0–255 it takes.
std::vector<float> to_nchw(const Dataset& data) {
    std::vector<float> buffer;
    std::vector<float> out =
        engine::to_nchw(data.batch(0, data.size(), buffer), data.size(), data.height, data.width, data.channels);
    if (data.is_image())
        for (float& value : out)
            value = std::round(value * 255.0f);
    return out;
}

template <typename T>
void dump(const std::string& path, const std::vector<T>& values) {
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(values.data()), sizeof(T) * values.size());
}

} // namespace

json ExportReport::to_json() const {
    json files = json::array();
    for (const Artifact& a : artifacts)
        files.push_back({{"kind", a.kind}, {"path", a.path}, {"bytes", a.bytes}});
    json out = {{"artifacts", files},
                {"step", step},
                {"val_accuracy_fp32", val_accuracy_fp32},
                {"val_accuracy_int8", val_accuracy_int8},
                {"test_accuracy_fp32", test_accuracy_fp32},
                {"test_accuracy_int8", test_accuracy_int8},
                {"val_samples", val_samples},
                {"test_samples", test_samples},
                {"calibration_samples", calibration_samples},
                {"metric", metric},
                {"accuracy_warning", accuracy_warning},
                {"warning", warning}};
    // A regression has no classes to agree on: its int8 model's mean difference instead.
    if (metric == "r2")
        out["int8_mean_difference"] = int8_mean_difference;
    else
        out["int8_agreement"] = int8_agreement;
    return out;
}

Expected<ExportReport> export_model(const json& spec_json, const std::string& checkpoint, const ExportOptions& options) {
    auto spec = parse_job_spec(spec_json);
    if (!spec)
        return Error{"spec: " + spec.error()};
    std::string checkpoint_path = checkpoint;
    Checkpoint saved;
    const std::string best = best_checkpoint_path(checkpoint);
    const bool use_best = options.prefer_best && spec->early_stopping.enabled && spec->early_stopping.restore_best &&
                          fs::is_directory(checkpoint) && fs::exists(best);
    if (use_best) {
        auto read = read_checkpoint(best);
        if (!read)
            return Error{read.error() + " (export with --latest to take the newest checkpoint instead)"};
        checkpoint_path = best;
        saved = std::move(*read);
    } else if (fs::is_directory(checkpoint)) {
        auto found = find_latest_checkpoint(checkpoint);
        if (!found)
            return Error{found.error()};
        if (found->path.empty())
            return Error{checkpoint + ": holds no checkpoint to export (the job has not written one yet)"};
        checkpoint_path = found->path;
        saved = std::move(found->checkpoint);
    } else {
        auto read = read_checkpoint(checkpoint);
        if (!read)
            return Error{read.error()};
        saved = std::move(*read);
    }
    if (saved.state.spec_hash != spec->hash)
        return Error{checkpoint_path + " was written by a run of a different spec; export with the job's own spec"};

    // Raw data (the ONNX model's input) and the normalised copies our inference and the trainer see.
    DataSpec raw_spec = spec->data;
    raw_spec.normalize = false;
    const bool regression = spec->task == "regression";
    auto loaded = load_training_data(raw_spec, spec->seed, regression);
    if (!loaded)
        return Error{loaded.error()};
    TrainingData& raw = *loaded;
    ModelInput input;
    input.shape = {raw.train.height, raw.train.width, raw.train.channels};
    input.image = raw.train.height > 1;
    TrainingData normalized = raw;
    std::optional<TargetScale> target; // a regression's standardisation, as the trainer's (whatever "normalize" says)
    if (regression)
        target = raw.target_scale;
    input.regression = target;
    if (spec->data.normalize) {
        input.normalization = fit_normalization(raw.train);
        apply_normalization(normalized.train, input.normalization);
        apply_normalization(normalized.val, input.normalization);
        apply_normalization(normalized.test, input.normalization);
    }
    const int batch = 256;
    auto built = Network::build(spec->layers, input.shape, raw.train.classes, batch);
    if (!built)
        return Error{"model: " + built.error()};
    Network& net = *built;
    if (saved.params.size() != net.params().size())
        return Error{checkpoint_path + " holds " + std::to_string(saved.params.size()) + " parameters; the spec's model has " +
                     std::to_string(net.params().size())};
    const std::vector<float> params = std::move(saved.params);
    const int classes = net.classes();

    ExportReport report;
    report.step = saved.state.step;
    report.val_samples = static_cast<long>(normalized.val.size());
    report.test_samples = static_cast<long>(normalized.test.size());
    net.params() = params;
    const Scored val_fp32 = score(net, normalized.val, {}, target);
    const Scored test_fp32 = score(net, normalized.test, {}, target);
    report.val_accuracy_fp32 = val_fp32.accuracy;
    report.test_accuracy_fp32 = test_fp32.accuracy;

    // Calibration: the range of every weighted layer's input over the first samples of the training set.
    std::vector<ActivationRange> ranges(net.layers().size());
    const WeightedInputHook observe = [&](size_t layer, const float* input, size_t count) {
        ranges[layer].widen(input, count);
        return input;
    };
    const size_t calibration = std::min<size_t>(std::max(1, options.calibration_samples), normalized.train.size());
    std::vector<float> calibration_buffer;
    for (size_t start = 0; start < calibration; start += batch) {
        const int n = static_cast<int>(std::min<size_t>(batch, calibration - start));
        net.forward(normalized.train.batch(start, n, calibration_buffer), n, observe);
    }
    report.calibration_samples = static_cast<long>(calibration);

    // The int8 model, simulated: dequantised weights, and every weighted layer fed its input fake-quantised.
    const Int8Simulation int8 = simulate_int8(net, params, ranges);
    size_t widest_input = 0;
    for (const Layer& layer : net.layers())
        if (layer.has_weights())
            widest_input = std::max(widest_input, layer.in.size());
    std::vector<float> quantized_input(widest_input * batch);
    const WeightedInputHook quantize = [&](size_t layer, const float* input, size_t count) {
        fake_quantize(input, quantized_input.data(), count, int8.inputs[layer]);
        return static_cast<const float*>(quantized_input.data());
    };
    net.params() = int8.params;
    const Scored val_int8 = score(net, normalized.val, quantize, target);
    const Scored test_int8 = score(net, normalized.test, quantize, target);
    report.val_accuracy_int8 = val_int8.accuracy;
    report.test_accuracy_int8 = test_int8.accuracy;
    long agree = 0;
    for (size_t i = 0; i < test_int8.predictions.size(); ++i)
        agree += test_int8.predictions[i] == test_fp32.predictions[i];
    report.int8_agreement = test_int8.predictions.empty() ? 1.0 : static_cast<double>(agree) / test_int8.predictions.size();
    if (regression) {
        report.metric = "r2";
        double difference = 0.0;
        for (size_t i = 0; i < test_int8.values.size(); ++i)
            difference += std::abs(static_cast<double>(test_int8.values[i]) - test_fp32.values[i]);
        report.int8_agreement = 0.0;
        report.int8_mean_difference = test_int8.values.empty() ? 0.0 : difference / test_int8.values.size();
    }
    const double drop = report.val_accuracy_fp32 - report.val_accuracy_int8;
    if (options.int8 && drop > options.max_accuracy_drop) {
        report.accuracy_warning = true;
        char text[200];
        if (regression)
            std::snprintf(text, sizeof(text),
                          "int8 loses %.4f of validation R² (%.4f → %.4f), more than the %.4f allowed", drop,
                          report.val_accuracy_fp32, report.val_accuracy_int8, options.max_accuracy_drop);
        else
            std::snprintf(
                text, sizeof(text),
                "int8 loses %.2f points of validation accuracy (%.2f %% → %.2f %%), more than the %.2f allowed",
                100 * drop, 100 * report.val_accuracy_fp32, 100 * report.val_accuracy_int8,
                100 * options.max_accuracy_drop);
        report.warning = text;
    }

    std::error_code ec;
    fs::create_directories(options.out_dir, ec);
    if (ec)
        return Error{"cannot create " + options.out_dir + ": " + ec.message()};
    json metadata = {{"traindeck_spec", spec_json.dump()},
                     {"traindeck_step", std::to_string(report.step)},
                     {"input_layout", input.image ? "NCHW, pixels 0-255" : "N x features"},
                     {"task", spec->task},
                     {"classes", std::to_string(classes)}};
    if (target) { // the safetensors file's output is standardised: this undoes it (ONNX's graph does it itself)
        metadata["target_mean"] = json(target->mean).dump();
        metadata["target_scale"] = json(target->scale).dump();
    }
    const std::vector<std::string> class_names = known_class_names(spec->data, raw.train);
    if (!class_names.empty())
        metadata["class_names"] = json(class_names).dump(-1, ' ', false, json::error_handler_t::replace);
    metadata["traindeck_checkpoint"] =
        json{{"file", fs::path(checkpoint_path).filename().string()}, {"step", report.step}}.dump();
    if (options.provenance.is_object() && !options.provenance.empty())
        metadata["traindeck_provenance"] = options.provenance.dump();
    std::string error;
    auto write = [&](const std::string& kind, const std::string& file, const std::string& bytes) {
        const std::string path = (fs::path(options.out_dir) / file).string();
        if (!write_file_atomically(path, bytes, 0644, error))
            return false;
        report.artifacts.push_back({kind, path, static_cast<int64_t>(bytes.size())});
        return true;
    };
    if (options.onnx) {
        auto bytes = build_onnx(net, params, input, nullptr, metadata);
        if (!bytes)
            return Error{bytes.error()};
        if (!write("onnx", options.name + ".onnx", *bytes))
            return Error{error};
    }
    if (options.int8) {
        json int8_metadata = metadata;
        int8_metadata["quantization"] =
            "QDQ: int8 weights per output channel (symmetric, 7 bits: +-63), uint8 activations per tensor, " +
            std::to_string(calibration) + " calibration samples";
        auto bytes = build_onnx(net, params, input, &int8.inputs, int8_metadata);
        if (!bytes)
            return Error{bytes.error()};
        if (!write("onnx-int8", options.name + ".int8.onnx", *bytes))
            return Error{error};
    }
    if (options.safetensors &&
        !write("safetensors", options.name + ".safetensors", network_safetensors(net, params, input.shape, metadata)))
        return Error{error};

    // The model card: what a user's own code needs to run the model and what it scored, beside the files.
    json files = json::object();
    for (const auto& artifact : report.artifacts)
        files[artifact.kind] = fs::path(artifact.path).filename().string();
    json card = {{"format", "traindeck-model-card"},
                 {"version", 1},
                 {"name", spec->name.empty() ? options.name : spec->name},
                 {"classes", class_names.empty() ? json(classes) : json(class_names)},
                 {"input",
                  {{"name", "input"},
                   {"layout", input.image ? "NCHW" : "NC"},
                   {"shape", input.image ? json::array({1, input.shape.channels, input.shape.height, input.shape.width})
                                         : json::array({1, raw.train.features()})},
                   {"values", input.image ? "pixel values 0-255 as floats (the graph divides by 255)"
                                          : "the table's feature columns"},
                   {"normalization", spec->data.normalize ? "inside the graph" : "none"}}},
                 {"task", spec->task},
                 {"output", {{"name", "logits"}, {"shape", json::array({1, classes})}}},
                 {"files", files},
                 {"metrics",
                  {{"val_" + report.metric + "_fp32", report.val_accuracy_fp32},
                   {"test_" + report.metric + "_fp32", report.test_accuracy_fp32},
                   {"val_samples", report.val_samples},
                   {"test_samples", report.test_samples}}},
                 {"checkpoint", {{"file", fs::path(checkpoint_path).filename().string()}, {"step", report.step}}}};
    if (!raw.train.feature_names.empty()) { // a table: each input value's column, one-hot ones as column=value
        card["input"]["features"] = raw.train.feature_names;
        card["input"]["values"] = "the table's feature columns in this order; a categorical column one-hot (1 for "
                                  "its value, 0 for the others; all 0 for a value training never saw)";
    }
    if (regression) {
        card.erase("classes");
        card["output"] = {
            {"name", "prediction"},
            {"shape", json::array({1, 1})},
            {"target_mean", target->mean},
            {"target_scale", target->scale},
            {"values", "the predicted \"" +
                           (spec->data.label_column.empty() ? std::string("last column") : spec->data.label_column) +
                           "\" in its own units (the graph undoes the training's standardisation)"}};
    }
    if (input.image) {
        card["input"]["channels"] = input.shape.channels == 3 ? "RGB" : "grayscale";
        if (spec->data.format == "image_folder")
            card["input"]["resize"] = spec->data.resize == "crop"
                                          ? "centre crop to the size, aspect kept"
                                          : "fit inside the size, aspect kept, padded with black";
    }
    if (options.int8) {
        card["metrics"].update({{"val_" + report.metric + "_int8", report.val_accuracy_int8},
                                {"test_" + report.metric + "_int8", report.test_accuracy_int8}});
        if (regression)
            card["metrics"]["int8_mean_difference"] = report.int8_mean_difference;
        else
            card["metrics"]["int8_agreement"] = report.int8_agreement;
    }
    if (options.provenance.is_object() && !options.provenance.empty())
        card["provenance"] = options.provenance;
    if (!write("model-card", options.name + ".json", card.dump(2, ' ', false, json::error_handler_t::replace) + "\n"))
        return Error{error};

    if (!options.dump_dir.empty()) {
        fs::create_directories(options.dump_dir, ec);
        dump(options.dump_dir + "/test_inputs.f32", to_nchw(raw.test));
        dump(options.dump_dir + "/test_labels.i32", raw.test.y);
        dump(options.dump_dir + "/test_pred_fp32.i32", test_fp32.predictions);
        dump(options.dump_dir + "/test_pred_int8.i32", test_int8.predictions);
        if (regression) {
            dump(options.dump_dir + "/test_targets.f32", raw.test.target);
            dump(options.dump_dir + "/test_pred_fp32.f32", test_fp32.values);
            dump(options.dump_dir + "/test_pred_int8.f32", test_int8.values);
        }
        dump(options.dump_dir + "/val_inputs.f32", to_nchw(raw.val));
        dump(options.dump_dir + "/val_labels.i32", raw.val.y);
    }
    return report;
}

} // namespace traindeck::engine
