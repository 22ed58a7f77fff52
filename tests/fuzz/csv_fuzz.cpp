// Fuzz target: the two CSV readers, the engine's (load_csv: what a built-in job trains on) and the dataset
// inspection's (inspect_dataset on a one-file dataset: what the console checks and previews), on the same file.
// Input: one option byte (bit 0: the label column is named "label", else the last column; bit 1: the training
// file's classes are "cat", "dog", as for a test file; bits 2-3: missing cells are an error (0, 1), dropped (2) or
// filled (3)), then the CSV text.
// Properties: a refusal says why; a loaded table has `features` floats per row, finite, a name per feature, and labels
// below its class count (named when they are strings); read again with the encoding it taught (as a test file is),
// the same file gives the same numbers and no value the encoding lacks; a preview keeps whole rows, one type per
// column, and no more rows than asked.
#include "dataset.h"
#include "fuzzsupport.h"
#include "inspect.h"

#include <cmath>
#include <cstdint>

using traindeck::fuzz::MemoryFile;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1)
        return 0;
    const uint8_t options = data[0];
    static MemoryFile file("table.csv");
    file.replace(data + 1, size - 1);

    const std::string label_column = options & 1 ? "label" : "";
    const std::vector<std::string> known_classes = options & 2 ? std::vector<std::string>{"cat", "dog"} : std::vector<std::string>{};
    const int policy = (options >> 2) & 3;
    const std::string missing = policy == 2 ? "drop" : policy == 3 ? "fill" : "error";
    traindeck::engine::CsvEncoding encoding;
    const auto loaded = traindeck::engine::load_csv(file.path(), label_column, known_classes,
                                                    {.missing = missing, .learned = &encoding});
    if (!loaded) {
        FUZZ_CHECK(!loaded.error().empty(), "a refused CSV without a message");
    } else {
        const traindeck::engine::Dataset& set = *loaded;
        FUZZ_CHECK(set.height == 1 && set.channels == 1 && set.width >= 1, "a table shape out of range");
        FUZZ_CHECK(set.size() > 0 && set.x.size() == set.size() * set.features(), "values do not fill rows × features");
        for (float value : set.x)
            FUZZ_CHECK(std::isfinite(value), "a value that is not finite");
        FUZZ_CHECK(set.classes > 0, "no classes");
        for (int32_t label : set.y)
            FUZZ_CHECK(label >= 0 && label < set.classes, "a label outside [0, classes)");
        FUZZ_CHECK(set.class_names.empty() || static_cast<int>(set.class_names.size()) == set.classes,
                   "class names do not match the class count");
        FUZZ_CHECK(set.feature_names.size() == set.features(), "not one name per feature");
        traindeck::engine::CsvReport report;
        const auto again = traindeck::engine::load_csv(file.path(), label_column, set.class_names,
                                                       {.missing = missing, .encoding = &encoding, .report = &report});
        FUZZ_CHECK(static_cast<bool>(again), "the file refused under the encoding it taught");
        FUZZ_CHECK(again->x == set.x && again->y == set.y, "the file reads differently under its own encoding");
        FUZZ_CHECK(report.unseen_values == 0, "a value of the file missing from the encoding it taught");
    }

    // A dataset registered from one file: the root is the file itself, the manifest holds it under its name.
    traindeck::dataset::Manifest manifest;
    manifest.files = {{"table.csv", static_cast<int64_t>(size - 1), {}, {}}};
    traindeck::dataset::Preview preview;
    std::string error;
    constexpr int kSamples = 3;
    if (!traindeck::dataset::inspect_dataset(file.path(), manifest, preview, error, kSamples)) {
        FUZZ_CHECK(!error.empty(), "a refused CSV dataset without a message");
        return 0;
    }
    FUZZ_CHECK(preview.format == "csv" && preview.tables.size() == 1, "a CSV file not previewed as one table");
    const traindeck::dataset::CsvTable& table = preview.tables.front();
    FUZZ_CHECK(table.types.size() == table.header.size(), "not one type per column");
    FUZZ_CHECK(table.rows.size() <= size_t(kSamples) && static_cast<int64_t>(table.rows.size()) <= table.row_count,
               "more preview rows than asked for or than the table has");
    for (const auto& row : table.rows)
        FUZZ_CHECK(row.size() == table.header.size(), "a preview row with the wrong number of fields");
    return 0;
}
