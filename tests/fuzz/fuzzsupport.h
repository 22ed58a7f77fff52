#pragma once
// What the fuzz targets share: a failed property is a crash (libFuzzer keeps the input that made it), and the
// readers that take a path get the fuzzer's bytes through a memory file or a private temp folder, so every target
// calls the project's real reader and not a copy of it that takes a buffer.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <sys/mman.h>
#include <unistd.h>

namespace traindeck::fuzz {

// abort(), not an exception: the code under test may catch exceptions, and libFuzzer reports an abort with the input.
#define FUZZ_CHECK(condition, message)                                                                                 \
    do {                                                                                                               \
        if (!(condition)) {                                                                                            \
            std::fprintf(stderr, "fuzz property failed: %s (%s) at %s:%d\n", message, #condition, __FILE__, __LINE__);  \
            std::abort();                                                                                              \
        }                                                                                                              \
    } while (0)

// A file that lives in memory (memfd): its path, /proc/self/fd/N, opens like any file (gzopen, ifstream), and
// rewriting it costs no disk I/O at fuzzing rates.
class MemoryFile {
public:
    explicit MemoryFile(const char* name) : fd_(::memfd_create(name, MFD_CLOEXEC)) {
        FUZZ_CHECK(fd_ >= 0, "memfd_create failed (Linux 3.17 or later is needed)");
    }
    ~MemoryFile() { ::close(fd_); }
    MemoryFile(const MemoryFile&) = delete;
    MemoryFile& operator=(const MemoryFile&) = delete;

    std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }
    void replace(const void* data, size_t size) {
        FUZZ_CHECK(::ftruncate(fd_, 0) == 0, "ftruncate of the memory file failed");
        const char* p = static_cast<const char*>(data);
        for (size_t done = 0; done < size;) {
            const ssize_t n = ::pwrite(fd_, p + done, size - done, static_cast<off_t>(done));
            FUZZ_CHECK(n > 0, "writing the memory file failed");
            done += static_cast<size_t>(n);
        }
    }

private:
    int fd_;
};

// A folder of its own under $TMPDIR (the CTest entries point it at a folder they remove), made once per process.
class TempFolder {
public:
    explicit TempFolder(const char* name) {
        std::string pattern = (std::filesystem::temp_directory_path() / (std::string(name) + "-XXXXXX")).string();
        FUZZ_CHECK(::mkdtemp(pattern.data()) != nullptr, "mkdtemp under $TMPDIR failed");
        path_ = pattern;
    }
    ~TempFolder() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    const std::string& path() const { return path_; }

private:
    std::string path_;
};

} // namespace traindeck::fuzz
