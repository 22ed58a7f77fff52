#pragma once
// The one door the console and the CLI import through: what lies at a path, read by the importer its content names.
//   a file: events.out.tfevents.* (TensorBoard), *.wandb (W&B offline), .csv/.tsv/.txt/.jsonl/.ndjson/.json (metrics)
//   a folder, in this order: an MLflow store (the mlruns folder, one experiment or one run, or a folder holding
//     mlruns/), W&B offline runs (any run-*.wandb under it), a TensorBoard logdir (any event file under it), else the
//     metric files right in it (one run each).
// A tree that holds several kinds (W&B's sync_tensorboard leaves event files beside the .wandb) is read as the first
// kind and the others are named in the notes, with the --format that reads them. Plain C++, no Qt.
#include "expected.h"
#include "importedrun.h"

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace traindeck::importers {

struct ReadRunsOptions {
    std::string format;           // "" (detect), "tensorboard", "mlflow", "wandb", "csv", "jsonl"
    bool include_deleted = false; // MLflow: also runs marked deleted and experiments in .trash/
};

struct ReadRuns {
    std::string format; // what was read: "tensorboard", "mlflow", "wandb", "metrics"
    std::vector<ImportedRun> runs;
    std::vector<std::string> notes; // skipped deleted runs, other kinds of runs in the tree, ...
};

// The formats --format accepts, for messages.
std::string_view read_formats();

// What the path holds ("tensorboard", "mlflow", "wandb", "metrics"), or an error naming what was looked for.
Expected<std::string> detect_format(const std::string& path);

Expected<ReadRuns> read_runs(const std::string& path, const ReadRunsOptions& options = {});

// A cheap fingerprint of what lies at path: every file's name, size and modification time (a stat each, nothing
// read). It changes when a file grows, appears, goes or is rewritten: a source still being written (a live logdir)
// is read again when it does. 0 when the path is not there.
uint64_t source_fingerprint(const std::string& path);

// read_runs a run at a time, for a caller that writes each run while the next is read: on_run gets each run as soon
// as it is read (a TensorBoard logdir's runs one after the other, so the logdir is never in memory whole; the other
// formats are read whole first) and returns false to stop there (a cancel). The result has the format and the
// notes, and no runs.
Expected<ReadRuns> read_runs_each(const std::string& path, const ReadRunsOptions& options,
                                  const std::function<bool(ImportedRun&& run)>& on_run);

} // namespace traindeck::importers
