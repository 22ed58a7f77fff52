#include "catalog.h"

#include "base64.h"
#include "clock.h"
#include "jobstate.h"
#include "jsondom.h"
#include "runconfig.h"

#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>

namespace traindeck {

using nlohmann::json;

namespace {

// Each entry migrates from version (index) to index + 1. Never edit a shipped entry: add one.
const char* const kMigrations[] = {
    R"(
    CREATE TABLE backends(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, kind TEXT NOT NULL, url TEXT NOT NULL,
        keyring_key TEXT NOT NULL DEFAULT '', pinned_public_key TEXT NOT NULL DEFAULT '', created REAL NOT NULL);
    CREATE TABLE datasets(id INTEGER PRIMARY KEY, name TEXT NOT NULL, created REAL NOT NULL);
    CREATE TABLE dataset_versions(id INTEGER PRIMARY KEY, dataset INTEGER NOT NULL REFERENCES datasets(id),
        hash TEXT NOT NULL UNIQUE, manifest TEXT NOT NULL, bytes INTEGER NOT NULL, created REAL NOT NULL);
    CREATE TABLE jobs(id INTEGER PRIMARY KEY, name TEXT NOT NULL, backend TEXT NOT NULL, remote_id TEXT NOT NULL,
        spec TEXT NOT NULL, state TEXT NOT NULL DEFAULT 'queued', reason TEXT NOT NULL DEFAULT '',
        progress REAL NOT NULL DEFAULT 0, loss REAL, accuracy REAL, spend REAL NOT NULL DEFAULT 0,
        budget REAL NOT NULL DEFAULT 0, last_seq INTEGER NOT NULL DEFAULT 0, created REAL NOT NULL,
        started REAL NOT NULL DEFAULT 0, finished REAL NOT NULL DEFAULT 0);
    CREATE INDEX jobs_by_state ON jobs(state);
    CREATE TABLE series(id INTEGER PRIMARY KEY, job INTEGER NOT NULL REFERENCES jobs(id), name TEXT NOT NULL,
        UNIQUE(job, name));
    CREATE TABLE metric_chunks(series INTEGER NOT NULL, chunk INTEGER NOT NULL, first_step INTEGER NOT NULL,
        last_step INTEGER NOT NULL, count INTEGER NOT NULL, min REAL NOT NULL, max REAL NOT NULL, last REAL NOT NULL,
        PRIMARY KEY(series, chunk)) WITHOUT ROWID;
    CREATE TABLE metric_chunk_data(series INTEGER NOT NULL, chunk INTEGER NOT NULL, data BLOB NOT NULL,
        PRIMARY KEY(series, chunk));
    CREATE TABLE job_logs(job INTEGER NOT NULL, seq INTEGER NOT NULL, time REAL NOT NULL, stream TEXT NOT NULL,
        line TEXT NOT NULL, PRIMARY KEY(job, seq)) WITHOUT ROWID;
    CREATE TABLE checkpoints(id INTEGER PRIMARY KEY, job INTEGER NOT NULL REFERENCES jobs(id), step INTEGER NOT NULL,
        path TEXT NOT NULL, created REAL NOT NULL);
    CREATE TABLE artifacts(id INTEGER PRIMARY KEY, job INTEGER NOT NULL REFERENCES jobs(id), kind TEXT NOT NULL,
        path TEXT NOT NULL, bytes INTEGER NOT NULL, info TEXT NOT NULL DEFAULT '{}', created REAL NOT NULL);
    CREATE TABLE prices(backend TEXT PRIMARY KEY, base_per_hour REAL NOT NULL, gpu_per_hour REAL NOT NULL,
        cpu_per_hour REAL NOT NULL, currency TEXT NOT NULL);
    CREATE TABLE budgets(job INTEGER PRIMARY KEY REFERENCES jobs(id), amount REAL NOT NULL, warned_80 INTEGER NOT NULL DEFAULT 0);
    CREATE TABLE alerts(id INTEGER PRIMARY KEY, job INTEGER, kind TEXT NOT NULL, message TEXT NOT NULL,
        time REAL NOT NULL, seen INTEGER NOT NULL DEFAULT 0);
    )",
    // 2: dataset versions remember where they were registered from and what they are; uploads per backend.
    R"(
    ALTER TABLE dataset_versions ADD COLUMN root TEXT NOT NULL DEFAULT '';
    ALTER TABLE dataset_versions ADD COLUMN format TEXT NOT NULL DEFAULT '';
    ALTER TABLE dataset_versions ADD COLUMN summary TEXT NOT NULL DEFAULT '';
    ALTER TABLE dataset_versions ADD COLUMN files INTEGER NOT NULL DEFAULT 0;
    CREATE TABLE dataset_uploads(version TEXT NOT NULL, backend TEXT NOT NULL, time REAL NOT NULL,
        PRIMARY KEY(version, backend)) WITHOUT ROWID;
    )",
    // 3: jobs that move to another worker keep one event sequence (the new worker's seqs are offset past the
    // old ones), and remember whether the user allowed moving them.
    R"(
    ALTER TABLE jobs ADD COLUMN seq_offset INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE jobs ADD COLUMN migrate INTEGER NOT NULL DEFAULT 0;
    )",
    // 4: runs as data. Each run's configuration as flattened keys; one summary row per series kept on ingest (best
    // is derived from min/max by the goal: 1 minimise, 2 maximise, 0 none); tags, a note, star, archive, deletion
    // with undo (deleted = when; purged at the next start); saved views; `changed` is the revision of a job's rows
    // (readers re-read only the runs changed since the revision they saw).
    R"(
    CREATE TABLE job_config(job INTEGER NOT NULL, key TEXT NOT NULL, text TEXT NOT NULL, number REAL,
        PRIMARY KEY(job, key)) WITHOUT ROWID;
    CREATE TABLE metric_summaries(job INTEGER NOT NULL, name TEXT NOT NULL, last REAL, last_step INTEGER NOT NULL DEFAULT 0,
        min REAL, max REAL, count INTEGER NOT NULL DEFAULT 0, goal INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY(job, name)) WITHOUT ROWID;
    CREATE TABLE job_tags(job INTEGER NOT NULL, tag TEXT NOT NULL, PRIMARY KEY(job, tag)) WITHOUT ROWID;
    ALTER TABLE jobs ADD COLUMN note TEXT NOT NULL DEFAULT '';
    ALTER TABLE jobs ADD COLUMN starred INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE jobs ADD COLUMN archived INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE jobs ADD COLUMN deleted REAL NOT NULL DEFAULT 0;
    ALTER TABLE jobs ADD COLUMN changed INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX jobs_by_changed ON jobs(changed);
    CREATE TABLE saved_views(name TEXT PRIMARY KEY, query TEXT NOT NULL, columns TEXT NOT NULL, grouping TEXT NOT NULL,
        chart TEXT NOT NULL, created REAL NOT NULL);
    )",
    // 5: the revision is a counter of its own (one row), no longer MAX(jobs.changed): purging deleted runs removes
    // the newest-changed rows, and a maximum that falls back hands out revisions a reader has already seen, so it
    // would miss the changes made under them. It starts where the maximum is now.
    R"(
    CREATE TABLE catalog_revision(id INTEGER PRIMARY KEY CHECK(id = 1), value INTEGER NOT NULL);
    INSERT INTO catalog_revision(id, value) SELECT 1, COALESCE(MAX(changed), 0) FROM jobs;
    )",
    // 6: runs imported from other tools (model/runimport.h). Where each came from (its source path, format, writer,
    // the files read and the damage found last time), and how many points of each of its series were taken from the
    // source: importing again takes only what the source gained since, even where the source wrote a step twice.
    // Histograms per step (bucket limits and counts as packed doubles), for imported runs and any later writer.
    // (IF NOT EXISTS: tests make an older catalog by stepping a new one's user_version back, tables left in place.)
    R"(
    CREATE TABLE IF NOT EXISTS import_sources(job INTEGER PRIMARY KEY, path TEXT NOT NULL, format TEXT NOT NULL, tool TEXT NOT NULL,
        source_id TEXT NOT NULL, files TEXT NOT NULL, damage TEXT NOT NULL, config TEXT NOT NULL, imported REAL NOT NULL);
    CREATE TABLE IF NOT EXISTS import_series(job INTEGER NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL, points INTEGER NOT NULL,
        last_step INTEGER NOT NULL, last_value REAL, PRIMARY KEY(job, kind, name)) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS histograms(job INTEGER NOT NULL, name TEXT NOT NULL, seq INTEGER NOT NULL, step INTEGER NOT NULL,
        time REAL NOT NULL, min REAL, max REAL, num REAL, sum REAL, sum_squares REAL, limits BLOB NOT NULL,
        counts BLOB NOT NULL, PRIMARY KEY(job, name, seq)) WITHOUT ROWID;
    )",
    // 7: histograms in chunks of up to 64 of one series (model/histogramstore.h: packed, lossless), as points are:
    // a row each spilled every histogram into an overflow page of its own (the catalog grew 2.6 times their bytes).
    // The rows of 6's table are packed into chunks by HistogramStore::pack_rows_of_schema_6 (C++: the format is
    // not SQL's) right after this entry, in the same transaction, and that table is dropped.
    R"(
    CREATE TABLE IF NOT EXISTS histogram_chunks(job INTEGER NOT NULL, name TEXT NOT NULL, chunk INTEGER NOT NULL,
        count INTEGER NOT NULL, min_step INTEGER NOT NULL, max_step INTEGER NOT NULL, data BLOB NOT NULL,
        PRIMARY KEY(job, name, chunk));
    )",
    // 8: images a run logged (TensorBoard's, imported; model/imagestore.h): each one's tag, step and size, and where
    // its encoded bytes are in the source (file, the record's offset, which image of the event), in chunks of up to
    // 64 of one tag. The pixels stay in the source; the job view reads them from there when it shows them. A file's
    // path is kept once (image_files).
    R"(
    CREATE TABLE IF NOT EXISTS image_files(id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE);
    CREATE TABLE IF NOT EXISTS images(job INTEGER NOT NULL, tag TEXT NOT NULL, chunk INTEGER NOT NULL,
        count INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY(job, tag, chunk));
    )",
    // 9: what each run was made of (backend/worker/capture.h): its code and its environment as the worker captured
    // them when the run started, one row a capture event (a resumed job has one per run). Checkpoints a run wrote
    // are kept from its checkpoint records (the lineage: dataset version -> run -> checkpoints -> exports).
    R"(
    CREATE TABLE IF NOT EXISTS captures(job INTEGER NOT NULL, seq INTEGER NOT NULL, part TEXT NOT NULL,
        time REAL NOT NULL, data TEXT NOT NULL, PRIMARY KEY(job, seq));
    CREATE INDEX IF NOT EXISTS checkpoints_by_job ON checkpoints(job, step);
    )",
    // 10: a run's evaluations with their confusion matrices ("eval" records: split, step, epoch, and as JSON the
    // [true][predicted] counts, the class names when the run knew them, loss and accuracy), for the Results view.
    R"(
    CREATE TABLE IF NOT EXISTS evaluations(job INTEGER NOT NULL, seq INTEGER NOT NULL, split TEXT NOT NULL,
        step INTEGER NOT NULL, epoch INTEGER NOT NULL, time REAL NOT NULL, data TEXT NOT NULL, PRIMARY KEY(job, seq));
    )",
    // 11: the instances provider backends rented (backend/api/instanceledger.h), each written before the cloud is
    // asked for it and kept after it is deleted, with its price and times (its cost).
    R"(
    CREATE TABLE IF NOT EXISTS instances(provider TEXT NOT NULL, name TEXT NOT NULL, id TEXT NOT NULL,
        type TEXT NOT NULL, address TEXT NOT NULL, state TEXT NOT NULL, reason TEXT NOT NULL,
        price_per_hour REAL NOT NULL, spot INTEGER NOT NULL, created REAL NOT NULL, ended REAL NOT NULL,
        PRIMARY KEY(provider, name));
    )",
    // 12: how many times a series' sealed chunks were written again (a step older than its open chunk: a run that
    // logs out of order); readers that keep its chunk summaries (SeriesStore::summaries) read them all again when it
    // moves, and otherwise only the chunks from the newest they know. A trigger counts them, so that every writer
    // does, a build from before it too (the ALTER TABLE, which SQLite cannot make conditional, is migrate()'s where
    // the column is missing; a new series starts at a random count, which tells it from a purged one whose id it
    // took). And the catalog's identity, a random value made once, which tells a catalog file made again at the same
    // path from the one a reader knew.
    R"(
    CREATE TRIGGER IF NOT EXISTS sealed_chunk_written AFTER INSERT ON metric_chunks
        WHEN EXISTS(SELECT 1 FROM metric_chunks WHERE series=NEW.series AND chunk>NEW.chunk)
        BEGIN UPDATE series SET rewrites=rewrites+1 WHERE id=NEW.series; END;
    CREATE TABLE IF NOT EXISTS catalog_identity(id INTEGER PRIMARY KEY CHECK(id = 1), value TEXT NOT NULL);
    INSERT OR IGNORE INTO catalog_identity(id, value) VALUES(1, lower(hex(randomblob(16))));
    )",
    // 13: metric chunks are written coded (SeriesStore::encode_chunk: about 6 bytes a point, not 16). The schema
    // changes nothing in SQL: chunks written before stay packed until written again, and both are read. The number
    // moves so that a TrainDeck from before, which reads packed points only, refuses the catalog instead of
    // misreading it.
    R"(
    SELECT 1;
    )",
};

} // namespace

std::string Catalog::open(const std::string& path, bool read_only) {
    path_ = path;
    if (auto error = db_.open(path, read_only); !error.empty())
        return error;
    const int version = schema_version();
    if (version > kSchemaVersion)
        return path + ": the catalog was written by a newer TrainDeck (schema " + std::to_string(version) +
               "); update TrainDeck, or open another catalog";
    if (!read_only && version < kSchemaVersion) {
        try {
            migrate(version);
        } catch (const std::exception& e) {
            return path + ": migrating the catalog failed (" + e.what() + "); it is unchanged";
        }
    }
    if (!read_only) {
        store_ = std::make_unique<SeriesStore>(db_);
        histograms_ = std::make_unique<HistogramStore>(db_);
    }
    return {};
}

void Catalog::forget_if_others_wrote() {
    // data_version moves when another connection commits (never for this one's own commits).
    Statement select = db_.prepare("PRAGMA data_version");
    const int64_t now = select.step() ? select.integer(0) : -1;
    if (now != data_version_) {
        if (data_version_ != -1)
            discard_caches();
        data_version_ = now;
    }
}

void Catalog::discard_caches() {
    if (store_)
        store_ = std::make_unique<SeriesStore>(db_);
    if (histograms_)
        histograms_ = std::make_unique<HistogramStore>(db_);
}

int Catalog::schema_version() {
    Statement version = db_.prepare("PRAGMA user_version");
    return version.step() ? static_cast<int>(version.integer(0)) : 0;
}

void Catalog::migrate(int from) {
    // One transaction for all steps: a failed migration leaves the old schema, not half of a new one.
    db_.exec("BEGIN IMMEDIATE");
    try {
        for (int v = from; v < kSchemaVersion; ++v) {
            if (v + 1 == 12) { // the column 12's trigger counts in
                Statement column = db_.prepare("SELECT 1 FROM pragma_table_info('series') WHERE name='rewrites'");
                if (!column.step())
                    db_.exec("ALTER TABLE series ADD COLUMN rewrites INTEGER NOT NULL DEFAULT 0");
            }
            db_.exec(kMigrations[v]);
            if (v + 1 == 7) {
                HistogramStore::pack_rows_of_schema_6(db_);
                db_.exec("DROP TABLE IF EXISTS histograms");
            }
        }
        db_.exec("PRAGMA user_version=" + std::to_string(kSchemaVersion));
        db_.exec("COMMIT");
    } catch (...) {
        db_.exec("ROLLBACK");
        throw;
    }
}

int64_t Catalog::add_job(const std::string& name, const std::string& backend, const std::string& remote_id,
                         const json& spec) {
    Statement insert =
        db_.prepare("INSERT INTO jobs(name, backend, remote_id, spec, created, budget, migrate, changed) "
                    "VALUES(?, ?, ?, ?, ?, ?, ?, ?)");
    const double budget = spec.is_object() && spec.contains("budget") && spec["budget"].is_number() ? spec["budget"].get<double>() : 0.0;
    // "console" holds what only the console acts on (the worker never sees it).
    const bool migrate = spec.is_object() && spec.contains("console") && spec["console"].is_object() &&
                         spec["console"].value("migrate", false);
    insert.bind(1, name)
        .bind(2, backend)
        .bind(3, remote_id)
        .bind(4, spec.dump())
        .bind(5, wall_seconds())
        .bind(6, budget)
        .bind(7, int64_t(migrate))
        .bind(8, next_revision());
    insert.step();
    // (The revision is set by the insert: touching the row again would copy a large spec a second time.)
    const int64_t job = db_.last_insert_id();
    // A built-in job's spec is its configuration until the trainer reports the full one (defaults filled in); its
    // name is not (the run's name is a column of its own, and the trainer leaves it out of its config record too).
    if (spec.is_object() && spec.contains("builtin") && spec["builtin"].is_object()) {
        json config = spec["builtin"];
        config.erase("name");
        set_config(job, config);
    }
    return job;
}

void Catalog::add_backend(const BackendRow& b) {
    Statement upsert = db_.prepare(
        "INSERT INTO backends(name, kind, url, keyring_key, pinned_public_key, created) VALUES(?, ?, ?, ?, ?, ?) "
        "ON CONFLICT(name) DO UPDATE SET kind=excluded.kind, url=excluded.url, pinned_public_key=excluded.pinned_public_key");
    upsert.bind(1, b.name)
        .bind(2, b.kind)
        .bind(3, b.url)
        .bind(4, b.name)
        .bind(5, b.pinned_public_key)
        .bind(6, wall_seconds());
    upsert.step();
}

int64_t Catalog::add_dataset_version(const DatasetVersionRow& v, bool* created) {
    if (created)
        *created = false;
    Statement existing = db_.prepare("SELECT id FROM dataset_versions WHERE hash=?");
    existing.bind(1, v.version);
    if (existing.step())
        return existing.integer(0); // the same bytes registered again: the same version
    Statement find = db_.prepare("SELECT id FROM datasets WHERE name=? ORDER BY id LIMIT 1");
    find.bind(1, v.name);
    int64_t dataset = 0;
    if (find.step()) {
        dataset = find.integer(0);
    } else {
        Statement insert = db_.prepare("INSERT INTO datasets(name, created) VALUES(?, ?)");
        insert.bind(1, v.name).bind(2, wall_seconds());
        insert.step();
        dataset = db_.last_insert_id();
    }
    Statement insert = db_.prepare("INSERT INTO dataset_versions(dataset, hash, manifest, bytes, created, root, format, "
                                   "summary, files) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)");
    insert.bind(1, dataset)
        .bind(2, v.version)
        .bind(3, v.manifest)
        .bind(4, v.bytes)
        .bind(5, wall_seconds())
        .bind(6, v.root)
        .bind(7, v.format)
        .bind(8, v.summary)
        .bind(9, v.files);
    insert.step();
    if (created)
        *created = true;
    return db_.last_insert_id();
}

void Catalog::mark_dataset_uploaded(const std::string& version, const std::string& backend) {
    Statement upsert = db_.prepare("INSERT OR REPLACE INTO dataset_uploads(version, backend, time) VALUES(?, ?, ?)");
    upsert.bind(1, version).bind(2, backend).bind(3, wall_seconds());
    upsert.step();
}

int64_t Catalog::add_artifact(int64_t job, const std::string& kind, const std::string& path, int64_t bytes,
                              const nlohmann::json& info) {
    Statement insert = db_.prepare("INSERT INTO artifacts(job, kind, path, bytes, info, created) VALUES(?, ?, ?, ?, ?, ?)");
    insert.bind(1, job).bind(2, kind).bind(3, path).bind(4, bytes).bind(5, info.dump()).bind(6, wall_seconds());
    insert.step();
    return db_.last_insert_id();
}

bool Catalog::remove_backend(const std::string& name, int* live) {
    int count = 0;
    for (const InstanceRow& instance : instances(name))
        count += instance.state == "creating" || instance.state == "booting" || instance.state == "ready" ||
                 instance.state == "deleting";
    if (live)
        *live = count;
    if (count > 0)
        return false;
    Statement remove = db_.prepare("DELETE FROM backends WHERE name = ?");
    remove.bind(1, name);
    remove.step();
    return true;
}

std::vector<Catalog::BackendRow> Catalog::backends() {
    std::vector<BackendRow> rows;
    Statement select = db_.prepare("SELECT name, kind, url, pinned_public_key FROM backends ORDER BY name");
    while (select.step())
        rows.push_back({select.text(0), select.text(1), select.text(2), select.text(3)});
    return rows;
}

void Catalog::record_instance(const InstanceRow& i) {
    Statement upsert = db_.prepare(
        "INSERT INTO instances(provider, name, id, type, address, state, reason, price_per_hour, spot, created, ended) "
        "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(provider, name) DO UPDATE SET id=excluded.id, "
        "type=excluded.type, address=excluded.address, state=excluded.state, reason=excluded.reason, "
        "price_per_hour=excluded.price_per_hour, spot=excluded.spot, ended=excluded.ended");
    upsert.bind(1, i.provider)
        .bind(2, i.name)
        .bind(3, i.id)
        .bind(4, i.type)
        .bind(5, i.address)
        .bind(6, i.state)
        .bind(7, i.reason)
        .bind(8, i.price_per_hour)
        .bind(9, int64_t(i.spot))
        .bind(10, i.created)
        .bind(11, i.ended);
    upsert.step();
}

std::vector<Catalog::InstanceRow> Catalog::instances(const std::string& provider) {
    std::vector<InstanceRow> rows;
    Statement select = db_.prepare(
        "SELECT provider, name, id, type, address, state, reason, price_per_hour, spot, created, ended FROM instances "
        "WHERE ?='' OR provider=? ORDER BY created, rowid");
    select.bind(1, provider).bind(2, provider);
    while (select.step())
        rows.push_back({select.text(0), select.text(1), select.text(2), select.text(3), select.text(4), select.text(5),
                        select.text(6), select.real(7), select.integer(8) != 0, select.real(9), select.real(10)});
    return rows;
}

int64_t Catalog::last_seq(int64_t job) {
    Statement select = db_.prepare("SELECT last_seq FROM jobs WHERE id=?");
    select.bind(1, job);
    return select.step() ? select.integer(0) : 0;
}

int64_t Catalog::remote_last_seq(int64_t job) {
    Statement select = db_.prepare("SELECT last_seq - seq_offset FROM jobs WHERE id=?");
    select.bind(1, job);
    return select.step() ? std::max<int64_t>(0, select.integer(0)) : 0;
}

void Catalog::mark_lost(int64_t job, const std::string& reason) {
    Statement update = db_.prepare("UPDATE jobs SET state='lost', reason=? WHERE id=?");
    update.bind(1, reason).bind(2, job);
    update.step();
    touch(job);
}

void Catalog::reassign_job(int64_t job, const std::string& backend, const std::string& remote_id, const std::string& reason) {
    // The new worker numbers its events from 1: they continue after every event already stored.
    Statement update = db_.prepare(
        "UPDATE jobs SET backend=?, remote_id=?, seq_offset=last_seq, state='queued', reason=? WHERE id=?");
    update.bind(1, backend).bind(2, remote_id).bind(3, reason).bind(4, job);
    update.step();
    touch(job);
}

int64_t Catalog::series(int64_t job, const std::string& name, bool create) {
    Statement select = db_.prepare("SELECT id FROM series WHERE job=? AND name=?");
    select.bind(1, job).bind(2, name);
    if (select.step())
        return select.integer(0);
    if (!create)
        return 0;
    // rewrites starts at a random count: a reader's cached summaries of a purged series whose id this one takes do
    // not match it (SeriesStore::summaries).
    Statement insert = db_.prepare("INSERT INTO series(job, name, rewrites) VALUES(?, ?, abs(random() / 2))");
    insert.bind(1, job).bind(2, name);
    insert.step();
    return db_.last_insert_id();
}

std::vector<std::string> Catalog::series_names(int64_t job) {
    std::vector<std::string> names;
    // Names starting with "_" are the catalog's own (the record times, "_time"), not curves to list.
    Statement select = db_.prepare("SELECT name FROM series WHERE job=? AND substr(name, 1, 1) != '_' ORDER BY name");
    select.bind(1, job);
    while (select.step())
        names.push_back(select.text(0));
    return names;
}

namespace {

// Reads without copying: ingestion looks at millions of keys, and json::value() returns strings by value.
const std::string* string_at(const json& object, const char* key) {
    const auto it = object.find(key);
    return it != object.end() && it->is_string() ? &it->get_ref<const std::string&>() : nullptr;
}

bool number_at(const json& object, const char* key, double& out) {
    const auto it = object.find(key);
    if (it == object.end() || !it->is_number())
        return false;
    out = it->get<double>();
    return true;
}

// A seq, step or time that becomes an integer: only a finite number within ±2^53 (what a double holds exactly);
// anything else from a worker (1e300, a value a buggy writer made) is skipped, never cast (that would be undefined).
bool whole_number(double value, int64_t& out) {
    if (!std::isfinite(value) || std::fabs(value) > 9007199254740992.0)
        return false;
    out = static_cast<int64_t>(value);
    return true;
}

bool integer_at(const json& object, const char* key, int64_t& out, double scale = 1.0) {
    double value = 0;
    return number_at(object, key, value) && whole_number(value * scale, out);
}

bool is(const std::string* text, std::string_view expected) { return text && *text == expected; }

// What the catalog keeps of an eval record for the Results view: its confusion matrix (square, counts that are
// whole and not negative, at most kMaxClasses classes), its class names when there is one per class, its loss and
// accuracy; or a regression's (true, predicted) pairs with its error figures. null, with why, when the matrix (or
// the list of pairs) is not one.
// An image classification's gallery examples (the trainer's "examples": thumbnails of samples with their true and
// predicted class and confidence), checked against a matrix of `classes`: "" when they are sound.
std::string examples_problem(const json& examples, size_t classes) {
    constexpr size_t kMaxItems = 1000;
    if (!examples.is_object())
        return "\"examples\" is not an object";
    const auto dimension = [&](const char* key, int64_t most) {
        const auto it = examples.find(key);
        return it != examples.end() && it->is_number_integer() && it->get<int64_t>() >= 1 && it->get<int64_t>() <= most
                   ? it->get<int64_t>()
                   : int64_t(0);
    };
    const int64_t height = dimension("height", 64), width = dimension("width", 64), channels = dimension("channels", 4);
    if (height == 0 || width == 0 || (channels != 1 && channels != 3))
        return "its thumbnails' height and width are not 1 to 64 pixels, or their channels not 1 or 3";
    const auto items = examples.find("items");
    if (items == examples.end() || !items->is_array() || items->size() > kMaxItems)
        return "\"items\" is not a list of at most " + std::to_string(kMaxItems) + " examples";
    const size_t bytes = static_cast<size_t>(height * width * channels);
    for (const json& item : *items) {
        const bool sound =
            item.is_array() &&
            (item.size() == 4 || (item.size() == 5 && item[4].is_number_integer() && item[4].get<int64_t>() >= 0)) &&
            item[0].is_number_integer() && item[1].is_number_integer() && item[0].get<int64_t>() >= 0 &&
            item[1].get<int64_t>() >= 0 && static_cast<size_t>(item[0].get<int64_t>()) < classes &&
            static_cast<size_t>(item[1].get<int64_t>()) < classes && item[2].is_number() && item[3].is_string() &&
            is_base64_of(item[3].get_ref<const std::string&>(), bytes);
        if (!sound)
            return "an example that is not [true class, predicted class, confidence, " + std::to_string(bytes) +
                   " pixel bytes in base64, its index]";
    }
    return {};
}

json evaluation_to_keep(const json& record, std::string& why, std::string& examples_why) {
    constexpr size_t kMaxClasses = 256;
    if (!record.contains("confusion") && record.contains("pairs")) {
        // A regression's (true, predicted) pairs for the Results view's scatter: at most kMaxPairs, each two finite
        // numbers (JSON has no others), with the record's error figures.
        constexpr size_t kMaxPairs = 10000;
        const json& pairs = record["pairs"];
        if (!pairs.is_array() || pairs.empty()) {
            why = "\"pairs\" is not a list of [true, predicted] values";
            return nullptr;
        }
        // More than kMaxPairs: the first ones, and how many came (the view says it shows the first of them).
        const size_t kept_pairs = std::min(pairs.size(), kMaxPairs);
        for (size_t i = 0; i < kept_pairs; ++i) {
            const json& pair = pairs[i];
            if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number() || !pair[1].is_number()) {
                why = "a pair that is not [true, predicted] (" + pair.dump() + ")";
                return nullptr;
            }
        }
        json kept = {
            {"pairs", kept_pairs == pairs.size()
                          ? pairs
                          : json(std::vector<json>(pairs.begin(), pairs.begin() + static_cast<long>(kept_pairs)))}};
        for (const char* key : {"loss", "rmse", "mae", "r2", "samples"})
            if (const auto value = record.find(key); value != record.end() && value->is_number())
                kept[key] = *value;
        if (!kept.contains("samples") || kept["samples"].get<double>() < static_cast<double>(pairs.size()))
            kept["samples"] = pairs.size();
        return kept;
    }
    const json& matrix = record["confusion"];
    if (!matrix.is_array() || matrix.empty()) {
        why = "\"confusion\" is not a list of rows";
        return nullptr;
    }
    if (matrix.size() > kMaxClasses) {
        why = std::to_string(matrix.size()) + " classes (at most " + std::to_string(kMaxClasses) + " are kept)";
        return nullptr;
    }
    for (const json& row : matrix) {
        if (!row.is_array() || row.size() != matrix.size()) {
            why = "its rows are not " + std::to_string(matrix.size()) + " counts each (the matrix is not square)";
            return nullptr;
        }
        for (const json& count : row)
            if (!count.is_number_integer() || count.get<int64_t>() < 0) {
                why = "a count that is not a whole number of samples (" + count.dump() + ")";
                return nullptr;
            }
    }
    json kept = {{"confusion", matrix}};
    if (const auto names = record.find("class_names");
        names != record.end() && names->is_array() && names->size() == matrix.size() &&
        std::all_of(names->begin(), names->end(), [](const json& name) { return name.is_string(); }))
        kept["class_names"] = *names;
    for (const char* key : {"loss", "accuracy"})
        if (const auto value = record.find(key); value != record.end() && value->is_number())
            kept[key] = *value;
    // Its gallery's examples, kept when sound: the matrix stays whatever they are.
    if (const auto examples = record.find("examples"); examples != record.end()) {
        examples_why = examples_problem(*examples, matrix.size());
        if (examples_why.empty())
            kept["examples"] = *examples;
    }
    return kept;
}

} // namespace

// One ingest() of a job's events: what it gathers over the batch (points per series, the job's latest figures, its
// state) and writes when the batch is done; event() takes one event as nlohmann::json, plain_metric() the common
// one straight from simdjson's DOM.
class Catalog::Ingestion {
public:
    Ingestion(Catalog& catalog, int64_t job)
        : catalog_(catalog), db_(catalog.db_), job_(job),
          alert_(db_.prepare("INSERT INTO alerts(job, kind, message, time) VALUES(?, ?, ?, ?)")),
          log_(db_.prepare("INSERT OR IGNORE INTO job_logs(job, seq, time, stream, line) VALUES(?, ?, ?, ?, ?)")),
          capture_(db_.prepare("INSERT OR IGNORE INTO captures(job, seq, part, time, data) VALUES(?, ?, ?, ?, ?)")),
          same_alert_(db_.prepare("SELECT 1 FROM alerts WHERE job=? AND kind='evaluation_dropped' AND message=?")),
          evaluation_(db_.prepare("INSERT OR IGNORE INTO evaluations(job, seq, split, step, epoch, time, data) "
                                  "VALUES(?, ?, ?, ?, ?, ?, ?)")),
          same_capture_(db_.prepare("SELECT data FROM captures WHERE job=? AND part=? ORDER BY seq DESC LIMIT 1")),
          checkpoint_(
              db_.prepare("INSERT INTO checkpoints(job, step, path, created) SELECT ?1, ?2, ?3, ?4 "
                          "WHERE NOT EXISTS (SELECT 1 FROM checkpoints WHERE job=?1 AND step=?2 AND path=?3)")) {
        Statement select = db_.prepare("SELECT last_seq, seq_offset FROM jobs WHERE id=?");
        select.bind(1, job);
        if (select.step()) {
            last_ = select.integer(0);
            offset_ = select.integer(1);
        }
    }

    void event(const json& event);
    bool plain_metric(simdjson::dom::object event);
    // Writes what the batch gathered; the job's new last_seq.
    int64_t finish();
    int checkpoints() const { return checkpoints_; }

private:
    // Points gathered per series name, appended in one go per batch.
    void add_point(std::string_view name, int64_t step, double value) {
        auto it = points_.find(name);
        if (it == points_.end())
            it = points_.emplace(std::string(name), std::vector<MetricPoint>()).first;
        it->second.push_back({step, value});
    }
    void raise(const std::string& kind, const std::string& message, double time) {
        alert_.reset();
        alert_.bind(1, job_).bind(2, kind).bind(3, message).bind(4, time);
        alert_.step();
        catalog_.alerts_.push_back({job_, kind, message});
    }
    // Once per job and reason: a script sending 300 classes each epoch gets one alert, not 300.
    void evaluation_dropped(const std::string& message, double time) {
        same_alert_.reset();
        same_alert_.bind(1, job_).bind(2, message);
        if (!same_alert_.step())
            raise("evaluation_dropped", message, time);
    }
    // The seq an event takes in the catalog's numbering; false for one ingested already (a re-delivery).
    bool take_seq(int64_t seq_number, int64_t& seq) {
        seq = seq_number + offset_;
        if (seq <= last_)
            return false;
        last_ = seq;
        return true;
    }

    Catalog& catalog_;
    Database& db_;
    const int64_t job_;
    int64_t last_ = 0, offset_ = 0;
    std::map<std::string, std::vector<MetricPoint>, std::less<>> points_;
    std::optional<json> state_update_;
    double state_time_ = 0, first_running_ = 0;
    double loss_ = NAN, accuracy_ = NAN, progress_ = NAN, spend_ = NAN;
    int checkpoints_ = 0;
    Statement alert_, log_, capture_, same_alert_, evaluation_, same_capture_, checkpoint_;
};

void Catalog::Ingestion::event(const json& event) {
    int64_t seq_number = 0, seq = 0;
    if (!integer_at(event, "seq", seq_number) || !take_seq(seq_number, seq))
        return; // no seq, or already ingested: re-delivery
    const std::string* type = string_at(event, "type");
    const auto data_it = event.find("data");
    if (!type || data_it == event.end() || !data_it->is_object())
        return;
    const json& data = *data_it;
    double event_time = 0;
    number_at(event, "time", event_time);
    if (*type == "record") {
        const std::string* record = string_at(data, "type");
        if (is(record, "event") && is(string_at(data, "event"), "nan_loss"))
            raise("nan_loss", "the loss became NaN or infinite; the job stopped without a checkpoint", event_time);
        if (is(record, "config")) {
            if (const auto config = data.find("config"); config != data.end() && config->is_object())
                if (const std::string left_out = catalog_.set_config(job_, *config); !left_out.empty())
                    raise("config_truncated", "the job's config record was too large: " + left_out, event_time);
            if (const auto goals = data.find("goals"); goals != data.end() && goals->is_object())
                for (auto it = goals->begin(); it != goals->end(); ++it)
                    if (it->is_string())
                        catalog_.set_goal(job_, it.key(), goal_from(it->get_ref<const std::string&>()));
            return;
        }
        int64_t step = 0;
        if (!integer_at(data, "step", step))
            return;
        if (is(record, "checkpoint")) {
            const std::string* path = string_at(data, "path");
            checkpoint_.reset();
            checkpoint_.bind(1, job_).bind(2, step).bind(3, path ? *path : "").bind(4, event_time);
            checkpoint_.step();
            // Counted when it is not one the catalog has already.
            checkpoints_ += sqlite3_changes(db_.handle()) > 0 ? 1 : 0;
            return;
        }
        if (is(record, "metric")) {
            for (auto it = data.begin(); it != data.end(); ++it) {
                const std::string& key = it.key();
                // A null (a value the worker dropped as out of range) or a string is no point on a curve.
                if (it->is_number() && key != "step" && key != "time" && key != "v" && key != "epoch" &&
                    std::isfinite(it->get<double>()))
                    add_point(key, step, it->get<double>());
            }
            // When the step was reached, for the wall-time, relative-time and spend x-axes (xaxis.h).
            double record_time = event_time;
            number_at(data, "time", record_time);
            if (record_time > 0 && std::isfinite(record_time))
                add_point("_time", step, record_time);
            number_at(data, "loss", loss_);
            number_at(data, "progress", progress_);
        } else if (is(record, "eval")) {
            const std::string* split_name = string_at(data, "split");
            const std::string split = split_name ? *split_name : "val";
            double value = 0;
            // A regression reports its error as rmse and mae and its fit as r2, beside loss (its MSE).
            for (const char* key : {"loss", "accuracy", "rmse", "mae", "r2"})
                if (number_at(data, key, value))
                    add_point(split + "/" + key, step, value);
            if (split == "val")
                number_at(data, "accuracy", accuracy_);
            if (data.contains("confusion") || data.contains("pairs")) {
                std::string why, examples_why;
                if (const json kept = evaluation_to_keep(data, why, examples_why); !kept.is_null()) {
                    int64_t epoch = 0;
                    integer_at(data, "epoch", epoch);
                    evaluation_.reset();
                    evaluation_.bind(1, job_).bind(2, seq).bind(3, split).bind(4, step).bind(5, epoch);
                    evaluation_.bind(6, event_time).bind(7, kept.dump());
                    evaluation_.step();
                    if (!examples_why.empty())
                        evaluation_dropped("an eval record's examples were not kept: " + examples_why, event_time);
                } else {
                    evaluation_dropped(std::string("an eval record's ") +
                                           (data.contains("confusion") ? "confusion matrix" : "pairs") +
                                           " was not kept: " + why,
                                       event_time);
                }
            }
        }
    } else if (*type == "telemetry") {
        int64_t t = 0; // telemetry is keyed by milliseconds
        if (!integer_at(event, "time", t, 1000.0))
            return;
        double value = 0;
        for (const char* key : {"cpu_percent", "rss_mb", "spend"})
            if (number_at(data, key, value))
                add_point(std::string("telemetry/") + key, t, value);
        if (const auto gpus = data.find("gpus"); gpus != data.end() && gpus->is_array())
            for (const auto& gpu : *gpus) {
                int64_t index = 0;
                if (!gpu.is_object() || !integer_at(gpu, "index", index) || index < 0 || index > 1024)
                    continue;
                const std::string prefix = "telemetry/gpu" + std::to_string(index) + "/";
                for (const char* key : {"utilization", "memory_used_mb", "power_w", "temperature_c"})
                    if (number_at(gpu, key, value))
                        add_point(prefix + key, t, value);
                double used = 0, total = 0;
                if (number_at(gpu, "memory_used_mb", used) && number_at(gpu, "memory_total_mb", total) && total > 0)
                    add_point(prefix + "memory_percent", t, 100.0 * used / total);
            }
        number_at(data, "spend", spend_);
    } else if (*type == "log") {
        double time = 0;
        number_at(event, "time", time);
        const std::string* stream = string_at(data, "stream");
        const std::string* line = string_at(data, "line");
        log_.reset();
        log_.bind(1, job_).bind(2, seq).bind(3, time).bind(4, stream ? *stream : "").bind(5, line ? *line : "");
        log_.step();
    } else if (*type == "state") {
        state_update_ = data;
        state_time_ = event_time;
        if (is(string_at(data, "state"), "running") && first_running_ == 0)
            first_running_ = event_time;
        if (is(string_at(data, "state"), "failed")) {
            const std::string* reason = string_at(data, "reason");
            raise("failed", "job failed: " + (reason ? *reason : std::string("no reason given")), event_time);
        }
    } else if (*type == "capture") {
        const std::string* part = string_at(data, "part");
        if (is(part, "code") || is(part, "environment")) {
            // A run that restarts with nothing changed (a re-adopted worker's re-send, a resume) adds no row.
            const std::string text = data.dump();
            same_capture_.reset();
            same_capture_.bind(1, job_).bind(2, *part);
            if (same_capture_.step() && same_capture_.text_view(0) == text)
                return;
            capture_.reset();
            capture_.bind(1, job_).bind(2, seq).bind(3, *part).bind(4, event_time).bind(5, text);
            capture_.step();
        }
    } else if (*type == "warning") {
        const std::string* kind = string_at(data, "alert");
        const std::string* message = string_at(data, "message");
        if (kind)
            raise(*kind, message ? *message : *kind, event_time);
    }
}

namespace {

// A number of simdjson's DOM as nlohmann's get<double>() gives it; false for any other element.
bool dom_number(simdjson::dom::element element, double& out) {
    switch (element.type()) {
    case simdjson::dom::element_type::INT64:
        out = static_cast<double>(element.get_int64().value_unsafe());
        return true;
    case simdjson::dom::element_type::UINT64:
        out = static_cast<double>(element.get_uint64().value_unsafe());
        return true;
    case simdjson::dom::element_type::DOUBLE:
        out = element.get_double().value_unsafe();
        return true;
    default:
        return false;
    }
}

// integer_at's rule for a DOM number.
bool dom_integer(simdjson::dom::element element, int64_t& out) {
    double value = 0;
    return dom_number(element, value) && whole_number(value, out);
}

bool dom_is_string(simdjson::dom::element element, std::string_view expected) {
    std::string_view text;
    return element.get_string().get(text) == simdjson::SUCCESS && text == expected;
}

} // namespace

// What event() does with {"seq": N, "time": T, "type": "record", "data": {"type": "metric", "step": S, ...}}, read
// straight from the DOM (no nlohmann::json built): nearly every event a training job sends. Any other event, or one
// with anything out of the ordinary (a key given twice, whose meaning nlohmann and simdjson differ on; a seq or step
// that is not a plain number; a "time" that is not a number; over 64 keys) returns false with nothing done, for
// event() to take. tests/model: Catalog.TheFastPathIngestsWhatTheGeneralOneDoes.
bool Catalog::Ingestion::plain_metric(simdjson::dom::object event) {
    constexpr size_t kMostKeys = 64;
    std::optional<simdjson::dom::element> seq_element, time_element, type_element, data_element;
    for (const simdjson::dom::key_value_pair field : event) {
        std::optional<simdjson::dom::element>* slot = field.key == "seq"    ? &seq_element
                                                      : field.key == "time" ? &time_element
                                                      : field.key == "type" ? &type_element
                                                      : field.key == "data" ? &data_element
                                                                            : nullptr;
        if (slot) {
            if (*slot)
                return false;
            *slot = field.value;
        }
    }
    int64_t seq_number = 0;
    double event_time = 0;
    simdjson::dom::object data;
    if (!seq_element || !dom_integer(*seq_element, seq_number) || !type_element ||
        !dom_is_string(*type_element, "record") || !data_element ||
        data_element->get_object().get(data) != simdjson::SUCCESS || data.size() > kMostKeys ||
        (time_element && !dom_number(*time_element, event_time)))
        return false;
    std::array<std::string_view, kMostKeys> keys;
    size_t count = 0;
    std::optional<simdjson::dom::element> record, step_element, record_time_element;
    for (const simdjson::dom::key_value_pair field : data) {
        for (size_t i = 0; i < count; ++i)
            if (keys[i] == field.key)
                return false;
        keys[count++] = field.key;
        if (field.key == "type")
            record = field.value;
        else if (field.key == "step")
            step_element = field.value;
        else if (field.key == "time")
            record_time_element = field.value;
    }
    int64_t step = 0;
    if (!record || !dom_is_string(*record, "metric") || !step_element || !dom_integer(*step_element, step))
        return false;
    int64_t seq = 0;
    if (!take_seq(seq_number, seq))
        return true; // already ingested: re-delivery
    double value = 0;
    for (const simdjson::dom::key_value_pair field : data) {
        // A null (a value the worker dropped as out of range) or a string is no point on a curve.
        if (field.key != "step" && field.key != "time" && field.key != "v" && field.key != "epoch" &&
            dom_number(field.value, value) && std::isfinite(value))
            add_point(field.key, step, value);
    }
    double record_time = event_time;
    if (record_time_element)
        dom_number(*record_time_element, record_time);
    if (record_time > 0 && std::isfinite(record_time))
        add_point("_time", step, record_time);
    for (const simdjson::dom::key_value_pair field : data)
        if (field.key == "loss")
            dom_number(field.value, loss_);
        else if (field.key == "progress")
            dom_number(field.value, progress_);
    return true;
}

int64_t Catalog::Ingestion::finish() {
    for (auto& [name, list] : points_) {
        const int64_t series_id = catalog_.series(job_, name, true);
        catalog_.store_->append(series_id, list);
        if (name.empty() || name[0] != '_') // "_time" and the like are the catalog's own, not curves with a summary
            catalog_.summarise(job_, series_id, name, list);
    }
    Statement update =
        db_.prepare("UPDATE jobs SET last_seq=?, loss=COALESCE(?, loss), accuracy=COALESCE(?, accuracy), "
                    "progress=COALESCE(?, progress), spend=COALESCE(?, spend), state=COALESCE(?, state), "
                    "reason=COALESCE(?, reason), changed=? WHERE id=?");
    update.bind(1, last_);
    auto bind_number = [&](int index, double value) {
        if (std::isnan(value))
            update.bind_null(index);
        else
            update.bind(index, value);
    };
    bind_number(2, loss_);
    bind_number(3, accuracy_);
    bind_number(4, progress_);
    bind_number(5, spend_);
    const std::string* state = state_update_ ? string_at(*state_update_, "state") : nullptr;
    if (state_update_) {
        const std::string* reason = string_at(*state_update_, "reason");
        update.bind(6, state ? *state : "unknown").bind(7, reason ? *reason : "");
    } else {
        update.bind_null(6);
        update.bind_null(7);
    }
    update.bind(8, catalog_.next_revision()).bind(9, job_);
    update.step();
    if (state) {
        // When it first ran and when it ended, by the worker's clock (a resumed job keeps its first start; one that
        // runs again after it ended has no end yet).
        if (first_running_ > 0) {
            Statement started = db_.prepare("UPDATE jobs SET started=? WHERE id=? AND started=0");
            started.bind(1, first_running_).bind(2, job_);
            started.step();
        }
        Statement finished = db_.prepare("UPDATE jobs SET finished=? WHERE id=?");
        finished.bind(1, is_finished(*state) ? state_time_ : 0.0).bind(2, job_);
        finished.step();
    }
    return last_;
}

int64_t Catalog::ingest(int64_t job, const std::vector<json>& events) {
    Ingestion ingestion(*this, job);
    for (const json& event : events)
        ingestion.event(event);
    return ingestion.finish();
}

Catalog::Ingested Catalog::ingest_text(int64_t job, std::string_view events) {
    Ingested ingested;
    // The writer thread's parser, its buffers kept for the next batch.
    simdjson::dom::parser& parser = thread_parser();
    simdjson::dom::element parsed;
    simdjson::dom::array array;
    json fallback;
    if (const simdjson::error_code code = parser.parse(events.data(), events.size()).get(parsed);
        code != simdjson::SUCCESS) {
        // What simdjson refuses and nlohmann reads (an integer past uint64, nesting past 1,024 levels) goes the
        // general way.
        fallback = json::parse(events, nullptr, false);
        if (!fallback.is_array()) {
            ingested.error = std::string("the events are not a JSON array (") + simdjson::error_message(code) + ")";
            return ingested;
        }
    } else if (parsed.get_array().get(array) != simdjson::SUCCESS) {
        ingested.error = "the events are not a JSON array";
        return ingested;
    }
    Ingestion ingestion(*this, job);
    if (fallback.is_array()) {
        for (const json& event : fallback)
            ingestion.event(event);
    } else {
        for (const simdjson::dom::element element : array) {
            simdjson::dom::object object;
            if (element.get_object().get(object) == simdjson::SUCCESS && ingestion.plain_metric(object)) {
                ++ingested.plain;
                continue;
            }
            ingestion.event(nlohmann_of(element));
        }
    }
    ingested.last_seq = ingestion.finish();
    ingested.checkpoints = ingestion.checkpoints();
    return ingested;
}

void Catalog::append_points(int64_t job, const std::string& name, const std::vector<MetricPoint>& points) {
    if (points.empty())
        return;
    const int64_t series_id = series(job, name, true);
    store_->append(series_id, points);
    if (name.empty() || name[0] != '_')
        summarise(job, series_id, name, points);
    touch(job);
}

void Catalog::append_histograms(int64_t job, const std::string& name, int64_t first_seq,
                                std::span<const HistogramView> histograms) {
    histograms_->append(job, name, first_seq, histograms);
}

void Catalog::set_outcome(int64_t job, const std::string& state, const std::string& reason, double started,
                          double finished) {
    Statement update = db_.prepare("UPDATE jobs SET state=?, reason=?, started=?, finished=? WHERE id=?");
    update.bind(1, state).bind(2, reason).bind(3, started).bind(4, finished).bind(5, job);
    update.step();
    touch(job);
}

int64_t Catalog::next_revision() {
    Statement update = db_.prepare("UPDATE catalog_revision SET value=value + 1 RETURNING value");
    if (!update.step())
        throw std::runtime_error("the catalog has no revision counter (catalog_revision is empty); open it with "
                                 "TrainDeck to migrate it, or restore it from a backup");
    return update.integer(0);
}

void Catalog::touch(int64_t job) {
    Statement update = db_.prepare("UPDATE jobs SET changed=? WHERE id=?");
    update.bind(1, next_revision()).bind(2, job);
    update.step();
}

int64_t Catalog::revision() {
    Statement select = db_.prepare("SELECT value FROM catalog_revision");
    return select.step() ? select.integer(0) : 0;
}

std::string Catalog::set_config(int64_t job, const json& config) {
    std::map<std::string, ConfigValue> flat;
    std::string left_out = flatten_config(config, flat);
    Statement upsert = db_.prepare("INSERT OR REPLACE INTO job_config(job, key, text, number) VALUES(?, ?, ?, ?)");
    for (const auto& [key, value] : flat) {
        upsert.reset();
        upsert.bind(1, job).bind(2, key).bind(3, value.text);
        if (value.is_number())
            upsert.bind(4, value.number);
        else
            upsert.bind_null(4);
        upsert.step();
    }
    touch(job);
    return left_out;
}

void Catalog::set_goal(int64_t job, const std::string& series_name, MetricGoal goal) {
    Statement upsert = db_.prepare("INSERT INTO metric_summaries(job, name, goal) VALUES(?, ?, ?) "
                                   "ON CONFLICT(job, name) DO UPDATE SET goal=excluded.goal");
    upsert.bind(1, job).bind(2, series_name).bind(3, static_cast<int64_t>(goal));
    upsert.step();
    touch(job);
}

void Catalog::summarise(int64_t job, int64_t series_id, const std::string& series_name,
                        const std::vector<MetricPoint>& points) {
    if (points.empty())
        return;
    double low = points.front().value, high = low;
    bool ascending = true;
    for (size_t i = 0; i < points.size(); ++i) {
        low = std::min(low, points[i].value);
        high = std::max(high, points[i].value);
        if (i > 0 && points[i].step <= points[i - 1].step)
            ascending = false;
    }
    const int64_t goal = static_cast<int64_t>(default_goal(series_name));
    // The usual batch only appends: it is folded in, one statement. A new row takes the metric's default goal; an
    // existing one keeps its goal, and is updated only when the batch starts after every step it has counted (the
    // WHERE): when nothing changed, the batch went back to steps the store already had.
    if (ascending) {
        Statement upsert = db_.prepare(
            "INSERT INTO metric_summaries(job, name, last, last_step, min, max, count, goal) "
            "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) "
            "ON CONFLICT(job, name) DO UPDATE SET last=excluded.last, last_step=excluded.last_step, "
            "min=MIN(COALESCE(min, excluded.min), excluded.min), max=MAX(COALESCE(max, excluded.max), excluded.max), "
            "count=count + excluded.count "
            "WHERE metric_summaries.count = 0 OR metric_summaries.last_step < ?9");
        upsert.bind(1, job)
            .bind(2, series_name)
            .bind(3, points.back().value)
            .bind(4, points.back().step)
            .bind(5, low)
            .bind(6, high)
            .bind(7, static_cast<int64_t>(points.size()))
            .bind(8, goal)
            .bind(9, points.front().step);
        upsert.step();
        if (sqlite3_changes(db_.handle()) > 0)
            return;
    }
    // The batch repeats steps (a resumed run re-sends those after its checkpoint, and the store replaced their
    // values): folding would keep the replaced values in min, max and count. The summary is read again from the
    // series' chunk summaries (exact per chunk after the append), not from its points.
    Statement recompute = db_.prepare(
        "INSERT INTO metric_summaries(job, name, last, last_step, min, max, count, goal) "
        "SELECT ?1, ?2, (SELECT last FROM metric_chunks WHERE series=?3 ORDER BY last_step DESC LIMIT 1), "
        "COALESCE(MAX(last_step), 0), MIN(min), MAX(max), COALESCE(SUM(count), 0), ?4 FROM metric_chunks WHERE "
        "series=?3 "
        "ON CONFLICT(job, name) DO UPDATE SET last=excluded.last, last_step=excluded.last_step, min=excluded.min, "
        "max=excluded.max, count=excluded.count");
    recompute.bind(1, job).bind(2, series_name).bind(3, series_id).bind(4, goal);
    recompute.step();
}

namespace {

// Runs `sql` (job, tag) for each tag, trimmed; blank tags are skipped.
void for_each_tag(Database& db, const char* sql, int64_t job, const std::vector<std::string>& tags) {
    Statement statement = db.prepare(sql);
    for (const std::string& tag : tags) {
        const size_t from = tag.find_first_not_of(" \t\r\n");
        if (from == std::string::npos)
            continue;
        statement.reset();
        statement.bind(1, job).bind(2, std::string_view(tag).substr(from, tag.find_last_not_of(" \t\r\n") - from + 1));
        statement.step();
    }
}

} // namespace

void Catalog::add_tags(int64_t job, const std::vector<std::string>& tags) {
    for_each_tag(db_, "INSERT OR IGNORE INTO job_tags(job, tag) VALUES(?, ?)", job, tags);
    touch(job);
}

void Catalog::remove_tags(int64_t job, const std::vector<std::string>& tags) {
    for_each_tag(db_, "DELETE FROM job_tags WHERE job=? AND tag=?", job, tags);
    touch(job);
}

// One column of a job's row, and the job's new revision. `column` is one of ours, never outside input.
template <typename Value>
void Catalog::update_job(int64_t job, const char* column, const Value& value) {
    Statement update = db_.prepare(std::string("UPDATE jobs SET ") + column + "=? WHERE id=?");
    update.bind(1, value).bind(2, job);
    update.step();
    touch(job);
}

void Catalog::set_note(int64_t job, const std::string& note) { update_job(job, "note", std::string_view(note)); }
void Catalog::set_starred(int64_t job, bool starred) { update_job(job, "starred", int64_t(starred)); }
void Catalog::set_archived(int64_t job, bool archived) { update_job(job, "archived", int64_t(archived)); }
void Catalog::set_deleted(int64_t job, bool deleted) { update_job(job, "deleted", deleted ? wall_seconds() : 0.0); }

std::vector<int64_t> Catalog::purge_deleted() {
    std::vector<int64_t> gone;
    {
        Statement select = db_.prepare("SELECT id FROM jobs WHERE deleted > 0");
        while (select.step())
            gone.push_back(select.integer(0));
    }
    for (const int64_t job : gone) {
        for (const char* sql : {"DELETE FROM metric_chunk_data WHERE series IN (SELECT id FROM series WHERE job=?1)",
                                "DELETE FROM metric_chunks WHERE series IN (SELECT id FROM series WHERE job=?1)",
                                "DELETE FROM series WHERE job=?1", "DELETE FROM job_logs WHERE job=?1",
                                "DELETE FROM job_config WHERE job=?1", "DELETE FROM metric_summaries WHERE job=?1",
                                "DELETE FROM job_tags WHERE job=?1", "DELETE FROM checkpoints WHERE job=?1",
                                "DELETE FROM artifacts WHERE job=?1", "DELETE FROM budgets WHERE job=?1",
                                "DELETE FROM alerts WHERE job=?1", "DELETE FROM import_sources WHERE job=?1",
                                "DELETE FROM import_series WHERE job=?1", "DELETE FROM histogram_chunks WHERE job=?1",
                                "DELETE FROM images WHERE job=?1", "DELETE FROM captures WHERE job=?1",
                                "DELETE FROM evaluations WHERE job=?1", "DELETE FROM jobs WHERE id=?1"}) {
            Statement remove = db_.prepare(sql);
            remove.bind(1, job);
            remove.step();
        }
    }
    if (!gone.empty()) {
        // A file's path stays while any image is left (which files those name is inside their chunks).
        db_.exec("DELETE FROM image_files WHERE NOT EXISTS (SELECT 1 FROM images)");
        discard_caches(); // the series store's open chunks may name series that are gone
    }
    return gone;
}

void Catalog::save_view(const SavedView& view) {
    Statement upsert = db_.prepare("INSERT OR REPLACE INTO saved_views(name, query, columns, grouping, chart, created) "
                                   "VALUES(?, ?, ?, ?, ?, ?)");
    upsert.bind(1, view.name)
        .bind(2, view.query)
        .bind(3, view.columns)
        .bind(4, view.grouping)
        .bind(5, view.chart)
        .bind(6, wall_seconds());
    upsert.step();
}

void Catalog::delete_view(const std::string& name) {
    Statement remove = db_.prepare("DELETE FROM saved_views WHERE name=?");
    remove.bind(1, name);
    remove.step();
}

std::vector<Catalog::SavedView> Catalog::views() {
    std::vector<SavedView> out;
    Statement select = db_.prepare("SELECT name, query, columns, grouping, chart FROM saved_views ORDER BY name");
    while (select.step())
        out.push_back({select.text(0), select.text(1), select.text(2), select.text(3), select.text(4)});
    return out;
}

std::optional<RunRecord> Catalog::run(int64_t id) {
    std::vector<RunRecord> found = runs(0, nullptr, true, id);
    if (found.empty())
        return std::nullopt;
    return std::move(found.front());
}

std::vector<RunRecord> Catalog::runs(int64_t after_revision, int64_t* revision_out, bool details, int64_t only) {
    // One read transaction: the revision and the rows are of the same snapshot, so nothing committed between the
    // two reads is skipped next time.
    const bool own_transaction = sqlite3_get_autocommit(db_.handle()) != 0;
    if (own_transaction)
        db_.exec("BEGIN");
    std::vector<RunRecord> runs;
    try {
        const int64_t now = revision();
        const std::string changed =
            std::string(after_revision > 0 ? " changed > ?1" : " 1") + (only > 0 ? " AND id = ?2" : "");
        {
            Statement select =
                db_.prepare("SELECT id, name, state, reason, backend, note, progress, spend, created, started, "
                            "finished, starred, archived, deleted, remote_id, loss, accuracy FROM jobs WHERE" +
                            changed + " ORDER BY id");
            if (after_revision > 0)
                select.bind(1, after_revision);
            if (only > 0)
                select.bind(2, only);
            while (select.step()) {
                RunRecord run;
                run.id = select.integer(0);
                run.name = select.text(1);
                run.state = select.text(2);
                run.reason = select.text(3);
                run.backend = select.text(4);
                run.note = select.text(5);
                run.progress = select.real(6);
                run.spend = select.real(7);
                run.created = select.real(8);
                run.started = select.real(9);
                run.finished = select.real(10);
                run.starred = select.integer(11) != 0;
                run.archived = select.integer(12) != 0;
                run.deleted = select.real(13) > 0;
                run.remote_id = select.text(14);
                run.loss = select.is_null(15) ? NAN : select.real(15);
                run.accuracy = select.is_null(16) ? NAN : select.real(16);
                runs.push_back(std::move(run));
            }
        }
        if (details && !runs.empty()) {
            // One run's rows by its key (after_revision only chose whether it is there); else the changed runs'.
            const std::string of_changed = only > 0 ? " WHERE job = ?2"
                                           : after_revision > 0
                                               ? " WHERE job IN (SELECT id FROM jobs WHERE changed > ?1)"
                                               : "";
            // Rows come in job order (each table's key starts with the job), as runs do: a cursor finds each row's run
            // without a lookup; a row out of order is found by a binary search.
            auto each = [&](const std::string& sql, auto&& fn) {
                Statement select = db_.prepare(sql + of_changed + " ORDER BY job");
                if (only > 0)
                    select.bind(2, only);
                else if (after_revision > 0)
                    select.bind(1, after_revision);
                size_t at = 0;
                while (select.step()) {
                    const int64_t job = select.integer(0);
                    if (at >= runs.size() || runs[at].id != job) {
                        at = static_cast<size_t>(
                            std::lower_bound(runs.begin(), runs.end(), job,
                                             [](const RunRecord& run, int64_t id) { return run.id < id; }) -
                            runs.begin());
                        if (at >= runs.size() || runs[at].id != job)
                            continue; // a row of a job that is not (or no longer) there
                    }
                    fn(runs[at], select);
                }
            };
            each("SELECT job, key, text, number FROM job_config", [](RunRecord& run, Statement& row) {
                run.config.emplace_hint(run.config.end(), row.text(1),
                                        ConfigValue{row.text(2), row.is_null(3) ? NAN : row.real(3)});
            });
            each("SELECT job, name, last, last_step, min, max, count, goal FROM metric_summaries",
                 [](RunRecord& run, Statement& row) {
                     MetricSummary summary;
                     summary.last = row.is_null(2) ? NAN : row.real(2);
                     summary.last_step = row.integer(3);
                     summary.min = row.is_null(4) ? NAN : row.real(4);
                     summary.max = row.is_null(5) ? NAN : row.real(5);
                     summary.count = row.integer(6);
                     summary.goal = static_cast<MetricGoal>(std::clamp<int64_t>(row.integer(7), 0, 2));
                     summary.best = summary.goal == MetricGoal::minimize   ? summary.min
                                    : summary.goal == MetricGoal::maximize ? summary.max
                                                                           : NAN;
                     run.summaries.emplace_hint(run.summaries.end(), row.text(1), summary);
                 });
            each("SELECT job, tag FROM job_tags",
                 [](RunRecord& run, Statement& row) { run.tags.push_back(row.text(1)); });
        }
        if (revision_out)
            *revision_out = now;
    } catch (...) {
        if (own_transaction)
            db_.exec("ROLLBACK");
        throw;
    }
    if (own_transaction)
        db_.exec("COMMIT");
    return runs;
}

CatalogWriter::CatalogWriter(Catalog& catalog) : catalog_(catalog), thread_([this] { run(); }) {}

CatalogWriter::~CatalogWriter() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    changed_.notify_all();
    thread_.join();
}

void CatalogWriter::post(int64_t job, std::vector<json> events) {
    post([job, events = std::move(events)](Catalog& catalog) { catalog.ingest(job, events); });
}

void CatalogWriter::post(std::function<void(Catalog&)> fn) {
    {
        std::lock_guard lock(mutex_);
        queue_.push_back(std::move(fn));
        ++posted_;
    }
    changed_.notify_all();
}

std::string CatalogWriter::flush() {
    std::unique_lock lock(mutex_);
    const uint64_t from = committed_, target = posted_, failures = failed_attempts_;
    drained_.wait(lock, [&] { return committed_ >= target || failed_attempts_ > failures; });
    if (committed_ < target)
        return "not written yet: " + error_;
    for (const auto& [seq, error] : refused_)
        if (seq > from && seq <= target)
            return error;
    return {};
}

std::string CatalogWriter::last_error() {
    std::lock_guard lock(mutex_);
    return error_;
}

void CatalogWriter::on_error(std::function<void(const std::string&)> handler) {
    std::lock_guard lock(mutex_);
    handler_ = std::move(handler);
}

void CatalogWriter::set_retry_limit(std::chrono::milliseconds limit) {
    std::lock_guard lock(mutex_);
    retry_limit_ = limit;
}

void CatalogWriter::report(const std::string& error) {
    std::function<void(const std::string&)> handler;
    {
        std::lock_guard lock(mutex_);
        handler = handler_;
    }
    if (handler)
        handler(error);
}

bool CatalogWriter::attempt(std::deque<std::function<void(Catalog&)>>& batch) {
    std::vector<std::pair<size_t, std::string>> refused;
    try {
        catalog_.db().exec("BEGIN IMMEDIATE");
        catalog_.forget_if_others_wrote(); // traindeck-cli may have written since the last batch
        for (size_t i = 0; i < batch.size(); ++i) {
            catalog_.db().exec("SAVEPOINT item");
            try {
                batch[i](catalog_);
            } catch (const SqliteError& e) {
                if (e.transient())
                    throw; // the whole batch waits for the database, in order
                refused.emplace_back(i, e.what());
            } catch (const std::exception& e) {
                refused.emplace_back(i, e.what());
            }
            if (!refused.empty() && refused.back().first == i) {
                catalog_.db().exec("ROLLBACK TO item");
                catalog_.discard_caches(); // what it cached may name rows that are gone now
            }
            catalog_.db().exec("RELEASE item");
        }
        catalog_.db().exec("COMMIT");
    } catch (const std::exception& e) {
        try {
            catalog_.db().exec("ROLLBACK");
        } catch (...) {
        } // SQLite may have rolled it back itself (a full disk does)
        catalog_.discard_caches();
        const std::string error = std::string("the catalog cannot be written now (") + e.what() +
                                  "); nothing is lost, it is retried until it succeeds (free disk space or close what locks it)";
        bool is_new = false;
        {
            std::lock_guard lock(mutex_);
            is_new = !failing_ || error != error_;
            error_ = error;
            failing_ = true;
            ++failed_attempts_;
        }
        drained_.notify_all();
        if (is_new)
            report(error);
        return false;
    }
    // Told before flush() returns, so whoever flushed sees the handler's news too.
    bool recovered = false;
    {
        std::lock_guard lock(mutex_);
        recovered = std::exchange(failing_, false);
    }
    if (recovered)
        report("");
    for (const auto& [index, error] : refused)
        report("a catalog write was refused and undone: " + error);
    {
        std::lock_guard lock(mutex_);
        for (const auto& [index, error] : refused) {
            error_ = "a catalog write was refused and undone: " + error;
            refused_.emplace_back(committed_ + index + 1, error_);
            if (refused_.size() > 64)
                refused_.pop_front();
        }
        committed_ += batch.size();
    }
    drained_.notify_all();
    return true;
}

void CatalogWriter::run() {
    std::deque<std::function<void(Catalog&)>> batch;
    auto backoff = std::chrono::milliseconds(100);
    for (;;) {
        {
            std::unique_lock lock(mutex_);
            changed_.wait(lock, [&] { return stop_ || !queue_.empty() || !batch.empty(); });
            if (queue_.empty() && batch.empty() && stop_)
                return;
            // After a failed attempt the failed batch goes first, then what was posted meanwhile: order is kept.
            for (auto& fn : queue_)
                batch.push_back(std::move(fn));
            queue_.clear();
        }
        if (attempt(batch)) {
            batch.clear();
            backoff = std::chrono::milliseconds(100);
            continue;
        }
        std::unique_lock lock(mutex_);
        if (stop_) {
            // Closing with a database that still refuses: what is lost here is only the console's copy; the
            // workers keep every event, and the next start asks again from the offsets that did commit.
            error_ += "; given up on closing";
            return;
        }
        changed_.wait_for(lock, backoff, [&] { return stop_; });
        backoff = std::min(backoff * 2, retry_limit_);
    }
}

} // namespace traindeck
