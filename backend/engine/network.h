#pragma once
// A feed-forward network built from a list of layer specs. All parameters live in one flat buffer
// (and their gradients in another of the same layout), as in llm.c, so the optimiser, the checkpoint
// and a future all-reduce each see one array.
#include "expected.h"
#include "jobspec.h"
#include "layerplan.h"
#include "layers.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace traindeck::engine {

class Rng;

struct ParameterTensor {
    std::string name; // e.g. "layers.3.weight"
    size_t offset = 0, count = 0;
    bool decay = true;     // weight decay applies to weights, not to biases or batchnorm's scale and shift
    bool trainable = true; // false: batchnorm's running statistics, which forward updates and the optimiser skips
};

struct Layer {
    LayerSpec spec;
    SampleShape in, out;
    size_t weight = 0, bias = 0; // offsets into params (linear, conv2d; batchnorm: its scale γ and shift β)
    size_t running = 0;          // batchnorm: running mean [C] then running variance [C], in params
    bool has_weights() const { return spec.type == LayerType::linear || spec.type == LayerType::conv2d; }
};

// Shown the input of every layer with weights (linear, conv2d) during an inference pass, before the layer runs;
// returns the input that layer computes with: the one given (to observe it, as int8 calibration does) or a
// replacement that stays valid until the layer has run (a fake-quantised copy, to simulate int8).
using WeightedInputHook = std::function<const float*(size_t layer, const float* input, size_t count)>;

class Network {
public:
    // Checks that the layers fit the input shape and that the last layer emits `classes` logits; an add layer's two
    // inputs must have the same shape. Errors name the layer that does not fit.
    static Expected<Network> build(const std::vector<LayerSpec>& specs, SampleShape input, int classes, int max_batch);

    // PyTorch's default initialisation: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weights and biases.
    void initialize(Rng& rng);

    // Returns the logits [batch, classes]. Dropout draws from rng only when training.
    const float* forward(const float* x, int batch, bool training, Rng& rng);
    // The same inference pass (no dropout) with hook (when set) shown every weighted layer's input: the exporter's
    // calibration and int8 simulation run the trainer's own forward walk. Not followed by backward().
    const float* forward(const float* x, int batch, const WeightedInputHook& hook);
    // Accumulates parameter gradients from dlogits (the loss gradient w.r.t. forward's logits).
    void backward(const float* x, const float* dlogits, int batch);

    std::vector<float>& params() { return params_; }
    const std::vector<float>& params() const { return params_; }
    std::vector<float>& grads() { return grads_; }
    const std::vector<ParameterTensor>& tensors() const { return tensors_; }
    const std::vector<Layer>& layers() const { return layers_; }
    int classes() const { return classes_; }
    int max_batch() const { return max_batch_; }
    // Multiply-adds of one sample's forward pass (for FLOP/s reports).
    double forward_flops_per_sample() const;
    // The same for one layer (0 for a layer without weights).
    double forward_flops_per_sample(size_t layer) const;
    // Where each convolution runs: "oneDNN <its kernel>" or "im2col + BLAS", one entry a conv2d layer in order.
    std::vector<std::string> convolution_kernels() const;

    // Seconds each layer has spent in training passes (forward with training set, and backward) since the network
    // was built: the trainer reports them so the slowest layer type is visible.
    struct LayerTime {
        double forward = 0.0, backward = 0.0;
    };
    const std::vector<LayerTime>& layer_times() const { return layer_times_; }
    std::string describe() const;

private:
    const float* run_forward(const float* x, int batch, bool training, Rng& rng, const WeightedInputHook* hook);
    float* buffer_of(std::vector<std::vector<float>>& buffers, size_t layer);
    float* output(size_t layer);
    float* doutput(size_t layer);
    // The tensor layer i reads (the previous layer's output, or x), and where its gradient goes (null: x's).
    const float* input_of(size_t layer, const float* x);
    float* dinput_of(size_t layer);

    std::vector<Layer> layers_;
    std::vector<ParameterTensor> tensors_;
    std::vector<float> params_, grads_;
    // Per layer: output and its gradient, plus the scratch the layer keeps from forward to backward.
    std::vector<std::vector<float>> outputs_, doutputs_, scratch_;
    std::vector<float> dcols_; // shared by all convolutions' backward passes
    std::vector<std::vector<size_t>> skips_; // per layer: the add layers that read its input (their "from")
    std::vector<LayerTime> layer_times_;
    std::vector<std::vector<uint8_t>> winners_; // per max-pool layer: which input of each window won (training)
    bool winners_recorded_ = false;             // the last forward was a training pass, which recorded them
    SampleShape input_;
    int classes_ = 0;
    int max_batch_ = 0;
};

} // namespace traindeck::engine
