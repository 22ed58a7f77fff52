// Being told of changes under a followed path (changewatch.h): an append, a new file, a folder made after the watch
// began and a file in it; a followed file through its folder; and nothing told when nothing changed. Each wait for a
// change is bounded by a long timeout only so that a failure ends: a change is told as soon as it happens.
#include "changewatch.h"
#include "importertest.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace traindeck::importers;
using traindeck::test::TempDir;

namespace {

constexpr int kLong = 20000; // ms: only a failure waits this long

void append(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::app) << bytes; }

} // namespace

TEST(ChangeWatch, EveryKindOfWriteUnderTheFolderIsToldAndNothingElse) {
    TempDir dir;
    const std::string logdir = dir.file("logdir");
    std::filesystem::create_directories(logdir + "/run");
    append(logdir + "/run/events.out.tfevents.1", "a");
    ChangeWatch watch({logdir});
    ASSERT_EQ(watch.problem(), "");
    EXPECT_FALSE(watch.wait(50));                       // nothing yet
    append(logdir + "/run/events.out.tfevents.1", "b"); // an append
    EXPECT_TRUE(watch.wait(kLong));
    EXPECT_FALSE(watch.wait(50));                       // all of it was taken
    append(logdir + "/run/events.out.tfevents.2", "c"); // a new file
    EXPECT_TRUE(watch.wait(kLong));
    std::filesystem::create_directories(logdir + "/later/deeper"); // folders made after the watch began
    EXPECT_TRUE(watch.wait(kLong));
    while (watch.wait(50)) {
    }
    append(logdir + "/later/deeper/events.out.tfevents.3", "d"); // written in one of them
    EXPECT_TRUE(watch.wait(kLong));
    std::filesystem::rename(logdir + "/run/events.out.tfevents.2", logdir + "/run/events.out.tfevents.4");
    EXPECT_TRUE(watch.wait(kLong));
    std::filesystem::remove(logdir + "/run/events.out.tfevents.4");
    EXPECT_TRUE(watch.wait(kLong));
    EXPECT_FALSE(watch.wait(50));
}

TEST(ChangeWatch, AFollowedFileIsWatchedThroughItsFolder) {
    TempDir dir;
    const std::string file = dir.file("metrics.csv");
    append(file, "step,loss\n");
    std::filesystem::create_directories(dir.file("elsewhere"));
    ChangeWatch watch({dir.file("elsewhere"), file});
    ASSERT_EQ(watch.problem(), "");
    EXPECT_FALSE(watch.wait(50));
    append(file, "1,0.5\n");
    EXPECT_TRUE(watch.wait(kLong));
    append(dir.file("elsewhere") + "/x.csv", "1\n"); // the other path
    EXPECT_TRUE(watch.wait(kLong));
}
