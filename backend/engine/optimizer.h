#pragma once
// Optimisers over the flat parameter buffer, and the learning-rate schedule.
#include "jobspec.h"
#include "network.h"

#include <vector>

namespace traindeck::engine {

// Linear warm-up from 0 over warmup_steps, then constant or cosine decay to lr * min_lr_ratio at total_steps.
float learning_rate(const OptimizerSpec& optimizer, const ScheduleSpec& schedule, long step, long total_steps);

class Optimizer {
public:
    Optimizer(const OptimizerSpec& spec, size_t parameter_count);

    // How many buffers of parameter_count floats state() holds for this optimiser (the checkpoint stores them).
    static size_t state_buffers(const OptimizerSpec& spec) { return spec.type == "adamw" ? 2 : 1; }

    // One update of params from grads (which the caller then zeroes). `step` counts from 1.
    void step(std::vector<float>& params, const std::vector<float>& grads, const std::vector<ParameterTensor>& tensors,
              float lr, long step);

    // SGD keeps one buffer (momentum), AdamW two (first and second moments); the checkpoint stores them.
    std::vector<std::vector<float>>& state() { return state_; }
    const OptimizerSpec& spec() const { return spec_; }

private:
    OptimizerSpec spec_;
    std::vector<std::vector<float>> state_;
};

} // namespace traindeck::engine
