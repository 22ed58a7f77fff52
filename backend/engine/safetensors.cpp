// safetensors.h's writer. The header keeps the tensors in the order given (nlohmann's json object sorts keys, which
// the format allows: readers go by data_offsets).
#include "safetensors.h"

#include "portablelayout.h"

#include <cstring>

namespace traindeck::engine {

using nlohmann::json;

std::string safetensors_bytes(const std::vector<SafetensorsTensor>& tensors, const json& metadata) {
    json header = json::object();
    std::string data;
    for (const SafetensorsTensor& t : tensors) {
        const size_t bytes = t.values.size() * sizeof(float);
        header[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {data.size(), data.size() + bytes}}};
        data.append(reinterpret_cast<const char*>(t.values.data()), bytes);
    }
    json meta = json::object();
    for (const auto& [key, value] : metadata.items())
        meta[key] = value.is_string() ? value.get<std::string>() : value.dump();
    header["__metadata__"] = meta;
    std::string text = header.dump();
    while ((text.size() + 8) % 8 != 0)
        text += ' ';
    std::string out(8, '\0');
    const uint64_t length = text.size();
    std::memcpy(out.data(), &length, 8);
    return out + text + data;
}

std::string network_safetensors(const Network& net, const std::vector<float>& params, SampleShape input,
                                const json& metadata) {
    const std::vector<PortableWeights> portable = portable_weights(net, params, input);
    std::vector<SafetensorsTensor> tensors;
    for (size_t i = 0; i < net.layers().size(); ++i) {
        const Layer& layer = net.layers()[i];
        const std::string stem = "layers." + std::to_string(i);
        if (layer.spec.type == LayerType::batchnorm) { // PyTorch's BatchNorm names
            const long c = layer.in.channels;
            auto channels = [&](size_t offset) {
                return std::vector<float>(params.begin() + static_cast<long>(offset),
                                          params.begin() + static_cast<long>(offset) + c);
            };
            tensors.push_back({stem + ".weight", {c}, channels(layer.weight)});
            tensors.push_back({stem + ".bias", {c}, channels(layer.bias)});
            tensors.push_back({stem + ".running_mean", {c}, channels(layer.running)});
            tensors.push_back({stem + ".running_var", {c}, channels(layer.running + c)});
            continue;
        }
        if (!layer.has_weights())
            continue;
        tensors.push_back({stem + ".weight", portable[i].dims, portable[i].weight});
        tensors.push_back({stem + ".bias",
                           {layer.spec.out},
                           std::vector<float>(params.begin() + static_cast<long>(layer.bias),
                                              params.begin() + static_cast<long>(layer.bias) + layer.spec.out)});
    }
    return safetensors_bytes(tensors, metadata);
}

} // namespace traindeck::engine
