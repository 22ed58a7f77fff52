// Image folders as the trainer reads them: real PNG and JPEG files in class folders, decoded, resized, cached and
// mapped; every bad file named; the stratified split; augmentation's transforms and their determinism; and a real
// traindeck-train run on an image folder with augmentation that resumes bit for bit.
#include "augment.h"
#include "base64.h"
#include "checkpoint.h"
#include "dataset.h"
#include "idx.h"
#include "imagefolder.h"
#include "requireall.h"
#include "testsupport.h"
#include "trainer.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>

using namespace traindeck::engine;
using namespace traindeck::test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// A w x h image of `channels` (1 or 3) whose pixel (x, y, c) is value(x, y, c).
template <typename F>
std::vector<uint8_t> pattern(int w, int h, int channels, F value) {
    std::vector<uint8_t> pixels(static_cast<size_t>(w) * h * channels);
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w; ++x)
            for (int c = 0; c < channels; ++c)
                pixels[(static_cast<size_t>(y) * w + x) * channels + c] = static_cast<uint8_t>(value(x, y, c));
    return pixels;
}

void write_png(const std::string& path, int w, int h, int channels, const std::vector<uint8_t>& pixels) {
    fs::create_directories(fs::path(path).parent_path());
    ASSERT_TRUE(stbi_write_png(path.c_str(), w, h, channels, pixels.data(), w * channels)) << path;
}

void write_jpg(const std::string& path, int w, int h, int channels, const std::vector<uint8_t>& pixels) {
    fs::create_directories(fs::path(path).parent_path());
    ASSERT_TRUE(stbi_write_jpg(path.c_str(), w, h, channels, pixels.data(), 100)) << path;
}

std::vector<uint8_t> row_bytes(const Dataset& data, size_t i) {
    std::vector<float> row(data.features());
    data.copy_row(i, row.data());
    std::vector<uint8_t> bytes(row.size());
    std::transform(row.begin(), row.end(), bytes.begin(),
                   [](float v) { return static_cast<uint8_t>(std::lround(v * 255.0f)); });
    return bytes;
}

ImageFolderOptions no_cache() {
    ImageFolderOptions options;
    options.cache_dir = "none";
    return options;
}

} // namespace

TEST(ImageFolder, ClassesAreTheSortedFolderNamesAndEachImageKeepsItsLabel) {
    TempDir dir;
    // Made in another order than byte order; "Mango" sorts before "apple".
    const std::map<std::string, int> shades = {{"zebra", 200}, {"apple", 40}, {"Mango", 120}};
    for (const auto& [name, shade_of_class] : shades)
        for (int i = 0; i < 3; ++i) {
            const int shade = shade_of_class + i;
            write_png(dir.file("set/" + name + "/" + std::to_string(i) + ".png"), 6, 5, 1,
                      pattern(6, 5, 1, [shade](int, int, int) { return shade; }));
        }
    write_text(dir.file("set/README.txt"), "notes");
    write_text(dir.file("set/apple/labels.csv"), "a,b");
    fs::create_directories(dir.file("set/.hidden"));
    write_png(dir.file("set/apple/more/deep.png"), 6, 5, 1, pattern(6, 5, 1, [](int, int, int) { return 1; }));

    ImageFolderOptions options = no_cache();
    ImageFolderReport report;
    auto data = load_image_folder(dir.file("set"), options, {}, report);
    ASSERT_TRUE(data) << data.error();
    EXPECT_EQ(data->class_names, (std::vector<std::string>{"Mango", "apple", "zebra"}));
    EXPECT_EQ(data->classes, 3);
    EXPECT_EQ(options.height, 5);
    EXPECT_EQ(options.width, 6);
    EXPECT_EQ(options.channels, 1);
    EXPECT_EQ(report.images, 9u);
    EXPECT_EQ(report.ignored_files, 2u) << "README.txt and labels.csv";
    EXPECT_EQ(report.ignored_folders, 1u) << "apple/more is counted, not read";
    ASSERT_EQ(data->size(), 9u);
    for (size_t i = 0; i < data->size(); ++i) {
        const std::string& name = data->class_names[data->y[i]];
        const std::vector<uint8_t> pixels = row_bytes(*data, i);
        ASSERT_EQ(pixels.size(), 30u);
        EXPECT_EQ(pixels.front(), shades.at(name) + static_cast<int>(i % 3)) << "image " << i << " of " << name;
        EXPECT_EQ(pixels.front(), pixels.back());
    }
}

TEST(ImageFolder, ImagesOfAnotherSizeArePaddedOrCroppedWithTheirAspectKept) {
    TempDir dir;
    // 20 wide, 10 high, white; resized into 8 x 8.
    write_png(dir.file("wide/a/w.png"), 20, 10, 1, pattern(20, 10, 1, [](int, int, int) { return 255; }));
    ImageFolderOptions pad = no_cache();
    pad.height = pad.width = 8;
    ImageFolderReport report;
    auto padded = load_image_folder(dir.file("wide"), pad, {}, report);
    ASSERT_TRUE(padded) << padded.error();
    const std::vector<uint8_t> p = row_bytes(*padded, 0);
    // Scaled to 8 x 4, centred: rows 0-1 and 6-7 black, rows 2-5 white.
    for (int y = 0; y < 8; ++y)
        for (int x = 0; x < 8; ++x)
            EXPECT_EQ(p[y * 8 + x], (y >= 2 && y < 6) ? 255 : 0) << "pad at " << x << "," << y;

    ImageFolderOptions crop = pad;
    crop.resize = "crop";
    auto cropped = load_image_folder(dir.file("wide"), crop, {}, report);
    ASSERT_TRUE(cropped) << cropped.error();
    for (uint8_t v : row_bytes(*cropped, 0))
        EXPECT_EQ(v, 255) << "a centre crop of a white image has no border";

    // An image that needs no scaling (6 x 4 padded into 6 x 6) keeps its pixels exactly: no filter runs over them.
    write_png(dir.file("exact/a/e.png"), 6, 4, 1, pattern(6, 4, 1, [](int x, int y, int) { return 10 * x + 60 * y; }));
    ImageFolderOptions six = no_cache();
    six.height = six.width = 6;
    auto exact = load_image_folder(dir.file("exact"), six, {}, report);
    ASSERT_TRUE(exact) << exact.error();
    const std::vector<uint8_t> e = row_bytes(*exact, 0);
    for (int y = 0; y < 6; ++y)
        for (int x = 0; x < 6; ++x)
            EXPECT_EQ(e[y * 6 + x], (y >= 1 && y < 5) ? 10 * x + 60 * (y - 1) : 0) << x << "," << y;

    // A 1 x 400 strip cropped into 8 x 8: its square centre is its middle pixel, read from a 1 x 1 window of the
    // source (the strip is never scaled up whole: 8 x 3,200 here, gigabytes for a longer one).
    write_png(dir.file("strip/a/s.png"), 1, 400, 1,
              pattern(1, 400, 1, [](int, int y, int) { return y < 199 ? 50 : (y == 199 ? 120 : 200); }));
    auto strip = load_image_folder(dir.file("strip"), crop, {}, report);
    ASSERT_TRUE(strip) << strip.error();
    for (uint8_t v : row_bytes(*strip, 0))
        EXPECT_EQ(v, 120);

    // A left-half-black image, cropped: the kept centre is half black, half white (left to right).
    write_png(dir.file("half/a/h.png"), 20, 10, 1,
              pattern(20, 10, 1, [](int x, int, int) { return x < 10 ? 0 : 255; }));
    auto half = load_image_folder(dir.file("half"), crop, {}, report);
    ASSERT_TRUE(half) << half.error();
    const std::vector<uint8_t> h = row_bytes(*half, 0);
    EXPECT_LT(h[4 * 8 + 1], 30);
    EXPECT_GT(h[4 * 8 + 6], 225);
}

TEST(ImageFolder, ChannelsAreConvertedAndColourIsFoundFromTheImages) {
    TempDir dir;
    write_png(dir.file("mixed/gray/g.png"), 4, 4, 1, pattern(4, 4, 1, [](int, int, int) { return 90; }));
    write_png(dir.file("mixed/red/r.png"), 4, 4, 3,
              pattern(4, 4, 3, [](int, int, int c) { return c == 0 ? 250 : 10; }));
    write_jpg(dir.file("mixed/red/r2.jpg"), 4, 4, 3,
              pattern(4, 4, 3, [](int, int, int c) { return c == 0 ? 250 : 10; }));

    ImageFolderOptions automatic = no_cache();
    ImageFolderReport report;
    auto rgb = load_image_folder(dir.file("mixed"), automatic, {}, report);
    ASSERT_TRUE(rgb) << rgb.error();
    EXPECT_EQ(automatic.channels, 3) << "one class's first image has colour";
    ASSERT_EQ(rgb->size(), 3u);
    const std::vector<uint8_t> gray_as_rgb = row_bytes(*rgb, 0);
    EXPECT_EQ(gray_as_rgb[0], 90);
    EXPECT_EQ(gray_as_rgb[1], 90);
    EXPECT_EQ(gray_as_rgb[2], 90);
    const std::vector<uint8_t> red = row_bytes(*rgb, 1);
    EXPECT_EQ(red[0], 250);
    EXPECT_EQ(red[1], 10);
    const std::vector<uint8_t> red_jpeg = row_bytes(*rgb, 2);
    EXPECT_NEAR(red_jpeg[0], 250, 6);
    EXPECT_NEAR(red_jpeg[1], 10, 6);

    ImageFolderOptions gray = no_cache();
    gray.channels = 1;
    auto one = load_image_folder(dir.file("mixed"), gray, {}, report);
    ASSERT_TRUE(one) << one.error();
    EXPECT_EQ(one->features(), 16u);
    const std::vector<uint8_t> luminance = row_bytes(*one, 1);
    EXPECT_GT(luminance[0], 10);
    EXPECT_LT(luminance[0], 250) << "red to gray is a weighted mean, not one channel";
}

namespace {

// A 16-bit grayscale PNG without gAMA or sRGB chunks (as OpenCV and scientific tools write them), made by hand.
std::string png16(const std::vector<uint16_t>& values) {
    auto chunk = [](const std::string& type, const std::string& data) {
        std::string out;
        for (int shift = 24; shift >= 0; shift -= 8)
            out += static_cast<char>((data.size() >> shift) & 0xff);
        const std::string body = type + data;
        out += body;
        const uLong crc = crc32(0L, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size()));
        for (int shift = 24; shift >= 0; shift -= 8)
            out += static_cast<char>((crc >> shift) & 0xff);
        return out;
    };
    std::string header;
    for (uint32_t v : {static_cast<uint32_t>(values.size()), 1u})
        for (int shift = 24; shift >= 0; shift -= 8)
            header += static_cast<char>((v >> shift) & 0xff);
    header += std::string{16, 0, 0, 0, 0}; // depth 16, grayscale, deflate, no filter, no interlace
    std::string raw(1, '\0');              // the row's filter: none
    for (uint16_t v : values)
        raw += {static_cast<char>(v >> 8), static_cast<char>(v & 0xff)};
    std::string packed(compressBound(raw.size()), '\0');
    uLongf size = packed.size();
    compress(reinterpret_cast<Bytef*>(packed.data()), &size, reinterpret_cast<const Bytef*>(raw.data()), raw.size());
    packed.resize(size);
    return std::string("\x89PNG\r\n\x1a\n", 8) + chunk("IHDR", header) + chunk("IDAT", packed) + chunk("IEND", "");
}

} // namespace

TEST(ImageFolder, SixteenBitPngsKeepTheirValuesAsEveryImageToolReadsThem) {
    std::vector<uint8_t> out(3);
    ASSERT_EQ(decode_image(png16({0, 32896, 65535}), 1, 3, 1, "pad", out.data()), "");
    EXPECT_EQ(out[0], 0);
    EXPECT_EQ(out[1], 128) << "half way is 128, not the 188 of 16-bit values taken as linear light";
    EXPECT_EQ(out[2], 255);
}

TEST(ImageFolder, EveryBadImageIsListedAndSkippedOnlyWhenAllowed) {
    TempDir dir;
    for (int i = 0; i < 4; ++i)
        write_png(dir.file("set/ok/" + std::to_string(i) + ".png"), 4, 4, 1,
                  pattern(4, 4, 1, [](int, int, int) { return 7; }));
    write_png(dir.file("set/cut/whole.png"), 4, 4, 1, pattern(4, 4, 1, [](int, int, int) { return 9; }));
    std::string png;
    {
        std::ifstream in(dir.file("set/cut/whole.png"), std::ios::binary);
        png.assign(std::istreambuf_iterator<char>(in), {});
    }
    write_text(dir.file("set/cut/truncated.png"), png.substr(0, png.size() / 2));
    write_text(dir.file("set/cut/text.png"), "this is not an image");
    write_text(dir.file("set/ok/empty.jpg"), "");

    ImageFolderOptions strict = no_cache();
    ImageFolderReport report;
    auto refused = load_image_folder(dir.file("set"), strict, {}, report);
    ASSERT_FALSE(refused);
    for (const char* name : {"cut/truncated.png: ", "cut/text.png: not a PNG or JPEG", "ok/empty.jpg: empty file"})
        EXPECT_NE(refused.error().find(name), std::string::npos) << name << " missing from:\n" << refused.error();
    EXPECT_NE(refused.error().find("3 of 8 images cannot be read"), std::string::npos) << refused.error();
    EXPECT_NE(refused.error().find("skip_bad_images"), std::string::npos) << "the error says how to go on";

    ImageFolderOptions lenient = no_cache();
    lenient.skip_bad = true;
    auto kept = load_image_folder(dir.file("set"), lenient, {}, report);
    ASSERT_TRUE(kept) << kept.error();
    EXPECT_EQ(kept->size(), 5u);
    EXPECT_EQ(report.skipped.size(), 3u);
    EXPECT_EQ(report.images, 5u);
}

TEST(ImageFolder, TheCacheIsMappedTheSecondTimeAndAChangedFolderOrDamagedCacheIsDecodedAgain) {
    TempDir dir;
    for (int c = 0; c < 2; ++c)
        for (int i = 0; i < 5; ++i)
            write_png(dir.file("set/c" + std::to_string(c) + "/" + std::to_string(i) + ".png"), 6, 6, 3,
                      pattern(6, 6, 3, [&](int x, int y, int ch) { return 20 * c + 3 * i + x + y + ch; }));
    ImageFolderOptions options;
    options.cache_dir = dir.file("cache");
    ImageFolderReport first, second;
    auto decoded = load_image_folder(dir.file("set"), options, {}, first);
    ASSERT_TRUE(decoded) << decoded.error();
    EXPECT_FALSE(first.from_cache);
    ASSERT_TRUE(fs::exists(first.cache_path)) << first.cache_note;
    auto mapped = load_image_folder(dir.file("set"), options, {}, second);
    ASSERT_TRUE(mapped) << mapped.error();
    EXPECT_TRUE(second.from_cache);
    EXPECT_EQ(second.cache_path, first.cache_path);
    ASSERT_EQ(mapped->size(), decoded->size());
    EXPECT_EQ(mapped->y, decoded->y);
    for (size_t i = 0; i < mapped->size(); ++i)
        EXPECT_EQ(row_bytes(*mapped, i), row_bytes(*decoded, i));

    // Another size is another cache.
    ImageFolderOptions smaller = options;
    smaller.height = smaller.width = 4;
    ImageFolderReport resized;
    ASSERT_TRUE(load_image_folder(dir.file("set"), smaller, {}, resized));
    EXPECT_FALSE(resized.from_cache);
    EXPECT_NE(resized.cache_path, first.cache_path);

    // An added image changes the key: decoded again, and it is there.
    write_png(dir.file("set/c1/new.png"), 6, 6, 3, pattern(6, 6, 3, [](int, int, int) { return 222; }));
    ImageFolderReport grown;
    auto more = load_image_folder(dir.file("set"), options, {}, grown);
    ASSERT_TRUE(more) << more.error();
    EXPECT_FALSE(grown.from_cache);
    EXPECT_EQ(more->size(), 11u);

    // A damaged cache (cut short) is reported and decoded again, with the right pixels.
    fs::resize_file(grown.cache_path, fs::file_size(grown.cache_path) / 2);
    ImageFolderReport damaged;
    auto again = load_image_folder(dir.file("set"), options, {}, damaged);
    ASSERT_TRUE(again) << again.error();
    EXPECT_FALSE(damaged.from_cache);
    EXPECT_NE(damaged.cache_note.find("shorter than its header says"), std::string::npos) << damaged.cache_note;
    for (size_t i = 0; i < again->size(); ++i)
        EXPECT_EQ(row_bytes(*again, i), row_bytes(*more, i));
    ImageFolderReport repaired;
    ASSERT_TRUE(load_image_folder(dir.file("set"), options, {}, repaired));
    EXPECT_TRUE(repaired.from_cache) << "the damaged cache was written again";

    // One flipped bit in its last pixel: the checksum finds it, and the image is decoded again, not trained on.
    {
        std::fstream cache(repaired.cache_path, std::ios::in | std::ios::out | std::ios::binary);
        cache.seekg(-1, std::ios::end);
        const char last = static_cast<char>(cache.get());
        cache.seekp(-1, std::ios::end);
        cache.put(static_cast<char>(last ^ 0x10));
    }
    ImageFolderReport flipped;
    auto checked = load_image_folder(dir.file("set"), options, {}, flipped);
    ASSERT_TRUE(checked) << checked.error();
    EXPECT_FALSE(flipped.from_cache);
    EXPECT_NE(flipped.cache_note.find("checksum does not match"), std::string::npos) << flipped.cache_note;
    EXPECT_EQ(row_bytes(*checked, checked->size() - 1), row_bytes(*more, more->size() - 1));

    // A cache folder that cannot be written: said, and the images are used from memory.
    write_text(dir.file("blocked"), "a file where the cache folder would be");
    ImageFolderOptions blocked = options;
    blocked.cache_dir = dir.file("blocked/images");
    ImageFolderReport unwritable;
    auto in_memory = load_image_folder(dir.file("set"), blocked, {}, unwritable);
    ASSERT_TRUE(in_memory) << in_memory.error();
    EXPECT_EQ(in_memory->size(), 11u);
    EXPECT_NE(unwritable.cache_note.find("cannot write"), std::string::npos) << unwritable.cache_note;
}

TEST(ImageFolder, ATestFolderUsesTheTrainingClassesAndRefusesAnUnknownOne) {
    TempDir dir;
    for (const char* name : {"ant", "bee", "cat"})
        write_png(dir.file(std::string("train/") + name + "/1.png"), 4, 4, 1,
                  pattern(4, 4, 1, [](int, int, int) { return 1; }));
    write_png(dir.file("test/cat/1.png"), 4, 4, 1, pattern(4, 4, 1, [](int, int, int) { return 1; }));
    ImageFolderOptions options = no_cache();
    ImageFolderReport report;
    auto train = load_image_folder(dir.file("train"), options, {}, report);
    ASSERT_TRUE(train) << train.error();
    auto test = load_image_folder(dir.file("test"), options, train->class_names, report);
    ASSERT_TRUE(test) << test.error();
    EXPECT_EQ(test->classes, 3);
    EXPECT_EQ(test->y, std::vector<int32_t>{2}) << "cat is the training set's class 2, not the test folder's 0";

    write_png(dir.file("test/dog/1.png"), 4, 4, 1, pattern(4, 4, 1, [](int, int, int) { return 1; }));
    auto unknown = load_image_folder(dir.file("test"), options, train->class_names, report);
    ASSERT_FALSE(unknown);
    EXPECT_NE(unknown.error().find("class \"dog\" is not one of the training set's classes"), std::string::npos)
        << unknown.error();

    ImageFolderReport none;
    auto missing = load_image_folder(dir.file("nowhere"), options, {}, none);
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.error().find("not a folder"), std::string::npos);
}

TEST(ImageFolder, StratifiedValidationTakesTheFractionOfEachClass) {
    Dataset data;
    data.width = 1;
    data.classes = 3;
    const int counts[] = {100, 30, 10};
    for (int c = 0; c < 3; ++c)
        for (int i = 0; i < counts[c]; ++i) {
            data.y.push_back(c);
            data.x.push_back(static_cast<float>(c * 1000 + i));
        }
    Dataset train = data;
    const Dataset val = split_validation(train, 0.2, 7, true);
    std::map<int, int> per_class;
    for (int32_t label : val.y)
        ++per_class[label];
    EXPECT_EQ(per_class[0], 20);
    EXPECT_EQ(per_class[1], 6);
    EXPECT_EQ(per_class[2], 2);
    EXPECT_EQ(train.size() + val.size(), data.size());
    std::set<float> seen(train.x.begin(), train.x.end());
    for (float v : val.x)
        EXPECT_TRUE(seen.insert(v).second) << v << " is in both sets";
    // The split is the seed's: the same seed gives the same sets, another seed others.
    Dataset again = data;
    EXPECT_EQ(split_validation(again, 0.2, 7, true).x, val.x);
    Dataset other = data;
    EXPECT_NE(split_validation(other, 0.2, 8, true).x, val.x);
}

TEST(Augment, EachTransformDoesWhatItSaysAndTheSameGeneratorGivesTheSameSample) {
    const int w = 5, h = 4;
    std::vector<float> image(static_cast<size_t>(w) * h);
    for (int i = 0; i < w * h; ++i)
        image[i] = static_cast<float>(i + 1) / 40.0f;
    std::vector<float> scratch;

    // A flip every time it is drawn; over many draws both outcomes occur, and a flip mirrors each row.
    AugmentSpec flip;
    flip.hflip = true;
    int flipped = 0;
    for (uint64_t seed = 0; seed < 64; ++seed) {
        std::vector<float> row = image;
        Rng rng(seed);
        augment_sample(row.data(), h, w, 1, flip, {}, rng, scratch);
        if (row != image) {
            ++flipped;
            for (int y = 0; y < h; ++y)
                for (int x = 0; x < w; ++x)
                    ASSERT_EQ(row[y * w + x], image[y * w + (w - 1 - x)]);
        }
    }
    EXPECT_GT(flipped, 16);
    EXPECT_LT(flipped, 48);

    // A padded crop is a shift with black (raw 0) coming in; with normalisation, black is -mean / std.
    AugmentSpec crop;
    crop.crop_padding = 2;
    const Normalization norm{{0.25f}, {4.0f}};
    std::vector<float> normalised = image;
    for (float& v : normalised)
        v = (v - 0.25f) * 4.0f;
    bool shifted = false;
    for (uint64_t seed = 0; seed < 32 && !shifted; ++seed) {
        std::vector<float> row = normalised;
        Rng rng(seed);
        augment_sample(row.data(), h, w, 1, crop, norm, rng, scratch);
        if (row == normalised)
            continue;
        shifted = true;
        // Every value is either a pixel of the image or black.
        std::set<float> allowed(normalised.begin(), normalised.end());
        allowed.insert(-1.0f);
        for (float v : row)
            EXPECT_TRUE(allowed.count(v)) << v;
        EXPECT_NE(std::count(row.begin(), row.end(), -1.0f), 0);
    }
    EXPECT_TRUE(shifted);

    // Brightness and contrast keep raw values in [0, 1]; rotation moves pixels; the same generator, the same result.
    AugmentSpec all;
    all.crop_padding = 1;
    all.hflip = true;
    all.rotate = 30.0f;
    all.translate = 0.2f;
    all.brightness = 0.9f;
    all.contrast = 0.9f;
    for (uint64_t seed = 0; seed < 20; ++seed) {
        std::vector<float> a = image, b = image;
        Rng first(seed), second(seed);
        augment_sample(a.data(), h, w, 1, all, {}, first, scratch);
        augment_sample(b.data(), h, w, 1, all, {}, second, scratch);
        EXPECT_EQ(a, b);
        EXPECT_NE(a, image);
        for (float v : a) {
            EXPECT_GE(v, 0.0f);
            EXPECT_LE(v, 1.0f);
        }
    }
}

namespace {

// Fashion-MNIST's first `count` training images as PNG class folders (class names from Debian's files' labels).
void write_fashion_folder(const std::string& root, size_t count) {
    const auto images = traindeck::read_idx(std::string(kFashionMnistDir) + "/train-images-idx3-ubyte.gz", 3);
    const auto labels = traindeck::read_idx(std::string(kFashionMnistDir) + "/train-labels-idx1-ubyte.gz", 1);
    ASSERT_TRUE(images && labels);
    for (size_t i = 0; i < count; ++i) {
        const std::vector<uint8_t> pixels(images->data.begin() + i * 784, images->data.begin() + (i + 1) * 784);
        write_png(root + "/class" + std::to_string(labels->data[i]) + "/" + std::to_string(i) + ".png", 28, 28, 1,
                  pixels);
    }
}

std::vector<float> final_params(const std::string& checkpoint_dir) {
    auto found = find_latest_checkpoint(checkpoint_dir);
    return found && !found->path.empty() ? found->checkpoint.params : std::vector<float>{};
}

} // namespace

TEST(ImageFolderTraining, AnAugmentedRunResumesBitForBitAndItsAugmentationIsReallyApplied) {
    if (!fashion_mnist_installed()) {
        TRAINDECK_SKIP("dataset-fashion-mnist is not installed (installer/install-deps.sh installs it)");
    }
    TempDir dir;
    write_fashion_folder(dir.file("images"), 1200);
    json spec = {{"model", "cnn"},
                 {"conv", {8}},
                 {"fc", {16}},
                 {"data",
                  {{"format", "image_folder"},
                   {"train_dir", "images"},
                   {"augment", {{"crop_padding", 2}, {"hflip", true}, {"rotate", 10}, {"brightness", 0.2}}}}},
                 {"batch_size", 32},
                 {"epochs", 2},
                 {"seed", 11}};
    write_text(dir.file("aug.json"), spec.dump());
    spec["data"].erase("augment");
    write_text(dir.file("plain.json"), spec.dump());
    const std::vector<std::string> env = {"TRAINDECK_DATASET_DIR=" + dir.path().string(),
                                          "TRAINDECK_CACHE_DIR=" + dir.file("cache")};

    const ProcessResult whole =
        run_trainer({dir.file("aug.json"), "--checkpoint-dir", dir.file("whole"), "--threads", "2"}, env);
    ASSERT_EQ(whole.exit_code, 0) << whole.err;
    const auto data_events = whole.records("event");
    const auto data =
        std::find_if(data_events.begin(), data_events.end(), [](const json& e) { return e["event"] == "data"; });
    ASSERT_NE(data, data_events.end());
    EXPECT_EQ((*data)["data"]["train"]["images"], 1200);
    EXPECT_FALSE((*data)["data"]["train"]["from_cache"].get<bool>());
    EXPECT_EQ(whole.records("config").front()["config"]["data"]["image_size"], json::array({28, 28}));
    const json val = whole.records("eval").back();
    EXPECT_GT(val["accuracy"].get<double>(), 0.5) << "it learns from the images";

    // Stopped at step 40 of 68 (mid second epoch), resumed in a new process: the same weights as the unbroken run.
    const ProcessResult first = run_trainer(
        {dir.file("aug.json"), "--checkpoint-dir", dir.file("split"), "--threads", "2", "--set", "max_steps=40"}, env);
    ASSERT_EQ(first.exit_code, 0) << first.err;
    EXPECT_NE(first.out.find("\"from_cache\":true"), std::string::npos) << "the second run maps the cache";
    const ProcessResult second =
        run_trainer({dir.file("aug.json"), "--checkpoint-dir", dir.file("split"), "--threads", "2", "--resume"}, env);
    ASSERT_EQ(second.exit_code, 0) << second.err;
    EXPECT_EQ(second.records("status").front()["resumed_from_step"], 40);
    const std::vector<float> whole_params = final_params(dir.file("whole"));
    ASSERT_FALSE(whole_params.empty());
    EXPECT_EQ(whole_params, final_params(dir.file("split"))) << "the resumed run augmented differently";

    // The same run without augmentation ends elsewhere: the augmentation was applied.
    const ProcessResult plain =
        run_trainer({dir.file("plain.json"), "--checkpoint-dir", dir.file("plain"), "--threads", "2"}, env);
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    EXPECT_NE(final_params(dir.file("plain")), whole_params);
}

TEST(ImageFolderTraining, WithoutATestSetTheLastValidationCarriesColourThumbnailsOfItsImages) {
    // Three classes of 64x64 RGB photos, each one colour: a thumbnail is 32x32 of exactly that colour, in R, G, B
    // order.
    TempDir dir;
    const std::map<std::string, std::array<int, 3>> colours = {
        {"amber", {250, 180, 20}}, {"teal", {10, 140, 150}}, {"violet", {130, 40, 200}}};
    for (const auto& colour : colours)
        for (int i = 0; i < 30; ++i) {
            const int shade = i % 5; // a few shades, so that no two images of a class need be alike
            const std::array<int, 3>& rgb = colour.second;
            write_png(dir.file("photos/" + colour.first + "/" + std::to_string(i) + ".png"), 64, 64, 3,
                      pattern(64, 64, 3, [&](int, int, int c) { return std::clamp(rgb[c] - 2 * shade, 0, 255); }));
        }
    const json spec = {{"model", "mlp"},
                       {"hidden", {8}},
                       {"data", {{"format", "image_folder"}, {"train_dir", "photos"}, {"val_fraction", 0.2}}},
                       {"batch_size", 16},
                       {"epochs", 2}};
    write_text(dir.file("spec.json"), spec.dump());
    const ProcessResult run =
        run_trainer({dir.file("spec.json"), "--checkpoint-dir", dir.file("ck")},
                    {"TRAINDECK_DATASET_DIR=" + dir.path().string(), "TRAINDECK_CACHE_DIR=" + dir.file("cache")});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const auto evals = run.records("eval");
    ASSERT_EQ(evals.size(), 2u);
    EXPECT_FALSE(evals[0].contains("examples")) << "only the last epoch's validation carries them";
    ASSERT_TRUE(evals[1].contains("examples")) << evals[1].dump().substr(0, 300);
    const json& examples = evals[1]["examples"];
    EXPECT_EQ(examples["height"], 32);
    EXPECT_EQ(examples["width"], 32);
    EXPECT_EQ(examples["channels"], 3);
    ASSERT_FALSE(examples["items"].empty());
    const std::vector<std::string> names = {"amber", "teal", "violet"};
    for (const json& item : examples["items"]) {
        const std::string pixels = item[3];
        // Every pixel of the thumbnail is its class's colour, less a shade of 0 to 8 (the same one for each pixel).
        const auto& expected = colours.at(names.at(item[0].get<size_t>()));
        bool matched = false;
        for (int shade = 0; shade < 5 && !matched; ++shade) {
            std::vector<uint8_t> want(size_t{32} * 32 * 3);
            for (size_t p = 0; p < want.size(); ++p)
                want[p] = static_cast<uint8_t>(std::clamp(expected[p % 3] - 2 * shade, 0, 255));
            matched = traindeck::base64_encode(want.data(), want.size()) == pixels;
        }
        EXPECT_TRUE(matched) << "an example of " << names.at(item[0].get<size_t>()) << " is not its colour";
    }
}

TEST(ImageFolderTraining, ALimitIsASeededSampleAcrossTheClassesNotTheFirstClasses) {
    TempDir dir;
    for (const char* name : {"ant", "bee", "cat"})
        for (int i = 0; i < 20; ++i)
            write_png(dir.file(std::string("set/") + name + "/" + std::to_string(i) + ".png"), 4, 4, 1,
                      pattern(4, 4, 1, [i](int, int, int) { return i; }));
    DataSpec spec;
    spec.format = "image_folder";
    spec.train_dir = dir.file("set");
    spec.val_fraction = 0;
    spec.limit = 15;
    ::setenv("TRAINDECK_CACHE_DIR", dir.file("cache").c_str(), 1);
    auto first = load_training_data(spec, 1);
    auto again = load_training_data(spec, 1);
    auto other = load_training_data(spec, 2);
    ::unsetenv("TRAINDECK_CACHE_DIR");
    ASSERT_TRUE(first && again && other);
    ASSERT_EQ(first->train.size(), 15u);
    std::set<int32_t> classes(first->train.y.begin(), first->train.y.end());
    EXPECT_EQ(classes.size(), 3u) << "the first 15 stored would all be ants";
    EXPECT_EQ(first->train.rows, again->train.rows) << "the sample is the seed's";
    EXPECT_NE(first->train.rows, other->train.rows);
}
