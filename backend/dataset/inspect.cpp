#include "inspect.h"

#include "csv.h"
#include "idx.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

namespace traindeck::dataset {

namespace {

namespace fs = std::filesystem;

std::string absolute_path(const std::string& root, const std::string& relative) {
    return fs::is_regular_file(root) ? root : root + "/" + relative;
}

bool ends_with(const std::string& text, const std::string& suffix) {
    return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string lower(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
    return text;
}

bool is_idx_name(const std::string& name, const char* kind) {
    const std::string n = lower(name);
    return n.find(kind) != std::string::npos && (ends_with(n, "-ubyte") || ends_with(n, "-ubyte.gz") || ends_with(n, ".idx") ||
                                                  ends_with(n, ".idx.gz"));
}

// A cell's type; *value: its number, when it is one (parsed once, for the type and the column's range).
const char* field_type(const std::string& field, double* value) {
    if (field.empty())
        return nullptr; // a missing value says nothing about the column
    char* end = nullptr;
    const long long whole = std::strtoll(field.c_str(), &end, 10);
    if (*end == '\0') {
        // Past a long long (strtoll clamps): the number strtod reads.
        const bool clamped =
            whole == std::numeric_limits<long long>::max() || whole == std::numeric_limits<long long>::min();
        *value = clamped ? std::strtod(field.c_str(), nullptr) : static_cast<double>(whole);
        return "integer";
    }
    *value = std::strtod(field.c_str(), &end);
    return *end == '\0' ? "number" : "text";
}

bool read_csv(const std::string& path, const std::string& relative, CsvTable& table, int samples, std::string& error) {
    std::ifstream in(path);
    if (!in) {
        error = path + ": cannot open";
        return false;
    }
    table.path = relative;
    std::string line;
    if (!std::getline(in, line) || line.empty() || line == "\r") {
        error = path + ": empty CSV (the first line must be a header)";
        return false;
    }
    table.header = split_csv_line(line);
    std::vector<int> rank(table.header.size(), 0); // 0 unknown, 1 integer, 2 number, 3 text
    std::vector<std::map<std::string, int64_t>> counts(table.header.size());
    std::vector<char> too_many(table.header.size(), 0);
    table.low.assign(table.header.size(), std::numeric_limits<double>::infinity());
    table.high.assign(table.header.size(), -std::numeric_limits<double>::infinity());
    int64_t line_number = 1;
    while (std::getline(in, line)) {
        ++line_number;
        if (line.empty() || line == "\r")
            continue;
        std::vector<std::string> fields = split_csv_line(line);
        if (fields.size() != table.header.size()) {
            error = path + ":" + std::to_string(line_number) + ": " + std::to_string(fields.size()) + " fields, but the header has " +
                    std::to_string(table.header.size()) + " (ragged row); fix the row or the header";
            return false;
        }
        for (size_t c = 0; c < fields.size(); ++c) {
            double value = 0;
            const char* type = field_type(fields[c], &value);
            const int r = !type ? 0 : std::strcmp(type, "integer") == 0 ? 1 : std::strcmp(type, "number") == 0 ? 2 : 3;
            rank[c] = std::max(rank[c], r);
            if (r == 1 || r == 2) {
                table.low[c] = std::min(table.low[c], value);
                table.high[c] = std::max(table.high[c], value);
            }
            if (r != 0 && !too_many[c] && ++counts[c][fields[c]] == 1 && counts[c].size() > CsvTable::kMaxCsvValues) {
                too_many[c] = 1;
                counts[c].clear();
            }
        }
        if (static_cast<int>(table.rows.size()) < samples)
            table.rows.push_back(std::move(fields));
        ++table.row_count;
    }
    static const char* names[] = {"text", "integer", "number", "text"};
    for (int r : rank)
        table.types.push_back(names[r]);
    for (auto& column : counts)
        table.values.emplace_back(column.begin(), column.end());
    table.too_many_values = std::move(too_many);
    table.label_column = static_cast<int>(table.header.size()) - 1;
    for (size_t c = 0; c + 1 < table.header.size(); ++c) {
        static const char* label_names[] = {"label", "class", "target", "y", "species", "category", "outcome"};
        const std::string name = lower(trim_field(table.header[c]));
        if (std::find(std::begin(label_names), std::end(label_names), name) != std::end(label_names)) {
            table.named_label = static_cast<int>(c);
            break;
        }
    }
    return true;
}

bool check_image(const std::string& path, const std::string& extension, std::string& error) {
    std::ifstream in(path, std::ios::binary);
    unsigned char head[8] = {};
    in.read(reinterpret_cast<char*>(head), sizeof(head));
    const bool png = std::memcmp(head, "\x89PNG\r\n\x1a\n", 8) == 0;
    const bool jpeg = head[0] == 0xFF && head[1] == 0xD8 && head[2] == 0xFF;
    if ((extension == ".png" && !png) || (extension != ".png" && !jpeg)) {
        error = path + ": is not a " + (extension == ".png" ? "PNG" : "JPEG") + " image although its name says so";
        return false;
    }
    return true;
}

} // namespace

std::string describe_label_column(const CsvTable& table) {
    if (table.label_column < 0 || static_cast<size_t>(table.label_column) >= table.header.size())
        return {};
    const auto column = static_cast<size_t>(table.label_column);
    std::string text = "label column \"" + table.header[column] +
                       "\" (the last: a job trains on it unless its spec "
                       "names label_column)";
    static const std::vector<std::pair<std::string, int64_t>> none;
    auto values = column < table.values.size() ? table.values[column] : none;
    const bool numeric = table.types[column] != "text";
    const bool too_many = column < table.too_many_values.size() && table.too_many_values[column];
    if (!values.empty() && (!numeric || values.size() <= 20)) {
        if (numeric)
            std::stable_sort(values.begin(), values.end(), [](const auto& a, const auto& b) {
                return std::strtod(a.first.c_str(), nullptr) < std::strtod(b.first.c_str(), nullptr);
            });
        constexpr size_t kListed = 20;
        text += ": " + std::to_string(values.size()) + (values.size() == 1 ? " class: " : " classes: ");
        for (size_t i = 0; i < std::min(values.size(), kListed); ++i) {
            // A value with a comma in quotes, so that the list still reads as one.
            const std::string& value = values[i].first;
            text += (i ? ", " : "") + (value.find(',') == std::string::npos ? value : "\"" + value + "\"") + " (" +
                    std::to_string(values[i].second) + ")";
        }
        if (values.size() > kListed)
            text += ", …";
    } else if (numeric && table.low[column] <= table.high[column]) {
        char range[96];
        std::snprintf(range, sizeof range, "%.6g to %.6g", table.low[column], table.high[column]);
        text += ": numbers from " + std::string(range) + " (a regression target)";
    } else if (too_many) {
        text += ": more than " + std::to_string(CsvTable::kMaxCsvValues) + " distinct texts";
    } else {
        text += ": every cell empty";
    }
    if (table.named_label >= 0 && static_cast<size_t>(table.named_label) < table.header.size())
        text += "; column \"" + table.header[static_cast<size_t>(table.named_label)] +
                "\" is named like a label: a job's \"label_column\" chooses it";
    return text;
}

bool inspect_dataset(const std::string& root, const Manifest& manifest, Preview& preview, std::string& error, int samples) {
    preview = {};
    std::map<std::string, ImageClass> classes;
    int64_t images = 0;
    for (const ManifestFile& file : manifest.files) {
        const std::string name = fs::path(file.path).filename().string();
        const std::string absolute = absolute_path(root, file.path);
        if (is_idx_name(name, "idx3")) {
            IdxSet set;
            set.images = file.path;
            auto images = read_idx(absolute, 3, samples);
            if (!images) {
                error = images.error();
                return false;
            }
            set.count = images->dims[0];
            set.height = static_cast<int>(images->dims[1]);
            set.width = static_cast<int>(images->dims[2]);
            set.pixels = std::move(images->data);
            // The labels file is the images file with "images-idx3" → "labels-idx1" (the MNIST naming).
            std::string labels = file.path;
            for (auto [from, to] : {std::pair{"images-idx3", "labels-idx1"}, std::pair{"images.idx3", "labels.idx1"}})
                if (size_t at = labels.find(from); at != std::string::npos)
                    labels.replace(at, std::strlen(from), to);
            if (labels != file.path && manifest.find(labels)) {
                const auto label_file = read_idx(absolute_path(root, labels), 1, samples);
                if (!label_file) {
                    error = label_file.error();
                    return false;
                }
                if (int64_t(label_file->dims[0]) != set.count) {
                    error = absolute_path(root, labels) + ": " + std::to_string(label_file->dims[0]) + " labels for " +
                            std::to_string(set.count) + " images in " + file.path;
                    return false;
                }
                set.labels = labels;
                set.sample_labels.assign(label_file->data.begin(), label_file->data.end());
            }
            preview.idx.push_back(std::move(set));
        } else if (is_idx_name(name, "idx1")) {
            if (const auto labels = read_idx(absolute, 1, 0); !labels) {
                error = labels.error();
                return false;
            }
        } else if (ends_with(lower(name), ".csv")) {
            CsvTable table;
            if (!read_csv(absolute, file.path, table, samples, error))
                return false;
            preview.tables.push_back(std::move(table));
        } else if (const std::string extension = lower(fs::path(name).extension().string());
                   extension == ".png" || extension == ".jpg" || extension == ".jpeg") {
            if (!check_image(absolute, extension, error))
                return false;
            ++images;
            const std::string parent = fs::path(file.path).parent_path().filename().string();
            if (!parent.empty()) {
                ImageClass& cls = classes[parent];
                cls.name = parent;
                ++cls.count;
                if (static_cast<int>(cls.samples.size()) < 4)
                    cls.samples.push_back(file.path);
            }
        }
    }
    for (auto& [name, cls] : classes)
        preview.classes.push_back(std::move(cls));
    if (!preview.idx.empty()) {
        preview.format = "idx";
        int64_t total = 0;
        for (const IdxSet& set : preview.idx)
            total += set.count;
        preview.summary = std::to_string(preview.idx.size()) + " IDX image set(s), " + std::to_string(total) + " images of " +
                          std::to_string(preview.idx.front().height) + "×" + std::to_string(preview.idx.front().width);
    } else if (!preview.tables.empty()) {
        preview.format = "csv";
        preview.summary = std::to_string(preview.tables.size()) + " CSV table(s), " +
                          std::to_string(preview.tables.front().header.size()) + " columns, " +
                          std::to_string(preview.tables.front().row_count) + " rows in " + preview.tables.front().path;
        if (const std::string label = describe_label_column(preview.tables.front()); !label.empty())
            preview.summary += "\n" + label;
    } else if (preview.classes.size() >= 2 && images * 2 >= static_cast<int64_t>(manifest.files.size())) {
        preview.format = "image-folder";
        preview.summary = std::to_string(images) + " images in " + std::to_string(preview.classes.size()) + " class folders";
    } else {
        preview.format = "files";
        preview.classes.clear();
        preview.summary = std::to_string(manifest.files.size()) + " files (no format recognised: no preview)";
    }
    return true;
}

} // namespace traindeck::dataset
