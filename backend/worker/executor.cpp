// The one place that turns the worker's --executor setting into an Executor.
#include "executor.h"

#include "localexecutor.h"
#include "slurmexecutor.h"

namespace traindeck::worker {

std::unique_ptr<Executor> make_executor(const WorkerConfig& config) {
    if (config.executor == "slurm")
        return std::make_unique<SlurmExecutor>(
            SlurmSettings{config.slurm_rest, config.slurm_user, config.slurm_token_file, config.slurm_partition,
                          config.slurm_conf},
            config.self_binary);
    return std::make_unique<LocalExecutor>(config.self_binary);
}

} // namespace traindeck::worker
