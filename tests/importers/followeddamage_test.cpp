// What a followed import says of damage (followeddamage.h): each piece once, a file's cut-short end held back while
// following and said when following stops with it still so, and everything at once when not following.
#include "followeddamage.h"
#include "tfevents.h"
#include "tfrecord.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

using namespace traindeck::importers;

TEST(FollowedDamage, EachPieceIsSaidOnceAndACutShortEndOnlyWhenFollowingStopsWithIt) {
    const Damage crc{"a/events", 100, "bad CRC: skipped"};
    const Damage end{"a/events", 500, "the file ends inside a record (cut short, or a writer is still appending)",
                     true};
    FollowedDamage followed;
    std::vector<Damage> said = followed.pass("a", {crc, end}, true);
    ASSERT_EQ(said.size(), 1u);
    EXPECT_EQ(said[0].offset, 100u);
    EXPECT_TRUE(followed.pass("a", {crc, end}, true).empty()); // the next pass: nothing new
    // The record is whole now: the end is gone, and stopping says nothing of it.
    EXPECT_TRUE(followed.pass("a", {crc}, true).empty());
    EXPECT_TRUE(followed.finish().empty());
    // A writer that stops mid-record: its end is said when following stops, once.
    FollowedDamage stopped;
    EXPECT_TRUE(stopped.pass("a", {end}, true).empty());
    EXPECT_TRUE(stopped.pass("b", {}, true).empty()); // another run's pass leaves a's end kept
    said = stopped.finish();
    ASSERT_EQ(said.size(), 1u);
    EXPECT_TRUE(said[0].at_end);
    EXPECT_TRUE(stopped.finish().empty());
    // Not following: everything is said as found.
    FollowedDamage once;
    EXPECT_EQ(once.pass("a", {crc, end}, false).size(), 2u);
}

// The readers mark a file that ends inside a record as such, and nothing else.
TEST(FollowedDamage, ATFRecordCutShortIsMarkedAtItsEnd) {
    const std::string record = encode_scalar_event("loss", 1, 0.5f, 1.7e9);
    std::string bytes = encode_file_version_event(1.7e9) + record + record.substr(0, record.size() / 2);
    std::vector<Damage> damage;
    scan_tfrecords(
        bytes, "f", [](uint64_t, std::string_view) {}, damage);
    ASSERT_EQ(damage.size(), 1u);
    EXPECT_TRUE(damage[0].at_end);
    std::string flipped = encode_file_version_event(1.7e9) + record + record;
    flipped[flipped.size() - record.size() - 6] ^= 0x40; // the first record's data, not its length
    damage.clear();
    scan_tfrecords(
        flipped, "f", [](uint64_t, std::string_view) {}, damage);
    ASSERT_EQ(damage.size(), 1u);
    EXPECT_FALSE(damage[0].at_end);
    // The last record's data wrong: damage, or (on a network file system) bytes still arriving.
    flipped = encode_file_version_event(1.7e9) + record + record;
    flipped[flipped.size() - 6] ^= 0x40;
    damage.clear();
    const TfRecordScan scan = scan_tfrecords(
        flipped, "f", [](uint64_t, std::string_view) {}, damage);
    ASSERT_EQ(damage.size(), 1u);
    EXPECT_TRUE(damage[0].at_end);
    EXPECT_TRUE(scan.last_record_bad);
    EXPECT_EQ(scan.last_record, flipped.size() - record.size());
}
