#include "protowire.h"

namespace traindeck::importers {

bool ProtoReader::read_varint(uint64_t& out) {
    out = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (at_ >= data_.size())
            return false;
        const auto byte = static_cast<uint8_t>(data_[at_++]);
        out |= static_cast<uint64_t>(byte & 0x7f) << shift;
        if ((byte & 0x80) == 0)
            return true;
    }
    return false; // more than ten bytes: no varint is that long
}

bool ProtoReader::next(ProtoField& field) {
    if (!ok_ || at_ >= data_.size())
        return false;
    const size_t start = at_;
    auto fail = [&] {
        ok_ = false;
        at_ = start;
        return false;
    };
    uint64_t key = 0;
    if (!read_varint(key) || (key >> 3) == 0 || (key >> 3) > 0x1fffffff)
        return fail();
    field.number = static_cast<uint32_t>(key >> 3);
    field.bytes = {};
    switch (key & 7) {
    case 0:
        field.type = WireType::varint;
        if (!read_varint(field.value))
            return fail();
        return true;
    case 1:
        field.type = WireType::fixed64;
        if (data_.size() - at_ < 8)
            return fail();
        std::memcpy(&field.value, data_.data() + at_, 8);
        at_ += 8;
        return true;
    case 2: {
        field.type = WireType::bytes;
        uint64_t length = 0;
        if (!read_varint(length) || length > data_.size() - at_)
            return fail();
        field.bytes = data_.substr(at_, static_cast<size_t>(length));
        at_ += static_cast<size_t>(length);
        return true;
    }
    case 5: {
        field.type = WireType::fixed32;
        if (data_.size() - at_ < 4)
            return fail();
        uint32_t bits = 0;
        std::memcpy(&bits, data_.data() + at_, 4);
        field.value = bits;
        at_ += 4;
        return true;
    }
    default: // 3, 4 (groups) and 6, 7 (no such type)
        return fail();
    }
}

bool for_each_packed_varint(const ProtoField& field, const std::function<void(uint64_t)>& fn) {
    if (field.type == WireType::varint) {
        fn(field.value);
        return true;
    }
    if (field.type != WireType::bytes)
        return false;
    // A packed run is bare varints one after another, with no field keys between them.
    std::string_view rest = field.bytes;
    while (!rest.empty()) {
        uint64_t value = 0;
        size_t used = 0;
        bool done = false;
        for (int shift = 0; shift < 64 && used < rest.size(); shift += 7) {
            const auto byte = static_cast<uint8_t>(rest[used++]);
            value |= static_cast<uint64_t>(byte & 0x7f) << shift;
            if ((byte & 0x80) == 0) {
                done = true;
                break;
            }
        }
        if (!done)
            return false;
        fn(value);
        rest.remove_prefix(used);
    }
    return true;
}

void ProtoWriter::raw_varint(uint64_t value) {
    while (value >= 0x80) {
        out_.push_back(static_cast<char>((value & 0x7f) | 0x80));
        value >>= 7;
    }
    out_.push_back(static_cast<char>(value));
}

ProtoWriter& ProtoWriter::varint(uint32_t number, uint64_t value) {
    raw_varint(static_cast<uint64_t>(number) << 3 | 0);
    raw_varint(value);
    return *this;
}

ProtoWriter& ProtoWriter::fixed64(uint32_t number, double value) {
    raw_varint(static_cast<uint64_t>(number) << 3 | 1);
    char bytes[8];
    std::memcpy(bytes, &value, 8);
    out_.append(bytes, 8);
    return *this;
}

ProtoWriter& ProtoWriter::fixed32(uint32_t number, float value) {
    raw_varint(static_cast<uint64_t>(number) << 3 | 5);
    char bytes[4];
    std::memcpy(bytes, &value, 4);
    out_.append(bytes, 4);
    return *this;
}

ProtoWriter& ProtoWriter::bytes(uint32_t number, std::string_view value) {
    raw_varint(static_cast<uint64_t>(number) << 3 | 2);
    raw_varint(value.size());
    out_.append(value);
    return *this;
}

} // namespace traindeck::importers
