#pragma once
// An MLflow file store (mlruns/, as MLflow 1.x and 2.x write it) read into ImportedRuns: <experiment id>/meta.yaml
// names an experiment; each <run id>/ under it holds meta.yaml (name, status, start/end time in ms, lifecycle_stage),
// params/<key> and tags/<key> (one value a file, the text exactly as written; keys with "/" are subfolders) and
// metrics/<key> ("<timestamp ms> <value> <step>" lines; files older than MLflow 1.? have no step: step 0).
// Deleted things are reported, not imported unless asked: a run whose lifecycle_stage is deleted, and the experiments
// under .trash/ (MLflow moves a deleted experiment there; its runs' meta.yaml still say active). Folders that are
// not runs (no meta.yaml: .ipynb_checkpoints, the model registry) are named in the notes and left alone.
// meta.yaml is read by a YAML subset parser: top-level "key: value" lines, plain or quoted scalars, null.
#include "expected.h"
#include "importedrun.h"

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace traindeck::importers {

struct MlflowOptions {
    bool include_deleted = false; // also runs marked deleted and the runs of experiments in .trash/
};

struct MlflowStore {
    std::vector<ImportedRun> runs;
    std::vector<std::string> notes; // skipped deleted runs, .trash/, folders that are not runs
    int64_t deleted_runs_skipped = 0, trashed_experiments = 0, trashed_runs = 0;
};

// Top-level "key: value" pairs of a YAML mapping; nested blocks, lists and comments are skipped. Quoted scalars lose
// their quotes ('' and \" unescaped); null and ~ become "". Lines that are not "key: value" are reported in problems.
std::map<std::string, std::string> parse_simple_yaml(std::string_view text,
                                                     std::vector<std::string>* problems = nullptr);

// One metrics line: "<timestamp ms> <value> <step>" or "<timestamp ms> <value>" (step 0). False, with why, otherwise.
bool parse_mlflow_metric_line(std::string_view line, ScalarPoint& point, std::string& why);

// One run folder (mlruns/<experiment>/<run>); experiment_name names its experiment.
ImportedRun read_mlflow_run(const std::string& run_folder, const std::string& experiment_name);

// A store: the mlruns folder itself, or one experiment folder, or one run folder.
Expected<MlflowStore> read_mlflow_store(const std::string& path, const MlflowOptions& options = {});

} // namespace traindeck::importers
