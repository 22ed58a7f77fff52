// MainWindow (mainwindow.h): wiring and small slots; every backend call goes to the network pool, every action on
// a job through the controller.
#include "mainwindow.h"

#include "background.h"
#include "backendref.h"
#include "exportdialog.h"
#include "newjobdialog.h"

#include <QAction>
#include <QApplication>
#include <QFile>
#include <QHeaderView>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPointer>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStandardPaths>
#include <QStatusBar>
#include <QStyle>
#include <QSystemTrayIcon>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QToolBar>
#include <QVBoxLayout>

namespace traindeck {

MainWindow::MainWindow(const QString& catalog_path, JobSync& sync, Backend& backend, QWidget* parent)
    : QMainWindow(parent), reader_(catalog_path) {
    setWindowTitle(tr("TrainDeck"));
    jobs_ = new JobTableModel(catalog_path, this);
    proxy_ = new QSortFilterProxyModel(this);
    proxy_->setSourceModel(jobs_);
    proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
    proxy_->setFilterKeyColumn(-1);
    proxy_->setSortRole(Qt::DisplayRole);

    table_ = new QTableView;
    table_->setModel(proxy_);
    table_->setSortingEnabled(true);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    // Several rows: the current one is shown, the others' loss curves are overlaid for comparison.
    table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
    table_->verticalHeader()->hide();
    table_->horizontalHeader()->setStretchLastSection(true);
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->horizontalHeader()->setSectionResizeMode(JobTableModel::Name, QHeaderView::Interactive);
    table_->horizontalHeader()->setMinimumSectionSize(48);
    table_->setColumnWidth(JobTableModel::Name, 170);
    table_->setWordWrap(false);
    table_->setAlternatingRowColors(true);
    filter_ = new QLineEdit;
    filter_->setPlaceholderText(tr("Filter jobs (name, state, backend)…"));
    filter_->setClearButtonEnabled(true);
    connect(filter_, &QLineEdit::textChanged, proxy_, &QSortFilterProxyModel::setFilterFixedString);

    backends_model_ = new BackendTableModel(this);
    backends_view_ = new QTableView;
    backends_view_->setModel(backends_model_);
    backends_view_->verticalHeader()->hide();
    backends_view_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    backends_view_->horizontalHeader()->setStretchLastSection(true);
    backends_view_->setSelectionMode(QAbstractItemView::NoSelection);
    backends_view_->setMaximumHeight(110);
    alerts_ = new QListWidget;
    alerts_->setMaximumHeight(110);

    auto* left = new QWidget;
    auto* left_layout = new QVBoxLayout(left);
    left_layout->setContentsMargins(0, 0, 0, 0);
    left_layout->addWidget(filter_);
    left_layout->addWidget(table_, 1);
    left_layout->addWidget(new QLabel(tr("<b>Backends</b>")));
    left_layout->addWidget(backends_view_);
    left_layout->addWidget(new QLabel(tr("<b>Alerts</b>")));
    left_layout->addWidget(alerts_);

    detail_ = new JobDetailView(catalog_path);
    auto* splitter = new QSplitter;
    splitter->addWidget(left);
    splitter->addWidget(detail_);
    splitter->setSizes({620, 780});
    dataset_sync_ = new DatasetSync(sync.writer(), catalog_path, this);
    controller_ = new JobController(
        *dataset_sync_,
        [this](const QString& version) {
            DatasetTableModel& model = datasets_->model();
            model.refresh();
            const int row = model.rowOfVersion(version);
            return row < 0 ? QString() : model.data(model.index(row, 0), DatasetTableModel::RootRole).toString();
        },
        this);
    connect(controller_, &JobController::problem, this, &MainWindow::addAlert);
    datasets_ = new DatasetsView(catalog_path, *dataset_sync_, *controller_);
    connect(dataset_sync_, &DatasetSync::failed, this, &MainWindow::addAlert);
    migrator_ = new JobMigrator(catalog_path, sync.writer(), *controller_, this);
    connect(migrator_, &JobMigrator::workerLost, this, [this](const QString&, const QString& message) {
        addAlert(message);
        refresh();
    });
    connect(migrator_, &JobMigrator::workerBack, this, [this](const QString& name) {
        addAlert(tr("Worker %1 answers again; copies of jobs moved away from it are cancelled there").arg(name));
    });
    connect(migrator_, &JobMigrator::jobMoved, this, [this](qint64 job, const QString& from, const QString& to) {
        addAlert(tr("job %1 moved from lost worker %2 to %3; it continues from its last checkpoint").arg(job).arg(from, to));
        refresh();
    });
    connect(migrator_, &JobMigrator::problem, this, &MainWindow::addAlert);
    tabs_ = new QTabWidget;
    tabs_->addTab(splitter, tr("Jobs"));
    tabs_->addTab(datasets_, tr("Datasets"));
    setCentralWidget(tabs_);

    QToolBar* tools = addToolBar(tr("Jobs"));
    tools->setMovable(false);
    tools->addAction(tr("New job…"), this, [this] {
        NewJobDialog dialog(this);
        dialog.setBackends(backendNames());
        dialog.setDatasets(datasetChoices());
        if (dialog.exec() == QDialog::Accepted)
            submitDialog(dialog);
    });
    tools->addAction(tr("Demo MLP"), this, [this] { submitDemo("mlp"); });
    tools->addAction(tr("Demo CNN"), this, [this] { submitDemo("cnn"); });
    tools->addSeparator();
    tools->addAction(tr("Clone and edit…"), this, &MainWindow::cloneSelected);
    tools->addSeparator();
    tools->addAction(tr("Export model…"), this, [this] { exportSelected(); });
    tools->addSeparator();
    tools->addAction(tr("Add remote worker…"), this, &MainWindow::addRemoteWorkerRequested);
    tools->addAction(tr("Cancel job"), this, &MainWindow::cancelSelected);
    tools->addAction(tr("Resume job"), this, &MainWindow::resumeSelected);

    connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& current) {
        if (!current.isValid())
            return;
        const QModelIndex source = proxy_->mapToSource(current);
        detail_->showJob(jobs_->data(source, JobTableModel::JobIdRole).toLongLong(),
                         jobs_->data(jobs_->index(source.row(), JobTableModel::Name), Qt::DisplayRole).toString());
    });
    connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] {
        QList<QPair<qint64, QString>> others;
        for (const QModelIndex& row : table_->selectionModel()->selectedRows()) {
            const QModelIndex source = proxy_->mapToSource(row);
            others.push_back({jobs_->data(source, JobTableModel::JobIdRole).toLongLong(),
                              jobs_->data(jobs_->index(source.row(), JobTableModel::Name), Qt::DisplayRole).toString()});
        }
        detail_->setOverlays(others.size() > 1 ? others : QList<QPair<qint64, QString>>());
    });
    // Alerts from the jobs (NaN loss, failure, budget 80 %/100 %, idle): a row here and a desktop notification.
    if (QSystemTrayIcon::isSystemTrayAvailable()) {
        tray_ = new QSystemTrayIcon(style()->standardIcon(QStyle::SP_ComputerIcon), this);
        tray_->setToolTip(tr("TrainDeck"));
        tray_->show();
    }
    addBackend(QStringLiteral("local"), sync, backend);
    refresh_timer_ = new QTimer(this);
    connect(refresh_timer_, &QTimer::timeout, this, &MainWindow::updateResources);
    refresh_timer_->start(5000);
    updateResources();

    jobs_->refresh();
    proxy_->sort(-1);
    if (proxy_->rowCount() > 0)
        selectRow(0);
    statusBar()->showMessage(backend.describe());
    resize(1400, 860);
}

void MainWindow::selectRow(int row) { table_->selectRow(row); }

void MainWindow::connectSync(JobSync& sync) {
    connect(&sync, &JobSync::catalogChanged, this, [this] {
        // Many batches a second can arrive; redraw at most 5 times a second.
        if (!refresh_pending_) {
            refresh_pending_ = true;
            QTimer::singleShot(200, this, &MainWindow::refresh);
        }
    });
    connect(&sync, &JobSync::failed, this, &MainWindow::addAlert);
    // The catalog's writer says when it cannot write (a full disk): it keeps the work and retries; the user is told.
    QPointer<MainWindow> self(this);
    CatalogWriter& writer = sync.writer();
    writer.on_error([self](const std::string& error) {
        QMetaObject::invokeMethod(self, [self, error] {
            if (self)
                self->addAlert(error.empty() ? tr("The catalog takes writes again; nothing was lost")
                                             : QString::fromStdString(error));
        }, Qt::QueuedConnection);
    });
    connect(this, &QObject::destroyed, [&writer] { writer.on_error({}); });
    connect(&sync, &JobSync::alertRaised, this, [this](qint64 job, const QString& kind, const QString& message) {
        addAlert(tr("job %1 — %2: %3").arg(job).arg(kind, message));
        if (tray_)
            tray_->showMessage(tr("TrainDeck: %1").arg(kind), message,
                               kind == "failed" || kind == "nan_loss" ? QSystemTrayIcon::Critical : QSystemTrayIcon::Warning);
    });
    connect(&sync, &JobSync::submitted, this, [this](qint64) {
        refresh();
        if (proxy_->rowCount() > 0)
            selectRow(0);
    });
}

void MainWindow::addBackend(const QString& name, JobSync& sync, Backend& backend) {
    controller_->add(name, sync, backend);
    datasets_->refreshBackends();
    connectSync(sync);
    updateResources();
    // What the backend had to do to connect that the user must hear of (a port another program holds, ...).
    if (const QString notice = backend.attachNotice(); !notice.isEmpty())
        addAlert(tr("%1: %2").arg(name, notice));
}

QStringList MainWindow::alerts() const {
    QStringList list;
    for (int row = 0; row < alerts_->count(); ++row)
        list << alerts_->item(row)->text();
    return list;
}

QStringList MainWindow::backendNames() const { return controller_->names(); }

QModelIndex MainWindow::currentJob() const { return proxy_->mapToSource(table_->currentIndex()); }

JobController::Job MainWindow::jobAt(const QModelIndex& source) const {
    return {jobs_->data(source, JobTableModel::JobIdRole).toLongLong(),
            jobs_->data(source, JobTableModel::BackendRole).toString(),
            jobs_->data(source, JobTableModel::RemoteIdRole).toString()};
}

void MainWindow::refresh() {
    refresh_pending_ = false;
    jobs_->refresh();
    detail_->refresh();
    // A catalog that cannot be read (damaged, or changed under us) is said once per new message, not per refresh.
    for (const QString& error : {jobs_->error(), detail_->error()})
        if (!error.isEmpty() && error != last_catalog_error_) {
            last_catalog_error_ = error;
            addAlert(tr("The catalog could not be read: %1. Close the console and check the file (or restore a backup)").arg(error));
        }
}

void MainWindow::addAlert(const QString& message) {
    alerts_->insertItem(0, QTime::currentTime().toString("HH:mm:ss  ") + message);
    statusBar()->showMessage(message, 10000);
}

void MainWindow::submitDemo(const QString& model) {
    QFile file(QStringLiteral(":/examples/fashion-%1.json").arg(model));
    file.open(QIODevice::ReadOnly);
    QJsonObject spec = QJsonDocument::fromJson(file.readAll()).object();
    const QString name = spec.value("name").toString(model);
    const QJsonObject request{{"name", name}, {"builtin", spec},
                              {"resources", QJsonObject{{"cpus", 2}}}, {"max_restarts", 2}};
    controller_->backends().front().sync->submit(name, request);
}

void MainWindow::cancelSelected() {
    if (const QModelIndex current = currentJob(); current.isValid())
        controller_->cancel(jobAt(current));
}

void MainWindow::submitDialog(const NewJobDialog& dialog) {
    const JobForm form = dialog.form();
    QJsonObject request;
    QString why;
    if (!job_request(form, &request, &why)) {
        addAlert(tr("Not submitted: %1").arg(why));
        return;
    }
    controller_->submit(dialog.backendName(), job_form_name(form), request);
}

QList<QPair<QString, QString>> MainWindow::datasetChoices() {
    DatasetTableModel& model = datasets_->model();
    model.refresh();
    QList<QPair<QString, QString>> list;
    for (int row = 0; row < model.rowCount(); ++row) {
        const QModelIndex index = model.index(row, 0);
        list.push_back({QString("%1 · %2 · %3").arg(model.data(index, DatasetTableModel::NameRole).toString(),
                                                     model.data(model.index(row, DatasetTableModel::Version), Qt::DisplayRole).toString(),
                                                     model.data(model.index(row, DatasetTableModel::Size), Qt::DisplayRole).toString()),
                        model.data(index, DatasetTableModel::VersionRole).toString()});
    }
    return list;
}

ExportDialog* MainWindow::exportSelected() {
    const QModelIndex current = currentJob();
    if (!current.isValid()) {
        addAlert(tr("Select a job to export"));
        return nullptr;
    }
    const JobController::Job selected = jobAt(current);
    const std::optional<JobController::Connected> e = controller_->backendOf(selected);
    if (!e) {
        addAlert(tr("The job's backend is not connected"));
        return nullptr;
    }
    ExportDialog::Job job;
    job.id = selected.id;
    job.name = jobs_->data(jobs_->index(current.row(), JobTableModel::Name), Qt::DisplayRole).toString();
    job.remote_id = selected.remote_id;
    job.request = QJsonDocument::fromJson(reader_.jobRequest(job.id)).object();
    if (const QString version = job.request.value("dataset").toString(); !version.isEmpty()) {
        const int row = datasets_->model().rowOfVersion(version);
        if (row >= 0)
            job.dataset_root = datasets_->model().data(datasets_->model().index(row, 0), DatasetTableModel::RootRole).toString();
    }
    const QString dir = QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation) +
                        QString("/traindeck/exports/job-%1").arg(job.id);
    auto* dialog = new ExportDialog(job, *e->backend, dir, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    JobSync* sync = e->sync;
    connect(dialog, &ExportDialog::exported, this, [this, sync](qint64 id, const QJsonObject& report) {
        sync->recordArtifacts(id, report);
        if (report.value("accuracy_warning").toBool())
            addAlert(tr("job %1 — export: %2").arg(id).arg(report.value("warning").toString()));
    });
    dialog->show();
    return dialog;
}

void MainWindow::registerFashionMnist() {
    if (datasets_->model().rowCount() == 0 && QFile::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"))
        datasets_->registerPath("/usr/share/datasets/fashion-mnist", "fashion-mnist");
}

void MainWindow::resumeSelected() {
    if (const QModelIndex current = currentJob(); current.isValid())
        controller_->resume(jobAt(current));
}

void MainWindow::cloneSelected() {
    const QModelIndex current = currentJob();
    if (!current.isValid())
        return;
    const QJsonObject request =
        QJsonDocument::fromJson(reader_.jobRequest(jobs_->data(current, JobTableModel::JobIdRole).toLongLong())).object();
    NewJobDialog dialog(this);
    dialog.setBackends(backendNames(), jobs_->data(current, JobTableModel::BackendRole).toString());
    dialog.load(request);
    dialog.setDatasets(datasetChoices());
    dialog.setWindowTitle(tr("Clone and edit “%1”").arg(request.value("name").toString()));
    if (dialog.exec() == QDialog::Accepted)
        submitDialog(dialog);
}

void MainWindow::updateResources() {
    // Each backend's /v1/resources, fetched off the GUI thread, lands in the backends model.
    struct Fetched {
        bool held = false; // false: let go of (the console is closing)
        QJsonObject resources;
        QString address, error;
    };
    for (const JobController::Connected& e : controller_->backends()) {
        const BackendRef ref = BackendRef::of(e.backend);
        run_in_background(this, [ref] {
            Fetched fetched;
            if (const BackendRef::Use backend = ref.use()) {
                fetched.held = true;
                fetched.resources = backend->resources(&fetched.error);
                fetched.address = backend->describe();
            }
            return fetched;
        }, [this, name = e.name](const Fetched& fetched) {
            if (fetched.held)
                backends_model_->update(name, fetched.address, fetched.resources, fetched.error);
        });
    }
}

} // namespace traindeck
