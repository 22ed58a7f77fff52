#include "checkpoint.h"
#include "requireall.h"
#include "testsupport.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace traindeck::engine;
using traindeck::test::TempDir;
namespace fs = std::filesystem;

namespace {
Checkpoint sample(long step) {
    Checkpoint c;
    c.state.step = step;
    c.state.epoch = 1;
    c.state.batch_in_epoch = 17;
    c.state.spec_hash = 0xabcdef;
    c.state.epoch_rng = {1, 2, 3, 0xffffffffffffffffULL};
    c.state.dropout_rng = {5, 6, 7, 8};
    c.optimizer = "adamw";
    c.params = {1.5f, -2.0f, 3.25f};
    c.optimizer_state = {{0.1f, 0.2f, 0.3f}, {4.0f, 5.0f, 6.0f}};
    return c;
}
} // namespace

TEST(Checkpoint, RoundTripsEveryField) {
    TempDir dir;
    auto path = write_checkpoint(dir.path().string(), sample(42), 3);
    ASSERT_TRUE(path) << path.error();
    EXPECT_EQ(fs::path(*path).filename(), "ckpt-0000000042.tdck");
    auto back = read_checkpoint(*path);
    ASSERT_TRUE(back) << back.error();
    EXPECT_EQ(back->state.step, 42);
    EXPECT_EQ(back->state.batch_in_epoch, 17);
    EXPECT_EQ(back->state.spec_hash, 0xabcdefu);
    EXPECT_EQ(back->state.epoch_rng, sample(42).state.epoch_rng);
    EXPECT_EQ(back->state.dropout_rng, sample(42).state.dropout_rng);
    EXPECT_EQ(back->params, sample(42).params);
    EXPECT_EQ(back->optimizer_state, sample(42).optimizer_state);
}

TEST(Checkpoint, KeepsNewestAndLeavesNoTempFiles) {
    TempDir dir;
    for (long step : {10, 20, 30, 40})
        ASSERT_TRUE(write_checkpoint(dir.path().string(), sample(step), 2));
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir.path()))
        names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, (std::vector<std::string>{"ckpt-0000000030.tdck", "ckpt-0000000040.tdck"}));
}

TEST(Checkpoint, CorruptNewestFallsBackToPrevious) {
    TempDir dir;
    ASSERT_TRUE(write_checkpoint(dir.path().string(), sample(1), 3));
    auto newest = write_checkpoint(dir.path().string(), sample(2), 3);
    ASSERT_TRUE(newest);
    {
        std::fstream file(*newest, std::ios::in | std::ios::out | std::ios::binary);
        file.seekp(-10, std::ios::end);
        file.put('\x7f');
    }
    auto direct = read_checkpoint(*newest);
    ASSERT_FALSE(direct);
    EXPECT_NE(direct.error().find("corrupt"), std::string::npos);
    auto found = find_latest_checkpoint(dir.path().string());
    ASSERT_TRUE(found);
    EXPECT_EQ(found->checkpoint.state.step, 1);
    ASSERT_EQ(found->skipped.size(), 1u);

    // A torn write (file cut short) is caught the same way.
    fs::resize_file(found->path, fs::file_size(found->path) - 5);
    auto again = find_latest_checkpoint(dir.path().string());
    ASSERT_TRUE(again);
    EXPECT_TRUE(again->path.empty());
    EXPECT_EQ(again->skipped.size(), 2u);
}

TEST(Checkpoint, UnwritableFolderIsAnError) {
    TempDir dir;
    traindeck::test::write_text(dir.file("a-file"), "x");
    auto result = write_checkpoint(dir.file("a-file") + "/sub", sample(1), 1);
    ASSERT_FALSE(result);
    EXPECT_NE(result.error().find("cannot create the checkpoint folder"), std::string::npos) << result.error();
}

TEST(Checkpoint, FullDiskLeavesNothingBehind) {
    // /dev/full-like behaviour needs a filesystem of our own; a tiny tmpfs if we may mount one.
    TempDir dir;
    const std::string mount_point = dir.file("tiny");
    fs::create_directories(mount_point);
    if (std::system(("mount -t tmpfs -o size=64k tmpfs " + mount_point + " 2>/dev/null").c_str()) != 0) {
        TRAINDECK_SKIP("cannot mount a small tmpfs here to fill up");
    }
    Checkpoint big = sample(5);
    big.params.assign(100000, 1.0f); // 400 kB > 64 kB
    big.optimizer_state = {std::vector<float>(100000, 0.0f)};
    auto result = write_checkpoint(mount_point, big, 3);
    const bool empty = fs::is_empty(mount_point);
    std::system(("umount " + mount_point).c_str());
    ASSERT_FALSE(result);
    EXPECT_NE(result.error().find("disk full"), std::string::npos) << result.error();
    EXPECT_TRUE(empty) << "a partial checkpoint was left behind";
}
