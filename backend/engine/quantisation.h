#pragma once
// Post-training static quantisation for the exporter (export.h), as pure functions: uint8 activations per tensor
// (asymmetric), their scale chosen from a range calibrated on training samples; int8 weights per output channel
// (symmetric); and the fake quantisation that simulates both in float, exactly as ONNX QuantizeLinear followed by
// DequantizeLinear computes them (round half to even, saturate), so the accuracy the export reports is the int8
// ONNX model's. Zero is always exactly representable (padding and ReLU outputs stay exact).
#include "network.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace traindeck::engine {

// q = saturate(round_half_even(x / scale) + zero_point) in [0, 255]; x' = (q - zero_point) × scale.
struct ActivationQuant {
    float scale = 1.0f;
    int zero_point = 0;
};

// The smallest range holding every value observed and zero (calibration widens it batch by batch).
struct ActivationRange {
    float low = 0.0f, high = 0.0f;
    void widen(const float* values, size_t count);
};

// uint8 scale and zero point for a calibrated range: 256 levels over [min(low, 0), max(high, 0)]; an empty range
// (all zeros) gets scale 1.
ActivationQuant activation_quant(const ActivationRange& range);
float fake_quantize(float x, const ActivationQuant& q);
void fake_quantize(const float* x, float* out, size_t count, const ActivationQuant& q);

// int8 weights with one scale per output channel (largest magnitude → ±kWeightLevel); a tensor's rows (one per output)
// are contiguous in both our linear [O, I] and conv [O, K, K, C] layouts, and in PyTorch's.
// Seven bits, not eight (ONNX Runtime's "reduce range"): on x86 CPUs without VNNI (AVX2, AVX-512 before Cascade Lake)
// ONNX Runtime multiplies uint8 activations by int8 weights with vpmaddubsw, which adds two products into 16 bits and
// saturates there: 255 × 127 × 2 overflows, 255 × 63 × 2 = 32,130 does not. With ±127 a regression's int8 model
// gave onnxruntime outputs 0.21 standard deviations away from the ones TrainDeck had scored, on an AVX2 EPYC.
constexpr float kWeightLevel = 63.0f;
struct WeightQuant {
    std::vector<int8_t> values;
    std::vector<float> scales;
};
WeightQuant quantize_weights(const float* weights, size_t count, int outputs);
std::vector<float> dequantize_weights(const WeightQuant& q);

// The int8 model as the exporter simulates it: each weighted layer's input quantisation (from its calibrated input
// range; default for layers without weights) and the parameters with every weight tensor quantised and dequantised
// again (biases stay fp32, as in QDQ form).
struct Int8Simulation {
    std::vector<ActivationQuant> inputs; // per layer
    std::vector<float> params;
};
Int8Simulation simulate_int8(const Network& net, const std::vector<float>& params,
                             const std::vector<ActivationRange>& ranges);

} // namespace traindeck::engine
