#include "jobtablemodel.h"
#include "money.h"
#include "tempcatalog.h"

#include <QCoreApplication>
#include <QImage>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

using namespace traindeck;
namespace fs = std::filesystem;

namespace {

nlohmann::json config_event(int64_t seq, nlohmann::json config) {
    return {{"seq", seq}, {"time", 1.0}, {"type", "record"}, {"data", {{"type", "config"}, {"config", config}}}};
}

nlohmann::json metric_event(int64_t seq, int64_t step, double loss) {
    return {{"seq", seq},
            {"time", 1.0},
            {"type", "record"},
            {"data", {{"type", "metric"}, {"step", step}, {"loss", loss}}}};
}

QStringList names(const JobTableModel& model) {
    QStringList out;
    for (int row = 0; row < model.rowCount(); ++row)
        out << model.data(model.index(row, JobTableModel::Name), Qt::DisplayRole).toString();
    return out;
}

} // namespace

TEST(JobTableModel, ShowsEveryRunNewestFirstAndPicksUpChangesOnly) {
    test::TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    catalog.db().exec("BEGIN");
    for (int i = 1; i <= 1000; ++i)
        catalog.add_job("job " + std::to_string(i), "local", std::to_string(i), nlohmann::json::object());
    catalog.db().exec("COMMIT");

    JobTableModel model(QString::fromStdString(temp.path()));
    model.refresh();
    ASSERT_EQ(model.rowCount(), 1000);
    EXPECT_EQ(model.totalJobs(), 1000);
    EXPECT_EQ(model.data(model.index(0, JobTableModel::Name), Qt::DisplayRole).toString(), "job 1000");

    const int64_t fresh = catalog.add_job("newest", "local", "x", nlohmann::json::object());
    catalog.db().exec(
        "UPDATE jobs SET state='running', progress=0.5, loss=0.25, started=1, changed=changed+1000000 WHERE id=" +
        std::to_string(fresh));
    model.refresh();
    EXPECT_EQ(model.rowCount(), 1001);
    EXPECT_EQ(model.data(model.index(0, JobTableModel::Name), Qt::DisplayRole).toString(), "newest");
    EXPECT_EQ(model.data(model.index(0, JobTableModel::State), Qt::DisplayRole).toString(), "running");
    EXPECT_EQ(model.data(model.index(0, JobTableModel::Progress), Qt::DisplayRole).toString(), "50.0 %");
    EXPECT_EQ(model.data(model.index(0, JobTableModel::Loss), Qt::DisplayRole).toString(), "0.2500");
    // Ended without a progress report (a script that gives no total): no figure rather than a false "0.0 %"; one
    // that ended part-way (early stopping, a cancel) keeps its figure.
    EXPECT_EQ(model.data(model.index(1, JobTableModel::Progress), Qt::DisplayRole).toString(), "0.0 %"); // queued
    catalog.db().exec("UPDATE jobs SET state='succeeded', progress=0, changed=changed+2000000 WHERE id=" +
                      std::to_string(fresh));
    model.refresh();
    EXPECT_EQ(model.data(model.index(0, JobTableModel::Progress), Qt::DisplayRole).toString(), "–");
    catalog.db().exec("UPDATE jobs SET state='cancelled', progress=0.4, changed=changed+3000000 WHERE id=" +
                      std::to_string(fresh));
    model.refresh();
    EXPECT_EQ(model.data(model.index(0, JobTableModel::Progress), Qt::DisplayRole).toString(), "40.0 %");
    EXPECT_EQ(model.data(model.index(0, 0), JobTableModel::JobIdRole).toLongLong(), fresh);

    // A row the catalog did not change is not re-read: edit one behind the revision's back and it stays stale.
    catalog.db().exec("UPDATE jobs SET name='renamed quietly' WHERE id=1");
    model.refresh();
    EXPECT_EQ(model.data(model.index(1000, JobTableModel::Name), Qt::DisplayRole).toString(), "job 1");
    catalog.set_note(1, "now it changed");
    model.refresh();
    EXPECT_EQ(model.data(model.index(1000, JobTableModel::Name), Qt::DisplayRole).toString(), "renamed quietly");
}

TEST(JobTableModel, EachStateHasAnIconOfItsOwnBesideItsName) {
    // Shapes drawn without a GUI application (these tests have none), one per state, all different.
    std::vector<QImage> icons;
    for (const char* state :
         {"queued", "running", "preempting", "stopping", "succeeded", "failed", "cancelled", "stopped", "lost"}) {
        const QImage icon = JobTableModel::state_icon(state);
        ASSERT_FALSE(icon.isNull()) << state;
        EXPECT_EQ(icon.size(), QSize(16, 16));
        for (const QImage& other : icons) {
            if (std::string(state) != "stopping") { // drawn as preempting: both on their way out
                EXPECT_NE(icon, other) << state;
            }
        }
        icons.push_back(icon);
    }
    EXPECT_EQ(JobTableModel::state_icon("running"), JobTableModel::state_icon("running")); // drawn once
    EXPECT_EQ(icons[2], JobTableModel::state_icon("stopping")); // preempting and stopping: on the way out alike

    test::TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    catalog.add_job("one", "local", "1", nlohmann::json::object());
    JobTableModel model(QString::fromStdString(temp.path()));
    model.refresh();
    ASSERT_EQ(model.rowCount(), 1);
    const QVariant decoration = model.data(model.index(0, JobTableModel::State), Qt::DecorationRole);
    EXPECT_EQ(decoration.value<QImage>(),
              JobTableModel::state_icon(
                  model.data(model.index(0, JobTableModel::State), Qt::DisplayRole).toString().toStdString()));
}

TEST(JobTableModel, QueriesConfigColumnsSortAndDifferingKeys) {
    test::TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    const double lrs[] = {0.1, 0.01, 0.001};
    int64_t seq = 0;
    for (int i = 0; i < 3; ++i) {
        const int64_t job =
            catalog.add_job("run " + std::to_string(i), "local", std::to_string(i), nlohmann::json::object());
        catalog.ingest(
            job,
            {config_event(++seq, {{"optimizer", {{"lr", lrs[i]}}}, {"model", i == 2 ? "cnn" : "mlp"}, {"epochs", 3}}),
             metric_event(++seq, 1, 1.0 + i), metric_event(++seq, 2, 0.5 + i)});
    }
    JobTableModel model(QString::fromStdString(temp.path()));
    model.refresh();
    ASSERT_EQ(names(model), (QStringList{"run 2", "run 1", "run 0"}));
    EXPECT_EQ(model.differingKeys(), (QStringList{"model", "optimizer.lr"})); // epochs is the same everywhere
    EXPECT_TRUE(model.availableColumns().contains("best.loss"));

    model.setExtraColumns({"optimizer.lr", "best.loss"});
    ASSERT_EQ(model.columnCount(), JobTableModel::ColumnCount + 2);
    EXPECT_EQ(model.headerData(JobTableModel::ColumnCount, Qt::Horizontal, Qt::DisplayRole).toString(), "optimizer.lr");
    EXPECT_EQ(model.data(model.index(0, JobTableModel::ColumnCount), Qt::DisplayRole).toString(), "0.001");
    EXPECT_EQ(model.data(model.index(0, JobTableModel::ColumnCount + 1), Qt::DisplayRole).toString(), "2.5");

    model.sort(JobTableModel::ColumnCount, Qt::AscendingOrder); // by lr, as numbers
    EXPECT_EQ(names(model), (QStringList{"run 2", "run 1", "run 0"}));
    model.sort(JobTableModel::ColumnCount + 1, Qt::AscendingOrder); // by best loss
    EXPECT_EQ(names(model), (QStringList{"run 0", "run 1", "run 2"}));

    ASSERT_TRUE(model.setQuery("optimizer.lr < 0.05 and model == mlp"));
    EXPECT_EQ(names(model), (QStringList{"run 1"}));
    // A bad query keeps the last good result and says where it went wrong.
    EXPECT_FALSE(model.setQuery("optimizer.lr <"));
    EXPECT_EQ(model.queryError().position, 14u);
    EXPECT_EQ(names(model), (QStringList{"run 1"}));
    ASSERT_TRUE(model.setQuery(""));
    EXPECT_EQ(model.rowCount(), 3);
}

TEST(JobTableModel, BuiltInRunsDoNotDifferInTheirNameAsAConfigKey) {
    test::TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    // As the New job… form submits them: the job's name is in the built-in spec (the trainer needs it); the
    // trainer's own config record names everything but the name.
    int64_t seq = 0;
    for (int seed = 1; seed <= 3; ++seed) {
        const nlohmann::json builtin = {
            {"name", "mlp seed " + std::to_string(seed)}, {"model", "mlp"}, {"seed", seed}, {"epochs", 2}};
        const int64_t job =
            catalog.add_job("mlp seed " + std::to_string(seed), "local", std::to_string(seed), {{"builtin", builtin}});
        if (seed < 3) // the third has not started: its config is still the submitted spec
            catalog.ingest(job, {config_event(++seq, {{"model", "mlp"}, {"seed", seed}, {"epochs", 2}})});
    }
    JobTableModel model(QString::fromStdString(temp.path()));
    model.refresh();
    ASSERT_EQ(model.rowCount(), 3);
    // Only the seed differs; the default grouping (every differing key but the seed) is then one group, not three.
    EXPECT_EQ(model.differingKeys(), QStringList{"seed"});
    EXPECT_FALSE(model.availableColumns().contains("name"));
    ASSERT_TRUE(model.setQuery("name ~ \"seed [12]\"")); // the name is still queried, as the run's own field
    EXPECT_EQ(model.rowCount(), 2);
}

TEST(JobTableModel, ArchivedRunsHideUnlessAskedForAndDeletedOnesGo) {
    test::TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    const int64_t a = catalog.add_job("kept", "local", "1", nlohmann::json::object());
    const int64_t b = catalog.add_job("archived", "local", "2", nlohmann::json::object());
    const int64_t c = catalog.add_job("deleted", "local", "3", nlohmann::json::object());
    JobTableModel model(QString::fromStdString(temp.path()));
    model.refresh();
    ASSERT_EQ(model.rowCount(), 3);
    QPersistentModelIndex kept(model.index(model.rowOf(a), 0));
    catalog.set_archived(b, true);
    catalog.set_deleted(c, true);
    model.refresh();
    EXPECT_EQ(names(model), (QStringList{"kept"}));
    EXPECT_EQ(model.totalJobs(), 2);
    ASSERT_TRUE(kept.isValid()); // the kept run's row moved; its index followed it
    EXPECT_EQ(kept.data(JobTableModel::JobIdRole).toLongLong(), a);
    ASSERT_TRUE(model.setQuery("archived:true"));
    EXPECT_EQ(names(model), (QStringList{"archived"}));
    catalog.set_deleted(c, false); // undo
    ASSERT_TRUE(model.setQuery(""));
    model.refresh();
    EXPECT_EQ(names(model), (QStringList{"deleted", "kept"}));
}

// The window's timer polls: the read of what changed runs on a pool thread (the GUI thread never waits on the catalog
// file, or on a catalog another process holds locked, up to SQLite's 5 s busy timeout). poll() returns with the read
// under way and the rows as they were; the new run arrives through the event loop. A second poll while one is under
// way starts no other read. A refresh() that reads past a poll's answer makes it stale: it is dropped.
TEST(JobTableModel, APollReadsOnAPoolThreadAndMergesWhenItsAnswerIsBack) {
    int argc = 1;
    char name[] = "model_tests";
    char* argv[] = {name, nullptr};
    QCoreApplication app(argc, argv);
    test::TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    catalog.add_job("first", "local", "1", nlohmann::json::object());
    JobTableModel model(QString::fromStdString(temp.path()));
    model.refresh();
    ASSERT_EQ(model.rowCount(), 1);
    int changes = 0;
    QObject::connect(&model, &JobTableModel::runsChanged, [&] { ++changes; });
    const auto wait_for_poll = [&] {
        for (const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
             model.polling() && std::chrono::steady_clock::now() < deadline;)
            QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents, 100);
        ASSERT_FALSE(model.polling());
    };

    catalog.add_job("second", "local", "2", nlohmann::json::object());
    model.poll();
    EXPECT_TRUE(model.polling());
    EXPECT_EQ(model.rowCount(), 1) << "read before poll() returned";
    model.poll(); // under way: no second read
    wait_for_poll();
    EXPECT_EQ(model.error(), "");
    EXPECT_EQ(model.rowCount(), 2);
    EXPECT_EQ(changes, 1);

    // A poll overtaken by a refresh: its answer holds nothing the model lacks, and is dropped.
    catalog.add_job("third", "local", "3", nlohmann::json::object());
    model.poll();
    model.refresh();
    EXPECT_EQ(model.rowCount(), 3);
    EXPECT_EQ(changes, 2);
    wait_for_poll();
    EXPECT_EQ(model.rowCount(), 3);
    EXPECT_EQ(changes, 2) << "the stale answer was merged again";
}

TEST(JobTableModel, SpendToReachIsWhatARunHadSpentWhenItsMetricFirstGotThere) {
    int argc = 1;
    char name[] = "model_tests";
    char* argv[] = {name, nullptr};
    QCoreApplication app(argc, argv); // the pool thread's answer comes back through the event loop
    test::TempCatalog temp;
    Catalog catalog;
    ASSERT_EQ(catalog.open(temp.path()), "");
    // Metric records one a second from t = 1001 (step s at 1000 + s); spend telemetry every 10 s at $0.001 a second;
    // the validation accuracy every 10 steps. "fast" reaches 0.9 at step 30 (t = 1030: $0.030); "slow" never does;
    // "unbilled" reaches it but its worker reported no spend.
    auto fill = [&](const std::string& name, const std::vector<double>& accuracy, bool billed) {
        const int64_t job = catalog.add_job(name, "local", name, nlohmann::json::object());
        std::vector<nlohmann::json> events;
        int64_t seq = 0;
        for (int step = 1; step <= 50; ++step) {
            const double time = 1000.0 + step;
            events.push_back({{"seq", ++seq},
                              {"time", time},
                              {"type", "record"},
                              {"data", {{"type", "metric"}, {"step", step}, {"loss", 1.0 / step}}}});
            if (step % 10 == 0)
                events.push_back(
                    {{"seq", ++seq},
                     {"time", time},
                     {"type", "record"},
                     {"data",
                      {{"type", "eval"}, {"split", "val"}, {"step", step}, {"accuracy", accuracy[step / 10 - 1]}}}});
            if (billed && step % 10 == 0)
                events.push_back(
                    {{"seq", ++seq}, {"time", time}, {"type", "telemetry"}, {"data", {{"spend", 0.001 * step}}}});
        }
        catalog.ingest(job, events);
        return job;
    };
    fill("fast", {0.6, 0.8, 0.92, 0.95, 0.97}, true);
    fill("slow", {0.5, 0.6, 0.7, 0.8, 0.85}, true);
    fill("unbilled", {0.6, 0.8, 0.92, 0.95, 0.97}, false);

    JobTableModel model(QString::fromStdString(temp.path()));
    model.refresh();
    ASSERT_EQ(model.rowCount(), 3);
    JobTableModel::SpendToReach parsed;
    ASSERT_TRUE(JobTableModel::parseSpendToReach("spend to reach val/accuracy >= 0.9", &parsed));
    EXPECT_EQ(parsed.series, "val/accuracy");
    EXPECT_EQ(parsed.threshold, 0.9);
    EXPECT_TRUE(parsed.above);
    EXPECT_FALSE(JobTableModel::parseSpendToReach("spend to reach val/accuracy >= high"));
    model.setExtraColumns({"spend to reach val/accuracy >= 0.9", "spend to reach loss <= 0.05"});
    // Read on a pool thread: "…" until the answer is back through the event loop.
    EXPECT_TRUE(model.spendToReachLoading());
    EXPECT_EQ(model.data(model.index(0, JobTableModel::ColumnCount), Qt::DisplayRole).toString(), "…");
    for (const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
         model.spendToReachLoading() && std::chrono::steady_clock::now() < deadline;)
        QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents, 100);
    ASSERT_FALSE(model.spendToReachLoading());
    const auto cell = [&](const char* name, int extra) {
        for (int row = 0; row < model.rowCount(); ++row)
            if (model.data(model.index(row, JobTableModel::Name), Qt::DisplayRole).toString() == name)
                return model.data(model.index(row, JobTableModel::ColumnCount + extra), Qt::DisplayRole).toString();
        return QStringLiteral("no such run");
    };
    EXPECT_EQ(model.headerData(JobTableModel::ColumnCount, Qt::Horizontal, Qt::DisplayRole).toString(),
              "Spend to val/accuracy ≥ 0.9");
    EXPECT_EQ(model.headerData(JobTableModel::ColumnCount, Qt::Horizontal, Qt::ToolTipRole).toString(),
              "spend to reach val/accuracy >= 0.9");
    EXPECT_EQ(cell("fast", 0), "$0.0300");
    EXPECT_EQ(cell("slow", 0), "–");
    EXPECT_EQ(cell("unbilled", 0), "–");
    EXPECT_EQ(cell("fast", 1), "$0.0200"); // loss 1/step reaches 0.05 at step 20
    model.sort(JobTableModel::ColumnCount, Qt::DescendingOrder);
    EXPECT_EQ(model.data(model.index(0, JobTableModel::Name), Qt::DisplayRole).toString(), "fast"); // missing last
}

// A whole run's curve divides the steps the run has among the buckets. It once divided every possible step (±2^61),
// which put a run of more points than twice the buckets into a single one: a long run drew as one point.
TEST(CatalogReader, AWholeRunsCurveSpreadsItsStepsOverTheBuckets) {
    test::TempCatalog temp;
    {
        Catalog catalog;
        ASSERT_EQ(catalog.open(temp.path()), "");
        const int64_t job = catalog.add_job("long", "local", "1", nlohmann::json::object());
        ASSERT_EQ(job, 1);
        std::vector<nlohmann::json> events;
        for (int64_t step = 1001; step <= 11'000; ++step)
            events.push_back(metric_event(step, step, static_cast<double>(step % 7)));
        catalog.ingest(job, events);
    }
    CatalogReader reader(QString::fromStdString(temp.path()));
    const CatalogReader::Curve curve = reader.curve(1, "loss", 500); // 10,000 steps: 20 a bucket
    EXPECT_EQ(curve.points, 10'000);
    ASSERT_EQ(curve.last.size(), 500);
    ASSERT_EQ(curve.first_step.size(), 500);
    ASSERT_EQ(curve.count.size(), 500);
    EXPECT_EQ(curve.first_step.front(), 1001);
    EXPECT_EQ(curve.last.back().x(), 11'000);
    qint64 next = 1001;
    for (qsizetype i = 0; i < curve.last.size(); ++i) {
        // Each bucket its 20 steps, in order, none twice or left out; min and max over them exactly.
        EXPECT_EQ(curve.first_step[i], next);
        EXPECT_EQ(curve.count[i], 20);
        EXPECT_EQ(curve.last[i].x(), static_cast<double>(next + 19));
        EXPECT_EQ(curve.min[i].y(), 0);
        EXPECT_EQ(curve.max[i].y(), 6);
        EXPECT_EQ(curve.last[i].y(), static_cast<double>((next + 19) % 7));
        next += 20;
    }
    EXPECT_TRUE(reader.curve(1, "no such curve", 500).last.isEmpty());
}

// What every run spent today, by its spend telemetry: a run that began yesterday counts from its last sample before
// midnight, one that began today all of it, one with no sample since then nothing.
TEST(CatalogReader, SpendSinceMidnightCountsEachRunsSpendFromThen) {
    test::TempCatalog temp;
    const double midnight = 1'700'000'000; // Unix seconds
    {
        Catalog catalog;
        ASSERT_EQ(catalog.open(temp.path()), "");
        auto run = [&](const char* name, const char* backend, double from, double to, double rate) {
            const int64_t job = catalog.add_job(name, backend, name, nlohmann::json::object());
            std::vector<nlohmann::json> events;
            int64_t seq = 0;
            // A sample every 10 s; more than one chunk's worth for the long run.
            for (double t = from; t <= to; t += 10)
                events.push_back(
                    {{"seq", ++seq}, {"time", t}, {"type", "telemetry"}, {"data", {{"spend", (t - from) * rate}}}});
            catalog.ingest(job, events);
        };
        run("overnight", "local", midnight - 20'000, midnight + 3'000, 0.001); // 3.00 since midnight (its sample at it)
        run("today", "gpu-box", midnight + 100, midnight + 1'100, 0.002);      // 2.00, on a worker of its own
        run("yesterday", "local", midnight - 9'000, midnight - 1'000, 0.5);    // none today
    }
    CatalogReader reader(QString::fromStdString(temp.path()));
    // Per backend: each charges in its own currency, never added together.
    const QHash<QString, double> today =
        reader.spendSince(QDateTime::fromSecsSinceEpoch(static_cast<qint64>(midnight)));
    ASSERT_EQ(today.size(), 2);
    EXPECT_NEAR(today.value("local"), 3.0, 1e-9);
    EXPECT_NEAR(today.value("gpu-box"), 2.0, 1e-9);
    const QHash<QString, double> later =
        reader.spendSince(QDateTime::fromSecsSinceEpoch(static_cast<qint64>(midnight + 2'000)));
    ASSERT_EQ(later.size(), 1) << "the run that ended before then counts nothing";
    EXPECT_NEAR(later.value("local"), 1.0, 1e-9);
    EXPECT_TRUE(reader.spendSince(QDateTime::fromSecsSinceEpoch(static_cast<qint64>(midnight + 10'000))).isEmpty());
    EXPECT_EQ(reader.error(), "");
}

TEST(Money, WrittenWithTheConsolesCurrency) {
    EXPECT_EQ(money(0.0123, 4), "$0.0123");
    EXPECT_EQ(money(-0.5, 2), "-$0.50");
    EXPECT_EQ(money(-0.001, 2), "$0.00"); // no "-$0.00"
    EXPECT_EQ(money(3, 2, "CHF"), "CHF 3.00");
    set_display_currency("EUR");
    EXPECT_EQ(money(1.2, 2), "€1.20");
    set_display_currency("eur"); // not a code: the default
    EXPECT_EQ(display_currency(), "USD");
    EXPECT_EQ(money(1.2, 2), "$1.20");
    // A backend that said what it charges in is written in that, whatever the console's currency.
    set_backend_currency("gpu-box", "GBP");
    EXPECT_EQ(backend_currency("gpu-box"), "GBP");
    EXPECT_EQ(backend_currency("local"), "USD");
    set_display_currency("JPY");
    EXPECT_EQ(money(2, 2, backend_currency("gpu-box")), "£2.00");
    EXPECT_EQ(backend_currency("local"), "JPY");
    set_backend_currency("gpu-box", ""); // it says none now: the console's again
    EXPECT_EQ(backend_currency("gpu-box"), "JPY");
    set_display_currency("USD");
    EXPECT_FALSE(is_currency_code("US"));
    EXPECT_TRUE(is_currency_code("JPY"));
}
