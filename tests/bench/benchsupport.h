#pragma once
// What the benchmarks that run a peer as a child process share: the median of a figure over rounds, and the JSON
// records a child prints, one per line.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <sys/types.h>

namespace traindeck::bench {

inline double median(std::vector<double> values) {
    if (values.empty())
        return 0.0;
    std::sort(values.begin(), values.end());
    const size_t mid = values.size() / 2;
    return values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

// Runs command (through the shell: a benchmark's own command line) and returns the JSON objects on the lines of its
// stdout that start with prefix (the prefix dropped). A command that cannot start or fails ends the benchmark
// (exit 2: not a missed target).
inline std::vector<nlohmann::json> run_json_lines(const std::string& command, const std::string& prefix) {
    std::vector<nlohmann::json> records;
    std::FILE* pipe = ::popen(command.c_str(), "r");
    if (!pipe) {
        std::fprintf(stderr, "cannot run: %s\n", command.c_str());
        std::exit(2);
    }
    // Whole lines however long (an evaluation record with its example thumbnails runs to hundreds of KB; a
    // fixed buffer cut those into pieces that did not parse, and the test accuracy read as never sent).
    char* buffer = nullptr;
    size_t capacity = 0;
    size_t unreadable = 0;
    for (ssize_t length; (length = ::getline(&buffer, &capacity, pipe)) >= 0;) {
        const std::string line(buffer, static_cast<size_t>(length));
        if (line.rfind(prefix, 0) != 0 || line.find('{') == std::string::npos)
            continue;
        nlohmann::json record = nlohmann::json::parse(line.substr(prefix.size()), nullptr, false);
        if (record.is_discarded())
            ++unreadable;
        else
            records.push_back(record);
    }
    std::free(buffer);
    if (unreadable > 0)
        std::fprintf(stderr, "%zu record line(s) that were not JSON: %s\n", unreadable, command.c_str());
    if (const int status = ::pclose(pipe); status != 0) {
        std::fprintf(stderr, "failed (status %d): %s\n", status, command.c_str());
        std::exit(2);
    }
    return records;
}

} // namespace traindeck::bench
