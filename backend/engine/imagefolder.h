#pragma once
// Image folders: one subfolder per class (its name is the class), PNG or JPEG files in it. Every image is decoded
// (libpng, libjpeg-turbo), brought to one size and channel count, and kept as uint8 rows in a
// cache file keyed by the files (names, sizes, times) and the preprocessing: a later load of the same folder maps
// the cache instead of decoding again, so the second run reads as fast as an IDX file.
#include "dataset.h"
#include "expected.h"

#include <cstdint>
#include <string>
#include <vector>

namespace traindeck::engine {

struct ImageFolderOptions {
    int height = 0, width = 0;  // 0: the size of the first image (first class folder, first file name)
    int channels = 0;           // 1 (grayscale) or 3 (RGB); 0: 3 when any class's first image has colour, else 1
    std::string resize = "pad"; // pad: the whole image, aspect kept, centred on black; crop: its centre, aspect kept
    bool skip_bad = false;      // false: one unreadable image fails the load, with the list of every one
    std::string cache_dir;      // "": default_image_cache_dir(); "none": decode every time, keep nothing
};

struct ImageFolderReport {
    size_t images = 0;
    size_t ignored_files = 0;         // files that are not .png/.jpg/.jpeg, left out
    size_t ignored_folders = 0;       // folders inside class folders (images are read one level down only)
    std::vector<std::string> skipped; // "path: why" of each bad image left out (skip_bad)
    bool from_cache = false;          // mapped from a cache an earlier load wrote
    std::string cache_path;           // "" when no cache is used
    std::string cache_note;           // why a cache was not used or not written (one line), or ""
};

// root/<class>/<image>. known_classes (a test folder's): the training set's classes, in its order; a class folder
// that is not one of them is an error. Class folders are sorted by name (byte order), so class indices never
// depend on the file system. options' zero fields are filled in with what was chosen.
Expected<Dataset> load_image_folder(const std::string& root, ImageFolderOptions& options,
                                    const std::vector<std::string>& known_classes, ImageFolderReport& report);

// One image file's bytes → height x width x channels uint8 (HWC) in out. "" or why it cannot be read.
std::string decode_image(const std::string& bytes, int height, int width, int channels, const std::string& resize,
                         uint8_t* out);

// Width, height and channels of an image from its header, without decoding it; false when it is not PNG or JPEG.
bool image_info(const std::string& bytes, int& width, int& height, int& channels);

// $TRAINDECK_CACHE_DIR/images, else $XDG_CACHE_HOME/traindeck/images, else ~/.cache/traindeck/images.
std::string default_image_cache_dir();

} // namespace traindeck::engine
