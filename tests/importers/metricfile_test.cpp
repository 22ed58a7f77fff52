// CSV/TSV and JSONL metric files: CatBoost's learn_error.tsv beside its event file (the same ten values both ways),
// files written here with an empty cell, a cell that is no number, a ragged row, nested JSON, a broken JSON line and
// TrainDeck's own protocol lines.
#include "importertest.h"
#include "metricfile.h"
#include "tfevents.h"

using namespace traindeck::importers;
using namespace traindeck::test;

TEST(MetricFile, CatBoostsTsvHoldsTheSameCurveAsItsEventFile) {
    REQUIRE_FIXTURES();
    auto tsv = read_metric_file(fixture("tfevents/catboost-learn/catboost_info/learn_error.tsv"));
    ASSERT_TRUE(tsv) << tsv.error();
    EXPECT_TRUE(tsv->damage.empty());
    EXPECT_EQ(tsv->format, "csv");
    auto events = read_tensorboard_logdir(fixture("tfevents/catboost-learn"));
    ASSERT_TRUE(events);
    const auto& from_tsv = series(*tsv, "MultiClass");
    const auto& from_events = series(events->front(), "MultiClass");
    ASSERT_EQ(from_tsv.size(), 10u);
    ASSERT_EQ(from_events.size(), 10u);
    for (size_t i = 0; i < 10; ++i) {
        EXPECT_EQ(from_tsv[i].step, static_cast<int64_t>(i)); // the "iter" column
        EXPECT_FLOAT_EQ(static_cast<float>(from_tsv[i].value), static_cast<float>(from_events[i].value));
    }
    EXPECT_DOUBLE_EQ(from_tsv[0].value, 1.210151409);
}

TEST(MetricFile, CsvColumnsAreMetricsAndBadCellsAreNamed) {
    TempDir dir;
    const std::string text = "step,time,loss,accuracy,note\n"
                             "1,1700000000,2.5,0.1,warmup\n"
                             "2,1700000001000,2.0,,\n" // time in ms; no accuracy
                             "3,1700000002,abc,0.3,\n" // loss is no number
                             "4,1700000003,1.5\n"      // ragged
                             "4,1700000004,1.25,0.4,\"a, b\"\n"
                             "5,1700000005,nan,0.5,"; // no final newline
    spill(dir.file("metrics.csv"), text);
    auto run = read_metric_file(dir.file("metrics.csv"));
    ASSERT_TRUE(run) << run.error();
    EXPECT_EQ(run->name, "metrics");
    EXPECT_EQ(run->scalars.count("note"), 0u); // a text column is no metric
    const auto& loss = series(*run, "loss");
    ASSERT_EQ(loss.size(), 4u);
    EXPECT_EQ(loss[0].step, 1);
    EXPECT_DOUBLE_EQ(loss[1].wall_time, 1700000001.0);
    EXPECT_EQ(loss[2].step, 4);
    EXPECT_DOUBLE_EQ(loss[2].value, 1.25);
    EXPECT_TRUE(std::isnan(loss[3].value));
    EXPECT_EQ(series(*run, "accuracy").size(), 4u);
    ASSERT_EQ(run->damage.size(), 2u);
    EXPECT_EQ(run->damage[0].offset, text.find("3,1700000002"));
    EXPECT_NE(run->damage[0].what.find("line 4"), std::string::npos) << run->damage[0].what;
    EXPECT_EQ(run->damage[1].offset, text.find("4,1700000003,1.5\n"));
    EXPECT_EQ(run->notes.size(), 2u); // "note" is a text column, and there is no final newline: both said
}

TEST(MetricFile, CsvWithoutAStepColumnNumbersItsRows) {
    const ImportedRun run = parse_metric_csv("loss\n3\n2\n1\n", "x.csv");
    const auto& loss = series(run, "loss");
    ASSERT_EQ(loss.size(), 3u);
    EXPECT_EQ(loss[2].step, 2);
    EXPECT_TRUE(parse_metric_csv("", "empty.csv").damage.empty());
}

TEST(MetricFile, JsonlKeysAreMetricsNestedOnesFlattenedAndBrokenLinesSkipped) {
    TempDir dir;
    const std::string text = "{\"step\": 1, \"loss\": 2.5, \"train\": {\"acc\": 0.1}, \"tag\": \"a\"}\n"
                             "{\"step\": 2, \"loss\": 2.0\n"
                             "[1, 2]\n"
                             "\n"
                             "{\"step\": 2, \"loss\": 1.5, \"time\": 1700000002.5}\n"
                             "@traindeck {\"type\":\"config\",\"config\":{\"lr\":0.1},\"v\":1,\"time\":1}\n"
                             "@traindeck {\"type\":\"metric\",\"step\":3,\"loss\":1.0,\"v\":1,\"time\":1700000003}\n"
                             "@traindeck {\"type\":\"status\",\"state\":\"running\"}\n"
                             "{\"step\": 4.5, \"loss\": 0.5}\n";
    spill(dir.file("log.jsonl"), text);
    auto run = read_metric_file(dir.file("log.jsonl"));
    ASSERT_TRUE(run) << run.error();
    EXPECT_EQ(run->format, "jsonl");
    const auto& loss = series(*run, "loss");
    ASSERT_EQ(loss.size(), 3u);
    EXPECT_EQ(loss[1].step, 2);
    EXPECT_DOUBLE_EQ(loss[1].wall_time, 1700000002.5);
    EXPECT_EQ(loss[2].step, 3);
    EXPECT_EQ(series(*run, "train/acc").size(), 1u);
    EXPECT_EQ(run->scalars.count("v"), 0u);
    EXPECT_EQ(run->scalars.count("step"), 0u);
    EXPECT_DOUBLE_EQ(run->config.at("lr").get<double>(), 0.1);
    EXPECT_EQ(run->other_records.at("record:status"), 1);
    ASSERT_EQ(run->damage.size(), 3u);
    EXPECT_EQ(run->damage[0].offset, text.find("{\"step\": 2, \"loss\": 2.0\n"));
    EXPECT_EQ(run->damage[1].offset, text.find("[1, 2]"));
    EXPECT_EQ(run->damage[2].offset, text.find("{\"step\": 4.5"));
}

TEST(MetricFile, UnknownExtensionsAreRefusedWithTheOnesThatWork) {
    TempDir dir;
    spill(dir.file("a.parquet"), "PAR1");
    auto run = read_metric_file(dir.file("a.parquet"));
    ASSERT_FALSE(run);
    EXPECT_NE(run.error().find(".jsonl"), std::string::npos);
}
