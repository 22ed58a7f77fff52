#include "manifest.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace traindeck::dataset {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string hex_of(const unsigned char* bytes, size_t size) {
    static const char* digits = "0123456789abcdef";
    std::string out(size * 2, '0');
    for (size_t i = 0; i < size; ++i) {
        out[2 * i] = digits[bytes[i] >> 4];
        out[2 * i + 1] = digits[bytes[i] & 15];
    }
    return out;
}

std::string finish(EVP_MD_CTX* ctx) {
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int size = 0;
    EVP_DigestFinal_ex(ctx, out, &size);
    return hex_of(out, size);
}

struct PendingFile {
    std::string absolute, relative;
    int64_t size = 0;
};

// Hashes one file in a single read pass: the whole-file digest and, for files longer than one chunk, a digest
// per chunk. A file whose size, modification time or inode moves while it is read is refused.
bool hash_file(const PendingFile& pending, ManifestFile& out, std::vector<char>& buffer, std::string& error,
               const std::function<void(int64_t)>& advanced, const std::atomic<bool>* cancel) {
    const int fd = ::open(pending.absolute.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        error = pending.absolute + ": cannot read (" + std::strerror(errno) + "); fix its permissions or remove it";
        return false;
    }
    struct stat before {};
    ::fstat(fd, &before);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    Sha256 whole;
    const bool chunked = before.st_size > kChunkBytes;
    out = {pending.relative, before.st_size, {}, {}};
    int64_t total = 0;
    bool ok = true;
    while (ok) {
        if (cancel && cancel->load()) {
            error = "cancelled";
            ok = false;
            break;
        }
        // One chunk per round: fill the buffer to kChunkBytes (or the end of the file).
        size_t filled = 0;
        while (filled < buffer.size()) {
            const ssize_t got = ::read(fd, buffer.data() + filled, buffer.size() - filled);
            if (got < 0 && errno == EINTR)
                continue;
            if (got < 0) {
                error = pending.absolute + ": read failed (" + std::strerror(errno) + ")";
                ok = false;
                break;
            }
            if (got == 0)
                break;
            filled += static_cast<size_t>(got);
        }
        if (!ok || filled == 0)
            break;
        whole.update(buffer.data(), filled);
        if (chunked)
            out.chunks.push_back(sha256_hex(buffer.data(), filled));
        total += static_cast<int64_t>(filled);
        advanced(static_cast<int64_t>(filled));
        if (filled < buffer.size())
            break;
    }
    struct stat after {};
    ::fstat(fd, &after);
    ::close(fd);
    if (!ok)
        return false;
    if (total != before.st_size || after.st_size != before.st_size || after.st_ino != before.st_ino ||
        after.st_mtim.tv_sec != before.st_mtim.tv_sec || after.st_mtim.tv_nsec != before.st_mtim.tv_nsec) {
        error = pending.absolute + ": changed while it was being hashed; register the dataset again once nothing writes to it";
        return false;
    }
    out.sha256 = whole.hex();
    if (!chunked)
        out.chunks = {out.sha256};
    return true;
}

bool collect(const fs::path& root, std::vector<PendingFile>& files, std::string& error) {
    std::error_code ec;
    const fs::path canonical_root = fs::weakly_canonical(root, ec);
    const fs::file_status root_status = fs::status(root, ec);
    if (ec || !fs::exists(root_status)) {
        error = root.string() + ": does not exist or cannot be read";
        return false;
    }
    if (fs::is_regular_file(root_status)) {
        files.push_back({root.string(), root.filename().string(), static_cast<int64_t>(fs::file_size(root, ec))});
        return true;
    }
    if (!fs::is_directory(root_status)) {
        error = root.string() + ": is neither a folder nor a regular file";
        return false;
    }
    fs::recursive_directory_iterator it(root, fs::directory_options::none, ec), end;
    if (ec) {
        error = root.string() + ": cannot list (" + ec.message() + ")";
        return false;
    }
    for (; it != end; it.increment(ec)) {
        if (ec) {
            error = root.string() + ": cannot list a sub-folder (" + ec.message() + "); fix its permissions";
            return false;
        }
        const fs::directory_entry& entry = *it;
        const std::string relative = fs::relative(entry.path(), root).generic_string();
        if (entry.is_symlink(ec)) {
            const fs::path target = fs::weakly_canonical(entry.path(), ec);
            const std::string inside = canonical_root.string() + "/";
            if (ec || target.string().rfind(inside, 0) != 0) {
                error = entry.path().string() + ": a link that points outside the dataset folder; copy the file in instead";
                return false;
            }
            if (!fs::is_regular_file(target, ec))
                continue; // links to folders inside the root: their files are listed under the real folder
        } else if (!entry.is_regular_file(ec)) {
            continue;
        }
        if (!is_safe_relative_path(relative)) {
            error = entry.path().string() + ": a file name TrainDeck cannot store (control characters or odd parts)";
            return false;
        }
        files.push_back({entry.path().string(), relative, static_cast<int64_t>(fs::file_size(entry.path(), ec))});
    }
    if (files.empty()) {
        error = root.string() + ": holds no files";
        return false;
    }
    std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.relative < b.relative; });
    return true;
}

} // namespace

std::string sha256_hex(const void* data, size_t size) {
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    EVP_Digest(data, size, out, &length, EVP_sha256(), nullptr);
    return hex_of(out, length);
}

Sha256::Sha256() : context_(EVP_MD_CTX_new()) {
    EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(context_), EVP_sha256(), nullptr);
}
Sha256::~Sha256() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(context_)); }
void Sha256::update(const void* data, size_t size) { EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(context_), data, size); }
std::string Sha256::hex() { return finish(static_cast<EVP_MD_CTX*>(context_)); }

std::string sha256_file(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return {};
    Sha256 hash;
    std::vector<char> buffer(1 << 20);
    ssize_t got;
    while ((got = ::read(fd, buffer.data(), buffer.size())) > 0 || (got < 0 && errno == EINTR))
        if (got > 0)
            hash.update(buffer.data(), static_cast<size_t>(got));
    ::close(fd);
    return got < 0 ? std::string() : hash.hex();
}

bool is_sha256_hex(const std::string& text) {
    return text.size() == 64 &&
           std::all_of(text.begin(), text.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

bool is_safe_relative_path(const std::string& path) {
    if (path.empty() || path.front() == '/' || path.size() > 4096)
        return false;
    size_t start = 0;
    for (;;) {
        const size_t slash = path.find('/', start);
        const std::string part = path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
        if (part.empty() || part == "." || part == "..")
            return false;
        if (slash == std::string::npos)
            break;
        start = slash + 1;
    }
    return std::none_of(path.begin(), path.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; });
}

int64_t Manifest::bytes() const {
    int64_t total = 0;
    for (const ManifestFile& file : files)
        total += file.size;
    return total;
}

std::string Manifest::canonical() const {
    // One line per file: path NUL size NUL sha256 NUL chunk,chunk,... — paths may hold any other byte.
    std::string text = "traindeck-manifest/1\n";
    for (const ManifestFile& file : files) {
        text += file.path;
        text += '\0';
        text += std::to_string(file.size);
        text += '\0';
        text += file.sha256;
        text += '\0';
        for (size_t i = 0; i < file.chunks.size(); ++i)
            text += (i ? "," : "") + file.chunks[i];
        text += '\n';
    }
    return text;
}

std::string Manifest::version() const {
    const std::string text = canonical();
    return sha256_hex(text.data(), text.size());
}

json Manifest::to_json() const {
    json list = json::array();
    for (const ManifestFile& file : files)
        list.push_back({{"path", file.path}, {"size", file.size}, {"sha256", file.sha256}, {"chunks", file.chunks}});
    return {{"format", 1}, {"files", list}};
}

bool Manifest::from_json(const json& root, Manifest& manifest, std::string& error) {
    manifest = {};
    // "format" compared as JSON, not read as an int: value<int>() throws on {"format": []} and is undefined on 1e99,
    // and a manifest from the network gets an error message, not an exception.
    if (!root.is_object() || !root.contains("format") || root["format"] != 1 || !root.contains("files") || !root["files"].is_array()) {
        error = "a manifest is {\"format\": 1, \"files\": [...]}";
        return false;
    }
    for (const json& item : root["files"]) {
        ManifestFile file;
        if (!item.is_object() || !item.contains("path") || !item["path"].is_string() || !item.contains("size") ||
            !item["size"].is_number_integer() || !item.contains("sha256") || !item["sha256"].is_string() ||
            !item.contains("chunks") || !item["chunks"].is_array()) {
            error = "each manifest file needs \"path\", \"size\", \"sha256\" and \"chunks\"";
            return false;
        }
        file.path = item["path"];
        file.size = item["size"];
        file.sha256 = item["sha256"];
        if (!is_safe_relative_path(file.path)) {
            error = "manifest path \"" + file.path + "\" leaves the dataset folder or is not a plain relative path";
            return false;
        }
        if (file.size < 0 || !is_sha256_hex(file.sha256)) {
            error = "manifest file \"" + file.path + "\": bad size or sha256";
            return false;
        }
        for (const json& chunk : item["chunks"]) {
            if (!chunk.is_string() || !is_sha256_hex(chunk.get<std::string>())) {
                error = "manifest file \"" + file.path + "\": chunk hashes must be 64 lower-case hex digits";
                return false;
            }
            file.chunks.push_back(chunk);
        }
        // Rounded up without adding first: size + kChunkBytes - 1 overflows for a size near INT64_MAX.
        const int64_t expected_chunks = file.size <= kChunkBytes ? 1 : file.size / kChunkBytes + (file.size % kChunkBytes != 0);
        if (static_cast<int64_t>(file.chunks.size()) != expected_chunks ||
            (expected_chunks == 1 && file.chunks.front() != file.sha256)) {
            error = "manifest file \"" + file.path + "\": " + std::to_string(file.chunks.size()) +
                    " chunk hashes do not fit its size of " + std::to_string(file.size) + " bytes";
            return false;
        }
        manifest.files.push_back(std::move(file));
    }
    for (size_t i = 1; i < manifest.files.size(); ++i) {
        if (!(manifest.files[i - 1].path < manifest.files[i].path)) {
            error = "manifest paths must be sorted and unique (\"" + manifest.files[i].path + "\")";
            return false;
        }
    }
    // A file cannot also be a folder ("a" and "a/b"): no folder holds such a pair, the store could never build the
    // version and answered it with a 500. Each path's parents are looked up among the (now sorted) paths.
    for (const ManifestFile& file : manifest.files) {
        for (size_t slash = file.path.find('/'); slash != std::string::npos; slash = file.path.find('/', slash + 1)) {
            if (manifest.find(file.path.substr(0, slash))) {
                error = "manifest path \"" + file.path + "\" is inside \"" + file.path.substr(0, slash) + "\", which is a file";
                return false;
            }
        }
    }
    return true;
}

const ManifestFile* Manifest::find(const std::string& path) const {
    auto it = std::lower_bound(files.begin(), files.end(), path, [](const ManifestFile& f, const std::string& p) { return f.path < p; });
    return it != files.end() && it->path == path ? &*it : nullptr;
}

std::vector<std::string> Manifest::chunk_hashes() const {
    std::vector<std::string> hashes;
    for (const ManifestFile& file : files)
        hashes.insert(hashes.end(), file.chunks.begin(), file.chunks.end());
    return hashes;
}

bool scan_manifest(const std::string& root, Manifest& manifest, std::string& error, const ScanOptions& options) {
    manifest = {};
    std::vector<PendingFile> pending;
    if (!collect(root, pending, error))
        return false;
    ScanProgress progress;
    progress.files_total = static_cast<int64_t>(pending.size());
    for (const PendingFile& file : pending)
        progress.bytes_total += file.size;

    std::vector<ManifestFile> results(pending.size());
    std::atomic<size_t> next{0};
    std::atomic<bool> failed{false};
    std::mutex mutex; // guards progress, error and the reporting cadence
    int64_t last_report = 0;
    auto worker = [&] {
        std::vector<char> buffer(kChunkBytes);
        for (size_t i; !failed.load() && (i = next.fetch_add(1)) < pending.size();) {
            std::string file_error;
            auto advanced = [&](int64_t bytes) {
                if (!options.progress)
                    return;
                std::lock_guard lock(mutex);
                progress.bytes_done += bytes;
                if (progress.bytes_done - last_report >= options.progress_every || progress.bytes_done == progress.bytes_total) {
                    last_report = progress.bytes_done;
                    options.progress(progress);
                }
            };
            if (!hash_file(pending[i], results[i], buffer, file_error, advanced, options.cancel)) {
                std::lock_guard lock(mutex);
                if (!failed.exchange(true))
                    error = file_error;
                return;
            }
            std::lock_guard lock(mutex);
            ++progress.files_done;
        }
    };
    const int threads = std::clamp<int>(options.threads, 1, std::max<int>(1, static_cast<int>(pending.size())));
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t)
        pool.emplace_back(worker);
    worker();
    for (std::thread& thread : pool)
        thread.join();
    if (failed.load())
        return false;
    manifest.files = std::move(results);
    if (options.progress)
        options.progress(progress);
    return true;
}

ManifestDiff diff_manifests(const Manifest& before, const Manifest& after) {
    ManifestDiff diff;
    size_t i = 0, j = 0;
    while (i < before.files.size() || j < after.files.size()) {
        if (j == after.files.size() || (i < before.files.size() && before.files[i].path < after.files[j].path)) {
            diff.removed.push_back({before.files[i].path, before.files[i].size, 0});
            ++i;
        } else if (i == before.files.size() || after.files[j].path < before.files[i].path) {
            diff.added.push_back({after.files[j].path, 0, after.files[j].size});
            ++j;
        } else {
            if (before.files[i].sha256 != after.files[j].sha256)
                diff.changed.push_back({after.files[j].path, before.files[i].size, after.files[j].size});
            else
                ++diff.unchanged;
            ++i;
            ++j;
        }
    }
    return diff;
}

} // namespace traindeck::dataset
