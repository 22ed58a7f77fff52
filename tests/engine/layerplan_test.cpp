// The layer plan (backend/engine/layerplan.h) the model builder shows: each layer's output shape and parameters,
// the implied head, and an impossible list refused at the layer that causes it, with the network agreeing on all of it.
#include "layerplan.h"
#include "network.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

using namespace traindeck::engine;

TEST(LayerPlan, ShapesAndParametersOfAGoodList) {
    const std::vector<LayerSpec> specs = {{.type = LayerType::conv2d, .out = 8, .kernel = 3, .padding = 1},
                                          {.type = LayerType::batchnorm},
                                          {.type = LayerType::relu},
                                          {.type = LayerType::maxpool, .stride = 2, .size = 2},
                                          {.type = LayerType::conv2d, .out = 16, .kernel = 3, .stride = 2},
                                          {.type = LayerType::global_avgpool},
                                          {.type = LayerType::flatten}};
    const LayerPlan plan = plan_layers(specs, {28, 28, 1}, 10);
    ASSERT_TRUE(plan.ok()) << plan.error;
    ASSERT_EQ(plan.layers.size(), 8u);
    EXPECT_TRUE(plan.implied_head);
    EXPECT_EQ(describe_shape(plan.layers[0].out), "28x28x8");
    EXPECT_EQ(plan.layers[0].parameters, 8u * 9 + 8);
    EXPECT_EQ(plan.layers[1].parameters, 16u); // γ and β; the running statistics are not trained
    EXPECT_EQ(describe_shape(plan.layers[3].out), "14x14x8");
    EXPECT_EQ(describe_shape(plan.layers[4].out), "6x6x16"); // (14 - 3) / 2 + 1
    EXPECT_EQ(describe_shape(plan.layers[5].out), "16 values");
    EXPECT_EQ(plan.layers[7].spec.type, LayerType::linear);
    EXPECT_EQ(plan.layers[7].parameters, 16u * 10 + 10);
    EXPECT_EQ(plan.parameters, 80u + 16 + (16u * 72 + 16) + 170);
    // The network trains exactly those (its other parameters are the running statistics).
    auto net = Network::build(specs, {28, 28, 1}, 10, 1);
    ASSERT_TRUE(net) << net.error();
    size_t trainable = 0;
    for (const ParameterTensor& t : net->tensors())
        trainable += t.trainable ? t.count : 0;
    EXPECT_EQ(trainable, plan.parameters);
    EXPECT_EQ(net->params().size(), plan.parameters + 16);
}

TEST(LayerPlan, EveryPresetPlansAndMatchesItsNetwork) {
    for (const char* model : {"mlp", "cnn", "resnet"}) {
        const auto spec = parse_job_spec(nlohmann::json{{"model", model}});
        ASSERT_TRUE(spec) << spec.error();
        const LayerPlan plan = plan_layers(spec->layers, {32, 32, 3}, 10);
        ASSERT_TRUE(plan.ok()) << model << ": " << plan.error;
        auto net = Network::build(spec->layers, {32, 32, 3}, 10, 1);
        ASSERT_TRUE(net) << net.error();
        EXPECT_EQ(net->layers().size(), plan.layers.size()) << model;
        EXPECT_EQ(describe_shape(net->layers().back().in), describe_shape(plan.layers.back().in)) << model;
    }
}

TEST(LayerPlan, AnImpossibleListIsRefusedAtTheLayerThatCausesIt) {
    struct Case {
        std::vector<LayerSpec> specs;
        int layer;
        const char* says;
    };
    const std::vector<Case> cases = {
        {{{.type = LayerType::flatten}, {.type = LayerType::conv2d, .out = 4}}, 1, "needs image input"},
        {{{.type = LayerType::conv2d, .out = 4, .kernel = 5, .stride = 2}}, 0, "kernel 5 does not fit its 3x3 input"},
        {{{.type = LayerType::maxpool, .stride = 2, .size = 2}, {.type = LayerType::maxpool, .stride = 2, .size = 2}},
         1,
         "window 2 is larger than its 1x1 input"},
        {{{.type = LayerType::conv2d, .out = 4, .padding = 1}, {.type = LayerType::add, .from = 0}},
         1,
         "adds layers[0]'s input, 3x3x1, to its own input, 3x3x4"},
        {{{.type = LayerType::relu}, {.type = LayerType::add, .from = 3}}, 1, "must name an earlier layer"},
        {{{.type = LayerType::linear, .out = 7}}, 0, "emits 7 values but the data has 10 classes"},
    };
    for (const Case& c : cases) {
        const LayerPlan plan = plan_layers(c.specs, {3, 3, 1}, 10);
        ASSERT_FALSE(plan.ok());
        EXPECT_EQ(plan.error_layer, c.layer) << plan.error;
        EXPECT_NE(plan.error.find(c.says), std::string::npos) << plan.error;
        EXPECT_EQ(plan.layers.size(), c.specs.size() + (plan.implied_head ? 1 : 0)) << "every row is still listed";
        // The network refuses the same list with the same words.
        auto net = Network::build(c.specs, {3, 3, 1}, 10, 1);
        ASSERT_FALSE(net);
        EXPECT_EQ(net.error(), plan.error);
    }
}
