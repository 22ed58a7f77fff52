#pragma once
// What an exported model file says of itself: an ONNX model's metadata_props (and producer), a safetensors file's
// "__metadata__", a model card's checkpoint and provenance (as the same two properties). TrainDeck's exports
// (backend/engine/export.h) carry their run and checkpoint there (traindeck_provenance, traindeck_checkpoint), so
// "which data and code made this file?" is answered from the file itself. A pure reader of outside bytes: a damaged or
// foreign file is refused with what is wrong, never trusted.
#include <map>
#include <string>
#include <string_view>

namespace traindeck::importers {

struct ModelMetadata {
    std::string format;   // "onnx", "safetensors" or "model-card" (the JSON an export writes beside its files)
    std::string producer; // ONNX producer_name and version ("" for safetensors)
    std::map<std::string, std::string> properties;
};

// bytes: the whole file. False and error when they are neither format, or damaged.
bool parse_model_metadata(std::string_view bytes, ModelMetadata& metadata, std::string& error);
// The file at path (at most 4 GiB read).
bool read_model_metadata(const std::string& path, ModelMetadata& metadata, std::string& error);

} // namespace traindeck::importers
