// The jobs and events tables: the schema, and reading and writing a job's row with its columns in one order.
#include "jobtable.h"

#include <nlohmann/json.hpp>

#include <stdexcept>

namespace traindeck::worker {

using nlohmann::json;

namespace {

// The order read_job_row() reads them in.
constexpr const char* kColumns =
    "id, name, request, state, reason, priority, restarts, next_seq, metrics_offset, stdout_offset, stderr_offset, "
    "shim_pid, pid, gpus, spend, run_seconds, warnings, exit_code, submitted, started, finished";

} // namespace

void create_job_tables(Database& db) {
    db.exec(R"(
        CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS jobs(
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            request TEXT NOT NULL,
            state TEXT NOT NULL,
            reason TEXT NOT NULL DEFAULT '',
            priority INTEGER NOT NULL DEFAULT 0,
            restarts INTEGER NOT NULL DEFAULT 0,
            next_seq INTEGER NOT NULL DEFAULT 1,
            metrics_offset INTEGER NOT NULL DEFAULT 0,
            stdout_offset INTEGER NOT NULL DEFAULT 0,
            stderr_offset INTEGER NOT NULL DEFAULT 0,
            shim_pid INTEGER NOT NULL DEFAULT -1,
            pid INTEGER NOT NULL DEFAULT -1,
            gpus TEXT NOT NULL DEFAULT '[]',
            spend REAL NOT NULL DEFAULT 0,
            run_seconds REAL NOT NULL DEFAULT 0,
            warnings INTEGER NOT NULL DEFAULT 0,
            exit_code INTEGER NOT NULL DEFAULT -1,
            submitted REAL NOT NULL,
            started REAL NOT NULL DEFAULT 0,
            finished REAL NOT NULL DEFAULT 0);
        CREATE TABLE IF NOT EXISTS events(
            job INTEGER NOT NULL REFERENCES jobs(id),
            seq INTEGER NOT NULL,
            time REAL NOT NULL,
            type TEXT NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY(job, seq)) WITHOUT ROWID;
        INSERT OR IGNORE INTO meta(key, value) VALUES('schema_version', '1');
    )");
}

std::string select_jobs_sql(std::string_view clause) {
    return std::string("SELECT ") + kColumns + " FROM jobs " + std::string(clause);
}

JobRow read_job_row(const Statement& select) {
    JobRow row;
    row.id = select.integer(0);
    row.name = select.text(1);
    row.request_json = select.text(2);
    const std::optional<JobState> state = job_state_from_string(select.text_view(3));
    if (!state)
        throw std::runtime_error("job " + std::to_string(row.id) + " has the unknown state \"" + select.text(3) +
                                 "\" (written by a newer worker?); run the worker version that wrote this database");
    row.state = *state;
    row.reason = select.text(4);
    row.priority = select.integer(5);
    row.restarts = static_cast<int>(select.integer(6));
    row.next_seq = select.integer(7);
    for (int i = 0; i < 3; ++i)
        row.offsets[i] = select.integer(8 + i);
    row.run.shim = static_cast<pid_t>(select.integer(11));
    row.pid = static_cast<pid_t>(select.integer(12));
    row.gpus = json::parse(select.text_view(13)).get<std::vector<int>>();
    row.spend = select.real(14);
    row.run_seconds = select.real(15);
    row.warnings = select.integer(16);
    row.exit_code = static_cast<int>(select.integer(17));
    row.submitted = select.real(18);
    row.started = select.real(19);
    row.finished = select.real(20);
    return row;
}

int64_t insert_job(Database& db, const std::string& name, const std::string& request_json, int64_t priority,
                   double submitted) {
    // Above every id there is and every id there was (meta's highest_deleted_id, kept by delete_job).
    Statement insert = db.prepare(
        "INSERT INTO jobs(id, name, request, state, priority, submitted) VALUES("
        "max(coalesce((SELECT max(id) FROM jobs), 0), "
        "coalesce((SELECT CAST(value AS INTEGER) FROM meta WHERE key='highest_deleted_id'), 0)) + 1, ?, ?, 'queued', "
        "?, ?)");
    insert.bind(1, name).bind(2, request_json).bind(3, priority).bind(4, submitted);
    insert.step();
    return db.last_insert_id();
}

void delete_job(Database& db, int64_t id) {
    Statement events = db.prepare("DELETE FROM events WHERE job=?");
    events.bind(1, id);
    events.step();
    Statement job = db.prepare("DELETE FROM jobs WHERE id=?");
    job.bind(1, id);
    job.step();
    Statement highest =
        db.prepare("INSERT INTO meta(key, value) VALUES('highest_deleted_id', ?1) ON CONFLICT(key) DO UPDATE SET "
                   "value=CAST(max(CAST(value AS INTEGER), ?1) AS TEXT)");
    highest.bind(1, id);
    highest.step();
}

void update_job(Database& db, Statement& update, const JobRow& row) {
    if (!update.prepared())
        update = db.prepare(
            "UPDATE jobs SET state=?, reason=?, restarts=?, next_seq=?, metrics_offset=?, stdout_offset=?, "
            "stderr_offset=?, shim_pid=?, pid=?, gpus=?, spend=?, run_seconds=?, warnings=?, exit_code=?, started=?, "
            "finished=? WHERE id=?");
    update.reset();
    update.bind(1, to_string(row.state)).bind(2, row.reason).bind(3, int64_t(row.restarts)).bind(4, row.next_seq);
    update.bind(5, row.offsets[0]).bind(6, row.offsets[1]).bind(7, row.offsets[2]);
    update.bind(8, int64_t(row.run.shim)).bind(9, int64_t(row.pid)).bind(10, json(row.gpus).dump());
    update.bind(11, row.spend).bind(12, row.run_seconds).bind(13, row.warnings).bind(14, int64_t(row.exit_code));
    update.bind(15, row.started).bind(16, row.finished).bind(17, row.id);
    update.step();
}

void update_job_request(Database& db, int64_t id, const std::string& request_json) {
    Statement update = db.prepare("UPDATE jobs SET request=? WHERE id=?");
    update.bind(1, request_json).bind(2, id);
    update.step();
}

} // namespace traindeck::worker
