#include "runexport.h"

#include "seriesstore.h"

#include <limits>
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

} // namespace traindeck
