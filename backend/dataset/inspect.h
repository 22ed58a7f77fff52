#pragma once
// Recognises the dataset formats TrainDeck can preview and checks them before a version is registered:
// IDX image sets (as Debian's dataset-fashion-mnist ships them, gzip or plain), class-per-folder image sets
// (PNG/JPEG) and CSV tables. A recognised file that is broken (a corrupt IDX header, a CSV row with the wrong
// number of fields, an image that is not what its name says) fails the inspection with a message naming it.
#include "manifest.h"

#include <cstdint>
#include <string>
#include <vector>

namespace traindeck::dataset {

struct IdxSet {
    std::string images, labels; // paths relative to the root; labels may be empty
    int64_t count = 0;
    int height = 0, width = 0;
    std::vector<uint8_t> pixels;  // the first samples, height × width bytes each
    std::vector<int> sample_labels;
};

struct ImageClass {
    std::string name;
    int64_t count = 0;
    std::vector<std::string> samples; // relative paths of the first few images
};

struct CsvTable {
    std::string path;
    std::vector<std::string> header, types; // types: "integer", "number" or "text"
    std::vector<std::vector<std::string>> rows; // the first rows
    int64_t row_count = 0;
    // Per column: its distinct values and how many rows have each, in byte order, while there are at most
    // kMaxCsvValues of them (empty past that, or for a column of empty cells); and a numeric column's range.
    static constexpr size_t kMaxCsvValues = 64;
    std::vector<std::vector<std::pair<std::string, int64_t>>> values;
    std::vector<char> too_many_values; // per column: past kMaxCsvValues distinct values
    std::vector<double> low, high;
    // The column a job trains on unless its spec names another (label_column): the last, as the trainer reads it
    // (backend/engine/dataset.cpp); -1 for a table without columns. named_label: another column named label, class,
    // target, y, species, category or outcome (any case), which the preview points out, or -1.
    int label_column = -1;
    int named_label = -1;
};

// What the preview says of a table's label column: its classes and how many rows each ("3 classes: setosa (50), …",
// the first 20; numbers in numeric order), or the range of a numeric target with more values than a class list would
// hold; and a column named like a label that is not the last. Empty when there is no column.
std::string describe_label_column(const CsvTable& table);

struct Preview {
    std::string format; // "idx", "image-folder", "csv" or "files" (nothing recognised: no preview)
    std::string summary;
    std::vector<IdxSet> idx;
    std::vector<ImageClass> classes;
    std::vector<CsvTable> tables;
};

// root is the folder the manifest was made from (or the single file). samples: images or rows kept for display.
bool inspect_dataset(const std::string& root, const Manifest& manifest, Preview& preview, std::string& error,
                     int samples = 32);

} // namespace traindeck::dataset
