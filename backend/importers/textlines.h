#pragma once
// Walking a text file line by line with each line's byte offset, for the text formats (MLflow metric files, CSV,
// JSONL): damage is reported with the file's byte offset and the line number. A last line without its newline is
// flagged: a writer that appends may be in the middle of it.
#include <cstdint>
#include <string_view>

namespace traindeck::importers {

struct TextLine {
    std::string_view text; // without "\n" or "\r\n"
    uint64_t offset = 0;   // of its first byte
    int64_t number = 0;    // 1-based
    bool complete = true;  // false: the file ends without a newline after it
};

class TextLines {
public:
    explicit TextLines(std::string_view text) : text_(text) {}
    bool next(TextLine& line) {
        if (at_ >= text_.size())
            return false;
        const size_t end = text_.find('\n', at_);
        line.offset = at_;
        line.number = ++number_;
        line.complete = end != std::string_view::npos;
        line.text = text_.substr(at_, (line.complete ? end : text_.size()) - at_);
        if (!line.text.empty() && line.text.back() == '\r')
            line.text.remove_suffix(1);
        at_ = line.complete ? end + 1 : text_.size();
        return true;
    }

private:
    std::string_view text_;
    size_t at_ = 0;
    int64_t number_ = 0;
};

// A whole field as a double ("1.5", "-3e-4", "nan", "inf", "-inf"); false for anything else (trailing text too).
bool parse_number(std::string_view text, double& out);
bool parse_integer(std::string_view text, int64_t& out);

} // namespace traindeck::importers
