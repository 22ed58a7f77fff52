#include "crc32c.h"

#include <array>
#include <bit>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace traindeck::importers {
namespace {

// table[0] is the byte-at-a-time table; table[k][b] is the CRC of byte b followed by k zero bytes, so eight bytes
// are folded with eight lookups and no loop-carried dependency between them.
constexpr std::array<std::array<uint32_t, 256>, 8> make_tables() {
    std::array<std::array<uint32_t, 256>, 8> table{};
    for (uint32_t b = 0; b < 256; ++b) {
        uint32_t crc = b;
        for (int bit = 0; bit < 8; ++bit)
            crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
        table[0][b] = crc;
    }
    for (size_t k = 1; k < 8; ++k)
        for (uint32_t b = 0; b < 256; ++b)
            table[k][b] = (table[k - 1][b] >> 8) ^ table[0][table[k - 1][b] & 0xffu];
    return table;
}

constexpr auto kTables = make_tables();
static_assert(std::endian::native == std::endian::little, "crc32c reads little-endian words");

#if defined(__x86_64__)
// SSE4.2's crc32 instruction computes this very CRC (Castagnoli, reflected), eight bytes an instruction: about four
// times the tables' speed, which is most of an import's time on bytes that are read but not kept (images). Checked
// at run time, so one binary runs on machines without it (tables then).
const bool kHardware = __builtin_cpu_supports("sse4.2");

__attribute__((target("sse4.2"))) uint32_t crc32c_hardware(const unsigned char* p, size_t size, uint32_t crc) {
    uint64_t wide = crc;
    for (; size >= 8; size -= 8, p += 8) {
        uint64_t word = 0;
        std::memcpy(&word, p, 8);
        wide = _mm_crc32_u64(wide, word);
    }
    crc = static_cast<uint32_t>(wide);
    for (; size > 0; --size, ++p)
        crc = _mm_crc32_u8(crc, *p);
    return crc;
}
#endif

} // namespace

uint32_t crc32c(const void* data, size_t size, uint32_t crc) {
#if defined(__x86_64__)
    if (kHardware)
        return ~crc32c_hardware(static_cast<const unsigned char*>(data), size, ~crc);
#endif
    return crc32c_tables(data, size, crc);
}

uint32_t crc32c_tables(const void* data, size_t size, uint32_t crc) {
    const auto* p = static_cast<const unsigned char*>(data);
    crc = ~crc;
    for (; size >= 8; size -= 8, p += 8) {
        // Little-endian words, as the reflected CRC consumes bytes (every machine TrainDeck builds for).
        uint32_t low = 0, high = 0;
        std::memcpy(&low, p, 4);
        std::memcpy(&high, p + 4, 4);
        low ^= crc;
        crc = kTables[7][low & 0xff] ^ kTables[6][(low >> 8) & 0xff] ^ kTables[5][(low >> 16) & 0xff] ^
              kTables[4][low >> 24] ^ kTables[3][high & 0xff] ^ kTables[2][(high >> 8) & 0xff] ^
              kTables[1][(high >> 16) & 0xff] ^ kTables[0][high >> 24];
    }
    for (; size > 0; --size, ++p)
        crc = (crc >> 8) ^ kTables[0][(crc ^ *p) & 0xff];
    return ~crc;
}

} // namespace traindeck::importers
