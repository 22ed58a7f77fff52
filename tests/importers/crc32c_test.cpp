// CRC-32C against its published check value and a bit-at-a-time reference, across lengths and alignments that walk
// every path of the slice-by-8 loop and of the SSE4.2 one; the masking TFRecord and LevelDB apply; continuing a CRC
// over pieces.
#include "crc32c.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

using namespace traindeck::importers;

namespace {

uint32_t reference_crc32c(const std::string& bytes) {
    uint32_t crc = 0xffffffffu;
    for (const unsigned char c : bytes) {
        crc ^= c;
        for (int bit = 0; bit < 8; ++bit)
            crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
    }
    return ~crc;
}

} // namespace

TEST(Crc32c, MatchesTheCheckValueAndKnownVectors) {
    EXPECT_EQ(crc32c(std::string_view("123456789")), 0xE3069283u); // the CRC catalogue's check value for CRC-32C
    EXPECT_EQ(crc32c(std::string_view("")), 0u);
    EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAu);   // RFC 3720 B.4: 32 bytes of zeros
    EXPECT_EQ(crc32c(std::string(32, '\xff')), 0x62A8AB43u); // RFC 3720 B.4: 32 bytes of ones
}

TEST(Crc32c, SliceByEightAgreesWithBitAtATimeAtEveryLengthAndAlignment) {
    std::mt19937 random(17);
    std::string buffer(300, '\0');
    for (char& c : buffer)
        c = static_cast<char>(random());
    for (size_t offset = 0; offset < 8; ++offset)
        for (size_t length = 0; length + offset <= buffer.size(); length += 7) {
            const std::string piece = buffer.substr(offset, length);
            ASSERT_EQ(crc32c(piece), reference_crc32c(piece)) << "offset " << offset << " length " << length;
            // The tables, also where the CPU's crc32 instruction does the work of crc32c().
            ASSERT_EQ(crc32c_tables(piece.data(), piece.size()), reference_crc32c(piece))
                << "offset " << offset << " length " << length;
        }
}

// Long inputs are cut into three blocks whose CRCs are computed side by side and joined (768 bytes and more, 24 KB
// and more): lengths around those sizes and their multiples, at every alignment, against the tables.
TEST(Crc32c, TheThreeWayLoopAgreesWithTheTablesAtTheBlockSizes) {
    std::mt19937 random(23);
    std::string buffer(3 * 3 * 8192 + 3 * 256 + 64, '\0');
    for (char& c : buffer)
        c = static_cast<char>(random());
    const size_t sizes[] = {767,
                            768,
                            769,
                            775,
                            776,
                            1535,
                            1536,
                            1800,
                            2304,
                            24575,
                            24576,
                            24577,
                            24576 + 768,
                            24576 + 768 + 13,
                            2 * 24576 + 2 * 768 + 7,
                            buffer.size() - 8};
    for (const size_t length : sizes)
        for (size_t offset = 0; offset < 8; ++offset) {
            const std::string_view piece(buffer.data() + offset, length);
            ASSERT_EQ(crc32c(piece), crc32c_tables(piece.data(), piece.size())) << length << " at " << offset;
            ASSERT_EQ(crc32c(piece, 0x12345678u), crc32c_tables(piece.data(), piece.size(), 0x12345678u)) << length;
        }
    const std::string some = buffer.substr(0, 4000);
    EXPECT_EQ(crc32c(some), reference_crc32c(some));
}

TEST(Crc32c, ContinuesOverPiecesAndMasksAsTfRecordDoes) {
    const std::string a = "hello, ", b = "tfrecord";
    EXPECT_EQ(crc32c(b, crc32c(a)), crc32c(a + b));
    EXPECT_EQ(crc32c_tables(b.data(), b.size(), crc32c_tables(a.data(), a.size())), crc32c(a + b));
    const uint32_t crc = crc32c(a);
    EXPECT_EQ(mask_crc32c(crc), ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
    EXPECT_NE(mask_crc32c(crc), crc);
}
