#include "metricfile.h"

#include "csv.h"
#include "sourcefile.h"
#include "textlines.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>

namespace traindeck::importers {

using nlohmann::json;

namespace {

constexpr std::array<std::string_view, 6> kStepNames = {"step", "global_step", "_step", "iter", "iteration", "epoch"};
constexpr std::array<std::string_view, 4> kTimeNames = {"time", "timestamp", "wall_time", "_timestamp"};

double as_seconds(double time) { return time > 1e11 ? time / 1000.0 : time; }

std::vector<std::string> split_row(std::string_view line, bool tabs) {
    if (!tabs)
        return split_csv_line(line);
    std::vector<std::string> fields;
    size_t at = 0;
    for (;;) {
        const size_t tab = line.find('\t', at);
        fields.emplace_back(line.substr(at, tab == std::string_view::npos ? line.size() - at : tab - at));
        if (tab == std::string_view::npos)
            return fields;
        at = tab + 1;
    }
}

void base_run(ImportedRun& run, const std::string& file, const char* format) {
    run.format = format;
    run.source = file;
    run.files = {file};
    run.name = std::filesystem::path(file).stem().string();
}

} // namespace

ImportedRun parse_metric_csv(std::string_view text, const std::string& file) {
    ImportedRun run;
    base_run(run, file, "csv");
    TextLines lines(text);
    TextLine line;
    std::vector<std::string> header;
    bool tabs = false;
    while (lines.next(line)) {
        if (line.text.empty())
            continue;
        tabs = line.text.find('\t') != std::string_view::npos && line.text.find(',') == std::string_view::npos;
        header = split_row(line.text, tabs);
        break;
    }
    if (header.empty()) {
        if (!text.empty())
            run.damage.push_back({file, 0, "no header row: nothing read"});
        return run;
    }
    auto find_column = [&](const auto& names) {
        for (const std::string_view name : names)
            for (size_t i = 0; i < header.size(); ++i)
                if (header[i] == name)
                    return static_cast<int>(i);
        return -1;
    };
    const int step_column = find_column(kStepNames), time_column = find_column(kTimeNames);
    std::vector<std::vector<ScalarPoint>*> series(header.size(), nullptr);
    // Cells that are no number, per column: damage in a metric column, but a column of text is just not a metric.
    std::vector<std::vector<Damage>> bad_cells(header.size());
    for (size_t i = 0; i < header.size(); ++i)
        if (static_cast<int>(i) != step_column && static_cast<int>(i) != time_column)
            series[i] = &run.scalars[header[i].empty() ? "column" + std::to_string(i + 1) : header[i]];
    int64_t row = 0;
    while (lines.next(line)) {
        if (line.text.empty())
            continue;
        const std::string where = "line " + std::to_string(line.number);
        const std::vector<std::string> cells = split_row(line.text, tabs);
        if (cells.size() != header.size()) {
            run.damage.push_back({file, line.offset,
                                  where + " has " + std::to_string(cells.size()) + " fields, the header " +
                                      std::to_string(header.size()) +
                                      (line.complete ? ": skipped" : " (cut short?): skipped"),
                                  !line.complete});
            continue;
        }
        int64_t step = row++;
        if (step_column >= 0 && !parse_integer(cells[step_column], step)) {
            run.damage.push_back(
                {file, line.offset,
                 where + ": the step \"" + cells[step_column] + "\" is not a whole number: row skipped"});
            continue;
        }
        double time = 0;
        if (time_column >= 0 && !cells[time_column].empty() && !parse_number(cells[time_column], time))
            run.damage.push_back(
                {file, line.offset, where + ": the time \"" + cells[time_column] + "\" is not a number"});
        ++run.records;
        for (size_t i = 0; i < cells.size(); ++i) {
            if (!series[i] || cells[i].empty())
                continue;
            double value = 0;
            if (!parse_number(cells[i], value)) {
                bad_cells[i].push_back(
                    {file, line.offset,
                     where + ": \"" + cells[i] + "\" in column " + header[i] + " is not a number: that cell skipped"});
                continue;
            }
            series[i]->push_back({step, value, std::isfinite(time) ? as_seconds(time) : 0.0});
        }
    }
    if (!text.empty() && text.back() != '\n')
        run.notes.push_back(file +
                            " does not end with a newline: its last row was read as it is (if a writer was still "
                            "appending, import it again once it is done)");
    for (size_t i = 0; i < header.size(); ++i) {
        if (!series[i] || bad_cells[i].empty())
            continue;
        if (series[i]->empty())
            run.notes.push_back("column " + header[i] + " holds no numbers: not a metric");
        else
            run.damage.insert(run.damage.end(), bad_cells[i].begin(), bad_cells[i].end());
    }
    std::stable_sort(run.damage.begin(), run.damage.end(),
                     [](const Damage& a, const Damage& b) { return a.offset < b.offset; });
    // A column that never held a number (a text column) is no metric.
    for (auto it = run.scalars.begin(); it != run.scalars.end();)
        it = it->second.empty() ? run.scalars.erase(it) : std::next(it);
    return run;
}

namespace {

void flatten_numbers(const json& object, const std::string& prefix, int64_t step, double time, ImportedRun& run,
                     const std::string& skip_step, const std::string& skip_time, int depth) {
    if (depth > 16)
        return;
    for (auto it = object.begin(); it != object.end(); ++it) {
        const std::string key = prefix.empty() ? it.key() : prefix + "/" + it.key();
        if (prefix.empty() && (it.key() == skip_step || it.key() == skip_time))
            continue;
        if (it->is_number())
            run.scalars[key].push_back({step, it->get<double>(), time});
        else if (it->is_object())
            flatten_numbers(*it, key, step, time, run, skip_step, skip_time, depth + 1);
    }
}

} // namespace

ImportedRun parse_metric_jsonl(std::string_view text, const std::string& file) {
    ImportedRun run;
    base_run(run, file, "jsonl");
    TextLines lines(text);
    TextLine line;
    int64_t row = 0;
    while (lines.next(line)) {
        std::string_view body = line.text;
        constexpr std::string_view kPrefix = "@traindeck ";
        if (body.substr(0, kPrefix.size()) == kPrefix)
            body.remove_prefix(kPrefix.size());
        if (body.find_first_not_of(" \t") == std::string_view::npos)
            continue;
        const std::string where = "line " + std::to_string(line.number);
        json object = json::parse(body, nullptr, false);
        if (object.is_discarded() || !object.is_object()) {
            run.damage.push_back(
                {file, line.offset,
                 where + (line.complete ? " is not a JSON object: skipped"
                                        : " is not a whole JSON object (cut short, or still being written): skipped"),
                 !line.complete});
            continue;
        }
        // TrainDeck's own protocol: a config record is the run's config; only metric records carry points.
        if (const auto type = object.find("type"); type != object.end() && type->is_string()) {
            if (*type == "config") {
                if (const auto config = object.find("config"); config != object.end() && config->is_object())
                    run.config.update(*config);
                ++run.records;
                continue;
            }
            if (*type != "metric") {
                ++run.other_records["record:" + type->get<std::string>()];
                continue;
            }
            object.erase("type");
            object.erase("v");
        }
        std::string step_key, time_key;
        for (const std::string_view name : kStepNames)
            if (object.contains(name)) {
                step_key = name;
                break;
            }
        for (const std::string_view name : kTimeNames)
            if (object.contains(name)) {
                time_key = name;
                break;
            }
        int64_t step = row++;
        if (!step_key.empty()) {
            const json& s = object[step_key];
            const double d = s.is_number() ? s.get<double>() : NAN;
            if (!std::isfinite(d) || d != std::trunc(d) || std::fabs(d) > 9.0e15) {
                std::string what = where;
                what += ": \"" + step_key + "\" is not a whole number: skipped";
                run.damage.push_back({file, line.offset, std::move(what)});
                continue;
            }
            step = static_cast<int64_t>(d);
        }
        double time = 0;
        if (!time_key.empty() && object[time_key].is_number())
            time = as_seconds(object[time_key].get<double>());
        ++run.records;
        flatten_numbers(object, "", step, std::isfinite(time) ? time : 0.0, run, step_key, time_key, 0);
    }
    return run;
}

Expected<ImportedRun> read_metric_file(const std::string& path) {
    auto text = read_source_file(path);
    if (!text)
        return Error{text.error()};
    std::string extension = std::filesystem::path(path).extension().string();
    std::transform(extension.begin(), extension.end(), extension.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    if (extension == ".jsonl" || extension == ".ndjson" || extension == ".json")
        return parse_metric_jsonl(*text, path);
    if (extension == ".csv" || extension == ".tsv" || extension == ".txt")
        return parse_metric_csv(*text, path);
    return Error{path + ": not a metric file TrainDeck reads (.csv, .tsv, .txt, .jsonl, .ndjson, .json)"};
}

} // namespace traindeck::importers
