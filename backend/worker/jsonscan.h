#pragma once
// A strict, allocation-free check that a line is exactly one JSON object (RFC 8259 grammar), for the ingest
// path: every metrics line is checked, 100 k lines a second, and building or even lexing numbers with a full
// parser cost more than everything else the worker does per line. Values are not decoded.
#include <string_view>

namespace traindeck::worker {

bool is_json_object(std::string_view text);

} // namespace traindeck::worker
