#pragma once
// Where jobs run, behind one interface, as nvtop puts each GPU vendor behind one table of functions: the
// supervisor asks an Executor to start a run, to say whether it ended, to signal or kill it, to adopt one a
// previous worker left, and to describe its resources. LocalExecutor runs processes on this machine,
// SlurmExecutor hands batch jobs to a cluster; a new provider (SSH, cloud) is one more class, not more branches.
//
// Every executor runs the same shim (traindeck-worker --run-job DIR, jobshim.h) in the job's folder, so metrics,
// logs, the exit status and checkpoints come back through the same files whichever runs it.
#include "jobrequest.h"
#include "jobrun.h"
#include "process.h"
#include "workerconfig.h"

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace traindeck::worker {

class Executor {
public:
    virtual ~Executor() = default;

    // True when the executor decides where and when jobs run (a cluster): the worker hands it every queued job, and
    // does not hold requests to its own slots.
    virtual bool schedules_jobs() const = 0;
    // True when a job's processes are on this machine, so that its pid and CPU use can be read here.
    virtual bool runs_here() const = 0;
    // Says the job's GPUs in its environment (locally CUDA_VISIBLE_DEVICES; a cluster sets that on the node).
    virtual void set_visible_gpus(Environment& env, const std::vector<int>& gpus) const = 0;

    // Starts the shim for the job folder `dir` (its launch plan written). False and error when it could not.
    virtual bool start(JobRun& run, const std::string& dir, const JobRequest& request, std::string& error) = 0;
    // What the job's reason adds about where it runs (" (Slurm job 12)"); "" when it says nothing.
    virtual std::string where(const JobRun& run) const = 0;
    // A run a previous worker left: fills `run` from what the job folder keeps; true when it may still be going.
    virtual bool adopt(JobRun& run, const std::string& dir) = 0;

    // Every tick, before the runs are read: notes which runs have ended (locally: reaps the shims).
    virtual void collect(const std::vector<JobRun*>& runs) = 0;
    // Once a second, before the runs are checked: refreshes what the executor knows of them (Slurm's job states).
    virtual void refresh(const std::vector<const JobRun*>& runs) = 0;
    struct Check {
        bool ended = false; // the run is over and recorded no exit status
        std::string what;   // then: what the executor saw, for the job's reason
        std::string reason; // not "": the job's reason while it runs, mirroring the executor ("pending in Slurm ...")
    };
    // Called while no exit status is recorded; `reason` is the job's reason now.
    virtual Check check(JobRun& run, const std::string& dir, const std::string& reason) = 0;

    // Asks the job to stop (SIGTERM: checkpoint first); the shim records how it ended.
    virtual void signal(const JobRun& run, const std::string& dir, int signal) = 0;
    // A hard stop once the grace period is over. "" or what went wrong.
    virtual std::string kill(const JobRun& run) = 0;

    // What GET /v1/resources says of the executor ("executor", and a cluster's size).
    virtual void describe_resources(nlohmann::json& answer) = 0;
};

// The executor config.executor names ("local" or "slurm").
std::unique_ptr<Executor> make_executor(const WorkerConfig& config);

} // namespace traindeck::worker
