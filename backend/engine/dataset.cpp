#include "dataset.h"

#include "csv.h"
#include "idx.h"
#include "rng.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <sstream>

namespace traindeck::engine {
namespace {

std::string trim(const std::string& text) {
    const size_t begin = text.find_first_not_of(" \t");
    if (begin == std::string::npos)
        return {};
    return text.substr(begin, text.find_last_not_of(" \t") - begin + 1);
}

bool parse_float(const std::string& text, float& out) {
    const std::string t = trim(text);
    if (t.empty())
        return false;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
    return ec == std::errc() && end == t.data() + t.size() && std::isfinite(out);
}

} // namespace

Expected<Dataset> load_idx(const std::string& images_path, const std::string& labels_path) {
    const auto images = read_idx(images_path, 3);
    if (!images)
        return Error{images.error()};
    const auto labels = read_idx(labels_path, 1);
    if (!labels)
        return Error{labels.error()};
    if (images->dims[0] != labels->dims[0])
        return Error{images_path + " has " + std::to_string(images->dims[0]) + " images but " + labels_path + " has " +
                     std::to_string(labels->dims[0]) + " labels (mismatched pair of files?)"};
    Dataset data;
    data.height = static_cast<int>(images->dims[1]);
    data.width = static_cast<int>(images->dims[2]);
    const size_t n = images->dims[0], features = data.features();
    data.x.resize(n * features);
    for (size_t i = 0; i < n * features; ++i)
        data.x[i] = images->data[i] * (1.0f / 255.0f);
    data.y.resize(n);
    int max_label = -1;
    for (size_t i = 0; i < n; ++i) {
        data.y[i] = labels->data[i];
        max_label = std::max(max_label, data.y[i]);
    }
    data.classes = max_label + 1;
    return data;
}

Expected<Dataset> load_csv(const std::string& path, const std::string& label_column,
                           const std::vector<std::string>& known_classes) {
    std::ifstream in(path);
    if (!in)
        return Error{path + ": cannot open (does the file exist and is it readable?)"};
    std::string line;
    if (!std::getline(in, line))
        return Error{path + ": empty file (expected a header row of column names)"};
    const std::vector<std::string> header = split_csv_line(line);
    int label_index = static_cast<int>(header.size()) - 1;
    if (!label_column.empty()) {
        const auto it = std::find_if(header.begin(), header.end(),
                                     [&](const std::string& name) { return trim(name) == label_column; });
        if (it == header.end())
            return Error{path + ": no column named \"" + label_column + "\" in the header"};
        label_index = static_cast<int>(it - header.begin());
    }
    if (header.size() < 2)
        return Error{path + ": needs at least one feature column and one label column"};

    Dataset data;
    data.width = static_cast<int>(header.size()) - 1;
    std::vector<std::string> raw_labels;
    size_t line_number = 1;
    while (std::getline(in, line)) {
        ++line_number;
        if (trim(line).empty() || trim(line) == "\r")
            continue;
        const std::vector<std::string> cells = split_csv_line(line);
        if (cells.size() != header.size())
            return Error{path + ":" + std::to_string(line_number) + ": " + std::to_string(cells.size()) +
                         " cells, but the header has " + std::to_string(header.size()) + " columns"};
        for (size_t c = 0; c < cells.size(); ++c) {
            if (static_cast<int>(c) == label_index) {
                raw_labels.push_back(trim(cells[c]));
                continue;
            }
            float value = 0.0f;
            if (!parse_float(cells[c], value))
                return Error{path + ":" + std::to_string(line_number) + ": column \"" + trim(header[c]) + "\": \"" +
                             cells[c] + "\" is not a number"};
            data.x.push_back(value);
        }
    }
    if (raw_labels.empty())
        return Error{path + ": no data rows after the header"};

    // Labels: all integers → used as class indices; otherwise strings → sorted distinct names.
    bool all_integers = known_classes.empty();
    for (const auto& label : raw_labels) {
        int value = 0;
        const auto [end, ec] = std::from_chars(label.data(), label.data() + label.size(), value);
        // Like a negative label, INT_MAX is no class index: the class count (max label + 1) would overflow.
        if (ec != std::errc() || end != label.data() + label.size() || value < 0 || value == std::numeric_limits<int>::max()) {
            all_integers = false;
            break;
        }
    }
    if (all_integers) {
        int max_label = 0;
        for (const auto& label : raw_labels) {
            data.y.push_back(std::stoi(label));
            max_label = std::max(max_label, data.y.back());
        }
        data.classes = max_label + 1;
    } else {
        data.class_names = known_classes;
        if (data.class_names.empty()) {
            data.class_names = raw_labels;
            std::sort(data.class_names.begin(), data.class_names.end());
            data.class_names.erase(std::unique(data.class_names.begin(), data.class_names.end()), data.class_names.end());
        }
        std::map<std::string, int> index;
        for (size_t i = 0; i < data.class_names.size(); ++i)
            index[data.class_names[i]] = static_cast<int>(i);
        for (size_t row = 0; row < raw_labels.size(); ++row) {
            const auto it = index.find(raw_labels[row]);
            if (it == index.end())
                return Error{path + ": label \"" + raw_labels[row] + "\" does not occur in the training data"};
            data.y.push_back(it->second);
        }
        data.classes = static_cast<int>(data.class_names.size());
    }
    return data;
}

Dataset split_validation(Dataset& data, double fraction, uint64_t seed) {
    Dataset val;
    val.height = data.height;
    val.width = data.width;
    val.channels = data.channels;
    val.classes = data.classes;
    val.class_names = data.class_names;
    const size_t n = data.size();
    const size_t val_count = static_cast<size_t>(std::floor(n * fraction));
    if (val_count == 0)
        return val;
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    Rng rng(seed ^ 0x5eedULL);
    for (size_t i = n - 1; i > 0; --i)
        std::swap(order[i], order[rng.below(i + 1)]);
    const size_t features = data.features();
    Dataset train = val;
    for (size_t i = 0; i < n; ++i) {
        Dataset& target = i < n - val_count ? train : val;
        const size_t src = order[i];
        target.x.insert(target.x.end(), data.x.begin() + src * features, data.x.begin() + (src + 1) * features);
        target.y.push_back(data.y[src]);
    }
    data = std::move(train);
    return val;
}

Normalization fit_normalization(const Dataset& data) {
    // Images: one statistic per channel; tables: one per column.
    const bool image = data.height > 1;
    const size_t groups = image ? data.channels : data.features();
    std::vector<double> sum(groups, 0.0), sum_sq(groups, 0.0);
    const size_t features = data.features();
    for (size_t i = 0; i < data.size(); ++i) {
        const float* row = data.x.data() + i * features;
        for (size_t f = 0; f < features; ++f) {
            const size_t g = image ? f % data.channels : f;
            sum[g] += row[f];
            sum_sq[g] += double(row[f]) * row[f];
        }
    }
    const double per_group = image ? double(data.size()) * data.height * data.width : double(data.size());
    Normalization norm;
    for (size_t g = 0; g < groups; ++g) {
        const double mean = sum[g] / per_group;
        const double variance = std::max(0.0, sum_sq[g] / per_group - mean * mean);
        norm.mean.push_back(static_cast<float>(mean));
        norm.inverse_std.push_back(variance > 1e-12 ? static_cast<float>(1.0 / std::sqrt(variance)) : 1.0f);
    }
    return norm;
}

void apply_normalization(Dataset& data, const Normalization& norm) {
    const size_t features = data.features();
    const size_t groups = norm.mean.size();
    for (size_t i = 0; i < data.size(); ++i) {
        float* row = data.x.data() + i * features;
        for (size_t f = 0; f < features; ++f) {
            const size_t g = groups == features ? f : f % groups;
            row[f] = (row[f] - norm.mean[g]) * norm.inverse_std[g];
        }
    }
}

} // namespace traindeck::engine
