#pragma once
// The GPU path of the built-in trainer, behind a plain C++ interface (no CUDA types), so that trainer.cpp drives
// it like the CPU network: the same loop, the same data order, the same checkpoints (parameters and optimiser
// state travel to the host for every save, so a run may resume on either device).
//
// On the GPU: parameters, gradients and optimiser state stay resident; gemms run in cuBLAS (fp32, or bf16
// inputs with fp32 accumulation when autocast is on: the master weights stay fp32); convolutions and max-pool in
// cuDNN (NHWC, our weight layout is its KRSC; fp32 FMA math, TF32 tensor cores under autocast); bias + a
// following activation run fused; softmax-cross-entropy, SGD and AdamW are kernels next to their CPU twins. With
// WORLD_SIZE > 1 each rank (one process per GPU) takes its slice of every micro-batch and the gradients are summed
// with NCCL.
//
// Dropout with p > 0 is not on the GPU yet (its masks must come from the CPU's random stream to keep runs
// reproducible across devices): create() says so and the trainer stays on the CPU.
#include "jobspec.h"
#include "network.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace traindeck::engine {

struct GpuOptions {
    bool bf16 = false;      // autocast: bf16 gemm inputs, fp32 accumulation and master weights
    int world_size = 1;     // data-parallel ranks (one process per GPU)
    int rank = 0;
    std::string nccl_id;    // hex, the same for every rank (rank 0 makes it: gpu_nccl_unique_id())
};

class GpuModel {
public:
    static std::unique_ptr<GpuModel> create(const Network& net, const OptimizerSpec& optimizer, int max_batch,
                                            const GpuOptions& options, std::string& reason);
    virtual ~GpuModel() = default;

    virtual void upload(const std::vector<float>& params, const std::vector<std::vector<float>>& optimizer_state) = 0;
    virtual void download(std::vector<float>& params, std::vector<std::vector<float>>& optimizer_state) = 0;
    virtual void zero_grads() = 0;
    // One micro-batch of `batch` samples (all ranks get the whole micro-batch; each computes its slice).
    // scale = 1 / samples in the optimiser step (over all ranks). Loss and correct count accumulate on the device.
    virtual void forward_backward(const float* x, const int32_t* y, int batch, float scale) = 0;
    // Sums gradients, loss and correct counts over ranks, then updates the parameters. Returns false + error
    // on a CUDA/NCCL failure. loss_sum and correct are the step's totals over every rank.
    virtual bool step(float lr, long step, double& loss_sum, long& correct, std::string& error) = 0;
    // Data parallel: true when any rank passes true (a stop request must end every rank at the same step, or the
    // others would wait forever in their next all-reduce). One rank: returns flag.
    virtual bool any_rank(bool flag) = 0;
    // Logits [batch, classes] of an inference forward pass, on the host.
    virtual const float* logits(const float* x, int batch) = 0;
    virtual std::string describe() const = 0;
};

std::string gpu_nccl_unique_id();

} // namespace traindeck::engine
