#pragma once
// The worker's one writer: it owns the database connection that writes, starts and watches the jobs,
// turns their output into numbered events, schedules the queue onto resource slots (with priorities and
// preemption), retries failures from their checkpoints, and meters spend. HTTP threads talk to it through
// submit()/cancel() and read what it committed through their own read-only connections.
#include "contentstore.h"
#include "jobrequest.h"
#include "slurmexecutor.h"
#include "sqlitedb.h"
#include "telemetry.h"
#include "workerconfig.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace traindeck::worker {

// Where committed event sequence numbers are announced to long-polling readers.
class EventBoard {
public:
    void publish(int64_t job, int64_t last_seq, bool finished);
    // Waits until job has an event after `after`, the job is finished, or the timeout; returns the last seq.
    int64_t wait(int64_t job, int64_t after, int timeout_ms);
    // The same for many jobs at once (one watcher, one request, one thread): waits until any of them has an event
    // after its `after` or is finished; returns the jobs that do.
    std::vector<int64_t> wait_any(const std::map<int64_t, int64_t>& after, int timeout_ms);

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    std::map<int64_t, std::pair<int64_t, bool>> jobs_;
};

// Whether a variable of the worker's own environment reaches its jobs (an allow-list: PATH, HOME, locale, TZ,
// USER, TMPDIR); the job's own env and the TRAINDECK_*/CUDA/rank variables are set by the worker on top.
bool inherited_by_jobs(const std::string& name);

class Supervisor {
public:
    Supervisor(WorkerConfig config, EventBoard& board);
    ~Supervisor();

    // Opens the database, recovers jobs left by a previous worker and starts the loop. "" or an error.
    std::string start();
    void stop();

    struct Result {
        int status = 200; // HTTP status
        nlohmann::json body;
    };
    Result submit(const JobRequest& request);
    Result cancel(int64_t job);
    // A stopped, cancelled or failed job goes back to the queue and continues from its checkpoint; a budget-stopped
    // job needs new_budget above what it spent (0 keeps the old budget).
    Result resume(int64_t job, double new_budget);

    const WorkerConfig& config() const { return config_; }
    std::string database_path() const { return config_.state_dir + "/worker.db"; }
    nlohmann::json resources();
    dataset::ContentStore& store() { return store_; }

private:
    struct Job;
    using Command = std::function<void()>;

    void loop();
    void tick(bool meter);
    void recover();
    void recover_jobs(const std::vector<Job*>& recovered);
    Job* job_from_row(const Statement& select);
    void start_job(Job& job);
    std::string keep_dataset_intact(Job& job, bool after_run);
    void ingest(Job& job);
    void check_exit(Job& job);
    void finish_run(Job& job, const std::string& state, const std::string& reason);
    void schedule();
    void meter(Job& job, double now);
    void signal_job(Job& job, const std::string& kind, int signal);
    void add_event(Job& job, const char* type, std::string_view data);
    // One transaction: `work` (a command's own statements), then every buffered event and changed job. On failure
    // the database holds none of it and memory still holds all of it, for the next commit to write.
    bool commit(const std::function<void()>& work, std::string* error = nullptr);
    void write_pending();
    void add_state_event(Job& job);
    void save_job(Job& job);
    bool submit_to_slurm(Job& job, const std::string& dir, std::string& error);
    void poll_slurm();
    bool check_slurm(Job& job);
    std::string job_dir(int64_t id) const;

    WorkerConfig config_;
    EventBoard& board_;
    Database db_;
    // The two statements of the ingest path, prepared once (after db_, so they are finalized before it closes).
    Statement insert_event_, update_job_;
    Telemetry telemetry_;
    dataset::ContentStore store_;
    std::unique_ptr<SlurmExecutor> slurm_; // set when config_.executor is "slurm"
    std::map<std::string, SlurmExecutor::State> slurm_states_;
    bool slurm_states_ok_ = false;
    std::string slurm_error_;
    SlurmExecutor::Cluster slurm_cluster_;
    double slurm_cluster_time_ = 0;
    std::map<int64_t, Job*> jobs_; // non-terminal jobs
    std::vector<bool> gpu_busy_;
    std::mutex commands_mutex_;
    std::condition_variable commands_changed_;
    std::deque<Command> commands_;
    std::thread thread_;
    Database checkpointer_db_;
    std::thread checkpointer_;
    std::atomic<bool> stopping_{false};
    std::mutex resources_mutex_;
    nlohmann::json resources_snapshot_;
    std::vector<std::pair<int64_t, std::pair<int64_t, bool>>> pending_announcements_;
    bool in_transaction_ = false;
    std::string read_buffer_;
    // Events numbered but not yet committed: their bytes in one arena (no allocation per line on the ingest path).
    struct PendingEvent {
        int64_t job, seq;
        double time;
        const char* type; // a string literal
        size_t offset, length;
    };
    std::vector<PendingEvent> pending_events_;
    std::string pending_text_;
    std::string last_commit_error_; // said once on stderr, not once per tick
    // Replies to submit/cancel wait for the commit, so that a client reading right after its reply finds the job;
    // a command whose commit failed undoes itself there. error: why the commit failed.
    std::vector<std::function<void(bool committed, const std::string& error)>> after_commit_;
};

} // namespace traindeck::worker
