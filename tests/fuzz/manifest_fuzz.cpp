// Fuzz target: a dataset manifest as it arrives from the network (PUT /v1/datasets/<version>: nlohmann's parse
// without exceptions, then Manifest::from_json), and the path rule it relies on (is_safe_relative_path), which
// decides where the worker's store writes a version's files. Properties:
//  - a refusal says why; an accepted manifest is sorted, unique, every path safe, no file also a folder, every size
//    and hash well formed (the store can build what is accepted);
//  - what the worker answers and stores of it (version(), bytes(), to_json()) reads back as the same manifest;
//  - a path the rule accepts, joined to a folder and normalised, stays inside that folder, and the raw bytes of
//    the input, taken as one path, obey the same.
#include "fuzzsupport.h"
#include "manifest.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>

using nlohmann::json;
using traindeck::dataset::Manifest;
using traindeck::dataset::ManifestFile;
using traindeck::dataset::is_safe_relative_path;
using traindeck::dataset::is_sha256_hex;

namespace {

void check_stays_inside(const std::string& path) {
    if (!is_safe_relative_path(path))
        return;
    FUZZ_CHECK(path.find('\0') == std::string::npos, "a safe path holds a NUL");
    const std::filesystem::path root = "/store/datasets/version";
    const std::string joined = (root / path).lexically_normal().string();
    FUZZ_CHECK(joined.rfind(root.string() + "/", 0) == 0 && joined.size() > root.string().size() + 1,
               "a safe path leaves its folder once normalised");
    for (const auto& part : std::filesystem::path(path))
        FUZZ_CHECK(part != ".." && part != "." && !part.empty(), "a safe path has a dot part");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    check_stays_inside(std::string(reinterpret_cast<const char*>(data), size));

    const json body = json::parse(data, data + size, nullptr, false);
    if (body.is_discarded())
        return 0; // the handler answers 400 before from_json
    Manifest manifest;
    std::string error;
    if (!Manifest::from_json(body, manifest, error)) {
        FUZZ_CHECK(!error.empty(), "a refused manifest without a message");
        return 0;
    }
    for (size_t i = 0; i < manifest.files.size(); ++i) {
        const ManifestFile& file = manifest.files[i];
        check_stays_inside(file.path);
        FUZZ_CHECK(is_safe_relative_path(file.path), "accepted an unsafe path");
        FUZZ_CHECK(file.size >= 0 && is_sha256_hex(file.sha256) && !file.chunks.empty(), "accepted a bad size or hash");
        FUZZ_CHECK(i == 0 || manifest.files[i - 1].path < file.path, "accepted unsorted or repeated paths");
        FUZZ_CHECK(manifest.find(file.path) == &file, "find() does not find a listed path");
        for (size_t slash = file.path.find('/'); slash != std::string::npos; slash = file.path.find('/', slash + 1))
            FUZZ_CHECK(!manifest.find(file.path.substr(0, slash)), "accepted a file that is also a folder of other files");
    }
    // The reply of PUT /v1/datasets and the store's copy of the manifest.
    const std::string version = manifest.version();
    FUZZ_CHECK(is_sha256_hex(version), "a version that is not a SHA-256");
    FUZZ_CHECK(manifest.bytes() >= 0, "a negative total size");
    Manifest again;
    FUZZ_CHECK(Manifest::from_json(json::parse(manifest.to_json().dump()), again, error), "a stored manifest does not parse back");
    FUZZ_CHECK(again.version() == version && again.canonical() == manifest.canonical(), "a stored manifest parses back different");
    return 0;
}
