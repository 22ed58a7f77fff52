#pragma once
// What the catalog's chunk formats share (histogramstore.h, imagestore.h): varints, zigzag for signed deltas, and a
// reader over a chunk's bytes that never reads past its end (a damaged catalog file hands it outside bytes: each
// read past the end or malformed varint clears ok and gives 0).
#include <cstdint>
#include <cstring>
#include <string>

namespace traindeck::chunk_coding {

inline uint64_t zigzag(int64_t value) {
    return (static_cast<uint64_t>(value) << 1) ^ static_cast<uint64_t>(value >> 63);
}
inline int64_t unzigzag(uint64_t value) { return static_cast<int64_t>((value >> 1) ^ (~(value & 1) + 1)); }

// Writes value as a varint at out (at most 10 bytes); returns the byte after it.
inline char* put_varint(char* out, uint64_t value) {
    while (value >= 0x80) {
        *out++ = static_cast<char>(value | 0x80);
        value >>= 7;
    }
    *out++ = static_cast<char>(value);
    return out;
}

inline void append_varint(std::string& out, uint64_t value) {
    char bytes[10];
    out.append(bytes, static_cast<size_t>(put_varint(bytes, value) - bytes));
}

struct ChunkReader {
    const char* at;
    const char* end;
    bool ok = true;

    uint64_t varint() {
        uint64_t value = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (at == end)
                break;
            const auto byte = static_cast<uint8_t>(*at++);
            value |= static_cast<uint64_t>(byte & 0x7f) << shift;
            if (!(byte & 0x80))
                return value;
        }
        ok = false;
        return 0;
    }
    uint8_t byte() {
        if (at == end) {
            ok = false;
            return 0;
        }
        return static_cast<uint8_t>(*at++);
    }
    double real() { // 8 bytes, little-endian as written
        double value = 0;
        if (end - at < 8) {
            ok = false;
            return 0;
        }
        std::memcpy(&value, at, 8);
        at += 8;
        return value;
    }
};

} // namespace traindeck::chunk_coding
