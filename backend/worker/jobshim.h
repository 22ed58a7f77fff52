#pragma once
// Every job runs under a small shim (traindeck-worker --run-job DIR) in a session of its own, so that jobs
// outlive the worker: the shim starts the job with its output going to files in DIR, waits for it, and
// writes how it ended to DIR/exit_status.json. A restarted worker re-reads the files from where it stopped.
//
// DIR/launch.json   {"argv":[...], "cwd":"...", "env":["K=V",...]}   written by the worker
// DIR/stdout.log, DIR/stderr.log, DIR/metrics.jsonl (fd 3, TRAINDECK_METRICS_FD=3)   appended by the job
// DIR/pid           the job's pid (the shim's pid is its process group)
// DIR/exit_status.json  {"exit_code":N} | {"signal":N} | {"exec_error":"..."}
// DIR/signal        a signal number the worker asks the shim to send its job (then renamed signal.sent)
// DIR/traindeck-capture.json  the run's code and command, captured before the job starts (capture.h)
// DIR/traindeck-environment.json  its machine and packages, captured while it starts (30 s at most)
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include <sys/types.h>

namespace traindeck::worker {

// The shim's capture files, in the order of their parts ("code", "environment").
// Named so that a job running in its own folder does not write over them with files of its own.
inline constexpr const char* kCaptureFiles[2] = {"traindeck-capture.json", "traindeck-environment.json"};

struct LaunchPlan {
    std::vector<std::string> argv;
    std::string cwd;
    std::vector<std::string> env; // KEY=VALUE, the job's whole environment
    // What to capture as the run starts (null: nothing): {"store": the content store's folder, "code": capture the
    // working folder, "snapshot": the version a reproduced run's folder must match, "exclude": [patterns],
    // "train_binary": a built-in job's trainer, "record": what the worker adds as it is (version, resources)}
    nlohmann::json capture;
};

struct ExitStatus {
    bool present = false;
    int exit_code = -1; // when the job exited
    int signal = 0;     // when a signal killed it
    std::string exec_error;
};

bool write_launch_plan(const std::string& job_dir, const LaunchPlan& plan, std::string& error);
// Starts `worker_binary --run-job job_dir`; returns the shim's pid (= the job's process group) or -1.
pid_t spawn_shim(const std::string& worker_binary, const std::string& job_dir, std::string& error);
ExitStatus read_exit_status(const std::string& job_dir);
// Whether pid is still the shim of job_dir (not a recycled pid): a re-adopted shim is not our child to reap.
bool shim_alive(pid_t pid, const std::string& job_dir);
pid_t read_job_pid(const std::string& job_dir);

// The shim's main(): never returns to the caller's code paths.
int run_job_shim(const std::string& job_dir);

} // namespace traindeck::worker
