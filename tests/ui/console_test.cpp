// The real console window, offscreen, against a real local worker started by the real plugin: submit jobs,
// watch curves grow, cancel one, close the console while a job runs and open it again — the curve continues
// with every step, none missing, none twice.
#include "catalog.h"
#include "exportdialog.h"
#include "jobsync.h"
#include "mainwindow.h"
#include "newjobdialog.h"
#include "tokenstore.h"

#include <QDir>
#include <QFileInfo>
#include <QElapsedTimer>
#include <QTimer>
#include <QJsonDocument>
#include <QProcess>
#include <QJsonArray>
#include <QJsonObject>
#include <QPluginLoader>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableView>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>

#include <csignal>

#include <unistd.h>
#include <cstdlib>

using namespace traindeck;

namespace {

BackendFactory* local_factory() {
    QPluginLoader loader(QStringLiteral(TRAINDECK_PLUGIN_DIR "/libtraindeck_backend_local.so"));
    return qobject_cast<BackendFactory*>(loader.instance());
}

QJsonObject small_job(const QString& name, int limit, int epochs) {
    // A small CNN: slow enough (tens of seconds on one core) to be closed and reopened while it runs.
    QJsonObject spec{{"model", "cnn"}, {"conv", QJsonArray{16, 32}},
                     {"data", QJsonObject{{"dataset", "fashion-mnist"}, {"limit", limit}}},
                     {"batch_size", 64}, {"epochs", epochs}, {"seed", 3}, {"checkpoint_every", 10}};
    return {{"name", name}, {"builtin", spec}, {"resources", QJsonObject{{"cpus", 1}}}};
}

// One console session: catalog + writer + plugin backend + sync + window, torn down in reverse order.
struct Console {
    Catalog catalog;
    std::unique_ptr<CatalogWriter> writer;
    Backend* backend = nullptr;
    std::unique_ptr<JobSync> sync;
    std::unique_ptr<MainWindow> window;

    bool open(const QString& catalog_path, const QString& worker_dir) {
        if (!catalog.open(catalog_path.toStdString()).empty())
            return false;
        writer = std::make_unique<CatalogWriter>(catalog);
        BackendFactory* factory = local_factory();
        if (!factory)
            return false;
        backend = factory->create(nullptr);
        QString error;
        if (!backend->open({{"state_dir", worker_dir}, {"worker_binary", TRAINDECK_WORKER_BINARY}}, &error)) {
            qWarning() << error;
            return false;
        }
        sync = std::make_unique<JobSync>(catalog, *writer, *backend, "local");
        window = std::make_unique<MainWindow>(catalog_path, *sync, *backend);
        window->show();
        sync->resumeWatching();
        return true;
    }
    ~Console() {
        window.reset();
        sync.reset();
        delete backend;
        writer.reset();
    }
};

// Stops the worker a test's plugin started (it outlives consoles on purpose), even when the test fails midway.
struct WorkerReaper {
    QString state_dir;
    ~WorkerReaper() {
        std::system(("pkill -TERM -f -- '--state-dir " + state_dir.toStdString() + "'").c_str());
        // Jobs outlive their worker too: end the ones this test left (their shims and trainers name the folder).
        std::system(("pkill -KILL -f -- '" + state_dir.toStdString() + "/jobs'").c_str());
    }
};

// A traindeck-worker serving HTTPS with a fresh self-signed certificate, as a remote GPU box would.
struct TlsWorker {
    QProcess process;
    QString url, token;
    bool start(const QString& dir) {
        if (QProcess::execute("openssl", {"req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=gpu-box",
                                          "-keyout", dir + "/key.pem", "-out", dir + "/cert.pem"}) != 0)
            return false;
        process.start(TRAINDECK_WORKER_BINARY, {"--listen", "127.0.0.1:0", "--state-dir", dir + "/remote", "--tls-cert",
                                                dir + "/cert.pem", "--tls-key", dir + "/key.pem"});
        if (!process.waitForStarted())
            return false;
        for (int i = 0; i < 200 && !QFile::exists(dir + "/remote/port"); ++i)
            QTest::qWait(50);
        QFile port_file(dir + "/remote/port"), token_file(dir + "/remote/token");
        if (!port_file.open(QIODevice::ReadOnly) || !token_file.open(QIODevice::ReadOnly))
            return false;
        url = "https://127.0.0.1:" + QString::fromUtf8(port_file.readAll()).trimmed();
        token = QString::fromUtf8(token_file.readAll()).trimmed();
        return true;
    }
    ~TlsWorker() {
        process.terminate();
        process.waitForFinished(10000);
    }
};

// The TLS worker, connected through the remote-worker plugin and added to the console's window as "gpu-box".
struct GpuBox {
    std::unique_ptr<Backend> backend;
    std::unique_ptr<JobSync> sync; // after backend: destroyed first
    QString connect(Console& console, const TlsWorker& remote) {
        QPluginLoader loader(QStringLiteral(TRAINDECK_PLUGIN_DIR "/libtraindeck_backend_worker.so"));
        auto* factory = qobject_cast<BackendFactory*>(loader.instance());
        if (!factory)
            return "the remote-worker plugin did not load: " + loader.errorString();
        backend.reset(factory->create(nullptr));
        QString error;
        if (!backend->open({{"url", remote.url}, {"token", remote.token}}, &error))
            return error;
        sync = std::make_unique<JobSync>(console.catalog, *console.writer, *backend, "gpu-box");
        console.window->addBackend("gpu-box", *sync, *backend);
        return {};
    }
};

QString state_of(MainWindow& window, int row) {
    return window.jobs().data(window.jobs().index(row, JobTableModel::State), Qt::DisplayRole).toString();
}

int row_of(MainWindow& window, const QString& name) {
    for (int row = 0; row < window.jobs().rowCount(); ++row)
        if (window.jobs().data(window.jobs().index(row, JobTableModel::Name), Qt::DisplayRole).toString() == name)
            return row;
    return -1;
}

} // namespace

class ConsoleTest : public QObject {
    Q_OBJECT
private slots:
    void jobsRunOnTheBackendChosenInTheDialog();
    void windowStaysResponsiveWhileTwentyJobsStream();
    void newJobDialogSplitsCommandsAndRoundTrips();
    void gpuTelemetryIsChartedBesideTheCpu();
    void tokensGoToTheKeyringOrNowhere();
    void remoteWorkerPinsItsKeyOnFirstUse();
    void submitWatchCancelAndRestart();
    void datasetsRegisterPreviewUploadTrainAndExport();
    void lostWorkerJobFinishesOnAnotherWorker();
    void slurmJobsFromThePluginToTheFinishedCurve();
};

void ConsoleTest::newJobDialogSplitsCommandsAndRoundTrips() {
    QStringList words;
    QVERIFY(split_command_line(R"(/usr/bin/python3 "my train.py" --tag 'a b' x\ y)", words));
    QCOMPARE(words, QStringList({"/usr/bin/python3", "my train.py", "--tag", "a b", "x y"}));
    QVERIFY(!split_command_line("echo \"unterminated", words));

    NewJobDialog dialog;
    const QJsonObject command{{"name", "script"},
                              {"argv", QJsonArray{"/usr/bin/python3", "my train.py", "--epochs", "3"}},
                              {"env", QJsonObject{{"SEED", "7"}}},
                              {"resources", QJsonObject{{"cpus", 3}, {"gpus", 1}, {"memory_mb", 2048}}},
                              {"priority", 5}, {"budget", 12.5}, {"max_restarts", 1}};
    dialog.load(command);
    QCOMPARE(dialog.problem(), QString());
    QJsonObject out = dialog.request();
    QCOMPARE(out.value("argv").toArray(), command.value("argv").toArray());
    QCOMPARE(out.value("env").toObject(), command.value("env").toObject());
    QCOMPARE(out.value("resources").toObject(), command.value("resources").toObject());
    QCOMPARE(out.value("budget").toDouble(), 12.5);
    QCOMPARE(out.value("shell").toBool(), false);

    const QJsonObject builtin{{"name", "cnn run"},
                              {"builtin", QJsonObject{{"model", "cnn"}, {"epochs", 2}, {"batch_size", 64}, {"seed", 9},
                                                      {"optimizer", QJsonObject{{"type", "adamw"}, {"lr", 0.002}}},
                                                      {"schedule", QJsonObject{{"decay", "cosine"}}}}}};
    dialog.load(builtin);
    out = dialog.request().value("builtin").toObject();
    QCOMPARE(out.value("model").toString(), QString("cnn"));
    QCOMPARE(out.value("epochs").toInt(), 2);
    QCOMPARE(out.value("batch_size").toInt(), 64);
    QCOMPARE(out.value("optimizer").toObject().value("type").toString(), QString("adamw"));
    QCOMPARE(out.value("optimizer").toObject().value("lr").toDouble(), 0.002);
    QCOMPARE(out.value("data").toObject().value("dataset").toString(), QString("fashion-mnist"));

    dialog.show();
    dialog.grab().save(QStringLiteral(TRAINDECK_SCREENSHOT_DIR "/new-job.png"));
    // Fields the form does not show survive clone-and-edit.
    QJsonObject custom = builtin;
    QJsonObject custom_spec = builtin.value("builtin").toObject();
    custom_spec["conv"] = QJsonArray{8, 16};
    custom_spec["data"] = QJsonObject{{"dataset", "fashion-mnist"}, {"limit", 3000}};
    custom_spec["checkpoint_every"] = 25;
    custom["builtin"] = custom_spec;
    dialog.load(custom);
    out = dialog.request().value("builtin").toObject();
    QCOMPARE(out.value("conv").toArray(), (QJsonArray{8, 16}));
    QCOMPARE(out.value("data").toObject().value("limit").toInt(), 3000);
    QCOMPARE(out.value("checkpoint_every").toInt(), 25);
    // A CSV job without a file that exists is refused with a reason.
    QJsonObject csv = builtin;
    csv["builtin"] = QJsonObject{{"model", "mlp"}, {"data", QJsonObject{{"format", "csv"}, {"train_csv", "/no/such.csv"}}}};
    dialog.load(csv);
    QVERIFY(dialog.problem().contains("training CSV"));
}

void ConsoleTest::jobsRunOnTheBackendChosenInTheDialog() {
    if (!QFile::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
        QSKIP("dataset-fashion-mnist is not installed");
    QTemporaryDir temp;
    const QString dir = temp.path();
    WorkerReaper local_reaper{dir + "/local"}, remote_reaper{dir + "/remote"};
    TlsWorker remote;
    if (!remote.start(dir))
        QSKIP("could not start a TLS worker (is the openssl command installed?)");
    Console console;
    QVERIFY(console.open(dir + "/catalog.db", dir + "/local"));
    GpuBox gpu_box;
    const QString error = gpu_box.connect(console, remote);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    MainWindow& window = *console.window;
    QCOMPARE(window.backendNames(), QStringList({"local", "gpu-box"}));
    // The backends panel lists both workers with what they report.
    QTRY_COMPARE_WITH_TIMEOUT(window.backendsModel().rowCount(), 2, 10000);
    QTRY_VERIFY_WITH_TIMEOUT(window.backendsModel().data(window.backendsModel().index(1, BackendTableModel::Cpus),
                                                         Qt::DisplayRole).toInt() > 0, 10000);
    QCOMPARE(window.backendsModel().data(window.backendsModel().index(1, BackendTableModel::Name), Qt::DisplayRole).toString(),
             QString("gpu-box"));

    NewJobDialog dialog(&window);
    dialog.setBackends(window.backendNames());
    dialog.load(small_job("remote job", 2000, 1));
    dialog.setBackends(window.backendNames(), "gpu-box");
    window.submitDialog(dialog);
    QTRY_VERIFY_WITH_TIMEOUT(row_of(window, "remote job") >= 0, 15000);
    const int row = row_of(window, "remote job");
    QCOMPARE(window.jobs().data(window.jobs().index(row, JobTableModel::Backend), Qt::DisplayRole).toString(), QString("gpu-box"));
    QTRY_COMPARE_WITH_TIMEOUT(state_of(window, row_of(window, "remote job")), QString("succeeded"), 60000);
    // It ran on the remote worker: its job folder is there, not in the local worker's.
    QVERIFY(QFileInfo::exists(dir + "/remote/jobs/1/spec.json"));
    QVERIFY(!QFileInfo::exists(dir + "/local/jobs/1/spec.json"));
}

void ConsoleTest::windowStaysResponsiveWhileTwentyJobsStream() {
    QTemporaryDir temp;
    const QString worker_dir = temp.filePath("worker");
    WorkerReaper reaper{worker_dir};
    Console console;
    QVERIFY(console.open(temp.filePath("catalog.db"), worker_dir));
    MainWindow& window = *console.window;
    // 20 jobs, each writing 500 metric lines a second for 8 s: 10,000 events/s into the catalog while we watch.
    for (int j = 0; j < 20; ++j)
        console.sync->submit(QStringLiteral("stream %1").arg(j),
                             QJsonObject{{"argv", QJsonArray{TRAINDECK_EMITTER_BINARY, "500", "8"}},
                                         {"resources", QJsonObject{{"cpus", 0}}}});
    QTRY_VERIFY_WITH_TIMEOUT(window.jobs().rowCount() == 20, 20000);
    window.selectRow(0);
    // The GUI thread's responsiveness: a 10 ms timer, and the largest gap between its ticks while jobs stream.
    QElapsedTimer clock;
    clock.start();
    qint64 last = 0, worst = 0;
    std::vector<qint64> gaps;
    QTimer tick;
    QObject::connect(&tick, &QTimer::timeout, [&] {
        const qint64 now = clock.elapsed();
        gaps.push_back(now - last);
        worst = std::max(worst, now - last);
        last = now;
    });
    tick.start(10);
    QTest::qWait(8000);
    tick.stop();
    std::sort(gaps.begin(), gaps.end());
    const qint64 median = gaps[gaps.size() / 2];
    qInfo("event-loop gaps while 20 jobs stream: median %lld ms, worst %lld ms over %zu ticks", median, worst, gaps.size());
    QVERIFY2(worst < 250, qPrintable(QString("the window froze for %1 ms").arg(worst)));
    QVERIFY(median <= 20);
    // And the data did arrive.
    CatalogReader reader(temp.filePath("catalog.db"));
    const qint64 first = window.jobs().data(window.jobs().index(19, 0), JobTableModel::JobIdRole).toLongLong();
    QTRY_VERIFY_WITH_TIMEOUT(reader.curve(first, "loss", 2000).points > 1000, 20000);
}

void ConsoleTest::gpuTelemetryIsChartedBesideTheCpu() {
    QTemporaryDir temp;
    const QString path = temp.filePath("catalog.db");
    Catalog catalog;
    QCOMPARE(QString::fromStdString(catalog.open(path.toStdString())), QString());
    const int64_t job = catalog.add_job("gpu job", "local", "1", nlohmann::json{{"budget", 0.5}});
    std::vector<nlohmann::json> events;
    for (int i = 1; i <= 30; ++i)
        events.push_back({{"seq", i}, {"time", 1000.0 + i}, {"type", "telemetry"},
                          {"data", {{"cpu_percent", 50}, {"spend", 0.01 * i},
                                    {"gpus", {{{"index", 0}, {"utilization", 90}, {"memory_used_mb", 40000}, {"memory_total_mb", 80000}},
                                              {{"index", 1}, {"utilization", 70}, {"memory_used_mb", 8000}, {"memory_total_mb", 80000}}}}}}});
    catalog.db().exec("BEGIN");
    catalog.ingest(job, events);
    catalog.db().exec("COMMIT");
    JobDetailView view(path);
    view.resize(1200, 800);
    view.show();
    view.showJob(job, "gpu job");
    const QStringList names = view.systemCurveNames();
    for (const char* expected : {"CPU %", "spend ($)", "budget", "GPU0 util %", "GPU0 memory %", "GPU1 util %", "GPU1 memory %"})
        QVERIFY2(names.contains(expected), qPrintable(names.join(", ")));
    QCOMPARE(view.budgetPoints(), 2); // the budget line is drawn for a capped job
}

void ConsoleTest::tokensGoToTheKeyringOrNowhere() {
    QString error, token;
    const QString name = "traindeck-test-" + QString::number(QCoreApplication::applicationPid());
    if (TokenStore::save(name, "s3cret-token", &error)) {
        QVERIFY(TokenStore::load(name, &token, &error));
        QCOMPARE(token, QString("s3cret-token"));
        QVERIFY(TokenStore::remove(name, &error));
        QVERIFY(!TokenStore::load(name, &token, &error));
    } else {
        // No keyring on this machine (CI): a clear message, and no plaintext file left anywhere by the fallback.
        QVERIFY2(error.contains("keyring"), qPrintable(error));
        QVERIFY(!TokenStore::load(name, &token, &error));
        QVERIFY(token.isEmpty());
    }
}

void ConsoleTest::remoteWorkerPinsItsKeyOnFirstUse() {
    QTemporaryDir temp;
    const QString dir = temp.path();
    TlsWorker worker;
    if (!worker.start(dir))
        QSKIP("could not start a TLS worker (is the openssl command installed?)");
    const QString url = worker.url, token = worker.token;

    QPluginLoader loader(QStringLiteral(TRAINDECK_PLUGIN_DIR "/libtraindeck_backend_worker.so"));
    auto* factory = qobject_cast<BackendFactory*>(loader.instance());
    QVERIFY2(factory, qPrintable(loader.errorString()));
    QCOMPARE(factory->kind(), QString("worker"));
    QString error;
    std::unique_ptr<Backend> first(factory->create(nullptr));
    QVERIFY2(first->open({{"url", url}, {"token", token}}, &error), qPrintable(error));
    const QString pin = first->property("pinned_public_key").toString();
    QVERIFY(pin.startsWith("sha256//"));
    QVERIFY(first->resources(&error).contains("cpus"));

    std::unique_ptr<Backend> pinned(factory->create(nullptr));
    QVERIFY2(pinned->open({{"url", url}, {"token", token}, {"pinned_public_key", pin}}, &error), qPrintable(error));
    std::unique_ptr<Backend> impostor(factory->create(nullptr));
    QVERIFY(!impostor->open({{"url", url}, {"token", token},
                             {"pinned_public_key", "sha256//AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}}, &error));
    QVERIFY2(error.contains("pinned"), qPrintable(error)); // refused because the key differs, not for another reason
    std::unique_ptr<Backend> wrong_token(factory->create(nullptr));
    QVERIFY(!wrong_token->open({{"url", url}, {"token", "nope"}, {"pinned_public_key", pin}}, &error));
    QCOMPARE(error, QString("the worker refused the token"));
    std::unique_ptr<Backend> plain(factory->create(nullptr));
    QVERIFY(!plain->open({{"url", "http://127.0.0.1:1"}, {"token", token}}, &error));
    QVERIFY(error.contains("https://"));
}

void ConsoleTest::submitWatchCancelAndRestart() {
    if (!QFile::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
        QSKIP("dataset-fashion-mnist is not installed");
    QTemporaryDir temp;
    const QString catalog_path = temp.filePath("catalog.db");
    const QString worker_dir = temp.filePath("worker");
    WorkerReaper reaper{worker_dir};
    qint64 long_job = 0;
    {
        Console console;
        QVERIFY(console.open(catalog_path, worker_dir));
        MainWindow& window = *console.window;
        // A long job to watch across the restart, and one to cancel.
        {
            // The long job goes through the New job dialog, as a user would submit it.
            NewJobDialog dialog(&window);
            dialog.load(small_job("long", 6000, 6));
            QCOMPARE(dialog.problem(), QString());
            window.submitDialog(dialog);
        }
        console.sync->submit("doomed", small_job("doomed", 60000, 5));
        QTRY_VERIFY_WITH_TIMEOUT(window.jobs().rowCount() == 2, 15000);
        const int doomed = row_of(window, "doomed");
        QVERIFY(doomed >= 0);
        QTRY_COMPARE_WITH_TIMEOUT(state_of(window, row_of(window, "doomed")), QString("running"), 20000);
        const QString remote = window.jobs().data(window.jobs().index(row_of(window, "doomed"), 0), JobTableModel::RemoteIdRole).toString();
        console.sync->cancel(0, remote);
        QTRY_COMPARE_WITH_TIMEOUT(state_of(window, row_of(window, "doomed")), QString("cancelled"), 30000);

        // The long job's curve grows in the detail view.
        const int row = row_of(window, "long");
        long_job = window.jobs().data(window.jobs().index(row, 0), JobTableModel::JobIdRole).toLongLong();
        window.selectRow(row);
        CatalogReader reader(catalog_path);
        QTRY_VERIFY_WITH_TIMEOUT(reader.curve(long_job, "loss", 2000).points > 30, 30000);
        const qint64 before = reader.curve(long_job, "loss", 2000).points;
        QTRY_VERIFY_WITH_TIMEOUT(reader.curve(long_job, "loss", 2000).points > before + 20, 30000);
        QVERIFY2(reader.curve(long_job, "loss", 2000).points < 6 * 85 - 40, "the job ended before the console closed");
        window.grab().save(QStringLiteral(TRAINDECK_SCREENSHOT_DIR "/console-live.png"));
        // Close the console mid-run (the job keeps training in the worker).
        QCOMPARE(state_of(window, row), QString("running"));
    }
    QTest::qWait(1500);
    {
        Console console;
        QVERIFY(console.open(catalog_path, worker_dir));
        MainWindow& window = *console.window;
        const int row = row_of(window, "long");
        QVERIFY(row >= 0);
        QTRY_COMPARE_WITH_TIMEOUT(state_of(window, row_of(window, "long")), QString("succeeded"), 120000);
        // Every step of all six epochs, once: 5400 samples / 64 = 85 steps an epoch.
        Catalog reader;
        QCOMPARE(QString::fromStdString(reader.open(catalog_path.toStdString(), true)), QString());
        const auto points = SeriesStore::points(reader.db(), reader.series(long_job, "loss", false), 0, 1 << 30);
        QCOMPARE(points.size(), size_t(6 * 85));
        for (size_t i = 0; i < points.size(); ++i)
            QCOMPARE(points[i].step, static_cast<int64_t>(i + 1));
        // The cancelled job resumes (from its checkpoint) and the table follows it; then it is cancelled again.
        const int doomed = row_of(window, "doomed");
        const qint64 doomed_id = window.jobs().data(window.jobs().index(doomed, 0), JobTableModel::JobIdRole).toLongLong();
        const QString doomed_remote = window.jobs().data(window.jobs().index(doomed, 0), JobTableModel::RemoteIdRole).toString();
        console.sync->resume(doomed_id, doomed_remote);
        QTRY_COMPARE_WITH_TIMEOUT(state_of(window, row_of(window, "doomed")), QString("running"), 30000);
        console.sync->cancel(doomed_id, doomed_remote);
        QTRY_COMPARE_WITH_TIMEOUT(state_of(window, row_of(window, "doomed")), QString("cancelled"), 30000);
        // Clone-and-edit starts from the request the job was submitted with.
        const QJsonObject request = QJsonDocument::fromJson(CatalogReader(catalog_path).jobRequest(long_job)).object();
        QCOMPARE(request.value("builtin").toObject().value("model").toString(), QString("cnn"));
        // Selecting both jobs overlays the other one's loss for comparison.
        window.table().selectAll();
        QTRY_COMPARE(window.detail().overlayCount(), 1);
        window.refresh();
        QTest::qWait(300);
        window.grab().save(QStringLiteral(TRAINDECK_SCREENSHOT_DIR "/console-finished.png"));
    }
}

void ConsoleTest::datasetsRegisterPreviewUploadTrainAndExport() {
    const QString fashion = "/usr/share/datasets/fashion-mnist";
    if (!QFile::exists(fashion + "/train-images-idx3-ubyte.gz"))
        QSKIP("dataset-fashion-mnist is not installed");
    QTemporaryDir temp;
    const QString dir = temp.path();
    qputenv("XDG_DATA_HOME", dir.toUtf8()); // exports go under the data folder
    qputenv("TRAINDECK_TRAIN_BINARY", TRAINDECK_TRAIN_BINARY);
    WorkerReaper reaper{dir + "/local"};
    Console console;
    QVERIFY(console.open(dir + "/catalog.db", dir + "/local"));
    MainWindow& window = *console.window;
    DatasetsView& view = window.datasets();
    DatasetSync& sync = window.datasetSync();
    window.tabs().setCurrentWidget(&view);
    QSignalSpy registered(&sync, &DatasetSync::registered), failed(&sync, &DatasetSync::failed), uploaded(&sync, &DatasetSync::uploaded);

    // A folder of IDX files under Debian's names.
    const QString data = dir + "/fmnist";
    QDir().mkpath(data);
    for (const char* file : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
                                "t10k-labels-idx1-ubyte.gz"})
        QVERIFY(QFile::copy(fashion + "/" + file, data + "/" + file));
    view.registerPath(data);
    QTRY_COMPARE_WITH_TIMEOUT(registered.count(), 1, 30000);
    const QString first = registered.at(0).at(1).toString();
    QCOMPARE(first.size(), 64);
    QTRY_COMPARE_WITH_TIMEOUT(view.model().rowCount(), 1, 5000);
    QCOMPARE(view.model().data(view.model().index(0, DatasetTableModel::Format), Qt::DisplayRole).toString(), QString("idx"));
    QCOMPARE(view.model().data(view.model().index(0, DatasetTableModel::Files), Qt::DisplayRole).toInt(), 4);
    QTRY_VERIFY_WITH_TIMEOUT(view.previewSummary().contains("70000 images of 28×28"), 20000);
    QVERIFY(view.diffText().contains("first version"));

    // The same bytes again: the same version. A changed folder: a new version with its diff.
    view.registerPath(data);
    QTRY_COMPARE_WITH_TIMEOUT(registered.count(), 2, 30000);
    QCOMPARE(registered.at(1).at(1).toString(), first);
    QCOMPARE(registered.at(1).at(2).toBool(), false);
    QFile readme(data + "/README.txt");
    QVERIFY(readme.open(QIODevice::WriteOnly));
    readme.write("Fashion-MNIST, as Debian ships it\n");
    readme.close();
    view.registerPath(data);
    QTRY_COMPARE_WITH_TIMEOUT(registered.count(), 3, 30000);
    const QString second = registered.at(2).at(1).toString();
    QVERIFY(second != first);
    QTRY_COMPARE_WITH_TIMEOUT(view.model().rowCount(), 2, 5000);
    QVERIFY2(view.diffText().contains("1 added, 0 removed, 0 changed, 4 unchanged"), qPrintable(view.diffText()));
    QVERIFY(view.diffText().contains("+ README.txt"));

    // Bad input: a CSV with a ragged row is refused with its line, and nothing is registered.
    QDir().mkpath(dir + "/table");
    QFile csv(dir + "/table/data.csv");
    QVERIFY(csv.open(QIODevice::WriteOnly));
    csv.write("a,b,label\n1,2,x\n3,y\n");
    csv.close();
    view.registerPath(dir + "/table");
    QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, 10000);
    QVERIFY2(failed.at(0).at(0).toString().contains("data.csv:3"), qPrintable(failed.at(0).at(0).toString()));
    QVERIFY(view.status().contains("ragged"));
    QCOMPARE(view.model().rowCount(), 2);

    // Upload to the local worker; again: nothing to send.
    view.selectVersion(second);
    view.uploadSelected("local");
    QTRY_COMPARE_WITH_TIMEOUT(uploaded.count(), 1, 60000);
    QVERIFY(uploaded.at(0).at(2).toLongLong() > 30000000);
    QTRY_VERIFY_WITH_TIMEOUT(view.model().data(view.model().index(view.model().rowOfVersion(second), DatasetTableModel::UploadedTo),
                                               Qt::DisplayRole).toString() == "local", 5000);
    view.uploadSelected("local");
    QTRY_COMPARE_WITH_TIMEOUT(uploaded.count(), 2, 30000);
    QCOMPARE(uploaded.at(1).at(2).toLongLong(), 0);
    QVERIFY(view.status().contains("sent 0 B"));
    window.resize(1400, 860);
    window.grab().save(QStringLiteral(TRAINDECK_SCREENSHOT_DIR "/datasets.png"));

    // A built-in job on that version: the worker reads the files from the version's read-only folder.
    NewJobDialog dialog(&window);
    QJsonObject request = small_job("on dataset", 3000, 1);
    QJsonObject spec = request.value("builtin").toObject();
    spec["model"] = "mlp";
    spec.remove("conv");
    request["builtin"] = spec;
    request["dataset"] = second;
    dialog.load(request);
    dialog.setDatasets({{"fmnist", second}});
    QCOMPARE(dialog.request().value("dataset").toString(), second);
    QCOMPARE(dialog.request().value("builtin").toObject().value("data").toObject().value("train_images").toString(),
             QString("train-images-idx3-ubyte.gz"));
    window.submitDialog(dialog);
    QTRY_VERIFY_WITH_TIMEOUT(row_of(window, "on dataset") >= 0, 30000);
    QTRY_COMPARE_WITH_TIMEOUT(state_of(window, row_of(window, "on dataset")), QString("succeeded"), 90000);
    QVERIFY(QFileInfo::exists(dir + "/local/store/datasets/" + second + "/README.txt"));

    // Export it: ONNX fp32 + int8 + safetensors, with accuracy before and after.
    window.tabs().setCurrentIndex(0);
    window.selectRow(window.table().model()->index(0, 0).row());
    for (int row = 0; row < window.table().model()->rowCount(); ++row)
        if (window.table().model()->index(row, JobTableModel::Name).data().toString() == "on dataset")
            window.table().selectRow(row);
    ExportDialog* exporter = window.exportSelected();
    QVERIFY(exporter);
    exporter->setOptions(true, true, true, 500, 0.0);
    exporter->startExport();
    QTRY_VERIFY_WITH_TIMEOUT(!exporter->running(), 90000);
    QVERIFY2(exporter->status().startsWith("Exported"), qPrintable(exporter->status()));
    const QJsonObject report = exporter->report();
    QCOMPARE(report.value("artifacts").toArray().size(), 3);
    for (const auto& artifact : report.value("artifacts").toArray())
        QVERIFY(QFileInfo(artifact.toObject().value("path").toString()).size() > 1000);
    QVERIFY(report.value("test_accuracy_fp32").toDouble() > 0.6);
    QVERIFY(report.value("val_samples").toInt() > 0);
    exporter->grab().save(QStringLiteral(TRAINDECK_SCREENSHOT_DIR "/export.png"));
    exporter->close();
}

void ConsoleTest::lostWorkerJobFinishesOnAnotherWorker() {
    if (!QFile::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
        QSKIP("dataset-fashion-mnist is not installed");
    QTemporaryDir temp;
    const QString dir = temp.path();
    qputenv("XDG_DATA_HOME", dir.toUtf8()); // the console's copies of checkpoints
    WorkerReaper local_reaper{dir + "/local"}, remote_reaper{dir + "/remote"};
    TlsWorker remote;
    if (!remote.start(dir))
        QSKIP("could not start a TLS worker (is the openssl command installed?)");
    Console console;
    QVERIFY(console.open(dir + "/catalog.db", dir + "/local"));
    GpuBox gpu_box;
    const QString error = gpu_box.connect(console, remote);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    MainWindow& window = *console.window;
    window.migrator().setTimeouts(300, 2500);
    QSignalSpy moved(&window.migrator(), &JobMigrator::jobMoved), lost(&window.migrator(), &JobMigrator::workerLost);

    QJsonObject request = small_job("movable", 6000, 4);
    request["console"] = QJsonObject{{"migrate", true}};
    console.sync->submit("movable", request);
    QTRY_VERIFY_WITH_TIMEOUT(row_of(window, "movable") >= 0, 15000);
    const qint64 job = window.jobs().data(window.jobs().index(row_of(window, "movable"), 0), JobTableModel::JobIdRole).toLongLong();
    // Its checkpoints are copied to the console as they are written.
    const QString copies = dir + QString("/traindeck/checkpoints/job-%1").arg(job);
    QTRY_VERIFY_WITH_TIMEOUT(!QDir(copies).entryList({"ckpt-*.tdck"}, QDir::Files).isEmpty(), 60000);
    QCOMPARE(state_of(window, row_of(window, "movable")), QString("running"));

    // The machine dies: the worker and the job with it.
    std::system(("pkill -KILL -f -- '" + (dir + "/local").toStdString() + "'").c_str());
    QTRY_COMPARE_WITH_TIMEOUT(lost.count(), 1, 20000);
    QTRY_COMPARE_WITH_TIMEOUT(moved.count(), 1, 30000);
    QCOMPARE(moved.at(0).at(2).toString(), QString("gpu-box"));
    QTRY_COMPARE_WITH_TIMEOUT(window.jobs().data(window.jobs().index(row_of(window, "movable"), JobTableModel::Backend),
                                                 Qt::DisplayRole).toString(), QString("gpu-box"), 10000);
    QTRY_COMPARE_WITH_TIMEOUT(state_of(window, row_of(window, "movable")), QString("succeeded"), 180000);
    // It resumed on the remote worker from the copied checkpoint, not from the start.
    QFile log(dir + "/remote/jobs/1/stdout.log");
    QVERIFY(log.open(QIODevice::ReadOnly));
    QVERIFY(log.readAll().contains("resumed from"));

    // One continuous curve: every step from 1 to the last exactly once.
    console.writer->flush();
    CatalogReader reader(dir + "/catalog.db");
    const CatalogReader::Curve curve = reader.curve(job, "loss", 1000000);
    QVERIFY(!curve.last.isEmpty());
    const qint64 last_step = static_cast<qint64>(curve.last.back().x());
    QCOMPARE(curve.points, last_step);
    for (int i = 0; i < curve.last.size(); ++i)
        QCOMPARE(static_cast<qint64>(curve.last[i].x()), static_cast<qint64>(i + 1));
    QCOMPARE(last_step, qint64(85 * 4)); // 5,400 training samples / 64 = 85 steps an epoch, 4 epochs
    window.grab().save(QStringLiteral(TRAINDECK_SCREENSHOT_DIR "/moved-job.png"));
}

void ConsoleTest::slurmJobsFromThePluginToTheFinishedCurve() {
    if (!QFile::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
        QSKIP("dataset-fashion-mnist is not installed");
    if (::getuid() != 0 || QStandardPaths::findExecutable("slurmctld", {"/usr/sbin", "/usr/bin"}).isEmpty())
        QSKIP("a single-node Slurm needs root and the Slurm packages (installer/install-deps.sh --tests)");
    QTemporaryDir temp;
    const QString dir = temp.path();
    const QString cluster = dir + "/cluster";
    // slurmrestd runs as an unprivileged user: it must be able to reach the cluster's files.
    QFile::setPermissions(dir, QFile::permissions(dir) | QFileDevice::ExeOther | QFileDevice::ReadOther);
    const QString script = QStringLiteral(TRAINDECK_SOURCE_DIR "/installer/slurm-single-node.sh");
    QProcess start;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("SLURMRESTD_PORT", "26820");
    env.insert("SLURMCTLD_PORT", "26817");
    env.insert("SLURMD_PORT", "26818");
    start.setProcessEnvironment(env);
    start.start("bash", {script, "start", cluster, "4"});
    QVERIFY(start.waitForFinished(60000));
    QVERIFY2(start.exitCode() == 0, start.readAll().constData());
    struct ClusterStopper {
        QString script, cluster;
        ~ClusterStopper() { QProcess::execute("bash", {script, "stop", cluster}); }
    } stopper{script, cluster};
    WorkerReaper local_reaper{dir + "/local"}, slurm_reaper{dir + "/slurm-worker"};
    qputenv("SLURM_CONF", (cluster + "/slurm.conf").toUtf8());

    Console console;
    QVERIFY(console.open(dir + "/catalog.db", dir + "/local"));
    QPluginLoader loader(QStringLiteral(TRAINDECK_PLUGIN_DIR "/libtraindeck_backend_slurm.so"));
    auto* factory = qobject_cast<BackendFactory*>(loader.instance());
    QVERIFY2(factory, qPrintable(loader.errorString()));
    QCOMPARE(factory->kind(), QString("slurm"));
    std::unique_ptr<Backend> slurm(factory->create(nullptr));
    QString error;
    QVERIFY2(slurm->open({{"state_dir", dir + "/slurm-worker"}, {"worker_binary", TRAINDECK_WORKER_BINARY},
                          {"slurm_rest", "http://127.0.0.1:26820"}, {"slurm_token_file", cluster + "/jwt.token"},
                          {"slurm_conf", cluster + "/slurm.conf"}}, &error), qPrintable(error));
    JobSync slurm_sync(console.catalog, *console.writer, *slurm, "slurm");
    MainWindow& window = *console.window;
    window.addBackend("slurm", slurm_sync, *slurm);

    // A built-in job, through the dialog, on the Slurm backend.
    NewJobDialog dialog(&window);
    QJsonObject request = small_job("slurm builtin", 3000, 1);
    QJsonObject spec = request.value("builtin").toObject();
    spec["model"] = "mlp";
    spec.remove("conv");
    request["builtin"] = spec;
    dialog.load(request);
    dialog.setBackends(window.backendNames(), "slurm");
    window.submitDialog(dialog);
    // And the PyTorch example.
    const QJsonObject pytorch{{"name", "slurm pytorch"},
                              {"argv", QJsonArray{"/usr/bin/python3", TRAINDECK_SOURCE_DIR "/resources/examples/pytorch_fashion.py",
                                                  "--epochs", "1", "--limit", "2560"}},
                              {"resources", QJsonObject{{"cpus", 1}}}};
    const bool torch = QProcess::execute("/usr/bin/python3", {"-c", "import torch"}) == 0;
    if (torch)
        slurm_sync.submit("slurm pytorch", pytorch);
    QTRY_VERIFY_WITH_TIMEOUT(row_of(window, "slurm builtin") >= 0, 20000);
    QCOMPARE(window.jobs().data(window.jobs().index(row_of(window, "slurm builtin"), JobTableModel::Backend), Qt::DisplayRole).toString(),
             QString("slurm"));
    QTRY_COMPARE_WITH_TIMEOUT(state_of(window, row_of(window, "slurm builtin")), QString("succeeded"), 120000);
    const qint64 job = window.jobs().data(window.jobs().index(row_of(window, "slurm builtin"), 0), JobTableModel::JobIdRole).toLongLong();
    console.writer->flush();
    CatalogReader reader(dir + "/catalog.db");
    const CatalogReader::Curve curve = reader.curve(job, "loss", 100000);
    QCOMPARE(curve.points, qint64(43)); // 2,700 training samples / 64
    QCOMPARE(static_cast<qint64>(curve.last.back().x()), qint64(43));
    if (torch) {
        QTRY_VERIFY_WITH_TIMEOUT(row_of(window, "slurm pytorch") >= 0, 20000);
        QTRY_COMPARE_WITH_TIMEOUT(state_of(window, row_of(window, "slurm pytorch")), QString("succeeded"), 180000);
        const qint64 torch_job = window.jobs().data(window.jobs().index(row_of(window, "slurm pytorch"), 0), JobTableModel::JobIdRole).toLongLong();
        QCOMPARE(reader.curve(torch_job, "loss", 100000).points, qint64(20));
    }
    window.selectRow(row_of(window, "slurm builtin"));
    window.grab().save(QStringLiteral(TRAINDECK_SCREENSHOT_DIR "/slurm-job.png"));
}

QTEST_MAIN(ConsoleTest)
#include "console_test.moc"
