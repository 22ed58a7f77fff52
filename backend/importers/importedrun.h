#pragma once
// The neutral form every importer reads a run into (TensorBoard event files, an MLflow file store, CSV/JSONL metric
// files, W&B offline runs) before anything reaches the catalog (model/runimport.h writes it there). Rules it keeps:
// every point is here as written, in the order written (a step written twice is here twice: which one a view shows
// is the catalog's decision, not the reader's); where the run came from is named (path, format, tool, files); and
// damage is never silent: each truncated or corrupt piece is a Damage with its file and byte offset (or line), and
// the reader went on past it where the format allows. Readers only read: nothing is written into a source folder.
// Plain C++, no Qt.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace traindeck::importers {

struct ScalarPoint {
    int64_t step = 0;
    double value = 0;
    double wall_time = 0; // Unix seconds; 0 when the source does not say
};

// A histogram as TensorBoard keeps one: bucket i counts the values in (bucket_limit[i-1], bucket_limit[i]].
struct HistogramPoint {
    int64_t step = 0;
    double wall_time = 0;
    double min = 0, max = 0, num = 0, sum = 0, sum_squares = 0;
    std::vector<double> bucket_limit, bucket_count;
};

// Images are kept as their place and size only: the pixels stay in the source file, read again when shown
// (read_tensorboard_image, which checks the record's CRC and that it still holds this image).
struct ImagePoint {
    int64_t step = 0;
    double wall_time = 0;
    int64_t width = 0, height = 0;
    uint64_t encoded_bytes = 0;
    size_t file = 0;            // index into ImportedRun::files
    uint64_t record_offset = 0; // where the TFRecord holding it starts in that file
    int item = 0;               // which of the tag's images in that event (a TF2 images tensor holds several)
};

// A piece of a source that could not be read: its file, the byte offset where it starts (text formats also name the
// line in `what`), and what was wrong with it and what became of it.
struct Damage {
    std::string file;
    uint64_t offset = 0;
    std::string what;
    // The file ends inside a record or line: cut short, or a writer is still appending (a live tail: FollowedDamage).
    bool at_end = false;
};

// What a run read on from where an earlier read of it stopped (a followed logdir: sourcefollower.h) had of a series
// before the points it holds now: how many, and the last one (its step, and its value: a scalar's value, a
// histogram's num).
struct PointsBefore {
    int64_t points = 0;
    int64_t last_step = 0;
    double last_value = 0;
};

struct ImportedRun {
    std::string name;       // as the source names the run (a folder, an MLflow run name, a W&B display name)
    std::string source;     // the path that is the run: a TensorBoard run folder, an MLflow run folder, a file
    std::string format;     // "tensorboard", "mlflow", "csv", "jsonl", "wandb"
    std::string tool;       // the writer when the source says (source_metadata.writer, "mlflow", "wandb"), else ""
    std::string source_id;  // the source's own id of the run when it has one (MLflow run id, W&B run id)
    std::string experiment; // what the source groups it under (MLflow experiment, W&B project), else ""
    bool deleted_in_source = false;                    // the source had deleted it (imported only when asked for)
    std::vector<std::string> files;                    // the files read, in the order read
    nlohmann::json config = nlohmann::json::object();  // hyperparameters (hparams, MLflow params, W&B config)
    std::map<std::string, std::string> tags;           // the source's tags, key -> value (MLflow tags)
    std::vector<std::string> labels;                   // the source's plain labels (W&B tags)
    std::string note;                                  // the source's free text about the run (W&B notes)
    nlohmann::json summary = nlohmann::json::object(); // the source's own final values (W&B summary)
    std::string state;                // the catalog's words: "succeeded", "failed", "cancelled", "running"; "" unknown
    std::string state_reason;         // what the source said, when it was mapped
    double started = 0, finished = 0; // Unix seconds; 0 when unknown

    std::map<std::string, std::vector<ScalarPoint>, std::less<>> scalars; // by tag, each in the order written
    std::map<std::string, std::vector<HistogramPoint>> histograms;
    std::map<std::string, std::vector<ImagePoint>> images;
    // A run read on (sourcefollower.h): the scalars and histograms read before, by ("scalar" or "histogram", name);
    // their vectors above hold only the points after those. Empty for a run read whole. Images are always whole.
    std::map<std::pair<std::string, std::string>, PointsBefore> points_before;
    std::map<std::string, int64_t> other_records; // what was read and not kept, counted ("graph_def", "plugin:text")
    int64_t records = 0;                          // records (events, lines, W&B records) read whole

    std::vector<Damage> damage;
    std::vector<std::string> notes; // what else a user should know (skipped deleted runs, a run still running)

    int64_t scalar_points() const {
        int64_t n = 0;
        for (const auto& [tag, points] : scalars)
            n += static_cast<int64_t>(points.size());
        return n;
    }
};

} // namespace traindeck::importers
