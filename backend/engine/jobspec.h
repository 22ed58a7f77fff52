#pragma once
// The built-in trainer's job spec: what a user writes (JSON) and what the engine runs.
// "model":"mlp" and "model":"cnn" are presets that expand into "layers"; a spec may also list layers itself.
#include "augment.h"
#include "expected.h"

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace traindeck::engine {

// The layers the engine has. Named in one place (layer_type_names() in jobspec.cpp): the spec, the model
// description and the ONNX exporter's node names all use those names.
enum class LayerType { linear, conv2d, maxpool, avgpool, global_avgpool, batchnorm, add, relu, gelu, dropout, flatten };
const char* to_string(LayerType type);
std::optional<LayerType> layer_type_from(std::string_view name);
std::string layer_type_names(); // "conv2d, dropout, …" (sorted), for error messages
bool has_weights(LayerType type); // linear and conv2d (batchnorm has parameters, but no weight matrix to quantise)

struct LayerSpec {
    LayerType type = LayerType::linear;
    int out = 0;      // linear: features; conv2d: channels
    int kernel = 3;
    int stride = 1;
    int padding = 0;
    int size = 2;     // maxpool/avgpool window (stride defaults to size)
    float p = 0.5f;   // dropout probability
    int from = -1;    // add: the layer whose input is added to this layer's input (a residual connection)
    float momentum = 0.1f, eps = 1e-5f; // batchnorm: running statistics' update rate; variance floor
};

struct DataSpec {
    std::string format = "idx";                                       // idx | csv | image_folder
    std::string train_images, train_labels, test_images, test_labels; // idx
    std::string train_csv, test_csv, label_column;                    // csv (label defaults to the last column)
    std::string missing = "error"; // csv: a missing cell is an error, or its row is dropped, or it is filled
                                   // (numbers: the column's mean; categories: the most frequent value)
    // image_folder: <dir>/<class>/<image>.png|jpg; "image_size" N or [height, width] (0: the first image's),
    // "channels" 1 or 3 (0: from the images), "resize" pad | crop, "skip_bad_images" (default: fail, listing them).
    std::string train_dir, test_dir;
    int image_height = 0, image_width = 0, channels = 0;
    std::string resize = "pad";
    bool skip_bad_images = false;
    double val_fraction = 0.1; // image folders: stratified (this fraction of each class)
    bool normalize = true;  // standardise inputs with the training set's mean and deviation
    long limit = 0;         // use only the first N training samples (0 = all)
    AugmentSpec augment;    // images only; training samples only
};

struct OptimizerSpec {
    std::string type = "sgd"; // sgd | adamw
    float lr = 0.05f;
    float momentum = 0.9f;
    float weight_decay = 0.0f;
    float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
};

struct ScheduleSpec {
    long warmup_steps = 0;
    std::string decay = "constant"; // constant | cosine
    float min_lr_ratio = 0.0f;      // cosine ends at lr * min_lr_ratio
};

// Stop when a validation metric has not improved for `patience` epochs, and keep the best epoch's checkpoint
// (best.tdck beside the others) whichever epoch the run ends on; export can take it instead of the last one.
struct EarlyStoppingSpec {
    bool enabled = false;            // "early_stopping" present in the spec
    std::string metric = "val_loss"; // val_loss (lower is better) | val_accuracy (higher; not for a regression)
    int patience = 3;                // epochs without improvement before stopping; 0 = never stop, only keep the best
    double min_delta = 0.0;          // an improvement smaller than this does not count
    bool restore_best = true;        // test metrics and export use the best epoch's weights, not the last epoch's
};

struct JobSpec {
    std::string name;
    std::string model; // the preset ("mlp", "cnn", "resnet") the layers came from; "" when the spec listed its layers
    std::vector<LayerSpec> layers;
    DataSpec data;
    OptimizerSpec optimizer;
    ScheduleSpec schedule;
    EarlyStoppingSpec early_stopping;
    // classification (softmax cross-entropy over the classes) | regression (CSV only: the label column is a number;
    // one output, mean squared error on standardised targets; evaluations report MSE, RMSE, MAE and R²)
    std::string task = "classification";
    float label_smoothing = 0.0f; // ε of the training loss (evaluation reports the plain cross-entropy)
    // Where and how the arithmetic runs (traindeck-train's --device and --precision win over these): device auto |
    // cpu | cuda, precision fp32 | bf16 (GPU autocast). Not in the hash: a run may resume on another device.
    std::string device = "auto";
    std::string precision = "fp32";
    int batch_size = 128;
    int grad_accum = 1;
    int epochs = 1;
    uint64_t seed = 1;
    long checkpoint_every = 0; // optimiser steps; 0 = only at epoch ends
    int keep_checkpoints = 3;
    int log_every = 1;
    long max_steps = 0;        // stop (with a checkpoint) after this many optimiser steps; 0 = run all epochs
    uint64_t hash = 0;         // of everything that changes the numbers, to refuse resuming a different run
};

// Parses and validates; unknown keys, wrong types and impossible values are errors naming the key.
Expected<JobSpec> parse_job_spec(const nlohmann::json& json);
Expected<JobSpec> load_job_spec(const std::string& path);
// The spec with every default filled in, as the run's configuration (the trainer reports it in a "config" record,
// the runs table shows and compares it). Floats are written as their shortest decimal (0.05, not 0.0500000007).
nlohmann::json job_spec_to_json(const JobSpec& spec);
// One layer as the spec's "layers" write it: its type and the fields that type has.
nlohmann::json layer_spec_to_json(const LayerSpec& layer);

// The keys the presets read besides "model" (expand_preset in jobspec.cpp): a tool that changes the preset drops them.
inline constexpr std::array<const char*, 9> kPresetKeys = {"hidden", "conv",   "fc",         "kernel", "width",
                                                           "stages", "blocks", "activation", "dropout"};

// Where Debian's dataset-fashion-mnist puts the files.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

} // namespace traindeck::engine
