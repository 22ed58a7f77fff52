#include "dataset.h"

#include "csv.h"
#include "idx.h"
#include "rng.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <sstream>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace traindeck::engine {

ByteRows::ByteRows(std::vector<uint8_t> bytes, size_t row_bytes)
    : owned_(std::move(bytes)), base_(owned_.data()), rows_(row_bytes ? owned_.size() / row_bytes : 0),
      row_bytes_(row_bytes) {}

Expected<std::shared_ptr<const ByteRows>> ByteRows::map(const std::string& path, size_t offset, size_t rows,
                                                        size_t row_bytes) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return Error{path + ": cannot open: " + std::strerror(errno)};
    struct stat st {};
    const size_t needed = offset + rows * row_bytes;
    if (::fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < needed) {
        ::close(fd);
        return Error{path + ": shorter than its header says (" + std::to_string(st.st_size) + " of " +
                     std::to_string(needed) + " bytes)"};
    }
    std::shared_ptr<ByteRows> mapped(new ByteRows());
    mapped->rows_ = rows;
    mapped->row_bytes_ = row_bytes;
    if (needed > 0) {
        void* address = ::mmap(nullptr, needed, PROT_READ, MAP_PRIVATE, fd, 0);
        if (address == MAP_FAILED) {
            const int error = errno;
            ::close(fd);
            return Error{path + ": cannot map: " + std::strerror(error)};
        }
        mapped->mapping_ = address;
        mapped->mapped_bytes_ = needed;
        mapped->base_ = static_cast<const uint8_t*>(address) + offset;
    }
    ::close(fd);
    return std::shared_ptr<const ByteRows>(std::move(mapped));
}

ByteRows::~ByteRows() {
    if (mapping_)
        ::munmap(mapping_, mapped_bytes_);
}

void Dataset::copy_row(size_t i, float* out) const {
    const size_t n = features();
    if (!bytes) {
        std::memcpy(out, x.data() + i * n, sizeof(float) * n);
        return;
    }
    const uint8_t* row = bytes->row(rows[i]);
    if (byte_norm.empty()) {
        for (size_t f = 0; f < n; ++f)
            out[f] = row[f] * (1.0f / 255.0f);
        return;
    }
    const size_t groups = byte_norm.mean.size(); // one per channel, or (a one-row image) one per feature
    for (size_t f = 0; f < n; ++f) {
        const size_t g = groups == n ? f : f % groups;
        out[f] = (row[f] * (1.0f / 255.0f) - byte_norm.mean[g]) * byte_norm.inverse_std[g];
    }
}

const float* Dataset::batch(size_t start, size_t count, std::vector<float>& buffer) const {
    const size_t n = features();
    if (!bytes)
        return x.data() + start * n;
    buffer.resize(count * n);
    for (size_t i = 0; i < count; ++i)
        copy_row(start + i, buffer.data() + i * n);
    return buffer.data();
}

Dataset Dataset::subset(const std::vector<size_t>& indices) const {
    Dataset out;
    out.bytes = bytes;
    out.byte_norm = byte_norm;
    out.height = height;
    out.width = width;
    out.channels = channels;
    out.classes = classes;
    out.class_names = class_names;
    out.feature_names = feature_names;
    const size_t n = features();
    out.y.reserve(indices.size());
    if (bytes)
        out.rows.reserve(indices.size());
    else
        out.x.reserve(indices.size() * n);
    if (!target.empty())
        out.target.reserve(indices.size());
    for (size_t i : indices) {
        out.y.push_back(y[i]);
        if (!target.empty())
            out.target.push_back(target[i]);
        if (bytes)
            out.rows.push_back(rows[i]);
        else
            out.x.insert(out.x.end(), x.begin() + i * n, x.begin() + (i + 1) * n);
    }
    return out;
}

namespace {

bool parse_float(const std::string& text, float& out) {
    const std::string t = trim_field(text);
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

namespace {

// A cell the table leaves empty: "", NA, N/A, NaN, null, ? (any case).
bool is_missing(const std::string& cell) {
    std::string lower = trim_field(cell);
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    return lower.empty() || lower == "na" || lower == "n/a" || lower == "nan" || lower == "null" || lower == "?";
}

} // namespace

Expected<Dataset> load_csv(const std::string& path, const std::string& label_column,
                           const std::vector<std::string>& known_classes, const CsvOptions& options) {
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
                                     [&](const std::string& name) { return trim_field(name) == label_column; });
        if (it == header.end())
            return Error{path + ": no column named \"" + label_column + "\" in the header"};
        label_index = static_cast<int>(it - header.begin());
    }
    if (header.size() < 2)
        return Error{path + ": needs at least one feature column and one label column"};
    CsvReport unreported;
    CsvReport& report = options.report ? *options.report : unreported;
    const size_t columns = header.size() - 1;
    auto feature_column = [&](size_t f) { return f < static_cast<size_t>(label_index) ? f : f + 1; };

    // The table as text first: whether a column is numeric or categorical is known only once all of it is read.
    std::vector<std::vector<std::string>> rows; // feature cells, in feature order
    std::vector<uint8_t> missing_cells;         // rows × columns: the cell is missing (judged once, here)
    std::vector<uint8_t> row_missing;           // the row has a missing cell
    std::vector<size_t> row_lines;
    std::vector<std::string> raw_labels;
    size_t line_number = 1;
    while (std::getline(in, line)) {
        ++line_number;
        if (trim_field(line).empty() || trim_field(line) == "\r")
            continue;
        std::vector<std::string> cells = split_csv_line(line);
        if (cells.size() != header.size())
            return Error{path + ":" + std::to_string(line_number) + ": " + std::to_string(cells.size()) +
                         " cells, but the header has " + std::to_string(header.size()) + " columns"};
        if (is_missing(cells[label_index])) {
            // A regression's "fill" drops the row too: a made-up target would be trained on as truth.
            if (options.missing != "drop" && !(options.regression && options.missing == "fill"))
                return Error{path + ":" + std::to_string(line_number) +
                             ": the label is missing (set data.missing to "
                             "\"drop\" to leave such rows out)"};
            ++report.rows_dropped;
            continue;
        }
        raw_labels.push_back(trim_field(cells[label_index]));
        cells.erase(cells.begin() + label_index);
        uint8_t any = 0;
        for (const std::string& cell : cells) {
            missing_cells.push_back(is_missing(cell) ? 1 : 0);
            any |= missing_cells.back();
        }
        row_missing.push_back(any);
        rows.push_back(std::move(cells));
        row_lines.push_back(line_number);
    }
    if (raw_labels.empty())
        return Error{path + ": no data rows after the header"};

    // The encoding: the training file's (learned here), or the one given (a test file reads as its training file).
    CsvEncoding learned;
    const CsvEncoding* encoding = options.encoding;
    if (!encoding) {
        learned.columns.resize(columns);
        learned.categories.resize(columns);
        learned.fill.assign(columns, 0.0f);
        for (size_t f = 0; f < columns; ++f) {
            learned.columns[f] = trim_field(header[feature_column(f)]);
            double sum = 0;
            size_t present = 0, numbers = 0, first_text = rows.size();
            std::map<std::string, size_t> counts;
            for (size_t r = 0; r < rows.size(); ++r) {
                if (missing_cells[r * columns + f])
                    continue;
                float value = 0.0f;
                if (parse_float(rows[r][f], value)) {
                    sum += value;
                    ++numbers;
                } else if (first_text == rows.size()) {
                    first_text = r;
                }
                ++present;
                ++counts[trim_field(rows[r][f])];
            }
            if (present == 0)
                return Error{path + ": column \"" + learned.columns[f] + "\" has no values at all"};
            // Mostly numbers with some text is a typo, not a category: said at the first text cell.
            if (numbers > 0 && numbers >= present - numbers)
                if (first_text < rows.size())
                    return Error{path + ":" + std::to_string(row_lines[first_text]) + ": column \"" +
                                 learned.columns[f] + "\": \"" + rows[first_text][f] +
                                 "\" is not a number (most of the column is; fix the cell or mark it missing)"};
            const bool numeric = numbers == present;
            if (numeric) {
                learned.fill[f] = static_cast<float>(sum / static_cast<double>(present)); // the mean
                continue;
            }
            // An identifier, a name or free text would be a one-hot column per row: refused, naming the column.
            if (counts.size() > 1000 || (counts.size() > 50 && counts.size() * 2 > present))
                return Error{path + ": column \"" + learned.columns[f] + "\" has " + std::to_string(counts.size()) +
                             " different text values in " + std::to_string(present) +
                             " rows — an identifier or free text, not a category; drop the column (or make it "
                             "numeric)"};
            for (const auto& [value, count] : counts)
                learned.categories[f].push_back(value); // std::map: byte order, stable everywhere
            // The mode (the first in byte order among equals), as its index.
            const auto mode = std::max_element(counts.begin(), counts.end(),
                                               [](const auto& a, const auto& b) { return a.second < b.second; });
            learned.fill[f] = static_cast<float>(std::distance(counts.begin(), mode));
        }
        encoding = &learned;
    } else if (encoding->columns.size() != columns) {
        return Error{path + ": has " + std::to_string(columns) + " feature columns, but the training file has " +
                     std::to_string(encoding->columns.size())};
    }

    Dataset data;
    size_t width = 0;
    for (size_t f = 0; f < columns; ++f) {
        if (encoding->categories[f].empty()) {
            data.feature_names.push_back(encoding->columns[f]);
            ++width;
        } else {
            for (const std::string& value : encoding->categories[f])
                data.feature_names.push_back(encoding->columns[f] + "=" + value);
            width += encoding->categories[f].size();
        }
    }
    data.width = static_cast<int>(width);
    std::vector<std::string> labels;
    data.x.reserve(rows.size() * width);
    for (size_t r = 0; r < rows.size(); ++r) {
        const std::vector<std::string>& row = rows[r];
        auto where = [&] { return path + ":" + std::to_string(row_lines[r]) + ": column \""; };
        if (row_missing[r] && options.missing == "drop") {
            ++report.rows_dropped;
            continue;
        }
        for (size_t f = 0; f < columns; ++f) {
            const std::vector<std::string>& categories = encoding->categories[f];
            const bool missing = missing_cells[r * columns + f] != 0;
            if (missing && options.missing != "fill")
                return Error{where() + encoding->columns[f] +
                             "\" is missing (set data.missing to \"drop\" or \"fill\")"};
            report.cells_filled += missing;
            if (categories.empty()) {
                float value = encoding->fill[f];
                if (!missing && !parse_float(row[f], value))
                    return Error{where() + encoding->columns[f] + "\": \"" + row[f] + "\" is not a number"};
                data.x.push_back(value);
                continue;
            }
            // One-hot over the training file's values; a value it never had is all zeros, and counted.
            size_t hot = missing ? static_cast<size_t>(encoding->fill[f]) : categories.size();
            if (!missing) {
                const auto it = std::lower_bound(categories.begin(), categories.end(), trim_field(row[f]));
                if (it != categories.end() && *it == trim_field(row[f]))
                    hot = static_cast<size_t>(it - categories.begin());
                else
                    ++report.unseen_values;
            }
            for (size_t k = 0; k < categories.size(); ++k)
                data.x.push_back(k == hot ? 1.0f : 0.0f);
        }
        if (options.regression) {
            float value = 0.0f;
            if (!parse_float(raw_labels[r], value))
                return Error{path + ":" + std::to_string(row_lines[r]) + ": the target \"" +
                             trim_field(header[label_index]) + "\" is \"" + raw_labels[r] +
                             "\", not a finite number (a regression predicts a number)"};
            data.target.push_back(value);
        }
        labels.push_back(raw_labels[r]);
    }
    if (labels.empty())
        return Error{path + ": every row has a missing value, so none is left to train on"};
    if (!options.encoding && options.learned)
        *options.learned = learned;
    if (options.regression) {
        data.y.assign(data.target.size(), 0);
        data.classes = 1;
        return data;
    }
    // Labels: all integers → used as class indices; otherwise strings → sorted distinct names.
    bool all_integers = known_classes.empty();
    for (const auto& label : labels) {
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
        for (const auto& label : labels) {
            data.y.push_back(std::stoi(label));
            max_label = std::max(max_label, data.y.back());
        }
        data.classes = max_label + 1;
    } else {
        data.class_names = known_classes;
        if (data.class_names.empty()) {
            data.class_names = labels;
            std::sort(data.class_names.begin(), data.class_names.end());
            data.class_names.erase(std::unique(data.class_names.begin(), data.class_names.end()), data.class_names.end());
        }
        std::map<std::string, int> index;
        for (size_t i = 0; i < data.class_names.size(); ++i)
            index[data.class_names[i]] = static_cast<int>(i);
        for (size_t row = 0; row < labels.size(); ++row) {
            const auto it = index.find(labels[row]);
            if (it == index.end())
                return Error{path + ": label \"" + labels[row] + "\" does not occur in the training data"};
            data.y.push_back(it->second);
        }
        data.classes = static_cast<int>(data.class_names.size());
    }
    return data;
}

Dataset split_validation(Dataset& data, double fraction, uint64_t seed, bool stratified) {
    const size_t n = data.size();
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    Rng rng(seed ^ 0x5eedULL);
    auto shuffle = [&rng](std::vector<size_t>& items) {
        for (size_t i = items.size(); i > 1; --i)
            std::swap(items[i - 1], items[rng.below(i)]);
    };
    std::vector<size_t> train_rows, val_rows;
    if (stratified) {
        // Each class shuffled on its own, its last floor(count * fraction) to validation; then both sets in one
        // shuffled order, so that no later step sees the samples grouped by class.
        std::vector<std::vector<size_t>> by_class(std::max(data.classes, 1));
        for (size_t i = 0; i < n; ++i)
            by_class[std::clamp(data.y[i], 0, static_cast<int>(by_class.size()) - 1)].push_back(i);
        for (auto& members : by_class) {
            shuffle(members);
            const size_t val_count = static_cast<size_t>(std::floor(members.size() * fraction));
            train_rows.insert(train_rows.end(), members.begin(), members.end() - val_count);
            val_rows.insert(val_rows.end(), members.end() - val_count, members.end());
        }
        shuffle(train_rows);
        shuffle(val_rows);
    } else {
        const size_t val_count = static_cast<size_t>(std::floor(n * fraction));
        if (val_count > 0)
            shuffle(order);
        train_rows.assign(order.begin(), order.end() - val_count);
        val_rows.assign(order.end() - val_count, order.end());
    }
    Dataset val = data.subset(val_rows);
    data = data.subset(train_rows);
    return val;
}

Normalization fit_normalization(const Dataset& data) {
    // Images: one statistic per channel; tables: one per column.
    const bool image = data.height > 1;
    const size_t groups = image ? data.channels : data.features();
    std::vector<double> sum(groups, 0.0), sum_sq(groups, 0.0);
    const size_t features = data.features();
    if (data.bytes) {
        // Bytes: a histogram per channel, then the sums of the values each byte stands for.
        std::vector<std::array<uint64_t, 256>> counts(groups, std::array<uint64_t, 256>{});
        for (size_t i = 0; i < data.size(); ++i) {
            const uint8_t* row = data.bytes->row(data.rows[i]);
            for (size_t f = 0; f < features; ++f)
                ++counts[f % groups][row[f]];
        }
        for (size_t g = 0; g < groups; ++g)
            for (int v = 0; v < 256; ++v) {
                const double value = v * (1.0f / 255.0f);
                sum[g] += counts[g][v] * value;
                sum_sq[g] += counts[g][v] * value * value;
            }
    }
    for (size_t i = 0; i < data.size() && !data.bytes; ++i) {
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

TargetScale fit_target_scale(const Dataset& data) {
    TargetScale result;
    if (data.target.empty())
        return result;
    double sum = 0.0, sum_sq = 0.0;
    for (float t : data.target)
        sum += t;
    const double mean = sum / static_cast<double>(data.target.size());
    for (float t : data.target)
        sum_sq += (t - mean) * (t - mean);
    const double variance = sum_sq / static_cast<double>(data.target.size());
    result.mean = static_cast<float>(mean);
    result.scale = variance > 1e-12 ? static_cast<float>(std::sqrt(variance)) : 1.0f;
    return result;
}

RegressionErrors regression_errors(const std::vector<float>& targets, const std::vector<float>& predicted) {
    RegressionErrors result;
    if (targets.empty())
        return result;
    double squared = 0.0, absolute = 0.0, sum = 0.0;
    for (size_t i = 0; i < targets.size(); ++i) {
        const double error = static_cast<double>(predicted[i]) - targets[i];
        squared += error * error;
        absolute += std::abs(error);
        sum += targets[i];
    }
    const double n = static_cast<double>(targets.size());
    const double mean = sum / n;
    double total = 0.0;
    for (float t : targets)
        total += (t - mean) * (t - mean);
    result.mse = squared / n;
    result.mae = absolute / n;
    result.r2 = total > 0.0 ? 1.0 - squared / total : (squared == 0.0 ? 1.0 : 0.0);
    return result;
}

void apply_normalization(Dataset& data, const Normalization& norm) {
    if (data.bytes) {
        data.byte_norm = norm;
        return;
    }
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
