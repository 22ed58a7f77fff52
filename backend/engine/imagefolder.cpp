#include "imagefolder.h"

#include "atomicfile.h"
#include "fnv1a.h"
#include "parallel.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include <zlib.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

// PNG through libpng's simplified API, JPEG through libjpeg-turbo (both from memory, both fuzzed for years upstream:
// stb_image, the first choice, wrote out of bounds on a JPEG the fuzz target found in seconds); stb_image_resize
// (arithmetic only, no parsing) for the resizing.
#include <png.h>
#include <turbojpeg.h>
#define STB_IMAGE_RESIZE_STATIC
#define STB_IMAGE_RESIZE_IMPLEMENTATION
#include <stb/stb_image_resize.h>

namespace traindeck::engine {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr size_t kMaxImageFileBytes = 64ull << 20;
constexpr long long kMaxPixels = 64ll << 20; // one image, before resizing
constexpr char kCacheMagic[8] = {'T', 'D', 'I', 'M', 'G', 'v', '1', '\n'};
constexpr size_t kAlign = 64;

size_t aligned(size_t offset) { return (offset + kAlign - 1) / kAlign * kAlign; }

struct Entry {
    std::string relative; // class/file
    int label = 0;
    uint64_t size = 0;
    int64_t mtime_ns = 0, ctime_ns = 0;
    uint64_t inode = 0;
};

bool is_image_name(const std::string& name) {
    const size_t dot = name.rfind('.');
    if (dot == std::string::npos)
        return false;
    std::string ext = name.substr(dot + 1);
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
    return ext == "png" || ext == "jpg" || ext == "jpeg";
}

std::vector<std::string> sorted_children(const fs::path& dir, bool folders, std::error_code& ec) {
    std::vector<std::string> names;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.empty() || name[0] == '.')
            continue;
        std::error_code type_ec;
        if (it->is_directory(type_ec) == folders)
            names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    return names;
}

std::string hex(uint64_t value) {
    char text[17];
    std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(value));
    return text;
}

// The cache key: every file's name, size, times and inode, the classes and the preprocessing. A changed,
// added or removed image, or another size, makes another key.
std::string cache_key(const std::vector<Entry>& entries, const std::vector<std::string>& classes,
                      const ImageFolderOptions& options) {
    std::string text = "tdimg1\n" + std::to_string(options.height) + "x" + std::to_string(options.width) + "x" +
                       std::to_string(options.channels) + " " + options.resize + "\n";
    for (const auto& name : classes)
        text += name + "\n";
    for (const auto& e : entries)
        text += e.relative + "\t" + std::to_string(e.size) + "\t" + std::to_string(e.mtime_ns) + "\t" +
                std::to_string(e.ctime_ns) + "\t" + std::to_string(e.inode) + "\n";
    return hex(fnv1a(text)) + hex(fnv1a(text, 0x84222325cbf29ce4ULL));
}

// CRC-32 of the labels and the pixels: a cache damaged on disk (a flipped bit, a cut) is decoded again, never trained
// on.
uint32_t cache_checksum(const std::vector<int32_t>& labels, const uint8_t* pixels, size_t pixel_bytes) {
    uLong crc = crc32_z(0L, Z_NULL, 0);
    crc = crc32_z(crc, reinterpret_cast<const Bytef*>(labels.data()), labels.size() * sizeof(int32_t));
    crc = crc32_z(crc, pixels, pixel_bytes);
    return static_cast<uint32_t>(crc);
}

struct CacheHeader {
    uint32_t checksum = 0;
    size_t images = 0;
    std::vector<std::string> skipped;
    size_t labels_offset = 0, pixels_offset = 0;
};

// Reads and checks a cache file's header against what this load expects; the labels into `labels`.
Expected<CacheHeader> read_cache(const std::string& path, const std::string& key, const ImageFolderOptions& options,
                                 size_t classes, size_t max_images, std::vector<int32_t>& labels) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return Error{"cannot open"};
    char magic[8];
    uint64_t json_bytes = 0;
    if (!in.read(magic, 8) || std::memcmp(magic, kCacheMagic, 8) != 0 ||
        !in.read(reinterpret_cast<char*>(&json_bytes), sizeof(json_bytes)))
        return Error{"not a TrainDeck image cache"};
    if (json_bytes > (16u << 20))
        return Error{"header of " + std::to_string(json_bytes) + " bytes"};
    std::string text(json_bytes, '\0');
    if (!in.read(text.data(), static_cast<std::streamsize>(json_bytes)))
        return Error{"header cut short"};
    const json header = json::parse(text, nullptr, false);
    // Each field of its type before it is read (a header that parses can still hold anything).
    auto number_is = [&](const char* name, long long expected) {
        const auto it = header.find(name);
        return it != header.end() && it->is_number_integer() && it->get<long long>() == expected;
    };
    auto unsigned_field = [&](const char* name) {
        const auto it = header.find(name);
        return it != header.end() && it->is_number_unsigned();
    };
    if (!header.is_object() || !header.contains("key") || !header["key"].is_string() || header["key"] != key ||
        !number_is("height", options.height) || !number_is("width", options.width) ||
        !number_is("channels", options.channels) || !number_is("classes", static_cast<long long>(classes)) ||
        !unsigned_field("images") || !unsigned_field("crc32") || !header.contains("skipped") ||
        !header["skipped"].is_array())
        return Error{"header does not match the folder"};
    CacheHeader result;
    if (header["crc32"].get<uint64_t>() > UINT32_MAX)
        return Error{"header does not match the folder"};
    result.checksum = static_cast<uint32_t>(header["crc32"].get<uint64_t>());
    result.images = header["images"].get<size_t>();
    if (result.images > max_images)
        return Error{"holds more images than the folder"};
    for (const auto& s : header["skipped"])
        if (s.is_string())
            result.skipped.push_back(s.get<std::string>());
    result.labels_offset = aligned(16 + json_bytes);
    result.pixels_offset = aligned(result.labels_offset + result.images * sizeof(int32_t));
    labels.resize(result.images);
    in.seekg(static_cast<std::streamoff>(result.labels_offset));
    if (!in.read(reinterpret_cast<char*>(labels.data()), static_cast<std::streamsize>(labels.size() * sizeof(int32_t))))
        return Error{"labels cut short"};
    for (int32_t label : labels)
        if (label < 0 || static_cast<size_t>(label) >= classes)
            return Error{"a label out of range"};
    return result;
}

Status write_cache(const std::string& path, const std::string& key, const ImageFolderOptions& options, size_t classes,
                   const std::vector<std::string>& skipped, const std::vector<int32_t>& labels,
                   const std::vector<uint8_t>& pixels) {
    const json header = {{"key", key},
                         {"height", options.height},
                         {"width", options.width},
                         {"channels", options.channels},
                         {"resize", options.resize},
                         {"images", labels.size()},
                         {"classes", classes},
                         {"skipped", skipped},
                         {"crc32", cache_checksum(labels, pixels.data(), pixels.size())}};
    // A file name need not be UTF-8 (Linux allows any bytes): replaced in the header, never an exception.
    const std::string text = header.dump(-1, ' ', false, json::error_handler_t::replace);
    const uint64_t json_bytes = text.size();
    const size_t labels_offset = aligned(16 + text.size());
    const size_t pixels_offset = aligned(labels_offset + labels.size() * sizeof(int32_t));
    std::string head(kCacheMagic, 8);
    head.append(reinterpret_cast<const char*>(&json_bytes), sizeof(json_bytes));
    head += text;
    head.resize(labels_offset, '\0');
    head.append(reinterpret_cast<const char*>(labels.data()), labels.size() * sizeof(int32_t));
    head.resize(pixels_offset, '\0');
    AtomicFile file(path, 0644);
    file.write(head);
    file.write(pixels.data(), pixels.size());
    if (const int error = file.commit(); error != 0)
        return Error{path + ": cannot write: " + std::strerror(error)};
    return Ok{};
}

// The images of one class folder, in file name order, added to entries; label -1: a class the training set lacks.
Status list_class(const std::string& root, const std::string& folder, int label, std::vector<Entry>& entries,
                  ImageFolderReport& report) {
    const std::string folder_path = root + "/" + folder;
    if (label < 0)
        return Error{folder_path + ": class \"" + folder + "\" is not one of the training set's classes"};
    std::error_code ec;
    // Images are read one level down only: a folder inside a class folder is counted and said, not read.
    report.ignored_folders += sorted_children(folder_path, true, ec).size();
    for (const std::string& name : sorted_children(folder_path, false, ec)) {
        if (!is_image_name(name)) {
            ++report.ignored_files;
            continue;
        }
        Entry e;
        e.relative = folder;
        e.relative += '/';
        e.relative += name;
        e.label = label;
        struct stat st {};
        if (::stat((root + '/').append(e.relative).c_str(), &st) == 0) {
            e.size = static_cast<uint64_t>(st.st_size);
            e.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
            // ctime and inode too: a file rewritten with its old size and mtime put back is another file.
            e.ctime_ns = static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
            e.inode = static_cast<uint64_t>(st.st_ino);
        }
        entries.push_back(std::move(e));
    }
    if (ec)
        return Error{folder_path + ": cannot list: " + ec.message()};
    return Ok{};
}

// Every image that cannot be read, each with its path and why, in one message.
Error bad_images(const std::string& root, const std::vector<std::string>& bad, size_t total) {
    std::string list;
    for (const auto& s : bad)
        list += "\n  " + s;
    return Error{root + ": " + std::to_string(bad.size()) + " of " + std::to_string(total) + " images cannot be read:" +
                 list + "\n(remove them, or allow leaving them out with \"skip_bad_images\": true)"};
}

} // namespace

namespace {

bool is_png(const std::string& bytes) {
    return bytes.size() >= 8 && png_sig_cmp(reinterpret_cast<png_const_bytep>(bytes.data()), 0, 8) == 0;
}

bool is_jpeg(const std::string& bytes) {
    return bytes.size() >= 3 && static_cast<uint8_t>(bytes[0]) == 0xff && static_cast<uint8_t>(bytes[1]) == 0xd8 &&
           static_cast<uint8_t>(bytes[2]) == 0xff;
}

struct TurboJpeg {
    tjhandle handle = tjInitDecompress();
    ~TurboJpeg() {
        if (handle)
            tjDestroy(handle);
    }
    TurboJpeg() = default;
    TurboJpeg(const TurboJpeg&) = delete;
    TurboJpeg& operator=(const TurboJpeg&) = delete;
};

// The whole image at its own size, in `channels` (1: gray, 3: RGB; alpha composited on black). "" or why not.
std::string decode_full(const std::string& bytes, int channels, int& w, int& h, std::vector<uint8_t>& pixels) {
    if (is_png(bytes)) {
        png_image image{};
        image.version = PNG_IMAGE_VERSION;
        if (!png_image_begin_read_from_memory(&image, bytes.data(), bytes.size()))
            return std::string("cannot decode the PNG (") + image.message + ")";
        w = static_cast<int>(image.width);
        h = static_cast<int>(image.height);
        if (w <= 0 || h <= 0 || static_cast<long long>(w) * h > kMaxPixels) {
            png_image_free(&image);
            return std::to_string(w) + "x" + std::to_string(h) + " pixels is more than this reader takes";
        }
        image.format = channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
        // 16-bit values as the file's own encoding (as every image tool reads them), not as linear light.
        image.flags |= PNG_IMAGE_FLAG_16BIT_sRGB;
        pixels.assign(PNG_IMAGE_SIZE(image), 0);
        if (!png_image_finish_read(&image, nullptr, pixels.data(), 0, nullptr))
            return std::string("cannot decode the PNG (") + image.message + ")";
        return {};
    }
    if (is_jpeg(bytes)) {
        TurboJpeg jpeg;
        int subsampling = 0, colorspace = 0;
        const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
        if (!jpeg.handle ||
            tjDecompressHeader3(jpeg.handle, data, bytes.size(), &w, &h, &subsampling, &colorspace) != 0)
            return std::string("cannot decode the JPEG (") + tjGetErrorStr2(jpeg.handle) + ")";
        if (w <= 0 || h <= 0 || static_cast<long long>(w) * h > kMaxPixels)
            return std::to_string(w) + "x" + std::to_string(h) + " pixels is more than this reader takes";
        pixels.assign(static_cast<size_t>(w) * h * channels, 0);
        // A progressive file's scans are limited, so a hostile one cannot take minutes. Of the warnings (the image
        // decoded), a file cut short is a failure: libjpeg would have filled its missing part with grey. Others
        // (extraneous bytes before a marker, common in scraped photos) are not, as PIL takes them.
        if (tjDecompress2(jpeg.handle, data, bytes.size(), pixels.data(), w, 0, h, channels == 3 ? TJPF_RGB : TJPF_GRAY,
                          TJFLAG_LIMITSCANS) != 0) {
            const std::string message = tjGetErrorStr2(jpeg.handle);
            if (tjGetErrorCode(jpeg.handle) != TJERR_WARNING || message.find("Premature end") != std::string::npos)
                return "cannot decode the JPEG (" + message + ")";
        }
        return {};
    }
    return "not a PNG or JPEG image";
}

} // namespace

bool image_info(const std::string& bytes, int& width, int& height, int& channels) {
    if (is_png(bytes)) {
        png_image image{};
        image.version = PNG_IMAGE_VERSION;
        if (!png_image_begin_read_from_memory(&image, bytes.data(), bytes.size()))
            return false;
        width = static_cast<int>(image.width);
        height = static_cast<int>(image.height);
        channels = (image.format & PNG_FORMAT_FLAG_COLOR) ? 3 : 1;
        png_image_free(&image);
        return true;
    }
    if (is_jpeg(bytes)) {
        TurboJpeg jpeg;
        int subsampling = 0, colorspace = 0;
        if (!jpeg.handle || tjDecompressHeader3(jpeg.handle, reinterpret_cast<const unsigned char*>(bytes.data()),
                                                bytes.size(), &width, &height, &subsampling, &colorspace) != 0)
            return false;
        channels = colorspace == TJCS_GRAY ? 1 : 3;
        return true;
    }
    return false;
}

std::string decode_image(const std::string& bytes, int height, int width, int channels, const std::string& resize,
                         uint8_t* out) {
    if (bytes.empty())
        return "empty file";
    int w = 0, h = 0;
    std::vector<uint8_t> decoded;
    if (std::string error = decode_full(bytes, channels, w, h, decoded); !error.empty())
        return error;
    const uint8_t* pixels = decoded.data();
    if (w == width && h == height) {
        std::memcpy(out, pixels, static_cast<size_t>(width) * height * channels);
        return {};
    }
    std::memset(out, 0, static_cast<size_t>(width) * height * channels);
    const size_t out_stride = static_cast<size_t>(width) * channels, in_stride = static_cast<size_t>(w) * channels;
    // Copies or resizes a w' x h' window of the source (rows in_stride apart) into a window of the output.
    auto place = [&](const uint8_t* from, int from_w, int from_h, uint8_t* to, int to_w, int to_h) {
        if (from_w == to_w && from_h == to_h) { // no scaling: the pixels as they are, not filtered
            for (int y = 0; y < to_h; ++y)
                std::memcpy(to + y * out_stride, from + y * in_stride, static_cast<size_t>(to_w) * channels);
            return true;
        }
        return stbir_resize_uint8(from, from_w, from_h, static_cast<int>(in_stride), to, to_w, to_h,
                                  static_cast<int>(out_stride), channels) != 0;
    };
    if (resize == "crop") {
        // The source's centre window with the output's aspect, resized to the output: never the whole image scaled
        // up first (a 1 x 10,000 strip must not become gigabytes).
        const double scale = std::max(double(width) / w, double(height) / h);
        const int window_w = std::clamp(static_cast<int>(std::lround(width / scale)), 1, w);
        const int window_h = std::clamp(static_cast<int>(std::lround(height / scale)), 1, h);
        const uint8_t* window = pixels + (static_cast<size_t>((h - window_h) / 2) * w + (w - window_w) / 2) * channels;
        return place(window, window_w, window_h, out, width, height) ? std::string() : std::string("cannot resize");
    }
    // pad: the whole image scaled to fit, centred on black.
    const double scale = std::min(double(width) / w, double(height) / h);
    const int scaled_w = std::clamp(static_cast<int>(std::lround(w * scale)), 1, width);
    const int scaled_h = std::clamp(static_cast<int>(std::lround(h * scale)), 1, height);
    uint8_t* target = out + static_cast<size_t>((height - scaled_h) / 2) * out_stride +
                      static_cast<size_t>((width - scaled_w) / 2) * channels;
    if (!place(pixels, w, h, target, scaled_w, scaled_h))
        return "cannot resize";
    return {};
}

std::string default_image_cache_dir() {
    if (const char* dir = std::getenv("TRAINDECK_CACHE_DIR"); dir && *dir)
        return std::string(dir) + "/images";
    if (const char* dir = std::getenv("XDG_CACHE_HOME"); dir && *dir == '/')
        return std::string(dir) + "/traindeck/images";
    if (const char* home = std::getenv("HOME"); home && *home)
        return std::string(home) + "/.cache/traindeck/images";
    return {};
}

Expected<Dataset> load_image_folder(const std::string& root, ImageFolderOptions& options,
                                    const std::vector<std::string>& known_classes, ImageFolderReport& report) {
    report = {};
    std::error_code ec;
    if (!fs::is_directory(root, ec))
        return Error{root + ": not a folder (an image folder holds one folder per class, each with PNG or JPEG "
                            "images)"};
    const std::vector<std::string> folders = sorted_children(root, true, ec);
    if (ec)
        return Error{root + ": cannot list: " + ec.message()};
    report.ignored_files += sorted_children(root, false, ec).size();
    if (folders.empty())
        return Error{root + ": no class folders (expected " + root + "/<class>/<image>.png or .jpg)"};
    std::vector<std::string> classes = known_classes.empty() ? folders : known_classes;
    std::map<std::string, int> index;
    for (size_t i = 0; i < classes.size(); ++i)
        index[classes[i]] = static_cast<int>(i);

    std::vector<Entry> entries;
    std::vector<size_t> first_of_class;
    for (const std::string& folder : folders) {
        const auto known = index.find(folder);
        first_of_class.push_back(entries.size());
        if (auto listed = list_class(root, folder, known == index.end() ? -1 : known->second, entries, report); !listed)
            return Error{listed.error()};
    }
    if (entries.empty())
        return Error{root + ": the class folders hold no .png or .jpg images"};

    // Size and channels not given: from the first image, and colour when any class's first image has colour.
    if (options.height <= 0 || options.width <= 0 || options.channels <= 0) {
        int channels = 1;
        for (size_t i = 0; i < first_of_class.size(); ++i) {
            if (first_of_class[i] >= entries.size() ||
                (i + 1 < first_of_class.size() && first_of_class[i + 1] == first_of_class[i]))
                continue; // an empty class folder
            const Entry& e = entries[first_of_class[i]];
            std::string bytes;
            int w = 0, h = 0, comp = 0;
            if (!read_file_upto(root + "/" + e.relative, kMaxImageFileBytes, bytes) || !image_info(bytes, w, h, comp))
                continue;
            if (options.height <= 0 || options.width <= 0) {
                options.height = h;
                options.width = w;
            }
            if (comp >= 3)
                channels = 3;
        }
        if (options.height <= 0 || options.width <= 0)
            return Error{root + ": the first image of each class cannot be read, so the image size is unknown; give "
                                "\"image_size\""};
        if (options.channels <= 0)
            options.channels = channels;
    }
    if (options.height > 4096 || options.width > 4096 || (options.channels != 1 && options.channels != 3))
        return Error{root + ": images of " + std::to_string(options.height) + "x" + std::to_string(options.width) +
                     "x" + std::to_string(options.channels) +
                     " are not what the trainer takes (at most 4096x4096, 1 "
                     "or 3 channels)"};

    const size_t row_bytes = static_cast<size_t>(options.height) * options.width * options.channels;
    Dataset data;
    data.height = options.height;
    data.width = options.width;
    data.channels = options.channels;
    data.class_names = classes;
    data.classes = static_cast<int>(classes.size());

    const std::string key = cache_key(entries, classes, options);
    const std::string cache_dir = options.cache_dir.empty() ? default_image_cache_dir() : options.cache_dir;
    const bool use_cache = options.cache_dir != "none" && !cache_dir.empty();
    if (!use_cache && options.cache_dir != "none")
        report.cache_note = "no cache folder (set TRAINDECK_CACHE_DIR or HOME): the images are decoded every run";
    if (use_cache) {
        report.cache_path = cache_dir + "/" + key + ".tdimg";
        std::vector<int32_t> labels;
        auto cached = read_cache(report.cache_path, key, options, classes.size(), entries.size(), labels);
        if (cached) {
            if (!cached->skipped.empty() && !options.skip_bad)
                return bad_images(root, cached->skipped, entries.size());
            auto mapped = ByteRows::map(report.cache_path, cached->pixels_offset, cached->images, row_bytes);
            if (mapped && cache_checksum(labels, (*mapped)->row(0), cached->images * row_bytes) != cached->checksum)
                mapped = Error{"its checksum does not match (damaged on disk)"};
            if (mapped) {
                data.bytes = std::move(*mapped);
                data.y = std::move(labels);
                data.rows.resize(data.y.size());
                for (size_t i = 0; i < data.rows.size(); ++i)
                    data.rows[i] = static_cast<uint32_t>(i);
                report.images = data.y.size();
                report.skipped = cached->skipped;
                report.from_cache = true;
                return data;
            }
            report.cache_note = report.cache_path + ": " + mapped.error() + "; decoding again";
        } else if (::access(report.cache_path.c_str(), F_OK) == 0) {
            report.cache_note = report.cache_path + ": " + cached.error() + "; decoding again";
        }
    }

    // Decode every image, in parallel; each failure is kept with its path.
    std::vector<uint8_t> pixels(entries.size() * row_bytes);
    std::vector<std::string> errors(entries.size());
    parallel_for(
        entries.size(),
        [&](size_t begin, size_t end) {
            std::string bytes;
            for (size_t i = begin; i < end; ++i) {
                const std::string path = root + "/" + entries[i].relative;
                if (!read_file_upto(path, kMaxImageFileBytes + 1, bytes)) {
                    errors[i] = "cannot read: " + std::string(std::strerror(errno));
                    continue;
                }
                if (bytes.size() > kMaxImageFileBytes) {
                    errors[i] = "larger than 64 MiB";
                    continue;
                }
                errors[i] = decode_image(bytes, options.height, options.width, options.channels, options.resize,
                                         pixels.data() + i * row_bytes);
            }
        },
        16);
    std::vector<std::string> bad;
    size_t kept = 0;
    for (size_t i = 0; i < entries.size(); ++i) {
        if (!errors[i].empty()) {
            bad.push_back(root + "/" + entries[i].relative + ": " + errors[i]);
            continue;
        }
        if (kept != i)
            std::memcpy(pixels.data() + kept * row_bytes, pixels.data() + i * row_bytes, row_bytes);
        data.y.push_back(entries[i].label);
        ++kept;
    }
    if (!bad.empty() && !options.skip_bad)
        return bad_images(root, bad, entries.size());
    if (kept == 0)
        return Error{root + ": none of the " + std::to_string(entries.size()) + " images can be read"};
    pixels.resize(kept * row_bytes);
    report.skipped = bad;
    report.images = kept;
    if (use_cache) {
        fs::create_directories(cache_dir, ec);
        if (auto written = write_cache(report.cache_path, key, options, classes.size(), bad, data.y, pixels);
            !written) {
            report.cache_note = written.error() + " (the images stay decoded in memory for this run)";
            report.cache_path.clear();
        }
    }
    data.rows.resize(kept);
    for (size_t i = 0; i < kept; ++i)
        data.rows[i] = static_cast<uint32_t>(i);
    data.bytes = std::make_shared<const ByteRows>(std::move(pixels), row_bytes);
    return data;
}

} // namespace traindeck::engine
