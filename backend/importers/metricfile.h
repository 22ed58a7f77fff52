#pragma once
// Metric tables as plain files, read into one ImportedRun each:
//   CSV/TSV: a header row naming the columns, one row a step. The step column is "step" (or "global_step", "_step",
//     "iter", "iteration", "epoch", in that order of preference; none: the row number from 0), the time column "time"
//     (or "timestamp", "wall_time", "_timestamp": Unix seconds, milliseconds when over 1e11); every other column is a
//     metric. An empty cell is no point; a cell that is not a number is damage (reported, the row's other cells kept).
//     A tab in the header and no comma: tab-separated (CatBoost's learn_error.tsv).
//   JSONL: one JSON object a line, "step" and optional "time" as above, every number a metric (nested objects flattened
//     with "/": {"train": {"loss": 1}} is train/loss); strings and arrays are not points. A line that is not a JSON
//     object is damage, the lines after it are still read. Lines of TrainDeck's own metrics protocol ("@traindeck "
//     prefix, "type": "config"/"metric") are read as such: a config record becomes the run's config.
// A last line without its newline is read when it parses whole (hand-written files often end so).
#include "expected.h"
#include "importedrun.h"

#include <string>
#include <string_view>

namespace traindeck::importers {

ImportedRun parse_metric_csv(std::string_view text, const std::string& file);
ImportedRun parse_metric_jsonl(std::string_view text, const std::string& file);

// By the file's extension: .csv, .tsv, .txt (CSV/TSV by the header), .jsonl, .ndjson, .json (JSONL).
Expected<ImportedRun> read_metric_file(const std::string& path);

} // namespace traindeck::importers
