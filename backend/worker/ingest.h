#pragma once
// A job's output turned into numbered events, as a pure function of the bytes: no files, no database. The
// supervisor reads what a job appended to its metrics, stdout and stderr files and hands it here; each line
// becomes one event (a "record" for a metrics line, a "log" line, or a "warning" about a line it had to repair or
// skip), passed to the caller's sink in order.
//
// metrics.jsonl (fd 3)   each line is a metrics record (one JSON object; METRICS.md)
// stdout                 a line starting "@traindeck " is a record too; others are log lines
// stderr                 log lines
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>

namespace traindeck::worker {

enum class OutputStream { metrics = 0, stdout_log = 1, stderr_log = 2 };

constexpr size_t kMaxLine = 1 << 20;  // a longer "line" is cut into pieces of this size
constexpr size_t kMaxLogText = 16384; // log and warning events keep this much of a very long line

// "metrics", "stdout", "stderr": the stream as events name it.
const char* stream_name(OutputStream stream);
// The file in a job's folder where the stream is appended.
const char* stream_file(OutputStream stream);

// type is a string literal ("record", "log", "warning"); data is the event's JSON, valid during the call.
using EventSink = std::function<void(const char* type, std::string_view data)>;

// One line (without its newline) of a stream into its events. `warnings` is the job's count of repaired or
// skipped metrics lines, raised for each and reported in the warning.
void ingest_line(OutputStream stream, std::string_view line, int64_t& warnings, const EventSink& sink);

// Every complete line at the start of `text` (and pieces of kMaxLine of an absurdly long one); an unfinished
// last line waits for its newline, unless `at_end` (text runs to the end of a stream that is written no more): then
// it is a line too. Returns how many bytes were consumed: the next read starts there.
size_t ingest_text(OutputStream stream, std::string_view text, int64_t& warnings, const EventSink& sink,
                   bool at_end = false);

} // namespace traindeck::worker
