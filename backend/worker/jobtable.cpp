// The jobs table and the event blocks: the schema, and reading and writing a job's row with its columns in one order.
#include "jobtable.h"

#include "clock.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <stdexcept>

namespace traindeck::worker {

using nlohmann::json;

namespace {

// The order read_job_row() reads them in.
constexpr const char* kColumns =
    "id, name, request, state, reason, priority, restarts, next_seq, metrics_offset, stdout_offset, stderr_offset, "
    "shim_pid, pid, gpus, spend, run_seconds, warnings, exit_code, submitted, started, finished";

void put_little_endian(std::string& out, uint64_t value, int bytes) {
    for (int i = 0; i < bytes; ++i)
        out += static_cast<char>((value >> (8 * i)) & 0xff);
}

uint64_t get_little_endian(std::string_view bytes) {
    uint64_t value = 0;
    for (size_t i = 0; i < bytes.size(); ++i)
        value |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
    return value;
}

// Schema 1 kept a row an event (table events). Its events become blocks of the same fragments, a job a transaction:
// one job's blocks in, its rows out, committed together, so that a worker stopped in the middle (or short of disk)
// goes on where it stopped, and the move never needs room for more than one job's events twice.
void move_events_into_blocks(Database& db) {
    if (Statement exists = db.prepare("SELECT 1 FROM sqlite_master WHERE type='table' AND name='events'");
        !exists.step())
        return;
    const auto in_transaction = [&db](const std::function<void()>& work) {
        db.exec("BEGIN IMMEDIATE");
        try {
            work();
            db.exec("COMMIT");
        } catch (...) {
            // SQLite may have rolled back by itself (a full disk, an I/O error): the first error is the one to say.
            try {
                db.exec("ROLLBACK");
            } catch (...) {
            }
            throw;
        }
    };
    std::vector<int64_t> jobs;
    {
        Statement select = db.prepare("SELECT DISTINCT job FROM events ORDER BY job");
        while (select.step())
            jobs.push_back(select.integer(0));
    }
    Statement insert;
    for (const int64_t job : jobs)
        in_transaction([&] {
            // Its own scope: the rows can be deleted only once no statement reads them.
            {
                Statement select = db.prepare("SELECT seq, time, type, data FROM events WHERE job=? ORDER BY seq");
                select.bind(1, job);
                EventBlockWriter writer(db, insert, job);
                while (select.step())
                    writer.add(select.integer(0), select.real(1), select.text_view(2), select.text_view(3));
                writer.finish();
            }
            Statement remove = db.prepare("DELETE FROM events WHERE job=?");
            remove.bind(1, job);
            remove.step();
        });
    insert = Statement();
    in_transaction([&db] {
        db.exec("DROP TABLE events");
        db.exec("UPDATE meta SET value='2' WHERE key='schema_version'");
    });
}

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
        CREATE TABLE IF NOT EXISTS event_blocks(
            job INTEGER NOT NULL REFERENCES jobs(id),
            first_seq INTEGER NOT NULL,
            last_seq INTEGER NOT NULL,
            events BLOB NOT NULL);
        CREATE INDEX IF NOT EXISTS event_blocks_by_job ON event_blocks(job, last_seq);
        INSERT OR IGNORE INTO meta(key, value) VALUES('schema_version', '2');
    )");
    move_events_into_blocks(db);
}

void append_event_to_block(std::string& block, int64_t seq, double time, std::string_view type, std::string_view data) {
    // The fragment's length is known only once it is printed: its four bytes are filled in after.
    put_little_endian(block, static_cast<uint64_t>(seq), 8);
    const size_t length_at = block.size();
    block.append(4, '\0');
    // to_chars: printf's %f costs more than the whole rest of an event on this path.
    char number[64];
    block += "{\"seq\":";
    block.append(number, std::to_chars(number, number + sizeof(number), seq).ptr);
    block += ",\"time\":";
    block.append(number, std::to_chars(number, number + sizeof(number), time, std::chars_format::fixed, 6).ptr);
    block += ",\"type\":\"";
    block += type;
    block += "\",\"data\":";
    block += data;
    block += '}';
    const auto length = static_cast<uint32_t>(block.size() - length_at - 4);
    for (int i = 0; i < 4; ++i)
        block[length_at + i] = static_cast<char>((length >> (8 * i)) & 0xff);
}

void insert_event_block(Database& db, Statement& insert, int64_t job, int64_t first_seq, int64_t last_seq,
                        std::string_view block) {
    if (!insert.prepared())
        insert = db.prepare("INSERT INTO event_blocks(job, first_seq, last_seq, events) VALUES(?, ?, ?, ?)");
    insert.reset();
    insert.bind(1, job).bind(2, first_seq).bind(3, last_seq).bind_blob_static(4, block.data(), block.size());
    insert.step();
}

void EventBlockWriter::add(int64_t seq, double time, std::string_view type, std::string_view data) {
    if (bytes_.size() >= kEventBlockBytes)
        finish();
    if (bytes_.empty())
        first_ = seq;
    last_ = seq;
    append_event_to_block(bytes_, seq, time, type, data);
}

void EventBlockWriter::finish() {
    if (bytes_.empty())
        return;
    insert_event_block(*db_, *insert_, job_, first_, last_, bytes_);
    bytes_.clear();
}

int64_t read_events(Database& db, int64_t job, int64_t after, int64_t limit,
                    const std::function<void(int64_t seq, std::string_view fragment)>& each) {
    Statement select =
        db.prepare("SELECT first_seq, last_seq, events FROM event_blocks WHERE job=? AND last_seq>? ORDER BY last_seq");
    select.bind(1, job).bind(2, after);
    int64_t last = after, given = 0;
    while (given < limit && select.step()) {
        const int64_t first_seq = select.integer(0), last_seq = select.integer(1);
        const std::string_view block = select.text_view(2);
        std::string damage;
        size_t at = 0;
        for (int64_t previous = first_seq - 1; given < limit && at < block.size();) {
            if (block.size() - at < 12) {
                damage = std::to_string(block.size() - at) + " bytes left, no event's header";
                break;
            }
            const auto seq = static_cast<int64_t>(get_little_endian(block.substr(at, 8)));
            const auto length = static_cast<size_t>(get_little_endian(block.substr(at + 8, 4)));
            if (length > block.size() - at - 12) {
                damage = "an event of " + std::to_string(length) + " bytes in " +
                         std::to_string(block.size() - at - 12) + " left";
                break;
            }
            if (seq <= previous || seq > last_seq) {
                damage = "event " + std::to_string(seq) + " out of its place";
                break;
            }
            at += 12;
            if (seq > after) {
                each(seq, block.substr(at, length));
                last = seq;
                ++given;
            }
            previous = seq;
            at += length;
        }
        if (damage.empty() && at >= block.size() && last < last_seq)
            damage = "it ends at event " + std::to_string(last) + " of " + std::to_string(last_seq);
        if (damage.empty() || given >= limit)
            continue;
        // The block's unreadable events are said, as a warning at their last seq, and passed: the job's other
        // events, and other jobs' in the same reply, are still delivered.
        const std::string message = "events " + std::to_string(std::max(last + 1, first_seq)) + " to " +
                                    std::to_string(last_seq) +
                                    " of this job could not be read from the worker's database (a damaged event "
                                    "block: " +
                                    damage + "); they are lost";
        std::string fragment;
        append_event_to_block(fragment, last_seq, wall_seconds(), "warning",
                              json{{"message", message}, {"alert", "events_damaged"}}.dump());
        each(last_seq, std::string_view(fragment).substr(12));
        last = last_seq;
        ++given;
    }
    return last;
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
    Statement events = db.prepare("DELETE FROM event_blocks WHERE job=?");
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
