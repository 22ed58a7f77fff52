#pragma once
// The worker's one writer: one thread owns the database connection that writes and every job in memory. It runs
// the commands HTTP threads post (submit, cancel, resume: each one transaction, answered after its commit) and,
// every tick, carries out what the pure pieces decide: the output each job appended, turned into numbered events
// (ingest.h); which queued jobs start and which running ones make room (scheduler.h); what an ended run means
// (exitclassification.h); spend, budget and idle policy (metering.h). Runs go through an Executor (executor.h),
// rows through the job table (jobtable.h). HTTP threads read what it committed through their own read-only
// connections, woken by the EventBoard.
#include "contentstore.h"
#include "eventboard.h"
#include "executor.h"
#include "jobrequest.h"
#include "jobstate.h"
#include "jobtable.h"
#include "sqlitedb.h"
#include "sweepcontroller.h"
#include "telemetry.h"
#include "workerconfig.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace traindeck::worker {

struct ExitDecision;

// Whether a variable of the worker's own environment reaches its jobs (an allow-list: PATH, HOME, locale, TZ,
// USER, TMPDIR); the job's own env and the TRAINDECK_*/CUDA/rank variables are set by the worker on top.
bool inherited_by_jobs(std::string_view name);

class Supervisor : private SweepHost {
public:
    Supervisor(WorkerConfig config, EventBoard& board);
    ~Supervisor() override;

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
    // Deletes a finished job for good: its row and events, then its folder (checkpoints, logs, exports). An active
    // job is refused (409: cancel it first). The reply says how many bytes of files went.
    Result remove(int64_t job);
    // What this machine costs and when a job counts as idle, changed while the worker runs (the console's Settings):
    // {"price_base", "price_gpu", "price_cpu" (per hour, ≥ 0), "idle_percent" (0–100), "idle_seconds" (≥ 10),
    // "idle_stop"}, any of them; refused whole (400, the field named) when one is wrong. From the next meter tick on;
    // the answer is the policy now (policy()).
    Result set_policy(const nlohmann::json& changes);
    Result get_policy(); // read on the loop's thread, which alone writes it
    // Sweeps (sweepcontroller.h): each command one transaction on the loop's thread, answered after its commit.
    Result sweep_command(std::function<SweepController::Answer(SweepController&)> command);

    const WorkerConfig& config() const { return config_; }
    std::string database_path() const { return config_.state_dir + "/worker.db"; }
    nlohmann::json resources();
    dataset::ContentStore& store() { return store_; }

private:
    nlohmann::json policy() const; // on the loop's thread
    struct Job;
    using Command = std::function<void()>;
    using Reply = std::shared_ptr<std::promise<Result>>;

    // Runs `command` on the loop's thread, as one transaction, and waits (30 s at most) for the reply it sets.
    Result call(std::function<void(const Reply&)> command);
    // Replies once the command's transaction is over: committed_result() when it committed; otherwise the events
    // the command buffered are dropped, undo() takes back what it did in memory, and the reply says what failed
    // (507 when the disk is full) and what to do.
    void reply_after_commit(const Reply& reply, std::function<Result()> committed_result, std::function<void()> undo,
                            std::string what_failed, std::string what_to_do);

    void loop();
    void tick(bool meter);
    void recover();
    void recover_jobs(std::vector<std::unique_ptr<Job>> recovered);
    std::unique_ptr<Job> job_from_row(const Statement& select);
    void start_job(Job& job);
    std::string keep_dataset_intact(Job& job, bool after_run);
    void ingest(Job& job, bool run_ended = false);
    // Everything the job has written that is not read yet (a run that ended).
    void ingest_all(Job& job, bool exited); // exited: the shim recorded the run's end
    void ingest_captures(Job& job, const std::string& dir);
    bool copy_code_snapshot(Job& job, const std::string& dir, std::string& error);
    void check_exit(Job& job);
    void end_run(Job& job, const ExitDecision& decision);
    void finish_run(Job& job, JobState state, const std::string& reason);
    void schedule();
    void meter(Job& job, double now);
    void signal_job(Job& job, StopReason kind, int signal);
    // SweepHost: what the sweeps' controller does with its trials' jobs.
    int64_t start_trial(const JobRequest& request) override;
    std::string resume_trial(int64_t job, double budget, const std::string& reason) override;
    void stop_trial(int64_t job, StopReason why, bool kill) override;
    TrialJob trial_job(int64_t job) override;
    int gpu_count() const override { return static_cast<int>(gpu_used_.size()); }
    // A new queued job from a checked request (its row, folder and first state event); returns its id.
    int64_t add_job(std::unique_ptr<Job> job);
    // The checks of a resume: the job as its row has it, ready to requeue, or null and why not in *refused.
    std::unique_ptr<Job> resumable(int64_t id, double new_budget, Result& refused);
    // Back to the queue, to continue from its last checkpoint.
    void requeue(std::unique_ptr<Job> job, const std::string& reason);
    void add_event(Job& job, const char* type, std::string_view data);
    // One transaction: `work` (a command's own statements), then every buffered event and changed job. On failure
    // the database holds none of it and memory still holds all of it, for the next commit to write.
    bool commit(const std::function<void()>& work, std::string* error = nullptr);
    void write_pending();
    void checkpoint_wal(); // on the checkpointer thread, its own connection
    void add_state_event(Job& job);
    void save_job(Job& job);
    std::string job_dir(int64_t id) const;

    WorkerConfig config_;
    EventBoard& board_;
    Database db_;
    // The two statements of the ingest path, prepared once (after db_, so they are finalized before it closes).
    Statement insert_block_, update_job_;
    Telemetry telemetry_;
    dataset::ContentStore store_;
    std::unique_ptr<Executor> executor_; // local processes or a cluster (config_.executor)
    std::unique_ptr<SweepController> sweeps_;
    std::map<int64_t, std::unique_ptr<Job>> jobs_; // jobs not yet finished
    std::vector<int> gpu_used_; // one entry a GPU: the scheduler's units its jobs hold (gpu_units = full)
    std::mutex commands_mutex_;
    std::condition_variable commands_changed_;
    std::deque<Command> commands_;
    std::thread thread_;
    static constexpr int64_t kWalRestartBytes = 64 << 20; // the log is started again past this (checkpoint_wal)
    int64_t page_size_ = 4096;
    std::atomic<bool> wal_restart_wanted_{false}; // set by checkpoint_wal, done by the loop's next commit
    Database checkpointer_db_;
    std::thread checkpointer_;
    std::atomic<bool> stopping_{false};
    std::mutex resources_mutex_;
    nlohmann::json resources_snapshot_;
    nlohmann::json engine_; // traindeck-train's build, asked once (loop thread)
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
