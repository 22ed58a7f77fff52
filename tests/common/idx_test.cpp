// read_idx: the one IDX reader. Plain and gzip files, the first samples kept, every damaged header and data size
// refused with the file's path.
#include "idx.h"
#include "tempfolder.h"

#include <gtest/gtest.h>

#include <zlib.h>

#include <fstream>

using namespace traindeck;
using namespace traindeck::test;

namespace {

std::string idx_bytes(const std::vector<uint32_t>& dims, size_t data_bytes, uint8_t type = 0x08) {
    std::string bytes = {0, 0, static_cast<char>(type), static_cast<char>(dims.size())};
    for (uint32_t d : dims)
        for (int shift : {24, 16, 8, 0})
            bytes += static_cast<char>((d >> shift) & 0xff);
    for (size_t i = 0; i < data_bytes; ++i)
        bytes += static_cast<char>(i % 251);
    return bytes;
}

std::string write(const TempFolder& folder, const std::string& name, const std::string& bytes) {
    std::ofstream(folder.file(name), std::ios::binary) << bytes;
    return folder.file(name);
}

std::string write_gzip(const TempFolder& folder, const std::string& name, const std::string& bytes) {
    gzFile file = gzopen(folder.file(name).c_str(), "wb");
    gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(file);
    return folder.file(name);
}

} // namespace

TEST(Idx, PlainAndGzipFilesReadTheSame) {
    TempFolder folder;
    const std::string bytes = idx_bytes({5, 3, 4}, 60);
    const auto plain = read_idx(write(folder, "images-idx3-ubyte", bytes), 3);
    const auto gzip = read_idx(write_gzip(folder, "images-idx3-ubyte.gz", bytes), 3);
    ASSERT_TRUE(plain) << plain.error();
    ASSERT_TRUE(gzip) << gzip.error();
    EXPECT_EQ(plain->dims, (std::vector<uint32_t>{5, 3, 4}));
    EXPECT_EQ(plain->elements(), 60u);
    EXPECT_EQ(plain->sample_bytes(), 12u);
    ASSERT_EQ(plain->data.size(), 60u);
    EXPECT_EQ(plain->data[59], 59);
    EXPECT_EQ(gzip->dims, plain->dims);
    EXPECT_EQ(gzip->data, plain->data);
}

TEST(Idx, KeepsOnlyTheFirstSamplesButChecksTheWholeFile) {
    TempFolder folder;
    const std::string path = write(folder, "labels", idx_bytes({1000}, 1000));
    const auto first = read_idx(path, 1, 3);
    ASSERT_TRUE(first) << first.error();
    EXPECT_EQ(first->dims[0], 1000u);
    EXPECT_EQ(first->data, (std::vector<uint8_t>{0, 1, 2}));
    const auto none = read_idx(write(folder, "short", idx_bytes({1000}, 999)), 1, 0);
    ASSERT_FALSE(none); // keeping nothing still reads to the end
    EXPECT_NE(none.error().find("1000 bytes of data but 999"), std::string::npos) << none.error();
}

TEST(Idx, DamagedFilesAreRefusedWithTheirPathAndWhatIsWrong) {
    TempFolder folder;
    const struct {
        std::string name, bytes;
        int dims;
        std::string says;
    } cases[] = {
        {"empty", "", 1, "no header"},
        {"magic", std::string("\x01\x02\x08\x01\x00\x00\x00\x01x", 9), 1, "bad magic"},
        {"floats", idx_bytes({2}, 8, 0x0d), 1, "element type 0x0d"},
        {"swapped", idx_bytes({2, 2, 2}, 8), 1, "3 dimensions, expected 1"},
        {"cut-header", idx_bytes({2, 2, 2}, 0).substr(0, 9), 3, "truncated IDX header"},
        {"zero", idx_bytes({0, 28, 28}, 0), 3, "dimension 0 is 0"},
        {"negative", idx_bytes({1, 0x80000000u, 1}, 0), 3, "dimension 1 is 2147483648"},
        {"huge", idx_bytes({0x7fffffff, 0x7fffffff, 0x7fffffff}, 0), 3, "corrupt IDX header"},
        {"truncated", idx_bytes({10, 2, 2}, 39), 3, "promises 40 bytes of data but 39"},
        {"overlong", idx_bytes({10, 2, 2}, 41), 3, "bytes after the data"},
    };
    for (const auto& c : cases) {
        const std::string path = write(folder, c.name, c.bytes);
        const auto result = read_idx(path, c.dims);
        ASSERT_FALSE(result) << c.name;
        EXPECT_NE(result.error().find(path), std::string::npos) << c.name << ": " << result.error();
        EXPECT_NE(result.error().find(c.says), std::string::npos) << c.name << ": " << result.error();
    }
    const auto missing = read_idx(folder.file("absent"), 1);
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.error().find("cannot open"), std::string::npos) << missing.error();
}

TEST(Idx, ACorruptGzipStreamIsAReadError) {
    TempFolder folder;
    std::string gz = read_file(write_gzip(folder, "ok.gz", idx_bytes({100, 10, 10}, 10000)));
    gz.resize(gz.size() / 2); // cut mid-stream
    const auto cut = read_idx(write(folder, "cut.gz", gz), 3);
    ASSERT_FALSE(cut);
    EXPECT_NE(cut.error().find("cut.gz"), std::string::npos) << cut.error();
}
