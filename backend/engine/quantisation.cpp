// The arithmetic of quantisation.h, kept exactly as ONNX Runtime's QuantizeLinear/DequantizeLinear do it
// (std::nearbyint under the default rounding mode is round half to even), so that TrainDeck's simulated int8
// accuracy is the exported model's.
#include "quantisation.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace traindeck::engine {

void ActivationRange::widen(const float* values, size_t count) {
    if (count == 0)
        return;
    const auto [smallest, largest] = std::minmax_element(values, values + count);
    low = std::min(low, *smallest);
    high = std::max(high, *largest);
}

ActivationQuant activation_quant(const ActivationRange& range) {
    const float low = std::min(range.low, 0.0f); // zero must be exact (padding, ReLU)
    const float high = std::max(range.high, 0.0f);
    ActivationQuant q;
    if (high - low <= std::numeric_limits<float>::min())
        return q;
    q.scale = (high - low) / 255.0f;
    q.zero_point = static_cast<int>(std::clamp(std::nearbyint(-low / q.scale), 0.0f, 255.0f));
    return q;
}

float fake_quantize(float x, const ActivationQuant& q) {
    const float level = std::clamp(std::nearbyint(x / q.scale) + static_cast<float>(q.zero_point), 0.0f, 255.0f);
    return (level - static_cast<float>(q.zero_point)) * q.scale;
}

void fake_quantize(const float* x, float* out, size_t count, const ActivationQuant& q) {
    for (size_t k = 0; k < count; ++k)
        out[k] = fake_quantize(x[k], q);
}

WeightQuant quantize_weights(const float* weights, size_t count, int outputs) {
    WeightQuant q;
    const size_t row = count / outputs;
    q.values.resize(count);
    for (int o = 0; o < outputs; ++o) {
        const float* w = weights + o * row;
        float largest = 0.0f;
        for (size_t i = 0; i < row; ++i)
            largest = std::max(largest, std::fabs(w[i]));
        const float scale = largest > 0.0f ? largest / kWeightLevel : 1.0f;
        q.scales.push_back(scale);
        for (size_t i = 0; i < row; ++i)
            q.values[o * row + i] =
                static_cast<int8_t>(std::clamp(std::nearbyint(w[i] / scale), -kWeightLevel, kWeightLevel));
    }
    return q;
}

std::vector<float> dequantize_weights(const WeightQuant& q) {
    std::vector<float> weights(q.values.size());
    const size_t row = q.scales.empty() ? 0 : q.values.size() / q.scales.size();
    for (size_t k = 0; k < weights.size(); ++k)
        weights[k] = static_cast<float>(q.values[k]) * q.scales[k / row];
    return weights;
}

Int8Simulation simulate_int8(const Network& net, const std::vector<float>& params,
                             const std::vector<ActivationRange>& ranges) {
    const auto& layers = net.layers();
    Int8Simulation simulation{std::vector<ActivationQuant>(layers.size()), params};
    for (size_t i = 0; i < layers.size(); ++i) {
        const Layer& layer = layers[i];
        if (!layer.has_weights())
            continue;
        simulation.inputs[i] = activation_quant(ranges[i]);
        // A layer's bias follows its weight in the flat buffer, so the weight tensor ends where the bias begins.
        const size_t count = layer.bias - layer.weight;
        const std::vector<float> weights =
            dequantize_weights(quantize_weights(params.data() + layer.weight, count, layer.spec.out));
        std::copy(weights.begin(), weights.end(), simulation.params.begin() + static_cast<long>(layer.weight));
    }
    return simulation;
}

} // namespace traindeck::engine
