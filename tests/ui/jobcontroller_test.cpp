// JobController (ui/jobcontroller.h) without a window: which backend a job is on, what it says when that backend is
// not connected, and the upload-then-submit flow — a job without a dataset goes straight to its backend, one with a
// version has the version uploaded there first, one with a version the catalog lacks goes nowhere. A temp catalog,
// real JobSyncs and DatasetSync, fake backends.
#include "jobcontroller.h"

#include "datasetsync.h"
#include "fakebackend.h"
#include "jobsync.h"
#include "unittest.h"

#include <gtest/gtest.h>

#include <QJsonArray>
#include <QTemporaryDir>

#include <memory>

using namespace traindeck;
using namespace traindeck::test;

namespace {

// Two connected fake backends, "local" and "box", and the controller over them.
struct Console {
    QTemporaryDir dir;
    Catalog catalog;
    std::unique_ptr<CatalogWriter> writer;
    FakeBackend local, box;
    std::unique_ptr<JobSync> local_sync, box_sync;
    std::unique_ptr<DatasetSync> datasets;
    std::unique_ptr<JobController> controller;
    QStringList problems;
    QMap<QString, QString> roots; // version → folder, as the datasets table would answer

    Console() {
        EXPECT_EQ(catalog.open(dir.filePath("catalog.db").toStdString()), "");
        writer = std::make_unique<CatalogWriter>(catalog);
        local_sync = std::make_unique<JobSync>(catalog, *writer, local, "local");
        box_sync = std::make_unique<JobSync>(catalog, *writer, box, "box");
        datasets = std::make_unique<DatasetSync>(*writer, dir.filePath("catalog.db"));
        controller =
            std::make_unique<JobController>(*datasets, [this](const QString& version) { return roots.value(version); });
        QObject::connect(controller.get(), &JobController::problem,
                         [this](const QString& message) { problems << message; });
        controller->add("local", *local_sync, local);
        controller->add("box", *box_sync, box);
    }
    ~Console() {
        controller.reset();
        datasets.reset();
        box_sync.reset();
        local_sync.reset();
        writer->flush();
        writer.reset();
    }
    static QStringList of(FakeBackend& backend, QStringList FakeBackend::*list) {
        std::lock_guard lock(backend.mutex);
        return backend.*list;
    }
};

} // namespace

TEST(JobController, ResolvesAJobToTheBackendItRunsOn) {
    Console console;
    EXPECT_EQ(console.controller->names(), QStringList({"local", "box"}));
    const auto box = console.controller->backendOf({7, "box", "remote-3"});
    ASSERT_TRUE(box.has_value());
    EXPECT_EQ(box->name, "box");
    EXPECT_EQ(box->backend, &console.box);
    EXPECT_EQ(box->sync, console.box_sync.get());
    EXPECT_FALSE(console.controller->find("gone").has_value());
}

TEST(JobController, CancelAndResumeGoToTheJobsBackend) {
    Console console;
    EXPECT_TRUE(console.controller->cancel({7, "box", "remote-3"}));
    EXPECT_TRUE(console.controller->resume({8, "local", "remote-9"}));
    ASSERT_TRUE(process_until([&] {
        return Console::of(console.box, &FakeBackend::cancelled) == QStringList{"remote-3"} &&
               Console::of(console.local, &FakeBackend::resumed) == QStringList{"remote-9"};
    }));
    EXPECT_TRUE(Console::of(console.local, &FakeBackend::cancelled).isEmpty());
    EXPECT_TRUE(console.problems.isEmpty());
}

TEST(JobController, AJobWhoseBackendIsNotConnectedIsSaidSo) {
    Console console;
    EXPECT_FALSE(console.controller->cancel({7, "gone", "remote-3"}));
    EXPECT_FALSE(console.controller->resume({7, "gone", "remote-3"}));
    EXPECT_EQ(console.problems,
              QStringList({"The job's backend is not connected", "The job's backend is not connected"}));
    console.controller->submit("gone", "job", QJsonObject{{"argv", QJsonArray{"true"}}});
    EXPECT_EQ(console.problems.last(), "Not submitted: backend “gone” is not connected");
}

TEST(JobController, AJobWithoutADatasetIsSubmittedToTheChosenBackend) {
    Console console;
    console.controller->submit("box", "plain", QJsonObject{{"name", "plain"}, {"argv", QJsonArray{"true"}}});
    ASSERT_TRUE(process_until([&] { return !Console::of(console.box, &FakeBackend::submitted).isEmpty(); }));
    EXPECT_EQ(Console::of(console.box, &FakeBackend::submitted), QStringList{"plain"});
    EXPECT_TRUE(Console::of(console.box, &FakeBackend::uploaded).isEmpty());
    EXPECT_TRUE(Console::of(console.local, &FakeBackend::submitted).isEmpty());
    EXPECT_TRUE(console.problems.isEmpty());
}

TEST(JobController, AVersionTheCatalogLacksStopsTheJob) {
    Console console;
    console.controller->submit("box", "with data", QJsonObject{{"name", "with data"}, {"dataset", "0123456789abcdef"}});
    EXPECT_EQ(console.problems, QStringList{"Not submitted: dataset version 0123456789ab is not in the catalog"});
    QCoreApplication::processEvents();
    EXPECT_TRUE(Console::of(console.box, &FakeBackend::submitted).isEmpty());
}

TEST(JobController, AnUploadThatFailsStopsTheJobWithItsReason) {
    // The version's folder is known, but its manifest is not in the catalog: DatasetSync refuses the upload, and the
    // job is not submitted.
    Console console;
    console.roots["feedface"] = console.dir.filePath("data");
    console.controller->submit("box", "with data", QJsonObject{{"name", "with data"}, {"dataset", "feedface"}});
    ASSERT_TRUE(process_until([&] { return !console.problems.isEmpty(); }));
    EXPECT_TRUE(console.problems.first().startsWith("Not submitted: ")) << console.problems.first().toStdString();
    EXPECT_TRUE(Console::of(console.box, &FakeBackend::submitted).isEmpty());
    EXPECT_TRUE(Console::of(console.box, &FakeBackend::uploaded).isEmpty());
}
