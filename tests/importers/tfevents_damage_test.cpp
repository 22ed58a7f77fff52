// Damaged event files, made by the test from a copy of a fixture (the source is never touched): a truncated file, a
// flipped byte in a record's data (that record is reported with its offset, the ones after it still read), a wrong
// length CRC (the file stops there: TFRecord cannot resync), a record that is sound framing but no Event, an empty
// file; and a file that grows between two reads (what a live writer does).
#include "importertest.h"
#include "tfevents.h"
#include "tfrecord.h"

#include <cstring>

using namespace traindeck::importers;
using namespace traindeck::test;

namespace {

// The header offsets of every record in a TFRecord file (walking the lengths).
std::vector<uint64_t> record_offsets(const std::string& bytes) {
    std::vector<uint64_t> out;
    for (uint64_t at = 0; at + 12 <= bytes.size();) {
        uint64_t length = 0;
        std::memcpy(&length, bytes.data() + at, 8);
        out.push_back(at);
        at += 16 + length;
    }
    return out;
}

// A copy of the strict fixture (101 records: file_version, then strict/foo at steps 0, 5, ..., 495).
struct StrictCopy {
    TempDir dir;
    std::string bytes, path;
    std::vector<uint64_t> offsets;
    StrictCopy() {
        bytes =
            slurp(fixture("tfevents/tbreducer-torch-strict/events.out.tfevents.1622543341.janoshs-mbp.lan.86862.0"));
        path = dir.file("run/events.out.tfevents.1622543341.copy");
        offsets = record_offsets(bytes);
    }
    ImportedRun read(const std::string& written) {
        spill(path, written);
        auto runs = read_tensorboard_logdir(dir.path);
        EXPECT_TRUE(runs && runs->size() == 1);
        return runs && !runs->empty() ? runs->front() : ImportedRun{};
    }
};

} // namespace

TEST(TfEventsDamage, ATruncatedFileKeepsEveryWholeRecordAndSaysWhereItEnds) {
    REQUIRE_FIXTURES();
    StrictCopy copy;
    ASSERT_EQ(copy.offsets.size(), 101u);
    const ImportedRun run = copy.read(copy.bytes.substr(0, copy.bytes.size() - 7));
    EXPECT_EQ(series(run, "strict/foo").size(), 99u);
    ASSERT_EQ(run.damage.size(), 1u);
    EXPECT_EQ(run.damage[0].file, copy.path);
    EXPECT_EQ(run.damage[0].offset, copy.offsets.back());
    EXPECT_NE(run.damage[0].what.find("ends inside a record"), std::string::npos) << run.damage[0].what;

    // Cut inside the 12-byte header of the last record.
    const ImportedRun header = copy.read(copy.bytes.substr(0, copy.offsets.back() + 5));
    EXPECT_EQ(series(header, "strict/foo").size(), 99u);
    ASSERT_EQ(header.damage.size(), 1u);
    EXPECT_EQ(header.damage[0].offset, copy.offsets.back());
    EXPECT_NE(header.damage[0].what.find("record header"), std::string::npos);
}

TEST(TfEventsDamage, AFlippedDataByteCostsThatRecordOnlyAndNamesItsOffset) {
    REQUIRE_FIXTURES();
    StrictCopy copy;
    std::string bytes = copy.bytes;
    const uint64_t tenth = copy.offsets[10]; // strict/foo at step 45
    bytes[tenth + 12 + 3] ^= 0x40;
    const ImportedRun run = copy.read(bytes);
    const auto& points = series(run, "strict/foo");
    ASSERT_EQ(points.size(), 99u);
    EXPECT_EQ(points[8].step, 40);
    EXPECT_EQ(points[9].step, 50); // 45 is gone, everything after it is there
    EXPECT_EQ(points.back().step, 495);
    ASSERT_EQ(run.damage.size(), 1u);
    EXPECT_EQ(run.damage[0].offset, tenth);
    EXPECT_NE(run.damage[0].what.find("data CRC"), std::string::npos) << run.damage[0].what;
    // The source fixture is as it was.
    EXPECT_EQ(slurp(fixture("tfevents/tbreducer-torch-strict/events.out.tfevents.1622543341.janoshs-mbp.lan.86862.0")),
              copy.bytes);
}

TEST(TfEventsDamage, AWrongLengthCrcStopsTheFileThereBecauseTfRecordCannotResync) {
    REQUIRE_FIXTURES();
    StrictCopy copy;
    std::string bytes = copy.bytes;
    const uint64_t at = copy.offsets[51]; // strict/foo at step 250
    bytes[at + 9] ^= 0x01;                // in the length's CRC
    const ImportedRun run = copy.read(bytes);
    const auto& points = series(run, "strict/foo");
    ASSERT_EQ(points.size(), 50u);
    EXPECT_EQ(points.back().step, 245);
    ASSERT_EQ(run.damage.size(), 1u);
    EXPECT_EQ(run.damage[0].offset, at);
    EXPECT_NE(run.damage[0].what.find("length's CRC"), std::string::npos) << run.damage[0].what;
    EXPECT_NE(run.damage[0].what.find(std::to_string(bytes.size() - at) + " bytes"), std::string::npos);
}

TEST(TfEventsDamage, SoundFramingAroundBytesThatAreNoEventIsReportedAndSkipped) {
    REQUIRE_FIXTURES();
    StrictCopy copy;
    // A record whose CRCs hold but whose data is a field of wire type 7.
    const std::string bytes = copy.bytes.substr(0, copy.offsets[2]) + tfrecord_frame(std::string("\x0f\x01\x02", 3)) +
                              copy.bytes.substr(copy.offsets[2]);
    const ImportedRun run = copy.read(bytes);
    EXPECT_EQ(series(run, "strict/foo").size(), 100u);
    ASSERT_EQ(run.damage.size(), 1u);
    EXPECT_EQ(run.damage[0].offset, copy.offsets[2]);
    EXPECT_NE(run.damage[0].what.find("not an Event"), std::string::npos) << run.damage[0].what;
}

TEST(TfEventsDamage, AnEmptyFileIsARunWithNothingInItAndNoDamage) {
    TempDir dir;
    spill(dir.file("events.out.tfevents.0.empty"), "");
    auto runs = read_tensorboard_logdir(dir.path);
    ASSERT_TRUE(runs) << runs.error();
    ASSERT_EQ(runs->size(), 1u);
    EXPECT_EQ(runs->front().records, 0);
    EXPECT_TRUE(runs->front().scalars.empty());
    EXPECT_TRUE(runs->front().damage.empty());
}

TEST(TfEventsDamage, AGrowingFileGivesTheNewRecordsOnTheNextRead) {
    TempDir dir;
    std::string bytes = encode_file_version_event(1.0);
    for (int step = 0; step < 10; ++step)
        bytes += encode_scalar_event("loss", step, 1.0f / static_cast<float>(step + 1), 10.0 + step);
    // A writer in the middle of its next record.
    const std::string next = encode_scalar_event("loss", 10, 0.01f, 20.0);
    spill(dir.file("events.out.tfevents.1.grow"), bytes + next.substr(0, 9));
    auto first = read_tensorboard_logdir(dir.path);
    ASSERT_TRUE(first);
    EXPECT_EQ(series(first->front(), "loss").size(), 10u);
    ASSERT_EQ(first->front().damage.size(), 1u);
    EXPECT_EQ(first->front().damage[0].offset, bytes.size());

    spill(dir.file("events.out.tfevents.1.grow"), bytes + next);
    auto second = read_tensorboard_logdir(dir.path);
    ASSERT_TRUE(second);
    EXPECT_EQ(series(second->front(), "loss").size(), 11u);
    EXPECT_TRUE(second->front().damage.empty());
}

TEST(TfRecord, ScanReportsWhereTheLastWholeRecordEnds) {
    const std::string a = tfrecord_frame("first"), b = tfrecord_frame("second");
    std::vector<Damage> damage;
    std::vector<std::string> seen;
    const TfRecordScan scan = scan_tfrecords(
        a + b + b.substr(0, 5), "f", [&](uint64_t, std::string_view data) { seen.emplace_back(data); }, damage);
    EXPECT_EQ(seen, (std::vector<std::string>{"first", "second"}));
    EXPECT_EQ(scan.records, 2u);
    EXPECT_EQ(scan.end_of_whole, a.size() + b.size());
    EXPECT_TRUE(scan.stopped_early);
    ASSERT_EQ(damage.size(), 1u);
}
