#include "network.h"

#include "onednn.h"
#include "rng.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <sstream>

namespace traindeck::engine {
namespace {

Conv2dShape conv_shape(const Layer& layer, int batch) {
    return Conv2dShape{.batch = batch,
                       .in_h = layer.in.height,
                       .in_w = layer.in.width,
                       .in_c = layer.in.channels,
                       .out_c = layer.spec.out,
                       .kernel = layer.spec.kernel,
                       .stride = layer.spec.stride,
                       .pad = layer.spec.padding};
}

bool is_alias(const LayerSpec& spec) { return spec.type == LayerType::flatten; }

double seconds_since(std::chrono::steady_clock::time_point started) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
}

} // namespace

Expected<Network> Network::build(const std::vector<LayerSpec>& specs, SampleShape input, int classes, int max_batch) {
    Network net;
    net.input_ = input;
    net.classes_ = classes;
    net.max_batch_ = max_batch;
    size_t param_count = 0;
    size_t max_cols = 0;
    // ReLU then max-pool runs as max-pool then ReLU: ReLU is monotonic, so outputs and gradients are bit for bit
    // the same, and the ReLU touches a quarter of the values. Not when an add reads the max-pool's input.
    std::vector<LayerSpec> swapped = specs;
    auto read_by_add = [&](size_t index) {
        return std::any_of(swapped.begin(), swapped.end(), [&](const LayerSpec& l) {
            return l.type == LayerType::add && l.from == static_cast<int>(index);
        });
    };
    for (size_t i = 0; i + 1 < swapped.size(); ++i)
        if (swapped[i].type == LayerType::relu && swapped[i + 1].type == LayerType::maxpool && !read_by_add(i + 1))
            std::swap(swapped[i], swapped[i + 1]);
    // Shapes and their checks are layerplan.h's (the console's model builder shows the same); the classifier head is
    // implied there when the list does not end in a linear layer.
    const LayerPlan plan = plan_layers(swapped, input, classes);
    if (!plan.ok())
        return Error{plan.error};
    net.skips_.resize(plan.layers.size());
    for (size_t i = 0; i < plan.layers.size(); ++i) {
        const PlannedLayer& planned = plan.layers[i];
        Layer layer{.spec = planned.spec, .in = planned.in, .out = planned.out};
        const LayerSpec& s = layer.spec;
        auto add_tensor = [&](const char* kind, size_t count, bool decay, bool trainable = true) {
            net.tensors_.push_back({"layers." + std::to_string(i) + "." + kind, param_count, count, decay, trainable});
            param_count += count;
            return net.tensors_.back().offset;
        };
        if (s.type == LayerType::linear) {
            layer.weight = add_tensor("weight", layer.in.size() * s.out, true);
            layer.bias = add_tensor("bias", s.out, false);
        } else if (s.type == LayerType::conv2d) {
            const Conv2dShape cs = conv_shape(layer, 1);
            layer.weight = add_tensor("weight", static_cast<size_t>(s.out) * cs.patch(), true);
            layer.bias = add_tensor("bias", s.out, false);
            if (!onednn::runs(cs))                                          // the im2col path's rows; oneDNN needs none
                max_cols = std::max(max_cols, cs.positions() * cs.patch()); // per sample
        } else if (s.type == LayerType::batchnorm) {
            // Over channels: an image's last axis, or every feature of a flat vector.
            const size_t channels = layer.in.channels;
            layer.weight = add_tensor("weight", channels, false);
            layer.bias = add_tensor("bias", channels, false);
            layer.running = add_tensor("running_mean", channels, false, false);
            add_tensor("running_var", channels, false, false);
        } else if (s.type == LayerType::add) {
            net.skips_[s.from].push_back(i);
        }
        net.layers_.push_back(layer);
    }

    net.params_.assign(param_count, 0.0f);
    net.grads_.assign(param_count, 0.0f);
    const size_t n = net.layers_.size();
    net.outputs_.resize(n);
    net.doutputs_.resize(n);
    net.scratch_.resize(n);
    for (size_t i = 0; i < n; ++i) {
        const Layer& layer = net.layers_[i];
        if (is_alias(layer.spec))
            continue;
        const size_t out_count = layer.out.size() * max_batch;
        net.outputs_[i].assign(out_count, 0.0f);
        net.doutputs_[i].assign(out_count, 0.0f);
        if (layer.spec.type == LayerType::conv2d) {
            const Conv2dShape cs = conv_shape(layer, max_batch);
            if (!onednn::runs(cs))
                net.scratch_[i].assign(cs.positions() * cs.patch(), 0.0f);
        } else if (layer.spec.type == LayerType::dropout) {
            net.scratch_[i].assign(out_count, 0.0f);
        } else if (layer.spec.type == LayerType::batchnorm) {
            net.scratch_[i].assign(out_count + layer.out.channels, 0.0f); // x̂, then 1/σ per channel
        }
    }
    net.dcols_.assign(max_cols * max_batch, 0.0f);
    net.layer_times_.assign(n, {});
    net.winners_.resize(n);
    for (size_t i = 0; i < n; ++i)
        if (net.layers_[i].spec.type == LayerType::maxpool)
            net.winners_[i].assign(net.layers_[i].out.size() * max_batch, 0);
    return net;
}

void Network::initialize(Rng& rng) {
    for (const Layer& layer : layers_) {
        if (layer.spec.type == LayerType::batchnorm) { // γ = 1, β = 0, running mean 0 and variance 1 (no draws)
            const size_t c = layer.out.channels;
            std::fill_n(params_.begin() + static_cast<long>(layer.weight), c, 1.0f);
            std::fill_n(params_.begin() + static_cast<long>(layer.bias), c, 0.0f);
            std::fill_n(params_.begin() + static_cast<long>(layer.running), c, 0.0f);
            std::fill_n(params_.begin() + static_cast<long>(layer.running + c), c, 1.0f);
        }
        if (!layer.has_weights())
            continue;
        const size_t fan_in = layer.spec.type == LayerType::linear
                                  ? layer.in.size()
                                  : static_cast<size_t>(layer.spec.kernel) * layer.spec.kernel * layer.in.channels;
        const float bound = 1.0f / std::sqrt(static_cast<float>(fan_in));
        const size_t weights = fan_in * layer.spec.out;
        for (size_t i = 0; i < weights; ++i)
            params_[layer.weight + i] = rng.uniform(-bound, bound);
        for (int i = 0; i < layer.spec.out; ++i)
            params_[layer.bias + i] = rng.uniform(-bound, bound);
    }
}

// A flatten layer owns no buffer: its output is the nearest earlier layer's (or the input's, when none).
float* Network::buffer_of(std::vector<std::vector<float>>& buffers, size_t layer) {
    while (is_alias(layers_[layer].spec)) {
        if (layer == 0)
            return nullptr;
        --layer;
    }
    return buffers[layer].data();
}

float* Network::output(size_t layer) { return buffer_of(outputs_, layer); }
float* Network::doutput(size_t layer) { return buffer_of(doutputs_, layer); }

const float* Network::input_of(size_t layer, const float* x) {
    const float* in = layer == 0 ? nullptr : output(layer - 1);
    return in ? in : x;
}

float* Network::dinput_of(size_t layer) { return layer == 0 ? nullptr : doutput(layer - 1); }

const float* Network::forward(const float* x, int batch, bool training, Rng& rng) {
    return run_forward(x, batch, training, rng, nullptr);
}

const float* Network::forward(const float* x, int batch, const WeightedInputHook& hook) {
    Rng unused; // inference draws no dropout masks
    return run_forward(x, batch, false, unused, hook ? &hook : nullptr);
}

const float* Network::run_forward(const float* x, int batch, bool training, Rng& rng, const WeightedInputHook* hook) {
    const float* input = x;
    winners_recorded_ = training;
    float* p = params_.data();
    for (size_t i = 0; i < layers_.size(); ++i) {
        Layer& layer = layers_[i];
        const LayerType type = layer.spec.type;
        if (type == LayerType::flatten)
            continue; // NHWC samples are already contiguous rows
        float* y = outputs_[i].data();
        const size_t in_count = layer.in.size() * batch;
        const auto started = std::chrono::steady_clock::now();
        if (hook && layer.has_weights())
            input = (*hook)(i, input, in_count);
        if (type == LayerType::linear) {
            linear_forward(y, input, p + layer.weight, p + layer.bias, batch, static_cast<int>(layer.in.size()), layer.spec.out);
        } else if (type == LayerType::conv2d) {
            conv2d_forward(y, scratch_[i].data(), input, p + layer.weight, p + layer.bias, conv_shape(layer, batch));
        } else if (type == LayerType::maxpool) {
            maxpool_forward(y, input, batch, layer.in.height, layer.in.width, layer.in.channels, layer.spec.size,
                            layer.spec.stride, training ? winners_[i].data() : nullptr);
        } else if (type == LayerType::avgpool) {
            avgpool_forward(y, input, batch, layer.in.height, layer.in.width, layer.in.channels, layer.spec.size,
                            layer.spec.stride);
        } else if (type == LayerType::global_avgpool) {
            global_avgpool_forward(y, input, batch, layer.in.height * layer.in.width, layer.in.channels);
        } else if (type == LayerType::batchnorm) {
            const int c = layer.in.channels;
            const size_t rows = in_count / c;
            float* running = p + layer.running;
            if (training)
                batchnorm_forward_training(y, scratch_[i].data(), scratch_[i].data() + in_count, running, running + c,
                                           input, p + layer.weight, p + layer.bias, rows, c, layer.spec.momentum,
                                           layer.spec.eps);
            else
                batchnorm_forward_inference(y, input, p + layer.weight, p + layer.bias, running, running + c, rows, c,
                                            layer.spec.eps);
        } else if (type == LayerType::add) {
            add_forward(y, input, input_of(layer.spec.from, x), in_count);
        } else if (type == LayerType::relu) {
            relu_forward(y, input, in_count);
        } else if (type == LayerType::gelu) {
            gelu_forward(y, input, in_count);
        } else if (type == LayerType::dropout) {
            if (training && layer.spec.p > 0.0f)
                dropout_forward(y, scratch_[i].data(), input, in_count, layer.spec.p, rng);
            else
                std::memcpy(y, input, sizeof(float) * in_count);
        }
        if (training)
            layer_times_[i].forward += seconds_since(started);
        input = y;
    }
    return input;
}

void Network::backward(const float* x, const float* dlogits, int batch) {
    float* p = params_.data();
    float* g = grads_.data();
    const float* dy = dlogits;
    for (size_t i = layers_.size(); i-- > 0;) {
        Layer& layer = layers_[i];
        const LayerType type = layer.spec.type;
        const float* input = input_of(i, x);
        // The first layer's input gradient is never needed: skipping it saves a whole gemm.
        float* dx = dinput_of(i);
        const size_t in_count = layer.in.size() * batch;
        const auto started = std::chrono::steady_clock::now();
        if (type == LayerType::flatten) {
            // dx is dy's own buffer (a flatten owns none): nothing moves.
        } else if (type == LayerType::linear) {
            linear_backward(dx, g + layer.weight, g + layer.bias, dy, input, p + layer.weight, batch,
                            static_cast<int>(layer.in.size()), layer.spec.out);
        } else if (type == LayerType::conv2d) {
            conv2d_backward(dx, g + layer.weight, g + layer.bias, dcols_.data(), dy, input, scratch_[i].data(),
                            p + layer.weight, conv_shape(layer, batch));
        } else if (type == LayerType::batchnorm) {
            batchnorm_backward(dx, g + layer.weight, g + layer.bias, dy, scratch_[i].data(),
                               scratch_[i].data() + in_count, p + layer.weight, in_count / layer.in.channels,
                               layer.in.channels);
        } else if (dx && type == LayerType::maxpool) {
            maxpool_backward(dx, dy, input, outputs_[i].data(), batch, layer.in.height, layer.in.width,
                             layer.in.channels, layer.spec.size, layer.spec.stride,
                             winners_recorded_ ? winners_[i].data() : nullptr);
        } else if (dx && type == LayerType::avgpool) {
            avgpool_backward(dx, dy, batch, layer.in.height, layer.in.width, layer.in.channels, layer.spec.size,
                             layer.spec.stride);
        } else if (dx && type == LayerType::global_avgpool) {
            global_avgpool_backward(dx, dy, batch, layer.in.height * layer.in.width, layer.in.channels);
        } else if (dx && type == LayerType::add) {
            std::memcpy(dx, dy, sizeof(float) * in_count); // the other input's share is added at layer `from`
        } else if (dx && type == LayerType::relu) {
            relu_backward(dx, dy, outputs_[i].data(), in_count);
        } else if (dx && type == LayerType::gelu) {
            gelu_backward(dx, dy, input, in_count);
        } else if (dx && type == LayerType::dropout) {
            dropout_backward(dx, dy, scratch_[i].data(), in_count);
        }
        layer_times_[i].backward += seconds_since(started);
        if (!dx)
            break;
        // This layer's input also fed the adds that name it: their output gradients join its gradient here, after
        // this layer has written its own share (backward overwrites dx) and before the layer before reads it.
        for (size_t add : skips_[i]) {
            const float* dadd = add + 1 < layers_.size() ? doutput(add) : dlogits;
            add_forward(dx, dx, dadd, in_count);
        }
        dy = dx;
    }
}

double Network::forward_flops_per_sample() const {
    double flops = 0.0;
    for (size_t i = 0; i < layers_.size(); ++i)
        flops += forward_flops_per_sample(i);
    return flops;
}

double Network::forward_flops_per_sample(size_t i) const {
    const Layer& layer = layers_[i];
    if (layer.spec.type == LayerType::linear)
        return 2.0 * layer.in.size() * layer.spec.out;
    if (layer.spec.type == LayerType::conv2d)
        return 2.0 * layer.out.height * layer.out.width * layer.spec.out * layer.spec.kernel * layer.spec.kernel *
               layer.in.channels;
    return 0.0;
}

std::vector<std::string> Network::convolution_kernels() const {
    std::vector<std::string> kernels;
    for (const Layer& layer : layers_) {
        if (layer.spec.type != LayerType::conv2d)
            continue;
        const Conv2dShape s = conv_shape(layer, max_batch_);
        kernels.push_back(onednn::runs(s) ? std::string("oneDNN ") + onednn::kernel_name(s) : "im2col + BLAS");
    }
    return kernels;
}

std::string Network::describe() const {
    std::ostringstream text;
    text << input_.height << "x" << input_.width << "x" << input_.channels;
    for (const Layer& layer : layers_) {
        text << " -> " << to_string(layer.spec.type);
        if (layer.spec.type == LayerType::linear || layer.spec.type == LayerType::conv2d)
            text << "(" << layer.spec.out << ")";
        else if (layer.spec.type == LayerType::add)
            text << "(" << layer.spec.from << ")";
    }
    text << "  [" << params_.size() << " parameters]";
    return text.str();
}

} // namespace traindeck::engine
