// The worker's event blocks (jobtable.h): a schema-1 database's events, one row each, move into blocks and read back
// as the fragments the old reader printed; reads after any seq, across block ends, and damaged blocks said.
#include "jobtable.h"
#include "sqlitedb.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

using namespace traindeck;
using namespace traindeck::worker;
using nlohmann::json;

namespace {

constexpr int64_t kAll = std::numeric_limits<int64_t>::max();

struct TempFolder {
    std::string path;
    TempFolder() {
        std::string pattern = (std::filesystem::temp_directory_path() / "traindeck-jobtable-XXXXXX").string();
        path = mkdtemp(pattern.data());
    }
    ~TempFolder() { std::filesystem::remove_all(path); }
};

// What schema 1's reader printed for an event (to_chars, fixed, 6 decimals), made here with printf's %.6f, which
// prints the same: the fragments must not change.
std::string old_fragment(int64_t seq, double time, const std::string& type, const std::string& data) {
    char number[64];
    std::snprintf(number, sizeof(number), "%.6f", time);
    return "{\"seq\":" + std::to_string(seq) + ",\"time\":" + number + ",\"type\":\"" + type + "\",\"data\":" + data +
           "}";
}

struct Event {
    int64_t seq;
    double time;
    std::string type, data;
};

std::vector<std::pair<int64_t, std::string>> read_all(Database& db, int64_t job, int64_t after, int64_t limit) {
    std::vector<std::pair<int64_t, std::string>> events;
    const int64_t last = read_events(db, job, after, limit, [&](int64_t seq, std::string_view fragment) {
        events.emplace_back(seq, std::string(fragment));
    });
    EXPECT_EQ(last, events.empty() ? after : events.back().first);
    return events;
}

} // namespace

TEST(JobTable, ASchemaOneDatabasesEventsMoveIntoBlocksAndReadAsBefore) {
    TempFolder folder;
    Database db;
    ASSERT_EQ(db.open(folder.path + "/worker.db", false), "");
    // Schema 1 as it was: today's tables made first (its jobs table is today's, and an event block table that
    // `IF NOT EXISTS` leaves alone), then its events table with rows, and its version.
    create_job_tables(db);
    db.exec("CREATE TABLE events(job INTEGER NOT NULL REFERENCES jobs(id), seq INTEGER NOT NULL, time REAL NOT NULL, "
            "type TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY(job, seq)) WITHOUT ROWID");
    db.exec("UPDATE meta SET value='1' WHERE key='schema_version'");
    db.exec("INSERT INTO jobs(id, name, request, state, submitted) VALUES(1, 'a', '{}', 'running', 0), "
            "(2, 'b', '{}', 'succeeded', 0)");
    std::map<int64_t, std::vector<Event>> events;
    // Job 1: enough events for several blocks; job 2: odd data (escapes, UTF-8, a seq gap, a large and a tiny time).
    for (int64_t seq = 1; seq <= 3000; ++seq)
        events[1].push_back({seq, 1733600000.0 + seq * 0.0371, seq % 7 ? "record" : "log",
                             R"({"type":"metric","step":)" + std::to_string(seq) + R"(,"values":{"loss":0.)" +
                                 std::to_string(seq) + "}}"});
    events[2] = {{1, 0.0000004, "state", R"({"state":"running","reason":"a \"quoted\"\nline"})"},
                 {2, 4102444800.5, "warning", R"({"message":"élan ✓ \u0000"})"},
                 {5, 1.0, "state", R"({"state":"succeeded"})"}};
    {
        Statement insert = db.prepare("INSERT INTO events(job, seq, time, type, data) VALUES(?, ?, ?, ?, ?)");
        for (const auto& [job, list] : events)
            for (const Event& e : list) {
                insert.reset();
                insert.bind(1, job).bind(2, e.seq).bind(3, e.time).bind(4, e.type).bind(5, e.data);
                insert.step();
            }
    }
    create_job_tables(db);
    Statement old = db.prepare("SELECT count(*) FROM sqlite_master WHERE name='events'");
    ASSERT_TRUE(old.step());
    EXPECT_EQ(old.integer(0), 0) << "the old table is gone";
    Statement version = db.prepare("SELECT value FROM meta WHERE key='schema_version'");
    ASSERT_TRUE(version.step());
    EXPECT_EQ(version.text(0), "2");
    Statement blocks = db.prepare("SELECT count(*) FROM event_blocks WHERE job=1");
    ASSERT_TRUE(blocks.step());
    EXPECT_GT(blocks.integer(0), 1) << "3,000 events make more than one block of " << kEventBlockBytes << " bytes";

    for (const auto& [job, list] : events) {
        const auto read = read_all(db, job, 0, kAll);
        ASSERT_EQ(read.size(), list.size()) << "job " << job;
        for (size_t i = 0; i < list.size(); ++i) {
            EXPECT_EQ(read[i].first, list[i].seq);
            EXPECT_EQ(read[i].second, old_fragment(list[i].seq, list[i].time, list[i].type, list[i].data));
        }
    }
    // After any seq, at most the limit, across the blocks' ends.
    Statement first_block = db.prepare("SELECT last_seq FROM event_blocks WHERE job=1 ORDER BY last_seq LIMIT 1");
    ASSERT_TRUE(first_block.step());
    const int64_t end = first_block.integer(0);
    for (const int64_t after : {int64_t(0), end - 1, end, end + 1, int64_t(1500), int64_t(2999)}) {
        const auto read = read_all(db, 1, after, 25);
        ASSERT_EQ(read.size(), static_cast<size_t>(std::min<int64_t>(25, 3000 - after))) << "after " << after;
        for (size_t i = 0; i < read.size(); ++i)
            EXPECT_EQ(read[i].first, after + 1 + static_cast<int64_t>(i)) << "after " << after;
    }
    EXPECT_TRUE(read_all(db, 1, 3000, kAll).empty());
    EXPECT_TRUE(read_all(db, 3, 0, kAll).empty()) << "no such job";
    const auto gap = read_all(db, 2, 2, kAll);
    ASSERT_EQ(gap.size(), 1u);
    EXPECT_EQ(gap[0].first, 5);

    // A second start finds nothing to move and changes nothing.
    create_job_tables(db);
    EXPECT_EQ(read_all(db, 1, 0, kAll).size(), 3000u);
}

// A block that cannot be read whole gives the events before the damage, then one warning at the block's last seq
// that names the lost seqs, and the blocks after it: never an exception that would fail a whole watch reply.
TEST(JobTable, ADamagedBlockIsSaidNotReadPastAndTheNextBlocksStillCome) {
    TempFolder folder;
    Database db;
    ASSERT_EQ(db.open(folder.path + "/worker.db", false), "");
    create_job_tables(db);
    db.exec("INSERT INTO jobs(id, name, request, state, submitted) VALUES(1, 'a', '{}', 'running', 0)");
    std::string block, next;
    append_event_to_block(block, 1, 2.5, "log", R"({"line":"one"})");
    append_event_to_block(block, 2, 3.5, "log", R"({"line":"two"})");
    append_event_to_block(next, 3, 4.5, "log", R"({"line":"three"})");
    Statement insert;
    insert_event_block(db, insert, 1, 1, 2, block);
    insert_event_block(db, insert, 1, 3, 3, next);
    ASSERT_EQ(read_all(db, 1, 0, kAll).size(), 3u);
    // Every cut of the first block short of its end: an event's header or its bytes missing, or the block ending
    // before its last seq.
    for (size_t cut = 1; cut < block.size(); ++cut) {
        db.exec("DELETE FROM event_blocks WHERE first_seq=1");
        insert_event_block(db, insert, 1, 1, 2, std::string_view(block).substr(0, cut));
        const auto events = read_all(db, 1, 0, kAll);
        ASSERT_GE(events.size(), 2u) << cut;
        ASSERT_LE(events.size(), 3u) << cut;
        // The lost ones are said at seq 2, then event 3 comes.
        const auto& warning = events[events.size() - 2];
        EXPECT_EQ(warning.first, 2) << cut;
        const json said = json::parse(warning.second);
        EXPECT_EQ(said["type"], "warning");
        EXPECT_EQ(said["data"]["alert"], "events_damaged");
        const std::string message = said["data"]["message"];
        EXPECT_NE(message.find(events.size() == 3 ? "events 2 to 2" : "events 1 to 2"), std::string::npos) << message;
        EXPECT_NE(message.find("damaged event block"), std::string::npos) << message;
        EXPECT_EQ(events.back().first, 3);
        EXPECT_EQ(json::parse(events.back().second)["data"]["line"], "three");
        // Asked after the damage, only what follows.
        EXPECT_EQ(read_all(db, 1, 2, kAll).size(), 1u);
    }
}
