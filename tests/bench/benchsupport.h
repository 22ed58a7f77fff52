#pragma once
// What the benchmarks that run a peer as a child process share: the median of a figure over rounds, and the JSON
// records a child prints, one per line.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

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
    char buffer[1 << 16];
    while (std::fgets(buffer, sizeof(buffer), pipe)) {
        const std::string line(buffer);
        if (line.rfind(prefix, 0) != 0 || line.find('{') == std::string::npos)
            continue;
        nlohmann::json record = nlohmann::json::parse(line.substr(prefix.size()), nullptr, false);
        if (!record.is_discarded())
            records.push_back(record);
    }
    if (const int status = ::pclose(pipe); status != 0) {
        std::fprintf(stderr, "failed (status %d): %s\n", status, command.c_str());
        std::exit(2);
    }
    return records;
}

} // namespace traindeck::bench
