// probe_cuda() for CUDA builds: asks the runtime how many devices it sees. No device is a message (the trainer
// uses the CPU); device nodes without a device is said to be a broken driver, with the runtime's words.
#include "devicecheck.h"

#include <cuda_runtime.h>

namespace traindeck::engine {

CudaProbe probe_cuda() {
    CudaProbe probe;
    probe.device_node = nvidia_device_node_present();
    const cudaError_t status = cudaGetDeviceCount(&probe.devices);
    if (status != cudaSuccess || probe.devices == 0) {
        probe.devices = 0;
        const std::string why = status == cudaSuccess
                                    ? std::string("none found")
                                    : std::string("cudaGetDeviceCount: ") + cudaGetErrorString(status) + " (" +
                                          cudaGetErrorName(status) + ")";
        if (probe.device_node)
            probe.message =
                "NVIDIA device nodes exist in /dev but CUDA finds no usable device (" + why +
                "): the driver is broken or does not match this CUDA runtime (see nvidia-smi); training on CPU";
        else
            probe.message = "no CUDA device (" + why + "); training on CPU";
        return probe;
    }
    cudaDeviceProp properties{};
    if (const cudaError_t query = cudaGetDeviceProperties(&properties, 0); query != cudaSuccess) {
        probe.devices = 0;
        probe.message = std::string("CUDA sees a device but cannot read its properties (cudaGetDeviceProperties: ") +
                        cudaGetErrorString(query) + "): the driver is broken (see nvidia-smi); training on CPU";
        return probe;
    }
    probe.available = true;
    probe.message = std::to_string(probe.devices) + " CUDA device(s), first: " + properties.name;
    return probe;
}

} // namespace traindeck::engine
