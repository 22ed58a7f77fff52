#include "readruns.h"

#include "metricfile.h"
#include "mlflow.h"
#include "sourcefile.h"
#include "tfevents.h"
#include "wandb.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace traindeck::importers {

namespace fs = std::filesystem;

namespace {

bool has_extension(const fs::path& path, std::initializer_list<const char*> extensions) {
    std::string extension = path.extension().string();
    std::transform(extension.begin(), extension.end(), extension.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return std::any_of(extensions.begin(), extensions.end(), [&](const char* e) { return extension == e; });
}
bool is_metric_file(const fs::path& path) {
    return has_extension(path, {".csv", ".tsv", ".txt", ".jsonl", ".ndjson", ".json"});
}
bool is_wandb_file(const fs::path& path) { return path.extension() == ".wandb"; }

// An MLflow meta.yaml: an experiment's names its artifact_location, a run's its run_uuid (both have experiment_id).
bool is_mlflow_meta(const fs::path& meta) {
    std::error_code ec;
    if (!fs::is_regular_file(meta, ec))
        return false;
    const auto text = read_source_file(meta.string());
    if (!text)
        return false;
    const auto fields = parse_simple_yaml(*text);
    return fields.count("experiment_id") && (fields.count("artifact_location") || fields.count("run_uuid"));
}

// The folder an MLflow store is read from, or "" when path is none: the mlruns folder (its children are experiments),
// an experiment or a run folder, or a folder holding mlruns/.
std::string mlflow_root(const fs::path& path) {
    std::error_code ec;
    if (is_mlflow_meta(path / "meta.yaml"))
        return path.string();
    if (fs::is_directory(path / "mlruns", ec) && !mlflow_root(path / "mlruns").empty())
        return (path / "mlruns").string();
    for (fs::directory_iterator it(path, fs::directory_options::skip_permission_denied, ec), end; !ec && it != end;
         it.increment(ec)) {
        std::error_code type_error;
        if (it->is_directory(type_error) && is_mlflow_meta(it->path() / "meta.yaml"))
            return path.string();
    }
    return {};
}

struct TreeKinds {
    int64_t event_files = 0, wandb_files = 0;
};

Expected<TreeKinds> kinds_in(const fs::path& path) {
    TreeKinds kinds;
    std::error_code ec;
    fs::recursive_directory_iterator it(path, fs::directory_options::skip_permission_denied, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
        std::error_code type_error;
        if (!it->is_regular_file(type_error))
            continue;
        const fs::path& file = it->path();
        if (is_event_file_name(file.filename().string()))
            ++kinds.event_files;
        else if (is_wandb_file(file))
            ++kinds.wandb_files;
    }
    if (ec)
        return Error{"listing " + path.string() + " failed: " + ec.message()};
    return kinds;
}

std::vector<std::string> metric_files_in(const fs::path& path) {
    std::vector<std::string> files;
    std::error_code ec;
    for (fs::directory_iterator it(path, fs::directory_options::skip_permission_denied, ec), end; !ec && it != end;
         it.increment(ec)) {
        std::error_code type_error;
        if (it->is_regular_file(type_error) && is_metric_file(it->path()))
            files.push_back(it->path().string());
    }
    std::sort(files.begin(), files.end());
    return files;
}

} // namespace

std::string_view read_formats() { return "tensorboard, mlflow, wandb, csv or jsonl"; }

Expected<std::string> detect_format(const std::string& path) {
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    if (ec || !fs::exists(status))
        return Error{path + ": no such file or folder"};
    const fs::path p(path);
    if (fs::is_regular_file(status)) {
        if (is_event_file_name(p.filename().string()))
            return std::string("tensorboard");
        if (is_wandb_file(p))
            return std::string("wandb");
        if (is_metric_file(p))
            return std::string("metrics");
        return Error{path + " is not a file TrainDeck imports: an events.out.tfevents.* file, a .wandb file or a "
                            "metrics table (.csv, .tsv, .txt, .jsonl, .ndjson, .json)"};
    }
    if (!fs::is_directory(status))
        return Error{path + " is neither a file nor a folder"};
    if (!mlflow_root(p).empty())
        return std::string("mlflow");
    const auto kinds = kinds_in(p);
    if (!kinds)
        return Error{kinds.error()};
    if (kinds->wandb_files > 0)
        return std::string("wandb");
    if (kinds->event_files > 0)
        return std::string("tensorboard");
    if (!metric_files_in(p).empty())
        return std::string("metrics");
    return Error{path + " holds nothing TrainDeck imports: no MLflow store (meta.yaml), no W&B run (*.wandb), no "
                        "TensorBoard event file (events.out.tfevents.*) and no metrics table (.csv, .jsonl) in it"};
}

namespace {

// The format to read path as: the one asked for (csv and jsonl are "metrics"), or what the path holds.
Expected<std::string> format_to_read(const std::string& path, const ReadRunsOptions& options) {
    std::string format = options.format;
    if (format == "csv" || format == "jsonl")
        format = "metrics";
    if (format.empty())
        return detect_format(path);
    if (format != "tensorboard" && format != "mlflow" && format != "wandb" && format != "metrics")
        return Error{"unknown format \"" + options.format + "\": " + std::string(read_formats())};
    return format;
}

} // namespace

Expected<ReadRuns> read_runs_each(const std::string& path, const ReadRunsOptions& options,
                                  const std::function<bool(ImportedRun&&)>& on_run) {
    auto format = format_to_read(path, options);
    if (!format)
        return Error{format.error()};
    if (*format != "tensorboard") {
        auto read = read_runs(path, {*format, options.include_deleted});
        if (!read)
            return read;
        for (ImportedRun& run : read->runs)
            if (!on_run(std::move(run)))
                break;
        read->runs.clear();
        return read;
    }
    auto listed = list_tensorboard_runs(path);
    if (!listed)
        return Error{listed.error()};
    SourceBuffer buffer;
    for (const TensorBoardRunFiles& files : *listed)
        if (!on_run(read_tensorboard_run(files, buffer)))
            break;
    ReadRuns read;
    read.format = *format;
    return read;
}

Expected<ReadRuns> read_runs(const std::string& path, const ReadRunsOptions& options) {
    auto detected = format_to_read(path, options);
    if (!detected)
        return Error{detected.error()};
    const std::string format = *detected;
    ReadRuns read;
    read.format = format;
    std::error_code ec;
    const bool folder = fs::is_directory(path, ec);
    if (format == "tensorboard") {
        auto runs = read_tensorboard_logdir(path);
        if (!runs)
            return Error{runs.error()};
        read.runs = std::move(*runs);
    } else if (format == "wandb") {
        auto runs = read_wandb(path);
        if (!runs)
            return Error{runs.error()};
        read.runs = std::move(*runs);
    } else if (format == "mlflow") {
        const std::string root = folder ? mlflow_root(path) : std::string();
        if (root.empty())
            return Error{path + " is no MLflow store: no meta.yaml of an experiment or a run in it or under mlruns/"};
        auto store = read_mlflow_store(root, {.include_deleted = options.include_deleted});
        if (!store)
            return Error{store.error()};
        read.runs = std::move(store->runs);
        read.notes = std::move(store->notes);
    } else {
        const std::vector<std::string> files = folder ? metric_files_in(path) : std::vector<std::string>{path};
        if (files.empty())
            return Error{path + " holds no metrics table (.csv, .tsv, .txt, .jsonl, .ndjson, .json)"};
        for (const std::string& file : files) {
            auto run = read_metric_file(file);
            if (!run) {
                read.notes.push_back(run.error());
                continue;
            }
            read.runs.push_back(std::move(*run));
        }
        if (read.runs.empty())
            return Error{read.notes.front()};
    }
    // What else the tree holds: read as the first kind, the rest named with the format that reads it.
    if (folder && (format == "wandb" || format == "mlflow")) {
        if (const auto kinds = kinds_in(path); kinds && kinds->event_files > 0)
            read.notes.push_back(path + " also holds " + std::to_string(kinds->event_files) +
                                 " TensorBoard event file(s); import them with --format tensorboard");
    }
    return read;
}

uint64_t source_fingerprint(const std::string& path) {
    // FNV-1a over (name, size, mtime) of every regular file, in the order listed: a folder listed in another order
    // reads as changed once, which only costs a read.
    uint64_t hash = 1469598103934665603ull;
    const auto mix = [&hash](const void* data, size_t size) {
        for (size_t i = 0; i < size; ++i) {
            hash ^= static_cast<const unsigned char*>(data)[i];
            hash *= 1099511628211ull;
        }
    };
    const auto add = [&](const fs::directory_entry& entry) {
        std::error_code ec;
        if (!entry.is_regular_file(ec))
            return;
        const std::string name = entry.path().string();
        const uintmax_t size = entry.file_size(ec);
        const auto time = entry.last_write_time(ec).time_since_epoch().count();
        mix(name.data(), name.size());
        mix(&size, sizeof size);
        mix(&time, sizeof time);
    };
    std::error_code ec;
    if (!fs::exists(path, ec))
        return 0;
    if (!fs::is_directory(path, ec)) {
        add(fs::directory_entry(path, ec));
        return hash;
    }
    for (fs::recursive_directory_iterator it(path, fs::directory_options::skip_permission_denied, ec), end;
         !ec && it != end; it.increment(ec))
        add(*it);
    return hash;
}

} // namespace traindeck::importers
