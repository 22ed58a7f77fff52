#pragma once
// The console's catalog: one SQLite file (WAL) under the XDG data folder holding backends, datasets, jobs,
// their events' metrics and telemetry, checkpoints, artifacts, prices, budgets and alerts. One writer thread
// (CatalogWriter) ingests; any number of readers query through connections of their own.
#include "histogramstore.h"
#include "runrecord.h"
#include "seriesstore.h"
#include "sqlitedb.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace traindeck {

class Catalog {
public:
    static constexpr int kSchemaVersion = 13;

    // Opens or creates; migrates an older schema; refuses a damaged or newer file with a message that says what
    // to do. read_only connections are for readers (views, item models).
    std::string open(const std::string& path, bool read_only = false);
    Database& db() { return db_; }
    const std::string& path() const { return path_; }
    int schema_version();

    // Registers a job the console submitted to a backend; returns the catalog's id.
    int64_t add_job(const std::string& name, const std::string& backend, const std::string& remote_id,
                    const nlohmann::json& spec);

    // Ingests worker events ({"seq","time","type","data"}) for a job. Events at or below the job's stored last_seq
    // are skipped, so a re-delivery after a reconnect or restart never duplicates anything. Metric records become
    // points on series named by their keys ("loss", "val/accuracy", "telemetry/cpu_percent", ...). Call inside a
    // transaction (CatalogWriter does). Returns the job's new last_seq.
    int64_t ingest(int64_t job, const std::vector<nlohmann::json>& events);
    // The same from the events' JSON text, a worker's "events" array as it came: simdjson reads it, the plain metric
    // records straight into points (no nlohmann::json built for them) and the rest as ingest() takes them; text that
    // simdjson refuses and nlohmann reads (an integer past uint64, nesting past 1,024 levels) is read by nlohmann.
    // error says why when the text is no JSON array (nothing is ingested then). checkpoints: the checkpoints the
    // catalog did not have; plain: the events taken the fast way (tests, benches).
    struct Ingested {
        int64_t last_seq = 0;
        int checkpoints = 0;
        int plain = 0;
        std::string error;
    };
    Ingested ingest_text(int64_t job, std::string_view events);
    int64_t last_seq(int64_t job);
    // Points of one series as a reader already has them (an imported run's; a worker's come through ingest()): appended
    // in order, a step already stored replaced (SeriesStore's rule), the summary kept as ingest keeps it. Non-finite
    // values are the caller's to leave out, as ingest does. Call inside a transaction.
    void append_points(int64_t job, const std::string& series, const std::vector<MetricPoint>& points);
    // Histograms of one series as seq first_seq, first_seq + 1, ... (HistogramStore's rule: those stored at these
    // seqs are replaced, the earlier ones kept). Read them with HistogramStore::read. Call inside a transaction.
    void append_histograms(int64_t job, const std::string& name, int64_t first_seq,
                           std::span<const HistogramView> histograms);
    // How a run ended and when, for runs no worker reports on (imported ones): the state in the catalog's words.
    void set_outcome(int64_t job, const std::string& state, const std::string& reason, double started, double finished);
    // The last seq in the numbering of the job's current worker (what to ask "after" when watching it).
    int64_t remote_last_seq(int64_t job);
    // Lost workers: the job is marked lost; or it moves to another backend under a new remote id, its events
    // from there continuing the same sequence (and repeated steps replacing their values).
    void mark_lost(int64_t job, const std::string& reason);
    void reassign_job(int64_t job, const std::string& backend, const std::string& remote_id, const std::string& reason);

    // Backends the user added (the local worker is implicit). Tokens are not here: they live in the keyring.
    struct BackendRow {
        std::string name, kind, url, pinned_public_key;
    };
    void add_backend(const BackendRow& backend);
    std::vector<BackendRow> backends();
    // Forgets a backend the user added (its runs keep their history). Refused (false) while it is a provider that
    // still rents a live instance: *live says how many (release them first: a forgotten provider's instances would
    // go on costing money with nothing to delete them).
    bool remove_backend(const std::string& name, int* live = nullptr);

    // The instances provider backends rented (backend/api/instanceledger.h), upserted by (provider, name);
    // instances("") lists every provider's, oldest first.
    struct InstanceRow {
        std::string provider, name, id, type, address, state, reason;
        double price_per_hour = 0;
        bool spot = false;
        double created = 0, ended = 0;
    };
    void record_instance(const InstanceRow& instance);
    std::vector<InstanceRow> instances(const std::string& provider);

    // A dataset version (by content hash); registering the same bytes again returns the existing row's id
    // (and *created tells which happened).
    struct DatasetVersionRow {
        std::string name, version, manifest, root, format, summary;
        int64_t bytes = 0, files = 0;
    };
    int64_t add_dataset_version(const DatasetVersionRow& version, bool* created = nullptr);
    void mark_dataset_uploaded(const std::string& version, const std::string& backend);
    // Files a job produced on the console's side (exports, synced checkpoints).
    int64_t add_artifact(int64_t job, const std::string& kind, const std::string& path, int64_t bytes,
                         const nlohmann::json& info);

    // The id of a job's series; 0 when it does not exist and create is false.
    int64_t series(int64_t job, const std::string& name, bool create);
    std::vector<std::string> series_names(int64_t job); // the curves (not the catalog's own "_time")
    // Alerts raised by ingest() since the last call (also stored in the alerts table): NaN loss, job failed,
    // budget 80 % and 100 %, idle GPU.
    struct Alert {
        int64_t job = 0;
        std::string kind, message;
    };
    std::vector<Alert> take_alerts() { return std::exchange(alerts_, {}); }

    // A run's configuration, merged key by key into what it has (a later "config" record overrides a key; keys it
    // does not name stay). Returns what was left out over the limits of runconfig.h ("" when nothing was).
    std::string set_config(int64_t job, const nlohmann::json& config);
    // Which way is better for a metric of this job (a "config" record's "goals"); recomputes the summary's best.
    void set_goal(int64_t job, const std::string& series, MetricGoal goal);

    // Run hygiene. Tags are trimmed and unique; an empty tag is ignored. A deleted run is hidden everywhere until
    // it is restored (undo) or purged (purge_deleted: its rows go for good; the console does it at its next start).
    void add_tags(int64_t job, const std::vector<std::string>& tags);
    void remove_tags(int64_t job, const std::vector<std::string>& tags);
    void set_note(int64_t job, const std::string& note);
    void set_starred(int64_t job, bool starred);
    void set_archived(int64_t job, bool archived);
    void set_deleted(int64_t job, bool deleted);
    std::vector<int64_t> purge_deleted(); // the ids that went

    // Saved views of the runs table: a query, its columns, grouping and chart settings (JSON texts the console
    // reads; the catalog only keeps them).
    struct SavedView {
        std::string name, query, columns, grouping, chart;
    };
    void save_view(const SavedView& view); // replaces a view of the same name
    void delete_view(const std::string& name);
    std::vector<SavedView> views();

    // The runs whose rows changed after `after_revision` (every run for 0), with their config, summaries and tags,
    // deleted ones included (flagged, so a reader drops them); and the revision to ask after next time. Every
    // change to a job (ingest, config, hygiene) moves it to a new revision, so a reader re-reads only those runs.
    // details = false: the jobs' own fields only (a table's first paint), no config, summaries or tags.
    // only > 0: that run alone (when it changed after after_revision), read by its key.
    std::vector<RunRecord> runs(int64_t after_revision, int64_t* revision, bool details = true, int64_t only = 0);
    // One run with its details, deleted or not; nullopt when the catalog has none of that id.
    std::optional<RunRecord> run(int64_t id);
    int64_t revision(); // a counter: it only grows (purging deleted runs does not move it back)

    // At the start of a write transaction: when another connection (another process: traindeck-cli beside the
    // console) has committed since this one last looked (PRAGMA data_version moved), what this one cached of the
    // database (a series' open chunk) may be stale, and is forgotten before anything is written from it.
    void forget_if_others_wrote();
    // After a rolled-back transaction: forget what the writer cached of the database.
    void discard_caches();

private:
    class Ingestion; // one ingest()'s batch (catalog.cpp)

    void migrate(int from);
    void touch(int64_t job); // the job's rows changed: a new revision
    int64_t next_revision(); // moves the catalog's revision counter on and returns it (never falls back)
    template <typename Value>
    void update_job(int64_t job, const char* column, const Value& value);
    // Folds a batch of one series' points (already appended to the store) into its summary row; a batch that
    // replaced stored steps has the summary recomputed from the series' chunks instead.
    void summarise(int64_t job, int64_t series_id, const std::string& series, const std::vector<MetricPoint>& points);

    Database db_;
    std::string path_;
    std::unique_ptr<SeriesStore> store_;
    std::unique_ptr<HistogramStore> histograms_;
    int64_t data_version_ = -1; // PRAGMA data_version when this connection last wrote (forget_if_others_wrote)
    std::vector<Alert> alerts_;
};

// The one writer: batches are queued from any thread and committed together, a transaction per wake-up.
// Nothing posted is dropped silently. A batch the database cannot take now (disk full, I/O error, locked) is
// rolled back whole and retried, in order, with the work posted meanwhile, until it commits; a closure that
// throws anything else is undone alone (a savepoint each) and reported, and the rest of its batch commits.
class CatalogWriter {
public:
    explicit CatalogWriter(Catalog& catalog);
    ~CatalogWriter();
    void post(int64_t job, std::vector<nlohmann::json> events);
    // Runs fn on the writer thread inside the next transaction (job updates, alerts, ...).
    void post(std::function<void(Catalog&)> fn);
    // Returns once everything posted before it is committed (""), or once an attempt at it failed: then why
    // (a refused closure's error, or "not written yet: ..." while a failing batch waits for its retry).
    std::string flush();
    std::string last_error();
    // Called on the writer thread with each new problem, and with "" once writes succeed again after one.
    void on_error(std::function<void(const std::string&)> handler);
    // Retries back off from 100 ms to this (5 s by default; tests shorten it).
    void set_retry_limit(std::chrono::milliseconds limit);

private:
    void run();
    // One attempt at the batch: true when committed; false (rolled back, error_ set) when it must be retried.
    bool attempt(std::deque<std::function<void(Catalog&)>>& batch);
    void report(const std::string& error);

    Catalog& catalog_;
    std::mutex mutex_;
    std::condition_variable changed_, drained_;
    std::deque<std::function<void(Catalog&)>> queue_;
    uint64_t posted_ = 0, committed_ = 0, failed_attempts_ = 0;
    // Sequence numbers (1 = the first posted) of refused closures with their errors, the latest 64.
    std::deque<std::pair<uint64_t, std::string>> refused_;
    bool stop_ = false, failing_ = false;
    std::string error_;
    std::function<void(const std::string&)> handler_;
    std::chrono::milliseconds retry_limit_{5000};
    std::thread thread_;
};

} // namespace traindeck
