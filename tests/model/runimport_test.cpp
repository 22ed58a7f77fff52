// Imported runs in the catalog (model/runimport): a real fixture imported twice changes nothing (not even the
// revision); a grown event file adds only its new records; the source (path, format, writer, files, damage) is
// recorded; a step written twice is counted twice and shows its later value; a rewritten source adds nothing and
// says so; MLflow params, tags and status land as config, tags and state; a run deleted in the catalog is left
// alone; a catalog of schema 5 migrates and takes imports; histograms come back bit for bit, a grown source adds only
// its new ones, and a catalog of schema 6 has its histogram rows packed into chunks.
#include "catalog.h"
#include "histogramstore.h"
#include "imagestore.h"
#include "mlflow.h"
#include "requireall.h"
#include "runimport.h"
#include "seriesstore.h"
#include "tempcatalog.h"
#include "tfevents.h"
#include "wandb.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

using namespace traindeck;
using namespace traindeck::importers;
using traindeck::test::TempCatalog;

namespace {

const std::string kFixtures = TRAINDECK_FIXTURES;

#define REQUIRE_FIXTURES()                                                                                             \
    if (!std::filesystem::is_directory(kFixtures)) {                                                                   \
        TRAINDECK_SKIP("the fixtures folder " + kFixtures +                                                            \
                       " is missing: check out the shared folder beside the repository");                              \
    }

ImportedRun tensorboard_run(const std::string& path) {
    auto runs = read_tensorboard_logdir(path);
    EXPECT_TRUE(runs && runs->size() == 1) << (runs ? "" : runs.error());
    return runs && !runs->empty() ? runs->front() : ImportedRun{};
}

std::vector<MetricPoint> points_of(Catalog& catalog, int64_t job, const std::string& name) {
    const int64_t id = catalog.series(job, name, false);
    return id ? SeriesStore::points(catalog.db(), id, INT64_MIN, INT64_MAX) : std::vector<MetricPoint>{};
}

int64_t count(Catalog& catalog, const std::string& sql) {
    Statement select = catalog.db().prepare(sql);
    return select.step() ? select.integer(0) : -1;
}

void write_file(const std::string& path, const std::string& bytes) {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

} // namespace

TEST(RunImport, ImportingARealRunTwiceChangesNothing) {
    REQUIRE_FIXTURES();
    TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    const ImportedRun run = tensorboard_run(kFixtures + "/tfevents/lightning-torch-hparams");
    auto first = import_run(catalog, run);
    ASSERT_TRUE(first) << first.error();
    EXPECT_TRUE(first->created);
    EXPECT_EQ(first->points_added, run.scalar_points());
    EXPECT_EQ(first->points_kept, 0);
    EXPECT_EQ(catalog.series_names(first->job).size(), 10u);
    EXPECT_EQ(points_of(catalog, first->job, "train_accuracy_step").size(), 337u);
    const int64_t revision = catalog.revision();
    const int64_t chunks = count(catalog, "SELECT COUNT(*) FROM metric_chunks");

    auto second = import_run(catalog, tensorboard_run(kFixtures + "/tfevents/lightning-torch-hparams"));
    ASSERT_TRUE(second) << second.error();
    EXPECT_FALSE(second->created);
    EXPECT_EQ(second->job, first->job);
    EXPECT_EQ(second->points_added, 0);
    EXPECT_EQ(second->points_kept, run.scalar_points());
    EXPECT_FALSE(second->changed);
    EXPECT_EQ(catalog.revision(), revision);
    EXPECT_EQ(count(catalog, "SELECT COUNT(*) FROM metric_chunks"), chunks);
    EXPECT_EQ(count(catalog, "SELECT COUNT(*) FROM jobs"), 1);

    // The run as the runs table sees it: its config, tags, summaries and outcome.
    const std::vector<RunRecord> runs = catalog.runs(0, nullptr);
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0].backend, "import");
    EXPECT_EQ(runs[0].name, "version_1");
    EXPECT_EQ(runs[0].config.at("backbone").text, "prajjwal1/bert-tiny");
    EXPECT_DOUBLE_EQ(runs[0].config.at("learning_rate").number, 0.01);
    EXPECT_EQ(runs[0].summaries.at("val_accuracy").count, 3);
    EXPECT_NEAR(runs[0].summaries.at("val_accuracy").last, 0.6432, 1e-6);
    EXPECT_EQ(runs[0].state, "succeeded");
    EXPECT_NEAR(runs[0].started, 1677071112.518, 1e-3);
    EXPECT_NEAR(runs[0].finished, 1677072216.934, 1e-3);
    EXPECT_NE(std::find(runs[0].tags.begin(), runs[0].tags.end(), "import:tensorboard"), runs[0].tags.end());
    // Record times for the time axes.
    EXPECT_GT(points_of(catalog, first->job, "_time").size(), 300u);
}

TEST(RunImport, TheSourceIsRecorded) {
    REQUIRE_FIXTURES();
    TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    const ImportedRun run = tensorboard_run(kFixtures + "/tfevents/lightning-torch-hparams");
    auto result = import_run(catalog, run);
    ASSERT_TRUE(result) << result.error();
    Statement select = catalog.db().prepare("SELECT path, format, tool, files, damage FROM import_sources WHERE job=?");
    select.bind(1, result->job);
    ASSERT_TRUE(select.step());
    EXPECT_EQ(select.text(0), run.source);
    EXPECT_EQ(select.text(1), "tensorboard");
    EXPECT_EQ(select.text(2), "tensorboard.summary.writer.event_file_writer");
    EXPECT_EQ(nlohmann::json::parse(select.text(3)).size(), 2u);
    EXPECT_EQ(select.text(4), "[]");
    Statement job = catalog.db().prepare("SELECT remote_id FROM jobs WHERE id=?");
    job.bind(1, result->job);
    ASSERT_TRUE(job.step());
    EXPECT_EQ(job.text(0), "tensorboard:" + std::filesystem::weakly_canonical(run.source).generic_string());
    EXPECT_EQ(job.text(0), import_remote_id(run));
}

TEST(RunImport, AGrownEventFileAddsOnlyItsNewPoints) {
    TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    const std::string logdir = (temp.dir / "logdir").string(), file = logdir + "/run/events.out.tfevents.1.test";
    std::string bytes = encode_file_version_event(1700000000.0);
    for (int step = 1; step <= 100; ++step)
        bytes += encode_scalar_event("loss", step, 1.0f / static_cast<float>(step), 1700000000.0 + step);
    write_file(file, bytes);
    auto first = import_run(catalog, tensorboard_run(logdir));
    ASSERT_TRUE(first) << first.error();
    EXPECT_EQ(first->points_added, 100);

    for (int step = 101; step <= 150; ++step) {
        bytes += encode_scalar_event("loss", step, 1.0f / static_cast<float>(step), 1700000000.0 + step);
        bytes += encode_scalar_event("lr", step, 0.1f, 1700000000.0 + step);
    }
    write_file(file, bytes);
    auto second = import_run(catalog, tensorboard_run(logdir));
    ASSERT_TRUE(second) << second.error();
    EXPECT_EQ(second->job, first->job);
    EXPECT_EQ(second->points_added, 100); // 50 of loss, 50 of the new lr
    EXPECT_EQ(second->points_kept, 100);
    EXPECT_EQ(points_of(catalog, first->job, "loss").size(), 150u);
    EXPECT_EQ(points_of(catalog, first->job, "lr").size(), 50u);
    const auto runs = catalog.runs(0, nullptr);
    EXPECT_EQ(runs.at(0).summaries.at("loss").count, 150);
    EXPECT_EQ(runs.at(0).summaries.at("loss").last_step, 150);
    EXPECT_NEAR(runs.at(0).finished, 1700000150.0, 1e-6);
}

TEST(RunImport, AStepWrittenTwiceIsCountedTwiceAndShowsItsLaterValue) {
    REQUIRE_FIXTURES();
    TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    const ImportedRun run = tensorboard_run(kFixtures + "/tfevents/tbreducer-torch-dupsteps");
    auto result = import_run(catalog, run);
    ASSERT_TRUE(result) << result.error();
    EXPECT_EQ(result->points_added, 420);
    const auto foo = points_of(catalog, result->job, "dup_steps/foo");
    ASSERT_EQ(foo.size(), 200u); // steps 0..199, one value each
    const auto& written = run.scalars.at("dup_steps/foo");
    EXPECT_EQ(foo[95].step, 95);
    EXPECT_EQ(foo[95].value, written[105].value); // the second time step 95 was written
    EXPECT_EQ(foo[50].value, written[50].value);
    EXPECT_EQ(count(catalog, "SELECT points FROM import_series WHERE name='dup_steps/foo'"), 210);
    // Importing again still finds nothing new.
    auto again = import_run(catalog, tensorboard_run(kFixtures + "/tfevents/tbreducer-torch-dupsteps"));
    ASSERT_TRUE(again);
    EXPECT_EQ(again->points_added, 0);
    EXPECT_FALSE(again->changed);
}

TEST(RunImport, HistogramsAreStoredPerStep) {
    REQUIRE_FIXTURES();
    TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    const ImportedRun run = tensorboard_run(kFixtures + "/tfevents/wandb-gan-histos-customscalars");
    auto result = import_run(catalog, run);
    ASSERT_TRUE(result) << result.error();
    EXPECT_EQ(result->histograms_added, 36);
    const std::string name = "gradient/netG_A/norm/histogram";
    EXPECT_EQ(HistogramStore::names(catalog.db(), result->job).size(), 3u);
    EXPECT_EQ(HistogramStore::count(catalog.db(), result->job, name), 12);
    const auto at_900 = HistogramStore::read(catalog.db(), result->job, name, 900, 900);
    ASSERT_EQ(at_900.size(), 1u);
    EXPECT_EQ(at_900[0].counts.size(), 29u);
    // Every bucket as the source wrote it, bit for bit.
    const auto stored = HistogramStore::read(catalog.db(), result->job, name, INT64_MIN, INT64_MAX);
    const auto& written = run.histograms.at(name);
    ASSERT_EQ(stored.size(), written.size());
    for (size_t i = 0; i < stored.size(); ++i) {
        EXPECT_EQ(stored[i].step, written[i].step);
        EXPECT_EQ(stored[i].time, written[i].wall_time);
        EXPECT_EQ(stored[i].num, written[i].num);
        EXPECT_EQ(stored[i].sum_squares, written[i].sum_squares);
        EXPECT_EQ(stored[i].limits, written[i].bucket_limit);
        EXPECT_EQ(stored[i].counts, written[i].bucket_count);
    }
    auto again = import_run(catalog, tensorboard_run(kFixtures + "/tfevents/wandb-gan-histos-customscalars"));
    ASSERT_TRUE(again);
    EXPECT_EQ(again->histograms_added, 0);
    EXPECT_FALSE(again->changed);
    EXPECT_EQ(count(catalog, "SELECT SUM(count) FROM histogram_chunks"), 36);
}

TEST(RunImport, AGrownSourceAddsOnlyItsNewHistograms) {
    TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    ImportedRun run;
    run.format = "tensorboard";
    run.source = (temp.dir / "run").string();
    auto histogram = [](int64_t step) {
        HistogramPoint h;
        h.step = step;
        h.wall_time = 1700000000.0 + 0.1 * static_cast<double>(step);
        for (int i = 0; i < 5 + static_cast<int>(step % 3); ++i) {
            h.bucket_limit.push_back(0.1 * (i + 1) * static_cast<double>(step));
            h.bucket_count.push_back(static_cast<double>((step * 7 + i) % 11));
            h.num += h.bucket_count.back();
        }
        return h;
    };
    auto& points = run.histograms["w"];
    for (int64_t step = 1; step <= 70; ++step) // a chunk and 6 more: the next import goes on in a stored chunk
        points.push_back(histogram(step));
    auto first = import_run(catalog, run);
    ASSERT_TRUE(first) << first.error();
    EXPECT_EQ(first->histograms_added, 70);
    for (int64_t step = 71; step <= 200; ++step)
        points.push_back(histogram(step));
    auto second = import_run(catalog, run);
    ASSERT_TRUE(second) << second.error();
    EXPECT_EQ(second->histograms_added, 130);
    EXPECT_FALSE(second->created);
    const auto stored = HistogramStore::read(catalog.db(), first->job, "w", INT64_MIN, INT64_MAX);
    ASSERT_EQ(stored.size(), 200u);
    for (size_t i = 0; i < stored.size(); ++i) {
        EXPECT_EQ(stored[i].step, points[i].step);
        EXPECT_EQ(stored[i].limits, points[i].bucket_limit);
        EXPECT_EQ(stored[i].counts, points[i].bucket_count);
    }
    EXPECT_EQ(HistogramStore::read(catalog.db(), first->job, "w", 100, 129).size(), 30u);
    auto third = import_run(catalog, run);
    ASSERT_TRUE(third);
    EXPECT_EQ(third->histograms_added, 0);
    EXPECT_FALSE(third->changed);
}

TEST(RunImport, ImagesAreKeptAsTheirPlacesAndAGrownSourceAddsOnlyItsNewOnes) {
    TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    ImportedRun run;
    run.format = "tensorboard";
    run.source = (temp.dir / "run").string();
    run.files = {"relative/events.out.tfevents.1", (temp.dir / "run" / "events.out.tfevents.2").string()};
    auto image = [](int64_t step, int item) {
        ImagePoint p;
        p.step = step;
        p.wall_time = 1700000000.0 + static_cast<double>(step);
        p.width = 28;
        p.height = 14;
        p.encoded_bytes = 100 + static_cast<uint64_t>(step);
        p.file = step % 2 == 0 ? 1 : 0;
        p.record_offset = 1000 * static_cast<uint64_t>(step);
        p.item = item;
        return p;
    };
    auto& images = run.images["samples"];
    for (int64_t step = 1; step <= 3; ++step)
        images.push_back(image(step, 0));
    run.images["pair"] = {image(5, 0), image(5, 1)};
    auto first = import_run(catalog, run);
    ASSERT_TRUE(first) << first.error();
    EXPECT_EQ(first->images_added, 5);
    EXPECT_EQ(count(catalog, "SELECT COUNT(*) FROM image_files"), 2); // each path once
    EXPECT_EQ(ImageStore::tags(catalog.db(), first->job), (std::vector<std::string>{"pair", "samples"}));
    images.push_back(image(4, 0));
    auto second = import_run(catalog, run);
    ASSERT_TRUE(second) << second.error();
    EXPECT_EQ(second->images_added, 1);
    const auto stored = ImageStore::list(catalog.db(), first->job, "samples");
    ASSERT_EQ(stored.size(), 4u);
    for (size_t i = 0; i < stored.size(); ++i) {
        EXPECT_EQ(stored[i].seq, static_cast<int64_t>(i));
        EXPECT_EQ(stored[i].step, images[i].step);
        EXPECT_EQ(stored[i].time, images[i].wall_time);
        EXPECT_EQ(stored[i].width, 28);
        EXPECT_EQ(stored[i].height, 14);
        EXPECT_EQ(stored[i].bytes, static_cast<int64_t>(images[i].encoded_bytes));
        EXPECT_EQ(stored[i].record_offset, static_cast<int64_t>(images[i].record_offset));
        // The file as an absolute path, whatever the reader was given.
        EXPECT_TRUE(std::filesystem::path(stored[i].file).is_absolute()) << stored[i].file;
        EXPECT_TRUE(
            stored[i].file.ends_with(i % 2 == 1 ? "run/events.out.tfevents.2" : "relative/events.out.tfevents.1"))
            << stored[i].file;
    }
    const auto pair = ImageStore::list(catalog.db(), first->job, "pair");
    ASSERT_EQ(pair.size(), 2u);
    EXPECT_EQ(pair[1].item, 1);
    // Past a chunk of 64, and grown inside a stored chunk: every image as it was given, in order.
    auto& many = run.images["many"];
    for (int64_t step = 0; step < 70; ++step)
        many.push_back(image(step * 3, static_cast<int>(step % 3)));
    ASSERT_TRUE(import_run(catalog, run));
    for (int64_t step = 70; step < 200; ++step)
        many.push_back(image(step * 3, 0));
    auto grown = import_run(catalog, run);
    ASSERT_TRUE(grown) << grown.error();
    EXPECT_EQ(grown->images_added, 130);
    const auto stored_many = ImageStore::list(catalog.db(), first->job, "many");
    ASSERT_EQ(stored_many.size(), 200u);
    EXPECT_EQ(ImageStore::count(catalog.db(), first->job, "many"), 200);
    for (size_t i = 0; i < stored_many.size(); ++i) {
        EXPECT_EQ(stored_many[i].seq, static_cast<int64_t>(i));
        EXPECT_EQ(stored_many[i].step, many[i].step);
        EXPECT_EQ(stored_many[i].item, many[i].item);
        EXPECT_EQ(stored_many[i].record_offset, static_cast<int64_t>(many[i].record_offset));
        EXPECT_EQ(stored_many[i].bytes, static_cast<int64_t>(many[i].encoded_bytes));
    }
    auto third = import_run(catalog, run);
    ASSERT_TRUE(third);
    EXPECT_EQ(third->images_added, 0);
    EXPECT_FALSE(third->changed);
    // A damaged chunk (the catalog file is outside data too) is left out and counted, never read as images: bad
    // bytes, a count over 64, an item past int's range, bytes left over.
    const auto bytes = [](std::initializer_list<int> values) {
        std::string out;
        for (const int v : values)
            out.push_back(static_cast<char>(v));
        return out;
    };
    for (const std::string& garbage :
         {bytes({2, 1}), bytes({1, 0x41}),
          bytes({1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0xff, 0xff, 0xff, 0xff, 0x7f}), bytes({1, 0, 0})}) {
        Statement put = catalog.db().prepare("INSERT OR REPLACE INTO images(job, tag, chunk, count, data) "
                                             "VALUES(?, 'samples', 5, 1, ?)");
        put.bind(1, first->job).bind_blob_static(2, garbage.data(), garbage.size());
        put.step();
        int64_t damaged = 0;
        EXPECT_EQ(ImageStore::list(catalog.db(), first->job, "samples", &damaged).size(), 4u);
        EXPECT_EQ(damaged, 1);
    }
    // A damaged chunk where the source grows is written again whole from the source, not read: the import goes on.
    {
        const std::string garbage = "\x07garbage";
        Statement put = catalog.db().prepare("UPDATE images SET data=? WHERE job=? AND tag='samples' AND chunk=0");
        put.bind_blob_static(1, garbage.data(), garbage.size()).bind(2, first->job);
        put.step();
    }
    images.push_back(image(6, 0));
    auto repaired = import_run(catalog, run);
    ASSERT_TRUE(repaired) << repaired.error();
    EXPECT_EQ(repaired->images_added, 1);
    int64_t damaged = 0;
    const auto again = ImageStore::list(catalog.db(), first->job, "samples", &damaged);
    EXPECT_EQ(damaged, 1); // the made-up chunk 5 above is still there, and still counted
    ASSERT_EQ(again.size(), 5u);
    for (size_t i = 0; i < again.size(); ++i)
        EXPECT_EQ(again[i].step, images[i].step);
    // Deleting the run for good takes its images along.
    catalog.set_deleted(first->job, true);
    EXPECT_EQ(catalog.purge_deleted(), std::vector<int64_t>{first->job});
    EXPECT_EQ(count(catalog, "SELECT COUNT(*) FROM images"), 0);
    EXPECT_EQ(count(catalog, "SELECT COUNT(*) FROM image_files"), 0);
}

TEST(RunImport, ARewrittenSourceAddsNothingAndSaysSo) {
    TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    ImportedRun run;
    run.format = "csv";
    run.source = (temp.dir / "metrics.csv").string();
    run.name = "metrics";
    run.scalars["loss"] = {{1, 3.0, 0}, {2, 2.0, 0}, {3, NAN, 0}};
    auto first = import_run(catalog, run);
    ASSERT_TRUE(first) << first.error();
    EXPECT_EQ(first->points_added, 3);
    EXPECT_EQ(first->not_finite, 1);
    EXPECT_EQ(points_of(catalog, first->job, "loss").size(), 2u);
    run.scalars["loss"] = {{1, 3.0, 0}, {2, 2.5, 0}};
    auto second = import_run(catalog, run);
    ASSERT_TRUE(second);
    EXPECT_EQ(second->points_added, 0);
    ASSERT_EQ(second->notes.size(), 1u);
    EXPECT_NE(second->notes[0].find("rewritten"), std::string::npos);
    EXPECT_EQ(points_of(catalog, first->job, "loss")[1].value, 2.0);
}

TEST(RunImport, MlflowParamsTagsAndStatus) {
    REQUIRE_FIXTURES();
    TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    auto store = read_mlflow_store(kFixtures + "/mlflow/packt-hpt-mlruns/mlruns");
    ASSERT_TRUE(store) << store.error();
    for (const ImportedRun& run : store->runs)
        ASSERT_TRUE(import_run(catalog, run));
    for (const ImportedRun& run : store->runs) {
        auto again = import_run(catalog, run);
        ASSERT_TRUE(again);
        EXPECT_FALSE(again->changed);
    }
    const auto runs = catalog.runs(0, nullptr);
    ASSERT_EQ(runs.size(), 2u);
    const RunRecord& parent = runs[0].name == "PARENT_RUN" ? runs[0] : runs[1];
    EXPECT_EQ(parent.name, "PARENT_RUN");
    EXPECT_DOUBLE_EQ(parent.config.at("param1").number, 12);
    EXPECT_EQ(parent.config.at("tags.release.version").text, "2.2.0");
    EXPECT_EQ(parent.state, "succeeded");
    EXPECT_EQ(parent.summaries.at("foo").count, 3);
    EXPECT_NE(std::find(parent.tags.begin(), parent.tags.end(), "experiment:example1"), parent.tags.end());

    // The deleted run, imported on request, is marked; a RUNNING run is not left looking active.
    auto all = read_mlflow_store(kFixtures + "/mlflow/packt-hpt-mlruns/mlruns/0", {.include_deleted = true});
    ASSERT_TRUE(all);
    ASSERT_EQ(all->runs.size(), 1u);
    auto deleted = import_run(catalog, all->runs[0]);
    ASSERT_TRUE(deleted);
    const auto after = catalog.runs(0, nullptr);
    const RunRecord& record = after.back();
    EXPECT_EQ(record.state, "lost");
    EXPECT_NE(std::find(record.tags.begin(), record.tags.end(), "deleted-in-source"), record.tags.end());
    EXPECT_EQ(points_of(catalog, deleted->job, "foo").size(), 1u); // three points at step 0: the last one shows
    EXPECT_EQ(count(catalog, "SELECT points FROM import_series WHERE job=" + std::to_string(deleted->job)), 3);
}

TEST(RunImport, ARunDeletedInTheCatalogIsLeftAlone) {
    TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    ImportedRun run;
    run.format = "jsonl";
    run.source = (temp.dir / "log.jsonl").string();
    run.scalars["loss"] = {{1, 1.0, 0}};
    auto first = import_run(catalog, run);
    ASSERT_TRUE(first);
    catalog.set_deleted(first->job, true);
    run.scalars["loss"].push_back({2, 0.5, 0});
    auto second = import_run(catalog, run);
    ASSERT_TRUE(second);
    EXPECT_EQ(second->job, first->job);
    EXPECT_EQ(second->points_added, 0);
    ASSERT_EQ(second->notes.size(), 1u);
    EXPECT_NE(second->notes[0].find("deleted in the catalog"), std::string::npos);
    // Purged, it is imported afresh.
    catalog.purge_deleted();
    auto third = import_run(catalog, run);
    ASSERT_TRUE(third);
    EXPECT_TRUE(third->created);
    EXPECT_EQ(third->points_added, 2);
}

TEST(RunImport, ACatalogOfSchemaFiveMigratesAndTakesImports) {
    TempCatalog temp;
    {
        Catalog catalog;
        ASSERT_EQ(catalog.open(temp.path()), "");
        catalog.add_job("old", "local", "1", nlohmann::json::object());
        // Back to schema 5: before the import tables.
        catalog.db().exec("DROP TABLE import_sources; DROP TABLE import_series; DROP TABLE histogram_chunks; "
                          "DROP TABLE images; DROP TABLE image_files; PRAGMA user_version=5");
    }
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    EXPECT_EQ(catalog.schema_version(), Catalog::kSchemaVersion);
    ImportedRun run;
    run.format = "csv";
    run.source = (temp.dir / "m.csv").string();
    run.scalars["loss"] = {{1, 1.0, 0}};
    auto result = import_run(catalog, run);
    ASSERT_TRUE(result) << result.error();
    EXPECT_EQ(count(catalog, "SELECT COUNT(*) FROM jobs"), 2);
}

TEST(RunImport, ACatalogOfSchemaSixHasItsHistogramsPacked) {
    TempCatalog temp;
    HistogramPoint odd; // values a codec could lose: -0, NaN with a payload, infinities, a denormal
    odd.step = -3;
    odd.wall_time = 1700000000.25;
    odd.min = -0.0;
    odd.max = std::numeric_limits<double>::infinity();
    odd.num = std::numeric_limits<double>::denorm_min();
    const uint64_t payload = 0x7ff8000000012345ull;
    double nan = 0;
    std::memcpy(&nan, &payload, 8);
    odd.bucket_limit = {-1e300, -0.0, 1e-310, nan, std::numeric_limits<double>::max()};
    odd.bucket_count = {1, 0, -0.0, 2.5, 1e20};
    int64_t job = 0;
    {
        Catalog catalog;
        ASSERT_EQ(catalog.open(temp.path()), "");
        job = catalog.add_job("old", "import", "x", nlohmann::json::object());
        // Back to schema 6, its table of a histogram a row holding 70 of one series and one other.
        catalog.db().exec("DROP TABLE histogram_chunks; DROP TABLE images; DROP TABLE image_files; PRAGMA "
                          "user_version=6; CREATE TABLE "
                          "histograms(job INTEGER "
                          "NOT NULL, name TEXT NOT NULL, seq INTEGER NOT NULL, step INTEGER NOT NULL, time REAL NOT "
                          "NULL, min REAL, max REAL, num REAL, sum REAL, sum_squares REAL, limits BLOB NOT NULL, "
                          "counts BLOB NOT NULL, PRIMARY KEY(job, name, seq)) WITHOUT ROWID");
        Statement insert = catalog.db().prepare("INSERT INTO histograms VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
        for (int seq = 0; seq < 71; ++seq) {
            const HistogramPoint& h = odd;
            insert.reset();
            insert.bind(1, job).bind(2, seq < 70 ? "a" : "b").bind(3, int64_t(seq < 70 ? seq : 0));
            insert.bind(4, h.step + seq).bind(5, h.wall_time).bind(6, h.min).bind(7, h.max).bind(8, h.num);
            insert.bind(9, h.sum).bind(10, h.sum_squares);
            insert.bind_blob_static(11, h.bucket_limit.data(), h.bucket_limit.size() * 8);
            insert.bind_blob_static(12, h.bucket_count.data(), h.bucket_count.size() * 8);
            insert.step();
        }
    }
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    EXPECT_EQ(catalog.schema_version(), Catalog::kSchemaVersion);
    EXPECT_EQ(count(catalog, "SELECT COUNT(*) FROM sqlite_master WHERE name='histograms'"), 0);
    EXPECT_EQ(HistogramStore::count(catalog.db(), job, "a"), 70);
    const auto a = HistogramStore::read(catalog.db(), job, "a", INT64_MIN, INT64_MAX);
    ASSERT_EQ(a.size(), 70u);
    auto bits = [](const std::vector<double>& v) {
        std::vector<uint64_t> out(v.size());
        std::memcpy(out.data(), v.data(), v.size() * 8);
        return out;
    };
    for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].step, odd.step + static_cast<int64_t>(i));
        EXPECT_EQ(a[i].min, 0.0); // schema 6's REAL column kept no -0; the buckets' blobs did
        EXPECT_EQ(a[i].max, odd.max);
        EXPECT_EQ(a[i].num, odd.num);
        EXPECT_EQ(bits(a[i].limits), bits(odd.bucket_limit));
        EXPECT_EQ(bits(a[i].counts), bits(odd.bucket_count));
    }
    EXPECT_EQ(HistogramStore::read(catalog.db(), job, "b", INT64_MIN, INT64_MAX).size(), 1u);
}

TEST(RunImport, WandbConfigSummaryTagsAndExit) {
    REQUIRE_FIXTURES();
    TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    auto runs = read_wandb(kFixtures + "/wandb/leet-synthetic/wandb");
    ASSERT_TRUE(runs) << runs.error();
    for (const ImportedRun& run : *runs)
        ASSERT_TRUE(import_run(catalog, run));
    for (const ImportedRun& run : *runs) {
        auto again = import_run(catalog, run);
        ASSERT_TRUE(again);
        EXPECT_FALSE(again->changed) << run.source;
    }
    std::map<std::string, RunRecord> by_name;
    for (RunRecord& run : catalog.runs(0, nullptr))
        by_name[run.name] = run;
    ASSERT_EQ(by_name.size(), 5u);
    const RunRecord& tiny = by_name.at("single-tiny-run");
    EXPECT_EQ(tiny.state, "succeeded");
    EXPECT_DOUBLE_EQ(tiny.config.at("lr").number, 0.001);
    EXPECT_DOUBLE_EQ(tiny.config.at("summary.best_step").number, 49);
    EXPECT_EQ(tiny.summaries.at("train/loss").count, 50);
    EXPECT_DOUBLE_EQ(tiny.summaries.at("train/loss").last, 0.285);
    EXPECT_EQ(by_name.at("crashed-flame-4").state, "failed");
    EXPECT_EQ(by_name.at("edge-empty-run").state, "lost"); // no exit record: not left looking active
    const RunRecord& unicode = by_name.at("日本語ラン 🚀 家族👨‍👩‍👧‍👦");
    EXPECT_NE(std::find(unicode.tags.begin(), unicode.tags.end(), "café"), unicode.tags.end());
    // NaN and the infinities are counted, not stored.
    const RunRecord& edges = by_name.at("edge-nan-inf-run");
    EXPECT_LT(edges.summaries.at("edge/nan_inf").count, 20);
}

TEST(RunImport, ThroughTheCatalogWriterInsideItsTransaction) {
    TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    ImportedRun run;
    run.format = "csv";
    run.source = (temp.dir / "w.csv").string();
    run.scalars["loss"] = {{1, 1.0, 0}, {2, 0.5, 0}};
    int64_t job = 0, added = 0;
    {
        CatalogWriter writer(catalog);
        writer.post([&](Catalog& c) {
            auto result = import_run(c, run); // the writer's transaction: no BEGIN of its own
            ASSERT_TRUE(result) << result.error();
            job = result->job;
            added = result->points_added;
        });
        EXPECT_EQ(writer.flush(), "");
    }
    EXPECT_GT(job, 0);
    EXPECT_EQ(added, 2);
    EXPECT_EQ(points_of(catalog, job, "loss").size(), 2u);
}
