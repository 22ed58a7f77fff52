#include "jsonscan.h"

namespace traindeck::worker {
namespace {

class Scanner {
public:
    explicit Scanner(std::string_view text) : p_(text.data()), end_(text.data() + text.size()) {}

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

    bool string() {
        ++p_; // opening quote
        while (p_ != end_) {
            const unsigned char c = static_cast<unsigned char>(*p_++);
            if (c == '"')
                return true;
            if (c < 0x20)
                return false;
            if (c == '\\') {
                if (p_ == end_)
                    return false;
                const char escape = *p_++;
                if (escape == 'u') {
                    for (int i = 0; i < 4; ++i, ++p_) {
                        if (p_ == end_)
                            return false;
                        const char h = *p_;
                        if (!((h >= '0' && h <= '9') || (h >= 'a' && h <= 'f') || (h >= 'A' && h <= 'F')))
                            return false;
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
        if (*p_ == '-')
            ++p_;
        if (p_ == end_)
            return false;
        if (*p_ == '0')
            ++p_;
        else if (!digits())
            return false;
        if (p_ != end_ && *p_ == '.') {
            ++p_;
            if (!digits())
                return false;
        }
        if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
            ++p_;
            if (p_ != end_ && (*p_ == '+' || *p_ == '-'))
                ++p_;
            if (!digits())
                return false;
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

    const char* p_;
    const char* end_;
};

} // namespace

bool is_json_object(std::string_view text) { return Scanner(text).document(); }

} // namespace traindeck::worker
