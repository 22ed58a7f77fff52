#include "modelmeta.h"

#include "protowire.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <istream>

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

// The model card an export writes beside its files (model.json): the same provenance, as JSON.
bool parse_model_card(std::string_view bytes, ModelMetadata& metadata, std::string& error) {
    const nlohmann::json card = nlohmann::json::parse(bytes, nullptr, false);
    if (!card.is_object() || card.value("format", nlohmann::json()) != "traindeck-model-card") {
        error = "a JSON file that is not a TrainDeck model card (no \"format\": \"traindeck-model-card\")";
        return false;
    }
    metadata.format = "model-card";
    for (const char* key : {"checkpoint", "provenance", "classes", "input", "metrics"})
        if (const auto it = card.find(key); it != card.end())
            metadata.properties[std::string(key == std::string_view("checkpoint")   ? "traindeck_checkpoint"
                                            : key == std::string_view("provenance") ? "traindeck_provenance"
                                                                                    : key)] =
                it->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return true;
}

bool starts_as_json(std::string_view bytes) {
    const size_t first = bytes.find_first_not_of(" \t\r\n");
    return first != std::string_view::npos && bytes[first] == '{';
}

} // namespace

bool parse_model_metadata(std::string_view bytes, ModelMetadata& metadata, std::string& error) {
    metadata = {};
    if (bytes.size() >= 10 && bytes[8] == '{') // safetensors: a little-endian length, then a JSON header
        return parse_safetensors(bytes, metadata, error);
    if (starts_as_json(bytes))
        return parse_model_card(bytes, metadata, error);
    return parse_onnx(bytes, metadata, error);
}

namespace {

bool read_varint(std::istream& in, uint64_t& value, std::string* raw) {
    value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        const int byte = in.get();
        if (byte < 0)
            return false;
        if (raw)
            raw->push_back(static_cast<char>(byte));
        value |= static_cast<uint64_t>(byte & 0x7f) << shift;
        if (!(byte & 0x80))
            return true;
    }
    return false;
}

} // namespace

bool read_model_metadata(const std::string& path, ModelMetadata& metadata, std::string& error) {
    // Only what the metadata needs is read: a safetensors file's header, an ONNX model's top-level fields but its
    // graph (the weights, skipped with a seek), so a model of gigabytes costs a few kilobytes of memory.
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        error = path + ": cannot be read (" + std::strerror(errno) + ")";
        return false;
    }
    in.seekg(0, std::ios::end);
    const std::streamoff size = in.tellg();
    in.seekg(0);
    if (size < 0) {
        error = path + ": cannot be read (not a regular file?)";
        return false;
    }
    char head[9] = {};
    in.read(head, sizeof head);
    in.clear();
    in.seekg(0);
    std::string bytes;
    if (size >= 10 && head[8] == '{') {
        uint64_t length = 0;
        for (int i = 7; i >= 0; --i)
            length = (length << 8) | static_cast<unsigned char>(head[i]);
        bytes.resize(static_cast<size_t>(std::min<uint64_t>(length + 8, std::min<uint64_t>(size, (100u << 20) + 8))));
        in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        bytes.resize(static_cast<size_t>(in.gcount()));
        if (length + 8 > bytes.size())
            bytes.resize(8); // a lying length: let the parser say so
    } else if (starts_as_json(std::string_view(head, static_cast<size_t>(std::min<std::streamoff>(size, 9))))) {
        // A model card: small JSON, read whole (at most 1 MiB; a longer one is cut, and its parser says so).
        bytes.resize(static_cast<size_t>(std::min<std::streamoff>(size, 1 << 20)));
        in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        bytes.resize(static_cast<size_t>(in.gcount()));
    } else {
        // The top-level fields again, with the graph's bytes left out (an empty field 7 stands for it).
        for (;;) {
            std::string raw;
            uint64_t key = 0;
            if (!read_varint(in, key, &raw))
                break; // the end (or a cut file: the parser of what was read says so)
            const auto type = static_cast<WireType>(key & 7);
            uint64_t value = 0;
            if (type == WireType::varint) {
                if (!read_varint(in, value, &raw))
                    break;
                bytes += raw;
            } else if (type == WireType::bytes) {
                if (!read_varint(in, value, nullptr) || value > static_cast<uint64_t>(size)) {
                    error = path + ": not an ONNX model, or a damaged one (a field longer than the file)";
                    return false;
                }
                if ((key >> 3) == 7 || value > (64u << 20)) {
                    in.seekg(static_cast<std::streamoff>(value), std::ios::cur);
                    if (!in || in.tellg() > size) {
                        error = path + ": a damaged ONNX model (its graph runs past the end of the file)";
                        return false;
                    }
                    if ((key >> 3) == 7)
                        bytes += raw + std::string(1, '\0');
                    continue;
                }
                std::string field(static_cast<size_t>(value), '\0');
                in.read(field.data(), static_cast<std::streamsize>(value));
                if (static_cast<uint64_t>(in.gcount()) != value) {
                    error = path + ": a damaged ONNX model (cut in the middle of a field)";
                    return false;
                }
                bytes += raw;
                uint64_t left = value; // the length again, as a varint
                do {
                    const unsigned char byte = static_cast<unsigned char>(left & 0x7f);
                    left >>= 7;
                    bytes.push_back(static_cast<char>(left ? byte | 0x80 : byte));
                } while (left);
                bytes += field;
            } else if (type == WireType::fixed64 || type == WireType::fixed32) {
                const int width = type == WireType::fixed64 ? 8 : 4;
                std::string fixed(static_cast<size_t>(width), '\0');
                in.read(fixed.data(), width);
                if (in.gcount() != width)
                    break;
                bytes += raw + fixed;
            } else {
                error = path + ": not an ONNX model (an unknown protobuf wire type)";
                return false;
            }
        }
    }
    if (!parse_model_metadata(bytes, metadata, error)) {
        error = path + ": " + error;
        return false;
    }
    return true;
}

} // namespace traindeck::importers
