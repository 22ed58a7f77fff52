// traindeck: the console. Opens the catalog, loads the backend plugins, attaches to (or starts) the local worker,
// and shows the main window. On a first start it submits the Fashion-MNIST demo job so there is something to watch.
#include "backendmanager.h"
#include "catalog.h"
#include "jobsync.h"
#include "mainwindow.h"
#include "pluginregistry.h"
#include "runimporter.h"
#include "settingsdialog.h"
#include "theme.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QIcon>
#include <QMessageBox>
#include <QSettings>
#include <QStandardPaths>
#include <QTimer>

#include <cstdio>
#include <ctime>
#include <memory>

using namespace traindeck;

namespace {

// --report-first-paint: at the window's first paint, prints the system's monotonic clock (which the program that
// started this one reads too: tests/bench/console_startup subtracts its own reading from before the exec) and quits.
class FirstPaintReporter : public QObject {
public:
    explicit FirstPaintReporter(QWidget* window) : QObject(window) { window->installEventFilter(this); }
    bool eventFilter(QObject* watched, QEvent* event) override {
        if (event->type() == QEvent::Paint && !reported_) {
            reported_ = true;
            // After this paint has been done and shown: the next turn of the event loop.
            QTimer::singleShot(0, this, [] {
                timespec now{};
                clock_gettime(CLOCK_MONOTONIC, &now);
                std::printf("first-paint-monotonic-ns %lld\n",
                            static_cast<long long>(now.tv_sec) * 1'000'000'000LL + now.tv_nsec);
                std::fflush(stdout);
                QApplication::quit();
            });
        }
        return QObject::eventFilter(watched, event);
    }

private:
    bool reported_ = false;
};

} // namespace

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    QApplication::setOrganizationName("traindeck"); // QSettings: ~/.config/traindeck/traindeck.conf
    QApplication::setApplicationName("traindeck");
    QApplication::setApplicationDisplayName("TrainDeck");
    QApplication::setApplicationVersion(TRAINDECK_VERSION);
    // The desktop entry's name (the taskbar finds the icon through it) and the icon: the theme's when installed,
    // else the one built in.
    QGuiApplication::setDesktopFileName("io.traindeck.TrainDeck");
    QApplication::setWindowIcon(QIcon::fromTheme("io.traindeck.TrainDeck", QIcon(":/icons/traindeck.svg")));
    QCommandLineParser parser;
    parser.setApplicationDescription("TrainDeck: train models and watch every job live.");
    parser.addHelpOption();
    parser.addVersionOption();
    QCommandLineOption catalog_option("catalog", "Catalog file (default: $XDG_DATA_HOME/traindeck/catalog.db).", "file");
    QCommandLineOption worker_option("worker-state-dir", "The local worker's state folder.", "dir");
    QCommandLineOption no_demo_option("no-demo", "Do not submit the demo job on a first start.");
    QCommandLineOption screenshot_option("screenshot", "Save a screenshot of the window to FILE and quit.", "file");
    QCommandLineOption after_option("after", "Seconds to wait before --screenshot (default 20).", "seconds", "20");
    QCommandLineOption first_paint_option(
        "report-first-paint",
        "Print the monotonic clock's nanoseconds at the window's first paint and quit (tests/bench/console_startup).");
    QCommandLineOption theme_option("theme", "Appearance for this run: system, light or dark (default: Settings').",
                                    "theme");
    QCommandLineOption slurm_option("slurm", "Also connect a Slurm cluster, configured by $SLURM_CONF, $TRAINDECK_SLURM_REST and "
                                             "$TRAINDECK_SLURM_TOKEN_FILE, $TRAINDECK_SLURM_USER (installer/slurm-single-node.sh writes them to DIR/env).");
    parser.addOptions({catalog_option, worker_option, no_demo_option, screenshot_option, after_option, slurm_option,
                       theme_option, first_paint_option});
    parser.process(app);
    // Settings' data folder (read at start: the catalog and the local worker's state live there) and appearance.
    const ConsoleSettings settings_from_disk = ConsoleSettings::load(QSettings());
    if (parser.isSet(theme_option)) {
        const QString theme = parser.value(theme_option);
        if (theme != "system" && theme != "light" && theme != "dark") {
            std::fprintf(stderr, "traindeck: --theme is system, light or dark, not \"%s\"\n", qPrintable(theme));
            return 2;
        }
    }

    const QString data_dir = settings_from_disk.data_folder.isEmpty()
                                 ? QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation) + "/traindeck"
                                 : settings_from_disk.data_folder;
    QDir().mkpath(data_dir);
    const QString catalog_path = parser.isSet(catalog_option) ? parser.value(catalog_option) : data_dir + "/catalog.db";
    Catalog catalog;
    if (const std::string error = catalog.open(catalog_path.toStdString()); !error.empty()) {
        QMessageBox::critical(nullptr, "TrainDeck", QString::fromStdString(error));
        return 1;
    }
    CatalogWriter writer(catalog);

    // Plugins: $TRAINDECK_PLUGIN_DIR, next to the build tree's binaries, then the installed locations.
    PluginRegistry plugins;
    const QStringList plugin_dirs = PluginRegistry::default_dirs();
    plugins.scan(plugin_dirs);
    BackendFactory* local_factory = plugins.factory("local");
    BackendFactory* worker_factory = plugins.factory("worker");
    BackendFactory* slurm_factory = plugins.factory("slurm");
    for (const QString& problem : plugins.problems())
        qWarning("plugin: %s", qPrintable(problem));
    if (!local_factory) {
        QMessageBox::critical(nullptr, "TrainDeck",
                              "The local backend plugin was not found in " + plugin_dirs.join(", ") + "\n" +
                                  plugins.problems().join("\n"));
        return 1;
    }
    Backend* backend = local_factory->create(&app);
    QVariantMap settings;
    if (parser.isSet(worker_option))
        settings["state_dir"] = parser.value(worker_option);
    else if (!settings_from_disk.data_folder.isEmpty())
        settings["state_dir"] = data_dir + "/worker";
    settings["args"] = settings_from_disk.workerArguments(); // a worker started now starts with Settings' prices
    QString error;
    if (!backend->open(settings, &error)) {
        QMessageBox::critical(nullptr, "TrainDeck", "Cannot reach the local worker: " + error);
        return 1;
    }
    JobSync sync(catalog, writer, *backend, "local");
    MainWindow window(catalog_path, sync, *backend);
    if (parser.isSet(theme_option))
        apply_theme(theme_from_name(parser.value(theme_option))); // this run only: Settings keep theirs
    sync.resumeWatching();
    BackendManager remotes(catalog, writer, worker_factory, window, plugins.factory("ssh"), plugins.factory("cloud"));
    remotes.restore();
    std::unique_ptr<JobSync> slurm_sync;
    if (parser.isSet(slurm_option)) {
        Backend* slurm = slurm_factory ? slurm_factory->create(&app) : nullptr;
        QString slurm_error = slurm ? QString() : QStringLiteral("the Slurm plugin was not found");
        const QVariantMap slurm_settings{{"slurm_rest", qEnvironmentVariable("TRAINDECK_SLURM_REST")},
                                         {"slurm_token_file", qEnvironmentVariable("TRAINDECK_SLURM_TOKEN_FILE")},
                                         {"slurm_user", qEnvironmentVariable("TRAINDECK_SLURM_USER")},
                                         {"slurm_conf", qEnvironmentVariable("SLURM_CONF")}};
        if (slurm && slurm->open(slurm_settings, &slurm_error)) {
            slurm_sync = std::make_unique<JobSync>(catalog, writer, *slurm, "slurm");
            window.addBackend("slurm", *slurm_sync, *slurm);
            slurm_sync->resumeWatching();
        } else {
            window.addAlert("Slurm backend not connected: " + slurm_error);
        }
    }
    if (parser.isSet(first_paint_option))
        new FirstPaintReporter(&window);
    window.show();
    if (!parser.isSet(no_demo_option) && window.jobs().totalJobs() == 0) {
        window.submitDemo("mlp");
        window.registerFashionMnist();
    }

    if (parser.isSet(screenshot_option)) {
        const QString path = parser.value(screenshot_option);
        QTimer::singleShot(static_cast<int>(parser.value(after_option).toDouble() * 1000), &window, [&window, path] {
            window.refresh();
            QTimer::singleShot(500, &window, [&window, path] {
                window.grab().save(path);
                QApplication::quit();
            });
        });
    }
    const int code = app.exec();
    RunImporter::finishAll(); // no import thread outlives the catalog's writer
    return code;
}
