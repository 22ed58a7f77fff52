// The supervisor's loop and what it carries out: commands from the HTTP threads, runs through the executor,
// the pure decisions (ingest, scheduler, exit classification, metering) applied to the jobs, and the commits.
#include "supervisor.h"

#include "atomicfile.h"
#include "capture.h"
#include "clock.h"
#include "exitclassification.h"
#include "ingest.h"
#include "jobshim.h"
#include "metering.h"
#include "scheduler.h"

#include <algorithm>
#include <cmath>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include <fcntl.h>
#include <unistd.h>

namespace traindeck::worker {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// A percent as people write it: "80", "62.5".
std::string percent_text(double percent) {
    std::ostringstream text;
    text << percent;
    return text.str();
}

} // namespace

bool inherited_by_jobs(std::string_view name) {
    // TRAINDECK_CACHE_DIR and XDG_CACHE_HOME: where the trainer keeps decoded image folders (imagefolder.h).
    static const char* const kInherited[] = {"PATH",          "HOME",    "LANG",   "LANGUAGE", "TZ",
                                             "USER",          "LOGNAME", "TMPDIR", "TERM",     "TRAINDECK_CACHE_DIR",
                                             "XDG_CACHE_HOME"};
    for (const char* allowed : kInherited)
        if (name == allowed)
            return true;
    // OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are the machine's settings for its BLAS (set where OpenBLAS would pick
    // wrong or crashing kernels for the processor): a job that lost them would compute with other kernels than the
    // trainer run by hand, so that a resumed job no longer ends as an uninterrupted run, bit for bit. Not
    // OPENBLAS_NUM_THREADS: a job's threads are its CPU slots.
    return name.starts_with("LC_") || name == "OPENBLAS_CORETYPE" || name == "OPENBLAS_L2_SIZE" ||
           name == "OPENBLAS_VERBOSE";
}

// A job in memory: its row of the jobs table, and what only the running worker knows of it.
struct Supervisor::Job : JobRow {
    JobRequest request; // parsed from request_json
    MeterMarks meter;
    StopReason stop = StopReason::none;
    double stop_sent = 0;
    int64_t preempted_by = 0;
    bool dirty = false;
    int fds[3] = {-1, -1, -1}; // the job's output files, open while it runs
    bool capture_sent[2] = {false, false}; // this run's two capture files (kCaptureFiles) became events
    // A job that has said nothing for a while is read less often (quiet_reads: reads in a row that found nothing).
    int quiet_reads = 0;
    double next_read = 0; // monotonic seconds
    // Metered (and its exit checked) once a second, each job at its own moment of the second: 0 until the first.
    double next_meter = 0; // monotonic seconds
    void read_every_tick() {
        quiet_reads = 0;
        next_read = 0;
    }

    void close_files() {
        for (int& fd : fds)
            if (fd >= 0) {
                ::close(fd);
                fd = -1;
            }
    }
    ~Job() { close_files(); }
};

Supervisor::Supervisor(WorkerConfig config, EventBoard& board) : config_(std::move(config)), board_(board) {
    if (config_.cpu_slots <= 0)
        config_.cpu_slots = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
    if (config_.memory_mb <= 0)
        config_.memory_mb = static_cast<int64_t>(telemetry_.sample_host().memory_total_mb);
    gpu_used_.assign(telemetry_.gpu_count(), 0);
    executor_ = make_executor(config_);
    // Room for a busy tick's events from the start (pages are touched only as used): grown on demand, the arena
    // was copied to a new block time after time while a busy worker's ticks grew, about a tenth of its CPU (perf,
    // tests/bench/worker_events at 300,000 lines/s).
    pending_text_.reserve(32u << 20);
    pending_events_.reserve(1u << 18);
}

Supervisor::~Supervisor() { stop(); }

std::string Supervisor::job_dir(int64_t id) const { return config_.state_dir + "/jobs/" + std::to_string(id); }

std::string Supervisor::start() {
    std::error_code ec;
    fs::create_directories(config_.state_dir + "/jobs", ec);
    if (ec)
        return config_.state_dir + ": cannot create the worker's state folder: " + ec.message();
    if (auto error = db_.open(database_path(), false); !error.empty())
        return error;
    if (std::string error; !store_.open(config_.state_dir + "/store", error))
        return error;
    try {
        create_job_tables(db_);
        SweepController::create_tables(db_);
        sweeps_ = std::make_unique<SweepController>(db_, static_cast<SweepHost&>(*this));
        sweeps_->load(); // before the jobs: a trial's job that ended while we were away is the sweep's news
        recover();
    } catch (const std::exception& e) {
        return database_path() + ": " + e.what();
    }
    resources_snapshot_ = resources();
    // WAL checkpoints copy pages back into the database file; done by the writer they stall ingestion for
    // tens of milliseconds at a time. A connection of its own checkpoints in the background instead; the writer
    // copies only the little that lets the log start again (checkpoint_wal).
    db_.exec("PRAGMA wal_autocheckpoint=0");
    // A log started again from its beginning is cut back to this size, giving the rest of its disk space back.
    db_.exec("PRAGMA journal_size_limit=" + std::to_string(kWalRestartBytes));
    {
        Statement page = db_.prepare("PRAGMA page_size");
        if (page.step())
            page_size_ = page.integer(0);
    }
    if (auto error = checkpointer_db_.open(database_path(), false); !error.empty())
        return error;
    checkpointer_ = std::thread([this] {
        while (!stopping_) {
            {
                std::unique_lock lock(commands_mutex_);
                commands_changed_.wait_for(lock, std::chrono::milliseconds(500), [&] { return stopping_.load(); });
            }
            try {
                checkpoint_wal();
            } catch (const std::exception& e) {
                std::fprintf(stderr, "traindeck-worker: WAL checkpoint: %s\n", e.what());
            }
        }
    });
    thread_ = std::thread([this] { loop(); });
    return {};
}

void Supervisor::checkpoint_wal() {
    // The log starts again from its beginning only when a write begins with every frame copied back and no reader in
    // the log. This connection's passive checkpoints never get there while the loop commits during each one: watched
    // and written at once (tests/bench/worker_events --idle 950) the log grew by 56 MB a second, 1.1 GB in 20 s,
    // without end, and the watch's p99 grew with it. Past kWalRestartBytes, passive copies here first bring what is
    // left down to what came during the last of them; then the loop is asked to copy the rest itself, between its
    // commits, so that its next commit starts the log again. Past four times that (a disk so slow that a pass never
    // gets near the end) the loop is asked anyway, whatever it then has to copy. Each start of the log still costs
    // the watch a stall of about 250 ms (measured, not explained: a RESTART checkpoint here, which copied on this
    // connection, stalled the same, and so did cutting the log to nothing).
    for (int pass = 0; pass < 4; ++pass) {
        Statement passive = checkpointer_db_.prepare("PRAGMA wal_checkpoint(PASSIVE)");
        if (!passive.step())
            return;
        const int64_t frames = passive.integer(1), left = frames - passive.integer(2);
        if (frames * page_size_ <= kWalRestartBytes)
            return;
        if (left * page_size_ < (1 << 20) || frames * page_size_ > 4 * kWalRestartBytes) {
            wal_restart_wanted_ = true;
            return;
        }
    }
}

void Supervisor::stop() {
    if (stopping_.exchange(true))
        return;
    commands_changed_.notify_all();
    if (thread_.joinable())
        thread_.join();
    if (checkpointer_.joinable())
        checkpointer_.join();
}

std::unique_ptr<Supervisor::Job> Supervisor::job_from_row(const Statement& select) {
    auto job = std::make_unique<Job>();
    static_cast<JobRow&>(*job) = read_job_row(select);
    std::string error;
    parse_job_request(json::parse(job->request_json), job->request, error);
    // Each run reports its own exit; what the row says of an earlier run's end stays in the row.
    job->exit_code = -1;
    job->finished = 0;
    job->meter.last = wall_seconds();
    return job;
}

void Supervisor::recover() {
    Statement select =
        db_.prepare(select_jobs_sql("WHERE state NOT IN (" + std::string(finished_states_sql()) + ") ORDER BY id"));
    std::vector<std::unique_ptr<Job>> recovered;
    while (select.step()) {
        recovered.push_back(job_from_row(select));
        // What a stopping job was asked to do decides what its exit means; the state and reason remember it.
        recovered.back()->stop = recorded_stop_reason(recovered.back()->state, recovered.back()->reason);
    }
    std::string error;
    if (!commit([&] { recover_jobs(std::move(recovered)); }, &error))
        throw std::runtime_error("cannot record the recovered jobs: " + error);
}

void Supervisor::recover_jobs(std::vector<std::unique_ptr<Job>> recovered) {
    for (auto& owned : recovered) {
        Job* job = owned.get();
        jobs_[job->id] = std::move(owned);
        if (job->state == JobState::queued)
            continue;
        for (int gpu : job->gpus)
            if (gpu >= 0 && gpu < static_cast<int>(gpu_used_.size()))
                gpu_used_[gpu] += job->request.resources.units_per_gpu();
        const std::string dir = job_dir(job->id);
        const bool adopted = executor_->adopt(job->run, dir);
        if (read_exit_status(dir).present || adopted) {
            // Still running (or ended while we were away): keep reading its files from the saved offsets.
            add_event(*job, "warning", json{{"message", "worker restarted; job re-adopted"}}.dump());
            continue;
        }
        // The job died with the worker (machine restart): it goes back to the queue and resumes from its checkpoint.
        ingest(*job);
        job->reason = "lost with the previous worker process; resuming from the last checkpoint";
        finish_run(*job, JobState::queued, job->reason);
    }
}

void Supervisor::loop() {
    auto last_meter = std::chrono::steady_clock::now();
    while (!stopping_) {
        {
            std::unique_lock lock(commands_mutex_);
            commands_changed_.wait_for(lock, std::chrono::milliseconds(10),
                                       [&] { return stopping_ || !commands_.empty(); });
        }
        const bool meter_now = std::chrono::steady_clock::now() - last_meter >= std::chrono::seconds(1);
        if (meter_now)
            last_meter = std::chrono::steady_clock::now();
        try {
            tick(meter_now);
        } catch (const std::exception& e) {
            // Every transaction is commit()'s, which undoes its own failures; what reaches here failed outside the
            // database, and what was buffered before it stays for the next commit.
            std::fprintf(stderr, "traindeck-worker: %s\n", e.what());
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
    }
}

void Supervisor::tick(bool meter_now) {
    std::deque<Command> commands;
    {
        std::lock_guard lock(commands_mutex_);
        commands.swap(commands_);
    }
    std::vector<JobRun*> runs;
    for (auto& [id, job] : jobs_)
        runs.push_back(&job->run);
    executor_->collect(runs);
    // Each command is its own transaction, so that a failed commit undoes exactly that command and says so.
    for (auto& command : commands)
        commit(command);
    const double now = wall_seconds();
    // While commits fail (a full disk), what is not yet written stays in the jobs' files: read no more of them
    // than a bounded backlog; their offsets resume the reading once the database takes writes again.
    const bool backlog = pending_events_.size() > 200000 || pending_text_.size() > (256u << 20);
    std::vector<Job*> active;
    active.reserve(jobs_.size());
    for (auto& [id, job] : jobs_)
        active.push_back(job.get());
    if (meter_now) {
        std::vector<const JobRun*> active_runs;
        active_runs.reserve(active.size());
        for (const Job* job : active)
            active_runs.push_back(&job->run);
        executor_->refresh(active_runs);
    }
    const double monotonic = monotonic_seconds();
    for (Job* job : active) {
        if (job->state == JobState::queued)
            continue;
        if (!backlog && monotonic >= job->next_read) {
            // Each tick read every job's three files and looked for its captures: with hundreds of jobs running,
            // most of them quiet, that was most of the worker's time (200 quiet jobs: 0.45 cores). A job quiet for 10
            // reads in a row is read every 50 ms, after 50 every 100 ms (each job a few ms apart, so that quiet jobs
            // are not all read in one tick); its first new line, a start or a stop request makes it read every tick
            // again. What a job wrote before its end is read whole either way (check_exit, ingest_all).
            const int64_t before = job->next_seq;
            ingest(*job);
            job->quiet_reads = job->next_seq == before ? std::min(job->quiet_reads + 1, 50) : 0;
            job->next_read = job->quiet_reads < 10
                                 ? 0
                                 : monotonic + (job->quiet_reads < 50 ? 0.05 : 0.1) + 0.001 * double(job->id % 10);
        }
        // Each job once a second, at id % 100 hundredths into it: a thousand jobs metered in one tick held every
        // job's lines back 100-170 ms once a second (tests/bench/worker_events --idle 950).
        if (job->next_meter == 0)
            job->next_meter = monotonic + 0.01 * double(job->id % 100);
        const bool meter_job = monotonic >= job->next_meter;
        if (meter_job) {
            job->next_meter = std::max(job->next_meter + 1.0, monotonic + 0.5);
            meter(*job, now);
        }
        // Exits are noticed when the executor sees a shim end; otherwise (a re-adopted job's shim is not our child,
        // a cluster's job is not even here) they are checked once a second: a local job's as it is metered, a
        // cluster job's right after the executor's refresh (its squeue answer), in the tick that refreshed.
        if (job->run.shim_reaped || (job->run.cluster_id.empty() ? meter_job : meter_now))
            check_exit(*job);
        if (job->stop != StopReason::none && is_active(job->state) && job->stop_sent > 0 &&
            now - job->stop_sent > config_.stop_grace_seconds) {
            add_event(*job, "warning",
                      json{{"message", "job did not stop within " + std::to_string(int(config_.stop_grace_seconds)) +
                                           " s of SIGTERM; sending SIGKILL"}}.dump());
            if (const std::string error = executor_->kill(job->run); !error.empty())
                add_event(*job, "warning", json{{"message", error}}.dump());
            job->stop_sent = now + 1e9; // once
        }
    }
    schedule();
    // The sweeps decide after the jobs moved: trials they start are scheduled next tick (10 ms on).
    std::vector<int64_t> touched;
    if (!commit([&] {
            if (sweeps_->has_running())
                sweeps_->tick(&touched);
        })) {
        sweeps_->undo_tick();
        for (const int64_t id : touched)
            jobs_.erase(id); // their rows are not there: a started trial never existed, a promoted one stays paused
    }
    if (meter_now) {
        json snapshot = resources();
        std::lock_guard lock(resources_mutex_);
        resources_snapshot_ = snapshot;
    }
}

void Supervisor::add_event(Job& job, const char* type, std::string_view data) {
    if (sweeps_ && type[0] == 'r' && std::string_view(type) == "record" && sweeps_->is_trial(job.id))
        sweeps_->on_record(job.id, data);
    pending_events_.push_back({job.id, job.next_seq, wall_seconds(), type, pending_text_.size(), data.size()});
    pending_text_.append(data);
    ++job.next_seq;
    job.dirty = true;
}

void Supervisor::write_pending() {
    // A block writer a job, its events in the order they were numbered.
    std::unordered_map<int64_t, EventBlockWriter> blocks;
    for (const PendingEvent& event : pending_events_)
        blocks.try_emplace(event.job, db_, insert_block_, event.job)
            .first->second.add(event.seq, event.time, event.type,
                               std::string_view(pending_text_).substr(event.offset, event.length));
    for (auto& [job, writer] : blocks)
        writer.finish();
    for (auto& [id, job] : jobs_)
        if (job->dirty)
            save_job(*job);
    if (sweeps_)
        sweeps_->write();
}

bool Supervisor::commit(const std::function<void()>& work, std::string* error_out) {
    std::string error;
    try {
        db_.exec("BEGIN IMMEDIATE");
        in_transaction_ = true;
        if (work)
            work();
        write_pending();
        db_.exec("COMMIT");
        in_transaction_ = false;
    } catch (const std::exception& e) {
        error = e.what();
        if (in_transaction_) {
            try {
                db_.exec("ROLLBACK");
            } catch (...) {
            }
            in_transaction_ = false;
        }
    }
    const bool committed = error.empty();
    if (!committed) {
        // Nothing of this transaction is stored: every job row is written again with the next commit, the
        // buffered events stay buffered (numbered as they are), and no reader is told of seqs it cannot read.
        for (auto& [id, job] : jobs_)
            job->dirty = true;
        if (sweeps_)
            sweeps_->unwritten();
        pending_announcements_.clear();
        if (error != last_commit_error_)
            std::fprintf(stderr, "traindeck-worker: cannot write the database (%s); keeping %zu event(s) in memory and "
                                 "retrying\n", error.c_str(), pending_events_.size());
    } else if (!last_commit_error_.empty()) {
        std::fprintf(stderr, "traindeck-worker: the database takes writes again; nothing was lost\n");
    }
    last_commit_error_ = error;
    auto replies = std::move(after_commit_);
    after_commit_.clear();
    for (auto& reply : replies)
        reply(committed, error);
    if (!committed) {
        if (error_out)
            *error_out = error;
        return false;
    }
    pending_events_.clear();
    pending_text_.clear();
    if (sweeps_)
        sweeps_->written();
    for (auto& [id, announcement] : pending_announcements_)
        board_.publish(id, announcement.first, announcement.second);
    pending_announcements_.clear();
    for (auto it = jobs_.begin(); it != jobs_.end();) {
        if (is_finished(it->second->state)) {
            it = jobs_.erase(it);
        } else {
            ++it;
        }
    }
    if (wal_restart_wanted_.exchange(false)) {
        // What is left of the log copied back (checkpoint_wal says why), after the replies and the watchers were
        // told: the next commit starts the log again, unless a reader is in it then (the next round tries again).
        try {
            db_.exec("PRAGMA wal_checkpoint(PASSIVE)");
        } catch (const std::exception& e) {
            std::fprintf(stderr, "traindeck-worker: WAL checkpoint: %s\n", e.what());
        }
    }
    return true;
}

void Supervisor::add_state_event(Job& job) {
    json data = {{"state", to_string(job.state)}, {"reason", job.reason}, {"restarts", job.restarts}};
    if (job.pid > 0 && job.state == JobState::running)
        data["pid"] = job.pid;
    if (job.exit_code >= 0)
        data["exit_code"] = job.exit_code;
    add_event(job, "state", data.dump());
}

void Supervisor::save_job(Job& job) {
    update_job(db_, update_job_, job);
    job.dirty = false;
    // One announcement per job per commit (save_job runs for every job that changed).
    pending_announcements_.push_back({job.id, {job.next_seq - 1, is_finished(job.state)}});
}

Supervisor::Result Supervisor::call(std::function<void(const Reply&)> command) {
    auto reply = std::make_shared<std::promise<Result>>();
    auto future = reply->get_future();
    {
        std::lock_guard lock(commands_mutex_);
        commands_.push_back([command = std::move(command), reply] { command(reply); });
    }
    commands_changed_.notify_all();
    if (future.wait_for(std::chrono::seconds(30)) != std::future_status::ready)
        return {503, {{"error", "the worker is busy; try again"}}};
    return future.get();
}

void Supervisor::reply_after_commit(const Reply& reply, std::function<Result()> committed_result,
                                    std::function<void()> undo, std::string what_failed, std::string what_to_do) {
    const size_t events_mark = pending_events_.size(), text_mark = pending_text_.size();
    after_commit_.push_back([=, this, committed_result = std::move(committed_result), undo = std::move(undo),
                             what_failed = std::move(what_failed),
                             what_to_do = std::move(what_to_do)](bool committed, const std::string& error) {
        if (committed) {
            reply->set_value(committed_result());
            return;
        }
        // The events this command buffered go with it; those of other jobs stay for the next commit.
        pending_events_.resize(events_mark);
        pending_text_.resize(text_mark);
        undo();
        reply->set_value({error.find("full") != std::string::npos ? 507 : 500,
                          {{"error", what_failed + " (" + error + "); " + what_to_do}}});
    });
}

Supervisor::Result Supervisor::submit(const JobRequest& request) {
    return call([this, request](const Reply& reply) {
        if (!executor_->schedules_jobs() &&
            (request.resources.gpus > static_cast<int>(gpu_used_.size()) ||
             request.resources.cpus > config_.cpu_slots || request.resources.memory_mb > config_.memory_mb)) {
            reply->set_value(
                {422,
                 {{"error", "the job asks for more than this worker has (" + std::to_string(gpu_used_.size()) +
                                " GPUs, " + std::to_string(config_.cpu_slots) + " CPUs, " +
                                std::to_string(config_.memory_mb) + " MB); it could never run"}}});
            return;
        }
        if (!request.dataset.empty() && store_.dataset_path(request.dataset).empty()) {
            reply->set_value({409, {{"error", "dataset version " + request.dataset.substr(0, 12) +
                                                  "… is not on this worker; upload it first"}}});
            return;
        }
        if (!request.checkpoint_from.empty() && store_.dataset_path(request.checkpoint_from).empty()) {
            reply->set_value({409, {{"error", "checkpoint version " + request.checkpoint_from.substr(0, 12) +
                                                  "… is not on this worker; upload it first"}}});
            return;
        }
        auto job = std::make_unique<Job>();
        job->request = request;
        job->submitted = wall_seconds();
        // If the commit fails (a full disk), the job never existed: not in memory, not on disk, and the client is
        // told to submit again. Registered first, so that even a failed INSERT is answered.
        auto id = std::make_shared<int64_t>(0);
        reply_after_commit(
            reply, [id] { return Result{201, {{"id", *id}, {"state", to_string(JobState::queued)}}}; },
            [this, id] {
                if (*id > 0) {
                    jobs_.erase(*id);
                    std::error_code ec;
                    fs::remove_all(job_dir(*id), ec);
                }
            },
            "the job could not be stored", "nothing was kept, submit it again");
        *id = add_job(std::move(job));
    });
}

int64_t Supervisor::add_job(std::unique_ptr<Job> job) {
    // A cluster allocates whole GPUs (its gres): a job sharing GPUs there holds (and is billed for) whole ones.
    const bool unshared = executor_->schedules_jobs() && job->request.resources.gpu_share > 1;
    if (unshared)
        job->request.resources.gpu_share = 1;
    const JobRequest& request = job->request;
    job->id = insert_job(db_, request.name, request.to_json().dump(), request.priority, job->submitted);
    std::error_code ec;
    fs::create_directories(job_dir(job->id) + "/checkpoints", ec);
    std::string error;
    if (!request.builtin.is_null())
        write_file_atomically(job_dir(job->id) + "/spec.json", request.builtin.dump(2), 0600, error);
    // A job moved here from a lost worker starts from the checkpoint it brought.
    if (!request.checkpoint_from.empty())
        for (const auto& entry : fs::directory_iterator(store_.dataset_path(request.checkpoint_from), ec))
            if (entry.path().extension() == ".tdck")
                fs::copy_file(entry.path(), job_dir(job->id) + "/checkpoints/" + entry.path().filename().string(),
                              fs::copy_options::overwrite_existing, ec);
    job->reason = "waiting for resources";
    add_state_event(*job);
    if (unshared)
        add_event(*job, "warning",
                  json{{"message", "the cluster allocates whole GPUs: gpu_share is ignored and the job gets " +
                                       std::to_string(request.resources.gpus) + " GPU(s) of its own"}}
                      .dump());
    const int64_t id = job->id;
    jobs_[id] = std::move(job);
    return id;
}

Supervisor::Result Supervisor::cancel(int64_t id) {
    return call([this, id](const Reply& reply) {
        const auto it = jobs_.find(id);
        if (it == jobs_.end()) {
            Statement select = db_.prepare("SELECT state FROM jobs WHERE id=?");
            select.bind(1, id);
            if (select.step())
                reply->set_value({409, {{"error", "job " + std::to_string(id) + " is already " + select.text(0)}}});
            else
                reply->set_value({404, {{"error", "no job " + std::to_string(id)}}});
            return;
        }
        Job& job = *it->second;
        if (job.state == JobState::queued) {
            job.reason = "cancelled by the user before it started";
            job.finished = wall_seconds();
            job.state = JobState::cancelled;
            add_state_event(job);
            job.dirty = true;
        } else {
            signal_job(job, StopReason::cancel, SIGTERM);
        }
        // The stop is under way whether or not this commit succeeds (the signal is sent; memory keeps its events
        // until the database takes them), so the answer is the same.
        after_commit_.push_back([reply, id, state = job.state](bool, const std::string&) {
            reply->set_value(Result{202, {{"id", id}, {"state", to_string(state)}}});
        });
    });
}

nlohmann::json Supervisor::policy() const {
    // What PUT takes, as it takes it: an answer sent back changes nothing.
    return {{"price_base", config_.price_base},     {"price_gpu", config_.price_gpu},
            {"price_cpu", config_.price_cpu},       {"currency", config_.currency},
            {"idle_percent", config_.idle_percent}, {"idle_seconds", config_.idle_seconds},
            {"idle_stop", config_.idle_stop},       {"budget_warn_percent", config_.budget_warn_percent}};
}

Supervisor::Result Supervisor::get_policy() {
    return call([this](const Reply& reply) { reply->set_value({200, policy()}); });
}

Supervisor::Result Supervisor::set_policy(const json& changes) {
    struct Bounds {
        const char* key;
        double low, high;
    };
    static constexpr Bounds numbers[] = {{"price_base", 0, 1e6},    {"price_gpu", 0, 1e6},
                                         {"price_cpu", 0, 1e6},     {"idle_percent", 0, 100},
                                         {"idle_seconds", 10, 1e7}, {"budget_warn_percent", 1, 99}};
    if (!changes.is_object())
        return {400, {{"error", "the policy is a JSON object"}}};
    for (auto item = changes.begin(); item != changes.end(); ++item) {
        const std::string& key = item.key();
        const json& value = item.value();
        const auto bounds =
            std::find_if(std::begin(numbers), std::end(numbers), [&key](const Bounds& b) { return key == b.key; });
        if (key == "idle_stop") {
            if (!value.is_boolean())
                return {400, {{"error", "\"idle_stop\" is true or false"}}};
        } else if (key == "currency") {
            const auto letters = [](const std::string& code) {
                return code.size() == 3 &&
                       std::all_of(code.begin(), code.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
            };
            if (!value.is_string() || !letters(value.get<std::string>()))
                return {400, {{"error", "\"currency\" is an ISO 4217 code: three letters A to Z, such as \"EUR\""}}};
        } else if (bounds == std::end(numbers)) {
            return {
                400,
                {{"error",
                  "unknown field \"" + key +
                      "\" (known: price_base, price_gpu, price_cpu, currency, idle_percent, idle_seconds, idle_stop, "
                      "budget_warn_percent)"}}};
        } else if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < bounds->low ||
                   value.get<double>() > bounds->high) {
            std::ostringstream range;
            range << bounds->low << " to " << bounds->high;
            return {400, {{"error", "\"" + key + "\" must be a number from " + range.str()}}};
        }
    }
    // On the loop's thread, which alone reads them (metering, resources()).
    return call([this, changes](const Reply& reply) {
        config_.price_base = changes.value("price_base", config_.price_base);
        config_.price_gpu = changes.value("price_gpu", config_.price_gpu);
        config_.price_cpu = changes.value("price_cpu", config_.price_cpu);
        config_.idle_percent = changes.value("idle_percent", config_.idle_percent);
        config_.idle_seconds = changes.value("idle_seconds", config_.idle_seconds);
        config_.idle_stop = changes.value("idle_stop", config_.idle_stop);
        config_.currency = changes.value("currency", config_.currency);
        config_.budget_warn_percent = changes.value("budget_warn_percent", config_.budget_warn_percent);
        // A job already reported idle is judged again under the new policy (a stop asked for now applies to it);
        // how long it has been idle stays.
        if (changes.contains("idle_percent") || changes.contains("idle_seconds") || changes.contains("idle_stop"))
            for (auto& [id, job] : jobs_)
                job->meter.idle_reported = false;
        // /v1/resources says the new prices at once, not at the next meter reading.
        json snapshot = resources();
        {
            std::lock_guard lock(resources_mutex_);
            resources_snapshot_ = std::move(snapshot);
        }
        reply->set_value({200, policy()});
    });
}

Supervisor::Result Supervisor::resume(int64_t id, double new_budget) {
    return call([this, id, new_budget](const Reply& reply) {
        Result refused;
        std::unique_ptr<Job> job = resumable(id, new_budget, refused);
        if (!job) {
            reply->set_value(refused);
            return;
        }
        // A failed commit leaves the job as it was in the database: out of the active table again.
        reply_after_commit(
            reply,
            [id] {
                return Result{202, {{"id", id}, {"state", to_string(JobState::queued)}}};
            },
            [this, id] { jobs_.erase(id); }, "the resume could not be stored", "try again");
        requeue(std::move(job), "resumed by the user; continues from its last checkpoint");
    });
}

std::unique_ptr<Supervisor::Job> Supervisor::resumable(int64_t id, double new_budget, Result& refused) {
    if (jobs_.count(id)) {
        refused = {409, {{"error", "job " + std::to_string(id) + " is still active"}}};
        return nullptr;
    }
    Statement select = db_.prepare(select_jobs_sql("WHERE id=?"));
    select.bind(1, id);
    if (!select.step()) {
        refused = {404, {{"error", "no job " + std::to_string(id)}}};
        return nullptr;
    }
    std::unique_ptr<Job> job = job_from_row(select);
    if (job->state == JobState::succeeded) {
        refused = {409, {{"error", "job " + std::to_string(id) + " already finished"}}};
        return nullptr;
    }
    if (new_budget > 0)
        job->request.budget = new_budget;
    if (job->request.budget > 0 && job->spend >= job->request.budget) {
        refused = {422,
                   {{"error", "the job has spent " + std::to_string(job->spend) +
                                  " of its budget; give a higher \"budget\" to resume it"}}};
        return nullptr;
    }
    return job;
}

void Supervisor::requeue(std::unique_ptr<Job> job, const std::string& reason) {
    // Back to the queue: it restarts from its last checkpoint (built-in jobs with --resume, scripts see
    // TRAINDECK_RESUME=1), keeping its events, spend and counters.
    job->gpus.clear();
    job->run.shim = job->pid = -1;
    job->finished = 0;
    job->exit_code = -1;
    job->stop = StopReason::none;
    job->stop_sent = 0;
    job->state = JobState::queued;
    job->reason = reason;
    Job& resumed = *job;
    jobs_[resumed.id] = std::move(job);
    update_job_request(db_, resumed.id, resumed.request.to_json().dump());
    add_state_event(resumed);
    resumed.dirty = true;
}

Supervisor::Result Supervisor::sweep_command(std::function<SweepController::Answer(SweepController&)> command) {
    return call([this, command = std::move(command)](const Reply& reply) {
        const SweepController::Answer answer = command(*sweeps_);
        if (answer.status >= 300) {
            reply->set_value({answer.status, answer.body});
            return;
        }
        reply_after_commit(
            reply,
            [answer] {
                return Result{answer.status, answer.body};
            },
            [this] { sweeps_->load(); }, "the sweep could not be stored", "nothing changed; try again");
    });
}

int64_t Supervisor::start_trial(const JobRequest& request) {
    auto job = std::make_unique<Job>();
    job->request = request;
    job->submitted = wall_seconds();
    return add_job(std::move(job));
}

std::string Supervisor::resume_trial(int64_t id, double budget, const std::string& reason) {
    // A trial that stopped in this very tick is still in memory (the commit lets go of finished jobs): requeued from
    // there, as its row will say once this transaction commits.
    if (const auto it = jobs_.find(id); it != jobs_.end() && is_finished(it->second->state)) {
        if (it->second->state == JobState::succeeded)
            return "job " + std::to_string(id) + " already finished";
        std::unique_ptr<Job> job = std::move(it->second);
        jobs_.erase(it);
        if (budget > 0)
            job->request.budget = budget;
        job->meter.last = wall_seconds();
        requeue(std::move(job), reason);
        return {};
    }
    Result refused;
    std::unique_ptr<Job> job = resumable(id, budget, refused);
    if (!job)
        return refused.body.value("error", "cannot resume job " + std::to_string(id));
    requeue(std::move(job), reason);
    return {};
}

void Supervisor::stop_trial(int64_t id, StopReason why, bool kill) {
    const auto it = jobs_.find(id);
    if (it == jobs_.end())
        return; // ended already: its end is the sweep's news
    Job& job = *it->second;
    if (job.state == JobState::queued) {
        // Never started: it stops where it is, with no checkpoint to write.
        finish_run(job, why == StopReason::cancel ? JobState::cancelled : JobState::stopped,
                   why == StopReason::cancel ? "stopped by its sweep before it started"
                                             : "stopped by its sweep before it started; resumes with it");
        return;
    }
    if (is_active(job.state))
        signal_job(job, why, kill ? SIGKILL : SIGTERM);
}

SweepHost::TrialJob Supervisor::trial_job(int64_t id) {
    if (const auto it = jobs_.find(id); it != jobs_.end())
        return {true, it->second->state, it->second->spend,
                it->second->run_seconds * std::max(it->second->request.resources.gpu_fraction(), 0.0)};
    Statement select = db_.prepare(select_jobs_sql("WHERE id=?"));
    select.bind(1, id);
    if (!select.step())
        return {};
    const JobRow row = read_job_row(select);
    JobRequest request;
    std::string error;
    parse_job_request(json::parse(row.request_json, nullptr, false), request, error);
    return {true, row.state, row.spend, row.run_seconds * std::max(request.resources.gpu_fraction(), 0.0)};
}

Supervisor::Result Supervisor::remove(int64_t id) {
    return call([this, id](const Reply& reply) {
        if (jobs_.count(id)) {
            reply->set_value({409, {{"error", "job " + std::to_string(id) + " is still active; cancel it first"}}});
            return;
        }
        Statement select = db_.prepare("SELECT 1 FROM jobs WHERE id=?");
        select.bind(1, id);
        if (!select.step()) {
            reply->set_value({404, {{"error", "no job " + std::to_string(id)}}});
            return;
        }
        // The folder goes only once the row has: a failed commit leaves the job whole, files and all.
        reply_after_commit(
            reply,
            [this, id] {
                std::error_code ec;
                uintmax_t bytes = 0;
                for (const auto& entry : fs::recursive_directory_iterator(job_dir(id), ec))
                    if (entry.is_regular_file(ec))
                        bytes += entry.file_size(ec);
                fs::remove_all(job_dir(id), ec);
                if (ec)
                    return Result{200,
                                  {{"id", id},
                                   {"deleted", true},
                                   {"bytes", bytes},
                                   {"warning", "some files could not be removed: " + ec.message()}}};
                return Result{200, {{"id", id}, {"deleted", true}, {"bytes", bytes}}};
            },
            [] {}, "the job could not be deleted", "nothing was removed; try again");
        delete_job(db_, id);
    });
}

void Supervisor::signal_job(Job& job, StopReason kind, int signal) {
    job.read_every_tick(); // what it says while it stops (a checkpoint)
    if (job.stop == StopReason::none || kind == StopReason::cancel)
        job.stop = kind;
    if (job.stop_sent == 0)
        job.stop_sent = wall_seconds();
    executor_->signal(job.run, job_dir(job.id), signal);
    job.state = kind == StopReason::preempt ? JobState::preempting : JobState::stopping;
    job.reason = kind == StopReason::preempt
                     ? "preempted by job " + std::to_string(job.preempted_by) + "; checkpointing"
                 : kind == StopReason::cancel ? "cancel requested; checkpointing"
                 : kind == StopReason::budget ? "budget reached; checkpointing"
                 : kind == StopReason::pause  ? "paused by its sweep; checkpointing"
                                              : "idle; checkpointing";
    add_state_event(job);
}

// A job may write into its dataset folder (it runs as the worker's user): what it changed is found from the
// version's seal when its run ends, and before any job starts on a version, and the version is rebuilt from its
// verified chunks, so a later job always reads the bytes that were uploaded. "" or why the version is unusable.
std::string Supervisor::keep_dataset_intact(Job& job, bool after_run) {
    if (job.request.dataset.empty())
        return {};
    const std::string changed = store_.check(job.request.dataset);
    if (changed.empty())
        return {};
    std::string error;
    const int status = store_.rebuild(job.request.dataset, error);
    const std::string what = "dataset version " + job.request.dataset.substr(0, 12) + "…: " + changed;
    add_event(job, "warning",
              json{{"message", (after_run ? "this job changed its read-only dataset (" + what + "); "
                                          : "found changed before this job started (" + what + "); ") +
                                   (status < 300 ? "rebuilt from its verified chunks" : "cannot rebuild it: " + error)},
                   {"alert", "dataset_changed"}}.dump());
    return status < 300 ? std::string() : what + "; " + error;
}

void Supervisor::start_job(Job& job) {
    job.read_every_tick();
    const std::string dir = job_dir(job.id);
    if (std::string unusable = keep_dataset_intact(job, false); !unusable.empty()) {
        finish_run(job, JobState::failed, unusable);
        return;
    }
    ::unlink((dir + "/exit_status.json").c_str());
    ::unlink((dir + "/pid").c_str());
    for (const char* part : kCaptureFiles) {
        ::unlink((dir + "/" + part).c_str());
        ::unlink((dir + "/" + part + ".sent").c_str());
    }
    job.capture_sent[0] = job.capture_sent[1] = false;
    const bool resume = job.restarts > 0 || (fs::exists(dir + "/checkpoints") && !fs::is_empty(dir + "/checkpoints"));
    LaunchPlan plan;
    if (!job.request.builtin.is_null()) {
        plan.argv = {config_.train_binary, dir + "/spec.json", "--checkpoint-dir", dir + "/checkpoints", "--resume",
                     "--threads", std::to_string(std::max(1, job.request.resources.cpus))};
    } else if (job.request.shell) {
        plan.argv = {"/bin/sh", "-c", job.request.argv.front()};
    } else {
        plan.argv = job.request.argv;
    }
    plan.cwd = job.request.cwd.empty() ? dir : job.request.cwd;
    if (!job.request.code.empty()) {
        std::string error;
        if (!copy_code_snapshot(job, dir, error)) {
            job.exit_code = -1;
            finish_run(job, JobState::failed, error);
            return;
        }
        plan.cwd = dir + "/code" + (job.request.code_cwd.empty() ? "" : "/" + job.request.code_cwd);
    }
    if (job.request.capture) {
        plan.capture = {{"store", store_.dir()},
                        {"code", job.request.builtin.is_null() && !job.request.cwd.empty()},
                        {"exclude", config_.capture_exclude},
                        {"record",
                         {{"traindeck", config_.version},
                          {"executor", config_.executor},
                          {"restarts", job.restarts},
                          {"resumed", resume},
                          {"resources", job.request.to_json()["resources"]},
                          {"dataset", job.request.dataset}}}};
        if (!job.request.code.empty())
            plan.capture["snapshot"] = job.request.code, plan.capture["snapshot_root"] = dir + "/code";
        if (!job.request.builtin.is_null())
            plan.capture["train_binary"] = config_.train_binary;
    }
    // The job sees only what it needs of the worker's own environment: never the worker's secrets (SLURM_JWT,
    // tokens, cloud keys) or settings meant for the worker alone. Everything else comes from the request.
    Environment env = Environment::current();
    env.keep_only(inherited_by_jobs);
    for (const auto& [key, value] : job.request.env)
        env.set(key, value);
    executor_->set_visible_gpus(env, job.gpus);
    env.set("TRAINDECK_METRICS_FD", "3");
    env.set("TRAINDECK_CHECKPOINT_DIR", dir + "/checkpoints");
    // A job's dataset is its version's read-only folder in the store; jobs without one get an empty folder.
    env.set("TRAINDECK_DATASET_DIR",
            job.request.dataset.empty() ? dir + "/data" : store_.dataset_path(job.request.dataset));
    env.set("TRAINDECK_JOB_ID", std::to_string(job.id));
    env.set("TRAINDECK_RESUME", resume ? "1" : "0");
    // A built-in job on several GPUs is one traindeck-train per GPU: rank 0 starts the others (data parallel, NCCL).
    env.set("WORLD_SIZE", std::to_string(job.request.builtin.is_null() ? 1 : std::max(1, job.request.resources.gpus)));
    env.set("RANK", "0");
    env.set("LOCAL_RANK", "0");
    env.set("OMP_NUM_THREADS", std::to_string(std::max(1, job.request.resources.cpus)));
    plan.env = env.entries();
    std::string error;
    if (!write_launch_plan(dir, plan, error) || !executor_->start(job.run, dir, job.request, error)) {
        job.exit_code = -1;
        finish_run(job, JobState::failed, error);
        return;
    }
    job.pid = -1;
    job.state = JobState::running;
    job.reason = job.restarts > 0 ? "restart " + std::to_string(job.restarts) + " of " +
                                        std::to_string(job.request.max_restarts) + ", from the last checkpoint"
                 : resume         ? "resumed from its checkpoint"
                                  : "started";
    job.reason += executor_->where(job.run);
    job.started = wall_seconds();
    job.meter.last = job.started;
    job.stop = StopReason::none;
    job.stop_sent = 0;
    job.meter.idle_since = 0;
    job.meter.idle_reported = false;
    job.exit_code = -1;
    add_state_event(job);
}

void Supervisor::ingest(Job& job, bool run_ended) {
    const std::string dir = job_dir(job.id);
    const EventSink sink = [&](const char* type, std::string_view data) { add_event(job, type, data); };
    for (int stream = 0; stream < 3; ++stream) {
        if (job.fds[stream] < 0)
            job.fds[stream] = ::open((dir + "/" + stream_file(OutputStream(stream))).c_str(), O_RDONLY | O_CLOEXEC);
        const int fd = job.fds[stream];
        if (fd < 0)
            continue;
        // Read straight into one buffer that lives as long as the supervisor: no copies, no allocation per tick.
        std::string& buffer = read_buffer_;
        buffer.clear();
        bool whole = false; // read to the file's end
        for (;;) {
            const size_t have = buffer.size();
            buffer.resize(have + 65536);
            const ssize_t n = ::pread(fd, buffer.data() + have, 65536, job.offsets[stream] + static_cast<off_t>(have));
            buffer.resize(have + static_cast<size_t>(std::max<ssize_t>(n, 0)));
            if (n <= 0) {
                whole = n == 0;
                break;
            }
            if (buffer.size() > 8 * kMaxLine)
                break; // the rest next tick
        }
        // Once the run has ended its files grow no more: a last line without its newline is a line.
        if (const size_t consumed = ingest_text(OutputStream(stream), buffer, job.warnings, sink, run_ended && whole);
            consumed > 0) {
            job.offsets[stream] += static_cast<int64_t>(consumed);
            job.dirty = true;
        }
    }
    if (job.pid <= 0 && job.state != JobState::queued && executor_->runs_here())
        job.pid = read_job_pid(dir);
    ingest_captures(job, dir);
}

void Supervisor::ingest_all(Job& job, bool exited) {
    // ingest reads up to about 8 long lines' worth of each file at a time ("the rest next tick"); a run that ends
    // has no next tick. Bounded as the tick's reading is, by the backlog a failing database may hold in memory.
    // The files are opened again first: on a shared file system (a Slurm node's job folder over NFS) a file held
    // open since the run began may show a size from seconds ago, and its end would be taken for the run's end.
    // Only a run whose shim recorded its end (exited) has its unfinished last line taken as a line: a shim that
    // vanished may have left its job writing.
    job.close_files();
    for (;;) {
        const int64_t before = job.offsets[0] + job.offsets[1] + job.offsets[2];
        ingest(job, exited);
        if (job.offsets[0] + job.offsets[1] + job.offsets[2] == before || pending_text_.size() > (256u << 20))
            return;
    }
}

// The shim's captures of this run (capture.h) become "capture" events once each; a file is renamed .sent after
// the commit that holds its event, so a restarted worker sends only what it had not.
void Supervisor::ingest_captures(Job& job, const std::string& dir) {
    // A job that captures nothing has no files to look for (an open a job a read: 8 % of the worker's time with
    // 1,000 such jobs running).
    if (!job.request.capture)
        return;
    for (int part = 0; part < 2; ++part) {
        if (job.capture_sent[part])
            continue;
        const std::string path = dir + "/" + kCaptureFiles[part];
        std::ifstream in(path, std::ios::binary);
        if (!in)
            continue;
        std::stringstream text;
        text << in.rdbuf();
        job.capture_sent[part] = true;
        json record = json::parse(text.str(), nullptr, false);
        if (!record.is_object()) {
            add_event(job, "warning",
                      json{{"message", std::string("this run's ") + kCaptureFiles[part] +
                                           " is not valid JSON; its capture is lost"}}
                          .dump());
        } else {
            record["part"] = part == 0 ? "code" : "environment";
            add_event(job, "capture", record.dump(-1, ' ', false, json::error_handler_t::replace));
        }
        job.dirty = true;
        after_commit_.push_back([path](bool committed, const std::string&) {
            if (committed)
                ::rename(path.c_str(), (path + ".sent").c_str());
        });
    }
}

// A reproduced job's code: its snapshot built in the store (verified against its manifest), then copied into the
// job's folder, writable, since a script may write beside itself. A run that resumes finds its copy there.
bool Supervisor::copy_code_snapshot(Job& job, const std::string& dir, std::string& error) {
    const std::string target = dir + "/code";
    std::error_code ec;
    if (fs::is_directory(target, ec))
        return true;
    const std::string version = job.request.code;
    dataset::Manifest manifest;
    if (!store_.stored_manifest(version, manifest, error)) {
        error = "code snapshot " + version.substr(0, 12) + "…: " + error + "; send it to this worker first";
        return false;
    }
    std::vector<std::string> missing;
    if (const int status = store_.materialize(manifest, missing, error); status >= 300) {
        error = "cannot build code snapshot " + version.substr(0, 12) + "…: " + error;
        return false;
    }
    const std::string temp = dir + "/code.partial";
    fs::remove_all(temp, ec);
    fs::copy(store_.dataset_path(version), temp, fs::copy_options::recursive, ec);
    if (!ec)
        for (fs::recursive_directory_iterator it(temp, ec), end; !ec && it != end; it.increment(ec))
            fs::permissions(it->path(), fs::perms::owner_write, fs::perm_options::add, ec);
    if (!ec)
        fs::permissions(temp, fs::perms::owner_write, fs::perm_options::add, ec);
    if (!ec)
        fs::rename(temp, target, ec);
    if (ec) {
        fs::remove_all(temp, ec);
        error = "cannot copy code snapshot " + version.substr(0, 12) + "… into the job's folder: " + ec.message();
        return false;
    }
    return true;
}

void Supervisor::check_exit(Job& job) {
    if (!is_active(job.state))
        return;
    const std::string dir = job_dir(job.id);
    const ExitStatus status = read_exit_status(dir);
    const ExitContext context{job.stop, job.restarts, job.request.max_restarts, job.preempted_by, job.request.budget,
                              config_.currency};
    if (status.present) {
        ingest_all(job, true); // everything the job wrote comes before its end
        end_run(job, classify_exit(status, context));
        return;
    }
    const Executor::Check check = executor_->check(job.run, dir, job.reason);
    if (!check.reason.empty() && job.state == JobState::running) {
        job.reason = check.reason;
        add_state_event(job);
        job.dirty = true;
    }
    if (check.ended && !read_exit_status(dir).present) {
        ingest_all(job, false);
        end_run(job, classify_vanished(check.what, context));
    }
}

void Supervisor::end_run(Job& job, const ExitDecision& decision) {
    job.exit_code = decision.exit_code;
    if (decision.retry)
        ++job.restarts;
    finish_run(job, decision.state, decision.reason);
}

void Supervisor::finish_run(Job& job, JobState state, const std::string& reason) {
    meter(job, wall_seconds());
    if (job.state != JobState::queued)
        keep_dataset_intact(job, true);
    for (int gpu : job.gpus)
        if (gpu >= 0 && gpu < static_cast<int>(gpu_used_.size()))
            gpu_used_[gpu] = std::max(0, gpu_used_[gpu] - job.request.resources.units_per_gpu());
    job.gpus.clear();
    if (job.pid > 0)
        telemetry_.forget_process(job.pid);
    job.run = JobRun{};
    job.pid = -1;
    job.close_files();
    job.stop = StopReason::none;
    job.stop_sent = 0;
    job.state = state;
    job.reason = reason;
    if (is_finished(state))
        job.finished = wall_seconds();
    add_state_event(job);
    job.dirty = true;
    if (sweeps_)
        sweeps_->on_job_state(job.id, state);
}

void Supervisor::schedule() {
    SchedulerState state{{}, config_.cpu_slots, config_.memory_mb, gpu_used_};
    for (const auto& [id, job] : jobs_)
        state.jobs.push_back(
            {id, job->request.priority, job->request.resources, job->state, job->preempted_by, job->gpus});
    const SchedulerPlan plan = executor_->schedules_jobs() ? plan_handover(state) : plan_local(state);
    for (const SchedulerPlan::Start& start : plan.starts) {
        Job& job = *jobs_.at(start.job);
        for (int gpu : start.gpus) {
            gpu_used_[gpu] += job.request.resources.units_per_gpu();
            job.gpus.push_back(gpu);
        }
        start_job(job);
    }
    for (const SchedulerPlan::Preemption& preemption : plan.preemptions) {
        Job& victim = *jobs_.at(preemption.victim);
        victim.preempted_by = preemption.for_job;
        signal_job(victim, StopReason::preempt, SIGTERM);
    }
}

void Supervisor::meter(Job& job, double now) {
    if (!is_active(job.state)) {
        job.meter.last = now;
        return;
    }
    const Resources& r = job.request.resources;
    const double rate = rate_per_hour({config_.price_base, config_.price_gpu, config_.price_cpu}, r);
    charge(job.spend, job.run_seconds, job.meter, now, rate);
    job.dirty = true;

    json telemetry = {{"spend", job.spend}, {"rate_per_hour", rate}, {"run_seconds", job.run_seconds},
                      {"currency", config_.currency}};
    double utilization = -1;
    if (job.pid > 0) {
        const ProcessSample process = telemetry_.sample_process(job.pid);
        if (process.alive) {
            telemetry["cpu_percent"] = process.cpu_percent;
            telemetry["rss_mb"] = process.rss_mb;
            utilization = process.cpu_percent / std::max(1, r.cpus);
        }
    }
    if (!job.gpus.empty()) {
        const auto samples = telemetry_.sample_gpus();
        json gpus = json::array();
        double sum = 0;
        for (int index : job.gpus) {
            if (index >= static_cast<int>(samples.size()))
                continue;
            const GpuSample& g = samples[index];
            gpus.push_back({{"index", g.index}, {"utilization", g.utilization}, {"memory_used_mb", g.memory_used_mb},
                            {"memory_total_mb", g.memory_total_mb}, {"power_w", g.power_w},
                            {"temperature_c", g.temperature_c}});
            sum += g.utilization;
        }
        telemetry["gpus"] = gpus;
        utilization = sum / job.gpus.size();
    }
    add_event(job, "telemetry", telemetry.dump());

    if (job.state != JobState::running)
        return;
    const MeterVerdict verdict =
        judge(job.spend, job.run_seconds, job.request.budget, utilization, now, job.meter,
              {config_.idle_percent, config_.idle_seconds, config_.idle_stop}, config_.budget_warn_percent);
    // "budget_80": the alert's name from when the threshold was fixed at 80 %; the message says the one in force.
    if (verdict.warn_budget)
        add_event(job, "warning",
                  json{{"message", percent_text(config_.budget_warn_percent) + "% of the budget spent"},
                       {"alert", "budget_80"},
                       {"spend", job.spend},
                       {"budget", job.request.budget}}
                      .dump());
    if (verdict.budget_reached) {
        add_event(job, "warning", json{{"message", "budget reached; stopping with a checkpoint"},
                                       {"alert", "budget_100"}, {"spend", job.spend}, {"budget", job.request.budget}}.dump());
        signal_job(job, StopReason::budget, SIGTERM);
        return;
    }
    if (verdict.report_idle) {
        add_event(job, "warning", json{{"message", "idle: utilisation under " + std::to_string(int(config_.idle_percent)) +
                                                       "% for " + std::to_string(int(verdict.idle_for)) + " s"},
                                       {"alert", "idle"}, {"utilization", utilization}}.dump());
        if (verdict.stop_idle)
            signal_job(job, StopReason::idle, SIGTERM);
    }
}

json Supervisor::resources() {
    // Other threads get the snapshot the loop takes every second: Telemetry belongs to the loop's thread.
    if (thread_.joinable() && std::this_thread::get_id() != thread_.get_id()) {
        std::lock_guard lock(resources_mutex_);
        return resources_snapshot_;
    }
    const HostSample host = telemetry_.sample_host();
    json gpus = json::array();
    for (const GpuSample& g : telemetry_.sample_gpus())
        gpus.push_back({{"index", g.index},
                        {"name", g.name},
                        {"utilization", g.utilization},
                        {"memory_used_mb", g.memory_used_mb},
                        {"memory_total_mb", g.memory_total_mb},
                        {"power_w", g.power_w},
                        {"temperature_c", g.temperature_c},
                        {"busy", g.index < static_cast<int>(gpu_used_.size()) && gpu_used_[g.index] > 0},
                        {"share_used", g.index < static_cast<int>(gpu_used_.size())
                                           ? static_cast<double>(gpu_used_[g.index]) / gpu_units
                                           : 0.0}});
    json answer = {{"gpus", gpus},
            {"gpu_status", telemetry_.gpu_status().empty() ? "ok" : telemetry_.gpu_status()},
            {"cpus", config_.cpu_slots},
            {"memory_mb", config_.memory_mb},
            {"host", {{"cpu_percent", host.cpu_percent}, {"cpu_count", host.cpu_count},
                      {"memory_used_mb", host.memory_used_mb}, {"memory_total_mb", host.memory_total_mb}}},
            {"prices", {{"base_per_hour", config_.price_base}, {"gpu_per_hour", config_.price_gpu},
                        {"cpu_per_hour", config_.price_cpu}, {"currency", config_.currency}}}};
    // What a reproduced built-in run depends on (the engine's build): asked of traindeck-train once.
    if (engine_.is_null())
        engine_ = capture_engine(config_.train_binary);
    answer["engine"] = engine_;
    answer["traindeck"] = config_.version;
    executor_->describe_resources(answer);
    return answer;
}

} // namespace traindeck::worker
