// SweepSync (ui/sweepsync.h) without a window or a worker: a trial's request is the base with its parameters applied
// as the worker's trials are; each trial job becomes one run of the catalog, once, however often the sweep is polled,
// tagged with its sweep and with its parameters as config; a trial that runs is watched again from the catalog's last
// event; what a worker answers that is no number (a job "../../x") makes no run. A temp catalog, a real JobSync and
// JobController, a fake backend that answers sweeps from what the test set.
#include "sweepsync.h"

#include "datasetsync.h"
#include "fakebackend.h"
#include "jobcontroller.h"
#include "jobsync.h"
#include "unittest.h"

#include <gtest/gtest.h>

#include <QJsonArray>
#include <QJsonDocument>
#include <QTemporaryDir>

#include <memory>

using namespace traindeck;
using namespace traindeck::test;

namespace {

QJsonObject small_spec() {
    const QJsonObject builtin{{"model", "mlp"},
                              {"data", QJsonObject{{"dataset", "fashion-mnist"}, {"limit", 6000}}},
                              {"epochs", 3},
                              {"optimizer", QJsonObject{{"type", "sgd"}, {"lr", 0.05}}}};
    return {{"name", "tune"},
            {"base", QJsonObject{{"builtin", builtin}, {"env", QJsonObject{{"KEEP", "1"}}}}},
            {"space", QJsonObject{{"optimizer.lr", QJsonObject{{"loguniform", QJsonArray{1e-4, 0.3}}}}}},
            {"early_stopping", QJsonObject{{"method", "asha"}, {"min_resource", 1}, {"max_resource", 9}}},
            {"max_trials", 4}};
}

// A backend with one sweep of the test's making; it records which jobs it was asked to watch, from where.
class SweepBackend : public FakeBackend {
public:
    QJsonObject detail;  // guarded by mutex
    QStringList watched; // "remote@after", GUI thread only
    std::atomic<int> detail_requests{0};

    QJsonObject sweeps(QString*) override {
        std::lock_guard lock(mutex);
        QJsonObject summary = detail;
        summary.remove("trials");
        summary.remove("spec");
        return {{"sweeps", QJsonArray{summary}}};
    }
    QJsonObject sweep(const QString& id, QString* error) override {
        ++detail_requests;
        std::lock_guard lock(mutex);
        if (id != QString::number(detail.value("id").toInteger())) {
            *error = QStringLiteral("no sweep %1").arg(id);
            return {};
        }
        return detail;
    }
    QJsonObject resources(QString*) override {
        return {{"prices", QJsonObject{{"base_per_hour", 0.5}, {"cpu_per_hour", 0.1}}}};
    }
    void watch(const QString& remote, qint64 after) override {
        watched << QStringLiteral("%1@%2").arg(remote).arg(after);
    }
    void setDetail(const QJsonObject& value) {
        std::lock_guard lock(mutex);
        detail = value;
    }
};

QJsonObject trial(int number, const QJsonValue& job, const QString& state, double lr) {
    return {
        {"trial", number}, {"job", job}, {"state", state}, {"params", QJsonObject{{"optimizer.lr", lr}}}, {"rung", 0}};
}

struct Console {
    QTemporaryDir dir;
    Catalog catalog;
    std::unique_ptr<CatalogWriter> writer;
    SweepBackend backend;
    std::unique_ptr<JobSync> sync;
    std::unique_ptr<DatasetSync> datasets;
    std::unique_ptr<JobController> controller;
    std::unique_ptr<SweepSync> sweeps;
    int polls = 0;

    Console() {
        EXPECT_EQ(catalog.open(dir.filePath("catalog.db").toStdString()), "");
        writer = std::make_unique<CatalogWriter>(catalog);
        sync = std::make_unique<JobSync>(catalog, *writer, backend, "local");
        datasets = std::make_unique<DatasetSync>(*writer, dir.filePath("catalog.db"));
        controller = std::make_unique<JobController>(*datasets, [](const QString&) { return QString(); });
        controller->add("local", *sync, backend);
        sweeps = std::make_unique<SweepSync>(*sync, *controller);
        QObject::connect(sweeps.get(), &SweepSync::sweepsChanged, [this] { ++polls; });
    }
    ~Console() {
        sweeps.reset();
        controller.reset();
        datasets.reset();
        sync.reset();
        writer->flush();
        writer.reset();
    }
    // One poll, answered and its imports committed.
    bool poll() {
        const int before = polls;
        sweeps->poll();
        const bool answered = process_until([&] { return polls > before; });
        writer->flush();
        QCoreApplication::processEvents(); // the writer's answer: the watches
        return answered;
    }
    std::vector<RunRecord> runs() {
        int64_t revision = 0;
        Catalog reader;
        EXPECT_EQ(reader.open(dir.filePath("catalog.db").toStdString(), true), "");
        return reader.runs(0, &revision);
    }
};

} // namespace

TEST(SweepTrialRequest, IsTheBaseWithTheParametersAppliedAsTheWorkersTrialsAre) {
    QString error;
    const QJsonObject request = sweep_trial_request(small_spec(), 5, {{"optimizer.lr", 0.01}}, 2, &error);
    ASSERT_EQ(error, QString());
    const QJsonObject builtin = request.value("builtin").toObject();
    EXPECT_EQ(builtin.value("optimizer").toObject().value("lr").toDouble(), 0.01);
    EXPECT_EQ(builtin.value("optimizer").toObject().value("type").toString(), "sgd");
    EXPECT_EQ(builtin.value("epochs").toInt(), 9); // ASHA counting epochs: as long as the last rung
    EXPECT_EQ(builtin.value("data").toObject().value("limit").toInt(), 6000);
    EXPECT_EQ(request.value("name").toString(), "tune #2");
    const QJsonObject env = request.value("env").toObject();
    EXPECT_EQ(env.value("KEEP").toString(), "1");
    EXPECT_EQ(QJsonDocument::fromJson(env.value("TRAINDECK_PARAMS").toString().toUtf8()).object(),
              QJsonObject({{"optimizer.lr", 0.01}}));
    EXPECT_EQ(env.value("TRAINDECK_SWEEP").toString(), "5");
    EXPECT_EQ(env.value("TRAINDECK_TRIAL").toString(), "2");

    // Trial 0 is the full run "promote best" submits: a normal job, no sweep in its env.
    const QJsonObject full = sweep_trial_request(small_spec(), 5, {{"optimizer.lr", 0.01}}, 0, &error);
    EXPECT_EQ(full.value("name").toString(), "tune best");
    EXPECT_FALSE(full.value("env").toObject().contains("TRAINDECK_SWEEP"));
    EXPECT_EQ(full.value("builtin").toObject().value("epochs").toInt(), 9);

    // A spec this console cannot read is said, not guessed at.
    QJsonObject broken = small_spec();
    broken["method"] = "annealing";
    EXPECT_TRUE(sweep_trial_request(broken, 5, {}, 1, &error).isEmpty());
    EXPECT_TRUE(error.contains("method")) << error.toStdString();
}

TEST(SweepSync, ImportsEachTrialOnceAsATaggedRunAndWatchesTheRunningOnes) {
    Console console;
    QJsonObject detail{{"id", 7},
                       {"name", "tune"},
                       {"state", "running"},
                       {"spec", small_spec()},
                       {"trials", QJsonArray{trial(1, 41, "paused", 0.001), trial(2, 42, "running", 0.02),
                                             // What no worker of ours says: a job that is no number, a trial 0.
                                             trial(3, "../../x", "running", 0.1), trial(0, 43, "running", 0.2)}}};
    console.backend.setDetail(detail);
    ASSERT_TRUE(console.poll());
    EXPECT_EQ(console.sweeps->detail(7).value("name").toString(), "tune");
    EXPECT_FALSE(console.sweeps->prices().isEmpty());
    std::vector<RunRecord> runs = console.runs();
    ASSERT_EQ(runs.size(), 2u);
    for (const RunRecord& run : runs) {
        EXPECT_EQ(run.backend, "local");
        EXPECT_EQ(run.tags, std::vector<std::string>{"sweep:7"});
        EXPECT_EQ(run.name, run.remote_id == "41" ? "tune #1" : "tune #2");
        EXPECT_DOUBLE_EQ(run.config.at("optimizer.lr").number, run.remote_id == "41" ? 0.001 : 0.02);
        EXPECT_EQ(run.config.at("epochs").number, 9);
    }
    EXPECT_EQ(console.backend.watched, QStringList({"41@0", "42@0"}));

    // Polled again (and again): no run twice; the running trial is watched again from the catalog's last event (the
    // backend ignores a watch of a job it watches), the paused one is not.
    console.backend.watched.clear();
    ASSERT_TRUE(console.poll());
    ASSERT_TRUE(console.poll());
    EXPECT_EQ(console.runs().size(), 2u);
    EXPECT_EQ(console.backend.watched, QStringList({"42@0", "42@0"}));

    // Promoted (paused -> running), trial 1 is watched again; a finished sweep's trials settle.
    QJsonArray trials = detail.value("trials").toArray();
    trials[0] = trial(1, 41, "running", 0.001);
    trials[1] = trial(2, 42, "completed", 0.02);
    detail["trials"] = trials;
    console.backend.setDetail(detail);
    console.backend.watched.clear();
    ASSERT_TRUE(console.poll());
    EXPECT_EQ(console.backend.watched, QStringList({"41@0"}));
    EXPECT_EQ(console.runs().size(), 2u);

    // A finished sweep whose answer no longer changes is not asked for its trials again.
    trials[0] = trial(1, 41, "completed", 0.001);
    detail["trials"] = trials;
    detail["state"] = "finished";
    console.backend.setDetail(detail);
    ASSERT_TRUE(console.poll());
    const int asked = console.backend.detail_requests.load();
    ASSERT_TRUE(console.poll());
    EXPECT_EQ(console.backend.detail_requests.load(), asked);
}

TEST(SweepSync, PromotingBestSubmitsTheBestTrialsParametersAsANormalJob) {
    Console console;
    QJsonObject detail{
        {"id", 3},
        {"name", "tune"},
        {"state", "finished"},
        {"spec", small_spec()},
        {"best", QJsonObject{{"trial", 2}, {"best", 0.85}, {"params", QJsonObject{{"optimizer.lr", 0.02}}}}},
        {"trials", QJsonArray{trial(1, 11, "pruned", 0.3), trial(2, 12, "completed", 0.02)}}};
    console.backend.setDetail(detail);
    // No detail yet: nothing to promote, and it says so.
    QStringList failures;
    QObject::connect(console.sweeps.get(), &SweepSync::failed, [&](const QString& message) { failures << message; });
    EXPECT_FALSE(console.sweeps->promoteBest(3));
    ASSERT_EQ(failures.size(), 1);
    EXPECT_TRUE(failures.front().contains("no trial with a result yet")) << failures.front().toStdString();
    ASSERT_TRUE(console.poll());
    EXPECT_TRUE(console.sweeps->promoteBest(3));
    ASSERT_TRUE(process_until([&] {
        std::lock_guard lock(console.backend.mutex);
        return !console.backend.submitted.isEmpty();
    }));
    std::lock_guard lock(console.backend.mutex);
    EXPECT_EQ(console.backend.submitted, QStringList({"tune best (#2)"}));
}
