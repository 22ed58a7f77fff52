#pragma once
// Bytes no compressor or deduplication can shorten, the same for the same seed: test chunks, files and bodies.
#include <random>
#include <string>

namespace traindeck::test {

inline std::string random_bytes(size_t size, unsigned seed) {
    std::mt19937 rng(seed);
    std::string bytes(size, '\0');
    for (char& c : bytes)
        c = static_cast<char>(rng());
    return bytes;
}

} // namespace traindeck::test
