#pragma once
// Base64 (RFC 4648, with padding) for the few bytes that travel inside JSON: the Results gallery's thumbnails in a
// trainer's eval record. Plain C++, no Qt (the console decodes with QByteArray::fromBase64).
#include <cstddef>
#include <cstdint>
#include <string>

namespace traindeck {

inline std::string base64_encode(const uint8_t* bytes, size_t size) {
    static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((size + 2) / 3 * 4);
    for (size_t i = 0; i < size; i += 3) {
        const uint32_t chunk = (uint32_t(bytes[i]) << 16) | (i + 1 < size ? uint32_t(bytes[i + 1]) << 8 : 0) |
                               (i + 2 < size ? uint32_t(bytes[i + 2]) : 0);
        out += kAlphabet[(chunk >> 18) & 63];
        out += kAlphabet[(chunk >> 12) & 63];
        out += i + 1 < size ? kAlphabet[(chunk >> 6) & 63] : '=';
        out += i + 2 < size ? kAlphabet[chunk & 63] : '=';
    }
    return out;
}

// Whether text is the padded base64 of exactly `size` bytes (its length and alphabet; not decoded).
inline bool is_base64_of(const std::string& text, size_t size) {
    if (text.size() != (size + 2) / 3 * 4)
        return false;
    const size_t padding = size % 3 == 0 ? 0 : 3 - size % 3;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        const bool letter =
            (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
        if (i >= text.size() - padding ? c != '=' : !letter)
            return false;
    }
    return true;
}

} // namespace traindeck
