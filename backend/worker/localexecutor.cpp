// Local processes: shims spawned here, reaped here, signalled through their process group.
#include "localexecutor.h"

#include "jobshim.h"

#include <csignal>

#include <sys/wait.h>

namespace traindeck::worker {

LocalExecutor::LocalExecutor(std::string self_binary) : self_binary_(std::move(self_binary)) {}

void LocalExecutor::set_visible_gpus(Environment& env, const std::vector<int>& gpus) const {
    std::string visible;
    for (int gpu : gpus)
        visible += (visible.empty() ? "" : ",") + std::to_string(gpu);
    env.set("CUDA_VISIBLE_DEVICES", visible);
}

bool LocalExecutor::start(JobRun& run, const std::string& dir, const JobRequest&, std::string& error) {
    run.shim = spawn_shim(self_binary_, dir, error);
    return run.shim >= 0;
}

bool LocalExecutor::adopt(JobRun& run, const std::string& dir) { return shim_alive(run.shim, dir); }

void LocalExecutor::collect(const std::vector<JobRun*>& runs) {
    // How the jobs ended is in their exit_status.json; reaping says when to read it.
    for (pid_t reaped; (reaped = ::waitpid(-1, nullptr, WNOHANG)) > 0;)
        for (JobRun* run : runs)
            if (run->shim == reaped)
                run->shim_reaped = true;
}

Executor::Check LocalExecutor::check(JobRun& run, const std::string& dir, const std::string&) {
    // A re-adopted job's shim is not our child: whether it is still there is read from /proc.
    if (run.shim > 0 && !shim_alive(run.shim, dir))
        return {true, "the job's supervisor process vanished without recording an exit", {}};
    return {};
}

void LocalExecutor::signal(const JobRun& run, const std::string&, int signal) {
    if (run.shim > 0)
        ::kill(-run.shim, signal); // the job's whole process group; the shim outlives it to record the exit
}

std::string LocalExecutor::kill(const JobRun& run) {
    if (run.shim > 0)
        ::kill(-run.shim, SIGKILL);
    return {};
}

void LocalExecutor::describe_resources(nlohmann::json& answer) { answer["executor"] = "local processes"; }

} // namespace traindeck::worker
