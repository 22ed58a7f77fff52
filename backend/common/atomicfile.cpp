// Temp file + fsync + rename + folder fsync. mkstemp picks the temp name (unique even between threads of one
// process), fchmod gives it the asked mode before any byte is written.
#include "atomicfile.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace traindeck {

AtomicFile::AtomicFile(std::string path, mode_t mode, const std::string& temp_folder) : path_(std::move(path)) {
    temp_ = temp_folder.empty() ? path_ : temp_folder + "/" + std::filesystem::path(path_).filename().string();
    temp_ += ".tmp-XXXXXX";
    fd_ = ::mkostemp(temp_.data(), O_CLOEXEC);
    if (fd_ < 0) {
        error_number_ = errno ? errno : EIO;
        temp_.clear();
        return;
    }
    if (::fchmod(fd_, mode) != 0)
        error_number_ = errno ? errno : EIO;
}

AtomicFile::~AtomicFile() {
    if (fd_ >= 0)
        ::close(fd_);
    if (!committed_ && !temp_.empty())
        ::unlink(temp_.c_str());
}

bool AtomicFile::write(const void* data, size_t size) {
    const char* bytes = static_cast<const char*>(data);
    while (ok() && size > 0) {
        const ssize_t wrote = ::write(fd_, bytes, size);
        if (wrote < 0 && errno == EINTR)
            continue;
        if (wrote <= 0) {
            error_number_ = wrote < 0 && errno ? errno : ENOSPC;
            break;
        }
        bytes += wrote;
        size -= static_cast<size_t>(wrote);
    }
    return ok();
}

int AtomicFile::commit() {
    if (ok() && ::fsync(fd_) != 0)
        error_number_ = errno ? errno : EIO;
    if (fd_ >= 0 && ::close(fd_) != 0 && ok())
        error_number_ = errno ? errno : EIO;
    fd_ = -1;
    if (ok() && ::rename(temp_.c_str(), path_.c_str()) != 0)
        error_number_ = errno ? errno : EIO;
    if (!ok())
        return error_number_; // the destructor removes the temp file
    committed_ = true;
    fsync_folder(std::filesystem::path(path_).parent_path().string());
    return 0;
}

int write_file_atomically(const std::string& path, std::string_view bytes, mode_t mode) {
    AtomicFile file(path, mode);
    file.write(bytes);
    return file.commit();
}

bool write_file_atomically(const std::string& path, std::string_view bytes, mode_t mode, std::string& error) {
    const int error_number = write_file_atomically(path, bytes, mode);
    if (error_number != 0)
        error = path + ": cannot write: " + std::strerror(error_number) +
                (error_number == ENOSPC || error_number == EDQUOT ? " (is the disk full?)" : "");
    return error_number == 0;
}

void fsync_folder(const std::string& folder) {
    const int fd = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return;
    ::fsync(fd);
    ::close(fd);
}

bool read_file_upto(const std::string& path, size_t limit, std::string& bytes, bool follow_links) {
    bytes.clear();
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | (follow_links ? 0 : O_NOFOLLOW));
    if (fd < 0)
        return false;
    char buffer[65536];
    bool ok = true;
    while (bytes.size() < limit) {
        const ssize_t n = ::read(fd, buffer, std::min(sizeof(buffer), limit - bytes.size()));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            ok = n == 0;
            break;
        }
        bytes.append(buffer, static_cast<size_t>(n));
    }
    ::close(fd);
    return ok;
}

} // namespace traindeck
