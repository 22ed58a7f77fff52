// The MLflow file store: the fixture store as its PROVENANCE.txt describes it (experiments, a parent/child pair, a
// deleted run, .trash/ with five experiments and 16 runs, a stray .ipynb_checkpoints/), deleted things reported and
// imported only when asked, the metric line and meta.yaml parsers, and a damaged copy of a run.
#include "importertest.h"
#include "mlflow.h"

#include <algorithm>

using namespace traindeck::importers;
using namespace traindeck::test;

namespace {

const std::string kStore = "mlflow/packt-hpt-mlruns/mlruns";
const std::string kParent = "a3112407148b4966b929bc9f8784a3d3", kChild = "f7d034672fce496d891b6f054749ea99",
                  kDeleted = "bb55f3cea2cd4a61bfaa09714f19f792";

const ImportedRun* find(const MlflowStore& store, const std::string& id) {
    for (const auto& run : store.runs)
        if (run.source_id == id)
            return &run;
    return nullptr;
}

bool any_note(const MlflowStore& store, const std::string& words) {
    return std::any_of(store.notes.begin(), store.notes.end(),
                       [&](const std::string& note) { return note.find(words) != std::string::npos; });
}

} // namespace

TEST(Mlflow, TheFixtureStoreGivesTheLiveRunsAndReportsWhatIsDeleted) {
    REQUIRE_FIXTURES();
    auto store = read_mlflow_store(fixture(kStore));
    ASSERT_TRUE(store) << store.error();
    ASSERT_EQ(store->runs.size(), 2u);
    EXPECT_EQ(store->deleted_runs_skipped, 1);
    EXPECT_EQ(store->trashed_experiments, 5);
    EXPECT_EQ(store->trashed_runs, 16);
    EXPECT_TRUE(any_note(*store, kDeleted));
    EXPECT_TRUE(any_note(*store, "'test'"));
    EXPECT_TRUE(any_note(*store, ".ipynb_checkpoints"));

    const ImportedRun* parent = find(*store, kParent);
    ASSERT_NE(parent, nullptr);
    EXPECT_EQ(parent->name, "PARENT_RUN");
    EXPECT_EQ(parent->experiment, "example1");
    EXPECT_EQ(parent->format, "mlflow");
    EXPECT_TRUE(parent->damage.empty());
    EXPECT_EQ(parent->state, "succeeded"); // status 3, FINISHED
    EXPECT_DOUBLE_EQ(parent->started, 1656994881.395);
    EXPECT_DOUBLE_EQ(parent->finished, 1656994882.161);
    EXPECT_DOUBLE_EQ(parent->config.at("param1").get<double>(), 12);
    EXPECT_EQ(parent->tags.at("release.version"), "2.2.0"); // no trailing newline in the file, none added
    EXPECT_EQ(parent->tags.at("mlflow.user"), "louisowen6");
    const auto& foo = series(*parent, "foo");
    ASSERT_EQ(foo.size(), 3u);
    EXPECT_EQ(foo[0].step, 1);
    EXPECT_EQ(foo[2].step, 3);
    EXPECT_DOUBLE_EQ(foo[0].value, 0.5957562753945062);
    EXPECT_DOUBLE_EQ(foo[1].value, 1.373249995906063);
    EXPECT_DOUBLE_EQ(foo[2].value, 2.2922696453675444);
    EXPECT_DOUBLE_EQ(foo[0].wall_time, 1656994881.659);

    const ImportedRun* child = find(*store, kChild);
    ASSERT_NE(child, nullptr);
    EXPECT_EQ(child->name, "CHILD_RUN");
    EXPECT_EQ(child->tags.at("mlflow.parentRunId"), kParent);
    EXPECT_EQ(child->config.at("child"), "yes");
    EXPECT_TRUE(child->scalars.empty());
    EXPECT_EQ(find(*store, kDeleted), nullptr);
}

TEST(Mlflow, DeletedRunsAndTrashAreImportedOnlyWhenAskedAndMarked) {
    REQUIRE_FIXTURES();
    auto store = read_mlflow_store(fixture(kStore), {.include_deleted = true});
    ASSERT_TRUE(store) << store.error();
    EXPECT_EQ(store->runs.size(), 2u + 1u + 16u);
    EXPECT_EQ(store->deleted_runs_skipped, 0);
    const ImportedRun* deleted = find(*store, kDeleted);
    ASSERT_NE(deleted, nullptr);
    EXPECT_TRUE(deleted->deleted_in_source);
    EXPECT_EQ(deleted->experiment, "Default");
    EXPECT_EQ(deleted->state, "running"); // status 1 and no end time
    EXPECT_EQ(deleted->finished, 0.0);
    const auto& foo = series(*deleted, "foo");
    ASSERT_EQ(foo.size(), 3u);
    for (const auto& p : foo)
        EXPECT_EQ(p.step, 0); // all three at step 0, kept in order
    EXPECT_DOUBLE_EQ(foo[0].value, 0.6733636629420614);
    EXPECT_DOUBLE_EQ(foo[2].value, 2.9127091495519606);
    int trashed = 0;
    for (const auto& run : store->runs) {
        EXPECT_TRUE(run.damage.empty()) << run.source;
        if (run.source.find("/.trash/") != std::string::npos) {
            ++trashed;
            EXPECT_TRUE(run.deleted_in_source) << run.source;
        }
    }
    EXPECT_EQ(trashed, 16);
}

TEST(Mlflow, OneRunFolderOrOneExperimentFolderReadAlone) {
    REQUIRE_FIXTURES();
    auto run = read_mlflow_store(fixture(kStore + "/6/" + kParent));
    ASSERT_TRUE(run) << run.error();
    ASSERT_EQ(run->runs.size(), 1u);
    EXPECT_EQ(run->runs[0].experiment, "example1");
    auto experiment = read_mlflow_store(fixture(kStore + "/6"));
    ASSERT_TRUE(experiment) << experiment.error();
    EXPECT_EQ(experiment->runs.size(), 2u);
}

TEST(Mlflow, MetricLines) {
    ScalarPoint p;
    std::string why;
    ASSERT_TRUE(parse_mlflow_metric_line("1656994881659 0.5957562753945062 1", p, why));
    EXPECT_EQ(p.step, 1);
    EXPECT_DOUBLE_EQ(p.value, 0.5957562753945062);
    EXPECT_DOUBLE_EQ(p.wall_time, 1656994881.659);
    ASSERT_TRUE(parse_mlflow_metric_line("1656994881659 nan 2", p, why));
    EXPECT_TRUE(std::isnan(p.value));
    ASSERT_TRUE(parse_mlflow_metric_line("1656994881659 -inf 3", p, why));
    EXPECT_TRUE(std::isinf(p.value));
    ASSERT_TRUE(parse_mlflow_metric_line("1656994881659 4.5", p, why)); // before MLflow wrote steps
    EXPECT_EQ(p.step, 0);
    for (const char* bad : {"", "1656994881659", "x 1 2", "1 y 2", "1 2 z", "1 2 3 4", "1 2 3.5"})
        EXPECT_FALSE(parse_mlflow_metric_line(bad, p, why)) << bad;
}

TEST(Mlflow, MetaYamlSubset) {
    std::vector<std::string> problems;
    const auto meta = parse_simple_yaml("artifact_uri: file:///a%20b/c\nend_time: null\nname: ''\nexperiment_id: '6'\n"
                                        "note: \"say \\\"hi\\\"\"\ntags: []\nnested:\n  child: 1\n- item\n# comment\n"
                                        "plain: text # a comment\nbroken line\n",
                                        &problems);
    EXPECT_EQ(meta.at("artifact_uri"), "file:///a%20b/c");
    EXPECT_EQ(meta.at("end_time"), "");
    EXPECT_EQ(meta.at("name"), "");
    EXPECT_EQ(meta.at("experiment_id"), "6");
    EXPECT_EQ(meta.at("note"), "say \"hi\"");
    EXPECT_EQ(meta.at("tags"), "[]");
    EXPECT_EQ(meta.at("nested"), "");
    EXPECT_EQ(meta.at("plain"), "text");
    EXPECT_EQ(meta.count("child"), 0u);
    ASSERT_EQ(problems.size(), 1u);
    EXPECT_NE(problems[0].find("line 12"), std::string::npos);
}

TEST(Mlflow, ADamagedMetricFileKeepsItsGoodLinesAndNamesTheBadOnesByOffset) {
    REQUIRE_FIXTURES();
    TempDir dir;
    const std::string run_folder = dir.file("mlruns/6/" + kParent);
    copy_writable(fixture(kStore + "/6"), dir.file("mlruns/6"));
    const std::string metric = run_folder + "/metrics/foo";
    const std::string good = slurp(metric);
    spill(metric, good + "1656994881800 oops 4\n1656994881900 5.5 5\n1656994882000 6.");
    auto store = read_mlflow_store(dir.file("mlruns"));
    ASSERT_TRUE(store) << store.error();
    const ImportedRun* parent = find(*store, kParent);
    ASSERT_NE(parent, nullptr);
    const auto& foo = series(*parent, "foo");
    ASSERT_EQ(foo.size(), 4u);
    EXPECT_EQ(foo[3].step, 5);
    ASSERT_EQ(parent->damage.size(), 2u);
    EXPECT_EQ(parent->damage[0].file, metric);
    EXPECT_EQ(parent->damage[0].offset, good.size());
    EXPECT_NE(parent->damage[0].what.find("line 4"), std::string::npos) << parent->damage[0].what;
    EXPECT_NE(parent->damage[1].what.find("no newline"), std::string::npos) << parent->damage[1].what;
}

TEST(Mlflow, AStoreWrittenHereWithMlflow2NamesAndKeysWithSlashes) {
    TempDir dir;
    const std::string store = dir.file("mlruns");
    spill(store + "/12/meta.yaml",
          "artifact_location: file:///x\nexperiment_id: '12'\nlifecycle_stage: active\nname: sweep\n");
    const std::string run = store + "/12/0123abcd";
    spill(run + "/meta.yaml", "run_id: 0123abcd\nrun_name: bright-owl-7\nexperiment_id: '12'\nlifecycle_stage: active\n"
                              "status: 4\nstart_time: 1700000000000\nend_time: 1700000060500\n");
    spill(run + "/params/optimizer/lr", "0.01");
    spill(run + "/params/name", "resnet 50");
    spill(run + "/metrics/val/loss", "1700000001000 0.9 1\n1700000002000 0.8 2\n");
    spill(run + "/tags/note", "line one\nline two");
    spill(store + "/models/meta.yaml", "registered: true\n"); // not an experiment: no runs in it
    auto read = read_mlflow_store(store);
    ASSERT_TRUE(read) << read.error();
    ASSERT_EQ(read->runs.size(), 1u);
    const ImportedRun& r = read->runs[0];
    EXPECT_EQ(r.name, "bright-owl-7");
    EXPECT_EQ(r.experiment, "sweep");
    EXPECT_EQ(r.state, "failed");
    EXPECT_DOUBLE_EQ(r.finished - r.started, 60.5);
    EXPECT_DOUBLE_EQ(r.config.at("optimizer/lr").get<double>(), 0.01);
    EXPECT_EQ(r.config.at("name"), "resnet 50");
    EXPECT_EQ(series(r, "val/loss").size(), 2u);
    EXPECT_EQ(r.tags.at("note"), "line one\nline two");
}
