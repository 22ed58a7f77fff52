#include "contentstore.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
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
        return 400;
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
    const std::string temp = dir_ + "/tmp/" + hash + "." + unique_suffix();
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
    int saved = 0;
    if (fd < 0 || !write_all(fd, bytes.data(), bytes.size(), saved)) {
        saved = fd < 0 ? errno : saved;
        if (fd >= 0)
            ::close(fd);
        ::unlink(temp.c_str());
        error = "cannot store the chunk (" + std::string(std::strerror(saved)) + ")";
        return space_status(saved);
    }
    ::close(fd);
    if (::rename(temp.c_str(), final_path.c_str()) != 0) {
        saved = errno;
        ::unlink(temp.c_str());
        error = "cannot store the chunk (" + std::string(std::strerror(saved)) + ")";
        return space_status(saved);
    }
    return 201;
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
    const std::string version = manifest.version();
    std::lock_guard lock(build_mutex_);
    if (!dataset_path(version).empty())
        return 200;
    std::vector<std::string> all;
    for (const ManifestFile& file : manifest.files)
        all.insert(all.end(), file.chunks.begin(), file.chunks.end());
    missing = missing_chunks(all);
    if (!missing.empty()) {
        error = std::to_string(missing.size()) + " chunk(s) of this version are not on the worker yet; upload them first";
        return 409;
    }
    const fs::path build = dir_ + "/tmp/build-" + version.substr(0, 16) + "." + unique_suffix();
    std::error_code ec;
    fs::create_directories(build, ec);
    // Files of one chunk are hard links to it (no copy); longer files are their chunks concatenated.
    std::vector<char> buffer(kChunkBytes);
    for (const ManifestFile& file : manifest.files) {
        const fs::path target = build / file.path;
        fs::create_directories(target.parent_path(), ec);
        if (file.chunks.size() == 1) {
            if (::link(chunk_path(file.chunks.front()).c_str(), target.c_str()) == 0)
                continue;
            if (errno != EXDEV && errno != EMLINK) {
                const int saved = errno;
                remove_tree(build);
                error = "cannot place " + file.path + " (" + std::strerror(saved) + ")";
                return space_status(saved);
            }
        }
        const int out = ::open(target.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0444);
        int saved = out < 0 ? errno : 0;
        bool ok = out >= 0;
        for (size_t c = 0; ok && c < file.chunks.size(); ++c) {
            const int in = ::open(chunk_path(file.chunks[c]).c_str(), O_RDONLY | O_CLOEXEC);
            ssize_t got = in < 0 ? -1 : 0;
            while (in >= 0 && (got = ::read(in, buffer.data(), buffer.size())) > 0 && (ok = write_all(out, buffer.data(), got, saved)))
                ;
            if (in < 0 || got < 0)
                ok = false, saved = saved ? saved : errno;
            if (in >= 0)
                ::close(in);
        }
        if (out >= 0)
            ::close(out);
        if (!ok) {
            remove_tree(build);
            error = "cannot build " + file.path + " (" + std::strerror(saved) + ")";
            return space_status(saved);
        }
    }
    // Verify every file against the manifest before the version becomes visible (two threads: hashing is the
    // cost here, and the disk is not the bottleneck on a page-cached upload).
    std::atomic<size_t> next{0};
    std::atomic<int> bad{-1};
    auto verify = [&] {
        for (size_t i; bad.load() < 0 && (i = next.fetch_add(1)) < manifest.files.size();) {
            const ManifestFile& file = manifest.files[i];
            if (sha256_file((build / file.path).string()) != file.sha256)
                bad.store(static_cast<int>(i));
        }
    };
    std::thread helper(verify);
    verify();
    helper.join();
    if (bad.load() >= 0) {
        const ManifestFile& file = manifest.files[bad.load()];
        for (const std::string& chunk : file.chunks)
            ::unlink(chunk_path(chunk).c_str());
        remove_tree(build);
        error = file.path + ": the stored chunks do not hash to the manifest's " + file.sha256.substr(0, 12) +
                "… (damaged on the worker's disk); they were dropped, upload again";
        return 422;
    }
    const std::string manifest_path = dir_ + "/manifests/" + version + ".json";
    {
        const std::string text = manifest.to_json().dump();
        const std::string temp = manifest_path + "." + unique_suffix();
        const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        int saved = fd < 0 ? errno : 0;
        const bool ok = fd >= 0 && write_all(fd, text.data(), text.size(), saved) && ::fsync(fd) == 0;
        if (fd >= 0)
            ::close(fd);
        if (!ok || ::rename(temp.c_str(), manifest_path.c_str()) != 0) {
            ::unlink(temp.c_str());
            remove_tree(build);
            error = "cannot write the manifest (" + std::string(std::strerror(saved ? saved : errno)) + ")";
            return space_status(saved ? saved : errno);
        }
    }
    make_read_only(build);
    // The version's bytes are on disk before its name says it is complete.
    if (const int fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); fd >= 0) {
        ::syncfs(fd);
        ::close(fd);
    }
    if (::rename(build.c_str(), (dir_ + "/datasets/" + version).c_str()) != 0) {
        const int saved = errno;
        remove_tree(build);
        error = "cannot publish the version (" + std::string(std::strerror(saved)) + ")";
        return space_status(saved);
    }
    return 201;
}

} // namespace traindeck::dataset
