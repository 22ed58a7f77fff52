#include "contentstore.h"

#include "atomicfile.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace traindeck::dataset {

namespace fs = std::filesystem;

namespace {

std::string unique_suffix() {
    static std::atomic<uint64_t> counter{0};
    return std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
}

bool write_all(int fd, const char* data, size_t size, int& saved_errno) {
    while (size > 0) {
        const ssize_t wrote = ::write(fd, data, size);
        if (wrote < 0 && errno == EINTR)
            continue;
        if (wrote <= 0) {
            saved_errno = wrote < 0 ? errno : ENOSPC;
            return false;
        }
        data += wrote;
        size -= static_cast<size_t>(wrote);
    }
    return true;
}

// Every dirty page of the store's file system on disk: one call for many files written at once. Returns 0, or
// the errno of a write-back that failed (EIO, ENOSPC): what was written is then not known to be on disk.
int sync_file_system(const std::string& dir) {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    const int saved = ::syncfs(fd) == 0 ? 0 : errno;
    ::close(fd);
    return saved;
}

int space_status(int error_number) { return error_number == ENOSPC || error_number == EDQUOT ? 507 : 500; }

void make_read_only(const fs::path& root) {
    std::error_code ec;
    for (fs::recursive_directory_iterator it(root, ec), end; it != end; it.increment(ec))
        if (it->is_directory(ec))
            ::chmod(it->path().c_str(), 0555);
    ::chmod(root.c_str(), 0555);
}

void remove_tree(const fs::path& root) {
    std::error_code ec;
    // Read-only folders cannot lose their entries: give write back first.
    for (fs::recursive_directory_iterator it(root, ec), end; it != end; it.increment(ec))
        if (it->is_directory(ec))
            ::chmod(it->path().c_str(), 0755);
    ::chmod(root.c_str(), 0755);
    fs::remove_all(root, ec);
}

} // namespace

bool ContentStore::open(const std::string& dir, std::string& error) {
    dir_ = dir;
    std::error_code ec;
    for (const char* sub : {"chunks", "datasets", "manifests", "tmp"}) {
        fs::create_directories(dir + "/" + sub, ec);
        if (ec) {
            error = "cannot create " + dir + "/" + sub + ": " + ec.message();
            return false;
        }
    }
    // Leftovers of builds and chunk writes a crash interrupted.
    for (const auto& entry : fs::directory_iterator(dir + "/tmp", ec))
        remove_tree(entry.path());
    return true;
}

std::string ContentStore::chunk_path(const std::string& hash) const { return dir_ + "/chunks/" + hash.substr(0, 2) + "/" + hash; }

bool ContentStore::has_chunk(const std::string& hash) const {
    struct stat info {};
    return is_sha256_hex(hash) && ::stat(chunk_path(hash).c_str(), &info) == 0;
}

std::vector<std::string> ContentStore::missing_chunks(const std::vector<std::string>& hashes) const {
    std::vector<std::string> missing;
    for (const std::string& hash : hashes)
        if (!has_chunk(hash) && std::find(missing.begin(), missing.end(), hash) == missing.end())
            missing.push_back(hash);
    return missing;
}

int ContentStore::put_chunk(const std::string& hash, const std::string& bytes, std::string& error) {
    if (!is_sha256_hex(hash)) {
        error = "a chunk is named by the SHA-256 of its bytes (64 lower-case hex digits)";
        return 400;
    }
    if (static_cast<int64_t>(bytes.size()) > kChunkBytes) {
        error = "a chunk holds at most " + std::to_string(kChunkBytes) + " bytes";
        return 413;
    }
    if (sha256_hex(bytes.data(), bytes.size()) != hash) {
        error = "the chunk's bytes do not hash to " + hash + " (damaged in transit); send it again";
        return 400;
    }
    if (has_chunk(hash))
        return 200;
    const std::string final_path = chunk_path(hash);
    std::error_code ec;
    fs::create_directories(fs::path(final_path).parent_path(), ec);
    // Fsynced before it is acknowledged: a chunk the client was told is stored survives a power cut.
    AtomicFile file(final_path, 0444, dir_ + "/tmp");
    file.write(bytes.data(), bytes.size());
    if (const int saved = file.commit(); saved != 0) {
        error = "cannot store the chunk (" + std::string(std::strerror(saved)) + ")";
        return space_status(saved);
    }
    return 201;
}

int ContentStore::put_chunks(const std::vector<std::pair<std::string, std::string_view>>& chunks) {
    std::vector<std::pair<std::string, std::string>> written; // temp, final
    auto drop = [&] {
        for (const auto& [temp, final_path] : written)
            ::unlink(temp.c_str());
    };
    for (const auto& [hash, bytes] : chunks) {
        if (!is_sha256_hex(hash) || has_chunk(hash))
            continue;
        const std::string temp = dir_ + "/tmp/chunk-" + hash.substr(0, 16) + "." + unique_suffix();
        const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
        int saved = fd < 0 ? errno : 0;
        if (fd >= 0) {
            write_all(fd, bytes.data(), bytes.size(), saved);
            ::close(fd);
        }
        written.emplace_back(temp, chunk_path(hash));
        if (saved != 0) {
            drop();
            return saved;
        }
    }
    if (written.empty())
        return 0;
    // Every chunk's bytes are on disk before any has its name.
    if (const int saved = sync_file_system(dir_); saved != 0) {
        drop();
        return saved;
    }
    std::error_code ec;
    for (const auto& [temp, final_path] : written) {
        fs::create_directories(fs::path(final_path).parent_path(), ec);
        if (::rename(temp.c_str(), final_path.c_str()) != 0) {
            const int saved = errno;
            drop();
            return saved;
        }
    }
    // And the names: a failure is said (the sender is not told the chunks are safe), though the names stay, since
    // another upload may have been acknowledged for the same chunk meanwhile.
    return sync_file_system(dir_);
}

bool ContentStore::read_chunk(const std::string& hash, std::string& bytes) const {
    // One byte more than a chunk may hold: a larger file under a chunk's name is no chunk.
    return is_sha256_hex(hash) && read_file_upto(chunk_path(hash), static_cast<size_t>(kChunkBytes) + 1, bytes) &&
           static_cast<int64_t>(bytes.size()) <= kChunkBytes;
}

int ContentStore::put_manifest(const Manifest& manifest) {
    return write_file_atomically(dir_ + "/manifests/" + manifest.version() + ".json", manifest.to_json().dump());
}

bool ContentStore::stored_manifest(const std::string& version, Manifest& manifest, std::string& error) const {
    if (!is_sha256_hex(version)) {
        error = "a version is 64 lower-case hex digits";
        return false;
    }
    std::string text;
    if (!read_file_upto(dir_ + "/manifests/" + version + ".json", size_t(256) << 20, text)) {
        error = "version " + version.substr(0, 12) + "… is not on this worker";
        return false;
    }
    const nlohmann::json parsed = nlohmann::json::parse(text, nullptr, false);
    if (parsed.is_discarded() || !Manifest::from_json(parsed, manifest, error) || manifest.version() != version) {
        error =
            "the stored manifest of " + version.substr(0, 12) + "… is damaged" + (error.empty() ? "" : ": " + error);
        return false;
    }
    return true;
}

std::string ContentStore::dataset_path(const std::string& version) const {
    if (!is_sha256_hex(version))
        return {};
    const std::string path = dir_ + "/datasets/" + version;
    std::error_code ec;
    return fs::is_directory(path, ec) ? path : std::string();
}

std::vector<std::string> ContentStore::versions() const {
    std::vector<std::string> list;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir_ + "/datasets", ec))
        if (is_sha256_hex(entry.path().filename().string()))
            list.push_back(entry.path().filename().string());
    std::sort(list.begin(), list.end());
    return list;
}

int ContentStore::materialize(const Manifest& manifest, std::vector<std::string>& missing, std::string& error) {
    std::lock_guard lock(build_mutex_);
    if (!dataset_path(manifest.version()).empty())
        return 200;
    return build(manifest, missing, error);
}

int ContentStore::build(const Manifest& manifest, std::vector<std::string>& missing, std::string& error) {
    const std::string version = manifest.version();
    missing = missing_chunks(manifest.chunk_hashes());
    if (!missing.empty()) {
        error = std::to_string(missing.size()) + " chunk(s) of this version are not on the worker yet; upload them first";
        return 409;
    }
    const fs::path build = dir_ + "/tmp/build-" + version.substr(0, 16) + "." + unique_suffix();
    std::error_code ec;
    fs::create_directories(build, ec);
    // Every file is its chunks copied in order (not hard links: a job writing to a shared inode would damage
    // the chunk, and with it every later build of any version that holds those bytes), and hashed as it is copied:
    // the version becomes visible only when every file is the manifest's. Two threads, a file at a time each: the
    // copy and the hash are the cost here, the disk is not, on a page-cached upload.
    for (const ManifestFile& file : manifest.files)
        fs::create_directories((build / file.path).parent_path(), ec);
    std::atomic<size_t> next{0};
    std::atomic<bool> stop{false};
    std::mutex failure_mutex;
    int failed_status = 0;
    std::string failure;
    auto copy = [&] {
        std::vector<char> buffer(kChunkBytes);
        for (size_t i; !stop.load() && (i = next.fetch_add(1)) < manifest.files.size();) {
            const ManifestFile& file = manifest.files[i];
            const int out = ::open((build / file.path).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0444);
            int saved = out < 0 ? errno : 0;
            bool ok = out >= 0;
            Sha256 whole;
            for (size_t c = 0; ok && c < file.chunks.size(); ++c) {
                const int in = ::open(chunk_path(file.chunks[c]).c_str(), O_RDONLY | O_CLOEXEC);
                ssize_t got = in < 0 ? -1 : 0;
                while (in >= 0 && (got = ::read(in, buffer.data(), buffer.size())) > 0 &&
                       (ok = write_all(out, buffer.data(), got, saved)))
                    whole.update(buffer.data(), static_cast<size_t>(got));
                if (in < 0 || got < 0)
                    ok = false, saved = saved ? saved : errno;
                if (in >= 0)
                    ::close(in);
            }
            if (out >= 0)
                ::close(out);
            std::lock_guard lock(failure_mutex);
            if (!ok) {
                if (!stop.exchange(true)) {
                    failed_status = space_status(saved);
                    failure = "cannot build " + file.path + " (" + std::strerror(saved) + ")";
                }
            } else if (whole.hex() != file.sha256 && !stop.exchange(true)) {
                for (const std::string& chunk : file.chunks)
                    ::unlink(chunk_path(chunk).c_str());
                failed_status = 422;
                failure = file.path + ": the stored chunks do not hash to the manifest's " + file.sha256.substr(0, 12) +
                          "… (damaged on the worker's disk); they were dropped, upload again";
            }
        }
    };
    std::thread helper(copy);
    copy();
    helper.join();
    if (stop.load()) {
        remove_tree(build);
        error = failure;
        return failed_status;
    }
    if (const int saved = write_file_atomically(dir_ + "/manifests/" + version + ".json", manifest.to_json().dump());
        saved != 0) {
        remove_tree(build);
        error = "cannot write the manifest (" + std::string(std::strerror(saved)) + ")";
        return space_status(saved);
    }
    make_read_only(build);
    if (!write_seal(version, build.string(), error)) {
        remove_tree(build);
        return 500;
    }
    // The version's bytes are on disk before its name says it is complete.
    if (const int saved = sync_file_system(dir_); saved != 0) {
        remove_tree(build);
        error = "cannot write the version to disk (" + std::string(std::strerror(saved)) + ")";
        return space_status(saved);
    }
    if (::rename(build.c_str(), (dir_ + "/datasets/" + version).c_str()) != 0) {
        const int saved = errno;
        remove_tree(build);
        error = "cannot publish the version (" + std::string(std::strerror(saved)) + ")";
        return space_status(saved);
    }
    return 201;
}

namespace {

// Each regular file under root as "path inode size mtime_ns ctime_ns", sorted; false if the tree cannot be read
// or holds something other than folders and regular files.
bool seal_lines(const fs::path& root, std::vector<std::string>& lines, std::string& problem) {
    std::error_code ec;
    for (fs::recursive_directory_iterator it(root, ec), end; it != end; it.increment(ec)) {
        struct stat info {};
        if (::lstat(it->path().c_str(), &info) != 0) {
            problem = "cannot read " + it->path().string();
            return false;
        }
        if (S_ISDIR(info.st_mode))
            continue;
        const std::string relative = it->path().lexically_relative(root).string();
        if (!S_ISREG(info.st_mode)) {
            problem = relative + " is not a regular file";
            return false;
        }
        lines.push_back(relative + " " + std::to_string(info.st_ino) + " " + std::to_string(info.st_size) + " " +
                        std::to_string(info.st_mtim.tv_sec * 1000000000LL + info.st_mtim.tv_nsec) + " " +
                        std::to_string(info.st_ctim.tv_sec * 1000000000LL + info.st_ctim.tv_nsec));
    }
    if (ec) {
        problem = "cannot list " + root.string() + ": " + ec.message();
        return false;
    }
    std::sort(lines.begin(), lines.end());
    return true;
}

bool read_text(const std::string& path, std::string& text) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    text.clear();
    char buffer[65536];
    for (ssize_t got; (got = ::read(fd, buffer, sizeof(buffer))) > 0;)
        text.append(buffer, static_cast<size_t>(got));
    ::close(fd);
    return true;
}

} // namespace

bool ContentStore::write_seal(const std::string& version, const std::string& folder, std::string& error) {
    std::vector<std::string> lines;
    if (!seal_lines(folder, lines, error))
        return false;
    std::string text;
    for (const auto& line : lines)
        text += line + "\n";
    if (const int saved = write_file_atomically(dir_ + "/manifests/" + version + ".seal", text); saved != 0) {
        error = "cannot write the version's seal (" + std::string(std::strerror(saved)) + ")";
        return false;
    }
    return true;
}

std::string ContentStore::check(const std::string& version) {
    const std::string folder = dataset_path(version);
    if (folder.empty())
        return "version " + version.substr(0, 12) + "… is not in the store";
    std::string sealed;
    if (!read_text(dir_ + "/manifests/" + version + ".seal", sealed)) {
        // Published before seals existed: verify every byte once, then seal what was verified.
        std::string text, error;
        Manifest manifest;
        if (!read_text(dir_ + "/manifests/" + version + ".json", text) ||
            !Manifest::from_json(nlohmann::json::parse(text, nullptr, false), manifest, error))
            return "its manifest is missing or unreadable";
        for (const ManifestFile& file : manifest.files)
            if (sha256_file(folder + "/" + file.path) != file.sha256)
                return file.path + " does not hash to the manifest";
        std::lock_guard lock(build_mutex_);
        return write_seal(version, folder, error) ? std::string() : error;
    }
    std::vector<std::string> now;
    std::string problem;
    if (!seal_lines(folder, now, problem))
        return problem;
    std::vector<std::string> then;
    for (size_t start = 0, end; start < sealed.size(); start = end + 1) {
        end = sealed.find('\n', start);
        if (end == std::string::npos)
            end = sealed.size();
        if (end > start)
            then.push_back(sealed.substr(start, end - start));
    }
    const auto path_of = [](const std::string& line) { // the path before the four numbers (it may hold spaces)
        size_t cut = line.size();
        for (int field = 0; field < 4 && cut > 0 && cut != std::string::npos; ++field)
            cut = line.rfind(' ', cut - 1);
        return line.substr(0, cut);
    };
    for (size_t i = 0, j = 0; i < then.size() || j < now.size();) {
        if (i < then.size() && j < now.size() && then[i] == now[j]) {
            ++i, ++j;
            continue;
        }
        const std::string was = i < then.size() ? path_of(then[i]) : std::string();
        const std::string is = j < now.size() ? path_of(now[j]) : std::string();
        if (was == is)
            return was + " was changed";
        if (j >= now.size() || (i < then.size() && was < is))
            return was + " was removed";
        return is + " was added";
    }
    return {};
}

int ContentStore::rebuild(const std::string& version, std::string& error) {
    std::string text;
    Manifest manifest;
    if (!is_sha256_hex(version) || !read_text(dir_ + "/manifests/" + version + ".json", text) ||
        !Manifest::from_json(nlohmann::json::parse(text, nullptr, false), manifest, error) || manifest.version() != version) {
        error = "the manifest of version " + version.substr(0, 12) + "… is missing or damaged; upload the version again";
        return 422;
    }
    std::lock_guard lock(build_mutex_);
    const std::string folder = dir_ + "/datasets/" + version;
    const std::string aside = dir_ + "/tmp/changed-" + version.substr(0, 16) + "." + unique_suffix();
    if (::rename(folder.c_str(), aside.c_str()) != 0 && errno != ENOENT) {
        error = "cannot move the changed version aside (" + std::string(std::strerror(errno)) + ")";
        return 500;
    }
    remove_tree(aside);
    std::vector<std::string> missing;
    const int status = build(manifest, missing, error);
    if (status == 409)
        error = "its chunks are gone from the store; upload the version again";
    return status;
}

} // namespace traindeck::dataset
