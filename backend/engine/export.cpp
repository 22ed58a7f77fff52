#include "export.h"

#include "atomicfile.h"

#include "checkpoint.h"
#include "layers.h"
#include "network.h"
#include "rng.h"
#include "trainer.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include <fcntl.h>
#include <unistd.h>

namespace traindeck::engine {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// uint8 activation quantisation, exactly as ONNX QuantizeLinear → DequantizeLinear computes it:
// q = saturate(round_half_even(x / scale) + zero_point), x' = (q - zero_point) × scale.
struct ActivationQuant {
    float scale = 1.0f;
    int zero_point = 0;
};

float fake_quantize(float x, const ActivationQuant& q) {
    const float level = std::clamp(std::nearbyint(x / q.scale) + static_cast<float>(q.zero_point), 0.0f, 255.0f);
    return (level - static_cast<float>(q.zero_point)) * q.scale;
}

ActivationQuant activation_quant(float low, float high) {
    low = std::min(low, 0.0f); // zero must be exact (padding, ReLU)
    high = std::max(high, 0.0f);
    ActivationQuant q;
    if (high - low <= std::numeric_limits<float>::min())
        return q;
    q.scale = (high - low) / 255.0f;
    q.zero_point = static_cast<int>(std::clamp(std::nearbyint(-low / q.scale), 0.0f, 255.0f));
    return q;
}

// int8 weights, symmetric per output channel: a weight tensor's rows (one per output) are contiguous in both our
// linear [O, I] and conv [O, K, K, C] layouts.
struct WeightQuant {
    std::vector<int8_t> values;
    std::vector<float> scales;
};

WeightQuant quantize_weights(const float* w, size_t count, int outputs) {
    WeightQuant q;
    const size_t row = count / outputs;
    q.values.resize(count);
    for (int o = 0; o < outputs; ++o) {
        float largest = 0.0f;
        for (size_t i = 0; i < row; ++i)
            largest = std::max(largest, std::fabs(w[o * row + i]));
        const float scale = largest > 0.0f ? largest / 127.0f : 1.0f;
        q.scales.push_back(scale);
        for (size_t i = 0; i < row; ++i)
            q.values[o * row + i] = static_cast<int8_t>(std::clamp(std::nearbyint(w[o * row + i] / scale), -127.0f, 127.0f));
    }
    return q;
}

bool has_weights(const Layer& layer) { return layer.spec.type == LayerType::linear || layer.spec.type == LayerType::conv2d; }

// Inference over a network's layers with our kernels, optionally observing (calibration) or fake-quantising
// (int8 simulation) the input of every convolution and linear layer.
class Inference {
public:
    Inference(const Network& net, int max_batch) : net_(net), max_batch_(max_batch) {
        size_t largest = 0, cols = 0;
        for (const Layer& layer : net.layers()) {
            largest = std::max({largest, layer.in.size(), layer.out.size()});
            if (layer.spec.type == LayerType::conv2d)
                cols = std::max(cols, static_cast<size_t>(layer.out.height) * layer.out.width * layer.spec.kernel *
                                          layer.spec.kernel * layer.in.channels);
        }
        a_.resize(largest * max_batch);
        b_.resize(largest * max_batch);
        cols_.resize(std::max<size_t>(1, cols * max_batch));
    }

    const float* run(const float* x, int batch, const std::vector<float>& params, const std::vector<ActivationQuant>* quant,
                     std::vector<std::pair<float, float>>* ranges) {
        const auto& layers = net_.layers();
        std::memcpy(a_.data(), x, sizeof(float) * layers.front().in.size() * batch);
        float* in = a_.data();
        float* out = b_.data();
        for (size_t i = 0; i < layers.size(); ++i) {
            const Layer& layer = layers[i];
            const LayerType type = layer.spec.type;
            const size_t in_count = layer.in.size() * batch;
            if (has_weights(layer)) {
                if (ranges) {
                    auto [low, high] = std::minmax_element(in, in + in_count);
                    (*ranges)[i].first = std::min((*ranges)[i].first, *low);
                    (*ranges)[i].second = std::max((*ranges)[i].second, *high);
                }
                if (quant)
                    for (size_t k = 0; k < in_count; ++k)
                        in[k] = fake_quantize(in[k], (*quant)[i]);
            }
            if (type == LayerType::flatten || type == LayerType::dropout)
                continue; // no-ops at inference (dropout is identity when not training)
            const float* p = params.data();
            if (type == LayerType::linear) {
                linear_forward(out, in, p + layer.weight, p + layer.bias, batch, static_cast<int>(layer.in.size()), layer.spec.out);
            } else if (type == LayerType::conv2d) {
                const Conv2dShape shape{.batch = batch, .in_h = layer.in.height, .in_w = layer.in.width,
                                        .in_c = layer.in.channels, .out_c = layer.spec.out, .kernel = layer.spec.kernel,
                                        .stride = layer.spec.stride, .pad = layer.spec.padding};
                conv2d_forward(out, cols_.data(), in, p + layer.weight, p + layer.bias, shape);
            } else if (type == LayerType::maxpool) {
                maxpool_forward(out, in, batch, layer.in.height, layer.in.width, layer.in.channels, layer.spec.size, layer.spec.stride);
            } else if (type == LayerType::relu) {
                relu_forward(out, in, in_count);
            } else if (type == LayerType::gelu) {
                gelu_forward(out, in, in_count);
            }
            std::swap(in, out);
        }
        return in;
    }

private:
    const Network& net_;
    int max_batch_;
    std::vector<float> a_, b_, cols_;
};

struct Scored {
    double accuracy = 0;
    std::vector<int32_t> predictions;
};

Scored score(Inference& inference, const Dataset& data, const std::vector<float>& params, int classes, int batch_size,
             const std::vector<ActivationQuant>* quant) {
    Scored result;
    const size_t features = data.features();
    long correct = 0;
    for (size_t start = 0; start < data.size(); start += batch_size) {
        const int batch = static_cast<int>(std::min<size_t>(batch_size, data.size() - start));
        const float* logits = inference.run(data.x.data() + start * features, batch, params, quant, nullptr);
        for (int b = 0; b < batch; ++b) {
            const float* row = logits + static_cast<size_t>(b) * classes;
            const int predicted = static_cast<int>(std::max_element(row, row + classes) - row);
            result.predictions.push_back(predicted);
            correct += predicted == data.y[start + b];
        }
    }
    result.accuracy = data.size() ? static_cast<double>(correct) / data.size() : 0.0;
    return result;
}

// Raw NHWC samples → NCHW, the layout of the ONNX input.
std::vector<float> to_nchw(const Dataset& data) {
    const int h = data.height, w = data.width, c = data.channels;
    std::vector<float> out(data.x.size());
    const size_t features = data.features();
    for (size_t n = 0; n < data.size(); ++n)
        for (int y = 0; y < h; ++y)
            for (int x = 0; x < w; ++x)
                for (int k = 0; k < c; ++k)
                    out[n * features + (static_cast<size_t>(k) * h + y) * w + x] = data.x[n * features + (static_cast<size_t>(y) * w + x) * c + k];
    return out;
}

bool write_atomically(const std::string& path, const std::string& bytes, std::string& error) {
    if (const int error_number = write_file_atomically(path, bytes); error_number != 0) {
        error = "cannot write " + path + " (" + std::strerror(error_number) + ")";
        return false;
    }
    return true;
}

template <typename T>
void dump(const std::string& path, const std::vector<T>& values) {
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(values.data()), sizeof(T) * values.size());
}

// --- ONNX --------------------------------------------------------------------------------------------------

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
        const std::string n = name(stem);
        tensor(n, dims, onnx::TensorProto::FLOAT, values.data(), values.size() * sizeof(float));
        return n;
    }
    std::string scalar(const std::string& stem, float value) { return floats(stem, {}, {value}); }

    onnx::NodeProto* node(const std::string& op, std::vector<std::string> inputs, const std::string& output) {
        onnx::NodeProto* n = graph_->add_node();
        n->set_op_type(op);
        n->set_name(name(op));
        for (const std::string& input : inputs)
            n->add_input(input);
        n->add_output(output);
        return n;
    }
    std::string apply(const std::string& op, std::vector<std::string> inputs, const std::string& stem) {
        const std::string out = name(stem);
        node(op, std::move(inputs), out);
        return out;
    }
    static void ints(onnx::NodeProto* n, const char* attr, std::vector<int64_t> values) {
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
        tensor(zeros, {static_cast<int64_t>(zero_values.size())}, onnx::TensorProto::INT8, zero_values.data(), zero_values.size());
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

// Our weights in PyTorch/ONNX layouts. Conv: [O, K, K, C] → [O, C, K, K]. Linear: columns follow our NHWC flatten
// order; when the layer's input was an image (flattened), reorder them to NCHW flatten order.
struct PortableWeights {
    std::vector<float> weight;
    std::vector<int64_t> dims;
};

PortableWeights portable_weights(const Layer& layer, const float* w, SampleShape image) {
    PortableWeights out;
    const int o = layer.spec.out;
    if (layer.spec.type == LayerType::conv2d) {
        const int k = layer.spec.kernel, c = layer.in.channels;
        out.dims = {o, c, k, k};
        out.weight.resize(static_cast<size_t>(o) * c * k * k);
        for (int oc = 0; oc < o; ++oc)
            for (int y = 0; y < k; ++y)
                for (int x = 0; x < k; ++x)
                    for (int ic = 0; ic < c; ++ic)
                        out.weight[((static_cast<size_t>(oc) * c + ic) * k + y) * k + x] = w[((static_cast<size_t>(oc) * k + y) * k + x) * c + ic];
        return out;
    }
    const size_t in = layer.in.size();
    out.dims = {o, static_cast<int64_t>(in)};
    out.weight.assign(w, w + static_cast<size_t>(o) * in);
    if (image.size() == in && image.channels > 1 && image.height * image.width > 1) {
        const int h = image.height, wd = image.width, c = image.channels;
        for (int oc = 0; oc < o; ++oc)
            for (int y = 0; y < h; ++y)
                for (int x = 0; x < wd; ++x)
                    for (int ic = 0; ic < c; ++ic)
                        out.weight[static_cast<size_t>(oc) * in + (static_cast<size_t>(ic) * h + y) * wd + x] =
                            w[static_cast<size_t>(oc) * in + (static_cast<size_t>(y) * wd + x) * c + ic];
    }
    return out;
}

struct ModelInput {
    SampleShape shape;
    bool image = false;
    Normalization normalization;
};

Expected<std::string> build_onnx(const Network& net, const std::vector<float>& params, const ModelInput& input,
                                 const std::vector<ActivationQuant>* quant, const json& metadata) {
    onnx::ModelProto model;
    model.set_ir_version(7);
    model.set_producer_name("TrainDeck");
    model.set_producer_version("0.1");
    model.set_doc_string("Exported by traindeck-train export; input: raw samples (pixels in [0,1]), NCHW; output: logits");
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
    if (!input.normalization.mean.empty()) {
        const int64_t groups = static_cast<int64_t>(input.normalization.mean.size());
        const std::vector<int64_t> dims = input.image ? std::vector<int64_t>{1, groups, 1, 1} : std::vector<int64_t>{1, groups};
        x = g.apply("Sub", {x, g.floats("mean", dims, input.normalization.mean)}, "centred");
        x = g.apply("Mul", {x, g.floats("inverse_std", dims, input.normalization.inverse_std)}, "normalized");
    }
    const auto& layers = net.layers();
    SampleShape image = s; // the last image shape, for the column order of a linear layer after it
    for (size_t i = 0; i < layers.size(); ++i) {
        const Layer& layer = layers[i];
        const LayerType type = layer.spec.type;
        if (has_weights(layer) && quant)
            x = g.quantize_activation(x, (*quant)[i]);
        if (type == LayerType::flatten || type == LayerType::dropout) {
            continue;
        } else if (type == LayerType::conv2d || type == LayerType::linear) {
            if (type == LayerType::linear && four_d) {
                onnx::NodeProto* flatten = g.node("Flatten", {x}, g.name("flat"));
                GraphBuilder::integer(flatten, "axis", 1);
                x = flatten->output(0);
                four_d = false;
            }
            const PortableWeights w = portable_weights(layer, params.data() + layer.weight, image);
            const std::string stem = "layers." + std::to_string(i) + ".weight";
            std::string weight;
            if (quant) {
                weight = g.quantized_weight(stem, w.dims, quantize_weights(w.weight.data(), w.weight.size(), layer.spec.out));
            } else {
                weight = g.name(stem);
                g.tensor(weight, w.dims, onnx::TensorProto::FLOAT, w.weight.data(), w.weight.size() * sizeof(float));
            }
            const std::vector<float> bias(params.begin() + layer.bias, params.begin() + layer.bias + layer.spec.out);
            const std::string b = g.floats("layers." + std::to_string(i) + ".bias", {layer.spec.out}, bias);
            onnx::NodeProto* n = g.node(type == LayerType::conv2d ? "Conv" : "Gemm", {x, weight, b}, g.name(to_string(type)));
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
        } else if (type == LayerType::relu) {
            x = g.apply("Relu", {x}, "relu");
        } else if (type == LayerType::gelu) {
            // The tanh form our kernel uses: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
            const std::string cube = g.apply("Mul", {g.apply("Mul", {x, x}, "sq"), x}, "cube");
            const std::string inner = g.apply("Add", {x, g.apply("Mul", {cube, g.scalar("c", 0.044715f)}, "t")}, "inner");
            const std::string t = g.apply("Tanh", {g.apply("Mul", {inner, g.scalar("s", 0.7978845608028654f)}, "u")}, "tanh");
            const std::string one_plus = g.apply("Add", {t, g.scalar("one", 1.0f)}, "onep");
            x = g.apply("Mul", {g.apply("Mul", {x, one_plus}, "xt"), g.scalar("half", 0.5f)}, "gelu");
        }
        if (layer.out.height > 1 || layer.out.width > 1)
            image = layer.out;
    }
    graph->mutable_node(graph->node_size() - 1)->set_output(0, "logits");
    set_shape(graph->add_output(), "logits", {net.classes()});
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

std::string safetensors(const Network& net, const std::vector<float>& params, SampleShape input_shape, const json& metadata) {
    json header = json::object();
    std::string data;
    SampleShape image = input_shape;
    for (const Layer& layer : net.layers()) {
        if (has_weights(layer)) {
            const size_t index = &layer - net.layers().data();
            const PortableWeights w = portable_weights(layer, params.data() + layer.weight, image);
            const std::string stem = "layers." + std::to_string(index);
            auto add = [&](const std::string& name, const std::vector<int64_t>& dims, const float* values, size_t count) {
                header[name] = {{"dtype", "F32"}, {"shape", dims}, {"data_offsets", {data.size(), data.size() + count * 4}}};
                data.append(reinterpret_cast<const char*>(values), count * 4);
            };
            add(stem + ".weight", w.dims, w.weight.data(), w.weight.size());
            add(stem + ".bias", {layer.spec.out}, params.data() + layer.bias, static_cast<size_t>(layer.spec.out));
        }
        if (layer.out.height > 1 || layer.out.width > 1)
            image = layer.out;
    }
    json meta = json::object();
    for (const auto& [key, value] : metadata.items())
        meta[key] = value.is_string() ? value.get<std::string>() : value.dump();
    header["__metadata__"] = meta;
    std::string text = header.dump();
    while ((text.size() + 8) % 8 != 0)
        text += ' ';
    std::string out(8, '\0');
    uint64_t length = text.size();
    std::memcpy(out.data(), &length, 8);
    return out + text + data;
}

} // namespace

json ExportReport::to_json() const {
    json files = json::array();
    for (const Artifact& a : artifacts)
        files.push_back({{"kind", a.kind}, {"path", a.path}, {"bytes", a.bytes}});
    return {{"artifacts", files},
            {"step", step},
            {"val_accuracy_fp32", val_accuracy_fp32},
            {"val_accuracy_int8", val_accuracy_int8},
            {"test_accuracy_fp32", test_accuracy_fp32},
            {"test_accuracy_int8", test_accuracy_int8},
            {"val_samples", val_samples},
            {"test_samples", test_samples},
            {"calibration_samples", calibration_samples},
            {"int8_agreement", int8_agreement},
            {"accuracy_warning", accuracy_warning},
            {"warning", warning}};
}

Expected<ExportReport> export_model(const json& spec_json, const std::string& checkpoint, const ExportOptions& options) {
    auto spec = parse_job_spec(spec_json);
    if (!spec)
        return Error{"spec: " + spec.error()};
    std::string checkpoint_path = checkpoint;
    Checkpoint saved;
    if (fs::is_directory(checkpoint)) {
        auto found = find_latest_checkpoint(checkpoint);
        if (!found)
            return Error{found.error()};
        if (found->path.empty())
            return Error{checkpoint + ": holds no checkpoint to export (the job has not written one yet)"};
        checkpoint_path = found->path;
        saved = std::move(found->checkpoint);
    } else {
        auto read = read_checkpoint(checkpoint);
        if (!read)
            return Error{read.error()};
        saved = std::move(*read);
    }
    if (saved.state.spec_hash != spec->hash)
        return Error{checkpoint_path + " was written by a run of a different spec; export with the job's own spec"};

    // Raw data (the ONNX model's input) and the normalised copies our inference and the trainer see.
    DataSpec raw_spec = spec->data;
    raw_spec.normalize = false;
    auto loaded = load_training_data(raw_spec, spec->seed);
    if (!loaded)
        return Error{loaded.error()};
    TrainingData& raw = *loaded;
    ModelInput input;
    input.shape = {raw.train.height, raw.train.width, raw.train.channels};
    input.image = raw.train.height > 1;
    TrainingData normalized = raw;
    if (spec->data.normalize) {
        input.normalization = fit_normalization(raw.train);
        apply_normalization(normalized.train, input.normalization);
        apply_normalization(normalized.val, input.normalization);
        apply_normalization(normalized.test, input.normalization);
    }
    const int batch = 256;
    auto built = Network::build(spec->layers, input.shape, raw.train.classes, batch);
    if (!built)
        return Error{"model: " + built.error()};
    Network& net = *built;
    if (saved.params.size() != net.params().size())
        return Error{checkpoint_path + " holds " + std::to_string(saved.params.size()) + " parameters; the spec's model has " +
                     std::to_string(net.params().size())};
    const std::vector<float>& params = saved.params;
    const int classes = net.classes();
    Inference inference(net, batch);

    ExportReport report;
    report.step = saved.state.step;
    report.val_samples = static_cast<long>(normalized.val.size());
    report.test_samples = static_cast<long>(normalized.test.size());
    const Scored val_fp32 = score(inference, normalized.val, params, classes, batch, nullptr);
    const Scored test_fp32 = score(inference, normalized.test, params, classes, batch, nullptr);
    report.val_accuracy_fp32 = val_fp32.accuracy;
    report.test_accuracy_fp32 = test_fp32.accuracy;

    // Calibration: activation ranges over the first samples of the training set.
    const auto& layers = net.layers();
    std::vector<std::pair<float, float>> ranges(layers.size(), {0.0f, 0.0f});
    const size_t calibration = std::min<size_t>(std::max(1, options.calibration_samples), normalized.train.size());
    for (size_t start = 0; start < calibration; start += batch) {
        const int n = static_cast<int>(std::min<size_t>(batch, calibration - start));
        inference.run(normalized.train.x.data() + start * normalized.train.features(), n, params, nullptr, &ranges);
    }
    report.calibration_samples = static_cast<long>(calibration);
    std::vector<ActivationQuant> quant(layers.size());
    std::vector<float> dequantized = params;
    for (size_t i = 0; i < layers.size(); ++i) {
        if (!has_weights(layers[i]))
            continue;
        quant[i] = activation_quant(ranges[i].first, ranges[i].second);
        const size_t count = static_cast<size_t>(layers[i].spec.out) * (layers[i].bias - layers[i].weight) / layers[i].spec.out;
        const WeightQuant wq = quantize_weights(params.data() + layers[i].weight, count, layers[i].spec.out);
        const size_t row = count / layers[i].spec.out;
        for (size_t k = 0; k < count; ++k)
            dequantized[layers[i].weight + k] = static_cast<float>(wq.values[k]) * wq.scales[k / row];
    }
    const Scored val_int8 = score(inference, normalized.val, dequantized, classes, batch, &quant);
    const Scored test_int8 = score(inference, normalized.test, dequantized, classes, batch, &quant);
    report.val_accuracy_int8 = val_int8.accuracy;
    report.test_accuracy_int8 = test_int8.accuracy;
    long agree = 0;
    for (size_t i = 0; i < test_int8.predictions.size(); ++i)
        agree += test_int8.predictions[i] == test_fp32.predictions[i];
    report.int8_agreement = test_int8.predictions.empty() ? 1.0 : static_cast<double>(agree) / test_int8.predictions.size();
    const double drop = report.val_accuracy_fp32 - report.val_accuracy_int8;
    if (options.int8 && drop > options.max_accuracy_drop) {
        report.accuracy_warning = true;
        char text[200];
        std::snprintf(text, sizeof(text), "int8 loses %.2f points of validation accuracy (%.2f %% → %.2f %%), more than the %.2f allowed",
                      100 * drop, 100 * report.val_accuracy_fp32, 100 * report.val_accuracy_int8, 100 * options.max_accuracy_drop);
        report.warning = text;
    }

    std::error_code ec;
    fs::create_directories(options.out_dir, ec);
    if (ec)
        return Error{"cannot create " + options.out_dir + ": " + ec.message()};
    json metadata = {{"traindeck_spec", spec_json.dump()},
                     {"traindeck_step", std::to_string(report.step)},
                     {"input_layout", input.image ? "NCHW, pixels in [0,1]" : "N x features"},
                     {"classes", std::to_string(classes)}};
    if (!raw.train.class_names.empty())
        metadata["class_names"] = json(raw.train.class_names).dump();
    std::string error;
    auto write = [&](const std::string& kind, const std::string& file, const std::string& bytes) {
        const std::string path = (fs::path(options.out_dir) / file).string();
        if (!write_atomically(path, bytes, error))
            return false;
        report.artifacts.push_back({kind, path, static_cast<int64_t>(bytes.size())});
        return true;
    };
    if (options.onnx) {
        auto bytes = build_onnx(net, params, input, nullptr, metadata);
        if (!bytes)
            return Error{bytes.error()};
        if (!write("onnx", options.name + ".onnx", *bytes))
            return Error{error};
    }
    if (options.int8) {
        json int8_metadata = metadata;
        int8_metadata["quantization"] = "QDQ: int8 weights per output channel (symmetric), uint8 activations per tensor, " +
                                        std::to_string(calibration) + " calibration samples";
        auto bytes = build_onnx(net, params, input, &quant, int8_metadata);
        if (!bytes)
            return Error{bytes.error()};
        if (!write("onnx-int8", options.name + ".int8.onnx", *bytes))
            return Error{error};
    }
    if (options.safetensors && !write("safetensors", options.name + ".safetensors", safetensors(net, params, input.shape, metadata)))
        return Error{error};

    if (!options.dump_dir.empty()) {
        fs::create_directories(options.dump_dir, ec);
        dump(options.dump_dir + "/test_inputs.f32", to_nchw(raw.test));
        dump(options.dump_dir + "/test_labels.i32", raw.test.y);
        dump(options.dump_dir + "/test_pred_fp32.i32", test_fp32.predictions);
        dump(options.dump_dir + "/test_pred_int8.i32", test_int8.predictions);
        dump(options.dump_dir + "/val_inputs.f32", to_nchw(raw.val));
        dump(options.dump_dir + "/val_labels.i32", raw.val.y);
    }
    return report;
}

} // namespace traindeck::engine
