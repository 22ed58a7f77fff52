#include "sourcefile.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace traindeck::importers {

Expected<std::string> read_source_file(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return Error{"cannot read " + path + ": " + std::strerror(errno) + "; check that it exists and is readable"};
    struct stat info {};
    const size_t expected = ::fstat(fd, &info) == 0 && info.st_size > 0 ? static_cast<size_t>(info.st_size) : 0;
    // Read to the end rather than to st_size (one byte more than it is asked for, to see the end): a file still being
    // appended to gives what it has now.
    std::string bytes(expected + 1, '\0');
    size_t size = 0;
    for (;;) {
        if (size == bytes.size())
            bytes.resize(bytes.size() * 2);
        const ssize_t n = ::read(fd, bytes.data() + size, bytes.size() - size);
        if (n == 0)
            break;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            const int error = errno;
            ::close(fd);
            return Error{"reading " + path + " failed after " + std::to_string(size) +
                         " bytes: " + std::strerror(error)};
        }
        size += static_cast<size_t>(n);
    }
    bytes.resize(size);
    ::close(fd);
    return bytes;
}

} // namespace traindeck::importers
