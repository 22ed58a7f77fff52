// Checks names from a worker before they become paths (see remotename.h): refuse, never repair, so that a refused
// name is reported as it came and the user can tell which worker sent what.
#include "remotename.h"

namespace traindeck::client {

namespace {

// Whether text is well-formed UTF-8 (no overlong forms, surrogates or code points above U+10FFFF).
bool valid_utf8(std::string_view text) {
    for (size_t i = 0; i < text.size();) {
        const auto byte = static_cast<unsigned char>(text[i]);
        size_t length = 0;
        unsigned code = 0;
        if (byte < 0x80) {
            ++i;
            continue;
        } else if (byte >= 0xC2 && byte <= 0xDF) {
            length = 2, code = byte & 0x1F;
        } else if (byte >= 0xE0 && byte <= 0xEF) {
            length = 3, code = byte & 0x0F;
        } else if (byte >= 0xF0 && byte <= 0xF4) {
            length = 4, code = byte & 0x07;
        } else {
            return false;
        }
        if (i + length > text.size())
            return false;
        for (size_t k = 1; k < length; ++k) {
            const auto next = static_cast<unsigned char>(text[i + k]);
            if ((next & 0xC0) != 0x80)
                return false;
            code = (code << 6) | (next & 0x3F);
        }
        if ((length == 3 && code < 0x800) || (length == 4 && (code < 0x10000 || code > 0x10FFFF)) ||
            (code >= 0xD800 && code <= 0xDFFF))
            return false;
        i += length;
    }
    return true;
}

} // namespace

std::string unsafe_remote_name(std::string_view name) {
    if (name.empty())
        return "is empty";
    if (name.size() > kMaxRemoteNameBytes)
        return "is " + std::to_string(name.size()) + " bytes long (at most " + std::to_string(kMaxRemoteNameBytes) + ")";
    if (name.front() == '/')
        return "is an absolute path";
    if (name.find('/') != std::string_view::npos || name.find('\\') != std::string_view::npos)
        return "contains a path separator";
    if (name.find("..") != std::string_view::npos)
        return "contains “..”";
    if (name.find('\0') != std::string_view::npos)
        return "contains a NUL byte";
    for (const char c : name)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F)
            return "contains a control character";
    if (name.front() == '.')
        return "starts with “.” (a hidden file)";
    if (name.front() == '-')
        return "starts with “-” (it would read as an option)";
    if (!valid_utf8(name))
        return "is not valid UTF-8";
    return {};
}

} // namespace traindeck::client
