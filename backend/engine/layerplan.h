#pragma once
// The shapes a layer list gives an input, checked layer by layer: what Network::build allocates for, and what the
// New job dialog's model builder shows as you type, so that the two can never disagree. No buffers, no BLAS, no Qt:
// the console links it (with jobspec) without the engine.
#include "jobspec.h"

#include <cstddef>
#include <string>
#include <vector>

namespace traindeck::engine {

struct SampleShape {
    int height = 1, width = 1, channels = 1;
    size_t size() const { return static_cast<size_t>(height) * width * channels; }
    bool is_image() const { return height > 1 || width > 1; }
};

// "28x28x1", or "128 values" for a flat vector.
std::string describe_shape(SampleShape shape);

struct PlannedLayer {
    LayerSpec spec;
    SampleShape in, out;
    size_t parameters = 0; // trainable (batchnorm's running statistics are not counted, as PyTorch does not)
};

struct LayerPlan {
    // The specs' layers, then the implied classifier head (a linear layer with one logit per class) when the list
    // does not end in a linear layer. Layers after the first that does not fit have no shapes.
    std::vector<PlannedLayer> layers;
    bool implied_head = false;
    size_t parameters = 0;
    int error_layer = -1; // the layer that does not fit (an index into layers), or -1
    std::string error;    // "layers[3] (conv2d): kernel 5 does not fit its 2x2 input"
    bool ok() const { return error.empty(); }
};

LayerPlan plan_layers(const std::vector<LayerSpec>& specs, SampleShape input, int classes);

} // namespace traindeck::engine
