#include "runexport.h"

#include "seriesstore.h"

#include "metricexport.h"
#include "tfevents.h"

#include <cctype>
#include <filesystem>
#include <limits>
#include <set>
#include <unordered_map>

namespace traindeck {

using importers::ImportedRun;

namespace {

Expected<ImportedRun> read_run(Catalog& catalog, int64_t job) {
    Database& db = catalog.db();
    Statement select = db.prepare("SELECT name, state, started, finished FROM jobs WHERE id=?");
    select.bind(1, job);
    if (!select.step())
        return Error{"the catalog has no run " + std::to_string(job)};
    ImportedRun run;
    run.name = select.text(0);
    run.state = select.text(1);
    run.started = select.real(2);
    run.finished = select.real(3);
    run.source = catalog.path() + "#" + std::to_string(job);
    run.format = "traindeck";
    run.tool = "traindeck";
    Statement config = db.prepare("SELECT key, text, number FROM job_config WHERE job=? ORDER BY key");
    config.bind(1, job);
    while (config.step()) {
        if (config.is_null(2))
            run.config[config.text(0)] = config.text(1);
        else
            run.config[config.text(0)] = config.real(2);
    }
    constexpr int64_t kFirst = std::numeric_limits<int64_t>::min(), kLast = std::numeric_limits<int64_t>::max();
    std::unordered_map<int64_t, double> time_at;
    if (const int64_t times = catalog.series(job, "_time", false))
        for (const MetricPoint& point : SeriesStore::points(db, times, kFirst, kLast))
            time_at[point.step] = point.value;
    for (const std::string& name : catalog.series_names(job)) {
        std::vector<importers::ScalarPoint>& points = run.scalars[name];
        for (const MetricPoint& point : SeriesStore::points(db, catalog.series(job, name, false), kFirst, kLast)) {
            const auto time = time_at.find(point.step);
            points.push_back({point.step, point.value, time == time_at.end() ? 0.0 : time->second});
        }
    }
    return run;
}

// The name of an event file in `folder` ("" when it holds none, or is not there).
std::string event_file_in(const std::string& folder) {
    std::error_code error;
    for (std::filesystem::directory_iterator it(folder, error), end; !error && it != end; it.increment(error))
        if (it->path().filename().string().find("tfevents") != std::string::npos)
            return it->path().filename().string();
    return {};
}

} // namespace

Expected<ImportedRun> run_from_catalog(Catalog& catalog, int64_t job) {
    // One read transaction (unless the caller is in one): a run a job or an import is adding to reads as of one
    // commit, its config, every curve and their times together, not a curve from before a commit and the next from
    // after it.
    Database& db = catalog.db();
    const bool own_transaction = sqlite3_get_autocommit(db.handle()) != 0;
    if (own_transaction)
        db.exec("BEGIN");
    try {
        auto run = read_run(catalog, job);
        if (own_transaction)
            db.exec("COMMIT");
        return run;
    } catch (...) {
        if (own_transaction)
            db.exec("ROLLBACK");
        throw;
    }
}

Expected<RunExportResult> export_run(Catalog& catalog, int64_t job, RunExportFormat format, const std::string& path) {
    if (format == RunExportFormat::tensorboard)
        if (const std::string earlier = event_file_in(path); !earlier.empty())
            return Error{path + " already holds " + earlier +
                         " (an earlier export?): TensorBoard reads a folder's event files as one run, so every "
                         "point would show twice; remove it or export to another folder; nothing was written"};
    auto run = run_from_catalog(catalog, job);
    if (!run)
        return Error{run.error()};
    RunExportResult result;
    result.job = job;
    result.points = run->scalar_points();
    if (format == RunExportFormat::tensorboard) {
        auto file = importers::write_tensorboard_scalars(path, *run);
        if (!file)
            return Error{file.error()};
        result.path = *file;
        return result;
    }
    if (const Status status = importers::write_metric_file(path, *run, format == RunExportFormat::csv); !status)
        return Error{status.error()};
    result.path = path;
    if (format == RunExportFormat::jsonl)
        result.renamed = importers::jsonl_renamed_tags(*run);
    return result;
}

std::vector<std::string> export_paths(const std::string& folder,
                                      const std::vector<std::pair<int64_t, std::string>>& jobs,
                                      RunExportFormat format) {
    constexpr size_t kMostBytes = 120;
    std::vector<std::string> names;
    for (const auto& [id, name] : jobs) {
        std::string safe;
        for (size_t i = 0; i < name.size() && safe.size() < kMostBytes;) {
            const auto byte = static_cast<unsigned char>(name[i]);
            if (byte < 0x80) {
                safe += std::isalnum(byte) || byte == '-' || byte == '_' || byte == '.' ? name[i] : '_';
                ++i;
                continue;
            }
            // A UTF-8 character kept whole (C1 controls, U+0080 to U+009F, are not letters), else one "_" a byte.
            const size_t length = byte >= 0xF0 && byte < 0xF5   ? 4
                                  : byte >= 0xE0 && byte < 0xF0 ? 3
                                  : byte >= 0xC2 && byte < 0xE0 ? 2
                                                                : 0;
            bool whole = length > 0 && i + length <= name.size() &&
                         !(byte == 0xC2 && static_cast<unsigned char>(name[i + 1]) < 0xA0);
            for (size_t k = 1; whole && k < length; ++k)
                whole = (static_cast<unsigned char>(name[i + k]) & 0xC0) == 0x80;
            if (!whole) {
                safe += '_';
                ++i;
                continue;
            }
            if (safe.size() + length > kMostBytes)
                break;
            safe.append(name, i, length);
            i += length;
        }
        if (safe.empty() || safe[0] == '.')
            safe.insert(0, "run-" + std::to_string(id));
        names.push_back(safe);
    }
    // Letter case aside (ASCII's), as a case-insensitive file system compares names.
    const auto folded = [](std::string text) {
        for (char& c : text)
            c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return text;
    };
    std::multiset<std::string> seen;
    for (const std::string& name : names)
        seen.insert(folded(name));
    const char* extension = format == RunExportFormat::csv ? ".csv" : format == RunExportFormat::jsonl ? ".jsonl" : "";
    std::vector<std::string> paths;
    std::set<std::string> used;
    for (size_t i = 0; i < names.size(); ++i) {
        std::string name = seen.count(folded(names[i])) > 1 ? names[i] + "-" + std::to_string(jobs[i].first) : names[i];
        // Another run's name with "-ID" in it already ("a" twice beside "a-5"), or a run given twice.
        while (!used.insert(folded(name)).second)
            name += "-" + std::to_string(jobs[i].first);
        paths.push_back((std::filesystem::path(folder) / (name + extension)).string());
    }
    return paths;
}

std::vector<std::string> existing_exports(const std::vector<std::string>& paths, RunExportFormat format) {
    std::vector<std::string> existing;
    for (const std::string& path : paths) {
        std::error_code error;
        if (format == RunExportFormat::tensorboard ? !event_file_in(path).empty()
                                                   : std::filesystem::exists(path, error))
            existing.push_back(path);
    }
    return existing;
}

} // namespace traindeck
