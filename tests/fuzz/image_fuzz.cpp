// Fuzz target: the image folder reader's two readers of outside bytes. Input: one mode byte, then the data.
//   mode even: an image file (PNG or JPEG, or anything) decoded by decode_image() to a size and channel count the
//     next three bytes choose; it decodes into exactly height × width × channels bytes or says why not.
//   mode odd: a cache file damaged by the data (a 2-byte big-endian offset, then bytes written over the valid cache
//     of a small folder from there); loading the folder again never fails, and unless it says it mapped the cache,
//     its pixels and labels are the folder's own (a damaged cache is decoded again, never trained on).
#include "dataset.h"
#include "fuzzsupport.h"
#include "imagefolder.h"

#include <cstdint>
#include <fstream>
#include <vector>

#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>

using traindeck::fuzz::TempFolder;
using namespace traindeck::engine;

namespace {

std::vector<float> all_rows(const Dataset& data) {
    std::vector<float> buffer;
    const float* rows = data.batch(0, data.size(), buffer);
    return {rows, rows + data.size() * data.features()};
}

struct Folder {
    TempFolder temp{"traindeck-fuzz-image"};
    ImageFolderOptions options;
    std::string cache_file;
    std::vector<float> pixels;
    std::vector<int32_t> labels;

    Folder() {
        for (int c = 0; c < 2; ++c)
            for (int i = 0; i < 3; ++i) {
                std::vector<uint8_t> image(6 * 5 * 3);
                for (size_t p = 0; p < image.size(); ++p)
                    image[p] = static_cast<uint8_t>(40 * c + 7 * i + p);
                const std::string dir = temp.path() + "/images/class" + std::to_string(c);
                std::filesystem::create_directories(dir);
                FUZZ_CHECK(stbi_write_png((dir + "/" + std::to_string(i) + ".png").c_str(), 6, 5, 3, image.data(), 18),
                           "cannot write the folder's images");
            }
        options.cache_dir = temp.path() + "/cache";
        ImageFolderReport report;
        auto data = load_image_folder(temp.path() + "/images", options, {}, report);
        FUZZ_CHECK(data && !report.cache_path.empty(), "the small folder does not load and cache");
        cache_file = report.cache_path;
        pixels = all_rows(*data);
        labels = data->y;
    }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 4)
        return 0;
    if ((data[0] & 1) == 0) {
        const int height = 1 + data[1] % 40, width = 1 + data[2] % 40, channels = (data[3] & 1) ? 3 : 1;
        const std::string bytes(reinterpret_cast<const char*>(data + 4), size - 4);
        std::vector<uint8_t> out(static_cast<size_t>(height) * width * channels);
        const std::string error =
            decode_image(bytes, height, width, channels, (data[3] & 2) ? "crop" : "pad", out.data());
        int w = 0, h = 0, c = 0;
        if (error.empty())
            FUZZ_CHECK(image_info(bytes, w, h, c) && w > 0 && h > 0, "a decoded image without a readable header");
        return 0;
    }

    static Folder folder;
    const size_t offset = (size_t(data[1]) << 8) | data[2];
    {
        std::fstream cache(folder.cache_file, std::ios::in | std::ios::out | std::ios::binary);
        FUZZ_CHECK(cache.good(), "the cache file is gone");
        cache.seekp(static_cast<std::streamoff>(offset));
        cache.write(reinterpret_cast<const char*>(data + 3), static_cast<std::streamsize>(size - 3));
    }
    ImageFolderOptions options = folder.options;
    ImageFolderReport report;
    auto loaded = load_image_folder(folder.temp.path() + "/images", options, {}, report);
    FUZZ_CHECK(loaded, "a damaged cache made the folder fail to load");
    FUZZ_CHECK(loaded->size() <= folder.labels.size(), "more images than the folder holds");
    for (int32_t label : loaded->y)
        FUZZ_CHECK(label >= 0 && label < loaded->classes, "a label outside [0, classes)");
    if (!report.from_cache) {
        FUZZ_CHECK(!report.cache_note.empty(), "a cache passed over without saying why");
        FUZZ_CHECK(loaded->y == folder.labels && all_rows(*loaded) == folder.pixels,
                   "a damaged cache changed the images");
    }
    return 0;
}
