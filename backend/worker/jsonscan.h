#pragma once
// A strict, allocation-free check that a line is exactly one JSON object (RFC 8259 grammar), for the ingest
// path: every metrics line is checked, 100 k lines a second, and building or even lexing numbers with a full
// parser cost more than everything else the worker does per line. Values are not decoded.
//
// What arrives is repaired, not dropped: invalid UTF-8 (and \u escapes naming lone surrogates) becomes U+FFFD,
// and a number no double can hold (1e999) becomes null, so that every stored record parses everywhere and the
// rest of the line survives. The checks cost nothing on clean lines; fixes are collected only when needed.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace traindeck::worker {

bool is_json_object(std::string_view text);

struct JsonScan {
    struct Fix {
        size_t offset = 0, length = 0; // the bytes replaced
        std::string_view replacement;
    };
    bool object = false;   // the text is one JSON object (after the fixes below)
    int bad_text = 0;      // invalid UTF-8 sequences or lone-surrogate escapes, each replaced by U+FFFD
    int bad_numbers = 0;   // numbers out of the range of a double, each replaced by null
    std::vector<Fix> fixes; // in order of offset; empty for a clean line

    // The text with every fix applied.
    std::string repaired(std::string_view text) const;
};

JsonScan scan_json_object(std::string_view text);

} // namespace traindeck::worker
