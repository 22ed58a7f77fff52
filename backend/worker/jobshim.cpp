#include "jobshim.h"

#include "atomicfile.h"
#include "capture.h"
#include "clock.h"
#include "process.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace traindeck::worker {

using nlohmann::json;

bool write_launch_plan(const std::string& job_dir, const LaunchPlan& plan, std::string& error) {
    json launch = {{"argv", plan.argv}, {"cwd", plan.cwd}, {"env", plan.env}};
    if (!plan.capture.is_null())
        launch["capture"] = plan.capture;
    return write_file_atomically(job_dir + "/launch.json", launch.dump(), 0600, error);
}

pid_t spawn_shim(const std::string& worker_binary, const std::string& job_dir, std::string& error) {
    // A new session: the shim and its job leave the worker's process group and terminal, so a Ctrl-C or a
    // kill of the worker's group does not take the jobs with it.
    // Stop signals stay blocked until the shim has its handler and its job: a cancel sent the moment the job
    // started would otherwise kill the shim (no exit recorded) or reach nobody.
    SpawnOptions shim;
    shim.argv = {worker_binary, "--run-job", job_dir};
    shim.new_session = true;
    shim.blocked_signals = {SIGTERM, SIGINT, SIGHUP};
    int error_number = 0;
    const pid_t pid = spawn_process(shim, error_number);
    if (pid < 0)
        error = "cannot start the job shim " + worker_binary + ": " + std::strerror(error_number);
    return pid;
}

bool shim_alive(pid_t pid, const std::string& job_dir) {
    if (pid <= 0 || ::kill(pid, 0) != 0)
        return false;
    std::ifstream cmdline("/proc/" + std::to_string(pid) + "/cmdline");
    std::string text((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
    std::replace(text.begin(), text.end(), '\0', ' ');
    // Guards against a recycled pid: it must still be this job's shim.
    return text.find("--run-job") != std::string::npos && text.find(job_dir) != std::string::npos;
}

ExitStatus read_exit_status(const std::string& job_dir) {
    ExitStatus status;
    std::ifstream in(job_dir + "/exit_status.json");
    if (!in)
        return status;
    std::stringstream text;
    text << in.rdbuf();
    const json parsed = json::parse(text.str(), nullptr, false);
    if (!parsed.is_object())
        return status;
    status.present = true;
    status.exit_code = parsed.value("exit_code", -1);
    status.signal = parsed.value("signal", 0);
    status.exec_error = parsed.value("exec_error", std::string());
    return status;
}

pid_t read_job_pid(const std::string& job_dir) {
    std::ifstream in(job_dir + "/pid");
    pid_t pid = -1;
    in >> pid;
    return in ? pid : -1;
}

namespace {

// A stop signal the shim received before its job existed, to pass on once it does.
volatile sig_atomic_t g_early_signal = 0;
void remember_signal(int signal) { g_early_signal = signal; }

int open_output(const std::string& path) {
    return ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

// The run's code and command, before the job may change its folder (capture.h).
void capture_code_part(const std::string& job_dir, const json& capture, const std::vector<std::string>& argv,
                       const Environment& environment, const std::string& cwd) {
    json record = capture.value("record", json::object());
    dataset::ContentStore store;
    store.attach(capture.value("store", std::string()));
    const std::string snapshot = capture.value("snapshot", std::string());
    std::string error;
    if (!snapshot.empty()) {
        dataset::Manifest manifest;
        const std::string root = capture.value("snapshot_root", std::string());
        record["code"] =
            store.stored_manifest(snapshot, manifest, error)
                ? verify_snapshot(root, manifest, cwd.size() > root.size() ? cwd.substr(root.size() + 1) : "")
                : json{{"kind", "snapshot"}, {"snapshot", snapshot}, {"problems", {error}}};
    } else if (capture.value("code", false)) {
        CaptureLimits limits;
        if (capture.contains("exclude") && capture["exclude"].is_array())
            for (const json& pattern : capture["exclude"])
                if (pattern.is_string())
                    limits.exclude.push_back(pattern);
        try {
            record["code"] = capture_code(cwd, store, limits);
        } catch (const std::exception& e) {
            record["code"] = {{"kind", "none"},
                              {"problems", {std::string("the capture of the code failed: ") + e.what()}}};
        }
    }
    record["command"] = argv;
    record["cwd"] = cwd;
    record["environment"] = redact_environment(environment.entries());
    write_file_atomically(job_dir + "/" + kCaptureFiles[0], record.dump(-1, ' ', false, json::error_handler_t::replace),
                          0600, error);
}

// The machine and packages: asked while the job starts (a Python interpreter takes a while to list them).
void capture_environment_part(const std::string& job_dir, const json& capture, const std::vector<std::string>& argv,
                              const Environment& environment, const std::string& cwd) {
    // 30 s in all, so that a run's end (which waits for this) is never held up by a tool that hangs.
    const double deadline = wall_seconds() + 30;
    const auto left = [&] { return std::max(0.1, deadline - wall_seconds()); };
    json record;
    try {
        record["system"] = capture_system(std::min(10.0, left()));
        if (const std::string python = python_interpreter(argv, environment, cwd); !python.empty())
            record["python"] = capture_python(python, environment, cwd, left());
        if (const std::string trainer = capture.value("train_binary", std::string()); !trainer.empty())
            record["engine"] = capture_engine(trainer, left());
    } catch (const std::exception& e) {
        record["problem"] = std::string("the capture of the environment failed: ") + e.what();
    }
    std::string error;
    write_file_atomically(job_dir + "/" + kCaptureFiles[1], record.dump(-1, ' ', false, json::error_handler_t::replace),
                          0600, error);
}

} // namespace

int run_job_shim(const std::string& job_dir) {
    std::string error;
    std::ifstream in(job_dir + "/launch.json");
    std::stringstream text;
    text << in.rdbuf();
    const json launch = json::parse(text.str(), nullptr, false);
    if (!launch.is_object() || !launch.contains("argv") || launch["argv"].empty()) {
        write_file_atomically(job_dir + "/exit_status.json",
                              json{{"exec_error", "launch.json is missing or broken"}}.dump(), 0600, error);
        return 1;
    }
    const auto argv_words = launch["argv"].get<std::vector<std::string>>();
    Environment environment = Environment::from_entries(launch["env"].get<std::vector<std::string>>());
    // Under Slurm the node's allocation arrives in the shim's own environment (SLURM_*, the GPUs it gave):
    // the job sees it too, unless the worker set the variable itself.
    const Environment own = Environment::current(); // named: a range-for over a temporary's member dangles
    for (const std::string& entry : own.entries()) {
        const std::string_view key = Environment::key_of(entry);
        if (!key.starts_with("SLURM_") && key != "CUDA_VISIBLE_DEVICES" && key != "GPU_DEVICE_ORDINAL")
            continue;
        if (key == "SLURM_JWT")
            continue; // a credential for slurmrestd, never the job's business
        if (!environment.get(key))
            environment.set(key, std::string_view(entry).substr(key.size() + 1));
    }
    const std::optional<std::string> job_path = environment.get("PATH");
    const CStringArray argv(argv_words), envp(environment.entries());
    const std::string cwd = launch.value("cwd", std::string());
    const json capture = launch.value("capture", json());

    const int out = open_output(job_dir + "/stdout.log");
    const int err = open_output(job_dir + "/stderr.log");
    const int metrics = open_output(job_dir + "/metrics.jsonl");
    int exec_pipe[2];
    if (out < 0 || err < 0 || metrics < 0 || ::pipe2(exec_pipe, O_CLOEXEC) != 0) {
        write_file_atomically(
            job_dir + "/exit_status.json",
            json{{"exec_error", std::string("cannot open the job's output files: ") + std::strerror(errno)}}.dump(),
            0600, error);
        return 1;
    }
    // The worker signals the whole process group; the shim must survive to record the exit. A handler (not
    // SIG_IGN, which exec would pass on) keeps the job's own default dispositions. The stop signals stay blocked
    // (from the spawn, or here under Slurm) until the job exists: one that came early is then passed on to it.
    sigset_t stops, previous;
    sigemptyset(&stops);
    for (int signal : {SIGTERM, SIGINT, SIGHUP})
        sigaddset(&stops, signal);
    ::sigprocmask(SIG_BLOCK, &stops, &previous);
    struct sigaction action {};
    action.sa_handler = remember_signal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGTERM, &action, nullptr);
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGHUP, &action, nullptr);
    // The code is captured before the job exists (nothing it writes can get in); a stop that comes meanwhile is
    // held and passed on to the job once it starts, as any early stop is.
    if (capture.is_object())
        capture_code_part(job_dir, capture, argv_words, environment, cwd);

    const pid_t child = ::fork();
    const int fork_error = errno;
    if (child == 0) {
        // The job gets the default dispositions before it may receive anything; a stop sent to the group from
        // here on ends it, even before exec.
        struct sigaction default_action {};
        default_action.sa_handler = SIG_DFL;
        for (int signal : {SIGTERM, SIGINT, SIGHUP})
            sigaction(signal, &default_action, nullptr);
        sigdelset(&previous, SIGTERM);
        sigdelset(&previous, SIGINT);
        sigdelset(&previous, SIGHUP);
        ::sigprocmask(SIG_SETMASK, &previous, nullptr);
        ::dup2(out, 1);
        ::dup2(err, 2);
        ::dup2(metrics, 3);
        ::close(exec_pipe[0]);
        if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) {
            const std::string message = "cannot enter working directory " + cwd + ": " + std::strerror(errno);
            (void)!::write(exec_pipe[1], message.data(), message.size());
            ::_exit(127);
        }
        // PATH lookup uses the job's PATH, as a shell would.
        if (job_path)
            ::setenv("PATH", job_path->c_str(), 1);
        ::execvpe(argv.data()[0], argv.data(), envp.data());
        const std::string message = "cannot execute \"" + argv_words[0] + "\": " + std::strerror(errno);
        (void)!::write(exec_pipe[1], message.data(), message.size());
        ::_exit(127);
    }
    ::close(exec_pipe[1]);
    if (child < 0) {
        // No job: said so as its end, never as an exit code of 0 (a run that did nothing is no success), and no pid
        // file: -1 there would be "every process" to the worker's kill and to this shim's.
        const std::string why = std::string("cannot start the job: fork failed: ") + std::strerror(fork_error);
        ::close(exec_pipe[0]);
        write_file_atomically(job_dir + "/exit_status.json", json{{"exec_error", why}}.dump(), 0600, error);
        return 1;
    }
    g_early_signal = 0;
    ::sigprocmask(SIG_UNBLOCK, &stops, nullptr); // what was pending while no job existed is delivered here
    if (g_early_signal)
        ::kill(child, g_early_signal);
    write_file_atomically(job_dir + "/pid", std::to_string(child) + "\n", 0600, error);
    std::thread environment_capture;
    if (capture.is_object())
        environment_capture = std::thread(capture_environment_part, job_dir, capture, argv_words, environment, cwd);
    std::string exec_error;
    char buffer[512];
    for (ssize_t n; (n = ::read(exec_pipe[0], buffer, sizeof(buffer))) != 0;) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        exec_error.append(buffer, static_cast<size_t>(n));
    }
    ::close(exec_pipe[0]);
    // Wait for the job, forwarding stop requests the worker leaves in DIR/signal: the way to reach a job on another
    // machine (a Slurm node) where the worker cannot send signals itself.
    // The shim sleeps until the job ends (its pidfd) instead of waking ten times a second to ask: a thousand quiet
    // jobs' shims polling were a good part of a 2-core machine (tests/bench/worker_events --idle 950). It looks for a
    // stop request once a second; under Slurm, where the request file is how a stop reaches the job, ten times.
    int status = 0;
    const std::string signal_file = job_dir + "/signal";
    const int job_ended = static_cast<int>(::syscall(SYS_pidfd_open, child, 0));
    const int look_ms = job_ended >= 0 && !std::getenv("SLURM_JOB_ID") ? 1000 : 100;
    bool woken = false;
    for (;;) {
        const pid_t done = ::waitpid(child, &status, WNOHANG);
        if (done == child || (done < 0 && errno != EINTR))
            break;
        // Woken by the pidfd, yet the child cannot be reaped (a debugger attached to it holds its exit): the pidfd
        // stays readable, and without a pause the loop would spin.
        if (woken)
            ::usleep(100000);
        char request[16] = {};
        if (const int fd = ::open(signal_file.c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) {
            const ssize_t got = ::read(fd, request, sizeof(request) - 1);
            ::close(fd);
            const int number = got > 0 ? std::atoi(request) : 0;
            if (number > 0 && number < 65) {
                ::kill(child, number);
                ::rename(signal_file.c_str(), (signal_file + ".sent").c_str());
            }
        }
        pollfd wake{job_ended, POLLIN, 0};
        woken = ::poll(&wake, job_ended >= 0 ? 1 : 0, look_ms) > 0;
    }
    if (job_ended >= 0)
        ::close(job_ended);
    // The capture is part of the run: it is whole before the run's end is.
    if (environment_capture.joinable())
        environment_capture.join();
    json result;
    if (!exec_error.empty())
        result = {{"exec_error", exec_error}};
    else if (WIFSIGNALED(status))
        result = {{"signal", WTERMSIG(status)}};
    else
        result = {{"exit_code", WEXITSTATUS(status)}};
    write_file_atomically(job_dir + "/exit_status.json", result.dump(), 0600, error);
    return 0;
}

} // namespace traindeck::worker
