#pragma once
// The console's last line of defence for JSON from a worker: a reply that does not parse because a string holds
// invalid UTF-8 (or a \u escape naming a lone surrogate), a raw control character, or a number beyond a double's
// range (1e999) is repaired instead of dropped, so one bad metric line never stops a job's stream. The worker
// repairs such lines itself; this covers workers that do not (older ones, other implementations). Plain C++.
#include <string>
#include <string_view>

namespace traindeck::client {

struct JsonRepairs {
    int text = 0;    // invalid UTF-8 sequences and lone-surrogate escapes, each now U+FFFD
    int numbers = 0; // numbers out of a double's range, each now null
    int controls = 0;// raw control characters in strings, each now a \u00XX escape
    bool any() const { return text + numbers + controls > 0; }
};

// The text with those three faults repaired; everything else is copied as it is (it is not a validator: what is
// broken otherwise stays broken, and the parser says so).
std::string repair_json(std::string_view text, JsonRepairs& repairs);

} // namespace traindeck::client
