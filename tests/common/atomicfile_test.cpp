// AtomicFile: a file is whole or absent, a failed or abandoned write leaves the previous file and no temp file.
#include "atomicfile.h"
#include "requireall.h"
#include "tempfolder.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>

#include <sys/stat.h>

using namespace traindeck;
using namespace traindeck::test;
namespace fs = std::filesystem;

namespace {

mode_t mode_of(const std::string& path) {
    struct stat info {};
    ::stat(path.c_str(), &info);
    return info.st_mode & 0777;
}

} // namespace

TEST(AtomicFile, WritesTheWholeFileWithTheAskedModeAndNoTempLeft) {
    TempFolder folder;
    const std::string path = folder.file("token");
    ASSERT_EQ(write_file_atomically(path, "secret\n", 0600), 0);
    EXPECT_EQ(read_file(path), "secret\n");
    EXPECT_EQ(mode_of(path), 0600u);
    ASSERT_EQ(write_file_atomically(folder.file("chunk"), "bytes", 0444), 0);
    EXPECT_EQ(mode_of(folder.file("chunk")), 0444u);
    EXPECT_EQ(entries_in(folder.path), 2u); // token and chunk, no temp files
}

TEST(AtomicFile, ReplacesThePreviousFileInOneStep) {
    TempFolder folder;
    const std::string path = folder.file("launch.json");
    ASSERT_EQ(write_file_atomically(path, "old"), 0);
    {
        AtomicFile file(path);
        ASSERT_TRUE(file.write("new "));
        ASSERT_TRUE(file.write("content"));
        EXPECT_EQ(read_file(path), "old"); // until commit, readers see the previous file
        ASSERT_EQ(file.commit(), 0);
    }
    EXPECT_EQ(read_file(path), "new content");
    EXPECT_EQ(entries_in(folder.path), 1u);
}

TEST(AtomicFile, AnAbandonedWriteLeavesThePreviousFileAndNoTemp) {
    TempFolder folder;
    const std::string path = folder.file("spec.json");
    ASSERT_EQ(write_file_atomically(path, "kept"), 0);
    {
        AtomicFile file(path);
        ASSERT_TRUE(file.write("half a fi"));
        EXPECT_EQ(entries_in(folder.path), 2u); // the temp file exists while writing
    }                                           // destroyed without commit: a write that threw or returned early
    EXPECT_EQ(read_file(path), "kept");
    EXPECT_EQ(entries_in(folder.path), 1u);
}

TEST(AtomicFile, AMissingFolderIsAnErrnoAndAMessage) {
    TempFolder folder;
    const std::string path = folder.file("no/such/folder/file");
    EXPECT_EQ(write_file_atomically(path, "x"), ENOENT);
    std::string error;
    EXPECT_FALSE(write_file_atomically(path, "x", 0600, error));
    EXPECT_NE(error.find(path), std::string::npos) << error;
    EXPECT_NE(error.find("No such file or directory"), std::string::npos) << error;
}

TEST(AtomicFile, TheTempFileCanLiveInAnotherFolder) {
    TempFolder folder;
    fs::create_directories(folder.file("chunks"));
    fs::create_directories(folder.file("tmp"));
    AtomicFile file(folder.file("chunks/ab12"), 0444, folder.file("tmp"));
    ASSERT_TRUE(file.write("chunk bytes"));
    EXPECT_EQ(entries_in(folder.file("chunks")), 0u); // readers of chunks/ never see a temp file
    EXPECT_EQ(entries_in(folder.file("tmp")), 1u);
    ASSERT_EQ(file.commit(), 0);
    EXPECT_EQ(read_file(folder.file("chunks/ab12")), "chunk bytes");
    EXPECT_EQ(entries_in(folder.file("tmp")), 0u);
}

TEST(AtomicFile, AFullDiskIsENOSPCAndLeavesThePreviousFile) {
    TempFolder folder;
    const std::string disk = folder.file("tiny");
    fs::create_directories(disk);
    if (std::system(("mount -t tmpfs -o size=64k tmpfs " + disk + " 2>/dev/null").c_str()) != 0) {
        TRAINDECK_SKIP("cannot mount a small tmpfs here to fill up (needs root)");
    }
    const std::string path = disk + "/checkpoint";
    const int small = write_file_atomically(path, "previous");
    const int big = write_file_atomically(path, std::string(size_t{200} * 1024, 'x'));
    const std::string content = read_file(path);
    const size_t entries = entries_in(disk);
    std::system(("umount -l " + disk).c_str());
    EXPECT_EQ(small, 0);
    EXPECT_EQ(big, ENOSPC);
    EXPECT_EQ(content, "previous");
    EXPECT_EQ(entries, 1u);
}
