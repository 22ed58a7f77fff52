#pragma once
// The safetensors format (huggingface/safetensors) for the exporter: u64 little-endian header length, a JSON header
// {name: {"dtype", "shape", "data_offsets": [begin, end)}, "__metadata__": {string: string}} padded with spaces so
// the data starts 8-byte aligned, then the tensors' bytes back to back in header order. Pure: bytes in memory;
// export.cpp writes them atomically.
#include "network.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace traindeck::engine {

struct SafetensorsTensor {
    std::string name;
    std::vector<int64_t> shape;
    std::vector<float> values; // F32
};

// metadata values that are not strings are stored as their JSON text (the format allows strings only).
std::string safetensors_bytes(const std::vector<SafetensorsTensor>& tensors, const nlohmann::json& metadata);

// The network's fp32 weights and biases in PyTorch's layouts (portablelayout.h), named layers.<i>.weight/.bias.
std::string network_safetensors(const Network& net, const std::vector<float>& params, SampleShape input,
                                const nlohmann::json& metadata);

} // namespace traindeck::engine
