// The line → event ingest: metrics records checked (and repaired) without a full JSON parse, log lines kept
// short, every oddity said in a warning. Pure: the supervisor does the reading and the writing.
#include "ingest.h"

#include "jsonscan.h"

#include <nlohmann/json.hpp>

#include <string>

namespace traindeck::worker {

using nlohmann::json;

namespace {

constexpr std::string_view kProtocolPrefix = "@traindeck ";

// Invalid UTF-8 in a log or warning line becomes U+FFFD rather than an exception.
std::string dump(const json& data) { return data.dump(-1, ' ', false, json::error_handler_t::replace); }

} // namespace

const char* stream_name(OutputStream stream) {
    constexpr const char* kNames[3] = {"metrics", "stdout", "stderr"};
    return kNames[static_cast<int>(stream)];
}

const char* stream_file(OutputStream stream) {
    constexpr const char* kFiles[3] = {"metrics.jsonl", "stdout.log", "stderr.log"};
    return kFiles[static_cast<int>(stream)];
}

void ingest_line(OutputStream stream, std::string_view line, int64_t& warnings, const EventSink& sink) {
    if (!line.empty() && line.back() == '\r')
        line.remove_suffix(1);
    const bool protocol = stream == OutputStream::metrics ||
                          (stream == OutputStream::stdout_log && line.substr(0, kProtocolPrefix.size()) == kProtocolPrefix);
    if (!protocol) {
        json data = {{"stream", stream_name(stream)}, {"line", std::string(line.substr(0, kMaxLogText))}};
        if (line.size() > kMaxLogText)
            data["truncated_bytes"] = line.size() - kMaxLogText;
        sink("log", dump(data));
        return;
    }
    const std::string_view record = stream == OutputStream::metrics ? line : line.substr(kProtocolPrefix.size());
    if (record.empty())
        return; // a blank line on the metrics fd: nothing to record
    const JsonScan scan = scan_json_object(record);
    if (!scan.object) {
        ++warnings;
        sink("warning", dump({{"message", "metrics line is not a JSON object; skipped"},
                              {"stream", stream_name(stream)},
                              {"line", std::string(record.substr(0, kMaxLogText))},
                              {"count", warnings}}));
        return;
    }
    if (scan.fixes.empty()) {
        sink("record", record);
        return;
    }
    // Repaired, stored, and said: the record keeps everything that could be kept.
    sink("record", scan.repaired(record));
    ++warnings;
    std::string what;
    if (scan.bad_text)
        what = std::to_string(scan.bad_text) + " invalid UTF-8 sequence(s) replaced by U+FFFD";
    if (scan.bad_numbers)
        what += (what.empty() ? "" : "; ") + std::to_string(scan.bad_numbers) +
                " number(s) out of range dropped (stored as null)";
    sink("warning", dump({{"message", "metrics line repaired: " + what},
                          {"stream", stream_name(stream)},
                          {"line", std::string(record.substr(0, kMaxLogText))},
                          {"count", warnings}}));
}

size_t ingest_text(OutputStream stream, std::string_view text, int64_t& warnings, const EventSink& sink, bool at_end) {
    size_t start = 0;
    for (;;) {
        size_t end = text.find('\n', start);
        if (end == std::string_view::npos) {
            // An unfinished line waits for its newline, unless it is absurdly long or its stream has ended.
            if (start == text.size() || (!at_end && text.size() - start < kMaxLine))
                break;
            end = std::min(text.size(), start + kMaxLine);
        }
        ingest_line(stream, text.substr(start, end - start), warnings, sink);
        start = end + (end < text.size() && text[end] == '\n' ? 1 : 0);
    }
    return start;
}

} // namespace traindeck::worker
