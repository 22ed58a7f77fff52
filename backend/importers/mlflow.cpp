#include "mlflow.h"

#include "sourcefile.h"
#include "textlines.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace traindeck::importers {

namespace fs = std::filesystem;

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
    return s;
}

std::string unquote(std::string_view value) {
    if (value.size() >= 2 && value.front() == '\'' && value.back() == '\'') {
        std::string out;
        for (size_t i = 1; i + 1 < value.size(); ++i) {
            out.push_back(value[i]);
            if (value[i] == '\'' && i + 2 < value.size() && value[i + 1] == '\'')
                ++i; // '' is a quote inside single quotes
        }
        return out;
    }
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
        std::string out;
        for (size_t i = 1; i + 1 < value.size(); ++i) {
            if (value[i] == '\\' && i + 2 < value.size()) {
                const char c = value[++i];
                out.push_back(c == 'n' ? '\n' : c == 't' ? '\t' : c);
            } else {
                out.push_back(value[i]);
            }
        }
        return out;
    }
    if (value == "null" || value == "~" || value == "Null" || value == "NULL")
        return {};
    return std::string(value);
}

// The files under a folder (params/, tags/, metrics/), keyed by their path below it: MLflow stores a key "a/b" as
// the file b in the folder a.
std::vector<std::pair<std::string, std::string>> keyed_files(const fs::path& folder) {
    std::vector<std::pair<std::string, std::string>> out;
    std::error_code ec;
    if (!fs::is_directory(folder, ec))
        return out;
    fs::recursive_directory_iterator it(folder, fs::directory_options::skip_permission_denied, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
        std::error_code type_error;
        if (it->is_regular_file(type_error))
            out.emplace_back(it->path().lexically_relative(folder).generic_string(), it->path().string());
    }
    std::sort(out.begin(), out.end());
    return out;
}

// "12", "0.01", "1e-3" are numbers to compare and sort by; anything else stays text. (MLflow keeps every param as
// text; the catalog keeps both, so nothing is lost.)
nlohmann::json param_value(const std::string& text) {
    double number = 0;
    if (parse_number(text, number) && std::isfinite(number) && text.find_first_of(" \t") == std::string::npos)
        return number;
    return text;
}

double milliseconds(const std::map<std::string, std::string>& meta, const char* key) {
    const auto it = meta.find(key);
    double ms = 0;
    return it != meta.end() && parse_number(it->second, ms) && std::isfinite(ms) && ms > 0 ? ms / 1000.0 : 0.0;
}

bool has_meta(const fs::path& folder) {
    std::error_code ec;
    return fs::is_regular_file(folder / "meta.yaml", ec);
}

} // namespace

std::map<std::string, std::string> parse_simple_yaml(std::string_view text, std::vector<std::string>* problems) {
    std::map<std::string, std::string> out;
    TextLines lines(text);
    TextLine line;
    while (lines.next(line)) {
        const std::string_view s = line.text;
        if (trim(s).empty() || trim(s).front() == '#' || s.front() == ' ' || s.front() == '\t' || s.front() == '-')
            continue; // blank, comment, or part of a nested block or list: not a top-level scalar
        if (s == "---" || s == "...")
            continue;
        const size_t colon =
            s.find(": ") != std::string_view::npos ? s.find(": ") : (s.back() == ':' ? s.size() - 1 : s.npos);
        if (colon == std::string_view::npos || colon == 0) {
            if (problems)
                problems->push_back("line " + std::to_string(line.number) + " is not \"key: value\"");
            continue;
        }
        std::string key = unquote(trim(s.substr(0, colon)));
        std::string_view value = trim(s.substr(colon + 1));
        // A trailing comment after a plain scalar.
        if (!value.empty() && value.front() != '\'' && value.front() != '"')
            if (const size_t hash = value.find(" #"); hash != std::string_view::npos)
                value = trim(value.substr(0, hash));
        out[std::move(key)] = unquote(value);
    }
    return out;
}

bool parse_mlflow_metric_line(std::string_view line, ScalarPoint& point, std::string& why) {
    std::string_view fields[3];
    size_t count = 0;
    size_t at = 0;
    while (at < line.size()) {
        while (at < line.size() && line[at] == ' ')
            ++at;
        if (at >= line.size())
            break;
        const size_t end = std::min(line.find(' ', at), line.size());
        if (count == 3)
            return why = "more than three fields", false;
        fields[count++] = line.substr(at, end - at);
        at = end;
    }
    if (count < 2)
        return why = "fewer than two fields (timestamp, value)", false;
    double timestamp = 0;
    if (!parse_number(fields[0], timestamp) || !std::isfinite(timestamp))
        return why = "the timestamp \"" + std::string(fields[0]) + "\" is not a number", false;
    if (!parse_number(fields[1], point.value))
        return why = "the value \"" + std::string(fields[1]) + "\" is not a number", false;
    point.step = 0;
    if (count == 3 && !parse_integer(fields[2], point.step))
        return why = "the step \"" + std::string(fields[2]) + "\" is not a whole number", false;
    point.wall_time = timestamp / 1000.0;
    return true;
}

ImportedRun read_mlflow_run(const std::string& run_folder, const std::string& experiment_name) {
    ImportedRun run;
    run.format = "mlflow";
    run.tool = "mlflow";
    run.source = run_folder;
    run.experiment = experiment_name;
    const fs::path folder(run_folder);
    const std::string meta_path = (folder / "meta.yaml").string();
    run.files.push_back(meta_path);
    std::map<std::string, std::string> meta;
    if (auto text = read_source_file(meta_path); !text) {
        run.damage.push_back({meta_path, 0, text.error()});
    } else {
        std::vector<std::string> problems;
        meta = parse_simple_yaml(*text, &problems);
        for (const std::string& problem : problems)
            run.damage.push_back({meta_path, 0, problem + " (skipped)"});
    }
    run.source_id = meta.count("run_id") ? meta["run_id"] : meta.count("run_uuid") ? meta["run_uuid"] : "";
    if (run.source_id.empty())
        run.source_id = folder.filename().string();
    run.started = milliseconds(meta, "start_time");
    run.finished = milliseconds(meta, "end_time");
    run.deleted_in_source = meta["lifecycle_stage"] == "deleted";
    // RunStatus (mlflow/protos/service.proto): RUNNING 1, SCHEDULED 2, FINISHED 3, FAILED 4, KILLED 5; the file
    // store writes the number, some versions the name.
    const std::string status = meta["status"];
    if (status == "3" || status == "FINISHED")
        run.state = "succeeded";
    else if (status == "4" || status == "FAILED")
        run.state = "failed";
    else if (status == "5" || status == "KILLED")
        run.state = "cancelled";
    else if (status == "1" || status == "RUNNING" || status == "2" || status == "SCHEDULED")
        run.state = "running";
    if (!status.empty())
        run.state_reason = "MLflow status " + status;

    for (const auto& [key, path] : keyed_files(folder / "params")) {
        run.files.push_back(path);
        if (auto value = read_source_file(path))
            run.config[key] = param_value(*value);
        else
            run.damage.push_back({path, 0, value.error()});
    }
    for (const auto& [key, path] : keyed_files(folder / "tags")) {
        run.files.push_back(path);
        if (auto value = read_source_file(path))
            run.tags[key] = *value;
        else
            run.damage.push_back({path, 0, value.error()});
    }
    for (const auto& [key, path] : keyed_files(folder / "metrics")) {
        run.files.push_back(path);
        auto text = read_source_file(path);
        if (!text) {
            run.damage.push_back({path, 0, text.error()});
            continue;
        }
        std::vector<ScalarPoint>& points = run.scalars[key];
        TextLines lines(*text);
        TextLine line;
        std::string why;
        while (lines.next(line)) {
            if (trim(line.text).empty())
                continue;
            ScalarPoint point;
            if (!line.complete) {
                // MLflow ends every line it writes with a newline: this one is cut short or still being written.
                run.damage.push_back({path, line.offset,
                                      "line " + std::to_string(line.number) +
                                          " has no newline (cut short, or still being written): not read",
                                      true});
            } else if (!parse_mlflow_metric_line(line.text, point, why)) {
                run.damage.push_back(
                    {path, line.offset, "line " + std::to_string(line.number) + ": " + why + " (skipped)"});
            } else {
                ++run.records;
                points.push_back(point);
            }
        }
    }
    if (const auto name = meta.find("run_name"); name != meta.end() && !name->second.empty()) // MLflow 2.x
        run.name = name->second;
    else if (const auto old_name = meta.find("name"); old_name != meta.end() && !old_name->second.empty()) // 1.x
        run.name = old_name->second;
    else if (const auto tag = run.tags.find("mlflow.runName"); tag != run.tags.end() && !tag->second.empty())
        run.name = tag->second;
    else
        run.name = run.source_id;
    return run;
}

Expected<MlflowStore> read_mlflow_store(const std::string& path, const MlflowOptions& options) {
    std::error_code ec;
    const fs::path root(path);
    if (!fs::is_directory(root, ec))
        return Error{"cannot read " + path + ": not a folder; give an mlruns folder, an experiment or a run folder"};
    MlflowStore store;
    // A run's meta.yaml names its run id; an experiment's does not.
    auto is_run = [](const fs::path& folder) {
        if (!has_meta(folder))
            return false;
        auto text = read_source_file((folder / "meta.yaml").string());
        if (!text)
            return false;
        const auto meta = parse_simple_yaml(*text);
        return meta.count("run_id") > 0 || meta.count("run_uuid") > 0;
    };
    auto sorted_folders = [](const fs::path& folder) {
        std::vector<fs::path> out;
        std::error_code e;
        for (fs::directory_iterator it(folder, fs::directory_options::skip_permission_denied, e), end; !e && it != end;
             it.increment(e)) {
            std::error_code type_error;
            if (it->is_directory(type_error))
                out.push_back(it->path());
        }
        std::sort(out.begin(), out.end());
        return out;
    };
    auto experiment_meta = [](const fs::path& folder) {
        auto text = read_source_file((folder / "meta.yaml").string());
        return text ? parse_simple_yaml(*text) : std::map<std::string, std::string>();
    };
    auto experiment_name = [&](const fs::path& folder) {
        auto meta = experiment_meta(folder);
        return meta["name"].empty() ? folder.filename().string() : meta["name"];
    };
    // in_trash: the experiment was deleted (it lies under .trash/).
    auto read_experiment = [&](const fs::path& folder, bool in_trash) {
        const std::string name = experiment_name(folder);
        // Older MLflow marked a deleted experiment in its meta.yaml instead of moving it to .trash/.
        in_trash = in_trash || experiment_meta(folder)["lifecycle_stage"] == "deleted";
        int64_t runs = 0;
        for (const fs::path& child : sorted_folders(folder)) {
            if (!is_run(child)) {
                store.notes.push_back(child.string() + " is not an MLflow run (no meta.yaml): skipped");
                continue;
            }
            ++runs;
            if (in_trash && !options.include_deleted)
                continue;
            ImportedRun run = read_mlflow_run(child.string(), name);
            run.deleted_in_source = run.deleted_in_source || in_trash;
            if (run.deleted_in_source && !options.include_deleted) {
                ++store.deleted_runs_skipped;
                store.notes.push_back("run " + run.source_id + " (experiment " + folder.filename().string() + " '" +
                                      name + "') is deleted in MLflow (lifecycle_stage: deleted): not imported");
                continue;
            }
            store.runs.push_back(std::move(run));
        }
        return runs;
    };
    if (is_run(root)) {
        store.runs.push_back(read_mlflow_run(root.string(), experiment_name(root.parent_path())));
        return store;
    }
    if (has_meta(root)) { // one experiment folder
        read_experiment(root, root.parent_path().filename() == ".trash");
        return store;
    }
    for (const fs::path& child : sorted_folders(root)) {
        if (child.filename() == ".trash") {
            for (const fs::path& trashed : sorted_folders(child)) {
                if (!has_meta(trashed))
                    continue;
                ++store.trashed_experiments;
                const int64_t runs = read_experiment(trashed, true);
                store.trashed_runs += runs;
                store.notes.push_back("experiment " + trashed.filename().string() + " '" + experiment_name(trashed) +
                                      "' is in .trash/ (deleted) with " + std::to_string(runs) + " runs: " +
                                      (options.include_deleted ? "imported as deleted in the source" : "not imported"));
            }
            continue;
        }
        if (!has_meta(child)) {
            store.notes.push_back(child.string() + " is not an MLflow experiment (no meta.yaml): skipped");
            continue;
        }
        read_experiment(child, false);
    }
    if (store.runs.empty() && store.notes.empty())
        return Error{path + " holds no MLflow experiment (a folder with a meta.yaml); give the mlruns folder"};
    return store;
}

} // namespace traindeck::importers
