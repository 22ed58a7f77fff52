#pragma once
// Dataset versions by content. A manifest lists every regular file under a dataset's root with its size, its
// SHA-256 (what sha256sum prints) and the SHA-256 of each kChunkBytes piece; the version id is the SHA-256 of
// the manifest's canonical text (paths, sizes, hashes — no dates), so the same bytes always give the same version
// wherever and whenever they are registered. Chunks are the unit of upload: a worker stores them by hash, so a
// second version that shares files with the first sends only the chunks the worker lacks.
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace traindeck::dataset {

constexpr int64_t kChunkBytes = 4 << 20;

struct ManifestFile {
    std::string path; // relative to the root, '/'-separated, no "." or ".." parts
    int64_t size = 0;
    std::string sha256;              // hex, of the whole file
    std::vector<std::string> chunks; // hex, one per kChunkBytes piece; a file of one chunk (or empty) has its own hash
};

struct Manifest {
    std::vector<ManifestFile> files; // sorted by path

    int64_t bytes() const;
    std::string version() const; // hex SHA-256 of canonical()
    std::string canonical() const;
    nlohmann::json to_json() const;
    // Checks every field (a manifest also arrives from the network); false + error says what is wrong.
    static bool from_json(const nlohmann::json& json, Manifest& manifest, std::string& error);
    const ManifestFile* find(const std::string& path) const;
    std::vector<std::string> chunk_hashes() const; // every file's chunks, in order (a hash may repeat)
};

struct ScanProgress {
    int64_t bytes_done = 0, bytes_total = 0;
    int64_t files_done = 0, files_total = 0;
};

struct ScanOptions {
    int threads = 2;
    std::function<void(const ScanProgress&)> progress; // called from the scanning threads
    int64_t progress_every = 64 << 20;                 // bytes between progress calls
    const std::atomic<bool>* cancel = nullptr;
};

// Hashes every regular file under root (a folder, or one file: then the manifest holds that one file under its
// name). Symbolic links are followed when they point inside root and refused otherwise. Fails with a message
// naming the file on: unreadable files, a file that changed while it was hashed, a link that escapes root, an
// empty folder, cancellation.
bool scan_manifest(const std::string& root, Manifest& manifest, std::string& error, const ScanOptions& options = {});

struct ManifestDiff {
    struct Change {
        std::string path;
        int64_t old_size = 0, new_size = 0;
    };
    std::vector<Change> added, removed, changed;
    int unchanged = 0;
    bool empty() const { return added.empty() && removed.empty() && changed.empty(); }
};
ManifestDiff diff_manifests(const Manifest& before, const Manifest& after);

std::string sha256_hex(const void* data, size_t size);
// A SHA-256 fed piece by piece (a file hashed while it is copied).
class Sha256 {
public:
    Sha256();
    ~Sha256();
    Sha256(const Sha256&) = delete;
    Sha256& operator=(const Sha256&) = delete;
    void update(const void* data, size_t size);
    std::string hex(); // once, at the end
private:
    void* context_;
};
// The SHA-256 of a file's bytes (what sha256sum prints); "" when it cannot be read.
std::string sha256_file(const std::string& path);
bool is_sha256_hex(const std::string& text);
// A relative path that stays inside its folder: no absolute paths, no "..", no empty or "." parts, no NUL.
bool is_safe_relative_path(const std::string& path);

} // namespace traindeck::dataset
