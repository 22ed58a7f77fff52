#pragma once
// Reading a source file whole, read-only, for the importers: they never write, create or lock anything where they
// read (a logdir may belong to a running job, or sit on a read-only mount), and they read a file once.
#include "expected.h"

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace traindeck::importers {

// The file's bytes, or why not ("cannot read X: Permission denied; ...").
Expected<std::string> read_source_file(const std::string& path);

// The same into a buffer kept from one file to the next, for readers of many large files (a logdir's event files):
// a fresh buffer a file is zeroed and faulted in page by page again, which took more time than reading the bytes.
// The bytes stay valid until the next read.
// read_from() also says which file it read and how it stood when opened (a follower compares it with the last look).
struct SourceFileStat {
    uint64_t device = 0, inode = 0;
    uint64_t size = 0; // when opened; the bytes read may go past it (a writer still appending)
    int64_t mtime_ns = 0;
};

// A file's stat as read_from() gives it, without reading the file; false when it cannot be stat'ed.
bool stat_source_file(const std::string& path, SourceFileStat& stat);

class SourceBuffer {
public:
    Expected<std::string_view> read(const std::string& path);
    // The bytes from offset `from` to the end (none when the file is shorter), and the file's stat.
    Expected<std::string_view> read_from(const std::string& path, uint64_t from, SourceFileStat& stat);

private:
    void grow(size_t capacity, size_t keep);

    std::unique_ptr<char[]> data_; // not initialised: read() fills what it hands out
    size_t capacity_ = 0;
};

} // namespace traindeck::importers
