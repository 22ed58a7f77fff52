#include "metricexport.h"

#include "atomicfile.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <map>

namespace traindeck::importers {

using nlohmann::json;

namespace {

// Step → (time, one value per tag index); a tag's later point at a step replaces its earlier one.
struct Table {
    std::vector<std::string> tags;
    std::map<int64_t, std::pair<double, std::vector<double>>> rows;
};

Table table_of(const ImportedRun& run) {
    Table table;
    for (const auto& [tag, points] : run.scalars) {
        const size_t column = table.tags.size();
        table.tags.push_back(tag);
        for (const ScalarPoint& point : points) {
            auto [row, fresh] = table.rows.try_emplace(point.step, 0.0, std::vector<double>());
            std::vector<double>& values = row->second.second;
            values.resize(run.scalars.size(), NAN);
            values[column] = point.value;
            if (point.wall_time > 0)
                row->second.first = point.wall_time;
        }
    }
    return table;
}

void append_number(std::string& out, double value) {
    char buffer[32];
    const auto end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
    out.append(buffer, end);
}

void append_csv_field(std::string& out, const std::string& text) {
    if (text.find_first_of(",\"\r\n") == std::string::npos) {
        out += text;
        return;
    }
    out += '"';
    for (const char c : text) {
        if (c == '"')
            out += '"';
        out += c;
    }
    out += '"';
}

} // namespace

std::string encode_metric_csv(const ImportedRun& run) {
    const Table table = table_of(run);
    std::string out = "step,time";
    for (const std::string& tag : table.tags) {
        out += ',';
        append_csv_field(out, tag);
    }
    out += '\n';
    for (const auto& [step, row] : table.rows) {
        out += std::to_string(step);
        out += ',';
        if (row.first > 0)
            append_number(out, row.first);
        for (const double value : row.second) {
            out += ',';
            if (std::isfinite(value))
                append_number(out, value);
        }
        out += '\n';
    }
    return out;
}

std::map<std::string, std::string> jsonl_renamed_tags(const ImportedRun& run) {
    std::map<std::string, std::string> renamed;
    // The reader's other time keys too: "time" is left out of a line whose step has no time, and one of them would be
    // taken for it. Its other step keys are safe: "step" is on every line and comes first.
    for (const char* own : {"step", "time", "timestamp", "wall_time", "_timestamp", "type", "v"}) {
        if (!run.scalars.contains(std::string_view(own)))
            continue;
        std::string name = own;
        while (run.scalars.contains(name))
            name += '_';
        renamed[own] = name;
    }
    return renamed;
}

std::string encode_metric_jsonl(const ImportedRun& run) {
    std::string out;
    if (run.config.is_object() && !run.config.empty())
        out += json{{"type", "config"}, {"config", run.config}}.dump() + "\n";
    Table table = table_of(run);
    for (const auto& [tag, name] : jsonl_renamed_tags(run))
        std::replace(table.tags.begin(), table.tags.end(), tag, name);
    for (const auto& [step, row] : table.rows) {
        json line = {{"type", "metric"}, {"step", step}};
        if (row.first > 0)
            line["time"] = row.first;
        for (size_t i = 0; i < table.tags.size(); ++i)
            if (std::isfinite(row.second[i]))
                line[table.tags[i]] = row.second[i];
        out += line.dump() + "\n";
    }
    return out;
}

Status write_metric_file(const std::string& path, const ImportedRun& run, bool csv) {
    const std::string bytes = csv ? encode_metric_csv(run) : encode_metric_jsonl(run);
    AtomicFile file(path);
    file.write(bytes);
    if (const int error = file.commit(); error != 0)
        return Error{"writing " + path + " failed: " + std::strerror(error)};
    return Ok{};
}

} // namespace traindeck::importers
