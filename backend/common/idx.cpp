// IDX through zlib's gzread, which passes uncompressed files through unchanged: the header first, then the data in
// 1 MiB reads, counted to the end so that a truncated or overlong file is refused, never half read.
#include "idx.h"

#include <zlib.h>

#include <algorithm>
#include <memory>
#include <type_traits>

namespace traindeck {

namespace {

struct GzCloser {
    void operator()(gzFile file) const { gzclose(file); }
};
using GzFile = std::unique_ptr<std::remove_pointer_t<gzFile>, GzCloser>;

uint32_t big_endian32(const unsigned char* p) {
    return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

// What a failed gzread says, as the message for the user.
std::string read_error(gzFile file, const std::string& path) {
    int code = 0;
    const char* message = gzerror(file, &code);
    return path + ": cannot read: " + (message ? message : "zlib error") +
           " (is the gzip stream truncated or corrupt?)";
}

// Reads exactly size bytes; false at the end of the file. A zlib failure is a message in error.
bool read_exactly(gzFile file, void* out, unsigned size, const std::string& path, std::string& error) {
    const int got = gzread(file, out, size);
    if (got < 0)
        error = read_error(file, path);
    return got == static_cast<int>(size);
}

std::string hex_byte(unsigned char byte) {
    constexpr char kDigits[] = "0123456789abcdef";
    return std::string("0x") + kDigits[byte >> 4] + kDigits[byte & 15];
}

} // namespace

uint64_t IdxFile::elements() const {
    uint64_t n = 1;
    for (uint32_t d : dims)
        n *= d;
    return n;
}

uint64_t IdxFile::sample_bytes() const { return dims.empty() ? 0 : elements() / std::max<uint32_t>(1, dims[0]); }

Expected<IdxFile> read_idx(const std::string& path, int expected_dims, size_t keep_samples) {
    GzFile file(gzopen(path.c_str(), "rb"));
    if (!file)
        return Error{path + ": cannot open (does the file exist and is it readable?)"};
    std::string error;
    unsigned char magic[4];
    if (!read_exactly(file.get(), magic, 4, path, error))
        return Error{error.empty() ? path + ": truncated IDX file (no header)" : error};
    if (magic[0] != 0 || magic[1] != 0)
        return Error{path + ": not an IDX file (bad magic number: a corrupt header); replace it with an intact copy"};
    if (magic[2] != 0x08)
        return Error{
            path + ": IDX element type " + hex_byte(magic[2]) +
            " is not supported: only unsigned bytes (0x08) are (a corrupt header, or another kind of IDX file?)"};
    if (magic[3] != expected_dims)
        return Error{path + ": IDX file has " + std::to_string(magic[3]) + " dimensions, expected " +
                     std::to_string(expected_dims) + " (a corrupt header, or images and labels swapped?)"};
    IdxFile idx;
    uint64_t elements = 1;
    for (int d = 0; d < expected_dims; ++d) {
        unsigned char size[4];
        if (!read_exactly(file.get(), size, 4, path, error))
            return Error{error.empty() ? path + ": truncated IDX header" : error};
        const uint32_t dim = big_endian32(size);
        // Each size becomes an int (Dataset::height, width) and their product a byte count: a corrupt header must
        // neither turn negative there nor wrap the count around to the size of the file.
        if (dim == 0 || dim > uint32_t(std::numeric_limits<int>::max()) || elements > kIdxMaxElements / dim)
            return Error{path + ": corrupt IDX header (dimension " + std::to_string(d) + " is " + std::to_string(dim) +
                         "); re-download or reinstall the data"};
        idx.dims.push_back(dim);
        elements *= dim;
    }
    const uint64_t keep_bytes = keep_samples >= idx.dims[0] ? elements : keep_samples * idx.sample_bytes();
    std::vector<unsigned char> buffer(1 << 20);
    uint64_t total = 0;
    for (;;) {
        const int got = gzread(file.get(), buffer.data(), static_cast<unsigned>(buffer.size()));
        if (got < 0)
            return Error{read_error(file.get(), path)};
        if (got == 0)
            break;
        if (idx.data.size() < keep_bytes) {
            const size_t take =
                static_cast<size_t>(std::min<uint64_t>(keep_bytes - idx.data.size(), static_cast<uint64_t>(got)));
            idx.data.insert(idx.data.end(), buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(take));
        }
        total += static_cast<uint64_t>(got);
        if (total > elements)
            break; // already too long: no need to decompress the rest to say so
    }
    if (total < elements)
        return Error{path + ": truncated IDX file: the header promises " + std::to_string(elements) +
                     " bytes of data but " + std::to_string(total) +
                     " are present (re-download or reinstall the data)"};
    if (total > elements)
        return Error{path + ": IDX file has bytes after the data its header describes (wrong or concatenated file?)"};
    return idx;
}

} // namespace traindeck
