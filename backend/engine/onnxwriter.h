#pragma once
// Writes a built-in network as ONNX (opset 13) bytes: fp32, or int8 in QDQ form given each weighted layer's input
// quantisation (quantisation.h). Input "input" [N, C, H, W] (or [N, features]) of raw samples, the training
// normalisation inside the graph, output "logits" [N, classes] (a regression: "prediction" [N, 1]). The model passes
// onnx::checker or is an error.
#include "dataset.h"
#include "expected.h"
#include "network.h"
#include "quantisation.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace traindeck::engine {

// What the ONNX model takes: the sample shape, whether it is an image (NCHW input) and the normalisation the
// graph applies first (empty: none).
struct ModelInput {
    SampleShape shape;
    bool image = false;
    Normalization normalization;
    // A regression: the graph ends by turning the standardised output back (× scale + mean), and its output is
    // "prediction" [N, 1] in the target's units instead of "logits".
    std::optional<TargetScale> regression;
};

// quant: per layer (quantisation of each weighted layer's input), or nullptr for the fp32 model. metadata becomes
// the model's metadata_props (non-string values as their JSON text).
Expected<std::string> build_onnx(const Network& net, const std::vector<float>& params, const ModelInput& input,
                                 const std::vector<ActivationQuant>* quant, const nlohmann::json& metadata);

} // namespace traindeck::engine
