#include "supervisor.h"

#include "jobshim.h"
#include "jsonscan.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace traindeck::worker {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

double wall_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

constexpr const char* kStreams[3] = {"metrics", "stdout", "stderr"};
constexpr const char* kFiles[3] = {"metrics.jsonl", "stdout.log", "stderr.log"};
constexpr size_t kMaxLine = 1 << 20;    // a longer "line" is cut into pieces of this size
constexpr size_t kMaxLogText = 16384;   // log events keep this much of a very long line
constexpr int kExitPreempted = 75;      // traindeck-train (and the Python helper) after a checkpoint on SIGTERM

bool is_terminal(const std::string& state) {
    return state == "succeeded" || state == "failed" || state == "cancelled" || state == "stopped";
}

bool alive_shim(pid_t pid, const std::string& job_dir) {
    if (pid <= 0 || ::kill(pid, 0) != 0)
        return false;
    std::ifstream cmdline("/proc/" + std::to_string(pid) + "/cmdline");
    std::string text((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
    std::replace(text.begin(), text.end(), '\0', ' ');
    // Guards against a recycled pid: it must still be this job's shim.
    return text.find("--run-job") != std::string::npos && text.find(job_dir) != std::string::npos;
}

} // namespace

bool inherited_by_jobs(const std::string& name) {
    static const char* const kInherited[] = {"PATH", "HOME", "LANG", "LANGUAGE", "TZ", "USER", "LOGNAME", "TMPDIR", "TERM"};
    for (const char* allowed : kInherited)
        if (name == allowed)
            return true;
    return name.rfind("LC_", 0) == 0;
}

struct Supervisor::Job {
    int64_t id = 0;
    JobRequest request;
    std::string state = "queued", reason;
    int restarts = 0;
    int64_t next_seq = 1;
    int64_t offsets[3] = {0, 0, 0};
    pid_t shim = -1;
    pid_t pid = -1;
    std::vector<int> gpus;
    double spend = 0, run_seconds = 0;
    double submitted = 0, started = 0, finished = 0;
    double last_meter = 0;
    int64_t warnings = 0;
    std::string stop_kind; // preempt | cancel | budget | idle
    double stop_sent = 0;
    int64_t preempted_by = 0;
    double idle_since = 0;
    bool idle_reported = false, budget_warned = false;
    int exit_code = -1;
    bool dirty = false;
    int fds[3] = {-1, -1, -1}; // the job's output files, open while it runs
    bool shim_reaped = false;  // our child shim exited: its exit_status.json is there to read
    std::string slurm_id;      // the Slurm job running this run (Slurm executor)
    double slurm_gone_since = 0;

    void close_files() {
        for (int& fd : fds)
            if (fd >= 0) {
                ::close(fd);
                fd = -1;
            }
    }
    ~Job() { close_files(); }
};

void EventBoard::publish(int64_t job, int64_t last_seq, bool finished) {
    {
        std::lock_guard lock(mutex_);
        jobs_[job] = {last_seq, finished};
    }
    changed_.notify_all();
}

int64_t EventBoard::wait(int64_t job, int64_t after, int timeout_ms) {
    std::unique_lock lock(mutex_);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    changed_.wait_until(lock, deadline, [&] {
        const auto it = jobs_.find(job);
        return it != jobs_.end() && (it->second.first > after || it->second.second);
    });
    const auto it = jobs_.find(job);
    return it == jobs_.end() ? 0 : it->second.first;
}

std::vector<int64_t> EventBoard::wait_any(const std::map<int64_t, int64_t>& after, int timeout_ms) {
    std::vector<int64_t> ready;
    const auto collect = [&] {
        ready.clear();
        for (const auto& [job, seq] : after)
            if (const auto it = jobs_.find(job); it != jobs_.end() && (it->second.first > seq || it->second.second))
                ready.push_back(job);
        return !ready.empty();
    };
    std::unique_lock lock(mutex_);
    changed_.wait_until(lock, std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms), collect);
    return ready;
}

Supervisor::Supervisor(WorkerConfig config, EventBoard& board) : config_(std::move(config)), board_(board) {
    if (config_.cpu_slots <= 0)
        config_.cpu_slots = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
    if (config_.memory_mb <= 0)
        config_.memory_mb = static_cast<int64_t>(telemetry_.sample_host().memory_total_mb);
    gpu_busy_.assign(telemetry_.gpu_count(), false);
    if (config_.executor == "slurm")
        slurm_ = std::make_unique<SlurmExecutor>(SlurmSettings{config_.slurm_rest, config_.slurm_user, config_.slurm_token_file,
                                                               config_.slurm_partition, config_.slurm_conf});
}

Supervisor::~Supervisor() {
    stop();
    for (auto& [id, job] : jobs_)
        delete job;
}

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
        db_.exec(R"(
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
            CREATE TABLE IF NOT EXISTS events(
                job INTEGER NOT NULL REFERENCES jobs(id),
                seq INTEGER NOT NULL,
                time REAL NOT NULL,
                type TEXT NOT NULL,
                data TEXT NOT NULL,
                PRIMARY KEY(job, seq)) WITHOUT ROWID;
            INSERT OR IGNORE INTO meta(key, value) VALUES('schema_version', '1');
        )");
        recover();
    } catch (const std::exception& e) {
        return database_path() + ": " + e.what();
    }
    resources_snapshot_ = resources();
    // WAL checkpoints copy pages back into the database file; done by the writer they stall ingestion for
    // tens of milliseconds at a time. A connection of its own checkpoints in the background instead.
    db_.exec("PRAGMA wal_autocheckpoint=0");
    if (auto error = checkpointer_db_.open(database_path(), false); !error.empty())
        return error;
    checkpointer_ = std::thread([this] {
        while (!stopping_) {
            {
                std::unique_lock lock(commands_mutex_);
                commands_changed_.wait_for(lock, std::chrono::milliseconds(500), [&] { return stopping_.load(); });
            }
            try {
                checkpointer_db_.exec("PRAGMA wal_checkpoint(PASSIVE)");
            } catch (const std::exception& e) {
                std::fprintf(stderr, "traindeck-worker: WAL checkpoint: %s\n", e.what());
            }
        }
    });
    thread_ = std::thread([this] { loop(); });
    return {};
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

namespace {
constexpr const char* kJobColumns =
    "SELECT id, request, state, reason, restarts, next_seq, metrics_offset, stdout_offset, stderr_offset, shim_pid, "
    "pid, gpus, spend, run_seconds, warnings, submitted, started FROM jobs";
}

Supervisor::Job* Supervisor::job_from_row(const Statement& select) {
    auto* job = new Job;
    job->id = select.integer(0);
    std::string error;
    parse_job_request(json::parse(select.text(1)), job->request, error);
    job->state = select.text(2);
    job->reason = select.text(3);
    job->restarts = static_cast<int>(select.integer(4));
    job->next_seq = select.integer(5);
    for (int i = 0; i < 3; ++i)
        job->offsets[i] = select.integer(6 + i);
    job->shim = static_cast<pid_t>(select.integer(9));
    job->pid = static_cast<pid_t>(select.integer(10));
    job->gpus = json::parse(select.text(11)).get<std::vector<int>>();
    job->spend = select.real(12);
    job->run_seconds = select.real(13);
    job->warnings = select.integer(14);
    job->submitted = select.real(15);
    job->started = select.real(16);
    job->last_meter = wall_now();
    return job;
}

void Supervisor::recover() {
    Statement select = db_.prepare(std::string(kJobColumns) +
                                   " WHERE state NOT IN ('succeeded','failed','cancelled','stopped') ORDER BY id");
    std::vector<Job*> recovered;
    while (select.step()) {
        Job* job = job_from_row(select);
        // What a stopping job was asked to do decides what its exit means; the state and reason remember it.
        if (job->state == "preempting")
            job->stop_kind = "preempt";
        else if (job->state == "stopping")
            job->stop_kind = job->reason.rfind("cancel", 0) == 0 ? "cancel"
                             : job->reason.rfind("budget", 0) == 0 ? "budget" : "idle";
        recovered.push_back(job);
    }
    std::string error;
    if (!commit([&] { recover_jobs(recovered); }, &error))
        throw std::runtime_error("cannot record the recovered jobs: " + error);
}

void Supervisor::recover_jobs(const std::vector<Job*>& recovered) {
    for (Job* job : recovered) {
        jobs_[job->id] = job;
        if (job->state == "queued")
            continue;
        for (int gpu : job->gpus)
            if (gpu >= 0 && gpu < static_cast<int>(gpu_busy_.size()))
                gpu_busy_[gpu] = true;
        const std::string dir = job_dir(job->id);
        if (slurm_) {
            std::ifstream in(dir + "/slurm_job");
            in >> job->slurm_id;
        }
        if (read_exit_status(dir).present || alive_shim(job->shim, dir) || !job->slurm_id.empty()) {
            // Still running (or ended while we were away): keep reading its files from the saved offsets.
            add_event(*job, "warning", json{{"message", "worker restarted; job re-adopted"}}.dump());
            continue;
        }
        // The job died with the worker (machine restart): it goes back to the queue and resumes from its checkpoint.
        ingest(*job);
        job->reason = "lost with the previous worker process; resuming from the last checkpoint";
        finish_run(*job, "queued", job->reason);
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
    // Reap our shims; how their jobs ended is in exit_status.json, read below.
    for (pid_t reaped; (reaped = ::waitpid(-1, nullptr, WNOHANG)) > 0;)
        for (auto& [id, job] : jobs_)
            if (job->shim == reaped)
                job->shim_reaped = true;
    // Each command is its own transaction, so that a failed commit undoes exactly that command and says so.
    for (auto& command : commands)
        commit(command);
    const double now = wall_now();
    // While commits fail (a full disk), what is not yet written stays in the jobs' files: read no more of them
    // than a bounded backlog; their offsets resume the reading once the database takes writes again.
    const bool backlog = pending_events_.size() > 200000 || pending_text_.size() > (256u << 20);
    if (slurm_ && meter_now)
        poll_slurm();
    std::vector<Job*> active;
    for (auto& [id, job] : jobs_)
        active.push_back(job);
    for (Job* job : active) {
        if (job->state == "queued")
            continue;
        if (!backlog)
            ingest(*job);
        if (meter_now)
            meter(*job, now);
        // Exits are noticed when we reap our shim; a re-adopted job's shim is not our child, so its liveness is
        // checked once a second instead (each check reads /proc).
        if (job->shim_reaped || meter_now)
            check_exit(*job);
        if (!job->stop_kind.empty() && job->state != "queued" && !is_terminal(job->state) && job->stop_sent > 0 &&
            now - job->stop_sent > config_.stop_grace_seconds) {
            add_event(*job, "warning",
                      json{{"message", "job did not stop within " + std::to_string(int(config_.stop_grace_seconds)) +
                                           " s of SIGTERM; sending SIGKILL"}}.dump());
            if (job->shim > 0)
                ::kill(-job->shim, SIGKILL);
            if (!job->slurm_id.empty()) {
                std::string error;
                if (!slurm_->cancel(job->slurm_id, error))
                    add_event(*job, "warning", json{{"message", error}}.dump());
            }
            job->stop_sent = now + 1e9; // once
        }
    }
    schedule();
    commit(nullptr);
    if (meter_now) {
        json snapshot = resources();
        std::lock_guard lock(resources_mutex_);
        resources_snapshot_ = snapshot;
    }
}

void Supervisor::add_event(Job& job, const char* type, std::string_view data) {
    pending_events_.push_back({job.id, job.next_seq, wall_now(), type, pending_text_.size(), data.size()});
    pending_text_.append(data);
    ++job.next_seq;
    job.dirty = true;
}

void Supervisor::write_pending() {
    if (!insert_event_.prepared())
        insert_event_ = db_.prepare("INSERT INTO events(job, seq, time, type, data) VALUES(?, ?, ?, ?, ?)");
    Statement& insert = insert_event_;
    for (const PendingEvent& event : pending_events_) {
        insert.reset();
        // Static binds: the arena stays valid until step() has copied the bytes into the page.
        insert.bind(1, event.job).bind(2, event.seq).bind(3, event.time).bind_static(4, event.type);
        insert.bind_static(5, std::string_view(pending_text_).substr(event.offset, event.length));
        insert.step();
    }
    for (auto& [id, job] : jobs_)
        if (job->dirty)
            save_job(*job);
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
    for (auto& [id, announcement] : pending_announcements_)
        board_.publish(id, announcement.first, announcement.second);
    pending_announcements_.clear();
    for (auto it = jobs_.begin(); it != jobs_.end();) {
        if (is_terminal(it->second->state)) {
            delete it->second;
            it = jobs_.erase(it);
        } else {
            ++it;
        }
    }
    return true;
}

void Supervisor::add_state_event(Job& job) {
    json data = {{"state", job.state}, {"reason", job.reason}, {"restarts", job.restarts}};
    if (job.pid > 0 && job.state == "running")
        data["pid"] = job.pid;
    if (job.exit_code >= 0)
        data["exit_code"] = job.exit_code;
    add_event(job, "state", data.dump());
}

void Supervisor::save_job(Job& job) {
    if (!update_job_.prepared())
        update_job_ = db_.prepare(
            "UPDATE jobs SET state=?, reason=?, restarts=?, next_seq=?, metrics_offset=?, stdout_offset=?, "
            "stderr_offset=?, shim_pid=?, pid=?, gpus=?, spend=?, run_seconds=?, warnings=?, exit_code=?, started=?, "
            "finished=? WHERE id=?");
    Statement& update = update_job_;
    update.reset();
    update.bind(1, job.state).bind(2, job.reason).bind(3, int64_t(job.restarts)).bind(4, job.next_seq);
    update.bind(5, job.offsets[0]).bind(6, job.offsets[1]).bind(7, job.offsets[2]);
    update.bind(8, int64_t(job.shim)).bind(9, int64_t(job.pid)).bind(10, json(job.gpus).dump());
    update.bind(11, job.spend).bind(12, job.run_seconds).bind(13, job.warnings).bind(14, int64_t(job.exit_code));
    update.bind(15, job.started).bind(16, job.finished).bind(17, job.id);
    update.step();
    job.dirty = false;
    // One announcement per job per commit (save_job runs for every job that changed).
    pending_announcements_.push_back({job.id, {job.next_seq - 1, is_terminal(job.state)}});
}

Supervisor::Result Supervisor::submit(const JobRequest& request) {
    auto promise = std::make_shared<std::promise<Result>>();
    auto future = promise->get_future();
    {
        std::lock_guard lock(commands_mutex_);
        commands_.push_back([this, request, promise] {
            if (!slurm_ && (request.resources.gpus > static_cast<int>(gpu_busy_.size()) || request.resources.cpus > config_.cpu_slots ||
                            request.resources.memory_mb > config_.memory_mb)) {
                promise->set_value({422, {{"error", "the job asks for more than this worker has (" +
                                                        std::to_string(gpu_busy_.size()) + " GPUs, " +
                                                        std::to_string(config_.cpu_slots) + " CPUs, " +
                                                        std::to_string(config_.memory_mb) + " MB); it could never run"}}});
                return;
            }
            if (!request.dataset.empty() && store_.dataset_path(request.dataset).empty()) {
                promise->set_value({409, {{"error", "dataset version " + request.dataset.substr(0, 12) +
                                                        "… is not on this worker; upload it first"}}});
                return;
            }
            if (!request.checkpoint_from.empty() && store_.dataset_path(request.checkpoint_from).empty()) {
                promise->set_value({409, {{"error", "checkpoint version " + request.checkpoint_from.substr(0, 12) +
                                                        "… is not on this worker; upload it first"}}});
                return;
            }
            auto* job = new Job;
            job->request = request;
            job->submitted = wall_now();
            // If the commit fails (a full disk), the job never existed: not in memory, not on disk, and the
            // client is told to submit again. Registered first, so that even a failed INSERT is answered.
            const size_t events_mark = pending_events_.size(), text_mark = pending_text_.size();
            after_commit_.push_back([this, promise, job, events_mark, text_mark](bool committed, const std::string& error) {
                if (committed) {
                    promise->set_value({201, {{"id", job->id}, {"state", "queued"}}});
                    return;
                }
                pending_events_.resize(events_mark);
                pending_text_.resize(text_mark);
                if (job->id > 0) {
                    jobs_.erase(job->id);
                    std::error_code ec;
                    fs::remove_all(job_dir(job->id), ec);
                }
                delete job;
                promise->set_value({error.find("full") != std::string::npos ? 507 : 500,
                                    {{"error", "the job could not be stored (" + error + "); nothing was kept, submit it again"}}});
            });
            Statement insert = db_.prepare("INSERT INTO jobs(name, request, state, priority, submitted) VALUES(?, ?, 'queued', ?, ?)");
            insert.bind(1, request.name).bind(2, request.to_json().dump()).bind(3, int64_t(request.priority)).bind(4, job->submitted);
            insert.step();
            job->id = db_.last_insert_id();
            std::error_code ec;
            fs::create_directories(job_dir(job->id) + "/checkpoints", ec);
            std::string error;
            if (!request.builtin.is_null())
                write_file_atomically(job_dir(job->id) + "/spec.json", request.builtin.dump(2), error);
            // A job moved here from a lost worker starts from the checkpoint it brought.
            if (!request.checkpoint_from.empty())
                for (const auto& entry : fs::directory_iterator(store_.dataset_path(request.checkpoint_from), ec))
                    if (entry.path().extension() == ".tdck")
                        fs::copy_file(entry.path(), job_dir(job->id) + "/checkpoints/" + entry.path().filename().string(),
                                      fs::copy_options::overwrite_existing, ec);
            jobs_[job->id] = job;
            job->reason = "waiting for resources";
            add_state_event(*job);
        });
    }
    commands_changed_.notify_all();
    if (future.wait_for(std::chrono::seconds(30)) != std::future_status::ready)
        return {503, {{"error", "the worker is busy; try again"}}};
    return future.get();
}

Supervisor::Result Supervisor::cancel(int64_t id) {
    auto promise = std::make_shared<std::promise<Result>>();
    auto future = promise->get_future();
    {
        std::lock_guard lock(commands_mutex_);
        commands_.push_back([this, id, promise] {
            const auto it = jobs_.find(id);
            if (it == jobs_.end()) {
                Statement select = db_.prepare("SELECT state FROM jobs WHERE id=?");
                select.bind(1, id);
                if (select.step())
                    promise->set_value({409, {{"error", "job " + std::to_string(id) + " is already " + select.text(0)}}});
                else
                    promise->set_value({404, {{"error", "no job " + std::to_string(id)}}});
                return;
            }
            Job& job = *it->second;
            if (job.state == "queued") {
                job.reason = "cancelled by the user before it started";
                job.finished = wall_now();
                job.state = "cancelled";
                add_state_event(job);
                job.dirty = true;
            } else {
                signal_job(job, "cancel", SIGTERM);
            }
            // The stop is under way whether or not this commit succeeds (the signal is sent; memory keeps its
            // events until the database takes them), so the answer is the same.
            after_commit_.push_back([promise, id, state = job.state](bool, const std::string&) {
                promise->set_value(Result{202, {{"id", id}, {"state", state}}});
            });
        });
    }
    commands_changed_.notify_all();
    if (future.wait_for(std::chrono::seconds(30)) != std::future_status::ready)
        return {503, {{"error", "the worker is busy; try again"}}};
    return future.get();
}

Supervisor::Result Supervisor::resume(int64_t id, double new_budget) {
    auto promise = std::make_shared<std::promise<Result>>();
    auto future = promise->get_future();
    {
        std::lock_guard lock(commands_mutex_);
        commands_.push_back([this, id, new_budget, promise] {
            if (jobs_.count(id)) {
                promise->set_value({409, {{"error", "job " + std::to_string(id) + " is still active"}}});
                return;
            }
            Statement select = db_.prepare(std::string(kJobColumns) + " WHERE id=?");
            select.bind(1, id);
            if (!select.step()) {
                promise->set_value({404, {{"error", "no job " + std::to_string(id)}}});
                return;
            }
            Job* job = job_from_row(select);
            if (job->state == "succeeded") {
                delete job;
                promise->set_value({409, {{"error", "job " + std::to_string(id) + " already finished"}}});
                return;
            }
            if (new_budget > 0)
                job->request.budget = new_budget;
            if (job->request.budget > 0 && job->spend >= job->request.budget) {
                const double spent = job->spend;
                delete job;
                promise->set_value({422, {{"error", "the job has spent " + std::to_string(spent) + " of its budget; give a "
                                                    "higher \"budget\" to resume it"}}});
                return;
            }
            // Back to the queue: it restarts from its last checkpoint (built-in jobs with --resume, scripts see
            // TRAINDECK_RESUME=1), keeping its events, spend and counters.
            job->gpus.clear();
            job->shim = job->pid = -1;
            job->finished = 0;
            job->exit_code = -1;
            job->state = "queued";
            job->reason = "resumed by the user; continues from its last checkpoint";
            // A failed commit leaves the job as it was in the database: out of the active table again.
            const size_t events_mark = pending_events_.size(), text_mark = pending_text_.size();
            after_commit_.push_back([this, promise, id, job, events_mark, text_mark](bool committed, const std::string& error) {
                if (committed) {
                    promise->set_value({202, {{"id", id}, {"state", "queued"}}});
                    return;
                }
                pending_events_.resize(events_mark);
                pending_text_.resize(text_mark);
                jobs_.erase(id);
                delete job;
                promise->set_value({error.find("full") != std::string::npos ? 507 : 500,
                                    {{"error", "the resume could not be stored (" + error + "); try again"}}});
            });
            jobs_[id] = job;
            Statement update = db_.prepare("UPDATE jobs SET request=? WHERE id=?");
            update.bind(1, job->request.to_json().dump()).bind(2, id);
            update.step();
            add_state_event(*job);
            job->dirty = true;
        });
    }
    commands_changed_.notify_all();
    if (future.wait_for(std::chrono::seconds(30)) != std::future_status::ready)
        return {503, {{"error", "the worker is busy; try again"}}};
    return future.get();
}

void Supervisor::signal_job(Job& job, const std::string& kind, int signal) {
    if (job.stop_kind.empty() || kind == "cancel")
        job.stop_kind = kind;
    if (job.stop_sent == 0)
        job.stop_sent = wall_now();
    if (job.shim > 0)
        ::kill(-job.shim, signal); // the job's whole process group; the shim outlives it to record the exit
    if (!job.slurm_id.empty()) {
        // On a cluster node only the shim can reach the job: it forwards what it finds in its signal file.
        std::string error;
        write_file_atomically(job_dir(job.id) + "/signal", std::to_string(signal) + "\n", error);
    }
    job.state = kind == "preempt" ? "preempting" : "stopping";
    job.reason = kind == "preempt"    ? "preempted by job " + std::to_string(job.preempted_by) + "; checkpointing"
                 : kind == "cancel"   ? "cancel requested; checkpointing"
                 : kind == "budget"   ? "budget reached; checkpointing"
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
    const std::string dir = job_dir(job.id);
    if (std::string unusable = keep_dataset_intact(job, false); !unusable.empty()) {
        finish_run(job, "failed", unusable);
        return;
    }
    ::unlink((dir + "/exit_status.json").c_str());
    ::unlink((dir + "/pid").c_str());
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
    // The job sees only what it needs of the worker's own environment: never the worker's secrets (SLURM_JWT,
    // tokens, cloud keys) or settings meant for the worker alone. Everything else comes from the request.
    std::map<std::string, std::string> env;
    for (char** e = environ; *e; ++e) {
        const std::string entry = *e;
        const size_t eq = entry.find('=');
        if (eq != std::string::npos && inherited_by_jobs(entry.substr(0, eq)))
            env[entry.substr(0, eq)] = entry.substr(eq + 1);
    }
    for (const auto& [key, value] : job.request.env)
        env[key] = value;
    std::string visible;
    for (int gpu : job.gpus)
        visible += (visible.empty() ? "" : ",") + std::to_string(gpu);
    if (slurm_)
        env.erase("CUDA_VISIBLE_DEVICES"); // Slurm sets it on the node for the GPUs it allocated
    else
        env["CUDA_VISIBLE_DEVICES"] = visible;
    env["TRAINDECK_METRICS_FD"] = "3";
    env["TRAINDECK_CHECKPOINT_DIR"] = dir + "/checkpoints";
    // A job's dataset is its version's read-only folder in the store; jobs without one get an empty folder.
    env["TRAINDECK_DATASET_DIR"] = job.request.dataset.empty() ? dir + "/data" : store_.dataset_path(job.request.dataset);
    env["TRAINDECK_JOB_ID"] = std::to_string(job.id);
    env["TRAINDECK_RESUME"] = resume ? "1" : "0";
    // A built-in job on several GPUs is one traindeck-train per GPU: rank 0 starts the others (data parallel, NCCL).
    env["WORLD_SIZE"] = std::to_string(job.request.builtin.is_null() ? 1 : std::max(1, job.request.resources.gpus));
    env["RANK"] = "0";
    env["LOCAL_RANK"] = "0";
    env["OMP_NUM_THREADS"] = std::to_string(std::max(1, job.request.resources.cpus));
    for (const auto& [key, value] : env)
        plan.env.push_back(key + "=" + value);
    std::string error;
    if (!write_launch_plan(dir, plan, error) ||
        (slurm_ ? !submit_to_slurm(job, dir, error) : (job.shim = spawn_shim(config_.self_binary, dir, error)) < 0)) {
        job.exit_code = -1;
        finish_run(job, "failed", error);
        return;
    }
    job.pid = -1;
    job.state = "running";
    const std::string where = slurm_ ? " (Slurm job " + job.slurm_id + ")" : "";
    job.reason = job.restarts > 0 ? "restart " + std::to_string(job.restarts) + " of " +
                                        std::to_string(job.request.max_restarts) + ", from the last checkpoint"
                 : resume         ? "resumed from its checkpoint"
                                  : "started";
    job.reason += where;
    job.started = wall_now();
    job.last_meter = job.started;
    job.stop_kind.clear();
    job.stop_sent = 0;
    job.idle_since = 0;
    job.idle_reported = false;
    job.exit_code = -1;
    add_state_event(job);
}

void Supervisor::ingest(Job& job) {
    const std::string dir = job_dir(job.id);
    for (int stream = 0; stream < 3; ++stream) {
        if (job.fds[stream] < 0)
            job.fds[stream] = ::open((dir + "/" + kFiles[stream]).c_str(), O_RDONLY | O_CLOEXEC);
        const int fd = job.fds[stream];
        if (fd < 0)
            continue;
        // Read straight into one buffer that lives as long as the supervisor: no copies, no allocation per tick.
        std::string& buffer = read_buffer_;
        buffer.clear();
        for (;;) {
            const size_t have = buffer.size();
            buffer.resize(have + 65536);
            const ssize_t n = ::pread(fd, buffer.data() + have, 65536, job.offsets[stream] + static_cast<off_t>(have));
            buffer.resize(have + static_cast<size_t>(std::max<ssize_t>(n, 0)));
            if (n <= 0)
                break;
            if (buffer.size() > 8 * kMaxLine)
                break; // the rest next tick
        }
        size_t start = 0;
        for (;;) {
            size_t end = buffer.find('\n', start);
            if (end == std::string::npos) {
                // An unfinished line waits for its newline, unless it is absurdly long.
                if (buffer.size() - start < kMaxLine)
                    break;
                end = start + kMaxLine;
            }
            std::string_view line(buffer.data() + start, end - start);
            const size_t consumed = end - start + (end < buffer.size() && buffer[end] == '\n' ? 1 : 0);
            if (!line.empty() && line.back() == '\r')
                line.remove_suffix(1);
            constexpr std::string_view prefix = "@traindeck ";
            const bool protocol = stream == 0 || (stream == 1 && line.substr(0, prefix.size()) == prefix);
            if (protocol) {
                std::string_view record = stream == 0 ? line : line.substr(prefix.size());
                if (record.empty()) {
                    // blank line on the metrics fd: nothing to record
                } else if (const JsonScan scan = scan_json_object(record); scan.object) {
                    if (scan.fixes.empty()) {
                        add_event(job, "record", record);
                    } else {
                        // Repaired, stored, and said: the record keeps everything that could be kept.
                        add_event(job, "record", scan.repaired(record));
                        ++job.warnings;
                        std::string what;
                        if (scan.bad_text)
                            what = std::to_string(scan.bad_text) + " invalid UTF-8 sequence(s) replaced by U+FFFD";
                        if (scan.bad_numbers)
                            what += (what.empty() ? "" : "; ") + std::to_string(scan.bad_numbers) +
                                    " number(s) out of range dropped (stored as null)";
                        add_event(job, "warning",
                                  json{{"message", "metrics line repaired: " + what},
                                       {"stream", kStreams[stream]},
                                       {"line", std::string(record.substr(0, kMaxLogText))},
                                       {"count", job.warnings}}
                                      .dump(-1, ' ', false, json::error_handler_t::replace));
                    }
                } else {
                    ++job.warnings;
                    add_event(job, "warning",
                              json{{"message", "metrics line is not a JSON object; skipped"},
                                   {"stream", kStreams[stream]},
                                   {"line", std::string(record.substr(0, kMaxLogText))},
                                   {"count", job.warnings}}
                                  .dump(-1, ' ', false, json::error_handler_t::replace));
                }
            } else {
                json data = {{"stream", kStreams[stream]}, {"line", std::string(line.substr(0, kMaxLogText))}};
                if (line.size() > kMaxLogText)
                    data["truncated_bytes"] = line.size() - kMaxLogText;
                add_event(job, "log", data.dump(-1, ' ', false, json::error_handler_t::replace));
            }
            job.offsets[stream] += static_cast<int64_t>(consumed);
            start += consumed;
            job.dirty = true;
        }
    }
    // A Slurm job's pid belongs to its node: no per-process telemetry for it here.
    if (job.pid <= 0 && job.state != "queued" && job.slurm_id.empty())
        job.pid = read_job_pid(dir);
}

void Supervisor::check_exit(Job& job) {
    if (job.state == "queued" || is_terminal(job.state))
        return;
    const std::string dir = job_dir(job.id);
    const ExitStatus status = read_exit_status(dir);
    if (!status.present) {
        const bool vanished = job.slurm_id.empty() ? job.shim > 0 && !alive_shim(job.shim, dir) : check_slurm(job);
        if (vanished && !read_exit_status(dir).present) {
            ingest(job);
            job.reason = job.slurm_id.empty() ? "the job's supervisor process vanished without recording an exit"
                                              : "Slurm job " + job.slurm_id + " ended (" + slurm_states_[job.slurm_id].state +
                                                    ") without recording an exit";
            job.exit_code = -1;
            if (job.stop_kind == "cancel") {
                finish_run(job, "cancelled", "cancelled by the user (" + job.reason + ")");
            } else if (job.stop_kind == "preempt") {
                finish_run(job, "queued", "preempted by job " + std::to_string(job.preempted_by) + " (" + job.reason +
                                              "); resumes from its checkpoint");
            } else if (!job.stop_kind.empty()) {
                finish_run(job, "stopped", "stopped (" + job.stop_kind + ", " + job.reason + "); checkpoint kept");
            } else if (job.restarts < job.request.max_restarts) {
                ++job.restarts;
                finish_run(job, "queued", job.reason + "; retrying from the last checkpoint");
            } else {
                finish_run(job, "failed", job.reason);
            }
        }
        return;
    }
    ingest(job); // everything the job wrote comes before its end
    job.exit_code = status.signal ? 128 + status.signal : status.exit_code;
    const std::string how = status.signal ? "killed by signal " + std::to_string(status.signal)
                                          : "exit code " + std::to_string(status.exit_code);
    if (!status.exec_error.empty()) {
        finish_run(job, "failed", status.exec_error);
    } else if (job.stop_kind == "cancel") {
        finish_run(job, "cancelled", "cancelled by the user (" + how + ")");
    } else if (job.stop_kind == "preempt") {
        finish_run(job, "queued", "preempted by job " + std::to_string(job.preempted_by) + " (" + how +
                                      "); resumes from its checkpoint");
    } else if (job.stop_kind == "budget") {
        finish_run(job, "stopped", "budget of " + std::to_string(job.request.budget) + " " + config_.currency +
                                       " reached (" + how + "); checkpoint kept");
    } else if (job.stop_kind == "idle") {
        finish_run(job, "stopped", "stopped by the idle policy (" + how + "); checkpoint kept");
    } else if (!status.signal && status.exit_code == 0) {
        finish_run(job, "succeeded", "finished");
    } else if (job.restarts < job.request.max_restarts) {
        ++job.restarts;
        finish_run(job, "queued", how + "; retry " + std::to_string(job.restarts) + " of " +
                                      std::to_string(job.request.max_restarts) + " from the last checkpoint");
    } else {
        finish_run(job, "failed", how + (job.request.max_restarts ? "; no restarts left" : ""));
    }
}

void Supervisor::finish_run(Job& job, const std::string& state, const std::string& reason) {
    meter(job, wall_now());
    if (job.state != "queued")
        keep_dataset_intact(job, true);
    for (int gpu : job.gpus)
        if (gpu >= 0 && gpu < static_cast<int>(gpu_busy_.size()))
            gpu_busy_[gpu] = false;
    job.gpus.clear();
    if (job.pid > 0)
        telemetry_.forget_process(job.pid);
    job.shim = -1;
    job.shim_reaped = false;
    job.slurm_id.clear();
    job.slurm_gone_since = 0;
    job.pid = -1;
    job.close_files();
    job.stop_kind.clear();
    job.stop_sent = 0;
    job.state = state;
    job.reason = reason;
    if (is_terminal(state))
        job.finished = wall_now();
    add_state_event(job);
    job.dirty = true;
}

void Supervisor::schedule() {
    if (slurm_) {
        // The cluster schedules: every queued job goes to Slurm, highest priority first.
        std::vector<Job*> queued;
        for (auto& [id, job] : jobs_)
            if (job->state == "queued")
                queued.push_back(job);
        std::stable_sort(queued.begin(), queued.end(),
                         [](const Job* a, const Job* b) { return a->request.priority > b->request.priority; });
        for (Job* job : queued)
            start_job(*job);
        return;
    }
    int free_cpus = config_.cpu_slots;
    int64_t free_memory = config_.memory_mb;
    int free_gpus = 0;
    std::vector<Job*> queued, holding;
    for (auto& [id, job] : jobs_) {
        if (job->state == "queued") {
            queued.push_back(job);
        } else if (!is_terminal(job->state)) {
            holding.push_back(job);
            free_cpus -= job->request.resources.cpus;
            free_memory -= job->request.resources.memory_mb;
        }
    }
    for (bool busy : gpu_busy_)
        free_gpus += !busy;
    std::stable_sort(queued.begin(), queued.end(),
                     [](const Job* a, const Job* b) { return a->request.priority > b->request.priority; });
    for (Job* job : queued) {
        const Resources& need = job->request.resources;
        if (need.cpus <= free_cpus && need.memory_mb <= free_memory && need.gpus <= free_gpus) {
            for (int g = 0, taken = 0; g < static_cast<int>(gpu_busy_.size()) && taken < need.gpus; ++g)
                if (!gpu_busy_[g]) {
                    gpu_busy_[g] = true;
                    job->gpus.push_back(g);
                    ++taken;
                }
            free_cpus -= need.cpus;
            free_memory -= need.memory_mb;
            free_gpus -= need.gpus;
            start_job(*job);
            continue;
        }
        // It does not fit. Lower-priority running jobs make room, lowest priority and newest first; what they
        // free is counted as soon as they are asked, so one tick never preempts more than needed.
        std::vector<Job*> victims;
        for (Job* running : holding)
            if (running->state == "running" && running->request.priority < job->request.priority)
                victims.push_back(running);
        std::sort(victims.begin(), victims.end(), [](const Job* a, const Job* b) {
            return a->request.priority != b->request.priority ? a->request.priority < b->request.priority : a->id > b->id;
        });
        int cpus = free_cpus, gpus = free_gpus;
        int64_t memory = free_memory;
        // Jobs already checkpointing for us count as free.
        for (Job* leaving : holding)
            if (leaving->state == "preempting" && leaving->preempted_by == job->id) {
                cpus += leaving->request.resources.cpus;
                memory += leaving->request.resources.memory_mb;
                gpus += leaving->request.resources.gpus;
            }
        std::vector<Job*> chosen;
        for (Job* victim : victims) {
            if (need.cpus <= cpus && need.memory_mb <= memory && need.gpus <= gpus)
                break;
            chosen.push_back(victim);
            cpus += victim->request.resources.cpus;
            memory += victim->request.resources.memory_mb;
            gpus += victim->request.resources.gpus;
        }
        if (need.cpus <= cpus && need.memory_mb <= memory && need.gpus <= gpus) {
            for (Job* victim : chosen) {
                victim->preempted_by = job->id;
                signal_job(*victim, "preempt", SIGTERM);
            }
        }
        // Strict priority order: nothing behind a waiting job jumps ahead of it, so it cannot starve.
        break;
    }
}

void Supervisor::meter(Job& job, double now) {
    if (job.state == "queued" || is_terminal(job.state)) {
        job.last_meter = now;
        return;
    }
    const double dt = std::max(0.0, now - job.last_meter);
    job.last_meter = now;
    const Resources& r = job.request.resources;
    const double rate = config_.price_base + config_.price_gpu * r.gpus + config_.price_cpu * r.cpus;
    job.spend += rate * dt / 3600.0;
    job.run_seconds += dt;
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
        utilization = job.gpus.empty() ? utilization : sum / job.gpus.size();
    }
    add_event(job, "telemetry", telemetry.dump());

    if (job.state != "running")
        return;
    if (job.request.budget > 0) {
        if (!job.budget_warned && job.spend >= 0.8 * job.request.budget) {
            job.budget_warned = true;
            add_event(job, "warning", json{{"message", "80% of the budget spent"}, {"alert", "budget_80"},
                                           {"spend", job.spend}, {"budget", job.request.budget}}.dump());
        }
        if (job.spend >= job.request.budget) {
            add_event(job, "warning", json{{"message", "budget reached; stopping with a checkpoint"},
                                           {"alert", "budget_100"}, {"spend", job.spend}, {"budget", job.request.budget}}.dump());
            signal_job(job, "budget", SIGTERM);
            return;
        }
    }
    if (utilization >= 0 && job.run_seconds > 2.0) {
        if (utilization < config_.idle_percent) {
            if (job.idle_since == 0)
                job.idle_since = now;
            if (!job.idle_reported && now - job.idle_since >= config_.idle_seconds) {
                job.idle_reported = true;
                add_event(job, "warning", json{{"message", "idle: utilisation under " + std::to_string(int(config_.idle_percent)) +
                                                               "% for " + std::to_string(int(now - job.idle_since)) + " s"},
                                               {"alert", "idle"}, {"utilization", utilization}}.dump());
                if (config_.idle_stop)
                    signal_job(job, "idle", SIGTERM);
            }
        } else {
            job.idle_since = 0;
        }
    }
}

bool Supervisor::submit_to_slurm(Job& job, const std::string& dir, std::string& error) {
    ::unlink((dir + "/signal").c_str());
    ::unlink((dir + "/signal.sent").c_str());
    job.slurm_id = slurm_->submit(config_.self_binary, dir, job.request, error);
    if (job.slurm_id.empty())
        return false;
    job.shim = -1;
    job.slurm_gone_since = 0;
    // Kept with the job's files so that a restarted worker re-adopts it.
    return write_file_atomically(dir + "/slurm_job", job.slurm_id + "\n", error);
}

void Supervisor::poll_slurm() {
    bool any = false;
    for (auto& [id, job] : jobs_)
        any = any || !job->slurm_id.empty();
    if (!any)
        return;
    std::string error;
    slurm_states_ok_ = slurm_->states(slurm_states_, error);
    if (!slurm_states_ok_ && error != slurm_error_)
        std::fprintf(stderr, "traindeck-worker: cannot ask Slurm for job states: %s\n", error.c_str());
    slurm_error_ = slurm_states_ok_ ? std::string() : error;
}

// Mirrors Slurm's view into the job's reason; true when Slurm has ended the job (for a few seconds, so that an
// exit status written just before is read first).
bool Supervisor::check_slurm(Job& job) {
    if (!slurm_states_ok_)
        return false; // Slurm cannot be asked right now: nothing is concluded from silence
    const auto it = slurm_states_.find(job.slurm_id);
    const std::string state = it == slurm_states_.end() ? "GONE" : it->second.state;
    if (SlurmExecutor::is_active(state)) {
        job.slurm_gone_since = 0;
        const std::string reason = state == "PENDING" ? "pending in Slurm job " + job.slurm_id + " (" + it->second.reason + ")"
                                                      : "running in Slurm job " + job.slurm_id;
        if (job.state == "running" && job.reason != reason && (state == "PENDING" || job.reason.rfind("pending in Slurm", 0) == 0)) {
            job.reason = reason;
            add_state_event(job);
            job.dirty = true;
        }
        return false;
    }
    if (job.slurm_gone_since == 0)
        job.slurm_gone_since = wall_now();
    return wall_now() - job.slurm_gone_since > 3.0;
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
        gpus.push_back({{"index", g.index}, {"name", g.name}, {"utilization", g.utilization},
                        {"memory_used_mb", g.memory_used_mb}, {"memory_total_mb", g.memory_total_mb},
                        {"power_w", g.power_w}, {"temperature_c", g.temperature_c},
                        {"busy", g.index < static_cast<int>(gpu_busy_.size()) && gpu_busy_[g.index]}});
    json answer = {{"gpus", gpus},
            {"gpu_status", telemetry_.gpu_status().empty() ? "ok" : telemetry_.gpu_status()},
            {"cpus", config_.cpu_slots},
            {"memory_mb", config_.memory_mb},
            {"host", {{"cpu_percent", host.cpu_percent}, {"cpu_count", host.cpu_count},
                      {"memory_used_mb", host.memory_used_mb}, {"memory_total_mb", host.memory_total_mb}}},
            {"prices", {{"base_per_hour", config_.price_base}, {"gpu_per_hour", config_.price_gpu},
                        {"cpu_per_hour", config_.price_cpu}, {"currency", config_.currency}}}};
    if (slurm_) {
        // Jobs run on the cluster, not here: report its size (sinfo, refreshed every 30 s).
        answer["executor"] = slurm_->describe();
        if (wall_now() - slurm_cluster_time_ > 30) {
            std::string error;
            if (!slurm_->cluster(slurm_cluster_, error))
                slurm_cluster_ = {};
            slurm_cluster_time_ = wall_now();
        }
        if (slurm_cluster_.cpus_total > 0) {
            answer["cpus"] = slurm_cluster_.cpus_total;
            answer["cluster"] = {{"nodes", slurm_cluster_.nodes}, {"cpus_total", slurm_cluster_.cpus_total},
                                 {"cpus_allocated", slurm_cluster_.cpus_allocated}, {"cpus_idle", slurm_cluster_.cpus_idle}};
        }
    } else {
        answer["executor"] = "local processes";
    }
    return answer;
}

} // namespace traindeck::worker
