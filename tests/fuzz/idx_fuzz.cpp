// Fuzz target: the two IDX readers, the engine's (load_idx: what a built-in job trains on) and the dataset
// inspection's (inspect_dataset: what the console checks before it registers a version), on the same pair of files.
// Input: a 2-byte big-endian length L, L bytes of the labels file, then the images file (either may be gzip).
// Properties: a refusal says why; a loaded set has one label per image, height × width floats in [0, 1] per
// image and labels below its class count; a preview keeps no more samples than it was asked for.
#include "dataset.h"
#include "fuzzsupport.h"
#include "inspect.h"

#include <cstdint>
#include <fstream>

using traindeck::fuzz::MemoryFile;
using traindeck::fuzz::TempFolder;

namespace {

void write_file(const std::string& path, const uint8_t* data, size_t size) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    FUZZ_CHECK(out.good(), "cannot write a file in the temp folder");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 2)
        return 0;
    const size_t labels_size = std::min<size_t>((size_t(data[0]) << 8) | data[1], size - 2);
    const uint8_t* labels = data + 2;
    const uint8_t* images = labels + labels_size;
    const size_t images_size = size - 2 - labels_size;

    static MemoryFile images_file("idx-images"), labels_file("idx-labels");
    images_file.replace(images, images_size);
    labels_file.replace(labels, labels_size);
    const auto loaded = traindeck::engine::load_idx(images_file.path(), labels_file.path());
    if (!loaded) {
        FUZZ_CHECK(!loaded.error().empty(), "a refused IDX pair without a message");
    } else {
        const traindeck::engine::Dataset& set = *loaded;
        FUZZ_CHECK(set.height >= 0 && set.width >= 0 && set.channels == 1, "an image shape out of range");
        FUZZ_CHECK(set.x.size() == set.size() * set.features(), "pixels do not fill size × height × width");
        for (float pixel : set.x)
            FUZZ_CHECK(pixel >= 0.0f && pixel <= 1.0f, "a pixel outside [0, 1]");
        for (int32_t label : set.y)
            FUZZ_CHECK(label >= 0 && label < set.classes, "a label outside [0, classes)");
    }

    // The inspection finds the pair by its MNIST names, as it does in a registered dataset folder.
    static TempFolder folder("traindeck-fuzz-idx");
    const std::string images_name = "train-images-idx3-ubyte", labels_name = "train-labels-idx1-ubyte";
    write_file(folder.path() + "/" + images_name, images, images_size);
    write_file(folder.path() + "/" + labels_name, labels, labels_size);
    traindeck::dataset::Manifest manifest;
    manifest.files = {{images_name, static_cast<int64_t>(images_size), {}, {}}, {labels_name, static_cast<int64_t>(labels_size), {}, {}}};
    traindeck::dataset::Preview preview;
    std::string error;
    constexpr int kSamples = 4;
    if (!traindeck::dataset::inspect_dataset(folder.path(), manifest, preview, error, kSamples)) {
        FUZZ_CHECK(!error.empty(), "a refused IDX dataset without a message");
        return 0;
    }
    FUZZ_CHECK(preview.format == "idx" && preview.idx.size() == 1, "an IDX pair not previewed as one IDX set");
    const traindeck::dataset::IdxSet& set = preview.idx.front();
    FUZZ_CHECK(set.count >= 0 && set.height >= 0 && set.width >= 0, "a preview shape out of range");
    FUZZ_CHECK(set.pixels.size() <= size_t(kSamples) * size_t(set.height) * size_t(set.width), "more preview pixels than samples");
    FUZZ_CHECK(set.sample_labels.size() <= size_t(kSamples), "more preview labels than samples");
    return 0;
}
