#include "modelmeta.h"

#include "protowire.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace traindeck::importers {

namespace {

bool parse_safetensors(std::string_view bytes, ModelMetadata& metadata, std::string& error) {
    uint64_t length = 0;
    for (int i = 7; i >= 0; --i)
        length = (length << 8) | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
    if (length > bytes.size() - 8 || length > (100u << 20)) {
        error =
            "not a safetensors file: its header length (" + std::to_string(length) + " bytes) is past the file's end";
        return false;
    }
    const nlohmann::json header = nlohmann::json::parse(bytes.substr(8, length), nullptr, false);
    if (!header.is_object()) {
        error = "not a safetensors file: its header is not a JSON object";
        return false;
    }
    metadata.format = "safetensors";
    if (const auto found = header.find("__metadata__"); found != header.end()) {
        if (!found->is_object()) {
            error = "a safetensors file whose __metadata__ is not an object";
            return false;
        }
        for (const auto& [key, value] : found->items())
            if (value.is_string())
                metadata.properties[key] = value.get<std::string>();
    }
    return true;
}

bool parse_onnx(std::string_view bytes, ModelMetadata& metadata, std::string& error) {
    ProtoReader model(bytes);
    ProtoField field;
    bool graph = false;
    std::string producer, version;
    while (model.next(field)) {
        if (field.number == 7 && field.type == WireType::bytes) {
            graph = true;
        } else if (field.number == 2 && field.type == WireType::bytes) {
            producer = std::string(field.bytes);
        } else if (field.number == 3 && field.type == WireType::bytes) {
            version = std::string(field.bytes);
        } else if (field.number == 14 && field.type == WireType::bytes) { // StringStringEntryProto {1 key, 2 value}
            ProtoReader entry(field.bytes);
            ProtoField part;
            std::string key, value;
            while (entry.next(part))
                if (part.type == WireType::bytes && part.number == 1)
                    key = std::string(part.bytes);
                else if (part.type == WireType::bytes && part.number == 2)
                    value = std::string(part.bytes);
            if (!entry.ok()) {
                error = "a damaged ONNX model: a metadata entry is cut or malformed";
                return false;
            }
            metadata.properties[key] = value;
        }
    }
    if (!model.ok()) {
        error = "not an ONNX model, or a damaged one: malformed protobuf at byte " + std::to_string(model.position());
        return false;
    }
    if (!graph) {
        error = "not an ONNX model: it has no graph";
        return false;
    }
    metadata.format = "onnx";
    metadata.producer = version.empty() ? producer : producer + " " + version;
    return true;
}

} // namespace

bool parse_model_metadata(std::string_view bytes, ModelMetadata& metadata, std::string& error) {
    metadata = {};
    if (bytes.size() >= 10 && bytes[8] == '{') // safetensors: a little-endian length, then a JSON header
        return parse_safetensors(bytes, metadata, error);
    return parse_onnx(bytes, metadata, error);
}

bool read_model_metadata(const std::string& path, ModelMetadata& metadata, std::string& error) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) {
        error = path + ": cannot be read (" + std::strerror(errno) + ")";
        return false;
    }
    const std::streamoff size = in.tellg();
    if (size > (std::streamoff(4) << 30)) {
        error = path + ": larger than 4 GiB, not read";
        return false;
    }
    std::string bytes(static_cast<size_t>(size), '\0');
    in.seekg(0);
    in.read(bytes.data(), size);
    if (in.gcount() != size) {
        error = path + ": could not be read whole";
        return false;
    }
    if (!parse_model_metadata(bytes, metadata, error)) {
        error = path + ": " + error;
        return false;
    }
    return true;
}

} // namespace traindeck::importers
