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

//
// The instruction takes three cycles and a new one can start every cycle: one stream of them waits on itself. Long
// inputs are cut into three blocks whose CRCs run side by side (the second and third from 0), then joined: the CRC of
// a then b is the CRC of a moved over |b| zero bytes, XOR the CRC of b. Moving over n zero bytes is linear in the CRC
// (ZeroShift: four lookups). Images and histograms, a logdir's bulk, are records of a kilobyte or more.
constexpr size_t kLongBlock = 8192, kShortBlock = 256;

struct ZeroShift {
    std::array<std::array<uint32_t, 256>, 4> table{};

    explicit ZeroShift(size_t zeros) {
        std::array<uint32_t, 32> moved{}; // each bit of a CRC moved over the zeros
        for (size_t bit = 0; bit < 32; ++bit) {
            uint32_t crc = 1u << bit;
            for (size_t i = 0; i < zeros; ++i)
                crc = (crc >> 8) ^ kTables[0][crc & 0xffu];
            moved[bit] = crc;
        }
        for (size_t k = 0; k < 4; ++k)
            for (uint32_t b = 0; b < 256; ++b)
                for (size_t bit = 0; bit < 8; ++bit)
                    if (b >> bit & 1u)
                        table[k][b] ^= moved[8 * k + bit];
    }
    uint32_t operator()(uint32_t crc) const {
        return table[0][crc & 0xffu] ^ table[1][(crc >> 8) & 0xffu] ^ table[2][(crc >> 16) & 0xffu] ^
               table[3][crc >> 24];
    }
};

__attribute__((target("sse4.2"))) uint32_t three_blocks(const unsigned char* p, size_t block, uint32_t crc,
                                                        const ZeroShift& shift) {
    uint64_t a = crc, b = 0, c = 0;
    for (size_t i = 0; i < block; i += 8) {
        uint64_t word_a = 0, word_b = 0, word_c = 0;
        std::memcpy(&word_a, p + i, 8);
        std::memcpy(&word_b, p + block + i, 8);
        std::memcpy(&word_c, p + 2 * block + i, 8);
        a = _mm_crc32_u64(a, word_a);
        b = _mm_crc32_u64(b, word_b);
        c = _mm_crc32_u64(c, word_c);
    }
    crc = shift(static_cast<uint32_t>(a)) ^ static_cast<uint32_t>(b);
    return shift(crc) ^ static_cast<uint32_t>(c);
}

__attribute__((target("sse4.2"))) uint32_t crc32c_hardware(const unsigned char* p, size_t size, uint32_t crc) {
    static const ZeroShift long_shift(kLongBlock), short_shift(kShortBlock);
    for (; size >= 3 * kLongBlock; size -= 3 * kLongBlock, p += 3 * kLongBlock)
        crc = three_blocks(p, kLongBlock, crc, long_shift);
    for (; size >= 3 * kShortBlock; size -= 3 * kShortBlock, p += 3 * kShortBlock)
        crc = three_blocks(p, kShortBlock, crc, short_shift);
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
