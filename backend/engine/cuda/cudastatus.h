#pragma once
// One place that turns a CUDA, cuBLAS, cuDNN or NCCL status into a GpuError: every call of the GPU path goes
// through TRAINDECK_CHECK (and every kernel launch through TRAINDECK_LAUNCH), so a failure ends the run with a line
// naming the call, its file:line and the library's own words, instead of training on whatever a failed call left
// in memory. Thrown on the trainer's thread only; traindeck-train catches it around train() (exit 6).
#include "gpumodel.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

#include <cstring>
#include <string>

namespace traindeck::engine::cuda {

// "gpumodel.cu:123": the file's own name is enough to find the line, and keeps messages one short line.
inline std::string call_site(const char* file, int line) {
    const char* slash = std::strrchr(file, '/');
    return std::string(slash ? slash + 1 : file) + ":" + std::to_string(line);
}

// `call` is the call's source text; its function name (up to the parenthesis) and file:line are enough to find it.
[[noreturn]] inline void throw_failure(const char* library, const char* call, const char* file, int line,
                                       const std::string& what, const char* advice) {
    const std::string name(call, std::strcspn(call, "("));
    throw GpuError(std::string(library) + " call " + name + " failed at " + call_site(file, line) + ": " + what + "; " +
                   advice);
}

inline void check_status(cudaError_t status, const char* call, const char* file, int line) {
    if (status == cudaSuccess)
        return;
    // A launch, a copy or a synchronisation also reports an earlier kernel's fault (errors are asynchronous).
    const char* advice = status == cudaErrorMemoryAllocation
                             ? "the GPU is out of memory: free it (nvidia-smi shows who holds it) or lower batch_size"
                             : "the GPU path stops here; an asynchronous fault may come from an earlier kernel "
                               "(CUDA_LAUNCH_BLOCKING=1 pins it to its launch); check the driver with nvidia-smi or "
                               "train with --device cpu";
    throw_failure("CUDA", call, file, line,
                  std::string(cudaGetErrorString(status)) + " (" + cudaGetErrorName(status) + ")", advice);
}

inline void check_status(cublasStatus_t status, const char* call, const char* file, int line) {
    if (status == CUBLAS_STATUS_SUCCESS)
        return;
    throw_failure(
        "cuBLAS", call, file, line,
        std::string(cublasGetStatusString(status)) + " (" + cublasGetStatusName(status) + ")",
        "the GPU path stops here; check the CUDA/cuBLAS installation and the driver, or train with --device cpu");
}

inline void check_status(cudnnStatus_t status, const char* call, const char* file, int line) {
    if (status == CUDNN_STATUS_SUCCESS)
        return;
    char detail[512] = {};
    cudnnGetLastErrorString(detail, sizeof(detail));
    std::string what = cudnnGetErrorString(status);
    if (detail[0])
        what += std::string(" (") + detail + ")";
    throw_failure("cuDNN", call, file, line, what,
                  "the GPU path stops here; check that cuDNN 9 matches the CUDA toolkit and the driver, or train with "
                  "--device cpu");
}

// Only for NCCL calls without a communicator (ncclGetUniqueId); calls on one go through NcclComm, which also
// aborts it so that the other ranks are not left waiting.
inline void check_status(ncclResult_t status, const char* call, const char* file, int line) {
    if (status == ncclSuccess)
        return;
    throw_failure("NCCL", call, file, line, ncclGetErrorString(status),
                  "data-parallel training cannot start; NCCL_DEBUG=WARN tells more");
}

} // namespace traindeck::engine::cuda

#define TRAINDECK_CHECK(call) ::traindeck::engine::cuda::check_status((call), #call, __FILE__, __LINE__)

#ifdef __CUDACC__
// kernel<<<grid, block, 0, stream>>>(args...), then the launch's status. An empty grid launches nothing (CUDA would
// reject it as an invalid configuration); there is no work in it.
#define TRAINDECK_LAUNCH(kernel, grid, block, stream, ...)                                                             \
    do {                                                                                                               \
        const unsigned traindeck_grid = (grid);                                                                        \
        if (traindeck_grid > 0) {                                                                                      \
            kernel<<<traindeck_grid, (block), 0, (stream)>>>(__VA_ARGS__);                                             \
            ::traindeck::engine::cuda::check_status(cudaGetLastError(), "launch of " #kernel, __FILE__, __LINE__);     \
        }                                                                                                              \
    } while (0)
#endif
