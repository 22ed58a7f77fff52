#pragma once
// Where the trainer's arithmetic runs: one interface for the CPU engine (cpumodel.h) and the GPU path (gpumodel.h),
// so that train() is one loop, read top to bottom as llm.c's is, and the device is chosen once, when the model is
// made. A model holds the parameters, their gradients and the optimiser's state wherever its device keeps them; the
// trainer only ever sees them on the host, through read_parameters/write_parameters, for a checkpoint (so a run may
// resume on either device).
//
// Rules it keeps: no device types in this header; the data order, the dropout stream and the learning rate are the
// trainer's (a model never draws its own random numbers or picks its own schedule), so every device sees the same
// run. On the GPU path any method may throw GpuError (gpumodel.h); the CPU model never throws.
#include <cstdint>
#include <string>
#include <vector>

namespace traindeck::engine {

class Rng;

class Model {
public:
    virtual ~Model() = default;

    // The parameters and the optimiser's state (SGD: momentum; AdamW: m, v), in the network's flat layout. read_*
    // sizes the vectors it is given.
    virtual void write_parameters(const std::vector<float>& params,
                                  const std::vector<std::vector<float>>& optimizer_state) = 0;
    virtual void read_parameters(std::vector<float>& params, std::vector<std::vector<float>>& optimizer_state) = 0;

    // Starts an optimiser step: gradients, loss and correct count back to zero.
    virtual void zero_grads() = 0;
    // One micro-batch of `batch` samples: forward, loss, backward; gradients, loss and correct predictions
    // accumulate. scale = 1 / samples in the whole optimiser step (over every rank). Dropout masks are drawn from
    // `dropout` (the trainer's stream, saved in every checkpoint). The loss: softmax cross-entropy against the class
    // labels y; or, when targets is given (a regression: one output a sample, y unused), the squared error against
    // them (layers.h squared_error), with no correct predictions.
    virtual void forward_backward(const float* x, const int32_t* y, const float* targets, int batch, float scale,
                                  Rng& dropout) = 0;
    // Ends the step: (data parallel: sums over ranks, then) updates the parameters with learning rate lr; `step`
    // counts from 1. loss_sum and correct are the step's totals, summed over its micro-batches (and ranks).
    virtual void step(float lr, long step, double& loss_sum, long& correct) = 0;

    // Data parallel: true when any rank passes true, so that every rank stops at the same step. One rank: flag.
    virtual bool any_rank(bool flag) = 0;
    // Logits [batch, classes] of an inference forward pass (no dropout), on the host, valid until the next call.
    virtual const float* logits(const float* x, int batch) = 0;
    virtual std::string describe() const = 0;
};

} // namespace traindeck::engine
