#include "jsonscan.h"

#include <cmath>
#include <cstdlib>

namespace traindeck::worker {
namespace {

constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD"; // U+FFFD in UTF-8
constexpr std::string_view kReplacementEscape = "\\ufffd";

class Scanner {
public:
    Scanner(std::string_view text, JsonScan* scan) : start_(text.data()), p_(text.data()), end_(text.data() + text.size()), scan_(scan) {}

    bool document() {
        skip_space();
        if (p_ == end_ || *p_ != '{' || !value(0))
            return false;
        skip_space();
        return p_ == end_;
    }

private:
    static constexpr int kMaxDepth = 64;

    void skip_space() {
        while (p_ != end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r'))
            ++p_;
    }

    bool literal(std::string_view word) {
        if (static_cast<size_t>(end_ - p_) < word.size() || std::string_view(p_, word.size()) != word)
            return false;
        p_ += word.size();
        return true;
    }

    void fix(const char* at, size_t length, std::string_view replacement, int JsonScan::*counter) {
        if (!scan_)
            return;
        scan_->fixes.push_back({static_cast<size_t>(at - start_), length, replacement});
        ++(scan_->*counter);
    }

    // Four hex digits after "\u": their value, or -1.
    long hex4() {
        long value = 0;
        for (int i = 0; i < 4; ++i, ++p_) {
            if (p_ == end_)
                return -1;
            const char h = *p_;
            const int digit = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
            if (digit < 0)
                return -1;
            value = value * 16 + digit;
        }
        return value;
    }

    // The length of the valid UTF-8 sequence starting at p_ (its first byte is >= 0x80), or 0 (RFC 3629: no
    // overlong forms, no surrogates, nothing above U+10FFFF).
    size_t utf8_sequence() const {
        const auto byte = [&](size_t i) { return p_ + i < end_ ? static_cast<unsigned char>(p_[i]) : 0u; };
        const unsigned c = byte(0);
        const auto continuation = [&](size_t i) { return (byte(i) & 0xC0) == 0x80; };
        if (c >= 0xC2 && c <= 0xDF)
            return continuation(1) ? 2 : 0;
        if (c >= 0xE0 && c <= 0xEF) {
            const unsigned c1 = byte(1);
            if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 >= 0xA0))
                return 0;
            return continuation(1) && continuation(2) ? 3 : 0;
        }
        if (c >= 0xF0 && c <= 0xF4) {
            const unsigned c1 = byte(1);
            if ((c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 >= 0x90))
                return 0;
            return continuation(1) && continuation(2) && continuation(3) ? 4 : 0;
        }
        return 0;
    }

    bool string() {
        ++p_; // opening quote
        while (p_ != end_) {
            const unsigned char c = static_cast<unsigned char>(*p_);
            if (c >= 0x80) {
                if (const size_t length = utf8_sequence()) {
                    p_ += length;
                } else {
                    fix(p_, 1, kReplacementCharacter, &JsonScan::bad_text);
                    ++p_;
                }
                continue;
            }
            ++p_;
            if (c == '"')
                return true;
            if (c < 0x20)
                return false;
            if (c == '\\') {
                if (p_ == end_)
                    return false;
                const char escape = *p_++;
                if (escape == 'u') {
                    const char* escape_start = p_ - 2;
                    const long unit = hex4();
                    if (unit < 0)
                        return false;
                    if (unit >= 0xD800 && unit <= 0xDBFF) {
                        // A high surrogate is valid only with a low one right after it.
                        const char* low_start = p_;
                        long low = -1;
                        if (end_ - p_ >= 6 && p_[0] == '\\' && p_[1] == 'u') {
                            p_ += 2;
                            low = hex4();
                            if (low < 0)
                                return false;
                        }
                        if (low < 0xDC00 || low > 0xDFFF) {
                            fix(escape_start, static_cast<size_t>(low_start - escape_start), kReplacementEscape, &JsonScan::bad_text);
                            p_ = low_start;
                        }
                    } else if (unit >= 0xDC00 && unit <= 0xDFFF) {
                        fix(escape_start, 6, kReplacementEscape, &JsonScan::bad_text);
                    }
                } else if (std::string_view("\"\\/bfnrt").find(escape) == std::string_view::npos) {
                    return false;
                }
            }
        }
        return false;
    }

    bool digits() {
        const char* start = p_;
        while (p_ != end_ && *p_ >= '0' && *p_ <= '9')
            ++p_;
        return p_ != start;
    }

    bool number() {
        const char* start = p_;
        if (*p_ == '-')
            ++p_;
        if (p_ == end_)
            return false;
        const char* integer = p_;
        if (*p_ == '0')
            ++p_;
        else if (!digits())
            return false;
        const long integer_digits = p_ - integer;
        if (p_ != end_ && *p_ == '.') {
            ++p_;
            if (!digits())
                return false;
        }
        long exponent = 0;
        if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
            ++p_;
            const bool negative = p_ != end_ && *p_ == '-';
            if (p_ != end_ && (*p_ == '+' || *p_ == '-'))
                ++p_;
            const char* exponent_start = p_;
            if (!digits())
                return false;
            for (const char* d = exponent_start; d != p_ && exponent < 100000; ++d)
                exponent = exponent * 10 + (*d - '0');
            if (negative)
                exponent = -exponent;
        }
        // Only a number whose decimal exponent could pass a double's (~1.8e308) is converted to find out.
        if (scan_ && integer_digits - 1 + exponent > 307) {
            const std::string token(start, p_);
            if (std::isinf(std::strtod(token.c_str(), nullptr)))
                fix(start, token.size(), "null", &JsonScan::bad_numbers);
        }
        return true;
    }

    bool value(int depth) {
        skip_space();
        if (p_ == end_ || depth > kMaxDepth)
            return false;
        switch (*p_) {
        case '{': {
            ++p_;
            skip_space();
            if (p_ != end_ && *p_ == '}') {
                ++p_;
                return true;
            }
            for (;;) {
                skip_space();
                if (p_ == end_ || *p_ != '"' || !string())
                    return false;
                skip_space();
                if (p_ == end_ || *p_++ != ':' || !value(depth + 1))
                    return false;
                skip_space();
                if (p_ == end_)
                    return false;
                if (*p_ == '}') {
                    ++p_;
                    return true;
                }
                if (*p_++ != ',')
                    return false;
            }
        }
        case '[': {
            ++p_;
            skip_space();
            if (p_ != end_ && *p_ == ']') {
                ++p_;
                return true;
            }
            for (;;) {
                if (!value(depth + 1))
                    return false;
                skip_space();
                if (p_ == end_)
                    return false;
                if (*p_ == ']') {
                    ++p_;
                    return true;
                }
                if (*p_++ != ',')
                    return false;
            }
        }
        case '"':
            return string();
        case 't':
            return literal("true");
        case 'f':
            return literal("false");
        case 'n':
            return literal("null");
        default:
            return number();
        }
    }

    const char* start_;
    const char* p_;
    const char* end_;
    JsonScan* scan_; // where fixes go; null: only check
};

} // namespace

bool is_json_object(std::string_view text) {
    JsonScan scan = scan_json_object(text);
    return scan.object && scan.fixes.empty();
}

JsonScan scan_json_object(std::string_view text) {
    JsonScan scan;
    scan.object = Scanner(text, &scan).document();
    if (!scan.object)
        scan.fixes.clear();
    return scan;
}

std::string JsonScan::repaired(std::string_view text) const {
    std::string out;
    out.reserve(text.size() + 2 * fixes.size());
    size_t at = 0;
    for (const Fix& f : fixes) {
        out.append(text.substr(at, f.offset - at));
        out.append(f.replacement);
        at = f.offset + f.length;
    }
    out.append(text.substr(at));
    return out;
}

} // namespace traindeck::worker
