#include "devicecheck.h"

#include <cuda_runtime.h>

namespace traindeck::engine {

CudaProbe probe_cuda() {
    CudaProbe probe;
    const cudaError_t status = cudaGetDeviceCount(&probe.devices);
    if (status != cudaSuccess || probe.devices == 0) {
        probe.devices = 0;
        probe.message = std::string("no CUDA device (") +
                        (status == cudaSuccess ? "none found" : cudaGetErrorString(status)) + "); training on CPU";
        return probe;
    }
    cudaDeviceProp properties{};
    cudaGetDeviceProperties(&properties, 0);
    probe.available = true;
    probe.message = std::to_string(probe.devices) + " CUDA device(s), first: " + properties.name;
    return probe;
}

} // namespace traindeck::engine
