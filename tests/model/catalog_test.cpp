#include "base64.h"
#include "catalog.h"
#include "runconfig.h"
#include "requireall.h"
#include "smalldisk.h"

#include "tempcatalog.h"

#include <gtest/gtest.h>

#include <sqlite3.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <thread>

using namespace traindeck;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

using test::TempCatalog;

json metric(int64_t seq, int64_t step, double loss) {
    return {{"seq", seq},
            {"time", 1.0 * seq},
            {"type", "record"},
            {"data", {{"type", "metric"}, {"step", step}, {"loss", loss}, {"lr", 0.1}}}};
}

// Metric events seq = step = from..to, loss 1/step.
std::vector<json> metrics(int64_t from, int64_t to) {
    std::vector<json> events;
    for (int64_t i = from; i <= to; ++i)
        events.push_back(metric(i, i, 1.0 / i));
    return events;
}

} // namespace

TEST(Catalog, CreatesSchemaInWalModeAndReopens) {
    TempCatalog temp;
    {
        Catalog catalog;
        ASSERT_EQ(catalog.open(temp.path()), "");
        EXPECT_EQ(catalog.schema_version(), Catalog::kSchemaVersion);
        Statement mode = catalog.db().prepare("PRAGMA journal_mode");
        ASSERT_TRUE(mode.step());
        EXPECT_EQ(mode.text(0), "wal");
        catalog.add_job("a", "local", "1", json::object());
    }
    Catalog again;
    ASSERT_EQ(again.open(temp.path()), "");
    Statement count = again.db().prepare("SELECT COUNT(*) FROM jobs");
    ASSERT_TRUE(count.step());
    EXPECT_EQ(count.integer(0), 1);
}

TEST(Catalog, RefusesDamagedAndNewerFiles) {
    TempCatalog temp;
    std::ofstream(temp.path()) << "this is not a database, just text that is long enough to have a header....";
    Catalog damaged;
    EXPECT_NE(damaged.open(temp.path()), "");
    fs::remove(temp.path());
    {
        Catalog newer;
        ASSERT_EQ(newer.open(temp.path()), "");
        newer.db().exec("PRAGMA user_version=99");
    }
    Catalog old_program;
    const std::string error = old_program.open(temp.path());
    EXPECT_NE(error.find("newer TrainDeck"), std::string::npos) << error;
}

TEST(Catalog, RedeliveredEventsNeverDuplicate) {
    TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    const int64_t job = catalog.add_job("mlp", "local", "7", json::object());
    CatalogWriter writer(catalog);
    const std::vector<json> first = metrics(1, 1000), overlap = metrics(900, 1500); // a reconnect re-sends 900..1000
    writer.post(job, first);
    writer.post(job, overlap);
    writer.post(job, first);
    writer.flush();
    ASSERT_EQ(writer.last_error(), "");
    EXPECT_EQ(catalog.last_seq(job), 1500);
    const auto points = SeriesStore::points(catalog.db(), catalog.series(job, "loss", false), 0, 1'000'000);
    ASSERT_EQ(points.size(), 1500u);
    for (size_t i = 0; i < points.size(); ++i) {
        ASSERT_EQ(points[i].step, static_cast<int64_t>(i + 1));
        ASSERT_DOUBLE_EQ(points[i].value, 1.0 / (i + 1));
    }
    EXPECT_EQ(catalog.series_names(job), (std::vector<std::string>{"loss", "lr"}));
}

// Two writers on one catalog (the console and traindeck-cli logs -f or import, each its own connection) taking turns
// on one series: each writes from what is stored, never from a chunk it cached before the other wrote.
TEST(CatalogWriter, TwoProcessesTakingTurnsOnOneSeriesLoseNoPoint) {
    TempCatalog temp;
    Catalog console, cli;
    ASSERT_EQ(console.open(temp.path()), "");
    ASSERT_EQ(cli.open(temp.path()), "");
    const int64_t job = console.add_job("mlp", "local", "7", json::object());
    CatalogWriter console_writer(console), cli_writer(cli);
    for (int turn = 0; turn < 6; ++turn) {
        CatalogWriter& writer = turn % 2 == 0 ? console_writer : cli_writer;
        writer.post(job, metrics(turn * 10 + 1, turn * 10 + 10)); // all in the series' first chunk
        ASSERT_EQ(writer.flush(), "");
    }
    const auto points = SeriesStore::points(console.db(), console.series(job, "loss", false), 0, 1'000'000);
    ASSERT_EQ(points.size(), 60u);
    for (size_t i = 0; i < points.size(); ++i)
        ASSERT_EQ(points[i].step, static_cast<int64_t>(i + 1));
}

TEST(Catalog, RepeatedStepsAfterAResumeReplaceTheirValues) {
    TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    const int64_t job = catalog.add_job("j", "local", "1", json::object());
    CatalogWriter writer(catalog);
    std::vector<json> run, resumed;
    for (int i = 1; i <= 2000; ++i)
        run.push_back(metric(i, i, 1.0));
    // The job was killed at step 2000 and resumed from its checkpoint at step 100: steps 101.. come again.
    for (int i = 0; i < 50; ++i)
        resumed.push_back(metric(2001 + i, 101 + i, 2.0));
    writer.post(job, run);
    writer.post(job, resumed);
    writer.flush();
    const auto points = SeriesStore::points(catalog.db(), catalog.series(job, "loss", false), 0, 5000);
    ASSERT_EQ(points.size(), 2000u);
    EXPECT_EQ(points[99].value, 1.0);
    EXPECT_EQ(points[100].value, 2.0);
    EXPECT_EQ(points[149].value, 2.0);
    EXPECT_EQ(points[150].value, 1.0);
}

TEST(Catalog, ChartQueriesThroughTheSharedSummariesFollowEveryWrite) {
    // A reader's chart queries go through SeriesStore::summaries' cache while another connection writes: new points,
    // a step older than the open chunk (a sealed chunk written again), a purged series whose id a new one takes, and
    // a catalog made again at the same path. Each time every bucket must be exactly the points it covers.
    TempCatalog temp;
    SeriesStore::forget_summaries();
    std::map<int64_t, double> truth;
    auto check = [&](Database& db, int64_t series, const std::string& when) {
        // 40 buckets (chunk-wide ones from the summaries) and 400 (narrower than a chunk: decoded points, the sealed
        // chunks' kept), twice each: the second from the caches as the first left them.
        for (const int wanted : {40, 40, 400, 400}) {
            const auto buckets = SeriesStore::query(db, series, truth.begin()->first, truth.rbegin()->first, wanted);
            int64_t total = 0;
            for (const Bucket& b : buckets) {
                int64_t count = 0;
                double low = INFINITY, high = -INFINITY, last = NAN;
                for (auto it = truth.lower_bound(b.first_step); it != truth.end() && it->first <= b.last_step; ++it) {
                    ++count;
                    low = std::min(low, it->second);
                    high = std::max(high, it->second);
                    last = it->second;
                }
                ASSERT_EQ(b.count, count) << when << ": bucket " << b.first_step << "-" << b.last_step;
                ASSERT_EQ(b.min, low) << when;
                ASSERT_EQ(b.max, high) << when;
                ASSERT_EQ(b.last, last) << when;
                total += count;
            }
            ASSERT_EQ(total, static_cast<int64_t>(truth.size())) << when;
        }
        // The cached summaries are the table's (read here directly; the caches stay as they are for the next step).
        const auto cached = SeriesStore::summaries(db, series);
        ASSERT_TRUE(cached) << "a catalog of this schema is cached";
        std::vector<ChunkSummary> table;
        Statement rows = db.prepare("SELECT chunk, first_step, last_step, count, min, max, last FROM metric_chunks "
                                    "WHERE series=? ORDER BY chunk");
        rows.bind(1, series);
        while (rows.step())
            table.push_back({rows.integer(0), rows.integer(1), rows.integer(2), rows.integer(3), rows.real(4),
                             rows.real(5), rows.real(6)});
        ASSERT_EQ(*cached, table) << when;
    };
    {
        Catalog writer, reader;
        ASSERT_EQ(writer.open(temp.path()), "");
        ASSERT_EQ(reader.open(temp.path(), true), "");
        const int64_t job = writer.add_job("j", "local", "1", json::object());
        const int64_t series = writer.series(job, "loss", true);
        SeriesStore store(writer.db());
        auto append = [&](int64_t from, int64_t to, double scale) {
            std::vector<MetricPoint> points;
            for (int64_t step = from; step <= to; ++step)
                points.push_back({step, scale * std::sin(step * 0.01) + step * 1e-4});
            writer.db().exec("BEGIN");
            store.append(series, points);
            writer.db().exec("COMMIT");
            for (const MetricPoint& p : points)
                truth[p.step] = p.value;
        };
        append(1, 5000, 1.0); // ten chunks
        check(reader.db(), series, "first read");
        append(5001, 5300, 1.0); // the open chunk fills, a new one starts
        check(reader.db(), series, "grown");
        writer.db().exec("BEGIN");
        const std::vector<MetricPoint> late = {{700, 99.0}}; // a sealed chunk's step, written again
        store.append(series, late);
        writer.db().exec("COMMIT");
        truth[700] = 99.0;
        check(reader.db(), series, "a sealed chunk written again");
        append(5301, 5302, 1.0);
        check(reader.db(), series, "two more");

        // Purged, and a new job's series takes the same id, with other values and fewer points.
        writer.set_deleted(job, true);
        writer.purge_deleted();
        const int64_t again = writer.series(writer.add_job("k", "local", "2", json::object()), "loss", true);
        ASSERT_EQ(again, series) << "the test wants the id taken again";
        truth.clear();
        SeriesStore fresh_store(writer.db());
        std::vector<MetricPoint> other;
        for (int64_t step = 1; step <= 3000; ++step)
            other.push_back({step, -static_cast<double>(step)});
        writer.db().exec("BEGIN");
        fresh_store.append(again, other);
        writer.db().exec("COMMIT");
        for (const MetricPoint& p : other)
            truth[p.step] = p.value;
        check(reader.db(), again, "another series in the id");
    }
    // The file made again at the same path, with the same first chunk and as many chunks, other values after it.
    for (const char* suffix : {"", "-wal", "-shm"})
        std::filesystem::remove(temp.path() + suffix);
    Catalog writer, reader;
    ASSERT_EQ(writer.open(temp.path()), "");
    ASSERT_EQ(reader.open(temp.path(), true), "");
    const int64_t job = writer.add_job("k", "local", "2", json::object());
    const int64_t series = writer.series(job, "loss", true);
    std::vector<MetricPoint> points;
    for (int64_t step = 1; step <= 3000; ++step)
        points.push_back({step, step <= 512 ? -static_cast<double>(step) : 7.0 * step});
    writer.db().exec("BEGIN");
    SeriesStore(writer.db()).append(series, points);
    writer.db().exec("COMMIT");
    truth.clear();
    for (const MetricPoint& p : points)
        truth[p.step] = p.value;
    check(reader.db(), series, "a catalog made again");

    // A catalog of schema 11 (no rewrite count, no identity) read without migrating: no cache, the same buckets.
    writer.db().exec("DROP TRIGGER sealed_chunk_written; DROP TABLE catalog_identity; PRAGMA user_version=11");
    Catalog old;
    ASSERT_EQ(old.open(temp.path(), true), "");
    EXPECT_EQ(SeriesStore::summaries(old.db(), series), nullptr);
    const auto buckets = SeriesStore::query(old.db(), series, 1, 3000, 40);
    int64_t total = 0;
    for (const Bucket& b : buckets)
        total += b.count;
    EXPECT_EQ(total, 3000);
    EXPECT_EQ(buckets.back().last, 7.0 * 3000);
}

// Points that come out of step order keep every one: a step older than every stored one goes into the first chunk
// (it was dropped), whether that chunk is sealed or still the open one; and steps filled in between the open chunk's
// own take it past its size, after which it is sealed at the next new step (it grew for ever).
TEST(Catalog, OutOfOrderStepsAreKeptAndChunksStaySmall) {
    TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    const int64_t job = catalog.add_job("j", "local", "1", json::object());
    const auto append = [&](int64_t series, std::vector<MetricPoint> points) {
        catalog.db().exec("BEGIN");
        {
            SeriesStore store(catalog.db());
            store.append(series, points);
        }
        catalog.db().exec("COMMIT");
    };
    const auto steps_of = [&](int64_t series) {
        std::vector<int64_t> steps;
        for (const MetricPoint& p : SeriesStore::points(catalog.db(), series, -1'000'000, 1'000'000))
            steps.push_back(p.step);
        return steps;
    };
    // One chunk, still open: step 50 after 100..200.
    const int64_t open = catalog.series(job, "open", true);
    std::vector<MetricPoint> points;
    for (int64_t step = 100; step <= 200; ++step)
        points.push_back({step, 1.0});
    append(open, points);
    append(open, {{50, 5.0}});
    std::vector<int64_t> steps = steps_of(open);
    ASSERT_EQ(steps.size(), 102u);
    EXPECT_EQ(steps.front(), 50);
    // Two chunks, the first sealed: step 7 after 100..700, in another store (the open chunk read back).
    const int64_t sealed = catalog.series(job, "sealed", true);
    points.clear();
    for (int64_t step = 100; step <= 700; ++step)
        points.push_back({step, 1.0});
    append(sealed, points);
    append(sealed, {{7, 7.0}, {701, 1.0}});
    steps = steps_of(sealed);
    ASSERT_EQ(steps.size(), 603u);
    EXPECT_EQ(steps.front(), 7);
    EXPECT_TRUE(std::is_sorted(steps.begin(), steps.end()));
    // Even steps 2..1000 (one open chunk of 500), then the odd ones between them (1,000 points in it), then 600 new
    // steps: sealed at the first of them, so three chunks, not one of 1,600.
    const int64_t filled = catalog.series(job, "filled", true);
    points.clear();
    for (int64_t step = 2; step <= 1000; step += 2)
        points.push_back({step, 1.0});
    append(filled, points);
    points.clear();
    for (int64_t step = 3; step <= 999; step += 2)
        points.push_back({step, 2.0});
    append(filled, points);
    points.clear();
    for (int64_t step = 1001; step <= 1600; ++step)
        points.push_back({step, 3.0});
    append(filled, points);
    EXPECT_EQ(steps_of(filled).size(), 500u + 499u + 600u);
    Statement chunks = catalog.db().prepare("SELECT COUNT(*), MAX(count) FROM metric_chunks WHERE series=?");
    chunks.bind(1, filled);
    ASSERT_TRUE(chunks.step());
    EXPECT_EQ(chunks.integer(0), 3);
    EXPECT_EQ(chunks.integer(1), 999) << "the filled chunk, sealed at its size, takes no new step";
}

// The points' bits, for comparing values exactly (NaN included).
std::vector<std::pair<int64_t, uint64_t>> bits_of(const std::vector<MetricPoint>& points) {
    std::vector<std::pair<int64_t, uint64_t>> out;
    for (const MetricPoint& p : points) {
        uint64_t bits = 0;
        std::memcpy(&bits, &p.value, 8);
        out.emplace_back(p.step, bits);
    }
    return out;
}

// A chunk's points come back bit for bit, whatever the steps and values: float32 noise as training writes it,
// repeats, NaN, infinities, -0, subnormals, any 64-bit pattern, steps at int64's ends and strides of any size. A
// coded chunk's size is never a multiple of 16 (that is a packed chunk of schema 12), and a loss curve takes under 7
// bytes a point (16 packed).
TEST(SeriesStore, ChunksAreCodedBitForBitAndSmall) {
    std::mt19937_64 random(17);
    const double specials[] = {0.0,
                               -0.0,
                               std::nan(""),
                               -std::numeric_limits<double>::quiet_NaN(),
                               std::numeric_limits<double>::infinity(),
                               -std::numeric_limits<double>::infinity(),
                               std::numeric_limits<double>::denorm_min(),
                               std::numeric_limits<double>::max(),
                               std::numeric_limits<double>::lowest(),
                               1.0};
    std::string coded;
    std::set<size_t> size_mod_16;
    for (int round = 0; round < 2000; ++round) {
        const size_t count = 1 + random() % SeriesStore::kChunkPoints;
        std::vector<MetricPoint> points(count);
        int64_t step = round % 3 == 0   ? std::numeric_limits<int64_t>::min()
                       : round % 3 == 1 ? static_cast<int64_t>(random() % 1000) - 500
                                        : std::numeric_limits<int64_t>::max() - static_cast<int64_t>(count) * 3;
        for (size_t i = 0; i < count; ++i) {
            points[i].step = step;
            step += round % 5 == 0 ? 1 + static_cast<int64_t>(random() % 3) : 1;
            switch (round % 4) {
            case 0: // float32 noise, as a training loop logs it
                points[i].value = static_cast<float>(2.0 / (1 + i) + 0.01 * static_cast<double>(random() % 1000));
                break;
            case 1: // a repeated value with a change now and then
                points[i].value = random() % 17 == 0 ? static_cast<double>(i) : 0.001;
                break;
            case 2:
                points[i].value = specials[random() % std::size(specials)];
                break;
            default: {
                const uint64_t any = random();
                std::memcpy(&points[i].value, &any, 8);
            }
            }
        }
        SeriesStore::encode_chunk(points, coded);
        ASSERT_NE(coded.size() % 16, 0u) << "round " << round;
        size_mod_16.insert(coded.size() % 16);
        bool damaged = true;
        const auto back = SeriesStore::decode_chunk(coded, &damaged);
        ASSERT_FALSE(damaged) << "round " << round;
        ASSERT_EQ(bits_of(back), bits_of(points)) << "round " << round << ", " << count << " points";
    }
    EXPECT_EQ(size_mod_16.size(), 15u) << "every size but multiples of 16 is met";

    std::vector<MetricPoint> loss(SeriesStore::kChunkPoints);
    for (int i = 0; i < SeriesStore::kChunkPoints; ++i)
        loss[static_cast<size_t>(i)] = {1000 + i, static_cast<float>(2.3 * std::exp(-i / 300.0) +
                                                                     0.05 * static_cast<double>(random() % 100) / 100)};
    SeriesStore::encode_chunk(loss, coded);
    EXPECT_LT(coded.size(), 7u * loss.size());
}

// A damaged coded chunk (a catalog file changed outside SQLite) gives the points before the damage and says so;
// nothing is read past it.
TEST(SeriesStore, ADamagedChunkGivesThePointsBeforeItsDamage) {
    std::vector<MetricPoint> points;
    for (int64_t step = 1; step <= 100; ++step)
        points.push_back({step, static_cast<float>(1.0 / static_cast<double>(step))});
    std::string coded;
    SeriesStore::encode_chunk(points, coded);
    const auto expect_prefix = [&](const std::string& blob, const std::string& what) -> size_t {
        bool damaged = false;
        // A copy of exactly the blob's bytes on the heap: a read past it is one past an allocation.
        const std::unique_ptr<char[]> copy(new char[blob.size()]);
        std::memcpy(copy.get(), blob.data(), blob.size());
        const auto back = SeriesStore::decode_chunk(std::string_view(copy.get(), blob.size()), &damaged);
        EXPECT_TRUE(damaged) << what;
        EXPECT_LE(back.size(), points.size()) << what;
        const auto kept = static_cast<long>(std::min(back.size(), points.size()));
        EXPECT_EQ(bits_of(back), bits_of({points.begin(), points.begin() + kept})) << what;
        return back.size();
    };
    size_t most = 0;
    for (size_t size = 1; size < coded.size(); ++size)
        if (size % 16 != 0) // a multiple of 16 is a packed chunk's size: read as one, as schema 12 wrote them
            most = std::max(most, expect_prefix(coded.substr(0, size), "cut to " + std::to_string(size) + " bytes"));
    EXPECT_EQ(most, points.size() - 1) << "a chunk cut short keeps what it still holds";
    std::string wrong = coded;
    wrong[0] = 2; // a format this build does not know
    EXPECT_EQ(expect_prefix(wrong, "format 2"), 0u);
    wrong = coded;
    wrong[1] = static_cast<char>(0x7f); // 127 points said, 100 there
    EXPECT_EQ(expect_prefix(wrong, "a count past its points"), 100u);
    wrong = coded;
    wrong[3] = static_cast<char>(0x9f); // the first value's head: 9 bytes kept, 15 below them
    EXPECT_EQ(expect_prefix(wrong, "a value's head past 8 bytes"), 0u);
    wrong = coded + std::string(coded.size() % 16 == 15 ? 2 : 1, 'x');
    EXPECT_EQ(expect_prefix(wrong, "bytes after the points"), 100u);
}

// A catalog of schema 12 holds packed chunks (16 bytes a point). Opened by this build it is migrated without
// rewriting them; they read as before, read-only too; the open chunk is coded when points are added to it, and the
// sealed one stays packed until written again (a step older than the open chunk's).
TEST(Catalog, PackedChunksOfSchema12AreReadAndCodedWhenWrittenAgain) {
    TempCatalog temp;
    int64_t series = 0;
    std::vector<MetricPoint> truth;
    {
        Catalog catalog;
        ASSERT_EQ(catalog.open(temp.path()), "");
        series = catalog.series(catalog.add_job("old", "local", "1", json::object()), "loss", true);
        // What schema 12's SeriesStore wrote: a sealed chunk of 512 points and an open one of 100, packed.
        for (int64_t step = 1; step <= 612; ++step)
            truth.push_back({step, 1.0 / static_cast<double>(step)});
        Statement chunk = catalog.db().prepare("INSERT INTO metric_chunks(series, chunk, first_step, last_step, count, "
                                               "min, max, last) VALUES(?, ?, ?, ?, ?, ?, ?, ?)");
        Statement data = catalog.db().prepare("INSERT INTO metric_chunk_data(series, chunk, data) VALUES(?, ?, ?)");
        for (int64_t index : {0, 1}) {
            const size_t first = index == 0 ? 0 : 512, end = index == 0 ? 512 : 612;
            chunk.reset();
            chunk.bind(1, series).bind(2, index).bind(3, truth[first].step).bind(4, truth[end - 1].step);
            chunk.bind(5, static_cast<int64_t>(end - first)).bind(6, truth[end - 1].value).bind(7, truth[first].value);
            chunk.bind(8, truth[end - 1].value);
            chunk.step();
            data.reset();
            data.bind(1, series).bind(2, index);
            data.bind_blob_static(3, truth.data() + first, (end - first) * sizeof(MetricPoint));
            data.step();
        }
        catalog.db().exec("PRAGMA user_version=12");
    }
    const auto blob_sizes = [&](Database& db) {
        std::vector<int64_t> sizes;
        Statement select = db.prepare("SELECT length(data) FROM metric_chunk_data WHERE series=? ORDER BY chunk");
        select.bind(1, series);
        while (select.step())
            sizes.push_back(select.integer(0));
        return sizes;
    };
    {
        Catalog old;
        ASSERT_EQ(old.open(temp.path(), true), "");
        EXPECT_EQ(old.schema_version(), 12);
        EXPECT_EQ(bits_of(SeriesStore::points(old.db(), series, 0, 10'000)), bits_of(truth));
    }
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    EXPECT_EQ(catalog.schema_version(), Catalog::kSchemaVersion);
    EXPECT_EQ(blob_sizes(catalog.db()), (std::vector<int64_t>{int64_t{512} * 16, int64_t{100} * 16}))
        << "migrating rewrites nothing";
    EXPECT_EQ(bits_of(SeriesStore::points(catalog.db(), series, 0, 10'000)), bits_of(truth));
    const auto buckets = SeriesStore::query(catalog.db(), series, 1, 612, 612);
    ASSERT_EQ(buckets.size(), 612u);
    EXPECT_EQ(buckets[300].last, truth[300].value);

    std::vector<MetricPoint> more;
    for (int64_t step = 613; step <= 700; ++step)
        more.push_back({step, static_cast<double>(step)});
    catalog.db().exec("BEGIN");
    SeriesStore(catalog.db()).append(series, more);
    catalog.db().exec("COMMIT");
    truth.insert(truth.end(), more.begin(), more.end());
    auto sizes = blob_sizes(catalog.db());
    ASSERT_EQ(sizes.size(), 2u);
    EXPECT_EQ(sizes[0], 512 * 16) << "the sealed chunk, not written, stays packed";
    EXPECT_NE(sizes[1] % 16, 0) << "the open chunk is written coded";
    EXPECT_LT(sizes[1], 188 * 16 / 2);
    EXPECT_EQ(bits_of(SeriesStore::points(catalog.db(), series, 0, 10'000)), bits_of(truth));

    catalog.db().exec("BEGIN");
    SeriesStore(catalog.db()).append(series, std::vector<MetricPoint>{{5, 5.0}}); // into the sealed chunk
    catalog.db().exec("COMMIT");
    truth[4].value = 5.0;
    sizes = blob_sizes(catalog.db());
    EXPECT_NE(sizes[0] % 16, 0) << "the sealed chunk written again is coded";
    EXPECT_EQ(bits_of(SeriesStore::points(catalog.db(), series, 0, 10'000)), bits_of(truth));
}

TEST(Catalog, BucketsAreExactMinMaxLastAtAnyZoom) {
    TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    const int64_t job = catalog.add_job("j", "local", "1", json::object());
    std::mt19937 random(3);
    std::normal_distribution<double> noise;
    std::vector<MetricPoint> all;
    for (int64_t step = 1; step <= 50'000; ++step)
        all.push_back({step * 3, std::sin(step / 500.0) + 0.1 * noise(random)}); // steps 3, 6, 9, ...
    const int64_t series = catalog.series(job, "loss", true);
    catalog.db().exec("BEGIN");
    {
        SeriesStore store(catalog.db());
        for (size_t i = 0; i < all.size(); i += 777)
            store.append(series, std::span(all).subspan(i, std::min<size_t>(777, all.size() - i)));
    }
    catalog.db().exec("COMMIT");
    for (const auto& [from, to, buckets] : {std::tuple{0L, 200'000L, 2000}, std::tuple{1000L, 1500L, 100},
                                            std::tuple{12'345L, 98'765L, 333}, std::tuple{0L, 90L, 2000}}) {
        const auto got = SeriesStore::query(catalog.db(), series, from, to, buckets);
        // Brute force over the raw points, bucketed the same way.
        std::vector<MetricPoint> inside;
        for (const auto& p : all)
            if (p.step >= from && p.step <= to)
                inside.push_back(p);
        if (inside.size() <= size_t{2} * buckets) {
            ASSERT_EQ(got.size(), inside.size());
            continue;
        }
        const double width = double(to - from + 1) / buckets;
        std::map<int64_t, Bucket> expected;
        for (const auto& p : inside) {
            Bucket& b = expected[std::min<int64_t>(buckets - 1, int64_t((p.step - from) / width))];
            if (b.count++ == 0) {
                b.first_step = p.step;
                b.min = b.max = p.value;
            }
            b.min = std::min(b.min, p.value);
            b.max = std::max(b.max, p.value);
            b.last_step = p.step;
            b.last = p.value;
        }
        ASSERT_EQ(got.size(), expected.size());
        size_t i = 0;
        for (const auto& [index, b] : expected) {
            EXPECT_EQ(got[i].first_step, b.first_step);
            EXPECT_EQ(got[i].last_step, b.last_step);
            EXPECT_EQ(got[i].count, b.count);
            EXPECT_EQ(got[i].min, b.min);
            EXPECT_EQ(got[i].max, b.max);
            EXPECT_EQ(got[i].last, b.last);
            ++i;
        }
    }
}

namespace {

// Every row of the tables a job's events write, as text (REALs by their bits), less what differs between two catalogs
// by design: a job's creation time and a series' random rewrite counter.
std::string catalog_contents(Catalog& catalog) {
    std::string out;
    for (const char* table : {"jobs", "series", "metric_chunks", "metric_chunk_data", "metric_summaries", "job_logs",
                              "checkpoints", "alerts", "job_config", "captures", "evaluations"}) {
        sqlite3_stmt* select = nullptr;
        const std::string sql = std::string("SELECT * FROM ") + table;
        if (sqlite3_prepare_v2(catalog.db().handle(), sql.c_str(), -1, &select, nullptr) != SQLITE_OK)
            return "cannot read " + std::string(table) + ": " + catalog.db().error();
        out += std::string(table) + ":\n";
        while (sqlite3_step(select) == SQLITE_ROW) {
            for (int column = 0; column < sqlite3_column_count(select); ++column) {
                const std::string name = sqlite3_column_name(select, column);
                if ((std::string(table) == "jobs" && name == "created") ||
                    (std::string(table) == "series" && name == "rewrites"))
                    continue;
                out += name + "=";
                switch (sqlite3_column_type(select, column)) {
                case SQLITE_INTEGER:
                    out += std::to_string(sqlite3_column_int64(select, column));
                    break;
                case SQLITE_FLOAT:
                    out += "bits " + std::to_string(std::bit_cast<uint64_t>(sqlite3_column_double(select, column)));
                    break;
                case SQLITE_NULL:
                    out += "null";
                    break;
                default:
                    out += std::string(static_cast<const char*>(sqlite3_column_blob(select, column)),
                                       static_cast<size_t>(sqlite3_column_bytes(select, column)));
                }
                out += ' ';
            }
            out += '\n';
        }
        sqlite3_finalize(select);
    }
    return out;
}

// The first line where two catalogs' contents differ, with both versions of it; "" when they are the same.
std::string first_difference(const std::string& one, const std::string& other) {
    std::istringstream one_lines(one), other_lines(other);
    std::string a, b;
    for (int line = 1;; ++line) {
        const bool more = static_cast<bool>(std::getline(one_lines, a)),
                   other_more = static_cast<bool>(std::getline(other_lines, b));
        if (!more && !other_more)
            return "";
        if (more != other_more || a != b)
            return "line " + std::to_string(line) + ":\n  " + (more ? a : "(none)") + "\n  " +
                   (other_more ? b : "(none)");
    }
}

// A number as a worker may write one: small and huge integers, any double's bits, the edges of ±2^53 and of zero.
std::string random_number(std::mt19937_64& random) {
    char text[64];
    switch (random() % 9) {
    case 0:
        return std::to_string(static_cast<int64_t>(random() % 2001) - 1000);
    case 1:
        return std::to_string(static_cast<int64_t>(random()));
    case 2:
        return std::to_string(random());
    case 3: {
        double value = 0;
        do
            value = std::bit_cast<double>(random());
        while (!std::isfinite(value));
        std::snprintf(text, sizeof(text), "%.17g", value);
        return text;
    }
    case 4: {
        const char* const edges[] = {"-0",
                                     "-0.0",
                                     "0.0",
                                     "4.9e-324",
                                     "9007199254740993",
                                     "-9007199254740992",
                                     "1E2",
                                     "2.5e+3",
                                     "1.7976931348623157e308"};
        return edges[random() % std::size(edges)];
    }
    default:
        std::snprintf(text, sizeof(text), "%.17g", std::uniform_real_distribution<double>(-2, 2)(random));
        return text;
    }
}

std::string random_value(std::mt19937_64& random) {
    const char* const others[] = {"null", "true", "\"text\"", "[1,2]", "{\"k\":1}", "\"0.5\""};
    return random() % 6 ? random_number(random) : others[random() % std::size(others)];
}

// An object's text from its fields (keys as JSON string contents, values as JSON), in a random order.
std::string object_text(std::vector<std::pair<std::string, std::string>> fields, std::mt19937_64& random) {
    std::shuffle(fields.begin(), fields.end(), random);
    std::string text = "{";
    for (size_t i = 0; i < fields.size(); ++i)
        text += (i ? ",\"" : "\"") + fields[i].first + "\":" + fields[i].second;
    return text + "}";
}

// One event as a worker (or a buggy one) writes it; plain: whether it is the metric record Catalog's fast path takes.
std::string random_event(std::mt19937_64& random, int64_t& next_seq, bool& plain) {
    int64_t seq = next_seq++;
    if (random() % 10 == 0)
        seq -= static_cast<int64_t>(random() % 6); // a re-delivery
    const std::string step = std::to_string(seq * 10);
    const std::string time = random_number(random);
    const unsigned kind = static_cast<unsigned>(random() % 21);
    plain = false;
    auto event = [&](std::string type, std::string data, std::vector<std::pair<std::string, std::string>> more = {}) {
        more.emplace_back("seq", std::to_string(seq));
        more.emplace_back("type", std::move(type));
        more.emplace_back("data", std::move(data));
        if (random() % 8)
            more.emplace_back("time", time);
        return object_text(more, random);
    };
    if (kind < 11) { // a metric record, plain or with one thing out of the ordinary
        const char* const names[] = {"loss", "accuracy", "lr", "val/loss",      "gr\\u00e9", "progress",
                                     "time", "epoch",    "v",  "samples_per_s", "a\\\"b"};
        std::vector<std::pair<std::string, std::string>> data{{"type", "\"metric\""}, {"step", step}};
        std::vector<size_t> order(std::size(names));
        std::iota(order.begin(), order.end(), 0);
        std::shuffle(order.begin(), order.end(), random);
        for (size_t i = 0; i < 1 + random() % 5; ++i)
            data.emplace_back(names[order[i]], random_value(random));
        std::vector<std::pair<std::string, std::string>> more;
        if (random() % 3 == 0)
            more.emplace_back("worker", "\"w1\""); // a key the catalog does not read
        plain = true;
        switch (kind) {
        case 0:
            data.emplace_back(data.back().first, random_value(random)); // a key twice
            plain = false;
            break;
        case 1: {
            const char* const seqs[] = {"\"7\"", "1e300", "1e16", "null"};
            more.emplace_back("seq", seqs[random() % std::size(seqs)]); // a seq twice, or not a number
            plain = false;
            break;
        }
        case 2: {
            const char* const steps[] = {"\"3\"", "1e300", "-9007199254740994", "null", "[]"};
            data[1].second = steps[random() % std::size(steps)];
            plain = false;
            break;
        }
        case 3:
            more.emplace_back("time", "\"noon\"");
            plain = false;
            break;
        case 4:
            data[1].second = step + ".0"; // a step written as a double: still plain
            break;
        default:
            break;
        }
        std::string text = event("\"record\"", object_text(data, random), more);
        return text;
    }
    switch (kind) {
    case 11:
        return event("\"log\"",
                     object_text({{"stream", "\"stdout\""}, {"line", "\"step " + step + " \\u00e9\""}}, random));
    case 12: {
        const char* const states[] = {"\"running\"", "\"failed\"", "\"succeeded\"", "\"held\"", "7"};
        return event("\"state\"",
                     object_text({{"state", states[random() % std::size(states)]}, {"reason", "\"r\""}}, random));
    }
    case 13:
        return event(
            "\"telemetry\"",
            object_text({{"cpu_percent", random_number(random)},
                         {"spend", random_number(random)},
                         {"gpus", "[{\"index\":0,\"utilization\":" + random_number(random) +
                                      ",\"memory_used_mb\":10,\"memory_total_mb\":" + random_number(random) + "}]"}},
                        random));
    case 14:
        return event(
            "\"record\"",
            object_text({{"type", "\"checkpoint\""}, {"step", step}, {"path", "\"/c/" + step + "\""}}, random));
    case 15:
        return event("\"record\"", object_text({{"type", "\"eval\""},
                                                {"step", step},
                                                {"split", random() % 2 ? "\"val\"" : "\"test\""},
                                                {"loss", random_value(random)},
                                                {"accuracy", random_value(random)},
                                                {"confusion", random() % 2 ? "[[3,1],[0,4]]" : "[[1,2]]"}},
                                               random));
    case 16:
        return event("\"record\"", object_text({{"type", "\"config\""},
                                                {"config", "{\"lr\":" + random_number(random) + ",\"layers\":[1,2]}"},
                                                {"goals", "{\"accuracy\":\"max\"}"}},
                                               random));
    case 17:
        return event("\"warning\"",
                     object_text({{"alert", "\"idle_gpu\""}, {"message", "\"idle " + step + "\""}}, random));
    case 18:
        return event("\"record\"",
                     object_text({{"type", "\"event\""}, {"event", "\"nan_loss\""}, {"step", step}}, random));
    case 19:
        return event(
            "\"capture\"",
            object_text({{"part", "\"code\""}, {"files", "[\"train.py\"]"}, {"commit", "\"c" + step + "\""}}, random));
    default: {
        const char* const odd[] = {"42",   "\"x\"",        "[]",
                                   "null", R"({"seq":1})", R"({"seq":"x","type":"record","data":[1]})"};
        --next_seq;
        return odd[random() % std::size(odd)];
    }
    }
}

} // namespace

// Catalog::ingest_text's fast path (plain metric records read straight from simdjson's DOM, every other event
// converted to nlohmann::json) against ingest() of what nlohmann parses from the same text: 300 batches of random
// events, every kind the catalog reads, plain and odd, some batches with a number simdjson refuses (2^64: the whole
// batch goes nlohmann's way). The two catalogs must hold the same rows, every point's bits included.
TEST(Catalog, TheFastPathIngestsWhatTheGeneralOneDoes) {
    TempCatalog fast_temp, general_temp;
    Catalog fast, general;
    ASSERT_EQ(fast.open(fast_temp.path()), "");
    ASSERT_EQ(general.open(general_temp.path()), "");
    const int64_t job = fast.add_job("job", "local", "1", json::object());
    ASSERT_EQ(general.add_job("job", "local", "1", json::object()), job);
    CatalogWriter fast_writer(fast), general_writer(general);
    std::mt19937_64 random(23);
    int64_t next_seq = 1;
    int expected_plain = 0, plain = 0, refused = 0;
    std::vector<std::string> fast_alerts, general_alerts;
    for (int batch = 0; batch < 300; ++batch) {
        std::string text = "[";
        int batch_plain = 0;
        for (int i = 0, n = static_cast<int>(random() % 40); i < n; ++i) {
            bool event_plain = false;
            text += (i ? "," : "") + random_event(random, next_seq, event_plain);
            batch_plain += event_plain ? 1 : 0;
        }
        if (batch % 25 == 7) {
            text += text.size() > 1 ? "," : "";
            text += R"({"seq":)" + std::to_string(next_seq++) +
                    R"(,"type":"record","data":{"type":"metric","step":1,"loss":18446744073709551616}})";
            ++refused;
        } else
            expected_plain += batch_plain;
        text += "]";
        fast_writer.post([&, text](Catalog& catalog) {
            const Catalog::Ingested ingested = catalog.ingest_text(job, text);
            EXPECT_EQ(ingested.error, "") << text;
            plain += ingested.plain;
            for (const auto& alert : catalog.take_alerts())
                fast_alerts.push_back(alert.kind + ": " + alert.message);
        });
        general_writer.post([&, text](Catalog& catalog) {
            const json parsed = json::parse(text);
            catalog.ingest(job, parsed.get_ref<const json::array_t&>());
            for (const auto& alert : catalog.take_alerts())
                general_alerts.push_back(alert.kind + ": " + alert.message);
        });
    }
    ASSERT_EQ(fast_writer.flush(), "");
    ASSERT_EQ(general_writer.flush(), "");
    EXPECT_EQ(refused, 12);
    EXPECT_EQ(plain, expected_plain);
    EXPECT_GT(plain, 1000);
    const std::string contents = catalog_contents(fast), general_contents = catalog_contents(general);
    EXPECT_EQ(first_difference(contents, general_contents), "");
    EXPECT_EQ(fast_alerts, general_alerts);
    EXPECT_GT(fast_alerts.size(), 10u);
    EXPECT_EQ(fast.last_seq(job), general.last_seq(job));
    // Not empty alike: the curves, logs, checkpoints and evaluations are there.
    EXPECT_GT(SeriesStore::points(fast.db(), fast.series(job, "loss", false), INT64_MIN, INT64_MAX).size(), 300u);
    EXPECT_GT(SeriesStore::points(fast.db(), fast.series(job, "gré", false), INT64_MIN, INT64_MAX).size(), 100u);
    for (const char* table : {"job_logs", "checkpoints", "evaluations", "metric_summaries", "captures"}) {
        Statement rows = fast.db().prepare(std::string("SELECT count(*) FROM ") + table);
        ASSERT_TRUE(rows.step());
        EXPECT_GT(rows.integer(0), 5) << table;
    }
    // And text that is no JSON array ingests nothing and says so.
    fast_writer.post([&](Catalog& catalog) {
        for (const char* bad : {"{\"seq\":1}", "[{\"seq\":1", "", "[1e999"}) {
            const Catalog::Ingested ingested = catalog.ingest_text(job, bad);
            EXPECT_NE(ingested.error, "") << bad;
            EXPECT_EQ(ingested.last_seq, 0) << bad;
        }
    });
    ASSERT_EQ(fast_writer.flush(), "");
    EXPECT_EQ(first_difference(catalog_contents(fast), contents), "");
}

TEST(Catalog, TelemetryLogsAndJobSummaryAreIngested) {
    TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    const int64_t job = catalog.add_job("j", "local", "1", json::object());
    CatalogWriter writer(catalog);
    writer.post(
        job,
        {json{{"seq", 1}, {"time", 10.0}, {"type", "state"}, {"data", {{"state", "running"}, {"reason", "started"}}}},
         json{{"seq", 2},
              {"time", 11.0},
              {"type", "telemetry"},
              {"data",
               {{"cpu_percent", 97.5},
                {"spend", 0.25},
                {"gpus", {{{"index", 0}, {"utilization", 88}, {"memory_used_mb", 20}, {"memory_total_mb", 80}}}}}}},
         json{{"seq", 3}, {"time", 11.5}, {"type", "log"}, {"data", {{"stream", "stdout"}, {"line", "epoch 1"}}}},
         json{{"seq", 4},
              {"time", 12.0},
              {"type", "record"},
              {"data", {{"type", "eval"}, {"split", "val"}, {"step", 10}, {"accuracy", 0.8}, {"loss", 0.5}}}}});
    writer.flush();
    Statement row = catalog.db().prepare("SELECT state, reason, spend, accuracy, last_seq FROM jobs WHERE id=?");
    row.bind(1, job);
    ASSERT_TRUE(row.step());
    EXPECT_EQ(row.text(0), "running");
    EXPECT_EQ(row.text(1), "started");
    EXPECT_EQ(row.real(2), 0.25);
    EXPECT_EQ(row.real(3), 0.8);
    EXPECT_EQ(row.integer(4), 4);
    EXPECT_EQ(catalog.series_names(job),
              (std::vector<std::string>{"telemetry/cpu_percent", "telemetry/gpu0/memory_percent",
                                        "telemetry/gpu0/memory_used_mb", "telemetry/gpu0/utilization",
                                        "telemetry/spend", "val/accuracy", "val/loss"}));
    const auto memory =
        SeriesStore::points(catalog.db(), catalog.series(job, "telemetry/gpu0/memory_percent", false), 0, 1 << 30);
    ASSERT_EQ(memory.size(), 1u);
    EXPECT_EQ(memory[0].value, 25.0);
    Statement log = catalog.db().prepare("SELECT line FROM job_logs WHERE job=?");
    log.bind(1, job);
    ASSERT_TRUE(log.step());
    EXPECT_EQ(log.text(0), "epoch 1");
}

TEST(Catalog, WideBucketsAreWholeChunksAndExactForTheStepsTheyReport) {
    TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    const int64_t job = catalog.add_job("j", "local", "1", json::object());
    const int64_t series = catalog.series(job, "loss", true);
    std::mt19937 random(5);
    std::uniform_real_distribution<double> value(-1, 1);
    std::vector<MetricPoint> all;
    for (int64_t step = 1; step <= 300'000; ++step)
        all.push_back({step, value(random)});
    catalog.db().exec("BEGIN");
    {
        SeriesStore store(catalog.db());
        store.append(series, all);
    }
    catalog.db().exec("COMMIT");
    // The first range reaches past the data (steps end at 300,000): only its first 3/4 has buckets (~3000 steps a
    // bucket, six chunks). Then zooms whose buckets are about a chunk wide (512 steps): a bucket a chunk (1,000 to
    // 151,000 in 300), fewer buckets than asked where chunks are wider (5,000 to 45,000 in 300: a chunk is about
    // four buckets), four chunks a bucket (10,000 to 250,000 in 150); their inner buckets start at chunk edges.
    struct Zoom {
        long from, to;
        int buckets;
        unsigned least;
        bool chunk_edges;
    };
    for (const Zoom& zoom :
         {Zoom{0, 400'000, 100, 70, false}, Zoom{777, 250'001, 100, 90, false}, Zoom{1'000, 151'000, 300, 250, true},
          Zoom{5'000, 45'000, 300, 70, true}, Zoom{10'000, 250'000, 150, 100, true}}) {
        const long from = zoom.from, to = zoom.to;
        const auto got = SeriesStore::query(catalog.db(), series, from, to, zoom.buckets);
        ASSERT_LE(got.size(), static_cast<size_t>(zoom.buckets));
        ASSERT_GE(got.size(), zoom.least) << from << "-" << to;
        if (zoom.chunk_edges) {
            for (size_t i = 1; i + 1 < got.size(); ++i)
                ASSERT_EQ((got[i].first_step - 1) % SeriesStore::kChunkPoints, 0) << "bucket " << i << " of " << from;
        }
        int64_t counted = 0, previous_last = from - 1;
        for (const Bucket& b : got) {
            EXPECT_GT(b.first_step, previous_last) << "buckets overlap or are out of order";
            previous_last = b.last_step;
            // Exact over the steps the bucket reports.
            double min = 1e300, max = -1e300, last = 0;
            int64_t count = 0;
            for (const auto& p : all)
                if (p.step >= b.first_step && p.step <= b.last_step) {
                    min = std::min(min, p.value);
                    max = std::max(max, p.value);
                    last = p.value;
                    ++count;
                }
            ASSERT_EQ(b.count, count);
            ASSERT_EQ(b.min, min);
            ASSERT_EQ(b.max, max);
            ASSERT_EQ(b.last, last);
            counted += count;
        }
        int64_t expected = 0;
        for (const auto& p : all)
            expected += p.step >= from && p.step <= to;
        EXPECT_EQ(counted, expected) << "every point in range is in exactly one bucket";
    }
    // One or two buckets over a range that cuts a chunk at each end: never more than asked (the chunk-wide path needs
    // three: it once looped for ever on one).
    for (const int buckets : {1, 2}) {
        const auto few = SeriesStore::query(catalog.db(), series, 100, 1'600, buckets);
        ASSERT_LE(few.size(), static_cast<size_t>(buckets));
        int64_t counted = 0;
        for (const Bucket& b : few)
            counted += b.count;
        EXPECT_EQ(counted, 1'501);
    }
}

TEST(Catalog, AlertsForNanFailureBudgetAndIdle) {
    TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    const int64_t job = catalog.add_job("j", "local", "1", json::object());
    catalog.db().exec("BEGIN");
    catalog.ingest(
        job, {json{{"seq", 1},
                   {"time", 1.0},
                   {"type", "warning"},
                   {"data", {{"alert", "budget_80"}, {"message", "80% of the budget spent"}}}},
              json{{"seq", 2}, {"time", 2.0}, {"type", "warning"}, {"data", {{"message", "metrics line is not JSON"}}}},
              json{{"seq", 3},
                   {"time", 3.0},
                   {"type", "record"},
                   {"data", {{"type", "event"}, {"event", "nan_loss"}, {"step", 7}}}},
              json{{"seq", 4},
                   {"time", 4.0},
                   {"type", "state"},
                   {"data", {{"state", "failed"}, {"reason", "exit code 4"}}}}});
    catalog.db().exec("COMMIT");
    const auto alerts = catalog.take_alerts();
    ASSERT_EQ(alerts.size(), 3u); // a plain warning is not an alert
    EXPECT_EQ(alerts[0].kind, "budget_80");
    EXPECT_EQ(alerts[1].kind, "nan_loss");
    EXPECT_EQ(alerts[2].kind, "failed");
    EXPECT_EQ(alerts[2].message, "job failed: exit code 4");
    EXPECT_TRUE(catalog.take_alerts().empty());
    Statement count = catalog.db().prepare("SELECT COUNT(*) FROM alerts WHERE job=?");
    count.bind(1, job);
    ASSERT_TRUE(count.step());
    EXPECT_EQ(count.integer(0), 3);
}

TEST(Catalog, BackendsKeepAddressAndPinButNoToken) {
    TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    catalog.add_backend({"gpu-box", "worker", "https://gpu-box:7878", "sha256//abc="});
    catalog.add_backend(
        {"gpu-box", "worker", "https://gpu-box:7979", "sha256//def="}); // re-added: updated, not doubled
    const auto rows = catalog.backends();
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].url, "https://gpu-box:7979");
    EXPECT_EQ(rows[0].pinned_public_key, "sha256//def=");
    // No column of the table holds a token.
    Statement info = catalog.db().prepare("SELECT name FROM pragma_table_info('backends')");
    while (info.step())
        EXPECT_EQ(info.text(0).find("token"), std::string::npos) << info.text(0);
}

namespace {

// What the writer reported to its handler, in order (it calls from its own thread).
struct Reports {
    std::mutex mutex;
    std::vector<std::string> seen;
    void attach(CatalogWriter& writer) {
        writer.on_error([this](const std::string& error) {
            std::lock_guard lock(mutex);
            seen.push_back(error);
        });
    }
    std::vector<std::string> all() {
        std::lock_guard lock(mutex);
        return seen;
    }
};

// flush() until everything is written: it returns after each failed attempt, so this waits on attempts, not time.
std::string flush_until_written(CatalogWriter& writer, int attempts) {
    std::string error = "never tried";
    for (int i = 0; i < attempts && !error.empty(); ++i)
        error = writer.flush();
    return error;
}

int64_t count_jobs(Catalog& catalog, const std::string& name) {
    Statement count = catalog.db().prepare("SELECT COUNT(*) FROM jobs WHERE name=?");
    count.bind(1, name);
    return count.step() ? count.integer(0) : -1;
}

} // namespace

TEST(CatalogWriter, AFullDiskLosesNothingAndWritingResumesOnceSpaceIsFreed) {
    TempCatalog temp;
    test::SmallDisk disk((temp.dir / "disk").string(), "4m");
    if (!disk.mounted) {
        TRAINDECK_SKIP("cannot mount a small tmpfs here to fill up (needs root)");
    }
    Catalog catalog;
    ASSERT_EQ(catalog.open(disk.path + "/catalog.db"), "");
    const int64_t job = catalog.add_job("mlp", "local", "1", json::object());
    Reports reports; // outlives the writer, whose thread calls it
    CatalogWriter writer(catalog);
    writer.set_retry_limit(std::chrono::milliseconds(20));
    reports.attach(writer);
    writer.post(job, metrics(1, 1000));
    ASSERT_EQ(writer.flush(), "");

    // The disk fills up. The next batch (steps and a job with a 2 MB spec) cannot be written.
    // dd ends with "no space left", a failure status: what it leaves behind is what counts.
    [[maybe_unused]] const int filled =
        std::system(("dd if=/dev/zero of='" + disk.path + "/filler' bs=64k >/dev/null 2>&1").c_str());
    writer.post(job, metrics(1001, 3000));
    writer.post([](Catalog& c) { c.add_job("big", "local", "2", json{{"notes", std::string(2 << 20, 'x')}}); });
    const std::string refused = writer.flush();
    EXPECT_NE(refused.find("not written yet"), std::string::npos) << refused;
    EXPECT_NE(refused.find("full"), std::string::npos) << refused; // SQLite's "database or disk is full"
    // More arrives while it fails: queued behind the failed batch, in order.
    writer.post(job, metrics(3001, 4000));
    EXPECT_NE(writer.flush(), "");

    // Space again: everything is written, once, by the same writer, and the handler heard both turns.
    fs::remove(disk.path + "/filler");
    ASSERT_EQ(flush_until_written(writer, 1000), "");
    const auto points = SeriesStore::points(catalog.db(), catalog.series(job, "loss", false), 0, 1'000'000);
    ASSERT_EQ(points.size(), 4000u);
    for (size_t i = 0; i < points.size(); ++i)
        ASSERT_EQ(points[i].step, static_cast<int64_t>(i + 1)) << "lost or repeated step";
    EXPECT_EQ(catalog.last_seq(job), 4000);
    EXPECT_EQ(count_jobs(catalog, "big"), 1);
    const auto seen = reports.all();
    ASSERT_GE(seen.size(), 2u);
    EXPECT_NE(seen.front().find("cannot be written now"), std::string::npos) << seen.front();
    EXPECT_EQ(seen.back(), "") << "no word that writes succeed again";
}

TEST(CatalogWriter, AClosureThatThrowsIsUndoneAloneAndReported) {
    TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    Reports reports; // outlives the writer, whose thread calls it
    CatalogWriter writer(catalog);
    reports.attach(writer);
    writer.post([](Catalog& c) { c.add_job("before", "local", "1", json::object()); });
    writer.post([](Catalog& c) {
        c.add_job("half", "local", "2", json::object()); // written, then undone with the rest of this closure
        throw std::runtime_error("a bug in this closure");
    });
    writer.post([](Catalog& c) { c.db().exec("INSERT INTO no_such_table VALUES (1)"); }); // a SQL error: not retried
    writer.post([](Catalog& c) { c.add_job("after", "local", "3", json::object()); });
    const std::string error = writer.flush();
    EXPECT_NE(error.find("refused and undone"), std::string::npos) << error;
    EXPECT_EQ(count_jobs(catalog, "before"), 1);
    EXPECT_EQ(count_jobs(catalog, "half"), 0);
    EXPECT_EQ(count_jobs(catalog, "after"), 1);
    const auto seen = reports.all();
    ASSERT_EQ(seen.size(), 2u);
    EXPECT_NE(seen[0].find("a bug in this closure"), std::string::npos) << seen[0];
    EXPECT_NE(seen[1].find("no_such_table"), std::string::npos) << seen[1];
    // A later flush is not blamed for them.
    writer.post([](Catalog& c) { c.add_job("later", "local", "4", json::object()); });
    EXPECT_EQ(writer.flush(), "");
}

TEST(CatalogWriter, ALockedDatabaseIsWaitedForNotDropped) {
    TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    const int64_t job = catalog.add_job("mlp", "local", "1", json::object());
    CatalogWriter writer(catalog);
    writer.set_retry_limit(std::chrono::milliseconds(20));
    // Another program holds the write lock past SQLite's busy timeout (a backup tool, a second console).
    Database other;
    ASSERT_EQ(other.open(temp.path(), false), "");
    other.exec("BEGIN IMMEDIATE");
    writer.post(job, metrics(1, 500));
    const std::string waiting = writer.flush();
    EXPECT_NE(waiting.find("locked"), std::string::npos) << waiting;
    other.exec("COMMIT");
    ASSERT_EQ(flush_until_written(writer, 1000), "");
    EXPECT_EQ(SeriesStore::points(catalog.db(), catalog.series(job, "loss", false), 0, 1'000'000).size(), 500u);
}

namespace {

json record(int64_t seq, json data) {
    return {{"seq", seq}, {"time", 100.0 + seq}, {"type", "record"}, {"data", data}};
}

const RunRecord* find_run(const std::vector<RunRecord>& runs, int64_t id) {
    for (const RunRecord& run : runs)
        if (run.id == id)
            return &run;
    return nullptr;
}

} // namespace

TEST(Catalog, ConfigRecordsBecomeFlattenedKeysMergedKeyByKey) {
    TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    // A built-in job's request: its spec is the config until the trainer reports the full one.
    const int64_t job = catalog.add_job("a", "local", "1", {{"builtin", {{"model", "mlp"}, {"epochs", 2}}}});
    std::vector<RunRecord> runs = catalog.runs(0, nullptr);
    ASSERT_EQ(runs.size(), 1u);
    ASSERT_EQ(runs[0].config.size(), 2u);
    EXPECT_EQ(runs[0].config.at("model").text, "mlp");
    EXPECT_EQ(runs[0].config.at("epochs").number, 2);

    catalog.ingest(job, {record(1, {{"type", "config"},
                                    {"config",
                                     {{"optimizer", {{"lr", 0.05}, {"type", "sgd"}}},
                                      {"hidden", {256, 128}},
                                      {"normalize", true},
                                      {"epochs", 3}}}}),
                         record(2, {{"type", "config"}, {"config", {{"seed", 7}}}})});
    runs = catalog.runs(0, nullptr);
    ASSERT_EQ(runs.size(), 1u);
    const auto& config = runs[0].config;
    ASSERT_EQ(config.size(),
              8u); // model, epochs (replaced), optimizer.lr, optimizer.type, hidden[0..1], normalize, seed
    EXPECT_EQ(config.at("optimizer.lr").text, "0.05");
    EXPECT_DOUBLE_EQ(config.at("optimizer.lr").number, 0.05);
    EXPECT_EQ(config.at("optimizer.type").text, "sgd");
    EXPECT_FALSE(config.at("optimizer.type").is_number());
    EXPECT_EQ(config.at("hidden[1]").number, 128);
    EXPECT_EQ(config.at("normalize").text, "true");
    EXPECT_EQ(config.at("normalize").number, 1);
    EXPECT_EQ(config.at("epochs").number, 3);
    EXPECT_EQ(config.at("seed").text, "7");
    EXPECT_EQ(config.at("model").text, "mlp"); // a key the record did not name stays
}

TEST(Catalog, OversizedConfigIsCutWithAnAlertNotSilently) {
    TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    const int64_t job = catalog.add_job("a", "local", "1", json::object());
    json big = json::object();
    for (size_t i = 0; i < kMaxConfigKeys + 10; ++i)
        big["k" + std::to_string(i)] = i;
    catalog.ingest(job, {record(1, {{"type", "config"}, {"config", big}})});
    const auto alerts = catalog.take_alerts();
    ASSERT_EQ(alerts.size(), 1u);
    EXPECT_EQ(alerts[0].kind, "config_truncated");
    EXPECT_NE(alerts[0].message.find("10 config keys left out"), std::string::npos) << alerts[0].message;
    EXPECT_EQ(catalog.runs(0, nullptr).at(0).config.size(), kMaxConfigKeys);
}

TEST(Catalog, SummariesAreKeptOnIngestWithBestByTheMetricsGoal) {
    TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    const int64_t job = catalog.add_job("a", "local", "1", json::object());
    // Two batches; loss falls then rises; val/accuracy rises then falls; "bleu4" gets its goal from the job.
    catalog.ingest(job, {record(1, {{"type", "config"}, {"goals", {{"bleu4", "max"}}}}),
                         record(2, {{"type", "metric"}, {"step", 1}, {"loss", 2.0}, {"bleu4", 0.1}, {"lr", 0.1}}),
                         record(3, {{"type", "metric"}, {"step", 2}, {"loss", 0.5}, {"bleu4", 0.3}, {"lr", 0.05}}),
                         record(4, {{"type", "eval"}, {"split", "val"}, {"step", 2}, {"accuracy", 0.8}})});
    catalog.ingest(job, {record(5, {{"type", "metric"}, {"step", 3}, {"loss", 0.9}, {"bleu4", 0.2}, {"lr", 0.01}}),
                         record(6, {{"type", "eval"}, {"split", "val"}, {"step", 3}, {"accuracy", 0.7}}),
                         // A resumed run repeats step 2: its new values replace the old ones (0.5 and 0.3 are
                         // gone from the curve, so from min, best and count too); last stays at step 3.
                         record(7, {{"type", "metric"}, {"step", 2}, {"loss", 0.6}, {"bleu4", 0.25}, {"lr", 0.05}})});
    const RunRecord run = catalog.runs(0, nullptr).at(0);
    const MetricSummary& loss = run.summaries.at("loss");
    EXPECT_EQ(loss.goal, MetricGoal::minimize);
    EXPECT_EQ(loss.last, 0.9);
    EXPECT_EQ(loss.last_step, 3);
    EXPECT_EQ(loss.min, 0.6);
    EXPECT_EQ(loss.max, 2.0);
    EXPECT_EQ(loss.best, 0.6);
    EXPECT_EQ(loss.count, 3);
    const MetricSummary& accuracy = run.summaries.at("val/accuracy");
    EXPECT_EQ(accuracy.goal, MetricGoal::maximize);
    EXPECT_EQ(accuracy.best, 0.8);
    EXPECT_EQ(accuracy.last, 0.7);
    EXPECT_EQ(accuracy.count, 2);
    EXPECT_EQ(run.summaries.at("bleu4").goal, MetricGoal::maximize);
    EXPECT_EQ(run.summaries.at("bleu4").best, 0.25);
    EXPECT_EQ(run.summaries.at("lr").goal, MetricGoal::none);
    EXPECT_TRUE(std::isnan(run.summaries.at("lr").best));
    EXPECT_EQ(run.summaries.at("lr").last, 0.01);
}

TEST(Catalog, SummariesStayExactWhenAResumedRunReplacesSteps) {
    TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    const int64_t job = catalog.add_job("a", "local", "1", json::object());
    // What the curve holds after each batch, step by step (a replaced step keeps only its newest value).
    std::map<int64_t, double> truth;
    int64_t seq = 0;
    auto send = [&](int64_t from, int64_t to, double offset) {
        std::vector<json> events;
        for (int64_t step = from; step <= to; ++step) {
            const double loss = offset + std::sin(0.01 * static_cast<double>(step));
            events.push_back(record(++seq, {{"type", "metric"}, {"step", step}, {"loss", loss}}));
            truth[step] = loss;
        }
        catalog.ingest(job, events);
    };
    auto expect_exact = [&](const char* when) {
        const MetricSummary summary = catalog.runs(0, nullptr).at(0).summaries.at("loss");
        double low = truth.begin()->second, high = low;
        for (const auto& [step, value] : truth) {
            low = std::min(low, value);
            high = std::max(high, value);
        }
        EXPECT_EQ(summary.count, static_cast<int64_t>(truth.size())) << when;
        EXPECT_EQ(summary.min, low) << when;
        EXPECT_EQ(summary.max, high) << when;
        EXPECT_EQ(summary.best, low) << when;
        EXPECT_EQ(summary.last_step, truth.rbegin()->first) << when;
        EXPECT_EQ(summary.last, truth.rbegin()->second) << when;
    };
    send(1, 1500, 1.0); // two chunks of points, and a third begun
    expect_exact("after appending");
    // Resumed from a checkpoint at step 400: steps 400..1500 again, in sealed chunks and the open one, higher now
    // (the old minimum, at step 471, is replaced).
    send(400, 1500, 3.0);
    expect_exact("after a resume that re-sent steps in sealed chunks");
    // Resumed again from step 1490, running on past the old end.
    send(1490, 1600, -1.0);
    expect_exact("after a resume that ran past the old end");
    // Everything again from the start, lower: the old maximum is replaced too.
    send(1, 1600, -2.0);
    expect_exact("after a resume from the first step");
    send(1601, 1700, 0.5); // and an append after a resume is folded in again
    expect_exact("after appending to a resumed run");
}

TEST(Catalog, TheRevisionNeverFallsBackWhenRunsArePurged) {
    TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    const int64_t older = catalog.add_job("older", "local", "1", json::object());
    const int64_t newest = catalog.add_job("newest", "local", "2", json::object());
    catalog.add_tags(older, {"a"});
    catalog.set_note(newest, "the newest change");
    catalog.set_deleted(newest, true);
    int64_t seen = 0;
    catalog.runs(0, &seen); // what a runs table read before the console purged at its next start
    ASSERT_EQ(catalog.purge_deleted(), std::vector<int64_t>{newest}); // the newest-changed row goes
    EXPECT_GE(catalog.revision(), seen);
    catalog.set_starred(older, true);
    const std::vector<RunRecord> changed = catalog.runs(seen, nullptr);
    ASSERT_EQ(changed.size(), 1u) << "a change after the purge is newer than every revision read before it";
    EXPECT_EQ(changed[0].id, older);
    EXPECT_TRUE(changed[0].starred);
    const int64_t job = catalog.add_job("after", "local", "3", json::object());
    EXPECT_EQ(catalog.runs(seen, nullptr).size(), 2u);
    EXPECT_EQ(find_run(catalog.runs(seen, nullptr), job)->name, "after");
}

TEST(Catalog, AnOlderCatalogsRevisionCounterStartsAtItsNewestChange) {
    TempCatalog temp;
    int64_t newest = 0;
    {
        Catalog catalog;
        ASSERT_EQ(catalog.open(temp.path()), "");
        const int64_t job = catalog.add_job("a", "local", "1", json::object());
        catalog.add_tags(job, {"x"});
        catalog.runs(0, &newest);
        // Back to schema 4, where the revision was the newest row's `changed`.
        catalog.db().exec("DROP TABLE catalog_revision; PRAGMA user_version=4");
    }
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    EXPECT_EQ(catalog.schema_version(), Catalog::kSchemaVersion);
    EXPECT_EQ(catalog.revision(), newest);
    catalog.add_job("b", "local", "2", json::object());
    EXPECT_EQ(catalog.runs(newest, nullptr).size(), 1u);
}

TEST(Catalog, RunsAfterARevisionAreOnlyTheRunsThatChanged) {
    TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    const int64_t a = catalog.add_job("a", "local", "1", json::object());
    const int64_t b = catalog.add_job("b", "local", "2", json::object());
    const int64_t c = catalog.add_job("c", "local", "3", json::object());
    int64_t revision = 0;
    ASSERT_EQ(catalog.runs(0, &revision).size(), 3u);
    EXPECT_TRUE(catalog.runs(revision, nullptr).empty());
    catalog.ingest(b, metrics(1, 3));
    catalog.add_tags(c, {"baseline"});
    int64_t next = 0;
    const std::vector<RunRecord> changed = catalog.runs(revision, &next);
    ASSERT_EQ(changed.size(), 2u);
    EXPECT_EQ(changed[0].id, b);
    EXPECT_EQ(changed[0].summaries.at("loss").count, 3);
    EXPECT_EQ(changed[1].id, c);
    ASSERT_EQ(changed[1].tags.size(), 1u);
    EXPECT_GT(next, revision);
    EXPECT_TRUE(catalog.runs(next, nullptr).empty());
    EXPECT_EQ(find_run(catalog.runs(0, nullptr), a)->tags.size(), 0u);

    // One run by its id, with its details, as the whole list has it; none for an id the catalog lacks.
    catalog.add_tags(b, {"tuned"});
    const std::optional<RunRecord> one = catalog.run(b);
    ASSERT_TRUE(one);
    const std::vector<RunRecord> all = catalog.runs(0, nullptr);
    const RunRecord* listed = find_run(all, b);
    ASSERT_NE(listed, nullptr);
    EXPECT_EQ(one->name, "b");
    EXPECT_EQ(one->tags, listed->tags);
    EXPECT_EQ(one->summaries.at("loss").count, 3);
    EXPECT_EQ(one->summaries.size(), listed->summaries.size());
    EXPECT_EQ(one->config.size(), listed->config.size());
    EXPECT_TRUE(catalog.run(c)->summaries.empty()) << "another run's rows";
    EXPECT_FALSE(catalog.run(c + 100));
    EXPECT_EQ(catalog.runs(next, nullptr, true, a).size(), 0u) << "a has not changed since";
    EXPECT_EQ(catalog.runs(next, nullptr, true, b).size(), 1u);
}

TEST(Catalog, HygieneSurvivesReopeningAndDeletionCanBeUndoneUntilPurged) {
    TempCatalog temp;
    int64_t keep = 0, gone = 0, back = 0;
    {
        Catalog catalog;
        ASSERT_EQ(catalog.open(temp.path()), "");
        keep = catalog.add_job("keep", "local", "1", json::object());
        gone = catalog.add_job("gone", "local", "2", json::object());
        back = catalog.add_job("back", "local", "3", json::object());
        catalog.ingest(gone, metrics(1, 600)); // two chunks of points, to see them purged
        catalog.add_tags(keep, {" baseline ", "lr-sweep", "", "baseline"});
        catalog.remove_tags(keep, {"lr-sweep"});
        catalog.set_note(keep, "# Baseline\nthe **reference** run");
        catalog.set_starred(keep, true);
        catalog.set_archived(back, true);
        catalog.set_deleted(gone, true);
        catalog.set_deleted(back, true);
        catalog.set_deleted(back, false); // undo
        catalog.save_view({"sweep", "tag:baseline", "[\"optimizer.lr\"]", "[\"model\"]", "{}"});
    }
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    std::vector<RunRecord> runs = catalog.runs(0, nullptr);
    ASSERT_EQ(runs.size(), 3u);
    const RunRecord* k = find_run(runs, keep);
    ASSERT_TRUE(k);
    ASSERT_EQ(k->tags, std::vector<std::string>{"baseline"});
    EXPECT_EQ(k->note, "# Baseline\nthe **reference** run");
    EXPECT_TRUE(k->starred);
    EXPECT_FALSE(k->deleted);
    EXPECT_TRUE(find_run(runs, gone)->deleted);
    EXPECT_FALSE(find_run(runs, back)->deleted);
    EXPECT_TRUE(find_run(runs, back)->archived);
    ASSERT_EQ(catalog.views().size(), 1u);
    EXPECT_EQ(catalog.views()[0].query, "tag:baseline");

    EXPECT_EQ(catalog.purge_deleted(), std::vector<int64_t>{gone});
    runs = catalog.runs(0, nullptr);
    ASSERT_EQ(runs.size(), 2u);
    EXPECT_EQ(find_run(runs, gone), nullptr);
    for (const char* table : {"series", "metric_chunks", "metric_chunk_data", "metric_summaries"}) {
        Statement count = catalog.db().prepare(std::string("SELECT COUNT(*) FROM ") + table);
        ASSERT_TRUE(count.step());
        EXPECT_EQ(count.integer(0), 0) << table << " still holds rows of the purged run";
    }
}

TEST(Catalog, StateEventsSetWhenARunStartedAndFinished) {
    TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    const int64_t job = catalog.add_job("a", "local", "1", json::object());
    catalog.ingest(job, {{{"seq", 1}, {"time", 1000.0}, {"type", "state"}, {"data", {{"state", "running"}}}}});
    catalog.ingest(job, {{{"seq", 2}, {"time", 1010.0}, {"type", "state"}, {"data", {{"state", "preempting"}}}},
                         {{"seq", 3}, {"time", 1020.0}, {"type", "state"}, {"data", {{"state", "running"}}}}});
    catalog.ingest(job, {{{"seq", 4}, {"time", 1100.0}, {"type", "state"}, {"data", {{"state", "succeeded"}}}}});
    const RunRecord run = catalog.runs(0, nullptr).at(0);
    EXPECT_EQ(run.started, 1000.0); // the first start, not the resume
    EXPECT_EQ(run.finished, 1100.0);
    // A whole run in one batch (a console that was closed while it ran): both times still land.
    const int64_t other = catalog.add_job("b", "local", "2", json::object());
    catalog.ingest(other, {{{"seq", 1}, {"time", 2000.0}, {"type", "state"}, {"data", {{"state", "running"}}}},
                           {{"seq", 2}, {"time", 2050.0}, {"type", "state"}, {"data", {{"state", "succeeded"}}}}});
    const RunRecord* b = find_run(catalog.runs(0, nullptr), other);
    ASSERT_TRUE(b);
    EXPECT_EQ(b->started, 2000.0);
    EXPECT_EQ(b->finished, 2050.0);
}

TEST(Catalog, ARegressionsEvaluationsKeepTheirPairsAndChartTheirErrors) {
    TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    const int64_t job = catalog.add_job("j", "local", "1", json::object());
    const json pairs = {{250000.0, 248100.5}, {-3.5, 2.25}, {1e6, 1.02e6}};
    catalog.db().exec("BEGIN");
    catalog.ingest(job, {record(1, {{"type", "eval"},
                                    {"split", "test"},
                                    {"step", 40},
                                    {"epoch", 4},
                                    {"loss", 1.4e8},
                                    {"rmse", 11832.2},
                                    {"mae", 7299.25},
                                    {"r2", 0.9987},
                                    {"samples", 3},
                                    {"pairs", pairs}}),
                         record(2, {{"type", "eval"}, {"split", "val"}, {"step", 50}, {"pairs", {{1, "two"}}}}),
                         record(3, {{"type", "eval"}, {"split", "val"}, {"step", 60}, {"pairs", json::array()}})});
    catalog.db().exec("COMMIT");
    Statement select = catalog.db().prepare("SELECT split, step, data FROM evaluations WHERE job=? ORDER BY seq");
    select.bind(1, job);
    ASSERT_TRUE(select.step());
    EXPECT_EQ(select.text(0), "test");
    const json kept = json::parse(select.text(2));
    EXPECT_EQ(kept["pairs"], pairs);
    EXPECT_EQ(kept["r2"], 0.9987);
    EXPECT_EQ(kept["mae"], 7299.25);
    EXPECT_EQ(kept["samples"], 3);
    EXPECT_FALSE(select.step()) << "a pair with a word, and no pairs at all, are not kept";
    const auto alerts = catalog.take_alerts();
    ASSERT_EQ(alerts.size(), 2u);
    EXPECT_NE(alerts[0].message.find("eval record's pairs was not kept: a pair that is not [true, predicted]"),
              std::string::npos)
        << alerts[0].message;
    EXPECT_NE(alerts[1].message.find("not a list"), std::string::npos) << alerts[1].message;
    const std::vector<std::string> names = catalog.series_names(job);
    for (const char* name : {"test/loss", "test/rmse", "test/mae", "test/r2"})
        EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
    // R² is a score: higher is better, as the runs table and sweeps rank it.
    EXPECT_EQ(default_goal("test/r2"), MetricGoal::maximize);
    EXPECT_EQ(default_goal("val/rmse"), MetricGoal::minimize);
}

TEST(Catalog, AnEvaluationsExamplesAreKeptWhenSoundAndBadOnesNeverCostItsMatrix) {
    TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    const int64_t job = catalog.add_job("j", "local", "1", json::object());
    const json matrix = {{5, 1}, {2, 7}};
    const std::vector<uint8_t> pixels(size_t{2} * 3 * 1, 200);
    const std::string thumbnail = base64_encode(pixels.data(), pixels.size());
    auto eval = [&](int64_t seq, const json& examples) {
        return record(
            seq, {{"type", "eval"}, {"split", "test"}, {"step", seq}, {"confusion", matrix}, {"examples", examples}});
    };
    const json good = {{"height", 2}, {"width", 3}, {"channels", 1}, {"items", {{1, 0, 0.9, thumbnail, 17}}}};
    json wrong_class = good, wrong_size = good, not_base64 = good;
    wrong_class["items"][0][1] = 2; // a class the 2x2 matrix does not have
    wrong_size["items"][0][3] = base64_encode(pixels.data(), 5);
    not_base64["items"][0][3] = std::string(8, '*');
    catalog.db().exec("BEGIN");
    catalog.ingest(job, {eval(1, good), eval(2, wrong_class), eval(3, wrong_size), eval(4, not_base64),
                         eval(5, {{"height", 100}, {"width", 3}, {"channels", 1}, {"items", json::array()}})});
    catalog.db().exec("COMMIT");
    Statement select = catalog.db().prepare("SELECT data FROM evaluations WHERE job=? ORDER BY seq");
    select.bind(1, job);
    int kept = 0, with_examples = 0;
    while (select.step()) {
        const json data = json::parse(select.text(0));
        EXPECT_EQ(data["confusion"], matrix) << "every matrix is kept, whatever its examples";
        ++kept;
        with_examples += data.contains("examples");
        if (data.contains("examples")) {
            EXPECT_EQ(data["examples"], good);
        }
    }
    EXPECT_EQ(kept, 5);
    EXPECT_EQ(with_examples, 1);
    const auto alerts = catalog.take_alerts();
    ASSERT_EQ(alerts.size(), 2u) << "one alert a reason: the three bad items share one";
    EXPECT_NE(alerts[0].message.find("examples were not kept: an example that is not [true class"), std::string::npos)
        << alerts[0].message;
    EXPECT_NE(alerts[1].message.find("height and width are not 1 to 64"), std::string::npos) << alerts[1].message;
}

TEST(Catalog, EvaluationsKeepTheirConfusionMatricesAndABadOneIsAnAlert) {
    TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    const int64_t job = catalog.add_job("j", "local", "1", json::object());
    const json matrix = {{5, 1, 0}, {2, 7, 1}, {0, 0, 9}};
    catalog.db().exec("BEGIN");
    catalog.ingest(job,
                   {record(1, {{"type", "eval"},
                               {"split", "val"},
                               {"step", 10},
                               {"epoch", 1},
                               {"loss", 0.5},
                               {"accuracy", 0.84},
                               {"confusion", matrix},
                               {"class_names", {"ant", "bee", "cat"}}}),
                    // Not square; a negative count; names that do not fit (dropped, the matrix kept).
                    record(2, {{"type", "eval"}, {"split", "val"}, {"step", 20}, {"confusion", {{1, 2}, {3}}}}),
                    record(3, {{"type", "eval"}, {"split", "val"}, {"step", 30}, {"confusion", {{1, -2}, {3, 4}}}}),
                    record(4, {{"type", "eval"},
                               {"split", "test"},
                               {"step", 40},
                               {"epoch", 2},
                               {"confusion", {{3, 0}, {1, 4}}},
                               {"class_names", {"only one"}}}),
                    // Loss and accuracy alone (a script's eval): a curve point, no matrix and no alert.
                    record(5, {{"type", "eval"}, {"split", "val"}, {"step", 50}, {"accuracy", 0.9}})});
    // A re-delivered record adds nothing; the same bad matrix again (the next epoch's) is not a second alert.
    catalog.ingest(job, {record(1, {{"type", "eval"}, {"split", "val"}, {"step", 10}, {"confusion", matrix}}),
                         record(6, {{"type", "eval"}, {"split", "val"}, {"step", 60}, {"confusion", {{1, 2}, {3}}}})});
    catalog.db().exec("COMMIT");

    Statement select =
        catalog.db().prepare("SELECT split, step, epoch, data FROM evaluations WHERE job=? ORDER BY seq");
    select.bind(1, job);
    ASSERT_TRUE(select.step());
    EXPECT_EQ(select.text(0), "val");
    EXPECT_EQ(select.integer(1), 10);
    EXPECT_EQ(select.integer(2), 1);
    const json first = json::parse(select.text(3));
    EXPECT_EQ(first["confusion"], matrix);
    EXPECT_EQ(first["class_names"], json({"ant", "bee", "cat"}));
    EXPECT_EQ(first["accuracy"], 0.84);
    ASSERT_TRUE(select.step());
    EXPECT_EQ(select.text(0), "test");
    const json second = json::parse(select.text(3));
    EXPECT_EQ(second["confusion"], json({{3, 0}, {1, 4}}));
    EXPECT_FALSE(second.contains("class_names")) << "one name for two classes is no naming";
    EXPECT_FALSE(select.step());

    const auto alerts = catalog.take_alerts();
    ASSERT_EQ(alerts.size(), 2u);
    EXPECT_EQ(alerts[0].kind, "evaluation_dropped");
    EXPECT_NE(alerts[0].message.find("not square"), std::string::npos) << alerts[0].message;
    EXPECT_NE(alerts[1].message.find("not a whole number"), std::string::npos) << alerts[1].message;

    // A deleted job takes its evaluations with it: a later job given its id must not show them.
    catalog.set_deleted(job, true);
    EXPECT_EQ(catalog.purge_deleted(), std::vector<int64_t>{job});
    Statement left = catalog.db().prepare("SELECT COUNT(*) FROM evaluations");
    ASSERT_TRUE(left.step());
    EXPECT_EQ(left.integer(0), 0);
}
