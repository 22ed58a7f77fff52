#pragma once
// The training loop of the built-in trainer: data in, metrics and checkpoints out.
#include "dataset.h"
#include "jobspec.h"

#include <atomic>
#include <string>
#include <utility>
#include <vector>

namespace traindeck::engine {

class MetricsWriter;

// Exit codes of traindeck-train (the worker maps them to job states; see backend/api/METRICS.md).
enum ExitCode : int {
    kExitDone = 0,
    kExitUsage = 2,      // bad arguments or job spec
    kExitBadData = 3,    // missing, truncated or malformed data
    kExitNonFinite = 4,  // the loss became NaN or infinite
    kExitIoError = 5,    // a checkpoint could not be written
    kExitCpuFailed = 7,  // the CPU path failed: out of memory, or a oneDNN call (6 is the GPU path's, gpumodel.h)
    kExitPreempted = 75, // asked to stop (SIGTERM): checkpoint written, resume with --resume
};

struct TrainOptions {
    std::string checkpoint_dir = "checkpoints";
    bool resume = false;             // continue from the newest intact checkpoint in checkpoint_dir, if any
    const std::atomic<bool>* stop_requested = nullptr; // set from a signal handler
    std::string device = "cpu"; // cpu | cuda | auto (cuda when a GPU is present and the model runs there)
    bool bf16 = false;          // GPU autocast: bf16 gemm inputs, fp32 accumulation and master weights
    int world_size = 1, rank = 0; // data-parallel ranks (one process per GPU); only rank 0 writes metrics/checkpoints
    std::string nccl_id;        // shared by all ranks when world_size > 1
    // Pacing for tests and demos (--hold-at STEP:FILE, TRAINDECK_HOLD_AT): once step STEP is done (and its
    // checkpoint written, if one was due) the trainer reports a "held" event and waits until FILE exists. A stop
    // request still ends the wait through the checkpoint path. Tests pace jobs with it instead of guessing speeds.
    std::vector<std::pair<long, std::string>> holds;
};

// Parses "STEP:FILE[,STEP:FILE...]" (the --hold-at / TRAINDECK_HOLD_AT syntax); false with a message when malformed.
bool parse_holds(const std::string& text, std::vector<std::pair<long, std::string>>& holds, std::string& error);

struct TrainResult {
    int exit_code = kExitDone;
    std::string message; // one line for stderr when exit_code != 0
};

// The data a spec trains on, exactly as train() sees it: the same validation split (from the seed) and, when the
// spec normalises, the training set's statistics applied to all three sets (kept here for exporters).
struct TrainingData {
    Dataset train, val, test;
    Normalization normalization; // empty when the spec does not normalise
    TargetScale target_scale;    // a regression's, from the training split (also when the inputs are not normalised)
    nlohmann::json report;       // image folders: what was read, left out and cached (the trainer's "data" event)
};
// regression: the CSV's label column is the number to predict (JobSpec::task "regression").
Expected<TrainingData> load_training_data(const DataSpec& spec, uint64_t seed, bool regression = false);

// The class names a run knows, in index order: an image folder's folders, a CSV's string labels, Fashion-MNIST's
// classes for its files in Debian's folder; empty when unknown (integer labels).
std::vector<std::string> known_class_names(const DataSpec& spec, const Dataset& train);

TrainResult train(const JobSpec& spec, const TrainOptions& options, MetricsWriter& metrics);

} // namespace traindeck::engine
