#pragma once
// The worker's database: the jobs table (one row a job, its columns written out here once), the event blocks
// and the schema that creates them. The supervisor writes through these functions; the HTTP threads read
// through them, on their own read-only connections.
#include "jobrun.h"
#include "jobstate.h"
#include "sqlitedb.h"

#include <cstddef>
#include <cstdint>
#include <functional>
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

// Creates the tables when they are missing, and moves a schema-1 database's events (one row an event) into blocks
// (schema 2), a job a transaction. A new column needs a migration, never an edit of a CREATE here.
void create_job_tables(Database& db);

// A job's events are stored in blocks: one row a job a commit, of at most kEventBlockBytes, each event in it as the
// fragment a reply carries, {"seq":S,"time":T,"type":"X","data":D}, after its seq (8 bytes) and the fragment's
// length (4 bytes), little-endian. One INSERT a job a commit, not one an event: with a row an event the worker spent
// two thirds of its time in SQLite at 300,000 events/s (tests/bench/worker_events), and its readers printed every
// event's fragment again for every reply.
constexpr size_t kEventBlockBytes = 64 << 10;
// Adds one event to a block being made.
void append_event_to_block(std::string& block, int64_t seq, double time, std::string_view type, std::string_view data);
// Stores a block of one job's events (first and last seq: those of its first and last event). `insert` is prepared on
// first use and kept by the caller.
void insert_event_block(Database& db, Statement& insert, int64_t job, int64_t first_seq, int64_t last_seq,
                        std::string_view block);
// One job's events made into blocks, in the order they are added: a block that reaches kEventBlockBytes is stored and
// the next event starts another; finish() stores what is left. The supervisor's commits and the schema-1 move both
// write through it.
class EventBlockWriter {
public:
    EventBlockWriter(Database& db, Statement& insert, int64_t job) : db_(&db), insert_(&insert), job_(job) {}
    void add(int64_t seq, double time, std::string_view type, std::string_view data);
    void finish();

private:
    Database* db_;
    Statement* insert_;
    int64_t job_;
    int64_t first_ = 0, last_ = 0;
    std::string bytes_;
};
// Calls each(seq, fragment) for the job's events after seq `after`, in order, at most `limit` of them; returns the last
// seq given (`after` when none). The events of a block that cannot be read whole (a damaged database) come as one
// warning event ("alert": "events_damaged") at the block's last seq, which says which seqs are lost.
int64_t read_events(Database& db, int64_t job, int64_t after, int64_t limit,
                    const std::function<void(int64_t seq, std::string_view fragment)>& each);

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
