// Fuzz target: the worker's metrics-line check (jsonscan: is_json_object / scan_json_object / repaired), the one
// pure function on the ingest path; every byte a job writes to its metrics fd or as "@traindeck ..." goes through it.
// Properties, not just "does not crash":
//  - what the worker would store (the line, or its repair) parses as a JSON object in a strict parser (nlohmann),
//    and a repaired line needs no second repair;
//  - the fixes are in order, inside the line, and counted;
//  - on lines shallow enough for the scanner's depth limit, the scanner and nlohmann agree on "a clean object".
#include "fuzzsupport.h"
#include "jsonscan.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>

using traindeck::worker::JsonScan;
using traindeck::worker::is_json_object;
using traindeck::worker::scan_json_object;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view line(reinterpret_cast<const char*>(data), size);
    const JsonScan scan = scan_json_object(line);
    const bool clean = is_json_object(line);
    FUZZ_CHECK(clean == (scan.object && scan.fixes.empty()), "is_json_object disagrees with scan_json_object");
    FUZZ_CHECK(scan.object || scan.fixes.empty(), "fixes reported for a line that is not an object");
    FUZZ_CHECK(static_cast<int>(scan.fixes.size()) == scan.bad_text + scan.bad_numbers || !scan.object,
               "fix counters do not add up to the fixes");

    if (scan.object) {
        size_t at = 0;
        for (const JsonScan::Fix& fix : scan.fixes) {
            FUZZ_CHECK(fix.offset >= at && fix.length > 0 && fix.offset + fix.length <= line.size(),
                       "fixes overlap, are out of order or leave the line");
            at = fix.offset + fix.length;
        }
        const std::string stored = scan.repaired(line);
        const nlohmann::json parsed = nlohmann::json::parse(stored, nullptr, false);
        FUZZ_CHECK(!parsed.is_discarded() && parsed.is_object(), "a stored record does not parse as a JSON object");
        FUZZ_CHECK(is_json_object(stored), "a repaired record still needs repair");
    }

    // Where nlohmann is laxer than the scanner, compare nothing: it has no depth limit (at most 64 brackets in the
    // whole line cannot nest past the scanner's), skips a UTF-8 byte-order mark, and ends its input at a NUL byte
    // ("{}\0junk" is an object to it, not to the scanner, which is right to refuse it).
    const size_t brackets = static_cast<size_t>(std::count(line.begin(), line.end(), '{') + std::count(line.begin(), line.end(), '['));
    if (brackets <= 64 && line.substr(0, 3) != "\xEF\xBB\xBF" && line.find('\0') == std::string_view::npos) {
        const nlohmann::json strict = nlohmann::json::parse(line, nullptr, false);
        const bool strict_object = !strict.is_discarded() && strict.is_object();
        FUZZ_CHECK(strict_object == clean, "the scanner and a strict JSON parser disagree on a clean object");
    }
    return 0;
}
