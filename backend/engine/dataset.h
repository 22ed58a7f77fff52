#pragma once
// Datasets: IDX image sets (gzip or plain, as Debian's dataset-fashion-mnist ships them) and CSV tables (numeric
// feature columns plus one label column) in memory as floats; image folders (imagefolder.h) as bytes mapped from
// their cache.
#include "expected.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace traindeck::engine {

// Same-sized rows of bytes (HWC uint8 images), held in memory or mapped read-only from a file.
class ByteRows {
public:
    ByteRows(std::vector<uint8_t> bytes, size_t row_bytes);
    // rows * row_bytes bytes at offset of path; the mapping lives as long as this object.
    static Expected<std::shared_ptr<const ByteRows>> map(const std::string& path, size_t offset, size_t rows,
                                                         size_t row_bytes);
    ~ByteRows();
    ByteRows(const ByteRows&) = delete;
    ByteRows& operator=(const ByteRows&) = delete;

    const uint8_t* row(size_t i) const { return base_ + i * row_bytes_; }
    size_t rows() const { return rows_; }

private:
    ByteRows() = default;
    std::vector<uint8_t> owned_;
    void* mapping_ = nullptr;
    size_t mapped_bytes_ = 0;
    const uint8_t* base_ = nullptr;
    size_t rows_ = 0, row_bytes_ = 0;
};

struct Normalization {
    std::vector<float> mean, inverse_std; // one per feature (CSV) or one per channel (images)
    bool empty() const { return mean.empty(); }
};

struct Dataset {
    // Samples are rows of `features()` floats; images are NHWC. Either in x, or (image folders) sample i is the
    // byte row bytes->row(rows[i]), each byte read as byte / 255 and then normalised by `byte_norm`.
    std::vector<float> x;
    std::shared_ptr<const ByteRows> bytes;
    std::vector<uint32_t> rows;
    Normalization byte_norm;
    std::vector<int32_t> y;    // class index per sample (a regression: all 0, one class)
    std::vector<float> target; // a regression: the value to predict per sample (empty when classifying)
    int height = 1, width = 1, channels = 1;
    int classes = 0;
    std::vector<std::string> class_names;   // CSV string labels or image folders' class folders, in class-index order
    std::vector<std::string> feature_names; // CSV: each feature's column ("age", or "colour=red" for a one-hot one)

    size_t size() const { return y.size(); }
    bool regression() const { return !target.empty(); }
    size_t features() const { return static_cast<size_t>(height) * width * channels; }
    bool is_image() const { return height > 1; }
    // Sample i's features into out (features() floats).
    void copy_row(size_t i, float* out) const;
    // Samples [start, start + count) as contiguous floats: a pointer into x, or buffer filled and returned.
    const float* batch(size_t start, size_t count, std::vector<float>& buffer) const;
    // The samples at `indices`, in that order (their bytes shared, not copied).
    Dataset subset(const std::vector<size_t>& indices) const;
};

// Pixels are scaled to [0, 1]. Every header field and length is checked against the file.
Expected<Dataset> load_idx(const std::string& images_path, const std::string& labels_path);
// How a training CSV's feature columns become numbers, learned from it and applied as is to its test file: a column
// whose every present cell is a number is numeric (missing cells filled with its mean); any other is categorical,
// one-hot over its values in byte order (missing: its most frequent value; a value the training file never had:
// all zeros, counted).
struct CsvEncoding {
    std::vector<std::string> columns;                 // feature columns, in file order
    std::vector<std::vector<std::string>> categories; // per column: empty = numeric, else its values (one-hot)
    std::vector<float> fill;                          // per column: the mean, or the index of the most frequent value
};
struct CsvReport {
    size_t rows_dropped = 0, cells_filled = 0, unseen_values = 0;
};
struct CsvOptions {
    std::string missing = "error";         // a missing cell (empty, NA, N/A, NaN, null, ?): error | drop | fill
    bool regression = false;               // the label column is a number to predict (target), not a class
    const CsvEncoding* encoding = nullptr; // a test file: the training file's encoding; null: learn it here
    CsvEncoding* learned = nullptr;        // where the learned encoding goes (when learning)
    CsvReport* report = nullptr;
};

// First row is the header. Labels may be integers or strings (strings map to sorted class indices;
// pass known class names to keep a test file's indices equal to its training file's). A regression's label column
// holds finite numbers (any other cell is an error naming its line); a missing one drops its row under "drop" and
// "fill" (a target is never made up), and is an error otherwise.
Expected<Dataset> load_csv(const std::string& path, const std::string& label_column,
                           const std::vector<std::string>& known_classes = {}, const CsvOptions& options = {});

// Moves the last `fraction` of a shuffled order of `data` into the returned validation set. Stratified: the same
// fraction of each class (rounded down per class), so a small class is never missing from validation by chance.
Dataset split_validation(Dataset& data, double fraction, uint64_t seed, bool stratified = false);

Normalization fit_normalization(const Dataset& data);
// A regression trains on standardised targets, (target - mean) / scale, with the training split's mean and
// deviation, and turns its outputs back (output * scale + mean) for every number it reports and in the export.
struct TargetScale {
    float mean = 0.0f, scale = 1.0f;
};
TargetScale fit_target_scale(const Dataset& data);
// A regression's figures for predictions in the target's units, the trainer's evaluations and the export's alike:
// mean squared and mean absolute error, and R² (1 − SSE / the targets' own total sum of squares; targets that are
// all equal have nothing to explain: 1 when every prediction is exact, else 0). Empty: all 0.
struct RegressionErrors {
    double mse = 0.0, mae = 0.0, r2 = 0.0;
};
RegressionErrors regression_errors(const std::vector<float>& targets, const std::vector<float>& predicted);
// Floats are normalised in place; bytes keep their bytes and are normalised as they are read.
void apply_normalization(Dataset& data, const Normalization& norm);

} // namespace traindeck::engine
