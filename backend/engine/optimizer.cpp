#include "optimizer.h"

#include "parallel.h"

#include <cmath>
#include <numbers>

namespace traindeck::engine {
namespace {

// Below this many parameters a tensor is updated on the calling thread.
constexpr size_t kUpdateGrain = 32768;

// The update loops live in functions of their own with restrict pointers and plain values, which GCC vectorises
// (inside the member function every member read might alias the buffers). Each element's arithmetic is the same
// whatever the vector width or the thread that runs it: results do not depend on either.
void sgd_update(float* __restrict p, float* __restrict momentum, const float* __restrict grads, size_t n, float wd,
                float beta, float lr) {
    for (size_t i = 0; i < n; ++i) {
        const float g = grads[i] + wd * p[i];
        momentum[i] = beta * momentum[i] + g;
        p[i] -= lr * momentum[i];
    }
}

void adamw_update(float* __restrict p, float* __restrict m, float* __restrict v, const float* __restrict grads,
                  size_t n, float b1, float b2, float decay, float step_size, float inv_sqrt_c2, float eps) {
    for (size_t i = 0; i < n; ++i) {
        const float g = grads[i];
        m[i] = b1 * m[i] + (1.0f - b1) * g;
        v[i] = b2 * v[i] + (1.0f - b2) * g * g;
        p[i] = p[i] * decay - step_size * m[i] / (std::sqrt(v[i]) * inv_sqrt_c2 + eps);
    }
}

} // namespace

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
            const float beta = spec_.momentum;
            float* p = params.data() + t.offset;
            float* buf = momentum + t.offset;
            const float* g = grads.data() + t.offset;
            parallel_for(
                t.count,
                [=](size_t first, size_t last) {
                    sgd_update(p + first, buf + first, g + first, last - first, wd, beta, lr);
                },
                kUpdateGrain);
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
    const float eps = spec_.eps;
    for (const ParameterTensor& t : tensors) {
        if (!t.trainable)
            continue;
        const float decay = t.decay ? 1.0f - lr * spec_.weight_decay : 1.0f;
        const size_t o = t.offset;
        float* p = params.data();
        const float* g = grads.data();
        parallel_for(
            t.count,
            [=](size_t first, size_t last) {
                adamw_update(p + o + first, m + o + first, v + o + first, g + o + first, last - first, b1, b2, decay,
                             step_size, inv_sqrt_c2, eps);
            },
            kUpdateGrain);
    }
}

} // namespace traindeck::engine
