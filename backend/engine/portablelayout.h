#pragma once
// Our layouts in PyTorch's and ONNX's, for the exporter's writers (onnxwriter.h, safetensors.h) and its test dumps:
// images NHWC → NCHW; conv weights [O, K, K, C] → [O, C, K, K]; a linear layer's columns, which follow our NHWC
// flatten order, reordered to NCHW flatten order when the layer's input was a multi-channel image. Pure functions,
// no copies of the network's arithmetic.
#include "network.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace traindeck::engine {

struct PortableWeights {
    std::vector<float> weight;
    std::vector<int64_t> dims; // conv [O, C, K, K]; linear [O, I]
};

// One weighted layer's weights w (in our layout); image is the last image shape before the layer (a linear layer
// after a flatten reads its columns in that image's order).
PortableWeights portable_weights(const Layer& layer, const float* w, SampleShape image);
// Every layer's, indexed like net.layers() (empty for layers without weights), from params in net's layout.
std::vector<PortableWeights> portable_weights(const Network& net, const std::vector<float>& params, SampleShape input);

// `samples` NHWC samples of h × w × c → NCHW, the layout of the ONNX model's input.
std::vector<float> to_nchw(const float* x, size_t samples, int h, int w, int c);

} // namespace traindeck::engine
