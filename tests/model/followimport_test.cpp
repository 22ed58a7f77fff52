// A followed logdir imported pass by pass (importers/sourcefollower.h + model/runimport.h): each pass reads only what
// the files gained, and the catalog ends exactly as one whole import of the final files leaves it. A file rewritten,
// replaced, truncated, or grown out of order is read whole again; a catalog that lost what a follower handed it
// gets the run whole again.
#include "catalog.h"
#include "histogramstore.h"
#include "imagestore.h"
#include "protowire.h"
#include "runimport.h"
#include "seriesstore.h"
#include "sourcefollower.h"
#include "tempcatalog.h"
#include "tfevents.h"
#include "tfrecord.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

using namespace traindeck;
using namespace traindeck::importers;
using traindeck::test::TempCatalog;
namespace fs = std::filesystem;

namespace {

constexpr double kStart = 1700000000.0;

std::string histogram_event(const std::string& tag, int64_t step) {
    std::string limits, counts;
    double num = 0;
    for (int i = 0; i < 4 + static_cast<int>(step % 3); ++i) {
        const double limit = 0.5 * (i + 1) + 0.001 * static_cast<double>(step), count = (step * 7 + i) % 13;
        limits.append(reinterpret_cast<const char*>(&limit), 8);
        counts.append(reinterpret_cast<const char*>(&count), 8);
        num += count;
    }
    ProtoWriter histogram;
    histogram.fixed64(1, 0.0).fixed64(2, 3.0).fixed64(3, num).fixed64(4, num * 1.5).fixed64(5, num * 2.5);
    histogram.bytes(6, limits).bytes(7, counts);
    const std::string value = ProtoWriter().bytes(1, tag).bytes(5, histogram.data()).take();
    ProtoWriter event;
    event.fixed64(1, kStart + static_cast<double>(step)).varint(2, static_cast<uint64_t>(step));
    event.bytes(5, ProtoWriter().bytes(1, value).data());
    return tfrecord_frame(event.data());
}

std::string image_event(const std::string& tag, int64_t step) {
    const std::string encoded(static_cast<size_t>(40 + step % 17), static_cast<char>('a' + step % 26));
    const std::string image = ProtoWriter().varint(1, 4).varint(2, 6).varint(3, 3).bytes(4, encoded).take();
    const std::string value = ProtoWriter().bytes(1, tag).bytes(4, image).take();
    ProtoWriter event;
    event.fixed64(1, kStart + static_cast<double>(step)).varint(2, static_cast<uint64_t>(step));
    event.bytes(5, ProtoWriter().bytes(1, value).data());
    return tfrecord_frame(event.data());
}

// A live run's records: a plain scalar, one whose exact bits ride beside it, a tag that starts half way, histograms,
// images, and one record whose data CRC is wrong (damage a whole read also finds).
std::vector<std::string> live_records(int steps) {
    std::vector<std::string> records = {encode_file_version_event(kStart)};
    for (int step = 1; step <= steps; ++step) {
        const double t = kStart + step;
        records.push_back(encode_scalar_event("loss", step, 1.0f / static_cast<float>(step), t));
        if (step % 3 == 0)
            records.push_back(encode_exact_scalar_event("lr", step, 0.1 / step, t));
        if (step > steps / 2)
            records.push_back(encode_scalar_event("late", step, static_cast<float>(step), t));
        if (step % 7 == 0)
            records.push_back(histogram_event("weights", step));
        if (step % 11 == 0)
            records.push_back(image_event("samples", step));
        if (step == steps / 3) {
            std::string bad = encode_scalar_event("loss", 100000, 1, t);
            bad.back() ^= 0x40;
            records.push_back(bad);
        }
    }
    return records;
}

void append(const std::string& path, std::string_view bytes) {
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path, std::ios::binary | std::ios::app)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void write_whole(const std::string& path, const std::string& bytes) {
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

struct Passed {
    std::vector<std::string> runs; // the names of the runs the pass gave
    uint64_t bytes = 0;            // what it read
};

// One pass of the follower, each run it gives imported into catalog.
Passed follow_pass(SourceFollower& follower, Catalog& catalog) {
    Passed passed;
    const uint64_t before = follower.bytes_read();
    auto read = follower.pass([&](ImportedRun&& run) {
        passed.runs.push_back(run.name);
        auto result = import_run(catalog, run);
        EXPECT_TRUE(result) << (result ? "" : result.error());
        if (result) {
            EXPECT_FALSE(result->read_whole_again) << run.name;
            for (const std::string& note : result->notes)
                ADD_FAILURE() << note;
        }
        return true;
    });
    EXPECT_TRUE(read) << (read ? "" : read.error());
    passed.bytes = follower.bytes_read() - before;
    return passed;
}

int64_t job_named(Catalog& catalog, const std::string& name) {
    Statement select = catalog.db().prepare("SELECT id FROM jobs WHERE name=?");
    select.bind(1, name);
    return select.step() ? select.integer(0) : 0;
}

// Everything the catalog holds of a run, as text: its series' points bit for bit, histograms, image places, the
// import's record of the source and the series it took, and the job's outcome.
std::string everything_of(Catalog& catalog, int64_t job) {
    Database& db = catalog.db();
    std::ostringstream out;
    out.precision(17);
    {
        Statement select =
            db.prepare("SELECT kind, name, points, last_step, last_value FROM import_series WHERE job=? ORDER BY "
                       "kind, name");
        select.bind(1, job);
        while (select.step())
            out << "series " << select.text(0) << " " << select.text(1) << " " << select.integer(2) << " "
                << select.integer(3) << " " << (select.is_null(4) ? NAN : select.real(4)) << "\n";
    }
    for (const std::string& name : catalog.series_names(job)) {
        out << "points " << name << ":";
        const int64_t id = catalog.series(job, name, false);
        for (const MetricPoint& p : SeriesStore::points(db, id, INT64_MIN, INT64_MAX)) {
            uint64_t bits = 0;
            std::memcpy(&bits, &p.value, 8);
            out << " " << p.step << "=" << bits;
        }
        out << "\n";
    }
    for (const std::string& name : HistogramStore::names(db, job))
        for (const Histogram& h : HistogramStore::read(db, job, name, INT64_MIN, INT64_MAX)) {
            out << "histogram " << name << " " << h.step << " " << h.time << " " << h.num << " " << h.sum_squares;
            for (size_t i = 0; i < h.limits.size(); ++i)
                out << " " << h.limits[i] << ":" << h.counts[i];
            out << "\n";
        }
    for (const std::string& tag : ImageStore::tags(db, job))
        for (const ImageRef& image : ImageStore::list(db, job, tag))
            out << "image " << tag << " " << image.seq << " " << image.step << " " << image.time << " " << image.width
                << "x" << image.height << " " << image.bytes << " " << image.file << "@" << image.record_offset << "#"
                << image.item << "\n";
    {
        Statement select = db.prepare("SELECT path, format, files, damage, config FROM import_sources WHERE job=?");
        select.bind(1, job);
        if (select.step())
            out << "source " << select.text(0) << " " << select.text(1) << " files " << select.text(2) << " damage "
                << select.text(3) << " config " << select.text(4) << "\n";
    }
    Statement select = db.prepare("SELECT state, reason, started, finished FROM jobs WHERE id=?");
    select.bind(1, job);
    if (select.step())
        out << "job " << select.text(0) << " " << select.text(1) << " " << select.real(2) << " " << select.real(3);
    return out.str();
}

uint64_t size_of(const std::string& path) { return fs::file_size(path); }

// A logdir of one run folder ("run") whose event file holds loss at steps 1 to `steps`.
struct OneRun {
    std::string logdir, file, bytes;
    OneRun(const TempCatalog& temp, int steps)
        : logdir((temp.dir / "logdir").string()), file(logdir + "/run/events.out.tfevents.1700000000.host.1.0") {
        bytes = encode_file_version_event(kStart);
        for (int step = 1; step <= steps; ++step)
            bytes += encode_scalar_event("loss", step, static_cast<float>(step), kStart + step);
        write_whole(file, bytes);
    }
};

// What one pass gave: the last run's import, its damage, the bytes read.
struct Pass {
    RunImportResult result;
    std::vector<Damage> damage;
    uint64_t bytes = 0;
};

// One pass, each run imported into catalog; a run the catalog says to read whole is forgotten, as the console and
// the CLI do.
Pass pass_into(SourceFollower& follower, Catalog& catalog) {
    Pass pass;
    const uint64_t before = follower.bytes_read();
    auto read = follower.pass([&](ImportedRun&& run) {
        pass.damage = run.damage;
        auto result = import_run(catalog, run);
        EXPECT_TRUE(result) << (result ? "" : result.error());
        if (result) {
            pass.result = *result;
            if (result->read_whole_again)
                follower.forget(run.source);
        }
        return true;
    });
    EXPECT_TRUE(read) << (read ? "" : read.error());
    pass.bytes = follower.bytes_read() - before;
    return pass;
}

size_t loss_points(Catalog& catalog, int64_t job) {
    return SeriesStore::points(catalog.db(), catalog.series(job, "loss", false), INT64_MIN, INT64_MAX).size();
}

} // namespace

TEST(FollowImport, ALiveLogdirReadOnPassByPassEndsAsOneWholeImportAndReadsEachByteOnce) {
    TempCatalog temp;
    const std::string logdir = (temp.dir / "logdir").string();
    // A finished run beside the live one: read at the first pass only.
    ImportedRun done;
    for (int step = 0; step < 5000; ++step)
        done.scalars["loss"].push_back({step, 1.0 / (step + 1), kStart + step});
    ASSERT_TRUE(write_tensorboard_scalars(logdir + "/done", done));
    const std::string first = logdir + "/live/events.out.tfevents.1700000000.host.1.0";
    const std::string second = logdir + "/live/events.out.tfevents.1700000100.host.1.0"; // a restarted writer's
    const std::vector<std::string> records = live_records(300);
    std::string bytes_first, bytes_second;
    size_t largest = 0;
    for (size_t i = 0; i < records.size(); ++i) {
        (i < records.size() * 2 / 3 ? bytes_first : bytes_second) += records[i];
        largest = std::max(largest, records[i].size());
    }
    append(first, bytes_first.substr(0, 100)); // the live file exists from the start, cut inside a record

    Catalog followed;
    ASSERT_EQ(followed.open((temp.dir / "followed.db").string()), "");
    SourceFollower follower(logdir, {});
    EXPECT_TRUE(follower.changed());
    Passed passed = follow_pass(follower, followed);
    EXPECT_EQ(passed.runs, (std::vector<std::string>{"done", "live"}));
    const uint64_t done_bytes = size_of(fs::directory_iterator(logdir + "/done")->path().string());
    EXPECT_EQ(passed.bytes, done_bytes + 100);
    EXPECT_FALSE(follower.changed());
    EXPECT_TRUE(follow_pass(follower, followed).runs.empty()); // nothing changed: nothing read, nothing given
    // The live files grow by slices of any length, most of them ending inside a record.
    std::mt19937 rng(7);
    size_t written_first = 100, written_second = 0;
    int passes = 0;
    uint64_t read_after_first = 0;
    while (written_first < bytes_first.size() || written_second < bytes_second.size()) {
        const size_t slice = 1 + rng() % (2 * largest);
        if (written_first < bytes_first.size()) {
            const size_t n = std::min(slice, bytes_first.size() - written_first);
            append(first, std::string_view(bytes_first).substr(written_first, n));
            written_first += n;
        } else {
            const size_t n = std::min(slice, bytes_second.size() - written_second);
            append(second, std::string_view(bytes_second).substr(written_second, n));
            written_second += n;
        }
        ASSERT_TRUE(follower.changed());
        passed = follow_pass(follower, followed);
        ASSERT_EQ(passed.runs, std::vector<std::string>{"live"}) << "pass " << passes;
        // Only what the files gained, and the unfinished record the last pass stopped at with the 4 bytes before it.
        EXPECT_LE(passed.bytes, slice + largest + 4 + 4) << "pass " << passes;
        read_after_first += passed.bytes;
        ++passes;
    }
    EXPECT_GT(passes, 50);
    EXPECT_LE(read_after_first,
              bytes_first.size() + bytes_second.size() + static_cast<uint64_t>(passes) * (largest + 8));

    // One whole import of the final files into a catalog of its own.
    Catalog whole;
    ASSERT_EQ(whole.open((temp.dir / "whole.db").string()), "");
    auto runs = read_tensorboard_logdir(logdir);
    ASSERT_TRUE(runs) << runs.error();
    for (const ImportedRun& run : *runs) {
        auto result = import_run(whole, run);
        ASSERT_TRUE(result) << result.error();
    }
    for (const std::string name : {"live", "done"}) {
        const std::string followed_run = everything_of(followed, job_named(followed, name));
        EXPECT_EQ(followed_run, everything_of(whole, job_named(whole, name))) << name;
        if (name == std::string("live")) {
            // Not empty-equals-empty: every kind of point is there, and the bad record is said, once.
            EXPECT_NE(followed_run.find("points late:"), std::string::npos);
            EXPECT_NE(followed_run.find("series scalar loss 300 300"), std::string::npos) << followed_run;
            EXPECT_NE(followed_run.find("series histogram weights 42 294"), std::string::npos);
            EXPECT_NE(followed_run.find("image samples 26 "), std::string::npos);
            EXPECT_NE(followed_run.find("data CRC"), std::string::npos);
            EXPECT_EQ(followed_run.find("ends inside"), std::string::npos); // the cut-short ends were taken back
            EXPECT_NE(followed_run.find(second), std::string::npos);
        }
    }
}

TEST(FollowImport, AFileChangedOtherwiseThanByGrowingIsReadWhole) {
    TempCatalog temp;
    OneRun one(temp, 50);
    const std::string &logdir = one.logdir, &file = one.file;
    std::string& bytes = one.bytes;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    SourceFollower follower(logdir, {});
    std::vector<std::string> notes;
    const auto pass = [&] {
        Pass done = pass_into(follower, catalog);
        notes = done.result.notes;
        return done.bytes;
    };
    const auto run_size = [&] {
        uint64_t total = 0;
        for (const auto& entry : fs::directory_iterator(logdir + "/run"))
            total += entry.file_size();
        return total;
    };
    EXPECT_EQ(pass(), bytes.size());
    // Grown: only the new bytes, and the 4 before them.
    const std::string more = encode_scalar_event("loss", 51, 51, kStart + 51);
    append(file, more);
    EXPECT_EQ(pass(), more.size() + 4);

    // Its last record rewritten in place (same length, another value), and one more after it.
    {
        const std::string other = encode_scalar_event("loss", 51, -1, kStart + 51);
        ASSERT_EQ(other.size(), more.size());
        const int fd = ::open(file.c_str(), O_WRONLY | O_CLOEXEC);
        ASSERT_GE(fd, 0);
        ASSERT_EQ(::pwrite(fd, other.data(), other.size(), static_cast<off_t>(bytes.size())),
                  static_cast<ssize_t>(other.size()));
        ::close(fd);
        append(file, encode_scalar_event("loss", 52, 52, kStart + 52));
    }
    // The look at where the last read stopped finds another record's CRC there, and the run is read whole.
    EXPECT_EQ(pass(), 4 + more.size() + run_size());
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_NE(notes[0].find("rewritten"), std::string::npos) << notes[0];

    // Replaced by another file (a new inode), longer than the one it replaces.
    bytes += more;
    for (int step = 52; step <= 60; ++step)
        bytes += encode_scalar_event("loss", step, static_cast<float>(step), kStart + step);
    write_whole(file + ".new", bytes);
    fs::rename(file + ".new", file);
    EXPECT_EQ(pass(), run_size());

    // Truncated below where the last read stopped: read whole. Written again with the same bytes: that is growth
    // (the record where the last read stopped is still there), read on.
    write_whole(file, bytes.substr(0, 200));
    EXPECT_EQ(pass(), 200u);
    write_whole(file, bytes);
    EXPECT_LT(pass(), bytes.size() - 150);

    // A file that sorts before the one being read: a whole read puts its points first.
    const std::string earlier = logdir + "/run/events.out.tfevents.1600000000.host.1.0";
    write_whole(earlier, encode_file_version_event(kStart - 100));
    EXPECT_EQ(pass(), run_size());
    // A file after it, then the earlier one grows: its points come before the later file's in a whole read.
    const std::string later = logdir + "/run/events.out.tfevents.1800000000.host.1.0";
    append(later, encode_scalar_event("loss", 70, 70, kStart + 70));
    EXPECT_EQ(pass(), size_of(later));
    append(file, encode_scalar_event("loss", 61, 61, kStart + 61));
    EXPECT_EQ(pass(), run_size());
    // What the catalog took: steps 1 to 60 and 70 (the rewrites added nothing: it keeps what it had).
    EXPECT_EQ(loss_points(catalog, job_named(catalog, "run")), 61u);
}

TEST(FollowImport, ACatalogThatLostWhatTheFollowerGaveItGetsTheRunWhole) {
    TempCatalog temp;
    OneRun one(temp, 40);
    const std::string &logdir = one.logdir, &file = one.file;
    Catalog first, other;
    ASSERT_EQ(first.open((temp.dir / "first.db").string()), "");
    ASSERT_EQ(other.open((temp.dir / "other.db").string()), "");
    SourceFollower follower(logdir, {});
    EXPECT_EQ(pass_into(follower, first).result.points_added, 40);
    append(file, encode_scalar_event("loss", 41, 41, kStart + 41));
    // The follower hands out step 41 alone; this catalog never had the run.
    const RunImportResult lost = pass_into(follower, other).result;
    EXPECT_TRUE(lost.read_whole_again);
    EXPECT_EQ(lost.points_added, 0);
    EXPECT_EQ(lost.job, 0); // nothing written, not even the run
    EXPECT_EQ(job_named(other, "run"), 0);
    // Forgotten: read whole at the next pass that finds a change.
    append(file, encode_scalar_event("loss", 42, 42, kStart + 42));
    ASSERT_TRUE(follower.changed());
    const RunImportResult whole = pass_into(follower, other).result;
    EXPECT_FALSE(whole.read_whole_again);
    EXPECT_EQ(whole.points_added, 42);
    EXPECT_EQ(loss_points(other, whole.job), 42u);

    // A third catalog holds the run, but only its first 20 steps (an earlier import): step 43 alone would leave a gap.
    Catalog third;
    ASSERT_EQ(third.open((temp.dir / "third.db").string()), "");
    auto runs = read_tensorboard_logdir(logdir);
    ASSERT_TRUE(runs && runs->size() == 1);
    runs->front().scalars.at("loss").resize(20);
    const auto early = import_run(third, runs->front());
    ASSERT_TRUE(early);
    pass_into(follower, first).result;
    append(file, encode_scalar_event("loss", 43, 43, kStart + 43));
    const RunImportResult gap = pass_into(follower, third).result;
    EXPECT_TRUE(gap.read_whole_again);
    EXPECT_EQ(gap.job, early->job);
    EXPECT_EQ(loss_points(third, early->job), 20u); // nothing written
    append(file, encode_scalar_event("loss", 44, 44, kStart + 44));
    const RunImportResult filled = pass_into(follower, third).result;
    EXPECT_FALSE(filled.read_whole_again);
    EXPECT_EQ(filled.points_added, 24);
    EXPECT_EQ(loss_points(third, early->job), 44u);
}

// A run deleted in the catalog while it is followed takes nothing; restored, it catches up whole at the next change,
// even when that change carries no series it had (an image).
TEST(FollowImport, ARunDeletedWhileFollowedCatchesUpWhenRestored) {
    TempCatalog temp;
    OneRun one(temp, 20);
    const std::string &logdir = one.logdir, &file = one.file;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    SourceFollower follower(logdir, {});
    const auto pass = [&] { return pass_into(follower, catalog).result; };
    const int64_t job = pass().job;
    ASSERT_GT(job, 0);
    catalog.set_deleted(job, true);
    const std::string more = encode_scalar_event("loss", 21, 21, kStart + 21) + histogram_event("weights", 21);
    append(file, more);
    const RunImportResult deleted = pass();
    EXPECT_TRUE(deleted.read_whole_again);
    ASSERT_EQ(deleted.notes.size(), 1u);
    EXPECT_NE(deleted.notes[0].find("deleted in the catalog"), std::string::npos);
    catalog.set_deleted(job, false);
    append(file, image_event("samples", 22));
    const RunImportResult restored = pass();
    EXPECT_EQ(restored.job, job);
    EXPECT_EQ(restored.points_added, 1); // step 21, taken now
    EXPECT_EQ(restored.histograms_added, 1);
    EXPECT_EQ(restored.images_added, 1);

    Catalog whole;
    ASSERT_EQ(whole.open((temp.dir / "whole.db").string()), "");
    auto runs = read_tensorboard_logdir(logdir);
    ASSERT_TRUE(runs && runs->size() == 1);
    ASSERT_TRUE(import_run(whole, runs->front()));
    EXPECT_EQ(everything_of(catalog, job), everything_of(whole, job_named(whole, "run")));
}

// A last record that fails its data CRC may be one still arriving (a network file system can show a file's size
// before its bytes): a follower reads it again, and takes it once it is whole. Until then it is said as a cut-short
// end, not as damage.
TEST(FollowImport, ALastRecordThatFailsItsCrcIsReadAgain) {
    TempCatalog temp;
    OneRun one(temp, 10);
    const std::string &file = one.file, &bytes = one.bytes;
    const std::string last = encode_scalar_event("loss", 11, 11, kStart + 11);
    std::string arriving = last;
    arriving[arriving.size() - 6] = 0; // part of its value not there yet
    write_whole(file, bytes + arriving);
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    SourceFollower follower(one.logdir, {});
    std::vector<Damage> damage;
    const auto pass = [&] { damage = pass_into(follower, catalog).damage; };
    pass();
    ASSERT_EQ(damage.size(), 1u);
    EXPECT_TRUE(damage[0].at_end);
    EXPECT_EQ(damage[0].offset, bytes.size());
    // Its bytes arrive, and one more record after it.
    write_whole(file, bytes + last + encode_scalar_event("loss", 12, 12, kStart + 12));
    pass();
    EXPECT_TRUE(damage.empty());
    const int64_t job = job_named(catalog, "run");
    const auto points = SeriesStore::points(catalog.db(), catalog.series(job, "loss", false), INT64_MIN, INT64_MAX);
    ASSERT_EQ(points.size(), 12u);
    EXPECT_EQ(points[10].value, 11);
}

// What the path holds is asked at every pass: a folder that held only a metrics table when following began is read
// as a logdir once an event file appears under it, as a whole read would read it.
TEST(FollowImport, AFolderThatBecomesALogdirIsReadAsOne) {
    TempCatalog temp;
    const std::string folder = (temp.dir / "experiment").string();
    write_whole(folder + "/metrics.csv", "step,loss\n1,0.5\n2,0.25\n");
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    SourceFollower follower(folder, {});
    std::vector<std::string> formats;
    const auto pass = [&] {
        EXPECT_TRUE(follower.pass([&](ImportedRun&& run) {
            formats.push_back(run.format);
            EXPECT_TRUE(import_run(catalog, run));
            return true;
        }));
    };
    pass();
    EXPECT_EQ(formats, std::vector<std::string>{"csv"});
    std::string bytes = encode_file_version_event(kStart);
    for (int step = 1; step <= 5; ++step)
        bytes += encode_scalar_event("loss", step, static_cast<float>(step), kStart + step);
    write_whole(folder + "/tb/events.out.tfevents.1700000000.host.1.0", bytes);
    ASSERT_TRUE(follower.changed());
    pass();
    EXPECT_EQ(formats, (std::vector<std::string>{"csv", "tensorboard"}));
    const int64_t job = job_named(catalog, "tb");
    ASSERT_GT(job, 0);
    EXPECT_EQ(SeriesStore::points(catalog.db(), catalog.series(job, "loss", false), INT64_MIN, INT64_MAX).size(), 5u);
}
