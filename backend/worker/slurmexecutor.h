#pragma once
// Runs jobs through an existing Slurm cluster instead of as local processes. The job folder lives on the shared
// filesystem; each Slurm batch job runs the same shim as a local job (traindeck-worker --run-job DIR), so metrics,
// logs, exit status and checkpoints arrive through the same files with the same seq guarantees.
// Talks to slurmrestd (JWT in X-SLURM-USER-NAME/-TOKEN, OpenAPI v0.0.38) when given its URL, else to the
// sbatch/squeue/scancel commands (argv, never a shell). The cluster schedules: the worker hands it every queued job
// and mirrors what Slurm says of it into the job's reason.
#include "executor.h"
#include "jobrequest.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace traindeck::client {
class WorkerClient;
}

namespace traindeck::worker {

struct SlurmSettings {
    std::string rest_url;   // e.g. http://127.0.0.1:6820; empty: use the CLI tools
    std::string user;       // who the jobs run as (X-SLURM-USER-NAME; sbatch --uid when not the worker's own user)
    std::string token_file; // JWT (scontrol token); also $SLURM_JWT
    std::string partition;  // empty: the cluster's default
    std::string conf;       // SLURM_CONF for the CLI tools
};

class SlurmExecutor : public Executor {
public:
    SlurmExecutor(SlurmSettings settings, std::string self_binary);
    ~SlurmExecutor() override;

    // The Executor interface.
    bool schedules_jobs() const override { return true; }
    bool runs_here() const override { return false; } // a job's pid belongs to its node
    void set_visible_gpus(Environment& env, const std::vector<int>& gpus) const override;
    bool start(JobRun& run, const std::string& dir, const JobRequest& request, std::string& error) override;
    std::string where(const JobRun& run) const override;
    bool adopt(JobRun& run, const std::string& dir) override;
    void collect(const std::vector<JobRun*>&) override {}
    void refresh(const std::vector<const JobRun*>& runs) override;
    Check check(JobRun& run, const std::string& dir, const std::string& reason) override;
    void signal(const JobRun& run, const std::string& dir, int signal) override;
    std::string kill(const JobRun& run) override;
    void describe_resources(nlohmann::json& answer) override;

    // The Slurm client under it.

    // Submits `shim --run-job dir` with the request's resources mapped to --cpus-per-task, --mem, --gres=gpu:N and
    // --time. Returns the Slurm job id, or "" and error.
    std::string submit(const std::string& shim, const std::string& dir, const JobRequest& request, std::string& error);

    struct State {
        std::string state;  // PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, NODE_FAIL, ... ; "" unknown
        std::string reason; // Slurm's reason (Resources, Priority, ...)
    };
    // Every job Slurm still knows (finished ones stay for MinJobAge). False and error when Slurm cannot be asked.
    bool states(std::map<std::string, State>& out, std::string& error);
    // Hard stop (the soft one is the shim's signal file, which works the same on any node).
    bool cancel(const std::string& id, std::string& error);
    static bool is_active(const std::string& state);
    // The cluster's size for the backends panel (sinfo): CPUs allocated/idle/total, nodes. False when unknown.
    struct Cluster {
        int cpus_total = 0, cpus_allocated = 0, cpus_idle = 0, nodes = 0;
    };
    bool cluster(Cluster& out, std::string& error) const;
    std::string describe() const;

private:
    std::string token(std::string& error) const;
    bool rest(const std::string& method, const std::string& path, const std::string& body, std::string& reply,
              std::string& error);
    bool command(std::vector<std::string> argv, std::string& output, std::string& error) const;

    SlurmSettings settings_;
    std::string self_binary_;
    std::unique_ptr<client::WorkerClient> client_;
    // What Slurm said at the last refresh; nothing is concluded from silence while it cannot be asked.
    std::map<std::string, State> states_;
    bool states_ok_ = false;
    std::string states_error_; // said once on stderr, not once a second
    Cluster cluster_;
    double cluster_time_ = 0;
};

} // namespace traindeck::worker
