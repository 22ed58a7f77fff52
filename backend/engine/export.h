#pragma once
// Exports a trained built-in model for inference elsewhere:
//   <name>.onnx        fp32 ONNX (opset 13), NCHW input "input" of raw samples (images: pixel values 0–255, which
//                      the graph divides by 255 as the readers do; CSV: the feature columns), the training
//                      normalisation inside the graph, output "logits" [N, classes]
//   <name>.int8.onnx   the same graph with post-training static quantisation in QDQ form: int8 weights per output
//                      channel (symmetric), uint8 activations per tensor (asymmetric) at the input of every
//                      convolution and linear layer, ranges calibrated on a sample of the training data
//   <name>.safetensors the fp32 weights in PyTorch's layouts (conv [O, C, K, K], linear [O, I] with NCHW flatten order,
//                      batchnorm weight, bias, running_mean, running_var)
// Both ONNX files pass onnx::checker before they are written. The report carries the accuracy of the fp32 and
// int8 models on the validation and test sets, computed by the trainer's own forward pass (network.h), fed
// fake-quantised inputs and dequantised weights for int8 (quantisation.h). The pieces: quantisation.h, onnxwriter.h,
// safetensors.h, portablelayout.h; export.cpp only orchestrates them.
#include "expected.h"
#include "jobspec.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace traindeck::engine {

struct ExportOptions {
    std::string out_dir;
    std::string name = "model";
    bool onnx = true, int8 = true, safetensors = true;
    int calibration_samples = 1000;
    double max_accuracy_drop = 0.01; // warn when int8 loses more validation accuracy than this (fraction)
    // Restore best: a checkpoint folder with best.tdck, of a spec whose early stopping restores the best epoch,
    // exports that checkpoint rather than the newest (false: always the newest).
    bool prefer_best = true;
    // Tests: also write <dump_dir>/{test_inputs.f32, test_labels.i32, test_pred_fp32.i32, test_pred_int8.i32,
    // val_inputs.f32, val_labels.i32} (raw NCHW inputs, as the ONNX model takes them); a regression also
    // test_targets.f32, test_pred_fp32.f32 and test_pred_int8.f32 (predictions in the target's units).
    std::string dump_dir;
    // Who made the model (the console's run id and name, its backend, dataset version, code snapshot, commit): written
    // into every file's metadata as traindeck_provenance, beside traindeck_checkpoint (the checkpoint's file and
    // step), so the file itself answers which run, data and code made it (backend/importers/modelmeta.h reads it).
    nlohmann::json provenance;
};

struct ExportReport {
    struct Artifact {
        std::string kind, path;
        int64_t bytes = 0;
    };
    std::vector<Artifact> artifacts;
    long step = 0;
    double val_accuracy_fp32 = 0, val_accuracy_int8 = 0;
    double test_accuracy_fp32 = 0, test_accuracy_int8 = 0;
    long val_samples = 0, test_samples = 0, calibration_samples = 0;
    // What the *_accuracy_* fields hold: "accuracy", or a regression's "r2" (R² of the predictions in the target's
    // units); the model card names its metrics after it (val_r2_fp32, …).
    std::string metric = "accuracy";
    double int8_agreement = 0;       // share of test samples where int8 and fp32 predict the same class
    double int8_mean_difference = 0; // a regression: mean |int8 − fp32| prediction over the test set
    bool accuracy_warning = false;
    std::string warning;
    nlohmann::json to_json() const;
};

// spec: the job's traindeck-train spec; checkpoint: a checkpoint file, or a folder (its newest intact one, or its
// best.tdck when early stopping restores the best epoch and prefer_best is set).
Expected<ExportReport> export_model(const nlohmann::json& spec, const std::string& checkpoint, const ExportOptions& options);

} // namespace traindeck::engine
