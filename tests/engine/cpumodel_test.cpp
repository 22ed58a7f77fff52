// CpuModel (backend/engine/cpumodel.h) is the CPU engine behind the Model interface: its inference is Network's
// forward pass bit for bit, and its training steps are the hand-written loop the trainer ran before it (forward,
// softmax-cross-entropy, backward, optimiser), bit for bit, dropout and gradient accumulation included.
#include "cpumodel.h"
#include "layers.h"
#include "network.h"
#include "optimizer.h"
#include "rng.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

using namespace traindeck::engine;

namespace {

const std::vector<LayerSpec> kLayers = {{.type = LayerType::conv2d, .out = 4, .kernel = 3, .padding = 1},
                                        {.type = LayerType::relu},
                                        {.type = LayerType::maxpool, .stride = 2, .size = 2},
                                        {.type = LayerType::flatten},
                                        {.type = LayerType::dropout, .p = 0.25f},
                                        {.type = LayerType::linear, .out = 12},
                                        {.type = LayerType::gelu}};
const SampleShape kShape{6, 6, 2};
constexpr int kClasses = 5, kBatch = 8;

Network make_network() {
    auto built = Network::build(kLayers, kShape, kClasses, kBatch);
    EXPECT_TRUE(built) << built.error();
    Rng init(21);
    built->initialize(init);
    return std::move(*built);
}

std::vector<float> random_inputs(size_t count, uint64_t seed) {
    Rng rng(seed);
    std::vector<float> x(count);
    for (float& v : x)
        v = rng.uniform(-1.0f, 1.0f);
    return x;
}

std::vector<int32_t> random_labels(size_t count, uint64_t seed) {
    Rng rng(seed);
    std::vector<int32_t> y(count);
    for (int32_t& label : y)
        label = static_cast<int32_t>(rng.below(kClasses));
    return y;
}

bool same_bits(const float* a, const float* b, size_t count) { return std::memcmp(a, b, count * sizeof(float)) == 0; }

} // namespace

TEST(CpuModel, LogitsAreNetworksForwardPassBitForBit) {
    Network reference = make_network();
    Network trained = make_network();
    CpuModel model(trained, {.type = "sgd", .lr = 0.1f});
    const auto x = random_inputs(kBatch * kShape.size(), 5);
    Rng unused;
    for (int batch : {kBatch, 3}) { // a full batch and an epoch's short last one
        const float* expected = reference.forward(x.data(), batch, false, unused);
        const std::vector<float> copy(expected, expected + static_cast<size_t>(batch) * kClasses);
        const float* got = model.logits(x.data(), batch);
        EXPECT_TRUE(same_bits(got, copy.data(), copy.size())) << "batch " << batch;
    }
}

TEST(CpuModel, StepsAreTheHandWrittenLoopBitForBit) {
    const OptimizerSpec adamw{.type = "adamw", .lr = 0.01f, .weight_decay = 0.05f};
    Network reference = make_network();
    Optimizer optimizer(adamw, reference.params().size());
    Network trained = make_network();
    CpuModel model(trained, adamw);
    model.write_parameters(trained.params(), optimizer.state());
    Rng reference_dropout(9), model_dropout(9);
    std::vector<float> probs(static_cast<size_t>(kBatch) * kClasses), dlogits(probs.size());
    const int micro_batches = 2, steps = 4;
    for (int step = 1; step <= steps; ++step) {
        const float scale = 1.0f / (kBatch * micro_batches);
        std::fill(reference.grads().begin(), reference.grads().end(), 0.0f);
        double reference_loss = 0.0;
        long reference_correct = 0;
        model.zero_grads();
        for (int micro = 0; micro < micro_batches; ++micro) {
            const auto x = random_inputs(kBatch * kShape.size(), 100 + step * 10 + micro);
            const auto y = random_labels(kBatch, 200 + step * 10 + micro);
            const float* logits = reference.forward(x.data(), kBatch, true, reference_dropout);
            reference_loss += softmax_cross_entropy_forward(probs.data(), logits, y.data(), kBatch, kClasses);
            for (int b = 0; b < kBatch; ++b) {
                const float* row = probs.data() + static_cast<size_t>(b) * kClasses;
                reference_correct += std::max_element(row, row + kClasses) - row == y[b];
            }
            softmax_cross_entropy_backward(dlogits.data(), probs.data(), y.data(), kBatch, kClasses, scale);
            reference.backward(x.data(), dlogits.data(), kBatch);
            model.forward_backward(x.data(), y.data(), nullptr, kBatch, scale, model_dropout);
        }
        optimizer.step(reference.params(), reference.grads(), reference.tensors(), adamw.lr, step);
        double loss = -1.0;
        long correct = -1;
        model.step(adamw.lr, step, loss, correct);
        EXPECT_EQ(loss, reference_loss) << "step " << step;
        EXPECT_EQ(correct, reference_correct) << "step " << step;
        EXPECT_EQ(model_dropout.state(), reference_dropout.state()) << "the dropout stream is the trainer's";
    }
    std::vector<float> params;
    std::vector<std::vector<float>> state;
    model.read_parameters(params, state);
    EXPECT_TRUE(same_bits(params.data(), reference.params().data(), params.size()));
    ASSERT_EQ(state.size(), 2u);
    EXPECT_EQ(state, optimizer.state());
    EXPECT_NE(params, make_network().params()) << "four AdamW steps must have moved the weights";
}

TEST(CpuModel, ParametersWrittenAreTheOnesReadAndTrained) {
    Network trained = make_network();
    CpuModel model(trained, {.type = "sgd", .lr = 0.1f, .momentum = 0.9f});
    std::vector<float> params = random_inputs(trained.params().size(), 77);
    std::vector<std::vector<float>> state = {random_inputs(trained.params().size(), 78)};
    model.write_parameters(params, state);
    EXPECT_EQ(trained.params(), params) << "the CPU model trains the network's own buffer";
    std::vector<float> read_params;
    std::vector<std::vector<float>> read_state;
    model.read_parameters(read_params, read_state);
    EXPECT_EQ(read_params, params);
    EXPECT_EQ(read_state, state);
    // Handing back the network's own buffer (as the trainer does on resume) keeps it.
    model.write_parameters(trained.params(), state);
    EXPECT_EQ(trained.params(), params);
    EXPECT_FALSE(model.any_rank(false));
    EXPECT_TRUE(model.any_rank(true));
}
