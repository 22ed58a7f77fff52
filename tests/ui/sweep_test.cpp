// A sweep from the console, against a real local worker started by the real plugin and real trials of the built-in
// trainer: made in the New sweep dialog, started through the Sweeps tab's SweepSync, its trials imported as runs
// (tagged sweep:ID, their learning rate a config column) whose curves stream in, its ASHA rungs filled, stopped and
// resumed, finished with a best-so-far curve, its best trial promoted to a normal job. Its own binary
// (sweep_console_tests), one CTest entry a scenario, as console_tests are.
//
// Rules it keeps, as console_test.cpp does: real parts only; waits on observable states (QTRY_*) with generous
// limits, never sleeps that hope a machine is fast enough; trials are paced by the trainer's holds and a release
// file; a missing dataset skips through TRAINDECK_REQUIRE (a failure under TRAINDECK_REQUIRE_ALL=1).
#include "backendref.h"
#include "catalog.h"
#include "jobsync.h"
#include "mainwindow.h"
#include "newsweepdialog.h"
#include "parallelcoordinates.h"
#include "pluginregistry.h"
#include "reaper.h"
#include "qtrequire.h"
#include "sweepsync.h"
#include "sweepview.h"
#include "unittest.h"

#include <QApplication>
#include <QChart>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLineSeries>
#include <QValueAxis>
#include <QLogValueAxis>
#include <QCheckBox>
#include <QProgressBar>
#include <QPushButton>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QSignalSpy>
#include <QTest>

#include <memory>

using namespace traindeck;

namespace {

const char* const kFashionMnist = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";

BackendFactory* local_factory() {
    static PluginRegistry registry;
    static const int found = registry.scan({TRAINDECK_PLUGIN_DIR});
    Q_UNUSED(found);
    return registry.factory("local");
}

// One console session on a local worker (as console_test.cpp's Console): catalog, writer, backend, sync, window,
// torn down in reverse order.
struct Console {
    Catalog catalog;
    std::unique_ptr<CatalogWriter> writer;
    Backend* backend = nullptr;
    std::unique_ptr<JobSync> sync;
    std::unique_ptr<MainWindow> window;

    bool open(const QString& catalog_path, const QString& worker_dir) {
        BackendFactory* factory = local_factory();
        if (!factory || !catalog.open(catalog_path.toStdString()).empty())
            return false;
        backend = factory->create(nullptr);
        QString error;
        if (!backend->open({{"state_dir", worker_dir}, {"worker_binary", TRAINDECK_WORKER_BINARY}}, &error)) {
            qWarning() << error;
            return false;
        }
        writer = std::make_unique<CatalogWriter>(catalog);
        sync = std::make_unique<JobSync>(catalog, *writer, *backend, "local");
        window = std::make_unique<MainWindow>(catalog_path, *sync, *backend);
        window->show();
        sync->resumeWatching();
        return true;
    }
    ~Console() {
        window.reset();
        sync.reset();
        if (backend) {
            BackendRef::retire(backend);
            delete backend;
        }
        writer.reset();
    }
};

// Stops the worker the plugin started (it outlives consoles on purpose), even when the test fails midway.
struct WorkerReaper {
    QString state_dir;
    ~WorkerReaper() { test::reap_state_dir(state_dir.toStdString()); }
};

// The trial of the sweep the view shows, by its number (an empty object until the view has it).
QJsonObject trial_of(SweepView& view, int number) {
    for (const auto& trial : view.currentDetail().value("trials").toArray())
        if (trial.toObject().value("trial").toInt() == number)
            return trial.toObject();
    return {};
}

QString sweep_state(SweepView& view) { return view.currentDetail().value("state").toString(); }

// The promoted trial (the one training towards rung 1), 0 while there is none.
int promoted_trial(SweepView& view) {
    for (const auto& trial : view.currentDetail().value("trials").toArray())
        if (trial.toObject().value("rung").toInt() == 1)
            return trial.toObject().value("trial").toInt();
    return 0;
}

const RunRecord* run_named(MainWindow& window, const QString& name) {
    for (int row = 0; row < window.jobs().rowCount(); ++row)
        if (const RunRecord* run = window.jobs().runAt(row); run && QString::fromStdString(run->name) == name)
            return run;
    return nullptr;
}

QString run_state(MainWindow& window, const QString& name) {
    const RunRecord* run = run_named(window, name);
    return run ? QString::fromStdString(run->state) : QString();
}

bool write_file(const QString& path) {
    QFile file(path);
    return file.open(QIODevice::WriteOnly) && file.write("go\n") == 3;
}

} // namespace

class SweepTest : public QObject {
    Q_OBJECT
private slots:
    void sweepFromDialogToPromotedRun();
};

void SweepTest::sweepFromDialogToPromotedRun() {
    TRAINDECK_REQUIRE(QFile::exists(kFashionMnist),
                      "dataset-fashion-mnist is not installed (bash installer/install-deps.sh)");
    QTemporaryDir temp;
    const QString catalog_path = temp.filePath("catalog.db");
    const QString worker_dir = temp.filePath("worker");
    const QString release = temp.filePath("release");
    WorkerReaper reaper{worker_dir};
    Console console;
    QVERIFY(console.open(catalog_path, worker_dir));
    MainWindow& window = *console.window;
    SweepView& view = window.sweeps();

    // Three learning rates on a grid, ASHA rungs at 1 and 3 epochs, one trial at a time. 6,000 images: 85 steps an
    // epoch at batch 64, the validation at step 85. Every trial holds after step 86 until released: the pause at
    // rung 0 is what ends the hold of each, and the promoted trial, back at step 86, waits there for the test, which
    // stops and resumes the sweep while it does.
    const QJsonObject builtin{{"model", "mlp"},
                              {"hidden", QJsonArray{64}},
                              {"data", QJsonObject{{"dataset", "fashion-mnist"}, {"limit", 6000}}},
                              {"batch_size", 64},
                              {"epochs", 3},
                              {"seed", 7},
                              {"checkpoint_every", 0},
                              {"optimizer", QJsonObject{{"type", "sgd"}, {"lr", 0.05}}}};
    const QJsonObject spec{
        {"name", "lr-grid"},
        {"base", QJsonObject{{"builtin", builtin},
                             {"resources", QJsonObject{{"cpus", 1}}},
                             {"env", QJsonObject{{"TRAINDECK_HOLD_AT", "86:" + release}}}}},
        {"space", QJsonObject{{"optimizer.lr", QJsonObject{{"choice", QJsonArray{0.002, 0.1, 0.02}}}}}},
        {"method", "grid"},
        {"objective", QJsonObject{{"metric", "val/accuracy"}, {"goal", "max"}}},
        {"early_stopping", QJsonObject{{"method", "asha"},
                                       {"resource", "epochs"},
                                       {"min_resource", 1},
                                       {"max_resource", 3},
                                       {"reduction_factor", 3}}},
        {"max_trials", 3},
        {"max_concurrent", 1}};
    {
        NewSweepDialog dialog(&window);
        dialog.setBackends(window.backendNames());
        dialog.load(spec);
        QCOMPARE(dialog.problem(), QString());
        QVERIFY(dialog.startButton()->isEnabled());
        QVERIFY2(dialog.preview().startsWith("3 trial(s) (a grid of 3) · at most 9 epochs (3 × 3)"),
                 qPrintable(dialog.preview()));
        // What the dialog makes keeps what it does not show: the hold, the data limit, the hidden layer.
        const QJsonObject made = dialog.spec();
        QCOMPARE(made.value("base").toObject().value("env").toObject().value("TRAINDECK_HOLD_AT").toString(),
                 "86:" + release);
        QCOMPARE(made.value("base").toObject().value("builtin").toObject().value("hidden").toArray(), QJsonArray{64});
        dialog.grab().save(QStringLiteral(TRAINDECK_SCREENSHOT_DIR "/new-sweep.png"));
        // On a backend that is not there: said on the Sweeps tab itself (and to the window's alerts).
        QSignalSpy problems(&view, &SweepView::problem);
        QCOMPARE(view.notice(), QString());
        view.create("no-such-backend", made);
        QCOMPARE(view.notice(), QString("Sweep not started: backend “no-such-backend” is not connected"));
        QCOMPARE(problems.count(), 1);
        view.create(dialog.backendName(), made);
    }
    QTRY_VERIFY_WITH_TIMEOUT(view.currentSweep() > 0, 20000);
    const qint64 sweep = view.currentSweep();
    const QString tag = QStringLiteral("sweep:%1").arg(sweep);

    // Each trial pauses at rung 0; the best of the three is promoted and holds at step 86 of its second life.
    QTRY_VERIFY_WITH_TIMEOUT(promoted_trial(view) > 0 &&
                                 trial_of(view, promoted_trial(view)).value("state").toString() == "running",
                             240000);
    const int promoted = promoted_trial(view);
    const QString promoted_name = QStringLiteral("lr-grid #%1").arg(promoted);
    // Every trial is a run of the runs table, tagged with its sweep, its learning rate a config value.
    const QJsonArray rates{0.002, 0.1, 0.02};
    for (int number = 1; number <= 3; ++number) {
        const QString name = QStringLiteral("lr-grid #%1").arg(number);
        QTRY_VERIFY_WITH_TIMEOUT(run_named(window, name) && run_named(window, name)->config.count("optimizer.lr"),
                                 30000);
        const RunRecord* run = run_named(window, name);
        QVERIFY2(std::find(run->tags.begin(), run->tags.end(), tag.toStdString()) != run->tags.end(),
                 run->name.c_str());
        QCOMPARE(run->config.at("optimizer.lr").number, rates[number - 1].toDouble());
        QCOMPARE(QString::number(trial_of(view, number).value("job").toInteger()),
                 QString::fromStdString(run->remote_id));
    }
    // The trials table shows each with its state; the two not promoted wait, paused at rung 0.
    QCOMPARE(view.trialsModel().rowCount(), 3);
    for (int number = 1; number <= 3; ++number) {
        const int row = view.trialsModel().rowOfTrial(number);
        QVERIFY(row >= 0);
        const QString state =
            view.trialsModel().data(view.trialsModel().index(row, SweepTableModel::State), Qt::DisplayRole).toString();
        QCOMPARE(state, number == promoted ? QString("running") : QString("paused"));
    }
    // The promoted trial's run streams again after its pause: its state follows into the runs table.
    QTRY_COMPARE_WITH_TIMEOUT(run_state(window, promoted_name), QString("running"), 30000);

    // Stop: the running trial is checkpointed and stopped; Resume continues it.
    QTRY_VERIFY_WITH_TIMEOUT(view.stopButton()->isEnabled(), 10000);
    QTest::mouseClick(view.stopButton(), Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(sweep_state(view), QString("stopped"), 30000);
    QTRY_COMPARE_WITH_TIMEOUT(trial_of(view, promoted).value("state").toString(), QString("stopped"), 60000);
    QTRY_COMPARE_WITH_TIMEOUT(run_state(window, promoted_name), QString("stopped"), 30000);
    QVERIFY(!view.stopButton()->isEnabled());
    QTRY_VERIFY_WITH_TIMEOUT(view.resumeButton()->isEnabled(), 10000);
    QTest::mouseClick(view.resumeButton(), Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(sweep_state(view), QString("running"), 30000);
    QTRY_COMPARE_WITH_TIMEOUT(trial_of(view, promoted).value("state").toString(), QString("running"), 30000);
    QTRY_COMPARE_WITH_TIMEOUT(run_state(window, promoted_name), QString("running"), 30000);

    // Released, the promoted trial trains its three epochs; the two others end pruned at rung 0.
    QVERIFY(write_file(release));
    QTRY_COMPARE_WITH_TIMEOUT(sweep_state(view), QString("finished"), 300000);
    for (int number = 1; number <= 3; ++number)
        QCOMPARE(trial_of(view, number).value("state").toString(),
                 number == promoted ? QString("completed") : QString("pruned"));
    QTRY_COMPARE_WITH_TIMEOUT(run_state(window, promoted_name), QString("succeeded"), 60000);
    QCOMPARE(view.rungTexts(),
             QStringList({"rung 0 (1 epoch): 3 of 3 trial(s)", "rung 1 (3 epochs): 1 of 3 trial(s)"}));
    QVERIFY2(view.spendBar().text().contains("no cap"), qPrintable(view.spendBar().text()));
    QCOMPARE(view.parallel().axisCount(), 2); // optimizer.lr, then the objective

    // The best-so-far curve: every validation the trials reported (one each at rung 0, two more for the promoted
    // trial), over time and over spend.
    QTRY_VERIFY_WITH_TIMEOUT(view.bestPointCount() >= 5, 30000);
    auto* best_line = qobject_cast<QLineSeries*>(view.bestChart()->series().value(1));
    QVERIFY(best_line);
    QVERIFY(best_line->count() >= 5);
    const double best = view.currentDetail().value("best").toObject().value("best").toDouble();
    QCOMPARE(best_line->at(best_line->count() - 1).y(), best);
    view.setBestAxis(SweepView::BestAxis::spend);
    QVERIFY(best_line->count() >= 5);
    view.setBestAxis(SweepView::BestAxis::time);
    // Its own log scale (the accuracies are positive), and back; the points stay what they were.
    QCheckBox* best_log = nullptr;
    for (QCheckBox* box : view.findChildren<QCheckBox*>())
        if (box->text() == "Log scale")
            best_log = box;
    QVERIFY(best_log && best_log->isEnabled());
    best_log->setChecked(true);
    auto* log_axis = qobject_cast<QLogValueAxis*>(view.bestChart()->axes(Qt::Vertical).value(0));
    QVERIFY(log_axis);
    QVERIFY(log_axis->min() > 0 && log_axis->min() <= best && log_axis->max() >= best);
    QCOMPARE(best_line->attachedAxes().contains(log_axis), true);
    QCOMPARE(best_line->at(best_line->count() - 1).y(), best);
    best_log->setChecked(false);
    QVERIFY(qobject_cast<QValueAxis*>(view.bestChart()->axes(Qt::Vertical).value(0)));

    window.tabs().setCurrentWidget(&view);
    window.resize(1500, 900);
    test::settle();
    window.grab().save(QStringLiteral(TRAINDECK_SCREENSHOT_DIR "/sweep-view.png"));

    // Promote best: a normal job with the best trial's parameters and no early stopping.
    const QJsonObject best_trial = view.currentDetail().value("best").toObject();
    const QString full_name = QStringLiteral("lr-grid best (#%1)").arg(best_trial.value("trial").toInt());
    QVERIFY(view.promoteButton()->isEnabled());
    QTest::mouseClick(view.promoteButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(run_named(window, full_name) != nullptr, 30000);
    const RunRecord* full = run_named(window, full_name);
    const qint64 full_id = full->id;
    const QString full_remote = QString::fromStdString(full->remote_id);
    const QJsonObject request = QJsonDocument::fromJson(CatalogReader(catalog_path).jobRequest(full_id)).object();
    QCOMPARE(request.value("builtin").toObject().value("optimizer").toObject().value("lr").toDouble(),
             best_trial.value("params").toObject().value("optimizer.lr").toDouble());
    QCOMPARE(request.value("builtin").toObject().value("epochs").toInt(), 3);
    QVERIFY(!request.value("env").toObject().contains("TRAINDECK_SWEEP"));
    QVERIFY(std::find(full->tags.begin(), full->tags.end(), tag.toStdString()) == full->tags.end());
    // It is no trial: the sweep still has its three.
    QCOMPARE(view.trialsModel().rowCount(), 3);
    // Its hold is the base's too: released already, it trains; cancelled here, it has shown it runs as any job.
    QTRY_VERIFY_WITH_TIMEOUT(run_state(window, full_name) == "running" || run_state(window, full_name) == "succeeded",
                             60000);
    console.sync->cancel(full_id, full_remote);
}

int main(int argc, char** argv) {
    if (!qEnvironmentVariableIsSet("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    SweepTest test;
    return QTest::qExec(&test, argc, argv);
}

#include "sweep_test.moc"
