// W&B offline runs: every .wandb fixture as its PROVENANCE.txt lists it (records, history rows and keys, steps,
// config and summary keys, display names, exit codes), the two wire fixtures (a chunk with a bad CRC: reported at its
// offset, and the records after it still read; a file cut inside a record), records split over chunks and blocks
// written by the test, and files that are no W&B log.
#include "importertest.h"
#include "wandb.h"

#include <zlib.h>

#include <cstring>

using namespace traindeck::importers;
using namespace traindeck::test;

namespace {

const std::string kRoot = "wandb/leet-synthetic/";

ImportedRun wandb_run(const std::string& relative) {
    auto runs = read_wandb(fixture(kRoot + relative));
    EXPECT_TRUE(runs && runs->size() == 1) << (runs ? "" : runs.error());
    return runs && !runs->empty() ? runs->front() : ImportedRun{};
}

std::vector<int64_t> steps_of(const ImportedRun& run, const std::string& key) {
    std::vector<int64_t> out;
    for (const auto& p : series(run, key))
        out.push_back(p.step);
    return out;
}

std::vector<int64_t> range(int64_t from, int64_t to) {
    std::vector<int64_t> out;
    for (int64_t i = from; i <= to; ++i)
        out.push_back(i);
    return out;
}

std::vector<std::string> keys_of(const nlohmann::json& object) {
    std::vector<std::string> out;
    for (auto it = object.begin(); it != object.end(); ++it)
        out.push_back(it.key());
    return out;
}

} // namespace

TEST(Wandb, SingleTinyRun) {
    REQUIRE_FIXTURES();
    const ImportedRun run = wandb_run("wandb/single-tiny/wandb/run-20260102_030405-tiny0001/run-tiny0001.wandb");
    EXPECT_TRUE(run.damage.empty());
    EXPECT_EQ(run.records, 74);
    EXPECT_EQ(run.name, "single-tiny-run");
    EXPECT_EQ(run.source_id, "tiny0001");
    EXPECT_EQ(run.experiment, "leet-fixtures");
    EXPECT_EQ(run.format, "wandb");
    EXPECT_EQ(run.other_records.at("output_raw"), 20);
    EXPECT_EQ(run.other_records.at("environment"), 1);
    EXPECT_EQ(run.scalars.size(), 3u);
    for (const char* key : {"eval/step_fn", "train/loss", "train/sine"})
        EXPECT_EQ(steps_of(run, key), range(0, 49)) << key;
    EXPECT_DOUBLE_EQ(series(run, "train/loss").front().value, 2.0);
    EXPECT_DOUBLE_EQ(series(run, "train/loss").back().value, 0.285);
    EXPECT_DOUBLE_EQ(series(run, "train/loss").front().wall_time, 1767323047.0); // its _timestamp
    EXPECT_EQ(keys_of(run.config), (std::vector<std::string>{"batch_size", "epochs", "lr", "optimizer", "seed"}));
    EXPECT_DOUBLE_EQ(run.config.at("lr").get<double>(), 0.001);
    EXPECT_EQ(run.config.at("optimizer"), "adam");
    EXPECT_EQ(keys_of(run.summary),
              (std::vector<std::string>{"best_step", "eval/step_fn", "note", "train/loss", "train/sine"}));
    EXPECT_EQ(run.summary.at("note"), "fixture summary");
    EXPECT_EQ(run.state, "succeeded");
    EXPECT_DOUBLE_EQ(run.started, 1767323045.0); // the fixtures' base time
}

TEST(Wandb, NanAndInfinityAreKeptAsTheyWereWritten) {
    REQUIRE_FIXTURES();
    const ImportedRun run = wandb_run("wandb/edge-nan-inf/wandb/run-20260102_030405-nanedge1/run-nanedge1.wandb");
    EXPECT_TRUE(run.damage.empty());
    EXPECT_EQ(run.records, 22);
    EXPECT_EQ(steps_of(run, "edge/flat"), range(0, 19));
    EXPECT_EQ(steps_of(run, "edge/nan_inf"), range(0, 19));
    EXPECT_EQ(steps_of(run, "edge/single_point"), (std::vector<int64_t>{0}));
    bool nan = false, inf = false, minus_inf = false;
    for (const auto& p : series(run, "edge/nan_inf")) {
        nan = nan || std::isnan(p.value);
        inf = inf || p.value == INFINITY;
        minus_inf = minus_inf || p.value == -INFINITY;
    }
    EXPECT_TRUE(nan && inf && minus_inf);
    for (const auto& p : series(run, "edge/flat"))
        EXPECT_EQ(p.value, 1.5);
    EXPECT_EQ(run.state, "succeeded");
}

TEST(Wandb, UnicodeKeysNamesAndTags) {
    REQUIRE_FIXTURES();
    const ImportedRun run = wandb_run("wandb/edge-unicode/wandb/run-20260102_030405-uni00001/run-uni00001.wandb");
    EXPECT_TRUE(run.damage.empty());
    EXPECT_EQ(run.records, 13);
    EXPECT_EQ(run.name, "日本語ラン 🚀 家族👨‍👩‍👧‍👦");
    EXPECT_EQ(steps_of(run, "emoji/🚀speed"), range(0, 9));
    EXPECT_EQ(steps_of(run, "损失/loss"), range(0, 9));
    EXPECT_EQ(keys_of(run.config), (std::vector<std::string>{"描述", "模型/名字"}));
    EXPECT_FALSE(run.labels.empty());
}

TEST(Wandb, AnEmptyRunAndACrashedRun) {
    REQUIRE_FIXTURES();
    const ImportedRun empty = wandb_run("wandb/edge-empty/wandb/run-20260102_030405-empty001/run-empty001.wandb");
    EXPECT_TRUE(empty.damage.empty());
    EXPECT_EQ(empty.records, 1);
    EXPECT_TRUE(empty.scalars.empty());
    EXPECT_EQ(empty.name, "edge-empty-run");
    EXPECT_EQ(empty.state, "running"); // no exit record

    const ImportedRun crashed =
        wandb_run("wandb/workspace-multi/wandb/run-20260102_030305-wm4crash/run-wm4crash.wandb");
    EXPECT_TRUE(crashed.damage.empty());
    EXPECT_EQ(crashed.records, 22);
    EXPECT_EQ(crashed.name, "crashed-flame-4");
    EXPECT_EQ(steps_of(crashed, "train/loss"), range(0, 17));
    EXPECT_EQ(steps_of(crashed, "sys/throughput"), range(0, 17));
    EXPECT_EQ(keys_of(crashed.config), (std::vector<std::string>{"lr", "run_index"}));
    EXPECT_EQ(crashed.state, "failed");
    EXPECT_EQ(crashed.state_reason, "W&B exit code 1");
}

TEST(Wandb, ABadChunkCrcCostsThatRecordOnly) {
    REQUIRE_FIXTURES();
    const ImportedRun run = wandb_run("wire/bad-crc.wandb");
    // Six records; the third (history step 1) has its CRC's first byte flipped at offset 143.
    ASSERT_EQ(run.damage.size(), 1u);
    EXPECT_EQ(run.damage[0].offset, 143u);
    EXPECT_NE(run.damage[0].what.find("CRC"), std::string::npos);
    EXPECT_EQ(run.records, 5);
    EXPECT_EQ(steps_of(run, "wire/metric"), (std::vector<int64_t>{0, 2, 3}));
    EXPECT_EQ(run.state, "succeeded"); // the exit record after it was read
}

TEST(Wandb, AFileCutInsideARecordKeepsTheRecordsBefore) {
    REQUIRE_FIXTURES();
    const ImportedRun run = wandb_run("wire/truncated-tail.wandb");
    EXPECT_EQ(run.records, 4);
    EXPECT_EQ(steps_of(run, "wire/metric"), range(0, 2));
    ASSERT_EQ(run.damage.size(), 1u);
    EXPECT_EQ(run.damage[0].offset, 234u);
    EXPECT_NE(run.damage[0].what.find("ends inside a chunk"), std::string::npos);
    EXPECT_EQ(run.state, "running");
}

TEST(Wandb, AFolderIsOneRunPerWandbFile) {
    REQUIRE_FIXTURES();
    auto runs = read_wandb(fixture(kRoot + "wandb"));
    ASSERT_TRUE(runs) << runs.error();
    EXPECT_EQ(runs->size(), 5u);
    auto wire = read_wandb(fixture(kRoot + "wire"));
    ASSERT_TRUE(wire);
    EXPECT_EQ(wire->size(), 2u);
}

namespace {

std::string chunk(uint8_t type, const std::string& payload) {
    uLong crc = crc32(0L, &type, 1);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(payload.data()), static_cast<uInt>(payload.size()));
    std::string out(7, '\0');
    const auto crc32 = static_cast<uint32_t>(crc);
    const auto length = static_cast<uint16_t>(payload.size());
    std::memcpy(out.data(), &crc32, 4);
    std::memcpy(out.data() + 4, &length, 2);
    out[6] = static_cast<char>(type);
    return out + payload;
}

} // namespace

TEST(Wandb, RecordsSplitOverChunksAndBlocksAreJoined) {
    // A 70,000-byte record: FIRST in block 0, MIDDLE filling block 1, LAST in block 2; then a FULL one after it.
    std::string file = std::string(":W&B\xe1\xbe\x00", 7);
    std::string big(70000, 'x');
    std::vector<std::string> seen;
    size_t at = 0;
    const size_t first = 32768 - 7 - 7;
    file += chunk(2, big.substr(at, first));
    at += first;
    file += chunk(3, big.substr(at, 32768 - 7));
    at += 32768 - 7;
    file += chunk(4, big.substr(at));
    // Fewer than 7 bytes left in a block are padding: fill to 4 bytes short of the block's end, then pad.
    const size_t left = 32768 - file.size() % 32768;
    if (left > 7 + 4) {
        file += chunk(1, std::string(left - 7 - 4, 'y'));
        file += std::string(4, '\0');
    }
    file += chunk(1, "after");
    std::vector<Damage> damage;
    const int64_t records = scan_wandb_log(
        file, "f", [&](uint64_t, std::string_view r) { seen.emplace_back(r); }, damage);
    EXPECT_TRUE(damage.empty()) << damage.front().what;
    ASSERT_EQ(records, 3);
    EXPECT_EQ(seen[0], big);
    EXPECT_EQ(seen[2], "after");
}

TEST(Wandb, FilesThatAreNoWandbLogAreSaidToBeSo) {
    std::vector<Damage> damage;
    EXPECT_EQ(scan_wandb_log(
                  "PK\x03\x04 not a log", "f", [](uint64_t, std::string_view) {}, damage),
              0);
    ASSERT_EQ(damage.size(), 1u);
    EXPECT_NE(damage[0].what.find("not a W&B"), std::string::npos);
    TempDir dir;
    EXPECT_FALSE(read_wandb(dir.path));
}
