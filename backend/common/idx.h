#pragma once
// The IDX format of MNIST and Fashion-MNIST (plain or gzip): the one reader behind the engine's load_idx (what a
// built-in job trains on) and the dataset inspection (what the console checks before it registers a version).
// Layout: two zero bytes, a type byte (0x08 = unsigned byte), a dimension count, one big-endian u32 per dimension,
// then exactly the product of the dimensions in bytes. Anything else is refused with the file's path and what to do.
#include "expected.h"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace traindeck {

struct IdxFile {
    std::vector<uint32_t> dims;
    std::vector<uint8_t> data; // the bytes of the first kept samples (all of them unless fewer were asked for)

    uint64_t elements() const;     // every dimension multiplied: the bytes of data the header announces
    uint64_t sample_bytes() const; // the dimensions after the first multiplied: one image, one label
};

// Most data bytes a header may announce (1 TiB): above it the header is taken as corrupt, and the products stay far
// from overflowing.
constexpr uint64_t kIdxMaxElements = uint64_t(1) << 40;

// Reads the whole file (the data must be exactly what the header announces) and keeps the first keep_samples
// samples' bytes.
Expected<IdxFile> read_idx(const std::string& path, int expected_dims,
                           size_t keep_samples = std::numeric_limits<size_t>::max());

} // namespace traindeck
