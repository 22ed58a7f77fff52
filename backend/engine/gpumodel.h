#pragma once
// The GPU path of the built-in trainer, behind the Model interface (model.h, no CUDA types) that the CPU engine
// (cpumodel.h) implements too, so that trainer.cpp drives both with one loop: the same data order, the same
// checkpoints (parameters and optimiser state travel to the host for every save, so a run may resume on either
// device).
//
// On the GPU: parameters, gradients and optimiser state stay resident; gemms run in cuBLAS (fp32 FMA, or bf16
// inputs with fp32 accumulation when autocast is on: the master weights stay fp32; any fp32 gemm under autocast
// may use TF32 tensor cores); convolutions and max-pool in cuDNN (NHWC, our weight layout is its KRSC; fp32 FMA
// math, so fp32 runs can be compared with the CPU, and TF32 tensor cores under autocast, where the data stays
// fp32); bias + a following activation run fused; softmax-cross-entropy, SGD and AdamW are kernels next to their
// CPU twins. With WORLD_SIZE > 1 each rank (one process per GPU) takes its slice of every micro-batch and the
// gradients are summed with NCCL.
//
// Failures are loud. Every CUDA, cuBLAS, cuDNN and NCCL status is checked, kernel launches included, and a
// failure throws GpuError naming the call and its file:line; traindeck-train catches it around train() and ends
// with one stderr line, an `error` record and exit code kExitGpuFailed. GpuError is only thrown on the thread that
// drives the model (the trainer's), never across one. create() returns nullptr + reason only for what the GPU path
// does not take (a model or a setup it does not support); a CUDA failure while creating it throws as well.
// Model::step on this path sums gradients, loss and correct counts over ranks before it updates.
//
// Data parallel: NCCL communicators are non-blocking, and every wait on one polls its asynchronous error, the
// data-parallel watch (set_data_parallel_watch: rank 0 notices a rank process that exited, a rank notices that rank
// 0 is gone) and a timeout; any of them aborts the communicator (ncclCommAbort) and throws, so a rank that dies
// cannot leave the others waiting forever in an all-reduce.
//
// Batch normalisation, residual adds and (global) average pooling run as kernels next to their CPU twins. With
// WORLD_SIZE > 1 batchnorm normalises each rank's slice of the batch (as PyTorch's DDP without SyncBatchNorm does)
// and the checkpoint holds rank 0's running statistics.
//
// Dropout with p > 0 is not on the GPU yet (its masks must come from the CPU's random stream to keep runs
// reproducible across devices): create() says so and the trainer stays on the CPU.
#include "jobspec.h"
#include "model.h"
#include "network.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace traindeck::engine {

// traindeck-train's exit code for a failed GPU path (a CUDA/cuBLAS/cuDNN/NCCL error, a data-parallel rank that
// died or timed out); next to trainer.h's ExitCode values, which it extends.
constexpr int kExitGpuFailed = 6;

// A failed CUDA/cuBLAS/cuDNN/NCCL call: what() is one line with the call, file:line, the library's words, and
// what to do.
class GpuError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct GpuOptions {
    bool bf16 = false;  // autocast: bf16 gemm inputs, fp32 accumulation and master weights
    int world_size = 1; // data-parallel ranks (one process per GPU)
    int rank = 0;
    std::string nccl_id; // hex, the same for every rank (rank 0 makes it: gpu_nccl_unique_id())
    float label_smoothing = 0.0f; // ε of the training loss, as CpuModel's
};

// The model on the GPU, or nullptr + reason when this model or setup does not run on the GPU path; throws GpuError
// when CUDA fails. The model keeps a reference to net (its layers and parameter tensors): net outlives it. It
// starts from net's parameters only once write_parameters() is called.
std::unique_ptr<Model> create_gpu_model(const Network& net, const OptimizerSpec& optimizer, int max_batch,
                                        const GpuOptions& options, std::string& reason);

// Rank 0's NCCL unique id, hex; false + error when there is no NCCL here (a build without CUDA, no GPU).
bool gpu_nccl_unique_id(std::string& id_hex, std::string& error);

// How data-parallel waits end when a peer does not come: after timeout_seconds, or as soon as peer_gone (called
// on the trainer's thread while a wait polls, about every 10 ms) returns a non-empty message. Set once, before
// train(); by default 300 s and no watch. Builds without CUDA ignore it.
void set_data_parallel_watch(double timeout_seconds, std::function<std::string()> peer_gone);

} // namespace traindeck::engine
