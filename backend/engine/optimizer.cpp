#include "optimizer.h"

#include <cmath>
#include <numbers>

namespace traindeck::engine {

float learning_rate(const OptimizerSpec& optimizer, const ScheduleSpec& schedule, long step, long total_steps) {
    const float base = optimizer.lr;
    if (schedule.warmup_steps > 0 && step <= schedule.warmup_steps)
        return base * static_cast<float>(step) / static_cast<float>(schedule.warmup_steps);
    if (schedule.decay == "constant")
        return base;
    const long decay_steps = std::max(1L, total_steps - schedule.warmup_steps);
    const double progress = std::min(1.0, static_cast<double>(step - schedule.warmup_steps) / decay_steps);
    const double floor = base * schedule.min_lr_ratio;
    return static_cast<float>(floor + (base - floor) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress)));
}

Optimizer::Optimizer(const OptimizerSpec& spec, size_t parameter_count) : spec_(spec) {
    state_.assign(state_buffers(spec), std::vector<float>(parameter_count, 0.0f));
}

void Optimizer::step(std::vector<float>& params, const std::vector<float>& grads,
                     const std::vector<ParameterTensor>& tensors, float lr, long step) {
    if (spec_.type == "sgd") {
        // PyTorch's SGD: buf = momentum * buf + (g + wd * p); p -= lr * buf.
        float* momentum = state_[0].data();
        for (const ParameterTensor& t : tensors) {
            if (!t.trainable)
                continue;
            const float wd = t.decay ? spec_.weight_decay : 0.0f;
            for (size_t i = t.offset; i < t.offset + t.count; ++i) {
                const float g = grads[i] + wd * params[i];
                momentum[i] = spec_.momentum * momentum[i] + g;
                params[i] -= lr * momentum[i];
            }
        }
        return;
    }
    // AdamW (Loshchilov & Hutter): decoupled weight decay, bias-corrected moments.
    float* m = state_[0].data();
    float* v = state_[1].data();
    const float b1 = spec_.beta1, b2 = spec_.beta2;
    const float correction1 = 1.0f - std::pow(b1, static_cast<float>(step));
    const float correction2 = 1.0f - std::pow(b2, static_cast<float>(step));
    const float step_size = lr / correction1;
    const float inv_sqrt_c2 = 1.0f / std::sqrt(correction2);
    for (const ParameterTensor& t : tensors) {
        if (!t.trainable)
            continue;
        const float decay = t.decay ? 1.0f - lr * spec_.weight_decay : 1.0f;
        for (size_t i = t.offset; i < t.offset + t.count; ++i) {
            const float g = grads[i];
            m[i] = b1 * m[i] + (1.0f - b1) * g;
            v[i] = b2 * v[i] + (1.0f - b2) * g * g;
            params[i] = params[i] * decay - step_size * m[i] / (std::sqrt(v[i]) * inv_sqrt_c2 + spec_.eps);
        }
    }
}

} // namespace traindeck::engine
