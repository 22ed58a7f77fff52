// Runs out and back in (model/runexport, importers/metricexport, importers/readruns): a real run imported, exported
// as CSV, JSONL and TensorBoard event files, and each export read back gives every point of every curve with the
// same value; what read_runs detects in each fixture folder; a run's name never takes an export out of its folder.
#include "catalog.h"
#include "metricexport.h"
#include "metricfile.h"
#include "mlflow.h"
#include "readruns.h"
#include "requireall.h"
#include "runexport.h"
#include "runimport.h"
#include "seriesstore.h"
#include "tempcatalog.h"
#include "tfevents.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

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

// Each tag's points as the catalog keeps them: one value a step, the later one.
std::map<std::string, std::map<int64_t, double>> by_step(const ImportedRun& run) {
    std::map<std::string, std::map<int64_t, double>> out;
    for (const auto& [tag, points] : run.scalars)
        for (const ScalarPoint& point : points)
            if (std::isfinite(point.value))
                out[tag][point.step] = point.value;
    return out;
}

} // namespace

TEST(RunExport, ARealRunGoesOutAsCsvJsonlAndEventFilesAndComesBackPointForPoint) {
    REQUIRE_FIXTURES();
    TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    auto runs = read_tensorboard_logdir(kFixtures + "/tfevents/lightning-torch-hparams");
    ASSERT_TRUE(runs && runs->size() == 1) << (runs ? "" : runs.error());
    const ImportedRun& source = runs->front();
    auto imported = import_run(catalog, source);
    ASSERT_TRUE(imported) << imported.error();
    auto exported = run_from_catalog(catalog, imported->job);
    ASSERT_TRUE(exported) << exported.error();
    const auto expected = by_step(source);
    ASSERT_GE(expected.size(), 8u);
    EXPECT_EQ(by_step(*exported), expected);
    EXPECT_EQ(exported->name, source.name);
    EXPECT_EQ(exported->config.value("learning_rate", 0.0), 0.01);
    // Every point carries the wall time its record had.
    for (const auto& [tag, points] : exported->scalars)
        for (const ScalarPoint& point : points)
            EXPECT_GT(point.wall_time, 1.6e9) << tag << " step " << point.step;

    const std::string csv = (temp.dir / "run.csv").string(), jsonl = (temp.dir / "run.jsonl").string();
    ASSERT_TRUE(write_metric_file(csv, *exported, true));
    ASSERT_TRUE(write_metric_file(jsonl, *exported, false));
    auto from_csv = read_metric_file(csv);
    auto from_jsonl = read_metric_file(jsonl);
    ASSERT_TRUE(from_csv && from_jsonl);
    EXPECT_TRUE(from_csv->damage.empty());
    EXPECT_TRUE(from_jsonl->damage.empty());
    EXPECT_EQ(by_step(*from_csv), expected);
    EXPECT_EQ(by_step(*from_jsonl), expected);
    EXPECT_EQ(from_jsonl->config, exported->config); // JSONL keeps the config

    auto event_file = write_tensorboard_scalars((temp.dir / "tb" / "run").string(), *exported);
    ASSERT_TRUE(event_file) << event_file.error();
    auto from_events = read_tensorboard_logdir((temp.dir / "tb").string());
    ASSERT_TRUE(from_events && from_events->size() == 1);
    // Event files hold float32 values, as TensorBoard's own do (the source's were float32 too).
    EXPECT_EQ(by_step(from_events->front()), expected);

    // And the CSV imported as a run of its own holds the same curves.
    auto again = import_run(catalog, *from_csv);
    ASSERT_TRUE(again && again->created);
    auto copy = run_from_catalog(catalog, again->job);
    ASSERT_TRUE(copy);
    EXPECT_EQ(by_step(*copy), expected);
}

TEST(RunExport, TagsWithCommasAndQuotesSurviveTheCsv) {
    ImportedRun run;
    run.scalars["loss, train"] = {{1, 0.5, 100}, {2, 0.25, 101}};
    run.scalars["say \"hi\""] = {{2, 3.0, 0}};
    const std::string csv = encode_metric_csv(run);
    EXPECT_EQ(csv, "step,time,\"loss, train\",\"say \"\"hi\"\"\"\n1,100,0.5,\n2,101,0.25,3\n");
    const ImportedRun back = parse_metric_csv(csv, "run.csv");
    EXPECT_TRUE(back.damage.empty());
    EXPECT_EQ(by_step(back), by_step(run));
}

// Tags named as the formats' own columns: JSONL writes them renamed (they overwrote the line's step, time and type),
// CSV as they are (its reader takes the first step and time columns); both read back every point at its step.
TEST(RunExport, TagsNamedAsTheFormatsOwnColumnsKeepTheirPoints) {
    ImportedRun run;
    run.scalars["loss"] = {{1, 0.5, 100}, {2, 0.25, 101}};
    run.scalars["step"] = {{1, 7.0, 100}, {2, 8.0, 101}};
    run.scalars["step_"] = {{2, 9.0, 101}};
    run.scalars["time"] = {{1, 3.5, 100}};
    run.scalars["type"] = {{2, 1.0, 101}};
    run.scalars["v"] = {{1, 2.0, 100}};
    run.scalars["timestamp"] = {{3, 42.0, 0}}; // step 3 has no time: the line has no "time" to come first
    const auto renamed = jsonl_renamed_tags(run);
    EXPECT_EQ(renamed,
              (std::map<std::string, std::string>{
                  {"step", "step__"}, {"time", "time_"}, {"timestamp", "timestamp_"}, {"type", "type_"}, {"v", "v_"}}));
    auto expected = by_step(run);
    const ImportedRun csv = parse_metric_csv(encode_metric_csv(run), "run.csv");
    EXPECT_TRUE(csv.damage.empty());
    EXPECT_EQ(by_step(csv), expected);
    const ImportedRun jsonl = parse_metric_jsonl(encode_metric_jsonl(run), "run.jsonl");
    EXPECT_TRUE(jsonl.damage.empty());
    for (const auto& [tag, name] : renamed)
        expected[name] = expected.extract(tag).mapped();
    EXPECT_EQ(by_step(jsonl), expected);
}

TEST(ReadRuns, EachFixtureFolderIsReadByTheImporterItsContentNames) {
    REQUIRE_FIXTURES();
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"/tfevents", "tensorboard"},           {"/tfevents/lightning-torch-hparams", "tensorboard"},
        {"/mlflow/packt-hpt-mlruns", "mlflow"}, {"/mlflow/packt-hpt-mlruns/mlruns", "mlflow"},
        {"/wandb/leet-synthetic", "wandb"},
    };
    for (const auto& [path, format] : cases) {
        auto detected = detect_format(kFixtures + path);
        ASSERT_TRUE(detected) << path << ": " << detected.error();
        EXPECT_EQ(*detected, format) << path;
        auto read = read_runs(kFixtures + path);
        ASSERT_TRUE(read) << path << ": " << read.error();
        EXPECT_FALSE(read->runs.empty()) << path;
    }
    // The same MLflow store read by read_runs and by its own reader: the same runs, the deleted ones named.
    auto store = read_mlflow_store(kFixtures + "/mlflow/packt-hpt-mlruns/mlruns");
    auto read = read_runs(kFixtures + "/mlflow/packt-hpt-mlruns");
    ASSERT_TRUE(store && read);
    EXPECT_EQ(read->runs.size(), store->runs.size());
    EXPECT_EQ(read->notes, store->notes);
    auto with_deleted = read_runs(kFixtures + "/mlflow/packt-hpt-mlruns", {.format = "", .include_deleted = true});
    ASSERT_TRUE(with_deleted);
    EXPECT_GT(with_deleted->runs.size(), read->runs.size());
}

TEST(ReadRuns, AFolderOfMetricTablesIsARunAFileAndNothingImportableIsAClearError) {
    TempCatalog temp;
    std::ofstream(temp.dir / "a.csv") << "step,loss\n1,0.5\n2,0.4\n";
    std::ofstream(temp.dir / "b.jsonl") << "{\"step\": 1, \"acc\": 0.7}\n";
    std::ofstream(temp.dir / "notes.md") << "# not a run\n";
    auto read = read_runs(temp.dir.string());
    ASSERT_TRUE(read) << read.error();
    EXPECT_EQ(read->format, "metrics");
    ASSERT_EQ(read->runs.size(), 2u);
    EXPECT_EQ(read->runs[0].scalars.at("loss").size(), 2u);
    EXPECT_EQ(read->runs[1].scalars.at("acc").size(), 1u);

    const std::filesystem::path empty = temp.dir / "empty";
    std::filesystem::create_directories(empty / "sub");
    std::ofstream(empty / "sub" / "readme.md") << "nothing\n";
    auto nothing = read_runs(empty.string());
    ASSERT_FALSE(nothing);
    EXPECT_NE(nothing.error().find("holds nothing TrainDeck imports"), std::string::npos) << nothing.error();
    EXPECT_NE(nothing.error().find("tfevents"), std::string::npos) << nothing.error();
    auto missing = read_runs((temp.dir / "no-such").string());
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.error().find("no such file or folder"), std::string::npos);
    auto odd = read_runs((temp.dir / "notes.md").string());
    ASSERT_FALSE(odd);
    EXPECT_NE(odd.error().find("not a file TrainDeck imports"), std::string::npos);
    auto wrong = read_runs(temp.dir.string(), {.format = "neptune"});
    ASSERT_FALSE(wrong);
    EXPECT_NE(wrong.error().find("tensorboard, mlflow, wandb, csv or jsonl"), std::string::npos);
    // Asked for TensorBoard where there is none: the reader's own error, not a guess.
    auto none = read_runs(temp.dir.string(), {.format = "tensorboard"});
    ASSERT_FALSE(none);
    EXPECT_NE(none.error().find("no TensorBoard event file"), std::string::npos) << none.error();
}

TEST(ReadRuns, RunByRunGivesWhatReadRunsGivesAndStopsWhenAsked) {
    REQUIRE_FIXTURES();
    for (const std::string path : {"/tfevents", "/mlflow/packt-hpt-mlruns", "/wandb/leet-synthetic"}) {
        auto whole = read_runs(kFixtures + path);
        ASSERT_TRUE(whole) << path << ": " << whole.error();
        std::vector<ImportedRun> each;
        auto read = read_runs_each(kFixtures + path, {}, [&](ImportedRun&& run) {
            each.push_back(std::move(run));
            return true;
        });
        ASSERT_TRUE(read) << path << ": " << read.error();
        EXPECT_EQ(read->format, whole->format) << path;
        EXPECT_EQ(read->notes, whole->notes) << path;
        EXPECT_TRUE(read->runs.empty()) << path;
        ASSERT_EQ(each.size(), whole->runs.size()) << path;
        for (size_t i = 0; i < each.size(); ++i) {
            EXPECT_EQ(each[i].name, whole->runs[i].name) << path;
            EXPECT_EQ(each[i].scalar_points(), whole->runs[i].scalar_points()) << path;
            EXPECT_EQ(each[i].histograms.size(), whole->runs[i].histograms.size()) << path;
        }
        int taken = 0;
        ASSERT_TRUE(read_runs_each(kFixtures + path, {}, [&](ImportedRun&&) { return ++taken < 2; }));
        EXPECT_EQ(taken, 2) << path << ": on_run was called after it said stop";
    }
    auto wrong = read_runs_each(kFixtures + "/tfevents", {.format = "neptune"}, [](ImportedRun&&) { return true; });
    EXPECT_FALSE(wrong);
}

// A selection's files: named after each run, never outside the folder, never two alike.
TEST(RunExport, ASelectionsNamesStayInTheFolderAndNeverClash) {
    const std::vector<std::pair<int64_t, std::string>> runs = {
        {1, "mlp lr=0.1"}, {2, "../../etc/passwd"}, {3, ""},      {4, ".hidden"}, {5, "gré/x"}, {6, "twin"},
        {7, "twin"},       {8, "twin-6"},           {9, "a\\b:c"}};
    const std::vector<std::string> csv = export_paths("/out", runs, RunExportFormat::csv);
    EXPECT_EQ(csv, (std::vector<std::string>{"/out/mlp_lr_0.1.csv", "/out/run-2.._.._etc_passwd.csv", "/out/run-3.csv",
                                             "/out/run-4.hidden.csv", "/out/gré_x.csv", "/out/twin-6.csv",
                                             "/out/twin-7.csv", "/out/twin-6-8.csv", "/out/a_b_c.csv"}));
    for (const std::string& path : csv)
        EXPECT_EQ(std::filesystem::path(path).parent_path(), "/out") << path;
    EXPECT_EQ(export_paths("/out", {{1, "a"}}, RunExportFormat::tensorboard), std::vector<std::string>{"/out/a"});
    // Invalid UTF-8 and C1 controls become "_", a long name is cut at a character's start, and names that differ only
    // in letter case are told apart (a case-insensitive file system would take them for one).
    const std::string long_name = std::string(119, 'x') + "é";
    EXPECT_EQ(export_paths("/out",
                           {{1, "a\xff"
                                "\xc3"
                                "b\xc2\x85"
                                "c"},
                            {2, long_name},
                            {3, "Twin"},
                            {4, "twin"}},
                           RunExportFormat::jsonl),
              (std::vector<std::string>{"/out/a__b__c.jsonl", "/out/" + std::string(119, 'x') + ".jsonl",
                                        "/out/Twin-3.jsonl", "/out/twin-4.jsonl"}));
}

// What a selection's export would write over is found before anything is written.
TEST(RunExport, ASelectionsExportFindsWhatItWouldWriteOver) {
    const std::filesystem::path folder = std::filesystem::temp_directory_path() / "traindeck-existing-exports";
    std::filesystem::remove_all(folder);
    std::filesystem::create_directories(folder / "b");
    std::ofstream(folder / "a.csv") << "step\n";
    std::ofstream(folder / "b" / "events.out.tfevents.1.host") << "x";
    std::filesystem::create_directories(folder / "c");
    const std::vector<std::pair<int64_t, std::string>> runs = {{1, "a"}, {2, "b"}, {3, "c"}};
    EXPECT_EQ(existing_exports(export_paths(folder.string(), runs, RunExportFormat::csv), RunExportFormat::csv),
              std::vector<std::string>{(folder / "a.csv").string()});
    EXPECT_EQ(existing_exports(export_paths(folder.string(), runs, RunExportFormat::tensorboard),
                               RunExportFormat::tensorboard),
              std::vector<std::string>{(folder / "b").string()});
    std::filesystem::remove_all(folder);
    EXPECT_EQ(export_paths("/out", {{1, "a"}}, RunExportFormat::jsonl), std::vector<std::string>{"/out/a.jsonl"});
}
