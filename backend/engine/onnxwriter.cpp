// The exporter's ONNX writer: a built-in network as an ONNX model (opset 13) in bytes, fp32 or, given each weighted
// layer's input quantisation, int8 in QDQ form (QuantizeLinear → DequantizeLinear before every convolution and
// linear layer, int8 weights per output channel dequantised in the graph). The graph takes raw NCHW samples (images:
// pixel values 0–255, as a decoder hands them over) and applies the scaling to [0, 1] and the training normalisation
// itself, so a user's code needs no preprocessing knowledge. GraphBuilder names every node and initializer uniquely;
// the model passes onnx::checker before its bytes are returned. The arithmetic it encodes is the network's: layer for
// layer what network.cpp runs (dropout is the identity at inference; GELU is the tanh form of layers.cpp; batchnorm
// uses its running statistics; an add reads the tensor that entered the layer it names).
#include "onnxwriter.h"

#include "portablelayout.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

namespace traindeck::engine {
namespace {

class GraphBuilder {
public:
    explicit GraphBuilder(onnx::GraphProto* graph) : graph_(graph) {}

    std::string name(const std::string& stem) { return stem + "_" + std::to_string(counter_++); }

    void tensor(const std::string& name, const std::vector<int64_t>& dims, int type, const void* data, size_t bytes) {
        onnx::TensorProto* t = graph_->add_initializer();
        t->set_name(name);
        for (int64_t d : dims)
            t->add_dims(d);
        t->set_data_type(type);
        t->set_raw_data(std::string(static_cast<const char*>(data), bytes));
    }
    std::string floats(const std::string& stem, const std::vector<int64_t>& dims, const std::vector<float>& values) {
        std::string n = name(stem);
        tensor(n, dims, onnx::TensorProto::FLOAT, values.data(), values.size() * sizeof(float));
        return n;
    }
    std::string scalar(const std::string& stem, float value) { return floats(stem, {}, {value}); }

    onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& inputs, const std::string& output) {
        onnx::NodeProto* n = graph_->add_node();
        n->set_op_type(op);
        n->set_name(name(op));
        for (const std::string& input : inputs)
            n->add_input(input);
        n->add_output(output);
        return n;
    }
    std::string apply(const std::string& op, const std::vector<std::string>& inputs, const std::string& stem) {
        std::string out = name(stem);
        node(op, inputs, out);
        return out;
    }
    static void ints(onnx::NodeProto* n, const char* attr, const std::vector<int64_t>& values) {
        onnx::AttributeProto* a = n->add_attribute();
        a->set_name(attr);
        a->set_type(onnx::AttributeProto::INTS);
        for (int64_t v : values)
            a->add_ints(v);
    }
    static void integer(onnx::NodeProto* n, const char* attr, int64_t value) {
        onnx::AttributeProto* a = n->add_attribute();
        a->set_name(attr);
        a->set_type(onnx::AttributeProto::INT);
        a->set_i(value);
    }

    // x → QuantizeLinear → DequantizeLinear with one uint8 scale and zero point.
    std::string quantize_activation(const std::string& x, const ActivationQuant& q) {
        const std::string scale = scalar("act_scale", q.scale);
        const std::string zero = name("act_zero");
        const uint8_t z = static_cast<uint8_t>(q.zero_point);
        tensor(zero, {}, onnx::TensorProto::UINT8, &z, 1);
        const std::string quantized = apply("QuantizeLinear", {x, scale, zero}, "q");
        return apply("DequantizeLinear", {quantized, scale, zero}, "dq");
    }

    // An int8 weight with per-output-channel scales, dequantized in the graph.
    std::string quantized_weight(const std::string& stem, const std::vector<int64_t>& dims, const WeightQuant& q) {
        const std::string values = name(stem + "_int8");
        tensor(values, dims, onnx::TensorProto::INT8, q.values.data(), q.values.size());
        const std::string scales = floats(stem + "_scale", {static_cast<int64_t>(q.scales.size())}, q.scales);
        const std::string zeros = name(stem + "_zero");
        const std::vector<int8_t> zero_values(q.scales.size(), 0);
        tensor(zeros, {static_cast<int64_t>(zero_values.size())}, onnx::TensorProto::INT8, zero_values.data(),
               zero_values.size());
        onnx::NodeProto* n = node("DequantizeLinear", {values, scales, zeros}, name(stem));
        integer(n, "axis", 0);
        return n->output(0);
    }

private:
    onnx::GraphProto* graph_;
    int counter_ = 0;
};

void set_shape(onnx::ValueInfoProto* info, const std::string& name, const std::vector<int64_t>& dims) {
    info->set_name(name);
    auto* tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(onnx::TensorProto::FLOAT);
    auto* shape = tensor->mutable_shape();
    shape->add_dim()->set_dim_param("batch");
    for (int64_t d : dims)
        shape->add_dim()->set_dim_value(d);
}

} // namespace

Expected<std::string> build_onnx(const Network& net, const std::vector<float>& params, const ModelInput& input,
                                 const std::vector<ActivationQuant>* quant, const nlohmann::json& metadata) {
    onnx::ModelProto model;
    model.set_ir_version(7);
    model.set_producer_name("TrainDeck");
    model.set_producer_version("0.1");
    model.set_doc_string(
        "Exported by traindeck-train export; input: raw samples (images: NCHW pixels 0-255); output: logits");
    onnx::OperatorSetIdProto* opset = model.add_opset_import();
    opset->set_domain("");
    opset->set_version(13);
    for (const auto& [key, value] : metadata.items()) {
        onnx::StringStringEntryProto* entry = model.add_metadata_props();
        entry->set_key(key);
        entry->set_value(value.is_string() ? value.get<std::string>() : value.dump());
    }
    onnx::GraphProto* graph = model.mutable_graph();
    graph->set_name(quant ? "traindeck_int8" : "traindeck");
    GraphBuilder g(graph);
    const SampleShape& s = input.shape;
    std::string x = "input";
    if (input.image)
        set_shape(graph->add_input(), x, {s.channels, s.height, s.width});
    else
        set_shape(graph->add_input(), x, {static_cast<int64_t>(s.size())});
    bool four_d = input.image;
    if (input.image) // byte · (1/255), the readers' own float arithmetic: bit for bit what the trainer saw
        x = g.apply("Mul", {x, g.scalar("byte_scale", 1.0f / 255.0f)}, "scaled");
    if (!input.normalization.mean.empty()) {
        const int64_t groups = static_cast<int64_t>(input.normalization.mean.size());
        const std::vector<int64_t> dims =
            input.image ? std::vector<int64_t>{1, groups, 1, 1} : std::vector<int64_t>{1, groups};
        x = g.apply("Sub", {x, g.floats("mean", dims, input.normalization.mean)}, "centred");
        x = g.apply("Mul", {x, g.floats("inverse_std", dims, input.normalization.inverse_std)}, "normalized");
    }
    const auto& layers = net.layers();
    const std::vector<PortableWeights> portable = portable_weights(net, params, s);
    // The tensor that entered each layer, and whether it is NCHW (else N x features): an add reads an earlier one.
    std::vector<std::string> entered(layers.size());
    std::vector<bool> entered_four_d(layers.size());
    // Our flatten is deferred to the first linear layer (whose columns portable_weights puts in NCHW order), so after
    // it the graph's tensor is still NCHW over several positions: a per-feature layer there (batchnorm, an add) would
    // see another order than the trainer did. Those lists are refused, naming the layer.
    std::vector<bool> entered_spread(layers.size()); // NCHW with more than one position, where ours is flat
    SampleShape graph_image = s;                     // the NCHW tensor's shape while four_d
    auto spread = [&](const Layer& layer) {
        return four_d && !layer.in.is_image() && graph_image.height * graph_image.width > 1;
    };
    auto refuse = [&](size_t index, const Layer& layer) {
        return Error{"layers[" + std::to_string(index) + "] (" + to_string(layer.spec.type) + ") reads a flattened " +
                     describe_shape(graph_image) +
                     " image before any linear layer; ONNX export takes a linear layer (or global_avgpool instead of "
                     "flatten) before it"};
    };
    auto flatten = [&](const std::string& tensor) {
        onnx::NodeProto* node = g.node("Flatten", {tensor}, g.name("flat"));
        GraphBuilder::integer(node, "axis", 1);
        return node->output(0);
    };
    auto per_channel = [&](size_t index, size_t offset, const char* kind) { // batchnorm's [C] tensors
        const int channels = layers[index].in.channels;
        const std::vector<float> values(params.begin() + static_cast<long>(offset),
                                        params.begin() + static_cast<long>(offset) + channels);
        return g.floats("layers." + std::to_string(index) + "." + kind, {channels}, values);
    };
    for (size_t i = 0; i < layers.size(); ++i) {
        const Layer& layer = layers[i];
        const LayerType type = layer.spec.type;
        entered[i] = x;
        entered_four_d[i] = four_d;
        entered_spread[i] = spread(layer);
        if ((type == LayerType::batchnorm && entered_spread[i]) ||
            (type == LayerType::add && (entered_spread[i] || entered_spread[layer.spec.from])))
            return refuse(i, layer);
        if (four_d && (layer.out.is_image() || type == LayerType::global_avgpool)) // [N, C, 1, 1] after the pool
            graph_image = layer.out;
        if (layer.has_weights() && quant)
            x = g.quantize_activation(x, (*quant)[i]);
        if (type == LayerType::flatten || type == LayerType::dropout) {
            continue;
        } else if (type == LayerType::conv2d || type == LayerType::linear) {
            if (type == LayerType::linear && four_d) {
                x = flatten(x);
                four_d = false;
            }
            const PortableWeights& w = portable[i];
            const std::string stem = "layers." + std::to_string(i) + ".weight";
            std::string weight;
            if (quant) {
                weight = g.quantized_weight(stem, w.dims,
                                            quantize_weights(w.weight.data(), w.weight.size(), layer.spec.out));
            } else {
                weight = g.name(stem);
                g.tensor(weight, w.dims, onnx::TensorProto::FLOAT, w.weight.data(), w.weight.size() * sizeof(float));
            }
            const std::vector<float> bias(params.begin() + layer.bias, params.begin() + layer.bias + layer.spec.out);
            const std::string b = g.floats("layers." + std::to_string(i) + ".bias", {layer.spec.out}, bias);
            onnx::NodeProto* n =
                g.node(type == LayerType::conv2d ? "Conv" : "Gemm", {x, weight, b}, g.name(to_string(type)));
            if (type == LayerType::conv2d) {
                GraphBuilder::ints(n, "kernel_shape", {layer.spec.kernel, layer.spec.kernel});
                GraphBuilder::ints(n, "strides", {layer.spec.stride, layer.spec.stride});
                const int p = layer.spec.padding;
                GraphBuilder::ints(n, "pads", {p, p, p, p});
            } else {
                GraphBuilder::integer(n, "transB", 1);
            }
            x = n->output(0);
        } else if (type == LayerType::maxpool) {
            onnx::NodeProto* n = g.node("MaxPool", {x}, g.name("pool"));
            GraphBuilder::ints(n, "kernel_shape", {layer.spec.size, layer.spec.size});
            GraphBuilder::ints(n, "strides", {layer.spec.stride, layer.spec.stride});
            x = n->output(0);
        } else if (type == LayerType::avgpool) {
            onnx::NodeProto* n = g.node("AveragePool", {x}, g.name("avgpool"));
            GraphBuilder::ints(n, "kernel_shape", {layer.spec.size, layer.spec.size});
            GraphBuilder::ints(n, "strides", {layer.spec.stride, layer.spec.stride});
            x = n->output(0);
        } else if (type == LayerType::global_avgpool) {
            x = g.apply("GlobalAveragePool", {x}, "gap");
        } else if (type == LayerType::batchnorm) {
            const size_t c = layer.in.channels;
            onnx::NodeProto* n = g.node("BatchNormalization",
                                        {x, per_channel(i, layer.weight, "weight"), per_channel(i, layer.bias, "bias"),
                                         per_channel(i, layer.running, "running_mean"),
                                         per_channel(i, layer.running + c, "running_var")},
                                        g.name("bn"));
            onnx::AttributeProto* eps = n->add_attribute();
            eps->set_name("epsilon");
            eps->set_type(onnx::AttributeProto::FLOAT);
            eps->set_f(layer.spec.eps);
            x = n->output(0);
        } else if (type == LayerType::add) {
            // The same shape on both sides (Network::build checks it); only the layouts may differ, when a linear
            // layer between flattened an NCHW tensor of 1x1 positions.
            std::string other = entered[layer.spec.from];
            if (entered_four_d[layer.spec.from] && !four_d)
                other = flatten(other);
            else if (!entered_four_d[layer.spec.from] && four_d) {
                x = flatten(x);
                four_d = false;
            }
            x = g.apply("Add", {x, other}, "residual");
        } else if (type == LayerType::relu) {
            x = g.apply("Relu", {x}, "relu");
        } else if (type == LayerType::gelu) {
            // The tanh form our kernel uses: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
            const std::string cube = g.apply("Mul", {g.apply("Mul", {x, x}, "sq"), x}, "cube");
            const std::string inner =
                g.apply("Add", {x, g.apply("Mul", {cube, g.scalar("c", 0.044715f)}, "t")}, "inner");
            const std::string t =
                g.apply("Tanh", {g.apply("Mul", {inner, g.scalar("s", 0.7978845608028654f)}, "u")}, "tanh");
            const std::string one_plus = g.apply("Add", {t, g.scalar("one", 1.0f)}, "onep");
            x = g.apply("Mul", {g.apply("Mul", {x, one_plus}, "xt"), g.scalar("half", 0.5f)}, "gelu");
        }
    }
    std::string output = "logits";
    if (input.regression) {
        x = g.apply("Mul", {x, g.scalar("target_scale", input.regression->scale)}, "unscaled");
        g.apply("Add", {x, g.scalar("target_mean", input.regression->mean)}, "prediction");
        output = "prediction";
    }
    graph->mutable_node(graph->node_size() - 1)->set_output(0, output);
    set_shape(graph->add_output(), output, {net.classes()});
    try {
        onnx::checker::check_model(model);
    } catch (const std::exception& e) {
        return Error{std::string("the exported ONNX graph does not pass onnx::checker: ") + e.what()};
    }
    std::string bytes;
    if (!model.SerializeToString(&bytes))
        return Error{"cannot serialise the ONNX model (larger than 2 GB?)"};
    return bytes;
}

} // namespace traindeck::engine
