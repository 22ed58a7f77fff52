#pragma once
// FNV-1a, 64 bits: the engine's one hash of bytes that is not a checksum against tampering, only against accidents
// and for keys (a checkpoint's trailer, a spec's hash, an image cache's key).
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace traindeck::engine {

struct Fnv1a {
    static constexpr uint64_t kOffset = 0xcbf29ce484222325ULL;
    uint64_t hash = kOffset;
    void add(const void* data, size_t size) {
        const auto* bytes = static_cast<const unsigned char*>(data);
        for (size_t i = 0; i < size; ++i) {
            hash ^= bytes[i];
            hash *= 0x100000001b3ULL;
        }
    }
};

// The hash of text, from the standard offset or another starting value (a second, independent hash of the same text).
inline uint64_t fnv1a(std::string_view text, uint64_t start = Fnv1a::kOffset) {
    Fnv1a h{start};
    h.add(text.data(), text.size());
    return h.hash;
}

} // namespace traindeck::engine
