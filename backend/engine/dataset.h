#pragma once
// In-memory datasets: IDX image sets (gzip or plain, as Debian's dataset-fashion-mnist ships them)
// and CSV tables (numeric feature columns plus one label column).
#include "expected.h"

#include <cstdint>
#include <string>
#include <vector>

namespace traindeck::engine {

struct Dataset {
    // Samples are rows of `features()` floats; images are NHWC.
    std::vector<float> x;
    std::vector<int32_t> y;
    int height = 1, width = 1, channels = 1;
    int classes = 0;
    std::vector<std::string> class_names; // CSV string labels, in class-index order

    size_t size() const { return y.size(); }
    size_t features() const { return static_cast<size_t>(height) * width * channels; }
};

// Pixels are scaled to [0, 1]. Every header field and length is checked against the file.
Expected<Dataset> load_idx(const std::string& images_path, const std::string& labels_path);
// First row is the header. Labels may be integers or strings (strings map to sorted class indices;
// pass known class names to keep a test file's indices equal to its training file's).
Expected<Dataset> load_csv(const std::string& path, const std::string& label_column,
                           const std::vector<std::string>& known_classes = {});

// Moves the last `fraction` of a shuffled order of `data` into the returned validation set.
Dataset split_validation(Dataset& data, double fraction, uint64_t seed);

struct Normalization {
    std::vector<float> mean, inverse_std; // one per feature (CSV) or one per channel (images)
};
Normalization fit_normalization(const Dataset& data);
void apply_normalization(Dataset& data, const Normalization& norm);

} // namespace traindeck::engine
