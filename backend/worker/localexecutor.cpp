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
    run.shim_reaped = false;
    run.adopted = false;
    return run.shim >= 0;
}

bool LocalExecutor::adopt(JobRun& run, const std::string& dir) {
    run.adopted = shim_alive(run.shim, dir);
    return run.adopted;
}

void LocalExecutor::collect(const std::vector<JobRun*>& runs) {
    // How the jobs ended is in their exit_status.json; reaping says when to read it.
    for (pid_t reaped; (reaped = ::waitpid(-1, nullptr, WNOHANG)) > 0;)
        for (JobRun* run : runs)
            if (run->shim == reaped)
                run->shim_reaped = true;
}

Executor::Check LocalExecutor::check(JobRun& run, const std::string& dir, const std::string&) {
    // Our own child is there until collect() reaps it. Only a re-adopted shim, not our child, is looked for in /proc.
    // (/proc was asked of our children too, and that raced their start: the kernel lets posix_spawn return before
    // the new program's arguments are in place, so a shim checked within its first milliseconds had an empty
    // cmdline and was taken for vanished: its job marked failed while it ran on, never to be stopped. Jobs whose
    // id is a multiple of 100 were checked in the tick that started them, and one in a few hundred was lost so.)
    const bool alive = run.adopted ? shim_alive(run.shim, dir) : !run.shim_reaped;
    if (run.shim > 0 && !alive)
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
