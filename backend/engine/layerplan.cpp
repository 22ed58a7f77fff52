// plan_layers (layerplan.h): each layer's output shape from its input, and the reason when it cannot have one.
#include "layerplan.h"

namespace traindeck::engine {

std::string describe_shape(SampleShape shape) {
    if (!shape.is_image())
        return std::to_string(shape.channels) + " values";
    return std::to_string(shape.height) + "x" + std::to_string(shape.width) + "x" + std::to_string(shape.channels);
}

namespace {

std::string flat_size(SampleShape shape) { return std::to_string(shape.height) + "x" + std::to_string(shape.width); }

} // namespace

LayerPlan plan_layers(const std::vector<LayerSpec>& specs, SampleShape input, int classes) {
    LayerPlan plan;
    std::vector<LayerSpec> all = specs;
    if (all.empty() || all.back().type != LayerType::linear) {
        all.push_back({.type = LayerType::linear, .out = classes});
        plan.implied_head = true;
    }
    SampleShape shape = input;
    for (size_t i = 0; i < all.size(); ++i) {
        PlannedLayer layer{.spec = all[i], .in = shape, .out = shape};
        const LayerSpec& s = layer.spec;
        auto fail = [&](const std::string& why) {
            plan.layers.push_back(layer);
            plan.error_layer = static_cast<int>(i);
            plan.error = "layers[" + std::to_string(i) + "] (";
            plan.error.append(to_string(s.type)).append("): ").append(why);
            for (size_t rest = i + 1; rest < all.size(); ++rest) {
                PlannedLayer unplanned;
                unplanned.spec = all[rest];
                plan.layers.push_back(unplanned);
            }
            return plan;
        };
        if (s.type == LayerType::linear) {
            if (s.out <= 0)
                return fail("\"out\" must be a positive number of features");
            layer.out = {1, 1, s.out};
            layer.parameters = shape.size() * s.out + s.out;
        } else if (s.type == LayerType::conv2d) {
            if (!shape.is_image())
                return fail("convolution needs image input, but its input is a flat vector of " +
                            std::to_string(shape.size()) + " (put conv2d layers before flatten/linear)");
            if (s.out <= 0 || s.kernel <= 0 || s.stride <= 0 || s.padding < 0)
                return fail("\"out\", \"kernel\" and \"stride\" must be positive and \"padding\" not negative");
            const int out_h = (shape.height + 2 * s.padding - s.kernel) / s.stride + 1;
            const int out_w = (shape.width + 2 * s.padding - s.kernel) / s.stride + 1;
            if (shape.height + 2 * s.padding < s.kernel || shape.width + 2 * s.padding < s.kernel || out_h <= 0 ||
                out_w <= 0)
                return fail("kernel " + std::to_string(s.kernel) + " does not fit its " + flat_size(shape) + " input");
            layer.out = {out_h, out_w, s.out};
            layer.parameters = static_cast<size_t>(s.out) * s.kernel * s.kernel * shape.channels + s.out;
        } else if (s.type == LayerType::maxpool || s.type == LayerType::avgpool) {
            if (s.size <= 0 || s.stride <= 0)
                return fail("\"size\" and \"stride\" must be positive");
            if (shape.height < s.size || shape.width < s.size)
                return fail("window " + std::to_string(s.size) + " is larger than its " + flat_size(shape) + " input");
            layer.out = {(shape.height - s.size) / s.stride + 1, (shape.width - s.size) / s.stride + 1, shape.channels};
        } else if (s.type == LayerType::global_avgpool) {
            if (!shape.is_image())
                return fail("global average pooling needs image input, but its input is a flat vector of " +
                            std::to_string(shape.size()) + " (put it before flatten/linear)");
            layer.out = {1, 1, shape.channels};
        } else if (s.type == LayerType::batchnorm) {
            layer.parameters = 2 * static_cast<size_t>(shape.channels); // γ and β
        } else if (s.type == LayerType::add) {
            if (s.from < 0 || static_cast<size_t>(s.from) >= i)
                return fail("\"from\" must name an earlier layer (0 to " + std::to_string(static_cast<long>(i) - 1) +
                            "), not " + std::to_string(s.from));
            const SampleShape other = plan.layers[s.from].in;
            if (other.height != shape.height || other.width != shape.width || other.channels != shape.channels)
                return fail("adds layers[" + std::to_string(s.from) + "]'s input, " + describe_shape(other) +
                            ", to its own input, " + describe_shape(shape) +
                            "; both must have the same shape (the layers between change it)");
        } else if (s.type == LayerType::flatten) {
            layer.out = {1, 1, static_cast<int>(shape.size())};
        }
        shape = layer.out;
        plan.parameters += layer.parameters;
        plan.layers.push_back(layer);
    }
    if (plan.layers.back().out.size() != static_cast<size_t>(classes)) {
        plan.error_layer = static_cast<int>(plan.layers.size()) - 1;
        plan.error = "the last layer emits " + std::to_string(plan.layers.back().out.size()) + " values but " +
                     (classes == 1 ? std::string("a regression has one output (or the data one class)")
                                   : "the data has " + std::to_string(classes) + " classes");
    }
    return plan;
}

} // namespace traindeck::engine
