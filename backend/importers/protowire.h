#pragma once
// A protobuf wire-format reader and writer small enough to read in one sitting: what the importers need to decode
// TensorBoard's Event/Summary messages and W&B's Record messages without generated code (or libprotobuf) in the
// build. The reader walks one message's fields in order: varint (wire type 0), fixed64 (1), length-delimited (2),
// fixed32 (5); groups (3, 4) are refused, as no message we read has them. It never reads past its buffer: a field that
// runs off the end, a varint of more than ten bytes or an unknown wire type stops it with ok() false, so a damaged
// record is reported, never trusted. Unknown fields are the caller's to skip (next() hands every field over).
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>

namespace traindeck::importers {

enum class WireType : uint8_t { varint = 0, fixed64 = 1, bytes = 2, fixed32 = 5 };

struct ProtoField {
    uint32_t number = 0;
    WireType type = WireType::varint;
    uint64_t value = 0;     // varint, fixed64 and fixed32 (their raw bits)
    std::string_view bytes; // length-delimited

    int64_t as_int64() const { return static_cast<int64_t>(value); }
    bool as_bool() const { return value != 0; }
    double as_double() const { // fixed64
        double d = 0;
        std::memcpy(&d, &value, sizeof d);
        return d;
    }
    float as_float() const { // fixed32
        const auto bits = static_cast<uint32_t>(value);
        float f = 0;
        std::memcpy(&f, &bits, sizeof f);
        return f;
    }
};

class ProtoReader {
public:
    explicit ProtoReader(std::string_view message) : data_(message) {}

    // The next field; false at the end of the message or when it is malformed (then ok() is false).
    bool next(ProtoField& field);
    bool ok() const { return ok_; }
    // Where the reader stopped, as a byte offset into the message (the malformed field's start when !ok()).
    size_t position() const { return at_; }

private:
    bool read_varint(uint64_t& out);

    std::string_view data_;
    size_t at_ = 0;
    bool ok_ = true;
};

// Packed repeated scalars (proto3's default for repeated numbers) and their unpacked form both occur: these read
// either. Each returns false when the bytes are not a whole number of values.
template <typename Fn>
bool for_each_packed_fixed64(const ProtoField& field, Fn&& fn) {
    if (field.type == WireType::fixed64) {
        fn(field.as_double());
        return true;
    }
    if (field.type != WireType::bytes || field.bytes.size() % 8 != 0)
        return false;
    for (size_t i = 0; i < field.bytes.size(); i += 8) {
        double d = 0;
        std::memcpy(&d, field.bytes.data() + i, 8);
        fn(d);
    }
    return true;
}

template <typename Fn>
bool for_each_packed_fixed32(const ProtoField& field, Fn&& fn) {
    if (field.type == WireType::fixed32) {
        fn(field.as_float());
        return true;
    }
    if (field.type != WireType::bytes || field.bytes.size() % 4 != 0)
        return false;
    for (size_t i = 0; i < field.bytes.size(); i += 4) {
        float f = 0;
        std::memcpy(&f, field.bytes.data() + i, 4);
        fn(f);
    }
    return true;
}

bool for_each_packed_varint(const ProtoField& field, const std::function<void(uint64_t)>& fn);

// The writer side, for the exporter and the tests: appends fields to a string.
class ProtoWriter {
public:
    ProtoWriter& varint(uint32_t number, uint64_t value);
    ProtoWriter& fixed64(uint32_t number, double value);
    ProtoWriter& fixed32(uint32_t number, float value);
    ProtoWriter& bytes(uint32_t number, std::string_view value);
    const std::string& data() const { return out_; }
    std::string take() { return std::move(out_); }

private:
    void raw_varint(uint64_t value);
    std::string out_;
};

} // namespace traindeck::importers
