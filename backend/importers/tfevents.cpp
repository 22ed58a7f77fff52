#include "tfevents.h"

#include "atomicfile.h"
#include "clock.h"
#include "crc32c.h"
#include "protowire.h"
#include "sourcefile.h"
#include "tfrecord.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>

#include <unistd.h>

// The message fields read here, by number (tensorboard/compat/proto/{event,summary,histogram,tensor,tensor_shape,
// types}.proto, tensorboard/plugins/hparams/{plugin_data,api}.proto, google/protobuf/struct.proto):
//   Event            1 wall_time (double) · 2 step (int64) · 3 file_version (string) · 4 graph_def · 5 summary ·
//                    6 log_message · 7 session_log · 8 tagged_run_metadata · 9 meta_graph_def · 10 source_metadata
//   SourceMetadata   1 writer (string)
//   Summary          1 value (repeated Summary.Value)
//   Summary.Value    1 tag · 2 simple_value (float) · 3 obsolete_old_style_histogram · 4 image · 5 histo · 6 audio ·
//                    7 node_name · 8 tensor · 9 metadata
//   Summary.Image    1 height · 2 width · 3 colorspace · 4 encoded_image_string
//   SummaryMetadata  1 plugin_data {1 plugin_name · 2 content (bytes)} · 2 display_name · 3 summary_description ·
//                    4 data_class
//   HistogramProto   1 min · 2 max · 3 num · 4 sum · 5 sum_squares (doubles) · 6 bucket_limit · 7 bucket (packed
//   doubles) TensorProto      1 dtype · 2 tensor_shape {2 dim {1 size}} · 4 tensor_content · 5 float_val · 6 double_val
//   ·
//                    7 int_val · 8 string_val · 10 int64_val · 11 bool_val · 13 half_val
//   DataType         1 DT_FLOAT · 2 DT_DOUBLE · 3 DT_INT32 · 4 DT_UINT8 · 5 DT_INT16 · 6 DT_INT8 · 7 DT_STRING ·
//                    9 DT_INT64 · 10 DT_BOOL · 14 DT_BFLOAT16 · 19 DT_HALF
//   HParamsPluginData 1 version · 2 experiment · 3 session_start_info · 4 session_end_info
//   SessionStartInfo 1 hparams (map<string, Value>: entry 1 key, 2 value) · 2 model_uri · 4 group_name ·
//                    5 start_time_secs
//   SessionEndInfo   1 status (0 unknown, 1 success, 2 failure, 3 running) · 2 end_time_secs
//   google.protobuf.Value 1 null_value · 2 number_value · 3 string_value · 4 bool_value · 5 struct_value
//                    {1 fields: map<string, Value>} · 6 list_value {1 values}

namespace traindeck::importers {

using nlohmann::json;

namespace {

enum DataType {
    kFloat = 1,
    kDouble = 2,
    kInt32 = 3,
    kUInt8 = 4,
    kInt16 = 5,
    kInt8 = 6,
    kString = 7,
    kInt64 = 9,
    kBool = 10,
    kBFloat16 = 14,
    kHalf = 19
};

float half_to_float(uint16_t h) {
    const uint32_t sign = (h >> 15) & 1, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
    float magnitude = 0;
    if (exponent == 0)
        magnitude = std::ldexp(static_cast<float>(mantissa), -24); // subnormal
    else if (exponent == 31)
        magnitude = mantissa ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
    else
        magnitude = std::ldexp(static_cast<float>(mantissa | 0x400), static_cast<int>(exponent) - 25);
    return sign ? -magnitude : magnitude;
}

float bfloat16_to_float(uint16_t b) {
    const uint32_t bits = static_cast<uint32_t>(b) << 16;
    float f = 0;
    std::memcpy(&f, &bits, 4);
    return f;
}

struct Tensor {
    int64_t dtype = 0;
    std::vector<int64_t> shape;
    std::vector<double> numbers;
    std::vector<std::string_view> strings;

    // Elements the shape says (1 for a scalar); -1 when a dimension is unknown or the product is absurd.
    int64_t elements() const {
        int64_t n = 1;
        for (const int64_t d : shape) {
            if (d < 0 || (d > 0 && n > (int64_t(1) << 40) / d))
                return -1;
            n *= d;
        }
        return n;
    }
};

// tensor_content is the raw little-endian array of dtype.
bool decode_content(std::string_view content, int64_t dtype, std::vector<double>& out) {
    auto each = [&](size_t width, auto&& convert) {
        if (content.size() % width != 0)
            return false;
        for (size_t i = 0; i < content.size(); i += width)
            out.push_back(convert(content.data() + i));
        return true;
    };
    auto as = [](auto sample) {
        return [](const char* p) {
            decltype(sample) v{};
            std::memcpy(&v, p, sizeof v);
            return static_cast<double>(v);
        };
    };
    switch (dtype) {
    case kFloat:
        return each(4, as(float{}));
    case kDouble:
        return each(8, as(double{}));
    case kInt32:
        return each(4, as(int32_t{}));
    case kInt64:
        return each(8, as(int64_t{}));
    case kInt16:
        return each(2, as(int16_t{}));
    case kInt8:
        return each(1, as(int8_t{}));
    case kUInt8:
    case kBool:
        return each(1, as(uint8_t{}));
    case kHalf:
        return each(2, [](const char* p) {
            uint16_t h = 0;
            std::memcpy(&h, p, 2);
            return static_cast<double>(half_to_float(h));
        });
    case kBFloat16:
        return each(2, [](const char* p) {
            uint16_t b = 0;
            std::memcpy(&b, p, 2);
            return static_cast<double>(bfloat16_to_float(b));
        });
    default:
        return true; // other types (complex, variant, resource) are not numbers we keep
    }
}

bool parse_tensor(std::string_view bytes, Tensor& tensor, std::string& why) {
    ProtoReader reader(bytes);
    ProtoField f;
    std::string_view content;
    bool ok = true;
    while (ok && reader.next(f)) {
        switch (f.number) {
        case 1:
            tensor.dtype = f.as_int64();
            break;
        case 2: {
            if (f.type != WireType::bytes)
                return why = "TensorProto.tensor_shape is not a message", false;
            ProtoReader shape(f.bytes);
            ProtoField dim;
            while (shape.next(dim)) {
                if (dim.number != 2 || dim.type != WireType::bytes)
                    continue;
                ProtoReader fields(dim.bytes);
                ProtoField size;
                int64_t value = -1;
                while (fields.next(size))
                    if (size.number == 1 && size.type == WireType::varint)
                        value = size.as_int64();
                if (!fields.ok())
                    return why = "a tensor dimension is malformed", false;
                tensor.shape.push_back(value);
            }
            if (!shape.ok())
                return why = "TensorProto.tensor_shape is malformed", false;
            break;
        }
        case 4:
            content = f.bytes;
            break;
        case 5:
            ok = for_each_packed_fixed32(f, [&](float v) { tensor.numbers.push_back(v); });
            break;
        case 6:
            ok = for_each_packed_fixed64(f, [&](double v) { tensor.numbers.push_back(v); });
            break;
        case 7:
            ok = for_each_packed_varint(f, [&](uint64_t v) {
                tensor.numbers.push_back(static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(v))));
            });
            break;
        case 8:
            if (f.type != WireType::bytes)
                return why = "TensorProto.string_val is not bytes", false;
            tensor.strings.push_back(f.bytes);
            break;
        case 10:
            ok = for_each_packed_varint(
                f, [&](uint64_t v) { tensor.numbers.push_back(static_cast<double>(static_cast<int64_t>(v))); });
            break;
        case 11:
            ok = for_each_packed_varint(f, [&](uint64_t v) { tensor.numbers.push_back(v != 0 ? 1.0 : 0.0); });
            break;
        case 13:
            ok = for_each_packed_varint(f, [&](uint64_t v) {
                const auto bits = static_cast<uint16_t>(v);
                tensor.numbers.push_back(tensor.dtype == kBFloat16 ? bfloat16_to_float(bits) : half_to_float(bits));
            });
            break;
        default:
            break;
        }
    }
    if (!ok)
        return why = "a repeated value of a TensorProto is malformed", false;
    if (!reader.ok())
        return why = "TensorProto is malformed at byte " + std::to_string(reader.position()), false;
    if (!content.empty() && tensor.numbers.empty() && tensor.dtype != kString &&
        !decode_content(content, tensor.dtype, tensor.numbers))
        return why = "tensor_content is not a whole number of values of its dtype", false;
    return true;
}

// google.protobuf.Value as JSON; depth bounds the nesting a hostile file could use to exhaust the stack.
bool parse_value(std::string_view bytes, json& out, int depth, std::string& why) {
    if (depth > 32)
        return why = "an hparams value nests deeper than 32 levels", false;
    out = nullptr;
    ProtoReader reader(bytes);
    ProtoField f;
    while (reader.next(f)) {
        switch (f.number) {
        case 1:
            out = nullptr;
            break;
        case 2:
            if (f.type != WireType::fixed64)
                return why = "Value.number_value is not a double", false;
            out = f.as_double();
            break;
        case 3:
            out = std::string(f.bytes);
            break;
        case 4:
            out = f.as_bool();
            break;
        case 5: {
            out = json::object();
            ProtoReader fields(f.bytes);
            ProtoField entry;
            while (fields.next(entry)) {
                if (entry.number != 1 || entry.type != WireType::bytes)
                    continue;
                ProtoReader kv(entry.bytes);
                ProtoField part;
                std::string key;
                json value;
                while (kv.next(part)) {
                    if (part.number == 1)
                        key = std::string(part.bytes);
                    else if (part.number == 2 && !parse_value(part.bytes, value, depth + 1, why))
                        return false;
                }
                if (!kv.ok())
                    return why = "an hparams struct entry is malformed", false;
                out[key] = std::move(value);
            }
            if (!fields.ok())
                return why = "an hparams struct is malformed", false;
            break;
        }
        case 6: {
            out = json::array();
            ProtoReader values(f.bytes);
            ProtoField item;
            while (values.next(item)) {
                if (item.number != 1)
                    continue;
                json value;
                if (!parse_value(item.bytes, value, depth + 1, why))
                    return false;
                out.push_back(std::move(value));
            }
            if (!values.ok())
                return why = "an hparams list is malformed", false;
            break;
        }
        default:
            break;
        }
    }
    if (!reader.ok())
        return why = "an hparams value is malformed", false;
    return true;
}

// What one Summary.Value turned out to be, decoded whole before anything is added to the run.
struct DecodedValue {
    enum class Kind { none, scalar, histogram, images, hparams_start, hparams_end, other } kind = Kind::none;
    std::string_view tag, plugin;
    double scalar = 0;
    HistogramPoint histogram;
    std::vector<ImagePoint> images;
    std::vector<std::string_view> image_bytes; // each image's encoded bytes, inside the record
    json config;
    int64_t end_status = 0;
    double started = 0, finished = 0;
    std::string other; // what other_records counts
};

// A repeated double, packed (appended whole: a histogram's buckets are most of a logdir's bytes) or not.
bool append_doubles(const ProtoField& field, std::vector<double>& out) {
    if (field.type == WireType::fixed64) {
        out.push_back(field.as_double());
        return true;
    }
    if (field.type != WireType::bytes || field.bytes.size() % 8 != 0)
        return false;
    if (field.bytes.empty())
        return true; // an empty packed list (memcpy of nothing from a null pointer is undefined)
    const size_t at = out.size();
    out.resize(at + field.bytes.size() / 8);
    std::memcpy(out.data() + at, field.bytes.data(), field.bytes.size()); // little-endian, as on the wire
    return true;
}

bool parse_histogram(std::string_view bytes, HistogramPoint& h, std::string& why) {
    ProtoReader reader(bytes);
    ProtoField f;
    bool ok = true;
    while (ok && reader.next(f)) {
        if (f.number >= 1 && f.number <= 5 && f.type != WireType::fixed64)
            return why = "a HistogramProto statistic is not a double", false;
        switch (f.number) {
        case 1:
            h.min = f.as_double();
            break;
        case 2:
            h.max = f.as_double();
            break;
        case 3:
            h.num = f.as_double();
            break;
        case 4:
            h.sum = f.as_double();
            break;
        case 5:
            h.sum_squares = f.as_double();
            break;
        case 6:
            ok = append_doubles(f, h.bucket_limit);
            break;
        case 7:
            ok = append_doubles(f, h.bucket_count);
            break;
        default:
            break;
        }
    }
    if (!ok || !reader.ok())
        return why = "a HistogramProto is malformed", false;
    if (h.bucket_limit.size() != h.bucket_count.size())
        return why = "a histogram has " + std::to_string(h.bucket_limit.size()) + " bucket limits but " +
                     std::to_string(h.bucket_count.size()) + " counts",
               false;
    return true;
}

bool parse_hparams(std::string_view content, DecodedValue& out, std::string& why) {
    ProtoReader reader(content);
    ProtoField f;
    out.kind = DecodedValue::Kind::other;
    out.other = "plugin:hparams";
    while (reader.next(f)) {
        if (f.number == 3 && f.type == WireType::bytes) {
            out.kind = DecodedValue::Kind::hparams_start;
            out.config = json::object();
            ProtoReader start(f.bytes);
            ProtoField s;
            while (start.next(s)) {
                if (s.number == 1 && s.type == WireType::bytes) {
                    ProtoReader kv(s.bytes);
                    ProtoField part;
                    std::string key;
                    json value;
                    while (kv.next(part)) {
                        if (part.number == 1)
                            key = std::string(part.bytes);
                        else if (part.number == 2 && !parse_value(part.bytes, value, 0, why))
                            return false;
                    }
                    if (!kv.ok())
                        return why = "an hparams entry is malformed", false;
                    out.config[key] = std::move(value);
                } else if (s.number == 5 && s.type == WireType::fixed64) {
                    out.started = s.as_double();
                }
            }
            if (!start.ok())
                return why = "hparams session_start_info is malformed", false;
        } else if (f.number == 4 && f.type == WireType::bytes) {
            out.kind = DecodedValue::Kind::hparams_end;
            ProtoReader end(f.bytes);
            ProtoField e;
            while (end.next(e)) {
                if (e.number == 1 && e.type == WireType::varint)
                    out.end_status = e.as_int64();
                else if (e.number == 2 && e.type == WireType::fixed64)
                    out.finished = e.as_double();
            }
            if (!end.ok())
                return why = "hparams session_end_info is malformed", false;
        } else if (f.number == 2) {
            out.other = "plugin:hparams/experiment";
        }
    }
    if (!reader.ok())
        return why = "hparams plugin data is malformed", false;
    return true;
}

// A Summary.Value field of TrainDeck's own: the exact double of a value its exporter wrote as simple_value, a float
// (TensorBoard's scalars are floats: its data server reads no DT_DOUBLE tensor). Readers that do not know the field
// skip it, as protobuf's rules have them do; far from Summary.Value's own numbers (1-9).
constexpr uint32_t kExactValueField = 7747;

bool decode_value(std::string_view bytes, const TagPlugins& plugins, DecodedValue& out, std::string& why) {
    ProtoReader reader(bytes);
    ProtoField f;
    bool has_simple = false, has_exact = false;
    std::string_view histo, image, tensor, metadata_content;
    bool has_histo = false, has_image = false, has_tensor = false, has_metadata = false, has_other = false;
    while (reader.next(f)) {
        switch (f.number) {
        case 1:
            out.tag = f.bytes;
            break;
        case 2:
            if (f.type != WireType::fixed32)
                return why = "simple_value is not a float", false;
            has_simple = true;
            if (!has_exact)
                out.scalar = f.as_float();
            break;
        case kExactValueField: // TrainDeck's exporter: the value simple_value holds as a float, exactly
            if (f.type == WireType::fixed64) {
                has_exact = true;
                out.scalar = f.as_double();
            }
            break;
        case 3:
        case 6:
            has_other = true;
            out.other = f.number == 3 ? "old_style_histogram" : "audio";
            break;
        case 4:
            has_image = true;
            image = f.bytes;
            break;
        case 5:
            has_histo = true;
            histo = f.bytes;
            break;
        case 8:
            has_tensor = true;
            tensor = f.bytes;
            break;
        case 9: {
            if (f.type != WireType::bytes)
                return why = "Summary.Value.metadata is not a message", false;
            has_metadata = true;
            ProtoReader meta(f.bytes);
            ProtoField m;
            while (meta.next(m)) {
                if (m.number != 1 || m.type != WireType::bytes)
                    continue;
                ProtoReader plugin(m.bytes);
                ProtoField p;
                while (plugin.next(p)) {
                    if (p.number == 1)
                        out.plugin = p.bytes;
                    else if (p.number == 2)
                        metadata_content = p.bytes;
                }
                if (!plugin.ok())
                    return why = "SummaryMetadata.plugin_data is malformed", false;
            }
            if (!meta.ok())
                return why = "SummaryMetadata is malformed", false;
            break;
        }
        default:
            break;
        }
    }
    if (!reader.ok())
        return why = "a Summary.Value is malformed at byte " + std::to_string(reader.position()), false;
    if (!has_metadata || out.plugin.empty()) {
        if (const auto it = plugins.find(out.tag); it != plugins.end())
            out.plugin = it->second;
    }
    using Kind = DecodedValue::Kind;
    if (out.plugin == "hparams") {
        // The data is the metadata's content; the value itself is a placeholder tensor.
        if (has_metadata && !metadata_content.empty())
            return parse_hparams(metadata_content, out, why);
        out.kind = Kind::other;
        out.other = "plugin:hparams";
        return true;
    }
    if (has_simple) {
        out.kind = Kind::scalar;
        return true;
    }
    if (has_histo) {
        out.kind = Kind::histogram;
        return parse_histogram(histo, out.histogram, why);
    }
    if (has_image) {
        ProtoReader img(image);
        ProtoField g;
        ImagePoint point;
        std::string_view encoded;
        while (img.next(g)) {
            if (g.number == 1)
                point.height = g.as_int64();
            else if (g.number == 2)
                point.width = g.as_int64();
            else if (g.number == 4) {
                point.encoded_bytes = g.bytes.size();
                encoded = g.bytes;
            }
        }
        if (!img.ok())
            return why = "Summary.Image is malformed", false;
        out.kind = Kind::images;
        out.images.push_back(point);
        out.image_bytes.push_back(encoded);
        return true;
    }
    if (has_tensor) {
        Tensor t;
        if (!parse_tensor(tensor, t, why))
            return false;
        if (out.plugin == "histograms") {
            // TF2 histograms: a [k, 3] tensor of (left edge, right edge, count) rows.
            if (t.numbers.size() % 3 != 0)
                return why = "a histograms-plugin tensor is not rows of three numbers", false;
            HistogramPoint& h = out.histogram;
            for (size_t i = 0; i < t.numbers.size(); i += 3) {
                h.bucket_limit.push_back(t.numbers[i + 1]);
                h.bucket_count.push_back(t.numbers[i + 2]);
                h.num += t.numbers[i + 2];
            }
            if (!t.numbers.empty()) {
                h.min = t.numbers.front();
                h.max = t.numbers[t.numbers.size() - 2];
            }
            out.kind = Kind::histogram;
            return true;
        }
        if (out.plugin == "images") {
            // TF2 images: a string tensor of width, height, then one encoded image each.
            if (t.strings.size() < 2)
                return why = "an images-plugin tensor has no width and height", false;
            auto number = [](std::string_view s) {
                int64_t v = 0;
                for (const char c : s.substr(0, 12))
                    v = c >= '0' && c <= '9' ? v * 10 + (c - '0') : v;
                return v;
            };
            for (size_t i = 2; i < t.strings.size(); ++i) {
                ImagePoint point;
                point.width = number(t.strings[0]);
                point.height = number(t.strings[1]);
                point.encoded_bytes = t.strings[i].size();
                point.item = static_cast<int>(i - 2);
                out.images.push_back(point);
                out.image_bytes.push_back(t.strings[i]);
            }
            out.kind = Kind::images;
            return true;
        }
        if ((out.plugin.empty() || out.plugin == "scalars") && t.dtype != kString && t.numbers.size() == 1 &&
            t.elements() == 1) {
            out.kind = Kind::scalar;
            out.scalar = t.numbers.front();
            return true;
        }
        if (out.plugin == "scalars")
            return why = "a scalars-plugin tensor holds " + std::to_string(t.numbers.size()) + " values, not one",
                   false;
        out.kind = Kind::other;
        out.other = out.plugin.empty() ? std::string("tensor") : "plugin:" + std::string(out.plugin);
        return true;
    }
    out.kind = Kind::other;
    if (!has_other)
        out.other = out.plugin.empty() ? std::string("empty_value") : "plugin:" + std::string(out.plugin);
    return true;
}

} // namespace

bool is_event_file_name(std::string_view file_name) { return file_name.find("tfevents") != std::string_view::npos; }

namespace {

// Keeps a scalar decoded by a fast path (decode_simple_scalar's or decode_plain_scalar's). False for the hparams
// plugin's placeholder (the general path counts it).
bool keep_scalar(ImportedRun& run, const TagPlugins& plugins, double wall_time, int64_t step, std::string_view tag,
                 double scalar) {
    if (!plugins.empty())
        if (const auto it = plugins.find(tag); it != plugins.end() && it->second == "hparams")
            return false;
    ++run.records;
    if (wall_time > 0 && std::isfinite(wall_time)) {
        run.started = run.started == 0 ? wall_time : std::min(run.started, wall_time);
        run.finished = std::max(run.finished, wall_time);
    }
    auto it = run.scalars.find(tag);
    if (it == run.scalars.end())
        it = run.scalars.emplace(std::string(tag), std::vector<ScalarPoint>()).first;
    it->second.push_back({step, scalar, wall_time});
    return true;
}

} // namespace

// That event in the bytes every protobuf writer gives it (fields in number order, lengths under 128 bytes):
//   09 <wall_time: 8 bytes> [10 <step: varint of up to 9 bytes; the field is left out when 0>]
//   2a <summary length> 0a <value length> 0a <tag length> <tag> 15 <simple_value: 4 bytes>
//   [99 e4 03 <the exact value: 8 bytes>: field 7747, as our exporter writes a value a float does not hold]
// matched byte by byte, each length against the next and the last against the record's end. False for any other
// bytes (a negative step, a long tag, another field, another order): decode_simple_scalar's field loops take them.
// The loops were half the reading of a logdir of scalars.
bool decode_plain_scalar(std::string_view record, ImportedRun& run, const TagPlugins& plugins) {
    const auto* p = reinterpret_cast<const unsigned char*>(record.data());
    const auto* const end = p + record.size();
    if (end - p < 9 || p[0] != 0x09)
        return false;
    double wall_time = 0;
    std::memcpy(&wall_time, p + 1, 8);
    p += 9;
    uint64_t step = 0;
    if (p != end && *p == 0x10) {
        ++p;
        for (int shift = 0;; shift += 7) {
            if (p == end || shift == 63)
                return false;
            const unsigned byte = *p++;
            step |= static_cast<uint64_t>(byte & 0x7fu) << shift;
            if (!(byte & 0x80u))
                break;
        }
    }
    if (end - p < 6 || p[0] != 0x2a || p[2] != 0x0a || p[4] != 0x0a)
        return false;
    const size_t summary = p[1], value = p[3], tag = p[5];
    const bool exact = value == tag + 18; // 7 bytes of simple_value and tag's key, 11 of the exact value
    if (summary != value + 2 || (value != tag + 7 && !exact) || summary >= 128 ||
        static_cast<size_t>(end - p) != summary + 2)
        return false;
    const unsigned char* simple = p + 6 + tag;
    if (simple[0] != 0x15)
        return false;
    float scalar = 0;
    std::memcpy(&scalar, simple + 1, 4);
    double kept = scalar;
    static_assert(kExactValueField == 7747); // its key, (7747 << 3) | fixed64, is the varint 99 e4 03
    if (exact) {
        if (simple[5] != 0x99 || simple[6] != 0xe4 || simple[7] != 0x03)
            return false;
        std::memcpy(&kept, simple + 8, 8);
    }
    return keep_scalar(run, plugins, wall_time, static_cast<int64_t>(step),
                       std::string_view(reinterpret_cast<const char*>(p + 6), tag), kept);
}

namespace {

// The event most of a logdir is: Event{wall_time, step, summary{value{tag, simple_value}}}, as every writer writes a
// scalar. Decoded here, straight into the run, without the general path's list of decoded values (a third of the
// reading's time went to that bookkeeping). False, with nothing kept, for anything else: the general path takes it.
bool decode_simple_scalar(std::string_view record, ImportedRun& run, const TagPlugins& plugins) {
    if (decode_plain_scalar(record, run, plugins))
        return true;
    ProtoReader event(record);
    ProtoField f;
    double wall_time = 0;
    int64_t step = 0;
    std::string_view summary;
    bool has_summary = false;
    while (event.next(f)) {
        if (f.number == 1 && f.type == WireType::fixed64)
            wall_time = f.as_double();
        else if (f.number == 2 && f.type == WireType::varint)
            step = f.as_int64();
        else if (f.number == 5 && f.type == WireType::bytes && !has_summary) {
            summary = f.bytes;
            has_summary = true;
        } else
            return false;
    }
    if (!event.ok() || !has_summary)
        return false;
    ProtoReader list(summary);
    std::string_view value;
    if (!list.next(f) || f.number != 1 || f.type != WireType::bytes)
        return false;
    value = f.bytes;
    if (list.next(f) || !list.ok())
        return false; // more than one value
    ProtoReader fields(value);
    std::string_view tag;
    float scalar = 0;
    bool has_tag = false, has_simple = false;
    while (fields.next(f)) {
        if (f.number == 1 && f.type == WireType::bytes && !has_tag) {
            tag = f.bytes;
            has_tag = true;
        } else if (f.number == 2 && f.type == WireType::fixed32 && !has_simple) {
            scalar = f.as_float();
            has_simple = true;
        } else
            return false;
    }
    if (!fields.ok() || !has_simple)
        return false;
    return keep_scalar(run, plugins, wall_time, step, tag, scalar);
}

} // namespace

bool decode_event(std::string_view record, ImportedRun& run, TagPlugins& plugins, std::string& why,
                  uint64_t record_offset, size_t file_index) {
    if (decode_simple_scalar(record, run, plugins))
        return true;
    ProtoReader reader(record);
    ProtoField f;
    double wall_time = 0;
    int64_t step = 0;
    std::string_view summary, writer;
    bool has_summary = false, has_writer = false;
    const char* what = nullptr;
    while (reader.next(f)) {
        switch (f.number) {
        case 1:
            if (f.type != WireType::fixed64)
                return why = "Event.wall_time is not a double", false;
            wall_time = f.as_double();
            break;
        case 2:
            if (f.type != WireType::varint)
                return why = "Event.step is not a varint", false;
            step = f.as_int64();
            break;
        case 3:
            what = "file_version";
            break;
        case 4:
            what = "graph_def";
            break;
        case 5:
            if (f.type != WireType::bytes)
                return why = "Event.summary is not a message", false;
            has_summary = true;
            summary = f.bytes;
            break;
        case 6:
            what = "log_message";
            break;
        case 7:
            what = "session_log";
            break;
        case 8:
            what = "tagged_run_metadata";
            break;
        case 9:
            what = "meta_graph_def";
            break;
        case 10: {
            ProtoReader source(f.bytes);
            ProtoField s;
            while (source.next(s))
                if (s.number == 1 && s.type == WireType::bytes) {
                    writer = s.bytes;
                    has_writer = true;
                }
            if (!source.ok())
                return why = "Event.source_metadata is malformed", false;
            break;
        }
        default:
            break;
        }
    }
    if (!reader.ok())
        return why = "not an Event message (malformed at byte " + std::to_string(reader.position()) + ")", false;

    // Reused across events (most carry one value): no allocation per event for the list of its values.
    thread_local std::vector<DecodedValue> values;
    values.clear();
    if (has_summary) {
        ProtoReader list(summary);
        ProtoField v;
        while (list.next(v)) {
            if (v.number != 1)
                continue;
            if (v.type != WireType::bytes)
                return why = "Summary.value is not a message", false;
            if (!decode_value(v.bytes, plugins, values.emplace_back(), why))
                return false;
        }
        if (!list.ok())
            return why = "the Summary is malformed at byte " + std::to_string(list.position()), false;
    }

    // The whole event decoded: now it goes into the run.
    ++run.records;
    if (has_writer && run.tool.empty())
        run.tool = std::string(writer);
    if (what)
        ++run.other_records[what];
    if (wall_time > 0 && std::isfinite(wall_time)) {
        run.started = run.started == 0 ? wall_time : std::min(run.started, wall_time);
        run.finished = std::max(run.finished, wall_time);
    }
    using Kind = DecodedValue::Kind;
    for (DecodedValue& value : values) {
        if (!value.plugin.empty())
            plugins.try_emplace(std::string(value.tag), std::string(value.plugin));
        switch (value.kind) {
        case Kind::scalar: {
            // Most events carry one tag, and most tags repeat: find() before building a key string.
            auto it = run.scalars.find(value.tag);
            if (it == run.scalars.end())
                it = run.scalars.emplace(std::string(value.tag), std::vector<ScalarPoint>()).first;
            it->second.push_back({step, value.scalar, wall_time});
            break;
        }
        case Kind::histogram:
            value.histogram.step = step;
            value.histogram.wall_time = wall_time;
            run.histograms[std::string(value.tag)].push_back(std::move(value.histogram));
            break;
        case Kind::images: {
            auto& list = run.images[std::string(value.tag)];
            for (ImagePoint& image : value.images) {
                image.step = step;
                image.wall_time = wall_time;
                image.file = file_index;
                image.record_offset = record_offset;
                list.push_back(image);
            }
            break;
        }
        case Kind::hparams_start:
            run.config.update(value.config);
            ++run.other_records["plugin:hparams/session_start_info"];
            break;
        case Kind::hparams_end:
            run.state = value.end_status == 1   ? "succeeded"
                        : value.end_status == 2 ? "failed"
                        : value.end_status == 3 ? "running"
                                                : run.state;
            if (value.end_status >= 1 && value.end_status <= 3)
                run.state_reason = "hparams session_end_info status " + std::to_string(value.end_status);
            if (value.finished > 0)
                run.finished = std::max(run.finished, value.finished);
            ++run.other_records["plugin:hparams/session_end_info"];
            break;
        case Kind::other:
            ++run.other_records[value.other];
            break;
        case Kind::none:
            break;
        }
    }
    return true;
}

ImportedRun read_event_files(const std::string& folder, const std::vector<std::string>& files) {
    SourceBuffer buffer;
    return read_event_files(folder, files, buffer);
}

namespace {

// The records of one file's bytes, which start at `base` in it, decoded into run; a record that is no Event is
// damage, and so is the framing's (scan_tfrecords).
TfRecordScan read_records(std::string_view bytes, const std::string& file, uint64_t base, size_t file_index,
                          ImportedRun& run, TagPlugins& plugins) {
    std::string why;
    return scan_tfrecords(
        bytes, file,
        [&](uint64_t offset, std::string_view data) {
            if (!decode_event(data, run, plugins, why, offset, file_index))
                run.damage.push_back({file, offset, "a record that is not an Event was skipped: " + why});
        },
        run.damage, base);
}

bool same_file(const SourceFileStat& a, const SourceFileStat& b) { return a.device == b.device && a.inode == b.inode; }

// Which of the tail's files changed since it was left, or nullopt when the run cannot be read on from the tail.
std::optional<std::vector<bool>> changed_files(const TensorBoardRunFiles& listed, const EventFilesTail& tail) {
    if (!tail.started || listed.files.size() < tail.files.size())
        return std::nullopt;
    std::vector<bool> changed(tail.files.size());
    for (size_t i = 0; i < tail.files.size(); ++i) {
        const EventFilesTail::File& file = tail.files[i];
        SourceFileStat now;
        if (listed.files[i] != file.path || !file.readable || !stat_source_file(file.path, now) ||
            !same_file(now, file.seen) || now.size < file.read_to)
            return std::nullopt;
        changed[i] = now.size != file.seen.size || now.mtime_ns != file.seen.mtime_ns;
        if (changed[i] && i + 1 < tail.files.size())
            return std::nullopt; // its new points come before the later files' in a whole read
    }
    return changed;
}

} // namespace

ImportedRun read_event_files(const std::string& folder, const std::vector<std::string>& files, SourceBuffer& buffer) {
    ImportedRun run;
    run.format = "tensorboard";
    run.source = folder;
    run.name = std::filesystem::path(folder).filename().string();
    TagPlugins plugins;
    for (const std::string& file : files) {
        run.files.push_back(file);
        auto bytes = buffer.read(file);
        if (!bytes) {
            run.damage.push_back({file, 0, bytes.error()});
            continue;
        }
        read_records(*bytes, file, 0, run.files.size() - 1, run, plugins);
    }
    return run;
}

std::optional<ImportedRun> read_event_files_on(const TensorBoardRunFiles& listed, EventFilesTail& tail,
                                               SourceBuffer& buffer, uint64_t* bytes_read) {
    std::optional<std::vector<bool>> changed = changed_files(listed, tail);
    if (changed && listed.files.size() == tail.files.size() &&
        std::none_of(changed->begin(), changed->end(), [](bool c) { return c; }))
        return std::nullopt; // as the last read left them
    if (!changed) {
        tail = EventFilesTail{};
        changed.emplace();
    }
    if (!tail.started) {
        tail.started = true;
        tail.run.format = "tensorboard";
        tail.run.source = listed.folder;
        tail.run.name = listed.name;
    }
    bool again = false; // a file changed between the look and the read: the run is read whole
    for (size_t i = 0; i < listed.files.size() && !again; ++i) {
        const bool known = i < tail.files.size();
        if (known && !(*changed)[i])
            continue;
        if (!known) {
            EventFilesTail::File added;
            added.path = listed.files[i];
            tail.files.push_back(std::move(added));
            tail.run.files.push_back(listed.files[i]);
        }
        EventFilesTail::File& file = tail.files[i];
        // From the last whole record's CRC on: those 4 bytes must still be there, or the file was rewritten.
        const uint64_t from = file.last_footer.empty() ? file.read_to : file.read_to - 4;
        SourceFileStat seen;
        auto bytes = buffer.read_from(file.path, from, seen);
        if (!bytes) {
            if (known) {
                again = true;
                break;
            }
            file.readable = false;
            tail.run.damage.push_back({file.path, 0, bytes.error()});
            continue;
        }
        if (bytes_read)
            *bytes_read += bytes->size();
        std::string_view data = *bytes;
        if (known && (!same_file(seen, file.seen) || data.substr(0, from < file.read_to ? 4 : 0) != file.last_footer)) {
            again = true;
            break;
        }
        data.remove_prefix(static_cast<size_t>(file.read_to - from));
        // What was said of the file from read_to on is said again by this read, or is gone (a record now whole).
        std::erase_if(tail.run.damage,
                      [&](const Damage& d) { return d.file == file.path && d.offset >= file.read_to; });
        const TfRecordScan scan = read_records(data, file.path, file.read_to, i, tail.run, tail.plugins);
        // A last record that fails its data CRC is read again next time: it may be a record still arriving.
        const uint64_t read_to = scan.last_record_bad ? scan.last_record : scan.end_of_whole;
        if (read_to > file.read_to)
            file.last_footer = std::string(data.substr(static_cast<size_t>(read_to - file.read_to) - 4, 4));
        file.read_to = read_to;
        file.seen = seen;
    }
    if (again) {
        tail = EventFilesTail{};
        return read_event_files_on(listed, tail, buffer, bytes_read); // a fresh tail always gives the run
    }
    // Hand out the points read now; the tail keeps their count and last point.
    auto scalars = std::move(tail.run.scalars);
    auto histograms = std::move(tail.run.histograms);
    tail.run.scalars.clear();
    tail.run.histograms.clear();
    ImportedRun out = tail.run;
    out.scalars = std::move(scalars);
    out.histograms = std::move(histograms);
    const auto count = [&](const char* kind, const auto& series, auto value_of) {
        for (const auto& [tag, points] : series) {
            if (points.empty())
                continue;
            PointsBefore& before = tail.run.points_before[{kind, tag}];
            before.points += static_cast<int64_t>(points.size());
            before.last_step = points.back().step;
            before.last_value = value_of(points.back());
        }
    };
    count("scalar", out.scalars, [](const ScalarPoint& p) { return p.value; });
    count("histogram", out.histograms, [](const HistogramPoint& h) { return h.num; });
    return out;
}

Expected<std::vector<TensorBoardRunFiles>> list_tensorboard_runs(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    if (ec || !fs::exists(status))
        return Error{"cannot read " + path + ": " + (ec ? ec.message() : "no such file or folder") +
                     "; give a TensorBoard logdir, a run folder or an event file"};
    std::map<std::string, std::vector<std::string>> by_folder; // ordered: runs in path order, files in name order
    if (fs::is_regular_file(status)) {
        by_folder[fs::path(path).parent_path().string()].push_back(path);
    } else {
        fs::recursive_directory_iterator it(path, fs::directory_options::skip_permission_denied, ec), end;
        for (; !ec && it != end; it.increment(ec)) {
            std::error_code type_error;
            if (it->is_regular_file(type_error) && is_event_file_name(it->path().filename().string()))
                by_folder[it->path().parent_path().string()].push_back(it->path().string());
        }
        if (ec)
            return Error{"listing " + path + " failed: " + ec.message()};
    }
    if (by_folder.empty())
        return Error{path + " holds no TensorBoard event file (a file whose name contains \"tfevents\")"};
    std::vector<TensorBoardRunFiles> runs;
    const fs::path root = fs::is_regular_file(status) ? fs::path(path).parent_path() : fs::path(path);
    for (auto& [folder, files] : by_folder) {
        std::sort(files.begin(), files.end());
        // As TensorBoard names runs: the folder relative to the logdir; the logdir itself by its own name.
        const std::string relative = fs::path(folder).lexically_relative(root).generic_string();
        std::string name =
            relative.empty() || relative == "." ? fs::absolute(root).lexically_normal().filename().string() : relative;
        if (name.empty())
            name = folder;
        runs.push_back({folder, std::move(name), std::move(files)});
    }
    return runs;
}

ImportedRun read_tensorboard_run(const TensorBoardRunFiles& listed, SourceBuffer& buffer) {
    ImportedRun run = read_event_files(listed.folder, listed.files, buffer);
    run.name = listed.name;
    return run;
}

Expected<std::vector<ImportedRun>> read_tensorboard_logdir(const std::string& path) {
    auto listed = list_tensorboard_runs(path);
    if (!listed)
        return Error{listed.error()};
    SourceBuffer buffer;
    std::vector<ImportedRun> runs;
    for (const TensorBoardRunFiles& run : *listed)
        runs.push_back(read_tensorboard_run(run, buffer));
    return runs;
}

Expected<std::string> read_tensorboard_image(const std::string& file, uint64_t record_offset, const std::string& tag,
                                             int item, int64_t step) {
    const std::string where = file + " (the record at byte " + std::to_string(record_offset) + ")";
    const std::string changed = "; the file changed since the import: delete the run and import it again";
    std::ifstream in(file, std::ios::binary);
    if (!in)
        return Error{"cannot read " + file + ": " + std::strerror(errno) + " (moved or deleted since the import?)"};
    char header[12];
    if (!in.seekg(static_cast<std::streamoff>(record_offset)) || !in.read(header, sizeof header))
        return Error{file + " ends before byte " + std::to_string(record_offset + sizeof header) + changed};
    uint64_t length = 0;
    uint32_t length_crc = 0;
    std::memcpy(&length, header, 8);
    std::memcpy(&length_crc, header + 8, 4);
    if (mask_crc32c(crc32c(header, 8)) != length_crc) // checked before the length sizes anything
        return Error{where + " is not a record's start" + changed};
    // The length was vouched for by its CRC, but the file must also hold it before anything that size is made.
    in.seekg(0, std::ios::end);
    const auto file_size = static_cast<uint64_t>(std::max<std::streamoff>(0, in.tellg()));
    if (length > file_size || record_offset + sizeof header + length + 4 > file_size)
        return Error{file + " ends inside " + where + changed};
    in.seekg(static_cast<std::streamoff>(record_offset + sizeof header));
    std::string frame(sizeof header + length + 4, '\0');
    std::memcpy(frame.data(), header, sizeof header);
    if (!in.read(frame.data() + sizeof header, static_cast<std::streamsize>(length + 4)))
        return Error{file + " ends inside " + where + changed};
    std::vector<Damage> damage;
    std::string_view data;
    scan_tfrecords(
        frame, file, [&](uint64_t, std::string_view record) { data = record; }, damage);
    if (!damage.empty())
        return Error{where + ": " + damage.front().what + changed};
    // The event: its step, and the value of `tag` (an images tag: a TF2 tensor's plugin is named on its first value
    // only, so it is given here).
    const TagPlugins plugins{{tag, "images"}};
    ProtoReader event(data);
    ProtoField f;
    int64_t at_step = 0;
    std::string_view summary;
    while (event.next(f)) {
        if (f.number == 2 && f.type == WireType::varint)
            at_step = f.as_int64();
        else if (f.number == 5 && f.type == WireType::bytes)
            summary = f.bytes;
    }
    if (!event.ok() || at_step != step)
        return Error{where + " is not the event of step " + std::to_string(step) + changed};
    ProtoReader values(summary);
    ProtoField v;
    while (values.next(v)) {
        if (v.number != 1 || v.type != WireType::bytes)
            continue;
        DecodedValue value;
        std::string why;
        if (decode_value(v.bytes, plugins, value, why) && value.tag == tag &&
            value.kind == DecodedValue::Kind::images && item >= 0 &&
            static_cast<size_t>(item) < value.image_bytes.size())
            return std::string(value.image_bytes[static_cast<size_t>(item)]);
    }
    return Error{where + " holds no image " + std::to_string(item) + " of " + tag + " at step " + std::to_string(step) +
                 changed};
}

namespace {

std::string encode_event(double wall_time, int64_t step, uint32_t what_field, std::string_view what) {
    ProtoWriter event;
    event.fixed64(1, wall_time);
    if (step != 0)
        event.varint(2, static_cast<uint64_t>(step));
    event.bytes(what_field, what);
    return event.take();
}

std::string encode_google_value(const json& value) {
    ProtoWriter v;
    if (value.is_number())
        v.fixed64(2, value.get<double>());
    else if (value.is_boolean())
        v.varint(4, value.get<bool>() ? 1 : 0);
    else if (value.is_string())
        v.bytes(3, value.get_ref<const std::string&>());
    else if (value.is_null())
        v.varint(1, 0);
    else
        v.bytes(3, value.dump()); // nested values go as their JSON text: the hparams plugin shows scalars only
    return v.take();
}

} // namespace

std::string encode_file_version_event(double wall_time) {
    ProtoWriter event;
    event.fixed64(1, wall_time);
    event.bytes(3, "brain.Event:2");
    event.bytes(10, ProtoWriter().bytes(1, "traindeck").data());
    return tfrecord_frame(event.data());
}

std::string encode_scalar_event(const std::string& tag, int64_t step, float value, double wall_time) {
    const std::string summary_value = ProtoWriter().bytes(1, tag).fixed32(2, value).take();
    const std::string summary = ProtoWriter().bytes(1, summary_value).take();
    return tfrecord_frame(encode_event(wall_time, step, 5, summary));
}

std::string encode_exact_scalar_event(const std::string& tag, int64_t step, double value, double wall_time) {
    constexpr float kInfinity = std::numeric_limits<float>::infinity();
    // Past a float's range the float is infinity (the cast would be undefined there).
    const float shown = std::isfinite(value) && std::fabs(value) > std::numeric_limits<float>::max()
                            ? (value > 0 ? kInfinity : -kInfinity)
                            : static_cast<float>(value);
    const std::string summary_value =
        ProtoWriter().bytes(1, tag).fixed32(2, shown).fixed64(kExactValueField, value).take();
    const std::string summary = ProtoWriter().bytes(1, summary_value).take();
    return tfrecord_frame(encode_event(wall_time, step, 5, summary));
}

Expected<std::string> write_tensorboard_scalars(const std::string& folder, const ImportedRun& run) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(folder, ec);
    if (ec)
        return Error{"cannot create " + folder + ": " + ec.message()};
    const double now = wall_seconds();
    const double first_time = run.started > 0 ? run.started : now;
    char host[256] = "localhost";
    ::gethostname(host, sizeof host - 1);
    // As TensorBoard's writers name theirs (time, host, pid, a counter), so two exports in one second do not collide.
    static std::atomic<int64_t> counter{0};
    const std::string path =
        (fs::path(folder) / ("events.out.tfevents." + std::to_string(static_cast<int64_t>(now)) + "." + host + "." +
                             std::to_string(::getpid()) + "." + std::to_string(counter++)))
            .string();
    std::string out = encode_file_version_event(first_time);
    if (run.config.is_object() && !run.config.empty()) {
        // hparams plugin data: HParamsPluginData{session_start_info{hparams: map}} in the metadata of a placeholder
        // DT_FLOAT scalar, as TensorBoard's own hparams summary writes it.
        ProtoWriter start;
        for (auto it = run.config.begin(); it != run.config.end(); ++it)
            start.bytes(1, ProtoWriter().bytes(1, it.key()).bytes(2, encode_google_value(*it)).data());
        if (run.started > 0)
            start.fixed64(5, run.started);
        const std::string plugin_data = ProtoWriter().bytes(3, start.data()).take();
        const std::string metadata =
            ProtoWriter().bytes(1, ProtoWriter().bytes(1, "hparams").bytes(2, plugin_data).data()).take();
        const std::string tensor = ProtoWriter().varint(1, kFloat).bytes(2, "").fixed32(5, 0.0f).take();
        const std::string value =
            ProtoWriter().bytes(1, "_hparams_/session_start_info").bytes(9, metadata).bytes(8, tensor).take();
        out += tfrecord_frame(encode_event(first_time, 0, 5, ProtoWriter().bytes(1, value).data()));
    }
    struct Entry {
        const std::string* tag;
        const ScalarPoint* point;
    };
    std::vector<Entry> entries;
    for (const auto& [tag, points] : run.scalars)
        for (const ScalarPoint& p : points)
            entries.push_back({&tag, &p});
    std::stable_sort(entries.begin(), entries.end(),
                     [](const Entry& a, const Entry& b) { return a.point->step < b.point->step; });
    for (const Entry& e : entries) {
        const double value = e.point->value, time = e.point->wall_time > 0 ? e.point->wall_time : first_time;
        // simple_value is a float: a value a float holds bit for bit goes there alone; any other goes there as the
        // nearest float, with its exact bits beside it (it was cut to a float, and 1e300 became infinity).
        bool exact_as_float = !std::isfinite(value) || std::fabs(value) <= std::numeric_limits<float>::max();
        if (exact_as_float) {
            // The bits, not ==: -0 and 0 are equal, and a NaN's payload would be lost.
            exact_as_float = std::bit_cast<uint64_t>(static_cast<double>(static_cast<float>(value))) ==
                             std::bit_cast<uint64_t>(value);
        }
        if (exact_as_float)
            out += encode_scalar_event(*e.tag, e.point->step, static_cast<float>(value), time);
        else
            out += encode_exact_scalar_event(*e.tag, e.point->step, value, time);
    }
    AtomicFile file(path);
    if (!file.write(out) || file.commit() != 0)
        return Error{"writing " + path + " failed: " + std::strerror(file.error_number()) +
                     "; check the folder is writable and has space"};
    return path;
}

} // namespace traindeck::importers
