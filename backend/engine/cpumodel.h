#pragma once
// The CPU engine behind the Model interface (model.h): the network's own forward and backward walk (network.h) over
// the layer functions of layers.h, softmax-cross-entropy, and the optimiser of optimizer.h. Its results are the
// CPU engine's bit for bit (tests/engine/cpumodel_test.cpp): the loop in train() was this code before it moved
// here, and checkpoints resume bit-identically on it.
#include "model.h"
#include "network.h"
#include "optimizer.h"
#include "rng.h"

#include <vector>

namespace traindeck::engine {

class CpuModel final : public Model {
public:
    // Trains `net` in place (its parameter and gradient buffers are the model's); net outlives the model.
    // label_smoothing: ε of the training loss (layers.h); 0 is plain cross-entropy.
    CpuModel(Network& net, const OptimizerSpec& optimizer, float label_smoothing = 0.0f);

    void write_parameters(const std::vector<float>& params,
                          const std::vector<std::vector<float>>& optimizer_state) override;
    void read_parameters(std::vector<float>& params, std::vector<std::vector<float>>& optimizer_state) override;
    void zero_grads() override;
    void forward_backward(const float* x, const int32_t* y, const float* targets, int batch, float scale,
                          Rng& dropout) override;
    void step(float lr, long step, double& loss_sum, long& correct) override;
    bool any_rank(bool flag) override { return flag; }
    const float* logits(const float* x, int batch) override;
    std::string describe() const override { return "CPU"; }

private:
    Network& net_;
    Optimizer optimizer_;
    float label_smoothing_ = 0.0f;
    std::vector<float> probs_, dlogits_;
    double loss_sum_ = 0.0;
    long correct_ = 0;
    Rng inference_rng_; // never drawn from: inference has no dropout
};

} // namespace traindeck::engine
