// The ONNX writer (backend/engine/onnxwriter.h), read back through ONNX's own protobuf classes: the graph's nodes
// follow the network's layers (the ReLU/max-pool swap included), the normalisation comes first, weights are the
// network's in PyTorch layout, and the int8 graph puts QuantizeLinear → DequantizeLinear before every weighted
// layer with int8 weights per output channel. onnxruntime runs the files in export_test.cpp.
#include "network.h"
#include "onnxwriter.h"
#include "portablelayout.h"
#include "quantisation.h"
#include "rng.h"

#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

using namespace traindeck::engine;

namespace {

Network make_network() {
    auto built = Network::build({{.type = LayerType::conv2d, .out = 4, .kernel = 3, .padding = 1},
                                 {.type = LayerType::relu},
                                 {.type = LayerType::maxpool, .stride = 2, .size = 2},
                                 {.type = LayerType::flatten},
                                 {.type = LayerType::dropout, .p = 0.3f},
                                 {.type = LayerType::linear, .out = 8},
                                 {.type = LayerType::gelu}},
                                {6, 6, 2}, 3, 4);
    EXPECT_TRUE(built) << built.error();
    Rng init(5);
    built->initialize(init);
    return std::move(*built);
}

onnx::ModelProto parse(const traindeck::Expected<std::string>& bytes) {
    onnx::ModelProto model;
    EXPECT_TRUE(bytes) << bytes.error();
    if (bytes) {
        EXPECT_TRUE(model.ParseFromString(*bytes));
    }
    return model;
}

std::vector<std::string> op_types(const onnx::GraphProto& graph) {
    std::vector<std::string> ops;
    for (const auto& node : graph.node())
        ops.push_back(node.op_type());
    return ops;
}

std::map<std::string, const onnx::TensorProto*> initializers(const onnx::GraphProto& graph) {
    std::map<std::string, const onnx::TensorProto*> all;
    for (const auto& t : graph.initializer())
        all[t.name()] = &t;
    return all;
}

} // namespace

TEST(OnnxWriter, Fp32GraphFollowsTheNetworkWithItsWeightsAndNormalisation) {
    Network net = make_network();
    const ModelInput input{
        .shape = {6, 6, 2}, .image = true, .normalization = {{0.5f, 0.25f}, {2.0f, 4.0f}}, .regression = {}};
    const onnx::ModelProto model = parse(build_onnx(net, net.params(), input, nullptr, {{"classes", "3"}}));
    const onnx::GraphProto& graph = model.graph();
    // Pixels 0–255 scaled to [0, 1] and normalised, then conv → max-pool → ReLU (the network's swap), flatten before
    // the first linear, the GELU's tanh form, and the implied head.
    const std::vector<std::string> expected = {"Mul",     "Sub",  "Mul", "Conv", "MaxPool", "Relu",
                                               "Flatten", "Gemm", "Mul", "Mul",  "Mul",     "Add",
                                               "Mul",     "Tanh", "Add", "Mul",  "Mul",     "Gemm"};
    EXPECT_EQ(op_types(graph), expected);
    ASSERT_EQ(graph.input_size(), 1);
    EXPECT_EQ(graph.input(0).name(), "input");
    const auto& dims = graph.input(0).type().tensor_type().shape().dim();
    ASSERT_EQ(dims.size(), 4);
    EXPECT_EQ(dims[0].dim_param(), "batch");
    EXPECT_EQ(dims[1].dim_value(), 2) << "NCHW: channels first";
    EXPECT_EQ(graph.output(0).name(), "logits");
    EXPECT_EQ(graph.node(graph.node_size() - 1).output(0), "logits");
    EXPECT_EQ(model.opset_import(0).version(), 13);
    ASSERT_EQ(model.metadata_props_size(), 1);
    EXPECT_EQ(model.metadata_props(0).value(), "3");

    // The conv's weight initializer is the network's, in [O, C, K, K].
    const auto portable = portable_weights(net, net.params(), input.shape);
    const std::string conv_weight = graph.node(3).input(1);
    const auto all = initializers(graph);
    ASSERT_TRUE(all.count(conv_weight));
    const onnx::TensorProto& w = *all.at(conv_weight);
    EXPECT_EQ(std::vector<int64_t>(w.dims().begin(), w.dims().end()), (std::vector<int64_t>{4, 2, 3, 3}));
    std::vector<float> values(portable[0].weight.size());
    ASSERT_EQ(w.raw_data().size(), values.size() * sizeof(float));
    std::memcpy(values.data(), w.raw_data().data(), w.raw_data().size());
    EXPECT_EQ(values, portable[0].weight);
}

TEST(OnnxWriter, Int8GraphQuantisesEveryWeightedLayersInputAndWeights) {
    Network net = make_network();
    const ModelInput input{.shape = {6, 6, 2}, .image = true, .normalization = {}, .regression = {}};
    std::vector<ActivationRange> ranges(net.layers().size(), ActivationRange{.low = -1.0f, .high = 2.0f});
    const Int8Simulation int8 = simulate_int8(net, net.params(), ranges);
    const onnx::ModelProto model = parse(build_onnx(net, net.params(), input, &int8.inputs, {}));
    const onnx::GraphProto& graph = model.graph();
    EXPECT_EQ(graph.name(), "traindeck_int8");
    const auto all = initializers(graph);
    int weighted = 0;
    for (int i = 0; i < graph.node_size(); ++i) {
        const onnx::NodeProto& node = graph.node(i);
        if (node.op_type() != "Conv" && node.op_type() != "Gemm")
            continue;
        ++weighted;
        // Its data input comes through QuantizeLinear → DequantizeLinear (then a Flatten, for the first linear layer
        // after an image); its weight from an int8 DequantizeLinear.
        auto producer = [&](const std::string& output) -> const onnx::NodeProto* {
            for (const auto& other : graph.node())
                if (other.output(0) == output)
                    return &other;
            return nullptr;
        };
        const onnx::NodeProto* producer_of_x = producer(node.input(0));
        ASSERT_NE(producer_of_x, nullptr);
        if (producer_of_x->op_type() == "Flatten")
            producer_of_x = producer(producer_of_x->input(0));
        const onnx::NodeProto* producer_of_w = producer(node.input(1));
        ASSERT_NE(producer_of_x, nullptr);
        ASSERT_NE(producer_of_w, nullptr);
        ASSERT_EQ(producer_of_x->op_type(), "DequantizeLinear");
        const onnx::NodeProto* quantize = producer(producer_of_x->input(0));
        ASSERT_NE(quantize, nullptr);
        EXPECT_EQ(quantize->op_type(), "QuantizeLinear");
        EXPECT_EQ(producer_of_w->op_type(), "DequantizeLinear");
        const onnx::TensorProto& values = *all.at(producer_of_w->input(0));
        EXPECT_EQ(values.data_type(), onnx::TensorProto::INT8);
        const onnx::TensorProto& scales = *all.at(producer_of_w->input(1));
        EXPECT_EQ(scales.dims(0), values.dims(0)) << "one scale per output channel";
        const onnx::TensorProto& act_scale = *all.at(producer_of_x->input(1));
        float scale = 0;
        std::memcpy(&scale, act_scale.raw_data().data(), sizeof(float));
        EXPECT_FLOAT_EQ(scale, 3.0f / 255) << "the scale quantisation.h chose for the range [-1, 2]";
    }
    EXPECT_EQ(weighted, 3) << "conv, linear and the head";
}

TEST(OnnxWriter, ResidualBatchNormGraphAndAFlattenItCannotFollow) {
    auto built = Network::build({{.type = LayerType::conv2d, .out = 2, .kernel = 3, .padding = 1},
                                 {.type = LayerType::batchnorm},
                                 {.type = LayerType::add, .from = 0},
                                 {.type = LayerType::global_avgpool},
                                 {.type = LayerType::batchnorm}},
                                {6, 6, 2}, 3, 4);
    ASSERT_TRUE(built) << built.error();
    Rng init(5);
    built->initialize(init);
    const ModelInput input{.shape = {6, 6, 2}, .image = true, .normalization = {}, .regression = {}};
    const onnx::ModelProto model = parse(build_onnx(*built, built->params(), input, nullptr, {}));
    const onnx::GraphProto& graph = model.graph();
    const std::vector<std::string> expected = {
        "Mul", "Conv", "BatchNormalization", "Add", "GlobalAveragePool", "BatchNormalization", "Flatten", "Gemm"};
    EXPECT_EQ(op_types(graph), expected);
    // The add's second input is the tensor that entered layer 0: the scaled input.
    EXPECT_EQ(graph.node(3).input(1), graph.node(0).output(0));
    // Batchnorm's inputs: X, scale (γ), B (β), mean, variance; ours are 1, 0, 0, 1 after initialisation.
    const auto all = initializers(graph);
    const onnx::NodeProto& bn = graph.node(2);
    ASSERT_EQ(bn.input_size(), 5);
    const std::vector<float> want[] = {{1, 1}, {0, 0}, {0, 0}, {1, 1}};
    for (int k = 0; k < 4; ++k) {
        const onnx::TensorProto& t = *all.at(bn.input(k + 1));
        std::vector<float> values(2);
        ASSERT_EQ(t.raw_data().size(), sizeof(float) * 2);
        std::memcpy(values.data(), t.raw_data().data(), sizeof(float) * 2);
        EXPECT_EQ(values, want[k]) << bn.input(k + 1);
    }

    // A batchnorm on a flattened 6x6x2 image would see the graph's NCHW order, not ours: refused, naming it.
    auto flat = Network::build({{.type = LayerType::conv2d, .out = 2, .kernel = 3, .padding = 1},
                                {.type = LayerType::flatten},
                                {.type = LayerType::batchnorm}},
                               {6, 6, 2}, 3, 4);
    ASSERT_TRUE(flat) << flat.error();
    const auto refused = build_onnx(*flat, flat->params(), input, nullptr, {});
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().find("layers[2] (batchnorm) reads a flattened 6x6x2 image"), std::string::npos)
        << refused.error();
}
