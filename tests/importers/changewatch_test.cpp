// Being told of changes under a followed path (changewatch.h): an append, a new file, a folder made after the watch
// began and a file in it, a folder renamed within the tree; a followed file through its folder, and not the folders
// made beside it; a followed folder removed and made again; changes told no sooner than the gap asked for; and
// nothing told when nothing changed. Each wait for a change is bounded by a long timeout only so that a failure
// ends: a change is told as soon as it happens.
#include "changewatch.h"
#include "importertest.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>

using namespace traindeck::importers;
using traindeck::test::TempDir;

namespace {

constexpr int kLong = 20000; // ms: only a failure waits this long

// Whether a change is told now, without waiting: inotify queues an event within the call that made the change, so
// what a write under a watched folder causes is there when the write returns.
bool told_now(ChangeWatch& watch) { return watch.wait(0, 0); }

// Takes what is told now (a folder made tells of each folder in it).
void take_all(ChangeWatch& watch) {
    while (told_now(watch)) {
    }
}

void append(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::app) << bytes; }

} // namespace

TEST(ChangeWatch, EveryKindOfWriteUnderTheFolderIsToldAndNothingElse) {
    TempDir dir;
    const std::string logdir = dir.file("logdir");
    std::filesystem::create_directories(logdir + "/run");
    append(logdir + "/run/events.out.tfevents.1", "a");
    ChangeWatch watch({logdir});
    ASSERT_EQ(watch.take_problem(), "");
    EXPECT_FALSE(told_now(watch));                      // nothing yet
    append(logdir + "/run/events.out.tfevents.1", "b"); // an append
    EXPECT_TRUE(watch.wait(kLong));
    EXPECT_FALSE(told_now(watch));                      // all of it was taken
    append(logdir + "/run/events.out.tfevents.2", "c"); // a new file
    EXPECT_TRUE(watch.wait(kLong));
    std::filesystem::create_directories(logdir + "/later/deeper"); // folders made after the watch began
    EXPECT_TRUE(watch.wait(kLong));
    take_all(watch);
    append(logdir + "/later/deeper/events.out.tfevents.3", "d"); // written in one of them
    EXPECT_TRUE(watch.wait(kLong));
    std::filesystem::rename(logdir + "/run/events.out.tfevents.2", logdir + "/run/events.out.tfevents.4");
    EXPECT_TRUE(watch.wait(kLong));
    std::filesystem::remove(logdir + "/run/events.out.tfevents.4");
    EXPECT_TRUE(watch.wait(kLong));
    EXPECT_FALSE(told_now(watch));
}

TEST(ChangeWatch, AFollowedFileIsWatchedThroughItsFolder) {
    TempDir dir;
    const std::string file = dir.file("metrics.csv");
    append(file, "step,loss\n");
    std::filesystem::create_directories(dir.file("elsewhere"));
    ChangeWatch watch({dir.file("elsewhere"), file});
    ASSERT_EQ(watch.take_problem(), "");
    EXPECT_FALSE(told_now(watch));
    append(file, "1,0.5\n");
    EXPECT_TRUE(watch.wait(kLong));
    append(dir.file("elsewhere") + "/x.csv", "1\n"); // the other path
    EXPECT_TRUE(watch.wait(kLong));
    // A folder made beside the followed file is a change in its folder, but what is written in it is none of the
    // follower's business: it is not watched.
    std::filesystem::create_directories(dir.file("beside"));
    EXPECT_TRUE(watch.wait(kLong));
    take_all(watch);
    append(dir.file("beside") + "/big.bin", "x");
    EXPECT_FALSE(told_now(watch));
}

TEST(ChangeWatch, AFolderRenamedInTheTreeOrTheFollowedFolderMadeAgainIsStillWatched) {
    TempDir dir;
    const std::string logdir = dir.file("logdir");
    std::filesystem::create_directories(logdir + "/tmp-run");
    ChangeWatch watch({logdir});
    std::filesystem::rename(logdir + "/tmp-run", logdir + "/run"); // a writer putting a folder in place
    EXPECT_TRUE(watch.wait(kLong));
    take_all(watch);
    append(logdir + "/run/events.out.tfevents.1", "a");
    EXPECT_TRUE(watch.wait(kLong));
    take_all(watch);
    std::filesystem::remove_all(logdir);
    EXPECT_TRUE(watch.wait(kLong));
    take_all(watch);
    std::filesystem::create_directories(logdir + "/run");
    EXPECT_TRUE(watch.wait(kLong)); // it came back
    take_all(watch);
    append(logdir + "/run/events.out.tfevents.2", "b"); // and what is written in it is told
    EXPECT_TRUE(watch.wait(kLong));
    EXPECT_EQ(watch.take_problem(), "");
}

TEST(ChangeWatch, AChangeIsToldNoSoonerThanTheGapAfterTheLastOne) {
    TempDir dir;
    ChangeWatch watch({dir.path});
    append(dir.file("a"), "1");
    ASSERT_TRUE(watch.wait(kLong));
    const auto told = std::chrono::steady_clock::now();
    append(dir.file("a"), "2");
    ASSERT_TRUE(watch.wait(kLong, 300));
    EXPECT_GE(std::chrono::steady_clock::now() - told, std::chrono::milliseconds(300));
}
