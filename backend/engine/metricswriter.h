#pragma once
// Writes the metrics protocol (backend/api/METRICS.md): one JSON object per line, to the file
// descriptor named by TRAINDECK_METRICS_FD, or else to stdout with the prefix "@traindeck ".
#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>

namespace traindeck::engine {

class MetricsWriter {
public:
    // Reads TRAINDECK_METRICS_FD; an unusable value is reported once on stderr and stdout is used.
    MetricsWriter();
    ~MetricsWriter();
    MetricsWriter(const MetricsWriter&) = delete;
    MetricsWriter& operator=(const MetricsWriter&) = delete;

    // Adds "v" (protocol version) and "time" (Unix seconds) and writes the line at once.
    void write(nlohmann::json record);
    // Human-readable progress goes to stdout unprefixed, so it shows up in the job's log.
    void log(const std::string& line);

private:
    std::FILE* out_ = nullptr;
    bool prefixed_ = true;
    bool owns_ = false;
    bool failed_ = false;
};

} // namespace traindeck::engine
