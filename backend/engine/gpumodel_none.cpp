// Builds without TRAINDECK_CUDA: there is no GPU path to create, and the trainer says so and uses the CPU.
#include "gpumodel.h"

namespace traindeck::engine {

std::unique_ptr<Model> create_gpu_model(const Network&, const OptimizerSpec&, int, const GpuOptions&,
                                        std::string& reason) {
    reason = "this traindeck-train was built without CUDA (configure with -DTRAINDECK_CUDA=ON where the toolkit is)";
    return nullptr;
}

bool gpu_nccl_unique_id(std::string&, std::string& error) {
    error = "this traindeck-train was built without CUDA, so it has no NCCL (configure with -DTRAINDECK_CUDA=ON where "
            "the toolkit is)";
    return false;
}

// By value as gpumodel.h declares it: the CUDA build keeps (moves) the function, this one has nothing to keep.
void set_data_parallel_watch(double, std::function<std::string()>) {} // NOLINT(performance-unnecessary-value-param)

} // namespace traindeck::engine
