// CpuModel (cpumodel.h): the CPU engine's step, in the order the trainer always ran it, so that results and resumed
// runs stay bit-identical: forward, softmax-cross-entropy or a regression's squared error (loss summed in double, per
// micro-batch), backward into the accumulated gradients, then one optimiser update per step.
#include "cpumodel.h"

#include "layers.h"
#include "parallel.h"

#include <algorithm>

namespace traindeck::engine {

CpuModel::CpuModel(Network& net, const OptimizerSpec& optimizer, float label_smoothing)
    : net_(net), optimizer_(optimizer, net.params().size()), label_smoothing_(label_smoothing),
      probs_(static_cast<size_t>(net.max_batch()) * net.classes()), dlogits_(probs_.size()) {}

void CpuModel::write_parameters(const std::vector<float>& params,
                                const std::vector<std::vector<float>>& optimizer_state) {
    if (&params != &net_.params()) // the trainer may hand back the network's own buffer
        net_.params() = params;
    optimizer_.state() = optimizer_state;
}

void CpuModel::read_parameters(std::vector<float>& params, std::vector<std::vector<float>>& optimizer_state) {
    if (&params != &net_.params())
        params = net_.params();
    optimizer_state = optimizer_.state();
}

void CpuModel::zero_grads() {
    float* grads = net_.grads().data();
    parallel_for(
        net_.grads().size(), [grads](size_t first, size_t last) { std::fill(grads + first, grads + last, 0.0f); },
        32768);
    loss_sum_ = 0.0;
    correct_ = 0;
}

void CpuModel::forward_backward(const float* x, const int32_t* y, const float* targets, int batch, float scale,
                                Rng& dropout) {
    const int classes = net_.classes();
    const float* logits = net_.forward(x, batch, true, dropout);
    if (targets) {
        loss_sum_ += squared_error(logits, targets, batch, dlogits_.data(), scale);
        net_.backward(x, dlogits_.data(), batch);
        return;
    }
    loss_sum_ += softmax_cross_entropy_forward(probs_.data(), logits, y, batch, classes, label_smoothing_);
    for (int b = 0; b < batch; ++b) {
        const float* row = probs_.data() + static_cast<size_t>(b) * classes;
        correct_ += std::max_element(row, row + classes) - row == y[b];
    }
    softmax_cross_entropy_backward(dlogits_.data(), probs_.data(), y, batch, classes, scale, label_smoothing_);
    net_.backward(x, dlogits_.data(), batch);
}

void CpuModel::step(float lr, long step, double& loss_sum, long& correct) {
    optimizer_.step(net_.params(), net_.grads(), net_.tensors(), lr, step);
    loss_sum = loss_sum_;
    correct = correct_;
}

const float* CpuModel::logits(const float* x, int batch) { return net_.forward(x, batch, false, inference_rng_); }

} // namespace traindeck::engine
