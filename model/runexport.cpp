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
    if (format == RunExportFormat::tensorboard) {
        std::error_code error;
        for (std::filesystem::directory_iterator it(path, error), end; !error && it != end; it.increment(error))
            if (it->path().filename().string().find("tfevents") != std::string::npos)
                return Error{path + " already holds " + it->path().filename().string() +
                             " (an earlier export?): TensorBoard reads a folder's event files as one run, so every "
                             "point would show twice; remove it or export to another folder; nothing was written"};
    }
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
    std::vector<std::string> names;
    for (const auto& [id, name] : jobs) {
        std::string safe;
        for (const char c : name) {
            const auto byte = static_cast<unsigned char>(c);
            safe += byte >= 0x80 || std::isalnum(byte) || c == '-' || c == '_' || c == '.' ? c : '_';
        }
        if (safe.empty() || safe[0] == '.')
            safe.insert(0, "run-" + std::to_string(id));
        names.push_back(safe);
    }
    std::multiset<std::string> seen(names.begin(), names.end());
    const char* extension = format == RunExportFormat::csv ? ".csv" : format == RunExportFormat::jsonl ? ".jsonl" : "";
    std::vector<std::string> paths;
    std::set<std::string> used;
    for (size_t i = 0; i < names.size(); ++i) {
        std::string name = seen.count(names[i]) > 1 ? names[i] + "-" + std::to_string(jobs[i].first) : names[i];
        // Another run's name with "-ID" in it already ("a" twice beside "a-5"), or a run given twice.
        while (!used.insert(name).second)
            name += "-" + std::to_string(jobs[i].first);
        paths.push_back((std::filesystem::path(folder) / (name + extension)).string());
    }
    return paths;
}

} // namespace traindeck
