// Quantisation (backend/engine/quantisation.h) as ONNX QuantizeLinear → DequantizeLinear computes it: scales chosen
// from calibrated ranges, every value in range back within half a scale step, zero exact, saturation outside the
// range, int8 weights per output channel; and the int8 simulation the exporter scores.
#include "network.h"
#include "quantisation.h"
#include "rng.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace traindeck::engine;

TEST(Quantisation, RangeWidensOverBatchesAndAlwaysHoldsZero) {
    ActivationRange range;
    const std::vector<float> first = {0.5f, 2.0f, 1.0f}, second = {3.5f, 0.25f};
    range.widen(first.data(), first.size());
    EXPECT_EQ(range.low, 0.0f) << "an all-positive input still has zero in its range";
    EXPECT_EQ(range.high, 2.0f);
    range.widen(second.data(), second.size());
    EXPECT_EQ(range.high, 3.5f);
    const std::vector<float> negative = {-1.5f, -0.5f};
    range.widen(negative.data(), negative.size());
    EXPECT_EQ(range.low, -1.5f);
    EXPECT_EQ(range.high, 3.5f);
}

TEST(Quantisation, ActivationScaleAndZeroPointComeFromTheRange) {
    const ActivationQuant q = activation_quant({.low = -1.0f, .high = 3.0f});
    EXPECT_FLOAT_EQ(q.scale, 4.0f / 255.0f);
    EXPECT_EQ(q.zero_point, 64); // round(1 / (4/255)) = round(63.75)
    const ActivationQuant relu = activation_quant({.low = 0.0f, .high = 6.0f});
    EXPECT_EQ(relu.zero_point, 0) << "a ReLU output's range starts at zero: all 256 levels above it";
    EXPECT_FLOAT_EQ(relu.scale, 6.0f / 255.0f);
    const ActivationQuant empty = activation_quant({});
    EXPECT_EQ(empty.scale, 1.0f) << "an all-zero range must not divide by zero";
    EXPECT_EQ(empty.zero_point, 0);
}

TEST(Quantisation, FakeQuantizeStaysWithinHalfAStepAndKeepsZeroExact) {
    const ActivationRange range{.low = -2.5f, .high = 7.0f};
    const ActivationQuant q = activation_quant(range);
    EXPECT_EQ(fake_quantize(0.0f, q), 0.0f);
    Rng rng(4);
    std::vector<float> x(5000), out(x.size());
    for (float& v : x)
        v = rng.uniform(range.low, range.high);
    fake_quantize(x.data(), out.data(), x.size(), q);
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        worst = std::max(worst, std::abs(double(out[i]) - x[i]));
        EXPECT_EQ(out[i], fake_quantize(x[i], q));
    }
    EXPECT_LE(worst, q.scale / 2 * (1 + 1e-4)) << "dequantised values are the nearest level";
    EXPECT_GT(worst, q.scale / 4) << "5000 uniform values must land between levels too";
    // Outside the range the uint8 levels saturate.
    EXPECT_FLOAT_EQ(fake_quantize(100.0f, q), (255 - q.zero_point) * q.scale);
    EXPECT_FLOAT_EQ(fake_quantize(-100.0f, q), -q.zero_point * q.scale);
    // Ties round to even, as ONNX does: level 2.5 → 2, 3.5 → 4.
    const ActivationQuant unit{.scale = 1.0f, .zero_point = 0};
    EXPECT_EQ(fake_quantize(2.5f, unit), 2.0f);
    EXPECT_EQ(fake_quantize(3.5f, unit), 4.0f);
}

TEST(Quantisation, WeightsPerOutputChannelRoundTripWithinHalfTheirScale) {
    // Two rows of very different magnitude (one scale each) and an all-zero row.
    const std::vector<float> w = {0.01f, -0.02f, 0.005f, 0.0f, 3.0f, -1.0f, 0.5f, 2.9f, 0.0f, 0.0f, 0.0f, 0.0f};
    const WeightQuant q = quantize_weights(w.data(), w.size(), 3);
    ASSERT_EQ(q.scales.size(), 3u);
    ASSERT_EQ(q.values.size(), w.size());
    EXPECT_FLOAT_EQ(q.scales[0], 0.02f / 63);
    EXPECT_FLOAT_EQ(q.scales[1], 3.0f / 63);
    EXPECT_EQ(q.scales[2], 1.0f);
    EXPECT_EQ(q.values[1], -63) << "a row's largest magnitude maps to the end of the 7-bit range";
    EXPECT_EQ(q.values[4], 63);
    // No weight leaves ±63, whatever rounding does (onnxruntime's u8s8 kernels saturate above it without VNNI).
    for (const int8_t value : q.values)
        EXPECT_LE(std::abs(int(value)), 63);
    const std::vector<float> back = dequantize_weights(q);
    ASSERT_EQ(back.size(), w.size());
    for (size_t i = 0; i < w.size(); ++i)
        EXPECT_LE(std::abs(back[i] - w[i]), q.scales[i / 4] / 2 * (1 + 1e-5)) << "weight " << i;
    for (size_t i = 8; i < 12; ++i)
        EXPECT_EQ(back[i], 0.0f);
    EXPECT_LT(std::abs(back[0] - w[0]), 1e-3f) << "the small row keeps its precision: its scale is its own";
}

TEST(Quantisation, Int8SimulationQuantisesWeightsOnlyAndScalesEveryWeightedInput) {
    auto built = Network::build({{.type = LayerType::linear, .out = 6}, {.type = LayerType::relu}}, {1, 5, 1}, 3, 4);
    ASSERT_TRUE(built) << built.error();
    Rng init(2);
    built->initialize(init);
    const std::vector<float>& params = built->params();
    std::vector<ActivationRange> ranges(built->layers().size());
    ranges[0] = {.low = -1.0f, .high = 1.0f};
    ranges[2] = {.low = 0.0f, .high = 4.0f}; // the implied classifier head
    const Int8Simulation int8 = simulate_int8(*built, params, ranges);
    ASSERT_EQ(int8.inputs.size(), built->layers().size());
    EXPECT_FLOAT_EQ(int8.inputs[0].scale, 2.0f / 255);
    EXPECT_FLOAT_EQ(int8.inputs[2].scale, 4.0f / 255);
    EXPECT_EQ(int8.inputs[1].scale, 1.0f) << "ReLU has no weights and no input quantisation";
    ASSERT_EQ(int8.params.size(), params.size());
    size_t changed = 0;
    for (const Layer& layer : built->layers()) {
        if (!layer.has_weights())
            continue;
        for (size_t i = layer.weight; i < layer.bias; ++i)
            changed += int8.params[i] != params[i];
        for (int i = 0; i < layer.spec.out; ++i)
            EXPECT_EQ(int8.params[layer.bias + i], params[layer.bias + i]) << "biases stay fp32";
    }
    EXPECT_GT(changed, 0u) << "weights are int8 values times their scale";
}
