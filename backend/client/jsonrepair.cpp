// Repairs JSON text from a worker (see jsonrepair.h). One pass, no allocation per token: a reply holds up to
// 20,000 events, and this runs only when the reply did not parse as it came.
#include "jsonrepair.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace traindeck::client {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD"; // U+FFFD in UTF-8

// Length of the well-formed UTF-8 sequence at text[i], or 0 when it is not one.
size_t utf8_sequence(std::string_view text, size_t i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    size_t length = 0;
    unsigned code = 0;
    if (byte >= 0xC2 && byte <= 0xDF)
        length = 2, code = byte & 0x1F;
    else if (byte >= 0xE0 && byte <= 0xEF)
        length = 3, code = byte & 0x0F;
    else if (byte >= 0xF0 && byte <= 0xF4)
        length = 4, code = byte & 0x07;
    else
        return 0;
    if (i + length > text.size())
        return 0;
    for (size_t k = 1; k < length; ++k) {
        const auto next = static_cast<unsigned char>(text[i + k]);
        if ((next & 0xC0) != 0x80)
            return 0;
        code = (code << 6) | (next & 0x3F);
    }
    if ((length == 3 && code < 0x800) || (length == 4 && (code < 0x10000 || code > 0x10FFFF)) ||
        (code >= 0xD800 && code <= 0xDFFF))
        return 0;
    return length;
}

int hex_value(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

// The code unit of a \uXXXX escape at text[i] (text[i] == '\\'), or -1 when it is not one.
int escape_unit(std::string_view text, size_t i) {
    if (i + 6 > text.size() || text[i] != '\\' || text[i + 1] != 'u')
        return -1;
    int unit = 0;
    for (size_t k = 2; k < 6; ++k) {
        const int digit = hex_value(text[i + k]);
        if (digit < 0)
            return -1;
        unit = unit * 16 + digit;
    }
    return unit;
}

bool number_char(char c) { return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'; }

} // namespace

std::string repair_json(std::string_view text, JsonRepairs& repairs) {
    std::string out;
    out.reserve(text.size() + 16);
    bool in_string = false;
    for (size_t i = 0; i < text.size();) {
        const char c = text[i];
        const auto byte = static_cast<unsigned char>(c);
        if (!in_string) {
            if (c == '"') {
                in_string = true;
                out.push_back(c);
                ++i;
            } else if (c == '-' || (c >= '0' && c <= '9')) {
                size_t end = i;
                while (end < text.size() && number_char(text[end]))
                    ++end;
                const std::string token(text.substr(i, end - i));
                errno = 0;
                char* parsed_end = nullptr;
                const double value = std::strtod(token.c_str(), &parsed_end);
                // Overflow only: an underflow (1e-999) is a representable 0 and parses as one.
                if (parsed_end == token.c_str() + token.size() && errno == ERANGE && std::isinf(value)) {
                    out.append("null");
                    ++repairs.numbers;
                } else {
                    out.append(token);
                }
                i = end;
            } else {
                out.push_back(c);
                ++i;
            }
            continue;
        }
        if (c == '"') {
            in_string = false;
            out.push_back(c);
            ++i;
        } else if (c == '\\') {
            const int unit = escape_unit(text, i);
            if (unit >= 0xD800 && unit <= 0xDBFF) {
                const int low = escape_unit(text, i + 6);
                if (low >= 0xDC00 && low <= 0xDFFF) {
                    out.append(text.substr(i, 12)); // a surrogate pair: one code point
                    i += 12;
                } else {
                    out.append("\\uFFFD");
                    ++repairs.text;
                    i += 6;
                }
            } else if (unit >= 0xDC00 && unit <= 0xDFFF) {
                out.append("\\uFFFD");
                ++repairs.text;
                i += 6;
            } else {
                // Any other escape: copy it and the character it escapes (an escaped quote does not end the string).
                out.push_back(c);
                if (i + 1 < text.size())
                    out.push_back(text[i + 1]);
                i += 2;
            }
        } else if (byte < 0x20) {
            static const char digits[] = "0123456789abcdef";
            out.append("\\u00");
            out.push_back(digits[byte >> 4]);
            out.push_back(digits[byte & 0xF]);
            ++repairs.controls;
            ++i;
        } else if (byte < 0x80) {
            out.push_back(c);
            ++i;
        } else if (const size_t length = utf8_sequence(text, i); length > 0) {
            out.append(text.substr(i, length));
            i += length;
        } else {
            out.append(kReplacement);
            ++repairs.text;
            ++i;
        }
    }
    return out;
}

} // namespace traindeck::client
