// AlignedBytes: what a dataset chunk is received into and written from with O_DIRECT.
#include "alignedbytes.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>

using traindeck::AlignedBytes;

TEST(AlignedBytes, GrowsByAppendingKeepsEveryByteAndStaysAligned) {
    AlignedBytes bytes;
    std::string expected;
    std::mt19937 rng(3);
    // Many small appends (httplib hands a body over 4 KiB at a time) and some large ones: the capacity grows by
    // doubling, not on every append.
    for (int i = 0; i < 3000; ++i) {
        std::string piece(i % 100 == 0 ? 100000 : rng() % 5000, '\0');
        for (char& c : piece)
            c = static_cast<char>(rng());
        bytes.append(piece.data(), piece.size());
        expected += piece;
        ASSERT_EQ(reinterpret_cast<uintptr_t>(bytes.data()) % AlignedBytes::kAlignment, 0u);
    }
    ASSERT_EQ(bytes.size(), expected.size());
    EXPECT_TRUE(bytes.view() == expected);
}

TEST(AlignedBytes, ResizeKeepsWhatIsThereAndAMoveTakesTheMemory) {
    AlignedBytes bytes(std::string_view("0123456789"));
    bytes.resize(4 << 20);
    ASSERT_EQ(bytes.size(), size_t(4) << 20);
    EXPECT_EQ(bytes.view().substr(0, 10), "0123456789");
    bytes.resize(4);
    EXPECT_EQ(bytes.view(), "0123");
    const char* where = bytes.data();
    AlignedBytes moved(std::move(bytes));
    EXPECT_EQ(moved.data(), where);
    EXPECT_EQ(moved.view(), "0123");
}
