// Our NHWC layouts in PyTorch's NCHW (backend/engine/portablelayout.h): conv weights [O, K, K, C] → [O, C, K, K],
// a linear layer after a multi-channel flatten reads its columns in NCHW order, samples NHWC → NCHW.
#include "network.h"
#include "portablelayout.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

using namespace traindeck::engine;

namespace {

// A value that names its NHWC-layout position, so every move can be checked.
std::vector<float> counting(size_t n) {
    std::vector<float> v(n);
    std::iota(v.begin(), v.end(), 0.0f);
    return v;
}

} // namespace

TEST(PortableLayout, ConvWeightsMoveChannelsBeforeTheKernel) {
    auto built = Network::build({{.type = LayerType::conv2d, .out = 2, .kernel = 3}, {.type = LayerType::flatten}},
                                {5, 5, 3}, 4, 1);
    ASSERT_TRUE(built) << built.error();
    const Layer& conv = built->layers()[0];
    const std::vector<float> w = counting(size_t{2} * 3 * 3 * 3); // ours: [O=2, KH=3, KW=3, C=3]
    const PortableWeights p = portable_weights(conv, w.data(), {5, 5, 3});
    EXPECT_EQ(p.dims, (std::vector<int64_t>{2, 3, 3, 3}));
    for (int o = 0; o < 2; ++o)
        for (int c = 0; c < 3; ++c)
            for (int y = 0; y < 3; ++y)
                for (int x = 0; x < 3; ++x)
                    EXPECT_EQ(p.weight[((o * 3 + c) * 3 + y) * 3 + x], w[((o * 3 + y) * 3 + x) * 3 + c]);
}

TEST(PortableLayout, LinearAfterAnImageReadsColumnsInNchwOrder) {
    // conv (2 channels, 2x2 out) → flatten → linear(3) → relu → head(4): the linear layer's 8 inputs are
    // NHWC-flattened.
    auto built = Network::build({{.type = LayerType::conv2d, .out = 2, .kernel = 2},
                                 {.type = LayerType::flatten},
                                 {.type = LayerType::linear, .out = 3},
                                 {.type = LayerType::relu}},
                                {3, 3, 1}, 4, 1);
    ASSERT_TRUE(built) << built.error();
    std::vector<float> params = counting(built->params().size());
    const std::vector<PortableWeights> all = portable_weights(*built, params, {3, 3, 1});
    ASSERT_EQ(all.size(), built->layers().size());
    EXPECT_TRUE(all[1].weight.empty()) << "flatten has no weights";
    const Layer& linear = built->layers()[2];
    const PortableWeights& p = all[2];
    EXPECT_EQ(p.dims, (std::vector<int64_t>{3, 8}));
    const float* w = params.data() + linear.weight;
    for (int o = 0; o < 3; ++o)
        for (int c = 0; c < 2; ++c)
            for (int y = 0; y < 2; ++y)
                for (int x = 0; x < 2; ++x)
                    EXPECT_EQ(p.weight[o * 8 + (c * 2 + y) * 2 + x], w[o * 8 + (y * 2 + x) * 2 + c]);
    // The head's input is a flat vector: its columns stay as they are.
    const Layer& head = built->layers()[4];
    EXPECT_EQ(all[4].weight, std::vector<float>(params.begin() + head.weight, params.begin() + head.bias));
}

TEST(PortableLayout, SamplesGoFromNhwcToNchw) {
    const std::vector<float> x = counting(size_t{2} * 2 * 3 * 2); // 2 samples, h=2, w=3, c=2
    const std::vector<float> out = to_nchw(x.data(), 2, 2, 3, 2);
    ASSERT_EQ(out.size(), x.size());
    for (int n = 0; n < 2; ++n)
        for (int c = 0; c < 2; ++c)
            for (int y = 0; y < 2; ++y)
                for (int col = 0; col < 3; ++col)
                    EXPECT_EQ(out[n * 12 + (c * 2 + y) * 3 + col], x[n * 12 + (y * 3 + col) * 2 + c]);
    EXPECT_EQ(to_nchw(x.data(), 6, 1, 4, 1), x) << "one channel: nothing moves";
}
