#include "sourcefile.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace traindeck::importers {

namespace {

SourceFileStat source_stat(const struct stat& info) {
    return {static_cast<uint64_t>(info.st_dev), static_cast<uint64_t>(info.st_ino),
            info.st_size > 0 ? static_cast<uint64_t>(info.st_size) : 0,
            static_cast<int64_t>(info.st_mtim.tv_sec) * 1000000000 + info.st_mtim.tv_nsec};
}

} // namespace

bool stat_source_file(const std::string& path, SourceFileStat& stat) {
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0)
        return false;
    stat = source_stat(info);
    return true;
}

Expected<std::string> read_source_file(const std::string& path) {
    SourceBuffer buffer;
    auto bytes = buffer.read(path);
    if (!bytes)
        return Error{bytes.error()};
    return std::string(*bytes);
}

void SourceBuffer::grow(size_t capacity, size_t keep) {
    std::unique_ptr<char[]> bigger(new char[capacity]);
    if (keep > 0)
        std::memcpy(bigger.get(), data_.get(), keep);
    data_ = std::move(bigger);
    capacity_ = capacity;
}

Expected<std::string_view> SourceBuffer::read(const std::string& path) {
    SourceFileStat stat;
    return read_from(path, 0, stat);
}

Expected<std::string_view> SourceBuffer::read_from(const std::string& path, uint64_t from, SourceFileStat& stat) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return Error{"cannot read " + path + ": " + std::strerror(errno) + "; check that it exists and is readable"};
    struct stat info {};
    if (::fstat(fd, &info) == 0)
        stat = source_stat(info);
    const size_t expected = stat.size > from ? static_cast<size_t>(stat.size - from) : 0;
    // Read to the end rather than to st_size (one byte more than it is asked for, to see the end): a file still being
    // appended to gives what it has now.
    if (capacity_ < expected + 1)
        grow(expected + 1 + expected / 8, 0);
    size_t size = 0;
    for (;;) {
        if (size == capacity_)
            grow(capacity_ * 2 + 4096, size);
        // read() from the start, so that what cannot seek (a FIFO, /dev/fd/N) still reads.
        const ssize_t n = from == 0 ? ::read(fd, data_.get() + size, capacity_ - size)
                                    : ::pread(fd, data_.get() + size, capacity_ - size,
                                              static_cast<off_t>(from + static_cast<uint64_t>(size)));
        if (n == 0)
            break;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            const int error = errno;
            ::close(fd);
            return Error{"reading " + path + " failed after " + std::to_string(from + size) +
                         " bytes: " + std::strerror(error)};
        }
        size += static_cast<size_t>(n);
    }
    ::close(fd);
    return std::string_view(data_.get(), size);
}

} // namespace traindeck::importers
