#pragma once
// Jobs as processes on this machine: each run is a shim (our child, in a process group of its own) that starts
// the job and outlives the worker if need be; the worker's own scheduler shares out the slots.
#include "executor.h"

namespace traindeck::worker {

class LocalExecutor : public Executor {
public:
    explicit LocalExecutor(std::string self_binary);

    bool schedules_jobs() const override { return false; }
    bool runs_here() const override { return true; }
    void set_visible_gpus(Environment& env, const std::vector<int>& gpus) const override;
    bool start(JobRun& run, const std::string& dir, const JobRequest& request, std::string& error) override;
    std::string where(const JobRun&) const override { return {}; }
    bool adopt(JobRun& run, const std::string& dir) override;
    void collect(const std::vector<JobRun*>& runs) override;
    void refresh(const std::vector<const JobRun*>&) override {}
    Check check(JobRun& run, const std::string& dir, const std::string& reason) override;
    void signal(const JobRun& run, const std::string& dir, int signal) override;
    std::string kill(const JobRun& run) override;
    void describe_resources(nlohmann::json& answer) override;

private:
    std::string self_binary_;
};

} // namespace traindeck::worker
