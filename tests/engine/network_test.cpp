// Network's inference pass with a weighted-input hook (backend/engine/network.h), which the exporter's calibration
// and int8 simulation use instead of a copy of the forward walk: an observing hook changes nothing, bit for bit; the
// hook sees exactly the weighted layers' inputs; a replacing hook's input is the one the layer computes with.
#include "network.h"
#include "rng.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

using namespace traindeck::engine;

namespace {

Network make_network() {
    auto built = Network::build({{.type = LayerType::conv2d, .out = 3, .kernel = 3, .stride = 2},
                                 {.type = LayerType::gelu},
                                 {.type = LayerType::flatten},
                                 {.type = LayerType::dropout, .p = 0.5f},
                                 {.type = LayerType::linear, .out = 7},
                                 {.type = LayerType::relu}},
                                {7, 7, 2}, 4, 6);
    EXPECT_TRUE(built) << built.error();
    Rng init(13);
    built->initialize(init);
    return std::move(*built);
}

} // namespace

TEST(Network, ObservedInferenceIsTheForwardPassBitForBit) {
    Network net = make_network();
    Rng data(1), unused;
    std::vector<float> x(size_t{6} * 7 * 7 * 2);
    for (float& v : x)
        v = data.uniform(-1.0f, 1.0f);
    const float* plain = net.forward(x.data(), 6, false, unused);
    const std::vector<float> expected(plain, plain + size_t{6} * 4);
    std::vector<std::pair<size_t, size_t>> seen;
    const float* observed = net.forward(x.data(), 6, [&](size_t layer, const float* input, size_t count) {
        seen.emplace_back(layer, count);
        return input;
    });
    EXPECT_EQ(std::memcmp(observed, expected.data(), expected.size() * sizeof(float)), 0);
    // conv2d (layer 0), linear (4) and the implied head (6); inputs of batch × in.size().
    const std::vector<std::pair<size_t, size_t>> weighted = {{0, 6 * 98}, {4, 6 * 27}, {6, 6 * 7}};
    EXPECT_EQ(seen, weighted);
    const float* unhooked = net.forward(x.data(), 6, WeightedInputHook{});
    EXPECT_EQ(std::memcmp(unhooked, expected.data(), expected.size() * sizeof(float)), 0);
}

TEST(Network, ReplacedInputIsTheOneTheLayerComputesWith) {
    Network net = make_network();
    std::vector<float> x(size_t{2} * 7 * 7 * 2, 0.5f);
    const std::vector<float> zeros(size_t{2} * 98, 0.0f);
    // Zeroing the first layer's input leaves only biases to flow through: the same as a zero sample.
    const float* replaced = net.forward(
        x.data(), 2, [&](size_t layer, const float* input, size_t) { return layer == 0 ? zeros.data() : input; });
    const std::vector<float> got(replaced, replaced + size_t{2} * 4);
    Rng unused;
    const float* zero_input = net.forward(zeros.data(), 2, false, unused);
    EXPECT_EQ(std::vector<float>(zero_input, zero_input + size_t{2} * 4), got);
    const float* original = net.forward(x.data(), 2, false, unused);
    EXPECT_NE(std::vector<float>(original, original + size_t{2} * 4), got) << "the replacement must have mattered";
    EXPECT_EQ(x, std::vector<float>(x.size(), 0.5f)) << "the caller's samples are never written";
}
