#pragma once
// The worker's database: the jobs table (one row a job, its columns written out here once), the events table
// and the schema that creates them. The supervisor writes through these functions; the HTTP threads read
// through them, on their own read-only connections.
#include "jobrun.h"
#include "jobstate.h"
#include "sqlitedb.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace traindeck::worker {

// One row of the jobs table.
struct JobRow {
    int64_t id = 0;
    std::string name;
    std::string request_json; // the JobRequest as submitted (to_json())
    JobState state = JobState::queued;
    std::string reason;
    int64_t priority = 0;
    int restarts = 0;
    int64_t next_seq = 1;                // the seq the job's next event gets
    int64_t offsets[3] = {0, 0, 0};      // bytes of metrics.jsonl, stdout.log, stderr.log already ingested
    JobRun run;                          // only run.shim is a column (shim_pid)
    pid_t pid = -1;
    std::vector<int> gpus;
    double spend = 0, run_seconds = 0;
    int64_t warnings = 0;
    int exit_code = -1;
    double submitted = 0, started = 0, finished = 0;
};

// Creates the tables when they are missing (schema version 1; a new column needs a migration, never an edit here).
void create_job_tables(Database& db);

// "SELECT <every column of JobRow> FROM jobs " + clause (a WHERE and ORDER BY); read each row with read_job_row().
std::string select_jobs_sql(std::string_view clause);
// The row a select_jobs_sql() statement stands on. Throws when the row holds a state no worker writes.
JobRow read_job_row(const Statement& select);

// A new queued job; returns its id. Ids are never reused, not even the id of a deleted last job: a console that
// still names that id must never be answered with another job's events.
int64_t insert_job(Database& db, const std::string& name, const std::string& request_json, int64_t priority,
                   double submitted);
// Writes everything that changes while a job lives. `update` is prepared on first use and kept by the caller.
void update_job(Database& db, Statement& update, const JobRow& row);
void update_job_request(Database& db, int64_t id, const std::string& request_json);
// Removes a job's row and its events (the caller removes its folder once this commits).
void delete_job(Database& db, int64_t id);

} // namespace traindeck::worker
