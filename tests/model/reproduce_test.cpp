// Runs' captures in the catalog (what each run was made of), the differences between two runs' environments, and
// the request that reruns a run exactly (model/reproduce.h).
#include "catalog.h"
#include "jobtablemodel.h"
#include "linediff.h"
#include "reproduce.h"
#include "tempcatalog.h"

#include <gtest/gtest.h>

#include <QJsonArray>
#include <QJsonDocument>

#include <map>
#include <tuple>
#include <vector>

using namespace traindeck;
using nlohmann::json;

namespace {

json event(int64_t seq, const std::string& type, json data) {
    return {{"seq", seq}, {"time", 100.0 + seq}, {"type", type}, {"data", data}};
}

json code_capture(const std::string& snapshot, const std::string& commit) {
    return {{"part", "code"},
            {"code",
             {{"kind", "git"},
              {"commit", commit},
              {"branch", "main"},
              {"dirty", true},
              {"snapshot", snapshot},
              {"cwd", "src"},
              {"diff", "+# tuned\n"},
              {"complete", true},
              {"left_out_count", 1},
              {"left_out", {{{"path", ".env"}, {"why", "never captured (matches \".env\")"}}}}}},
            {"command", {"/usr/bin/python3", "train.py"}},
            {"environment", {{"PATH", "/usr/bin"}, {"LR", "0.1"}, {"TRAINDECK_JOB_ID", "7"}}},
            {"traindeck", "0.1.0"}};
}

json environment_capture(const std::string& kernel, json packages) {
    return {{"part", "environment"},
            {"system",
             {{"os", "Debian GNU/Linux 12 (bookworm)"}, {"kernel", kernel}, {"cores", 2}, {"gpus", json::array()}}},
            {"python", {{"version", "3.11.2"}, {"executable", "/usr/bin/python3"}, {"packages", packages}}}};
}

QJsonObject qt(const json& value) { return QJsonDocument::fromJson(QByteArray::fromStdString(value.dump())).object(); }

} // namespace

TEST(Reproduce, TheCatalogKeepsEachRunsCaptureAndCheckpoints) {
    test::TempCatalog temp;
    int64_t job = 0;
    {
        Catalog catalog;
        ASSERT_EQ(catalog.open(temp.path()), "");
        job = catalog.add_job("train", "local", "7", {{"argv", {"python3", "train.py"}}, {"cwd", "/home/u/repo"}});
        // Two runs of one job (a resume after the code changed), a checkpoint each, and a re-delivery.
        const std::vector<json> events = {
            event(1, "capture", code_capture(std::string(64, 'a'), "c1")),
            event(2, "capture", environment_capture("Linux 6.1", {{"numpy", {{"version", "1.24.2"}}}})),
            event(3, "record", {{"type", "checkpoint"}, {"step", 100}, {"path", "ckpt-0000000100.tdck"}}),
            event(4, "capture", code_capture(std::string(64, 'b'), "c2")),
            event(5, "record", {{"type", "checkpoint"}, {"step", 200}, {"path", "ckpt-0000000200.tdck"}}),
            event(6, "capture", json{{"part", "something else"}}),
            event(7, "capture", code_capture(std::string(64, 'b'), "c2"))}; // the same again: no new row
        catalog.ingest(job, events);
        catalog.ingest(job, events); // the same events again: nothing twice
    }
    CatalogReader reader(QString::fromStdString(temp.path()));
    const CatalogReader::RunCapture capture = reader.capture(job);
    EXPECT_EQ(capture.code_captures, 2);
    EXPECT_EQ(capture.snapshots, (QStringList{QString(64, 'a'), QString(64, 'b')})) << "the code changed between runs";
    EXPECT_EQ(QJsonDocument::fromJson(capture.code).object()["code"].toObject()["commit"].toString(), "c2");
    EXPECT_EQ(QJsonDocument::fromJson(capture.environment).object()["system"].toObject()["kernel"].toString(),
              "Linux 6.1");
    const auto checkpoints = reader.checkpoints(job);
    ASSERT_EQ(checkpoints.size(), 2u);
    EXPECT_EQ(checkpoints[0].step, 100);
    EXPECT_EQ(checkpoints[1].path, "ckpt-0000000200.tdck");
    EXPECT_EQ(reader.error(), "");

    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    catalog.set_deleted(job, true);
    catalog.purge_deleted();
    EXPECT_EQ(CatalogReader(QString::fromStdString(temp.path())).capture(job).code_captures, 0);
}

TEST(Reproduce, TwoRunsEnvironmentsDifferInPackagesSystemAndCode) {
    const json packages_a = {
        {"numpy", {{"version", "1.24.2"}, {"debian", "python3-numpy"}, {"debian_version", "1:1.24.2-1"}}},
        {"torch", {{"version", "1.13.0"}}}};
    const json packages_b = {{"numpy", {{"version", "1.26.4"}}}, {"pandas", {{"version", "2.2.0"}}}};
    json code_b = code_capture(std::string(64, 'b'), "c2");
    code_b["environment"]["LR"] = "0.2";
    code_b["environment"]["TRAINDECK_JOB_ID"] = "8";
    const EnvironmentDiff diff =
        diff_captures(qt(code_capture(std::string(64, 'a'), "c1")), qt(environment_capture("Linux 6.1", packages_a)),
                      qt(code_b), qt(environment_capture("Linux 6.8", packages_b)));
    EXPECT_EQ(diff.packages_compared, 3);
    ASSERT_EQ(diff.packages.size(), 3);
    EXPECT_EQ(diff.packages[0].what, "numpy");
    EXPECT_EQ(diff.packages[0].before, "1.24.2 (Debian python3-numpy 1:1.24.2-1)");
    EXPECT_EQ(diff.packages[0].after, "1.26.4");
    EXPECT_EQ(diff.packages[1].what, "pandas");
    EXPECT_EQ(diff.packages[1].before, "") << "added";
    EXPECT_EQ(diff.packages[2].what, "torch");
    EXPECT_EQ(diff.packages[2].after, "") << "removed";
    ASSERT_EQ(diff.system.size(), 1);
    EXPECT_EQ(diff.system[0].what, "kernel");
    ASSERT_EQ(diff.code.size(), 2);
    EXPECT_EQ(diff.code[0].what, "commit");
    EXPECT_EQ(diff.code[1].what, "snapshot");
    ASSERT_EQ(diff.environment.size(), 1) << "the worker's own per-run variables are no difference";
    EXPECT_EQ(diff.environment[0].what, "LR");
    EXPECT_FALSE(diff.uncommitted_differs);

    const EnvironmentDiff same = diff_captures(qt(code_b), qt(environment_capture("Linux 6.8", packages_b)), qt(code_b),
                                               qt(environment_capture("Linux 6.8", packages_b)));
    EXPECT_TRUE(same.empty());
    EXPECT_EQ(same.packages_compared, 2) << "an empty difference of two runs that both listed packages";
}

TEST(Reproduce, AScriptRerunsInItsSnapshotAndSaysWhatIsNotInIt) {
    const json request = {{"name", "train"},
                          {"argv", {"python3", "train.py"}},
                          {"cwd", "/home/u/repo/src"},
                          {"dataset", std::string(64, 'd')},
                          {"resources", {{"cpus", 2}}},
                          {"console", {{"migrate", true}}}};
    const ReproducePlan plan = plan_reproduction(7, qt(request), qt(code_capture(std::string(64, 'a'), "c1")),
                                                 qt(environment_capture("Linux 6.1", json::object())), {});
    EXPECT_EQ(plan.refused, "");
    EXPECT_EQ(plan.code, QString(64, 'a'));
    EXPECT_FALSE(plan.request.contains("cwd"));
    EXPECT_EQ(plan.request["code"].toString(), QString(64, 'a'));
    EXPECT_EQ(plan.request["code_cwd"].toString(), "src");
    EXPECT_EQ(plan.request["dataset"].toString(), QString(64, 'd'));
    EXPECT_EQ(plan.request["resources"].toObject()["cpus"].toInt(), 2);
    EXPECT_EQ(plan.request["console"].toObject()["reproduces"].toInt(), 7);
    EXPECT_FALSE(plan.request["console"].toObject().contains("migrate"));
    EXPECT_EQ(plan.request["name"].toString(), "train (rerun of 7)");
    ASSERT_FALSE(plan.warnings.isEmpty());
    EXPECT_TRUE(plan.warnings.join("\n").contains("never captured, so not in the rerun's folder: .env"))
        << plan.warnings.join("\n").toStdString();

    EXPECT_NE(plan_reproduction(7, qt(request), {}, {}, {}).refused, "") << "no capture, no exact rerun";
    json unstored = code_capture("", "c1");
    unstored["code"]["problems"] = {"the snapshot could not be stored: No space left on device"};
    EXPECT_TRUE(plan_reproduction(7, qt(request), qt(unstored), {}, {}).refused.contains("No space left"));
}

TEST(Reproduce, ABuiltInRerunSaysBeforeItStartsWhenItCannotBeBitIdentical) {
    const json request = {{"builtin", {{"model", "mlp"}, {"seed", 3}}}, {"resources", {{"cpus", 2}}}};
    const json engine = {{"part", "environment"},
                         {"engine", {{"version", "0.1.0"}, {"blas", "OpenBLAS 0.3.21 Haswell"}}}};
    const ReproducePlan same = plan_reproduction(3, qt(request), qt(json{{"part", "code"}}), qt(engine),
                                                 qt(json{{"engine", engine["engine"]}}));
    EXPECT_EQ(same.refused, "");
    ASSERT_EQ(same.warnings.size(), 1) << same.warnings.join("\n").toStdString();
    EXPECT_TRUE(same.warnings[0].contains("named by the spec (fashion-mnist, the default)"))
        << "not a registered version";
    EXPECT_EQ(same.code, "") << "a built-in job's spec is its code";
    EXPECT_EQ(same.request["builtin"].toObject()["seed"].toInt(), 3);
    const ReproducePlan other =
        plan_reproduction(3, qt(request), qt(json{{"part", "code"}}), qt(engine),
                          qt(json{{"engine", {{"version", "0.1.0"}, {"blas", "OpenBLAS 0.3.21 SkylakeX"}}}}));
    ASSERT_EQ(other.warnings.size(), 2);
    EXPECT_TRUE(other.warnings[1].contains("another BLAS"));
    const ReproducePlan unknown = plan_reproduction(3, qt(request), qt(json{{"part", "code"}}), {}, {});
    EXPECT_TRUE(unknown.warnings.join("\n").contains("engine build is not known"))
        << unknown.warnings.join("\n").toStdString();
}

TEST(Reproduce, AUnifiedDiffIsWhatDiffUWrites) {
    EXPECT_EQ(unified_diff("a/x", "same\n", "b/x", "same\n"), "");
    EXPECT_EQ(unified_diff("a/x", "1\n2\n3\n", "b/x", "1\nB\n3\n").toStdString(),
              "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n 1\n-2\n+B\n 3\n");
    EXPECT_EQ(unified_diff("/dev/null", "", "b/new.py", "x = 1\n").toStdString(),
              "--- /dev/null\n+++ b/new.py\n@@ -0,0 +1,1 @@\n+x = 1\n");
    // Two changes far apart are two hunks, each with three lines of context.
    QByteArray a, b;
    for (int i = 1; i <= 20; ++i) {
        a += QByteArray::number(i) + '\n';
        b += (i == 2 ? QByteArray("two") : i == 18 ? QByteArray("eighteen") : QByteArray::number(i)) + '\n';
    }
    EXPECT_EQ(unified_diff("a/n", a, "b/n", b).toStdString(),
              "--- a/n\n+++ b/n\n"
              "@@ -1,5 +1,5 @@\n 1\n-2\n+two\n 3\n 4\n 5\n"
              "@@ -15,6 +15,6 @@\n 15\n 16\n 17\n-18\n+eighteen\n 19\n 20\n");
}

TEST(Reproduce, TwoSnapshotsDifferFileByFile) {
    const auto manifest = [](const std::vector<std::tuple<std::string, std::string, int64_t>>& files) {
        json list = json::array();
        for (const auto& [path, sha, size] : files)
            list.push_back({{"path", path}, {"size", size}, {"sha256", sha}, {"chunks", {sha}}});
        return QByteArray::fromStdString(json{{"format", 1}, {"files", list}}.dump());
    };
    const std::map<QString, QByteArray> chunks = {
        {"s1", "keep\n"}, {"t1", "lr = 0.1\n"},          {"t2", "lr = 0.2\n"},         {"g1", "gone\n"},
        {"n1", "new\n"},  {"b1", QByteArray("\0\1", 2)}, {"b2", QByteArray("\0\2", 2)}};
    int asked = 0;
    const QString diff = snapshot_diff(manifest({{"same.py", "s1", 5},
                                                 {"train.py", "t1", 9},
                                                 {"old.py", "g1", 5},
                                                 {"w.bin", "b1", 2},
                                                 {"big.bin", "x1", 1 << 20}}),
                                       manifest({{"same.py", "s1", 5},
                                                 {"train.py", "t2", 9},
                                                 {"new.py", "n1", 4},
                                                 {"w.bin", "b2", 2},
                                                 {"big.bin", "x2", 1 << 20}}),
                                       [&](const QString& sha, bool, QString*) {
                                           ++asked;
                                           return chunks.at(sha);
                                       });
    EXPECT_TRUE(diff.contains("--- a/train.py\n+++ b/train.py\n@@ -1,1 +1,1 @@\n-lr = 0.1\n+lr = 0.2\n"))
        << diff.toStdString();
    EXPECT_TRUE(diff.contains("--- a/old.py\n+++ /dev/null\n")) << diff.toStdString();
    EXPECT_TRUE(diff.contains("--- /dev/null\n+++ b/new.py\n")) << diff.toStdString();
    EXPECT_TRUE(diff.contains("Binary files a/w.bin and b/w.bin differ")) << diff.toStdString();
    EXPECT_TRUE(diff.contains("Files differ (1048576 bytes: too large to show here)")) << diff.toStdString();
    EXPECT_FALSE(diff.contains("same.py"));
    EXPECT_EQ(asked, 6) << "unchanged and too-large files are not fetched";
    EXPECT_TRUE(snapshot_diff(manifest({{"same.py", "s1", 5}}), manifest({{"same.py", "s1", 5}}), {}).isEmpty());
    EXPECT_TRUE(snapshot_diff("not json", manifest({}), {}).contains("could not be read"));
    const QString unreadable = snapshot_diff(manifest({{"a.py", "t1", 9}}), manifest({{"a.py", "t2", 9}}),
                                             [](const QString&, bool, QString* error) {
                                                 *error = "the worker is gone";
                                                 return QByteArray();
                                             });
    EXPECT_TRUE(unreadable.contains("(cannot read it: the worker is gone)")) << unreadable.toStdString();
}
