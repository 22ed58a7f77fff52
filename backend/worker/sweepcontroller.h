#pragma once
// The sweeps a worker runs (README: Sweeps). Each trial is a worker job: started with its parameters, paused at an
// ASHA rung through the checkpoint path (SIGTERM, checkpoint, exit 75) and promoted later by resuming that
// checkpoint, stopped at once when it diverges, and the whole sweep stopped, every running trial checkpointed, at
// its budget. It runs on the supervisor's thread and owns no thread and no connection: its rows (sweeps,
// sweep_trials) are written in the supervisor's transactions together with the events that moved them, so a worker
// killed at any moment comes back with every trial accounted for exactly once. What to try next and whom to
// promote are backend/sweep's pure functions.
#include "jobrequest.h"
#include "jobstate.h"
#include "sqlitedb.h"
#include "sweepspec.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace traindeck::worker {

// What the controller asks of the supervisor, on the supervisor's thread, inside its transaction.
class SweepHost {
public:
    struct TrialJob {
        bool known = false;
        JobState state = JobState::queued;
        double spend = 0, gpu_seconds = 0;
    };
    virtual ~SweepHost() = default;
    // A new queued job; throws when its row cannot be written.
    virtual int64_t start_trial(const JobRequest& request) = 0;
    // A paused (stopped) trial back to the queue from its checkpoint, with a new budget (0 keeps it); "" or why not.
    virtual std::string resume_trial(int64_t job, double budget, const std::string& reason) = 0;
    // SIGTERM with a checkpoint, or SIGKILL when `kill` (a diverged trial: its checkpoint is worth nothing); what
    // its end means follows from `why` (pause, budget, cancel).
    virtual void stop_trial(int64_t job, StopReason why, bool kill = false) = 0;
    virtual TrialJob trial_job(int64_t job) = 0;
    virtual int gpu_count() const = 0;
};

class SweepController {
public:
    SweepController(Database& db, SweepHost& host);

    // The tables, created when missing (new tables only: the jobs table's schema is jobtable.h's).
    static void create_tables(Database& db);
    // Every sweep and trial as the database has them (at start; after a worker restart).
    void load();
    // What GET /v1/sweeps[/ID] answers, read through any connection: the sweeps (id 0) with their totals, or one
    // with its spec, rungs and every trial. Null when there is no such sweep.
    static nlohmann::json describe(Database& db, int64_t id);

    struct Answer {
        int status = 200;
        nlohmann::json body;
    };
    // Commands, each inside a transaction of the supervisor's.
    Answer create(const nlohmann::json& spec);
    Answer stop(int64_t sweep);   // every running trial checkpointed and stopped; resume continues them
    Answer resume(int64_t sweep); // a stopped (or budget-stopped, once its budget was raised) sweep goes on
    // {"max_trials": N, "budget": MONEY, "gpu_hours": H}: more trials or a higher cap (never lower than spent).
    Answer extend(int64_t sweep, const nlohmann::json& body);

    bool is_trial(int64_t job) const { return trial_of_job_.count(job) > 0; }
    // A metrics record a trial's job wrote (the record event's JSON): its objective, rungs and divergence.
    void on_record(int64_t job, std::string_view data);
    // A trial's job ended (or went back to the queue) in this state.
    void on_job_state(int64_t job, JobState state);
    // Starts and promotes trials into free slots, keeps the budget, notices the end. The jobs it started or
    // promoted are appended to *touched, for the supervisor to drop again if the transaction fails.
    void tick(std::vector<int64_t>* touched);
    bool has_running() const;
    // Writes the rows that changed (inside the supervisor's transaction); written() once it committed.
    void write();
    void written();
    // After a failed commit: what tick() started is gone again (the supervisor forgets those jobs); the rest stays in
    // memory, dirty, for the next commit.
    void undo_tick();
    // After any failed commit: every row is written again by the next one.
    void unwritten();

private:
    struct Trial {
        int index = 0;
        int64_t job = 0;
        sweep::Params params;
        std::vector<double> objectives; // at each rung it completed
        int rung = 0;                   // the rung it trains towards
        std::string state;              // running, pausing, paused, completed, diverged, failed, stopping, stopped
        std::string reason;
        double best = NAN, last = NAN; // the objective's best and latest values
        // The divergence metric's moving average (one batch's loss is noisy: late in training a single batch can
        // be ten times below the rest) and the lowest that average has been.
        double watched_mean = NAN, watched_best = NAN;
        double resource = 0; // epochs or steps reached
        int reports = 0;     // objective values seen (the epoch count when records carry none)
        double spend = 0, gpu_seconds = 0;
        bool dirty = false;
    };
    struct Sweep {
        int64_t id = 0;
        sweep::SweepSpec spec;
        nlohmann::json spec_json;
        std::string state; // running, stopped, budget, finished
        std::string reason;
        double created = 0, finished = 0;
        std::vector<Trial> trials;
        std::vector<double> rungs; // ASHA's resources (empty without early stopping)
        bool dirty = false;
    };

    void tick_sweep(Sweep& sweep, std::vector<int64_t>* touched);
    bool start_next(Sweep& sweep, std::vector<int64_t>* touched);
    JobRequest trial_request(const Sweep& sweep, const Trial& trial, std::string& error) const;
    double remaining_budget(const Sweep& sweep) const;
    void stop_trials(Sweep& sweep, StopReason why, const std::string& state);
    void set_state(Sweep& sweep, const std::string& state, const std::string& reason);
    Sweep* find(int64_t id);
    Trial* trial_of(int64_t job, Sweep** sweep); // the trial a job runs, and its sweep; null for any other job

    Database& db_;
    SweepHost& host_;
    std::map<int64_t, Sweep> sweeps_;
    std::map<int64_t, std::pair<int64_t, int>> trial_of_job_; // job -> (sweep, trial index)
    // What the last tick did, for undo_tick: trials it started (sweep, index) and trials it promoted (with the state
    // and rung they had).
    std::vector<std::pair<int64_t, int>> started_;
    struct Promoted {
        int64_t sweep;
        int index, rung;
    };
    std::vector<Promoted> promoted_;
};

} // namespace traindeck::worker
