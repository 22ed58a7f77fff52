// MainWindow (mainwindow.h): wiring and small slots; every backend call goes to the network pool, every action on
// a job through the controller.
#include "mainwindow.h"

#include "background.h"
#include "aboutdialog.h"
#include "money.h"
#include "chartview.h"
#include "chartexport.h"
#include "compareview.h"
#include "groupchart.h"
#include "importdialog.h"
#include "instancesview.h"
#include "backendref.h"
#include "exportdialog.h"
#include "jobstate.h"
#include "modelmeta.h"
#include "imagefoldersurvey.h"
#include "newjobdialog.h"
#include "reproduce.h"
#include "reproducibilityview.h"
#include "resultsview.h"
#include "settingsdialog.h"
#include "sweepview.h"
#include "theme.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDate>
#include <QDateTime>
#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFile>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QJsonArray>
#include <QMenu>
#include <QMenuBar>
#include <QRegularExpression>
#include <QScopedValueRollback>
#include <QSettings>
#include <QToolButton>
#include <QHeaderView>
#include <QIcon>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QLocale>
#include <QMessageBox>
#include <QMimeData>
#include <QPainter>
#include <QPointer>
#include <QSplitter>
#include <QStandardPaths>
#include <QStatusBar>
#include <QStyle>
#include <QSystemTrayIcon>
#include <QTabWidget>
#include <QTableView>
#include <QThreadPool>
#include <QTimer>
#include <QToolBar>
#include <QVBoxLayout>

#include <algorithm>
#include <optional>
#include <tuple>

namespace traindeck {

namespace {

// An action greyed while `why` says something, its tip (the "tip" property make() keeps) ending in why it is greyed.
void enable_or_say_why(QAction* action, const QString& why) {
    const QString tip = action->property("tip").toString();
    action->setEnabled(why.isEmpty());
    action->setToolTip(why.isEmpty() ? tip : MainWindow::tr("%1 — %2").arg(tip, why));
    action->setStatusTip(action->toolTip());
}

} // namespace

MainWindow::MainWindow(const QString& catalog_path, JobSync& sync, Backend& backend, QWidget* parent)
    : QMainWindow(parent), writer_(sync.writer()), reader_(catalog_path) {
    setWindowTitle(tr("TrainDeck"));
    // Runs deleted in an earlier session (whose undo is gone with it) go for good now, with the console's checkpoint
    // copies (a later run may get a purged run's id).
    writer_.post([](Catalog& catalog) {
        for (const int64_t job : catalog.purge_deleted())
            QDir(JobSync::checkpointDir(job)).removeRecursively();
    });
    jobs_ = new JobTableModel(catalog_path, this);
    jobs_->setLoadDetailsInBackground(true); // the table paints at once; configs and summaries follow
    // New or changed runs may differ in new keys: "only what differs" follows them (not on every clock tick).
    connect(jobs_, &JobTableModel::runsChanged, this, &MainWindow::followDifferingKeys);

    table_ = new QTableView;
    table_->setModel(jobs_);
    table_->setSortingEnabled(true);
    table_->horizontalHeader()->setSortIndicator(-1, Qt::AscendingOrder); // newest first until a header is clicked
    // Config and summary columns are what a comparison reads first: they go right after the run's name.
    connect(jobs_, &QAbstractItemModel::modelReset, this, [this] {
        QHeaderView* header = table_->horizontalHeader();
        for (int i = 0; i < jobs_->extraColumns().size(); ++i)
            header->moveSection(header->visualIndex(JobTableModel::ColumnCount + i), 1 + i);
        // A reset shows every section again (setSectionHidden resizes one shown again: not the user's doing).
        const QScopedValueRollback not_the_user(fitting_columns_, true);
        for (int column = 0; column < JobTableModel::ColumnCount; ++column)
            header->setSectionHidden(column, hidden_columns_.contains(column));
    });
    table_->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(table_, &QWidget::customContextMenuRequested, this, &MainWindow::showTableMenu);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    // Several rows: the current one is shown, the others' loss curves are overlaid for comparison.
    table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
    table_->verticalHeader()->hide();
    // The figures take what they need and the name the rest (elided), so the table fits its width without scrolling
    // sideways until the figures alone do not fit.
    // A column the user drags keeps that width (here and at the next start); the others follow their contents
    // (fitColumns) until then, and the header's menu gives them back to their contents.
    table_->horizontalHeader()->setStretchLastSection(false);
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
    table_->horizontalHeader()->setSectionResizeMode(JobTableModel::Name, QHeaderView::Stretch);
    connect(table_->horizontalHeader(), &QHeaderView::sectionResized, this, [this](int column, int, int size) {
        if (!fitting_columns_ && column != JobTableModel::Name && size > 0)
            user_widths_.insert(columnKey(column), size);
    });
    // A double-click on a divider fits that column to its contents (QTableView, connected before this): it follows
    // them again from then on.
    connect(table_->horizontalHeader(), &QHeaderView::sectionHandleDoubleClicked, this,
            [this](int column) { user_widths_.remove(columnKey(column)); });
    fit_timer_ = new QTimer(this);
    fit_timer_->setSingleShot(true);
    connect(fit_timer_, &QTimer::timeout, this, &MainWindow::fitColumns);
    // New rows or another order: every column fitted again. Changed values (the clock's tick of elapsed times and
    // ETAs each second): a column grows for a wider value and never shrinks, so that nothing jitters.
    connect(jobs_, &QAbstractItemModel::modelReset, this, [this] { fitSoon(true); });
    connect(jobs_, &QAbstractItemModel::layoutChanged, this, [this] { fitSoon(true); });
    connect(jobs_, &QAbstractItemModel::rowsInserted, this, [this] { fitSoon(true); });
    connect(jobs_, &QAbstractItemModel::dataChanged, this, [this] { fitSoon(false); });
    // Sized from the rows in view and the next screenful (Qt's default reads 1,000 rows of every column on each
    // layout: 100 ms and more of a start on a catalog of 10,000 runs, tests/bench/console_startup).
    table_->horizontalHeader()->setResizeContentsPrecision(100);
    table_->horizontalHeader()->setMinimumSectionSize(48);
    table_->setWordWrap(false);
    table_->setAlternatingRowColors(true);
    table_->setAccessibleName(tr("Runs"));
    filter_ = new QLineEdit;
    filter_->setPlaceholderText(
        tr("Query runs: optimizer.lr < 0.01 and not tag:discarded, name ~ \"seed\", best.val/accuracy > 0.9…"));
    filter_->setClearButtonEnabled(true);
    filter_->setAccessibleName(tr("Query runs"));
    filter_->setToolTip(tr("Comparisons (== != < <= > >=), in [..], ~ regex, and/or/not, ( ), tag: state: backend: "
                           "archived: starred:, summaries (best.loss, last.val/accuracy), times (started > -2d)"));
    connect(filter_, &QLineEdit::textChanged, this, &MainWindow::setQuery);
    query_error_ = new QLabel;
    query_error_->setStyleSheet(QStringLiteral("color: #b3261e"));
    query_error_->setTextFormat(Qt::RichText);
    query_error_->hide();
    columns_button_ = new QToolButton;
    columns_button_->setText(tr("Columns"));
    columns_button_->setToolTip(tr("Add any config key or summary value as a column"));
    connect(columns_button_, &QToolButton::clicked, this, &MainWindow::showColumnsMenu);
    only_differing_ = new QAction(tr("Only what differs"), this);
    only_differing_->setCheckable(true);
    only_differing_->setToolTip(tr("Show as columns the config keys whose values differ among the runs shown"));
    connect(only_differing_, &QAction::toggled, this, &MainWindow::setOnlyDiffering);
    auto* differing_button = new QToolButton;
    differing_button->setDefaultAction(only_differing_);
    views_button_ = new QToolButton;
    views_button_->setText(tr("Views"));
    views_button_->setToolTip(tr("Saved views: a query with its columns and grouping"));
    views_button_->setPopupMode(QToolButton::InstantPopup);
    auto* views_menu = new QMenu(views_button_);
    views_button_->setMenu(views_menu);
    connect(views_menu, &QMenu::aboutToShow, this, [this, views_menu] {
        views_menu->clear();
        views_menu->addAction(tr("Save current view…"), this, [this] {
            bool ok = false;
            const QString name = QInputDialog::getText(this, tr("Save view"), tr("Name:"), QLineEdit::Normal, {}, &ok);
            if (ok && !name.trimmed().isEmpty())
                saveView(name.trimmed());
        });
        views_menu->addSeparator();
        for (const Catalog::SavedView& view : reader_.savedViews()) {
            const QString name = QString::fromStdString(view.name);
            QAction* apply = views_menu->addAction(name, this, [this, name] { applyView(name); });
            apply->setToolTip(QString::fromStdString(view.query));
        }
    });

    backends_model_ = new BackendTableModel(this);
    backends_view_ = new QTableView;
    backends_view_->setModel(backends_model_);
    backends_view_->verticalHeader()->hide();
    backends_view_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    backends_view_->horizontalHeader()->setStretchLastSection(true);
    // One backend at a time is chosen, for Remove backend… (the Backends menu, or right-click on it).
    backends_view_->setSelectionMode(QAbstractItemView::SingleSelection);
    backends_view_->setSelectionBehavior(QAbstractItemView::SelectRows);
    backends_view_->setMaximumHeight(110);
    backends_view_->setAccessibleName(tr("Backends"));
    instances_view_ = new InstancesView;
    connect(instances_view_, &InstancesView::releaseRequested, this, &MainWindow::releaseInstance);
    alerts_ = new QListWidget;
    alerts_->setAccessibleName(tr("Alerts"));
    alerts_->setMaximumHeight(110);

    auto* left = new QWidget;
    auto* left_layout = new QVBoxLayout(left);
    left_layout->setContentsMargins(0, 0, 0, 0);
    auto* query_row = new QHBoxLayout;
    query_row->addWidget(filter_, 1);
    query_row->addWidget(columns_button_);
    query_row->addWidget(differing_button);
    query_row->addWidget(views_button_);
    left_layout->addLayout(query_row);
    left_layout->addWidget(query_error_);
    left_layout->addWidget(table_, 1);
    left_layout->addWidget(new QLabel(tr("<b>Backends</b>")));
    left_layout->addWidget(backends_view_);
    left_layout->addWidget(instances_view_);
    left_layout->addWidget(new QLabel(tr("<b>Alerts</b>")));
    left_layout->addWidget(alerts_);

    detail_ = new JobDetailView(catalog_path);
    // The job view reads on a pool thread: what it could not read is said once its answer is drawn.
    connect(detail_, &JobDetailView::refreshed, this, [this] { sayCatalogError(detail_->error()); });
    reproducibility_ = new ReproducibilityView(catalog_path);
    connect(reproducibility_, &ReproducibilityView::reproduceRequested, this, &MainWindow::reproduceRun);
    job_tabs_ = new QTabWidget;
    job_tabs_->setObjectName("job_tabs");
    job_tabs_->setDocumentMode(true);
    results_ = new ResultsView(catalog_path);
    job_tabs_->addTab(detail_, tr("Curves"));
    job_tabs_->addTab(results_, tr("Results"));
    job_tabs_->addTab(reproducibility_, tr("Reproducibility"));
    connect(job_tabs_, &QTabWidget::currentChanged, this, [this] {
        if (job_tabs_->currentWidget() == reproducibility_)
            reproducibility_->refresh();
        if (job_tabs_->currentWidget() == results_)
            results_->refresh();
    });
    auto* splitter = new QSplitter;
    splitter->setObjectName("jobs_splitter");
    splitter->addWidget(left);
    splitter->addWidget(job_tabs_);
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
    groups_ = new GroupChart(catalog_path);
    compare_ = new CompareView;
    connect(compare_, &CompareView::brushChanged, this, [this](const QSet<qint64>& ids, bool active) {
        jobs_->setOnlyRuns(ids, active);
        followDifferingKeys();
    });
    auto* compare_split = new QSplitter(Qt::Vertical);
    compare_split->setObjectName("compare_splitter");
    compare_split->addWidget(groups_);
    compare_split->addWidget(compare_);
    compare_split->setSizes({540, 320});
    compare_tab_ = compare_split;
    tabs_ = new QTabWidget;
    tabs_->addTab(splitter, tr("Jobs"));
    tabs_->addTab(compare_tab_, tr("Compare"));
    tabs_->addTab(datasets_, tr("Datasets"));
    connect(tabs_, &QTabWidget::currentChanged, this, [this] {
        if (tabs_->currentWidget() == compare_tab_)
            updateCompare();
    });
    setCentralWidget(tabs_);

    // Sweeps (README: Sweeps): their tab, and "New sweep…" beside "New job…". The view keeps a SweepSync for each
    // backend the controller has, which imports the trials as runs of this table.
    sweeps_ = new SweepView(catalog_path, *controller_);
    tabs_->addTab(sweeps_, tr("Sweeps"));
    connect(sweeps_, &SweepView::problem, this, &MainWindow::addAlert);
    createActions();
    readableIcons();

    // What an empty table says: how to start (no runs yet), or that the query shows none of them.
    empty_ = new QWidget;
    auto* empty_layout = new QVBoxLayout(empty_);
    empty_text_ = new QLabel;
    empty_text_->setAlignment(Qt::AlignCenter);
    empty_text_->setWordWrap(true);
    empty_layout->addStretch(1);
    empty_layout->addWidget(empty_text_);
    auto* empty_buttons = new QHBoxLayout;
    empty_buttons->addStretch(1);
    for (const char* name : {"new_job", "demo_mlp"}) {
        auto* button = new QToolButton;
        button->setDefaultAction(action(QLatin1String(name)));
        button->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
        empty_buttons->addWidget(button);
        empty_button_list_ << button;
    }
    empty_buttons->addStretch(1);
    empty_layout->addLayout(empty_buttons);
    empty_layout->addStretch(2);
    if (auto* left_layout = qobject_cast<QVBoxLayout*>(table_->parentWidget()->layout()))
        left_layout->insertWidget(left_layout->indexOf(table_) + 1, empty_, 1);
    connect(jobs_, &QAbstractItemModel::modelReset, this, &MainWindow::updateEmptyState);
    connect(jobs_, &QAbstractItemModel::rowsInserted, this, &MainWindow::updateEmptyState);
    connect(jobs_, &QAbstractItemModel::rowsRemoved, this, &MainWindow::updateEmptyState);
    connect(jobs_, &QAbstractItemModel::layoutChanged, this, &MainWindow::updateEmptyState);

    connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& current) {
        if (!current.isValid())
            return;
        detail_->showJob(jobs_->data(current, JobTableModel::JobIdRole).toLongLong(),
                         jobs_->data(jobs_->index(current.row(), JobTableModel::Name), Qt::DisplayRole).toString());
        const RunRecord* run = jobs_->runAt(current.row());
        detail_->setNote(run ? QString::fromStdString(run->note) : QString());
        reproducibility_->showJob(jobs_->data(current, JobTableModel::JobIdRole).toLongLong());
        results_->showJob(jobs_->data(current, JobTableModel::JobIdRole).toLongLong());
    });
    connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] {
        QList<QPair<qint64, QString>> others;
        for (const QModelIndex& row : table_->selectionModel()->selectedRows())
            others.push_back({jobs_->data(row, JobTableModel::JobIdRole).toLongLong(),
                              jobs_->data(jobs_->index(row.row(), JobTableModel::Name), Qt::DisplayRole).toString()});
        detail_->setOverlays(others.size() > 1 ? others : QList<QPair<qint64, QString>>());
    });
    // Alerts from the jobs (NaN loss, failure, budget 80 %/100 %, idle): a row here and a desktop notification.
    if (QSystemTrayIcon::isSystemTrayAvailable()) {
        const QIcon app_icon = QApplication::windowIcon();
        tray_ =
            new QSystemTrayIcon(app_icon.isNull() ? style()->standardIcon(QStyle::SP_ComputerIcon) : app_icon, this);
        tray_->setToolTip(tr("TrainDeck"));
        auto* tray_menu = new QMenu(this);
        // The menu's first line says what the tooltip says (where a desktop shows no tooltips on the tray).
        tray_status_ = tray_menu->addAction(tr("No job running"));
        tray_status_->setEnabled(false);
        tray_menu->addSeparator();
        tray_menu->addAction(tr("Show TrainDeck"), this, [this] {
            showNormal();
            raise();
            activateWindow();
        });
        tray_menu->addAction(action("new_job"));
        tray_menu->addSeparator();
        tray_menu->addAction(action("quit"));
        tray_->setContextMenu(tray_menu);
        connect(tray_, &QSystemTrayIcon::activated, this, [this](QSystemTrayIcon::ActivationReason reason) {
            if (reason == QSystemTrayIcon::Trigger) {
                showNormal();
                raise();
                activateWindow();
            }
        });
        tray_->show();
    }
    today_ = new QLabel;
    today_->setObjectName(QStringLiteral("today"));
    today_->setToolTip(tr("Jobs running now, and what every run spent since midnight (by its spend telemetry)"));
    statusBar()->addPermanentWidget(today_);
    addBackend(QStringLiteral("local"), sync, backend);
    // A local worker started again (it had ended; the console starts it with the arguments of its own start) is
    // given Settings' prices and idle alert again.
    connect(&backend, &Backend::connectionChanged, this, [this](bool up, const QString&) {
        if (up && settings_applied_ && settings_.policy_set)
            pushLocalPolicy();
    });
    refresh_timer_ = new QTimer(this);
    connect(refresh_timer_, &QTimer::timeout, this, &MainWindow::updateResources);
    refresh_timer_->start(5000);
    updateResources();
    follow_timer_ = new QTimer(this);
    connect(follow_timer_, &QTimer::timeout, jobs_, &JobTableModel::poll);
    follow_timer_->start(1000);
    connect(jobs_, &JobTableModel::runsChanged, this, &MainWindow::watchNewRuns);
    setAcceptDrops(true);

    jobs_->refresh();
    if (jobs_->rowCount() > 0)
        selectRow(0);
    statusBar()->showMessage(backend.describe());
    resize(1400, 860);
    applySettings(ConsoleSettings::load(QSettings()));
    restoreLayout();
    updateEmptyState();
}

void MainWindow::selectRow(int row) { table_->selectRow(row); }

void MainWindow::scheduleRefresh() {
    // Many batches (or imported runs) a second can arrive; redraw at most 5 times a second.
    if (!refresh_pending_) {
        refresh_pending_ = true;
        QTimer::singleShot(200, this, &MainWindow::refresh);
    }
}

void MainWindow::watchNewRuns() {
    QSet<qint64> active;
    for (int row = 0; row < jobs_->rowCount(); ++row)
        if (const RunRecord* run = jobs_->runAt(row); run && !is_finished_in_catalog(run->state))
            active.insert(run->id);
    const bool fresh = !(active - active_runs_).isEmpty();
    active_runs_ = std::move(active);
    if (fresh)
        for (const JobController::Connected& connected : controller_->backends())
            connected.sync->resumeWatching(); // watching a watched job does nothing
}

ImportDialog* MainWindow::importPaths(const QStringList& paths) {
    auto* dialog = new ImportDialog(writer_, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &ImportDialog::imported, this, &MainWindow::scheduleRefresh);
    dialog->show();
    if (!paths.isEmpty()) {
        dialog->setPaths(paths);
        dialog->startImport();
    }
    return dialog;
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    // Local files and folders only (a logdir, mlruns/, wandb/, metric files): they import.
    const QList<QUrl> urls = event->mimeData()->urls();
    if (!urls.isEmpty() && std::all_of(urls.begin(), urls.end(), [](const QUrl& url) { return url.isLocalFile(); }))
        event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
    QStringList paths;
    for (const QUrl& url : event->mimeData()->urls())
        if (url.isLocalFile())
            paths << url.toLocalFile();
    if (paths.isEmpty())
        return;
    event->acceptProposedAction();
    if (paths.size() == 1)
        dropPath(paths.front());
    else
        importPaths(paths);
}

void MainWindow::dropPath(const QString& dropped, const std::function<void(NewJobDialog*)>& opened) {
    const QString path = QDir::cleanPath(dropped); // a folder URL may end in "/": its name is the last part
    run_in_background(
        this, [path] { return survey_image_folder(path); },
        [this, path, opened](const ImageFolderSurvey& survey) {
            if (survey.image_folder) {
                trainOnImageFolder(path, survey, opened);
                return;
            }
            importPaths({path});
            if (opened)
                opened(nullptr);
        });
}

void MainWindow::trainOnImageFolder(const QString& root, const ImageFolderSurvey& survey,
                                    const std::function<void(NewJobDialog*)>& opened) {
    const QString name = QFileInfo(root).fileName();
    // One dropped folder at a time: its answer is recognised by its name, so a second would take the first's.
    if (!pending_drop_.isEmpty() || dataset_sync_->busy()) {
        addAlert(tr("%1: not registered — busy with %2; drop it again when that is done")
                     .arg(name, pending_drop_.isEmpty() ? tr("another dataset") : pending_drop_));
        if (opened)
            opened(nullptr);
        return;
    }
    addAlert(tr("%1: %2 images in %3 classes — registering it as a dataset, then New job opens on it")
                 .arg(name)
                 .arg(survey.images)
                 .arg(survey.classes.size()));
    // One registration, one answer: the connection goes once it has heard of this name (or of a failure).
    auto registered = std::make_shared<QMetaObject::Connection>();
    auto failed = std::make_shared<QMetaObject::Connection>();
    *registered = connect(dataset_sync_, &DatasetSync::registered, this,
                          [this, name, survey, opened, registered, failed](const QString& got, const QString& version) {
                              if (got != name)
                                  return;
                              disconnect(*registered);
                              disconnect(*failed);
                              pending_drop_.clear();
                              auto* dialog = new NewJobDialog(this);
                              dialog->setAttribute(Qt::WA_DeleteOnClose);
                              dialog->setBackends(backendNames(), settings_.default_backend);
                              const JobForm form = image_folder_job_form(survey, name, version);
                              dialog->load(job_form_request(form));
                              QList<QPair<QString, QString>> choices = datasetChoices();
                              if (std::none_of(choices.begin(), choices.end(),
                                               [&](const auto& choice) { return choice.second == version; }))
                                  choices.push_back({tr("%1 (just registered)").arg(name), version});
                              dialog->setDatasets(choices);
                              dialog->setWindowTitle(tr("New job on %1").arg(name));
                              connect(dialog, &QDialog::accepted, this, [this, dialog] { submitDialog(*dialog); });
                              dialog->show();
                              if (opened)
                                  opened(dialog);
                          });
    // While this registration runs nothing else may start (DatasetSync is busy), so a failure now is its failure.
    *failed = connect(dataset_sync_, &DatasetSync::failed, this, [this, registered, failed, opened](const QString&) {
        disconnect(*registered);
        disconnect(*failed);
        pending_drop_.clear();
        if (opened)
            opened(nullptr);
    });
    pending_drop_ = name;
    if (!datasets_->registerPath(root, name)) {
        disconnect(*registered);
        disconnect(*failed);
        pending_drop_.clear();
        addAlert(tr("%1: not registered — busy with another dataset; drop it again when that is done").arg(name));
        if (opened)
            opened(nullptr);
    }
}

void MainWindow::connectSync(JobSync& sync) {
    connect(&sync, &JobSync::catalogChanged, this, &MainWindow::scheduleRefresh);
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
        // The kind in words ("budget_80" is the budget warning at whatever share the policy names).
        const QString what = kind == "budget_80"    ? tr("budget warning")
                             : kind == "budget_100" ? tr("budget reached")
                             : kind == "nan_loss"   ? tr("NaN loss")
                                                    : QString(kind).replace(QLatin1Char('_'), QLatin1Char(' '));
        addAlert(tr("job %1 — %2: %3").arg(job).arg(what, message));
        if (!settings_.notify)
            return;
        // A desktop notification where the tray takes them; elsewhere the window asks for attention (the task bar
        // entry flashes) and the row in Alerts says what happened.
        if (tray_ && QSystemTrayIcon::supportsMessages())
            tray_->showMessage(tr("TrainDeck: %1").arg(what), message,
                               kind == "failed" || kind == "nan_loss" ? QSystemTrayIcon::Critical
                                                                      : QSystemTrayIcon::Warning);
        else
            QApplication::alert(this);
    });
    connect(&sync, &JobSync::filesRemoved, this, [this, name = sync.backendName()](qint64 job, qint64 bytes) {
        addAlert(tr("run %1: its files on %2 are deleted (%3)").arg(job).arg(name, QLocale().formattedDataSize(bytes)));
    });
    connect(&sync, &JobSync::submitted, this, [this](qint64) {
        refresh();
        if (jobs_->rowCount() > 0)
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

QModelIndex MainWindow::currentJob() const { return table_->currentIndex(); }

JobController::Job MainWindow::jobAt(const QModelIndex& source) const {
    return {jobs_->data(source, JobTableModel::JobIdRole).toLongLong(),
            jobs_->data(source, JobTableModel::BackendRole).toString(),
            jobs_->data(source, JobTableModel::RemoteIdRole).toString()};
}

void MainWindow::refresh() {
    refresh_pending_ = false;
    jobs_->refresh();
    updateTray();
    updateEmptyState();
    if (const RunRecord* run = jobs_->runAt(table_->currentIndex().row()))
        detail_->setNote(QString::fromStdString(run->note));
    detail_->refresh();
    if (job_tabs_->currentWidget() == reproducibility_)
        reproducibility_->refresh(); // shown again only when something came (a capture, a checkpoint, an export)
    if (job_tabs_->currentWidget() == results_)
        results_->refresh(); // likewise: a new evaluation
    sayCatalogError(jobs_->error()); // the job view's, once its read is drawn (refreshed)
}

void MainWindow::sayCatalogError(const QString& error) {
    // A catalog that cannot be read (damaged, or changed under us) is said once per new message, not per refresh.
    if (error.isEmpty() || error == last_catalog_error_)
        return;
    last_catalog_error_ = error;
    addAlert(
        tr("The catalog could not be read: %1. Close the console and check the file (or restore a backup)").arg(error));
}

void MainWindow::addAlert(const QString& message) {
    alerts_->insertItem(0, QTime::currentTime().toString("HH:mm:ss  ") + message);
    statusBar()->showMessage(message, 10000);
}

void MainWindow::submitDemo(const QString& model) {
    QFile file(QStringLiteral(":/examples/fashion-%1.json").arg(model));
    if (!file.open(QIODevice::ReadOnly)) {
        addAlert(tr("The demo's spec %1 is not built into this program: %2").arg(file.fileName(), file.errorString()));
        return;
    }
    QJsonObject spec = QJsonDocument::fromJson(file.readAll()).object();
    const QString name = spec.value("name").toString(model);
    const QJsonObject request{{"name", name}, {"builtin", spec},
                              {"resources", QJsonObject{{"cpus", 2}}}, {"max_restarts", 2}};
    controller_->backends().front().sync->submit(name, request);
}

void MainWindow::cancelSelected() {
    // Every selected run still going (the current one when none is selected): what the action's state said.
    for (const QModelIndex& row : selectedRowsOrCurrent())
        if (const RunRecord* run = jobs_->runAt(row.row()); run && !is_finished_in_catalog(run->state))
            controller_->cancel(jobAt(row));
}

QModelIndexList MainWindow::selectedRowsOrCurrent() const {
    QModelIndexList rows = table_->selectionModel()->selectedRows();
    if (rows.isEmpty() && currentJob().isValid())
        rows << currentJob();
    return rows;
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
    // What the exported files say of where they came from (traindeck_provenance in their metadata).
    const QJsonObject capture = QJsonDocument::fromJson(reader_.capture(job.id).code).object().value("code").toObject();
    job.provenance = {{"run", job.id},
                      {"name", job.name},
                      {"backend", selected.backend},
                      {"remote_id", selected.remote_id},
                      {"dataset", job.request.value("dataset").toString()},
                      {"code_snapshot", capture.value("snapshot").toString()},
                      {"commit", capture.value("commit").toString()},
                      {"exported", QDateTime::currentDateTimeUtc().toString(Qt::ISODate)}};
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
    // Every selected run that can resume (stopped, cancelled or failed).
    for (const QModelIndex& row : selectedRowsOrCurrent())
        if (const RunRecord* run = jobs_->runAt(row.row()); run && is_finished(run->state) && run->state != "succeeded")
            controller_->resume(jobAt(row));
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
    updateTray(); // today's spend, also when nothing changed since midnight
    // Each backend's /v1/resources, fetched off the GUI thread, lands in the backends model.
    struct Fetched {
        bool held = false; // false: let go of (the console is closing)
        QJsonObject resources;
        QString address, error;
    };
    for (const JobController::Connected& e : controller_->backends()) {
        const BackendRef ref = BackendRef::of(e.backend);
        run_in_background(
            this,
            [ref] {
                Fetched fetched;
                if (const BackendRef::Use backend = ref.use()) {
                    fetched.held = true;
                    fetched.resources = backend->resources(&fetched.error);
                    fetched.address = backend->describe();
                }
                return fetched;
            },
            [this, name = e.name](const Fetched& fetched) {
                if (!fetched.held)
                    return;
                // Its runs' spend is written in what it charges in.
                // Not while it cannot be reached: its runs stay in the currency it said last.
                const QString before = backend_currency(name);
                if (fetched.error.isEmpty())
                    set_backend_currency(name,
                                         fetched.resources.value("prices").toObject().value("currency").toString());
                if (backend_currency(name) != before) {
                    table_->viewport()->update();
                    detail_->currencyChanged();
                }
                backends_model_->update(name, fetched.address, fetched.resources, fetched.error);
                instances_view_->update(name, fetched.resources);
            });
    }
}

void MainWindow::pushLocalPolicy() {
    // The local worker may have been running since before (it outlives the console): it is told now, not at its start.
    const std::optional<JobController::Connected> local = controller_->find(QStringLiteral("local"));
    if (!local)
        return;
    const BackendRef ref = BackendRef::of(local->backend);
    const QJsonObject policy = settings_.policy();
    run_in_background(
        this,
        [ref, policy] {
            QString error = tr("the console is closing");
            const BackendRef::Use backend = ref.use();
            return backend && backend->setPolicy(policy, &error) ? QString() : error;
        },
        [this](const QString& error) {
            if (!error.isEmpty())
                addAlert(tr("The local worker did not take the prices and idle alert of Settings: %1").arg(error));
            else
                updateResources(); // the backends table shows its price
        });
}

void MainWindow::releaseInstance(const QString& backend_name, const QString& instance) {
    const std::optional<JobController::Connected> connected = controller_->find(backend_name);
    if (!connected) {
        addAlert(tr("%1 is not connected: %2 was not released").arg(backend_name, instance));
        return;
    }
    statusBar()->showMessage(tr("Releasing %1…").arg(instance));
    const BackendRef ref = BackendRef::of(connected->backend);
    run_in_background(
        this,
        [ref, instance] {
            QString error = tr("the console is closing");
            const BackendRef::Use backend = ref.use();
            return backend && backend->releaseInstance(instance, &error) ? QString() : error;
        },
        [this, instance](const QString& error) {
            if (!error.isEmpty())
                addAlert(tr("%1 was not released: %2").arg(instance, error));
            else
                statusBar()->showMessage(tr("%1 released: deleted in its cloud").arg(instance), 5000);
            updateResources();
        });
}

void MainWindow::setQuery(const QString& text) {
    if (filter_->text() != text)
        filter_->setText(text); // comes back here through textChanged
    if (jobs_->setQuery(text)) {
        followDifferingKeys(); // the keys that differ among the runs now shown
        query_error_->hide();
        filter_->setStyleSheet({});
        return;
    }
    const QueryError& error = jobs_->queryError();
    // The parser counts UTF-8 bytes; the text is indexed in UTF-16 units (a non-ASCII character before the error
    // would move the underline and the column past it).
    const qsizetype position = QString::fromUtf8(text.toUtf8().left(static_cast<qsizetype>(error.position))).size();
    const QString before = text.left(position).toHtmlEscaped();
    const QString at = text.mid(position).toHtmlEscaped();
    query_error_->setText(tr("Column %1: %2 — <tt>%3<u><b>%4</b></u></tt> (the table shows the last valid query)")
                              .arg(position + 1)
                              .arg(QString::fromStdString(error.message).toHtmlEscaped(), before,
                                   at.isEmpty() ? QStringLiteral("&nbsp;") : at));
    query_error_->show();
    filter_->setStyleSheet(QStringLiteral("QLineEdit { border: 1px solid #b3261e; }"));
}

QString MainWindow::queryError() const { return query_error_->isVisible() ? query_error_->text() : QString(); }

void MainWindow::setOnlyDiffering(bool on) {
    if (only_differing_->isChecked() != on) {
        only_differing_->setChecked(on); // comes back here through toggled
        return;
    }
    // On: the differing keys, then what the user picked; off: what the user picked.
    QStringList columns = on ? jobs_->differingKeys() : QStringList();
    for (const QString& chosen : chosen_columns_)
        if (!columns.contains(chosen))
            columns << chosen;
    jobs_->setExtraColumns(columns);
}

bool MainWindow::onlyDiffering() const { return only_differing_->isChecked(); }

void MainWindow::followDifferingKeys() {
    if (only_differing_->isChecked())
        setOnlyDiffering(true);
}

void MainWindow::showColumnsMenu() {
    QMenu menu(this);
    const QStringList available = jobs_->availableColumns();
    if (available.isEmpty())
        menu.addAction(tr("The runs report no config or metrics yet"))->setEnabled(false);
    QMenu* summaries = nullptr;
    for (const QString& field : available) {
        const bool summary = field.startsWith("best.") || field.startsWith("last.") || field.startsWith("min.") ||
                             field.startsWith("max.");
        QMenu* into = &menu;
        if (summary) {
            if (!summaries)
                summaries = menu.addMenu(tr("Summaries"));
            into = summaries;
        }
        QAction* action = into->addAction(field);
        action->setCheckable(true);
        action->setChecked(jobs_->extraColumns().contains(field));
        connect(action, &QAction::toggled, this, [this, field](bool checked) { chooseColumn(field, checked); });
    }
    menu.addSeparator();
    menu.addAction(tr("Spend to reach…"), this, [this] {
        bool ok = false;
        const QString target =
            QInputDialog::getText(this, tr("Spend to reach"),
                                  tr("What each run had spent when a metric first reached a value, e.g. "
                                     "val/accuracy >= 0.9 or loss <= 0.3:"),
                                  QLineEdit::Normal, QStringLiteral("val/accuracy >= 0.9"), &ok);
        if (ok)
            addSpendToReachColumn(target);
    });
    menu.exec(columns_button_->mapToGlobal(QPoint(0, columns_button_->height())));
}

bool MainWindow::addSpendToReachColumn(const QString& target) {
    static const QRegularExpression pattern(QStringLiteral(R"(^\s*(\S+?)\s*(>=|<=)\s*(\S+)\s*$)"));
    const QRegularExpressionMatch match = pattern.match(target);
    const QString field =
        match.hasMatch()
            ? QStringLiteral("spend to reach %1 %2 %3").arg(match.captured(1), match.captured(2), match.captured(3))
            : QString();
    if (!JobTableModel::parseSpendToReach(field)) {
        addAlert(tr("“%1” is not a target like val/accuracy >= 0.9 (a series, >= or <=, a number)").arg(target));
        return false;
    }
    chooseColumn(field, true);
    return true;
}

void MainWindow::chooseColumn(const QString& field, bool shown) {
    // The user's choice outlives "only what differs" turning the differing keys on and off.
    QStringList columns = jobs_->extraColumns();
    for (QStringList* list : {&chosen_columns_, &columns}) {
        if (!shown)
            list->removeAll(field);
        else if (!list->contains(field))
            *list << field;
    }
    jobs_->setExtraColumns(columns);
}

QList<qint64> MainWindow::selectedIds() const {
    QList<qint64> ids;
    for (const QModelIndex& row : table_->selectionModel()->selectedRows())
        ids << jobs_->data(row, JobTableModel::JobIdRole).toLongLong();
    if (ids.isEmpty() && table_->currentIndex().isValid())
        ids << jobs_->data(table_->currentIndex(), JobTableModel::JobIdRole).toLongLong();
    return ids;
}

void MainWindow::writeRuns(const QList<qint64>& ids, std::function<void(Catalog&, int64_t)> fn) {
    if (ids.isEmpty()) {
        addAlert(tr("Select one or more runs first"));
        return;
    }
    writer_.post([ids, fn = std::move(fn)](Catalog& catalog) {
        for (const qint64 id : ids)
            fn(catalog, id);
    });
    CatalogWriter* writer = &writer_;
    run_in_background(
        this, [writer] { return QString::fromStdString(writer->flush()); },
        [this](const QString& error) {
            if (!error.isEmpty())
                addAlert(error);
            refresh();
        });
}

void MainWindow::tagSelected(const QStringList& tags, bool add) {
    std::vector<std::string> list;
    for (const QString& tag : tags)
        list.push_back(tag.toStdString());
    writeRuns(selectedIds(), [list, add](Catalog& catalog, int64_t id) {
        if (add)
            catalog.add_tags(id, list);
        else
            catalog.remove_tags(id, list);
    });
}

void MainWindow::starSelected(bool starred) {
    writeRuns(selectedIds(), [starred](Catalog& catalog, int64_t id) { catalog.set_starred(id, starred); });
}

void MainWindow::archiveSelected(bool archived) {
    // As with Delete, a run still going stays in view: archived (hidden), it would train and spend unseen.
    QList<qint64> ids;
    QStringList active;
    for (const qint64 id : selectedIds()) {
        const RunRecord* run = jobs_->runById(id);
        if (archived && run && !is_finished_in_catalog(run->state))
            active << QString::fromStdString(run->name);
        else
            ids << id;
    }
    if (!active.isEmpty())
        addAlert(tr("Not archived, still active (cancel first): %1").arg(active.join(QStringLiteral(", "))));
    if (!ids.isEmpty())
        writeRuns(ids, [archived](Catalog& catalog, int64_t id) { catalog.set_archived(id, archived); });
}

void MainWindow::setNoteOfCurrent(const QString& note) {
    const QModelIndex current = currentJob();
    if (!current.isValid())
        return;
    writeRuns({jobs_->data(current, JobTableModel::JobIdRole).toLongLong()},
              [note = note.toStdString()](Catalog& catalog, int64_t id) { catalog.set_note(id, note); });
}

void MainWindow::deleteSelected(bool with_files) {
    const QList<qint64> selected = selectedIds();
    if (selected.isEmpty()) {
        addAlert(tr("Select one or more runs first"));
        return;
    }
    // A run still going is left whole: hidden, it would keep training (and spending) unseen, and the next start's
    // purge would forget it while it runs; and a worker deletes only the files of what has finished.
    QStringList active;
    QList<qint64> ids;
    for (const qint64 id : selected) {
        const int row = jobs_->rowOf(id);
        const RunRecord* run = jobs_->runAt(row);
        if (!run)
            continue;
        if (!is_finished_in_catalog(run->state)) {
            active << QString::fromStdString(run->name);
            continue;
        }
        ids << id;
        if (with_files)
            controller_->removeFiles(jobAt(jobs_->index(row, 0)));
    }
    if (!active.isEmpty())
        addAlert(tr("Not deleted, still active (cancel first): %1").arg(active.join(QStringLiteral(", "))));
    if (ids.isEmpty())
        return;
    deletions_.push_back(ids);
    writeRuns(ids, [](Catalog& catalog, int64_t id) { catalog.set_deleted(id, true); });
    addAlert(with_files ? tr("%n run(s) deleted with their files on the worker — Undo delete (Ctrl+Z) brings back "
                             "their records and curves, not the files",
                             nullptr, static_cast<int>(ids.size()))
                        : tr("%n run(s) deleted — Undo delete (Ctrl+Z) brings them back until the console closes",
                             nullptr, static_cast<int>(ids.size())));
}

void MainWindow::undoDelete() {
    if (deletions_.empty()) {
        addAlert(tr("Nothing deleted to undo"));
        return;
    }
    // The most recent deletion first: Ctrl+Z again walks further back, as far as the session's first.
    const QList<qint64> ids = std::move(deletions_.back());
    deletions_.pop_back();
    writeRuns(ids, [](Catalog& catalog, int64_t id) { catalog.set_deleted(id, false); });
    addAlert(deletions_.empty() ? tr("%n run(s) restored", nullptr, static_cast<int>(ids.size()))
                                : tr("%n run(s) restored — Undo delete again for the deletion before", nullptr,
                                     static_cast<int>(ids.size())));
}

void MainWindow::showTableMenu(const QPoint& at) {
    const QModelIndex index = table_->indexAt(at);
    if (index.isValid() && !table_->selectionModel()->isRowSelected(index.row(), {}))
        table_->selectRow(index.row());
    const RunRecord* run = index.isValid() ? jobs_->runAt(index.row()) : nullptr;
    // The same actions as the Edit and Jobs menus (their shortcuts shown), and the run's own tags to remove.
    QMenu menu(this);
    menu.setToolTipsVisible(true); // a greyed entry says why on hover
    menu.addActions({action("star"), action("unstar"), action("add_tag")});
    if (run && !run->tags.empty()) {
        QMenu* remove = menu.addMenu(tr("Remove tag"));
        for (const std::string& tag : run->tags) {
            const QString name = QString::fromStdString(tag);
            remove->addAction(name, this, [this, name] { tagSelected({name}, false); });
        }
    }
    menu.addAction(action("note"));
    menu.addSeparator();
    menu.addAction(run && run->archived ? action("unarchive") : action("archive"));
    menu.addActions({action("delete"), action("delete_with_files")});
    menu.addSeparator();
    menu.addActions({action("clone"), action("cancel"), action("resume"), action("rerun"), action("export_model")});
    menu.addSeparator();
    menu.addActions({action("compare_selected"), action("export_series")});
    QMenu* export_runs = menu.addMenu(tr("Export runs as"));
    export_runs->addActions(
        {action("export_runs_csv"), action("export_runs_jsonl"), action("export_runs_tensorboard")});
    menu.exec(table_->viewport()->mapToGlobal(at));
}

std::vector<RunRecord> MainWindow::compareRuns() const {
    std::vector<RunRecord> runs;
    // Brushed, the table shows only the runs inside the brushes: comparing those would shrink the comparison and
    // drop the brushes (their axes' ranges change). The comparison keeps its runs; the brushes narrow the table.
    if (jobs_->onlyRunsActive()) {
        if (compared_selection_.isEmpty()) {
            for (const RunRecord* run : jobs_->queriedRuns())
                runs.push_back(*run);
        } else {
            for (const qint64 id : compared_selection_)
                if (const RunRecord* run = jobs_->runById(id))
                    runs.push_back(*run);
        }
        return runs;
    }
    const QModelIndexList rows = table_->selectionModel()->selectedRows();
    if (rows.size() >= 2) {
        for (const QModelIndex& row : rows)
            if (const RunRecord* run = jobs_->runAt(row.row()))
                runs.push_back(*run);
    } else {
        for (const RunRecord* run : jobs_->visibleRuns())
            runs.push_back(*run);
    }
    return runs;
}

void MainWindow::updateCompare() {
    if (!jobs_->onlyRunsActive()) {
        compared_selection_.clear();
        if (const QModelIndexList rows = table_->selectionModel()->selectedRows(); rows.size() >= 2)
            for (const QModelIndex& row : rows)
                compared_selection_ << jobs_->data(row, JobTableModel::JobIdRole).toLongLong();
    }
    std::vector<RunRecord> runs = compareRuns();
    // The Environment tab's captures, read off the GUI thread (the first 50 runs: a wider diff is unreadable).
    QList<CompareView::CapturedRun> wanted;
    QHash<qint64, QString> backends; // run -> its backend's name (where its code snapshot is)
    for (const RunRecord& run : runs)
        if (wanted.size() < 50) {
            wanted.push_back({run.id, QString::fromStdString(run.name), {}, {}});
            backends.insert(run.id, QString::fromStdString(run.backend));
        }
    const int generation = ++compare_captures_generation_;
    run_in_background(
        this,
        [path = QString::fromStdString(reader_.path()), wanted]() mutable {
            CatalogReader reader(path);
            for (CompareView::CapturedRun& run : wanted) {
                const CatalogReader::RunCapture capture = reader.capture(run.job);
                run.code = capture.code;
                run.environment = capture.environment;
            }
            return wanted;
        },
        [this, generation, backends](const QList<CompareView::CapturedRun>& captured) {
            if (generation != compare_captures_generation_)
                return;
            compare_->setCaptures(captured);
            showCodeDiff(captured, backends, generation);
        },
        QThreadPool::globalInstance());
    compare_->setRuns(runs);
    groups_->setRuns(std::move(runs));
}

namespace {

// A saved view names the group chart's x-axis and band by these words, not by the enums' numbers.
const std::pair<const char*, XAxis> kSavedXAxes[] = {{"step", XAxis::step},
                                                     {"samples", XAxis::samples},
                                                     {"wall_time", XAxis::wall_time},
                                                     {"relative_time", XAxis::relative_time},
                                                     {"spend", XAxis::spend}};
const std::pair<const char*, Band> kSavedBands[] = {
    {"std", Band::std_dev}, {"std_error", Band::std_error}, {"min_max", Band::min_max}};

template <typename Value, size_t N>
QString saved_name(const std::pair<const char*, Value> (&names)[N], Value value) {
    for (const auto& [name, named] : names)
        if (named == value)
            return QLatin1String(name);
    return {};
}

template <typename Value, size_t N>
std::optional<Value> saved_value(const std::pair<const char*, Value> (&names)[N], const QString& name) {
    for (const auto& [saved, value] : names)
        if (name == QLatin1String(saved))
            return value;
    return std::nullopt; // a view saved before the setting was kept: the chart keeps its own
}

} // namespace

void MainWindow::saveView(const QString& name) {
    Catalog::SavedView view;
    view.name = name.toStdString();
    view.query = filter_->text().toStdString();
    // The columns the user chose: with "only what differs" on, the differing keys follow the runs when it is applied.
    view.columns =
        QJsonDocument(QJsonArray::fromStringList(chosen_columns_)).toJson(QJsonDocument::Compact).toStdString();
    view.grouping =
        QJsonDocument(QJsonArray::fromStringList(groups_->groupKeys())).toJson(QJsonDocument::Compact).toStdString();
    view.chart = QJsonDocument(QJsonObject{{"metric", groups_->metric()},
                                           {"x_axis", saved_name(kSavedXAxes, groups_->xAxis())},
                                           {"band", saved_name(kSavedBands, groups_->band())},
                                           {"log_scale", groups_->logScale()},
                                           {"only_differing", only_differing_->isChecked()}})
                     .toJson(QJsonDocument::Compact)
                     .toStdString();
    writer_.post([view](Catalog& catalog) { catalog.save_view(view); });
    CatalogWriter* writer = &writer_;
    run_in_background(
        this, [writer] { return QString::fromStdString(writer->flush()); },
        [this, name](const QString& error) { addAlert(error.isEmpty() ? tr("View “%1” saved").arg(name) : error); });
}

bool MainWindow::applyView(const QString& name) {
    for (const Catalog::SavedView& view : reader_.savedViews()) {
        if (QString::fromStdString(view.name) != name)
            continue;
        auto strings = [](const std::string& text) {
            QStringList out;
            for (const auto& value : QJsonDocument::fromJson(QByteArray::fromStdString(text)).array())
                out << value.toString();
            return out;
        };
        const QJsonObject chart = QJsonDocument::fromJson(QByteArray::fromStdString(view.chart)).object();
        setQuery(QString::fromStdString(view.query));
        chosen_columns_ = strings(view.columns);
        setOnlyDiffering(chart.value("only_differing").toBool()); // the columns: the differing keys, then the chosen
        groups_->setGroupKeys(strings(view.grouping));
        if (const QString metric = chart.value("metric").toString(); !metric.isEmpty())
            groups_->setMetric(metric);
        if (const std::optional<XAxis> axis = saved_value(kSavedXAxes, chart.value("x_axis").toString()))
            groups_->setXAxis(*axis);
        if (const std::optional<Band> band = saved_value(kSavedBands, chart.value("band").toString()))
            groups_->setBand(*band);
        groups_->setLogScale(chart.value("log_scale").toBool());
        return true;
    }
    addAlert(tr("No saved view named “%1”").arg(name));
    return false;
}

void MainWindow::exportTableCsv() {
    const QString path =
        QFileDialog::getSaveFileName(this, tr("Export the runs table"), QStringLiteral("runs.csv"), tr("CSV (*.csv)"));
    if (path.isEmpty())
        return;
    const QString error = writeModelCsv(*jobs_, path, JobTableModel::SortRole); // raw values, full precision
    addAlert(error.isEmpty() ? tr("%1 runs written to %2").arg(jobs_->rowCount()).arg(path) : error);
}

void MainWindow::exportCurrentSeriesCsv() {
    const QModelIndex current = currentJob();
    if (!current.isValid())
        return;
    const qint64 job = jobs_->data(current, JobTableModel::JobIdRole).toLongLong();
    const QString path = QFileDialog::getSaveFileName(this, tr("Export the run's series"),
                                                      QStringLiteral("job-%1-series.csv").arg(job), tr("CSV (*.csv)"));
    if (path.isEmpty())
        return;
    // Every point of every series: read and written off the GUI thread.
    const QString catalog = QString::fromStdString(reader_.path());
    run_in_background(
        this,
        [catalog, job, path] {
            CatalogReader reader(catalog);
            QStringList names = reader.seriesNames(job);
            QVector<QVector<QPointF>> series;
            for (const QString& name : names)
                series.push_back(reader.points(job, name));
            QString error = writeSeriesCsv(path, names, series);
            return error.isEmpty() && !reader.error().isEmpty() ? reader.error() : error;
        },
        [this, path](const QString& error) {
            addAlert(error.isEmpty() ? tr("Series written to %1").arg(path) : error);
        });
}

void MainWindow::exportRuns(const QList<qint64>& ids, RunExportFormat format, const QString& folder) {
    if (ids.isEmpty())
        return;
    // Every point of every run: read and written off the GUI thread, through a connection of its own.
    const std::string catalog_path = reader_.path();
    run_in_background(
        this,
        [catalog_path, ids, format, folder] {
            Catalog catalog;
            if (const std::string error = catalog.open(catalog_path, true); !error.empty())
                return tr("Nothing was exported: %1").arg(QString::fromStdString(error));
            std::vector<std::pair<int64_t, std::string>> selection;
            for (const qint64 id : ids) {
                const std::optional<RunRecord> run = catalog.run(id);
                selection.emplace_back(id, run ? run->name : std::string());
            }
            const std::vector<std::string> paths = export_paths(folder.toStdString(), selection, format);
            // The runs' names never go over a file (or a run folder of event files) already there.
            if (const std::vector<std::string> existing = existing_exports(paths, format); !existing.empty()) {
                QStringList names;
                for (const std::string& path : existing)
                    names << QString::fromStdString(path);
                return tr("Nothing was exported: %1 already holds what the export would write (an earlier export?); "
                          "remove it or choose another folder")
                    .arg(names.join(", "));
            }
            if (!QDir().mkpath(folder))
                return tr("Nothing was exported: cannot create the folder %1; check its parent's permissions")
                    .arg(folder);
            QStringList problems;
            int64_t points = 0;
            int written = 0;
            for (size_t i = 0; i < selection.size(); ++i) {
                auto result = export_run(catalog, selection[i].first, format, paths[i]);
                if (!result) {
                    problems << tr("run %1: %2").arg(selection[i].first).arg(QString::fromStdString(result.error()));
                    continue;
                }
                ++written;
                points += result->points;
                for (const auto& [tag, renamed] : result->renamed)
                    problems << tr("run %1: the tag “%2” is written as “%3” (“%2” is a JSONL line's own key)")
                                    .arg(selection[i].first)
                                    .arg(QString::fromStdString(tag), QString::fromStdString(renamed));
            }
            QString summary =
                (written == 1 ? tr("1 run exported to %1") : tr("%1 runs exported to %2").arg(written)).arg(folder) +
                tr(" (%1 points)").arg(QLocale().toString(static_cast<qlonglong>(points)));
            if (!problems.isEmpty())
                summary += "; " + problems.join("; ");
            return summary;
        },
        [this](const QString& summary) {
            addAlert(summary);
            emit runsExported(summary);
        });
}

void MainWindow::openSettings() {
    const QString data_now = QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation) + "/traindeck";
    SettingsDialog dialog(settings_, backendNames(), data_now, this);
    if (dialog.exec() != QDialog::Accepted)
        return;
    const ConsoleSettings chosen = dialog.settings();
    QSettings stored;
    chosen.save(stored);
    if (chosen.data_folder != settings_.data_folder)
        addAlert(tr("The data folder %1 is used from the next start")
                     .arg(chosen.data_folder.isEmpty() ? data_now : chosen.data_folder));
    applySettings(chosen);
}

void MainWindow::applySettings(const ConsoleSettings& settings) {
    const bool theme_changed = settings.theme != settings_.theme || !settings_applied_;
    const bool charts_changed =
        settings.smoothing != settings_.smoothing || settings.log_scale != settings_.log_scale || !settings_applied_;
    // Sent when the user saved them (at start too: the local worker may have been running since before).
    const bool policy_changed =
        settings.policy_set && (settings.policy() != settings_.policy() || !settings_applied_ || !settings_.policy_set);
    const bool currency_changed = settings.currency != display_currency();
    settings_ = settings;
    settings_applied_ = true;
    if (policy_changed)
        pushLocalPolicy();
    if (theme_changed)
        apply_theme(theme_from_name(settings.theme));
    if (charts_changed)
        detail_->setChartDefaults(settings.smoothing, settings.log_scale);
    if (currency_changed) {
        // Every amount the console shows, written again in the new currency.
        set_display_currency(settings.currency);
        detail_->currencyChanged();
        table_->viewport()->update();
        backends_view_->viewport()->update();
        updateTray();
    }
}

void MainWindow::restoreLayout() {
    // Where the user left the window: its geometry and toolbar, the splitters, the runs table's column widths and
    // hidden columns, and the run that was selected. A first start hides the columns least needed at the default
    // width (Backend and Elapsed); the header's context menu shows them again.
    QSettings stored;
    restoreGeometry(stored.value("window/geometry").toByteArray());
    restoreState(stored.value("window/state").toByteArray());
    for (auto* splitter : findChildren<QSplitter*>())
        if (!splitter->objectName().isEmpty())
            splitter->restoreState(stored.value("window/" + splitter->objectName()).toByteArray());
    QHeaderView* header = table_->horizontalHeader();
    const QStringList hidden = stored.contains("table/hidden") ? stored.value("table/hidden").toStringList()
                                                               : QStringList{QString::number(JobTableModel::Backend),
                                                                             QString::number(JobTableModel::Elapsed)};
    for (int column = 0; column < JobTableModel::ColumnCount; ++column) {
        if (hidden.contains(QString::number(column)) && column != JobTableModel::Name)
            hidden_columns_.insert(column);
        const QScopedValueRollback not_the_user(fitting_columns_, true);
        header->setSectionHidden(column, hidden_columns_.contains(column));
    }
    // The widths the user gave columns (columnKey: a config column's place changes with the runs shown).
    const QVariantMap widths = stored.value("table/user_widths").toMap();
    for (auto width = widths.begin(); width != widths.end(); ++width)
        if (width.value().toInt() > 0)
            user_widths_.insert(width.key(), width.value().toInt());
    fit_all_ = true;
    fitColumns(); // at once: the window shows as it was left
    header->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(header, &QWidget::customContextMenuRequested, this, [this, header](const QPoint& at) {
        QMenu menu(this);
        menu.setToolTipsVisible(true);
        QAction* fit = menu.addAction(tr("Fit Widths to Contents"));
        fit->setToolTip(tr("Columns you dragged to a width follow their contents again"));
        fit->setEnabled(!user_widths_.isEmpty());
        connect(fit, &QAction::triggered, this, [this] {
            user_widths_.clear();
            fitSoon(true);
        });
        menu.addSeparator();
        for (int column = 0; column < JobTableModel::ColumnCount; ++column) {
            QAction* shown = menu.addAction(jobs_->headerData(column, Qt::Horizontal, Qt::DisplayRole).toString());
            shown->setCheckable(true);
            shown->setChecked(!header->isSectionHidden(column));
            shown->setEnabled(column != JobTableModel::Name); // a run needs its name
            connect(shown, &QAction::toggled, this, [this, column](bool on) { showColumn(column, on); });
        }
        menu.exec(header->mapToGlobal(at));
    });
    if (const qint64 selected = stored.value("table/selected_job", 0).toLongLong(); selected > 0)
        if (const int row = jobs_->rowOf(selected); row >= 0)
            selectRow(row);
}

void MainWindow::saveLayout() {
    QSettings stored;
    stored.setValue("window/geometry", saveGeometry());
    stored.setValue("window/state", saveState());
    for (auto* splitter : findChildren<QSplitter*>())
        if (!splitter->objectName().isEmpty())
            stored.setValue("window/" + splitter->objectName(), splitter->saveState());
    QStringList hidden;
    for (int column = 0; column < JobTableModel::ColumnCount; ++column)
        if (hidden_columns_.contains(column))
            hidden << QString::number(column);
    stored.setValue("table/hidden", hidden);
    QVariantMap widths;
    for (auto width = user_widths_.cbegin(); width != user_widths_.cend(); ++width)
        widths.insert(width.key(), width.value());
    stored.setValue("table/user_widths", widths);
    // Every section's width, as the console kept them before it told a dragged column from a fitted one.
    stored.remove("table/widths");
    const QModelIndex current = currentJob();
    stored.setValue("table/selected_job",
                    current.isValid() ? jobs_->data(current, JobTableModel::JobIdRole).toLongLong() : 0);
}

MainWindow::~MainWindow() { table_->horizontalHeader()->disconnect(this); }

QString MainWindow::chosenBackend() const {
    const QModelIndex current = backends_view_->currentIndex();
    return current.isValid()
               ? backends_model_->data(backends_model_->index(current.row(), BackendTableModel::Name), Qt::DisplayRole)
                     .toString()
               : QString();
}

void MainWindow::updateBackendActions() {
    QAction* remove = action("remove_backend");
    if (!remove)
        return;
    const QString chosen = chosenBackend();
    const QString why = chosen.isEmpty()                   ? tr("choose a backend in the Backends table first")
                        : chosen == QLatin1String("local") ? tr("the local worker is built in")
                        : controller_->retired(chosen) ? tr("removed already (it disconnects when the console closes)")
                                                       : QString();
    remove->setText(why.isEmpty() ? tr("Remove “%1”…").arg(chosen) : tr("Remove backend…"));
    enable_or_say_why(remove, why);
}

void MainWindow::backendRemoved(const QString& name, const QString& keyring_note) {
    controller_->retire(name);
    datasets_->refreshBackends();
    updateBackendActions();
    addAlert(
        keyring_note.isEmpty()
            ? tr("“%1” removed: it takes no new work and is not connected at the next start (it stays connected "
                 "until the console closes; its runs stay in the catalog)")
                  .arg(name)
            : tr("“%1” removed from the catalog, but its token is still in the keyring: %2").arg(name, keyring_note));
}

void MainWindow::removeBackend(const QString& name) {
    if (name.isEmpty() || name == QLatin1String("local"))
        return;
    // Its runs still going would be watched by nothing after the next start: they end first (or are cancelled).
    QStringList going;
    for (const RunRecord& run : jobs_->allRuns()) // shown by the query or not
        if (QString::fromStdString(run.backend) == name && !is_finished_in_catalog(run.state))
            going << QString::fromStdString(run.name);
    if (!going.isEmpty()) {
        addAlert(tr("“%1” not removed: %n run(s) still going there (%2); cancel them or let them finish first", nullptr,
                    static_cast<int>(going.size()))
                     .arg(name, going.join(QStringLiteral(", "))));
        return;
    }
    emit removeBackendRequested(name);
}

void MainWindow::showColumn(int column, bool shown) {
    if (column < 0 || column >= JobTableModel::ColumnCount || column == JobTableModel::Name)
        return; // a run needs its name
    if (shown)
        hidden_columns_.remove(column);
    else
        hidden_columns_.insert(column);
    {
        // Qt gives a section shown again its old size: not the user's doing.
        const QScopedValueRollback not_the_user(fitting_columns_, true);
        table_->horizontalHeader()->setSectionHidden(column, !shown);
    }
    // A column shown again is sized for what it holds now.
    fitSoon(true);
}

QString MainWindow::columnKey(int column) const {
    // The table's own columns by their place (their titles are translated), a config or summary column by its key.
    return column < JobTableModel::ColumnCount
               ? QStringLiteral("#%1").arg(column)
               : QStringLiteral("extra:%1").arg(jobs_->extraColumns().value(column - JobTableModel::ColumnCount));
}

void MainWindow::fitSoon(bool all) {
    fit_all_ = fit_all_ || all;
    fit_timer_->start();
}

void MainWindow::fitColumns() {
    // Sized from the rows in view and the next screenful (resizeContentsPrecision); the header's title counts too.
    QHeaderView* header = table_->horizontalHeader();
    const bool all = std::exchange(fit_all_, false);
    const QScopedValueRollback not_the_user(fitting_columns_, true);
    for (int column = 0; column < jobs_->columnCount(); ++column) {
        if (column == JobTableModel::Name || header->isSectionHidden(column))
            continue;
        if (const auto width = user_widths_.constFind(columnKey(column)); width != user_widths_.cend()) {
            header->resizeSection(column, *width);
            continue;
        }
        // QTableView's override is protected; QAbstractItemView's is public (the same virtual).
        const int wanted = std::max(static_cast<const QAbstractItemView*>(table_)->sizeHintForColumn(column),
                                    header->sectionSizeHint(column));
        if (all || wanted > header->sectionSize(column))
            header->resizeSection(column, wanted);
    }
}

void MainWindow::closeEvent(QCloseEvent* event) {
    saveLayout();
    QMainWindow::closeEvent(event);
}

void MainWindow::updateEmptyState() {
    if (!empty_)
        return; // a refresh while the window is being built
    const bool none = jobs_->totalJobs() == 0;
    const bool hidden_by_query = !none && jobs_->rowCount() == 0;
    empty_->setVisible(none || hidden_by_query);
    table_->setVisible(!none && !hidden_by_query);
    for (QToolButton* button : std::as_const(empty_button_list_))
        button->setVisible(none);
    empty_text_->setText(none ? tr("<h3>No runs yet</h3><p>Start a job — a built-in model on your data or any "
                                   "command — or train the demo MLP on Fashion-MNIST to see a run live.</p>")
                              : tr("<p>No run matches the query <b>%1</b>.</p><p>Archived runs show with "
                                   "<code>archived:any</code>; clear the box to see every run.</p>")
                                    .arg(jobs_->query().toHtmlEscaped()));
}

void MainWindow::updateTray() {
    if (today_reading_) {
        today_again_ = true;
        return;
    }
    today_reading_ = true;
    // Spent today, by the spend telemetry: a run started yesterday counts what it spent since midnight, not its
    // whole bill.
    struct Today {
        QHash<QString, double> spent; // per backend
        QString error;
    };
    run_in_background(
        this,
        [path = QString::fromStdString(reader_.path())] {
            CatalogReader reader(path);
            Today today{reader.spendSince(QDateTime(QDate::currentDate(), QTime(0, 0))), {}};
            today.error = reader.error();
            return today;
        },
        [this](const Today& today) {
            today_reading_ = false;
            int running = 0;
            for (const RunRecord& run : jobs_->allRuns())
                running += run.state == "running";
            // Each backend's spend in its own currency, summed per currency ("€1.20 + $0.35"); never converted.
            QMap<QString, double> by_currency;
            for (auto it = today.spent.cbegin(); it != today.spent.cend(); ++it)
                by_currency[backend_currency(it.key())] += it.value();
            QStringList amounts;
            // Cents, or four decimals under one unit (a local run's few seconds cost fractions of a cent).
            for (auto it = by_currency.cbegin(); it != by_currency.cend(); ++it)
                amounts << money(it.value(), it.value() < 1 ? 4 : 2, it.key());
            const QString amount = !today.error.isEmpty() ? tr("(spend unreadable: %1)").arg(today.error)
                                   : amounts.isEmpty()    ? money(0, 2)
                                                          : amounts.join(QStringLiteral(" + "));
            today_->setText(tr("%n running · %1 today", nullptr, running).arg(amount));
            if (tray_) {
                tray_->setToolTip(tr("TrainDeck — %n job(s) running, %1 spent today", nullptr, running).arg(amount));
                tray_status_->setText(today_->text());
            }
            if (std::exchange(today_again_, false))
                updateTray();
        },
        QThreadPool::globalInstance());
}

namespace {

// The icon in the palette's text colour when the palette is dark and the icon is a dark monochrome one; else as it is.
QIcon readable(const QIcon& icon, const QPalette& palette) {
    if (icon.isNull() || !palette_is_dark(palette))
        return icon;
    QIcon tinted;
    for (const int size : {16, 22, 24, 32, 48}) {
        QImage image = icon.pixmap(size).toImage().convertToFormat(QImage::Format_ARGB32_Premultiplied);
        for (int y = 0; y < image.height(); ++y)
            for (int x = 0; x < image.width(); ++x) {
                const QColor pixel = image.pixelColor(x, y);
                if (pixel.alpha() > 48 && (pixel.hslSaturation() > 60 || pixel.lightness() > 110))
                    return icon; // colours or light parts of its own: it reads on any background
            }
        QPainter painter(&image);
        painter.setCompositionMode(QPainter::CompositionMode_SourceIn);
        painter.fillRect(image.rect(), palette.color(QPalette::ButtonText));
        painter.end();
        tinted.addPixmap(QPixmap::fromImage(image));
    }
    return tinted;
}

} // namespace

void MainWindow::readableIcons() {
    for (QAction* each : std::as_const(actions_)) {
        QVariant base = each->property("base_icon");
        if (!base.isValid()) {
            base = QVariant::fromValue(each->icon());
            each->setProperty("base_icon", base);
        }
        each->setIcon(readable(base.value<QIcon>(), palette()));
    }
}

void MainWindow::changeEvent(QEvent* event) {
    QMainWindow::changeEvent(event);
    if (event->type() == QEvent::PaletteChange)
        readableIcons();
}

QAction* MainWindow::action(const QString& name) const {
    QAction* found = actions_.value(name);
    Q_ASSERT_X(found, "MainWindow::action", qPrintable(name));
    return found;
}

QList<QAction*> MainWindow::menuActions() const {
    QList<QAction*> all;
    for (QAction* top : menuBar()->actions())
        if (QMenu* menu = top->menu())
            for (QAction* item : menu->actions())
                if (!item->isSeparator())
                    all << item;
    return all;
}

void MainWindow::createActions() {
    // name: how tests and the context menu find it; tip: what it does (also its status-bar text); keys: shown in the
    // menus. Added to the window too, so the shortcuts work wherever the focus is in it.
    const auto make = [this](const QString& name, const QIcon& icon, const QString& text, const QString& tip,
                             const QKeySequence& keys = {}) {
        auto* made = new QAction(icon, text, this);
        made->setObjectName(name);
        made->setToolTip(tip);
        made->setStatusTip(tip);
        made->setProperty("tip", tip);
        if (!keys.isEmpty())
            made->setShortcut(keys);
        addAction(made);
        actions_.insert(name, made);
        return made;
    };
    // Those that act on the selected runs: disabled, saying why, while none is selected (updateActions).
    const auto on_runs = [this](QAction* made) {
        run_actions_ << made;
        return made;
    };

    QAction* new_job = make("new_job", action_icon("document-new", QStyle::SP_FileIcon), tr("New job…"),
                            tr("Train a built-in model or run a command on a backend"), QKeySequence::New);
    connect(new_job, &QAction::triggered, this, [this] {
        NewJobDialog dialog(this);
        dialog.setBackends(backendNames(), settings_.default_backend);
        dialog.setDatasets(datasetChoices());
        if (dialog.exec() == QDialog::Accepted)
            submitDialog(dialog);
    });
    QAction* import_runs =
        make("import_runs", action_icon("document-import", QStyle::SP_DialogOpenButton), tr("Import runs…"),
             tr("Bring in runs of TensorBoard, MLflow, W&B or metric files (or drop them on the window)"),
             QKeySequence(Qt::CTRL | Qt::Key_I));
    connect(import_runs, &QAction::triggered, this, [this] { importPaths({}); });
    QAction* new_sweep =
        make("new_sweep", action_icon("view-grid", QStyle::SP_FileDialogDetailedView), tr("New sweep…"),
             tr("Search hyperparameters: many trials of one job, stopped early by the worker"),
             QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_N));
    connect(new_sweep, &QAction::triggered, sweeps_, &SweepView::newSweep);
    QAction* demo_mlp = make("demo_mlp", action_icon("system-run", QStyle::SP_MediaPlay), tr("Demo MLP"),
                             tr("Train the demo MLP on Fashion-MNIST on the local worker"));
    connect(demo_mlp, &QAction::triggered, this, [this] { submitDemo("mlp"); });
    QAction* demo_cnn = make("demo_cnn", action_icon("system-run", QStyle::SP_MediaPlay), tr("Demo CNN"),
                             tr("Train the demo CNN on Fashion-MNIST on the local worker"));
    connect(demo_cnn, &QAction::triggered, this, [this] { submitDemo("cnn"); });
    QAction* clone =
        on_runs(make("clone", action_icon("edit-copy", QStyle::SP_FileDialogNewFolder), tr("Clone and edit…"),
                     tr("Open the current run's settings in the New job dialog"), QKeySequence(Qt::CTRL | Qt::Key_D)));
    connect(clone, &QAction::triggered, this, &MainWindow::cloneSelected);
    QAction* cancel = on_runs(make("cancel", action_icon("process-stop", QStyle::SP_MediaStop), tr("Cancel job"),
                                   tr("Stop the current run (a built-in job checkpoints first)"),
                                   QKeySequence(Qt::CTRL | Qt::Key_Period)));
    connect(cancel, &QAction::triggered, this, &MainWindow::cancelSelected);
    QAction* resume =
        on_runs(make("resume", action_icon("media-playback-start", QStyle::SP_MediaSeekForward), tr("Resume job"),
                     tr("Continue the current run from its last checkpoint"), QKeySequence(Qt::CTRL | Qt::Key_R)));
    connect(resume, &QAction::triggered, this, &MainWindow::resumeSelected);
    QAction* export_model = on_runs(make(
        "export_model", action_icon("document-export", QStyle::SP_DialogSaveButton), tr("Export model…"),
        tr("Write the current run's model as ONNX (fp32, int8) and safetensors"), QKeySequence(Qt::CTRL | Qt::Key_E)));
    connect(export_model, &QAction::triggered, this, [this] { exportSelected(); });
    QAction* export_table = make("export_table", action_icon("x-office-spreadsheet", QStyle::SP_DialogSaveButton),
                                 tr("Export table…"), tr("Write the runs table as shown (filtered, sorted) to CSV"),
                                 QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E));
    connect(export_table, &QAction::triggered, this, &MainWindow::exportTableCsv);
    // Export back (issue 17): the selected runs, as files other tools read.
    for (const auto& [name, format, label, tip] :
         {std::tuple{"export_runs_csv", RunExportFormat::csv, tr("Export runs as CSV…"),
                     tr("Write every curve of the selected runs as CSV, a file a run, into a folder")},
          std::tuple{"export_runs_jsonl", RunExportFormat::jsonl, tr("Export runs as JSONL…"),
                     tr("Write every curve of the selected runs as JSONL, a file a run, into a folder")},
          std::tuple{
              "export_runs_tensorboard", RunExportFormat::tensorboard, tr("Export runs as TensorBoard logdir…"),
              tr("Write the selected runs' curves as TensorBoard event files, a folder a run, into a logdir")}}) {
        QAction* export_runs =
            on_runs(make(name, action_icon("document-export", QStyle::SP_DialogSaveButton), label, tip));
        connect(export_runs, &QAction::triggered, this, [this, chosen = format] {
            const QList<qint64> ids = selectedIds();
            const QString folder = QFileDialog::getExistingDirectory(
                this, ids.size() == 1 ? tr("Export the run into") : tr("Export %1 runs into").arg(ids.size()));
            if (!folder.isEmpty())
                exportRuns(ids, chosen, folder);
        });
    }
    QAction* export_series =
        on_runs(make("export_series", action_icon("document-save-as", QStyle::SP_DialogSaveButton),
                     tr("Export series as CSV…"), tr("Write every point of every curve of the current run to CSV")));
    connect(export_series, &QAction::triggered, this, &MainWindow::exportCurrentSeriesCsv);
    QAction* open_model =
        make("open_model", action_icon("document-open", QStyle::SP_DialogOpenButton), tr("Open exported model…"),
             tr("Which run, checkpoint, data and code made an ONNX or safetensors file: read from the file"));
    connect(open_model, &QAction::triggered, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Open exported model"), {},
                                                          tr("Models (*.onnx *.safetensors);;All files (*)"));
        if (!path.isEmpty())
            openExportedModel(path);
    });
    QAction* rerun =
        on_runs(make("rerun", action_icon("media-playlist-repeat", QStyle::SP_BrowserReload), tr("Rerun exactly…"),
                     tr("Run the current run again from its captured code, spec, seeds and data, on any backend")));
    connect(rerun, &QAction::triggered, this, [this] {
        if (const QModelIndex current = table_->currentIndex(); current.isValid())
            reproduceRun(jobs_->data(current, JobTableModel::JobIdRole).toLongLong());
    });
    QAction* quit = make("quit", action_icon("application-exit", QStyle::SP_DialogCloseButton), tr("Quit"),
                         tr("Close the console (jobs go on running on their workers)"), QKeySequence::Quit);
    quit->setMenuRole(QAction::QuitRole);
    connect(quit, &QAction::triggered, this, &QWidget::close);

    QAction* undo = make("undo_delete", action_icon("edit-undo", QStyle::SP_ArrowBack), tr("Undo delete"),
                         tr("Bring back the most recently deleted runs"), QKeySequence::Undo);
    connect(undo, &QAction::triggered, this, &MainWindow::undoDelete);
    QAction* find = make("filter", action_icon("edit-find", QStyle::SP_FileDialogContentsView), tr("Filter runs"),
                         tr("Type a query into the runs table's filter box"), QKeySequence::Find);
    connect(find, &QAction::triggered, this, [this] {
        tabs_->setCurrentIndex(0);
        filter_->setFocus(Qt::ShortcutFocusReason);
        filter_->selectAll();
    });
    QAction* star = on_runs(make("star", action_icon("starred", QStyle::SP_DialogYesButton), tr("Star"),
                                 tr("Star the selected runs (query: starred:)")));
    connect(star, &QAction::triggered, this, [this] { starSelected(true); });
    QAction* unstar = on_runs(make("unstar", action_icon("non-starred", QStyle::SP_DialogNoButton), tr("Unstar"),
                                   tr("Unstar the selected runs")));
    connect(unstar, &QAction::triggered, this, [this] { starSelected(false); });
    QAction* add_tag = on_runs(make("add_tag", action_icon("tag", QStyle::SP_FileDialogInfoView), tr("Add tag…"),
                                    tr("Tag the selected runs (query: tag:NAME)"), QKeySequence(Qt::CTRL | Qt::Key_T)));
    connect(add_tag, &QAction::triggered, this, [this] {
        bool ok = false;
        const QString text =
            QInputDialog::getText(this, tr("Add tag"), tr("Tags (comma-separated):"), QLineEdit::Normal, {}, &ok);
        if (ok)
            tagSelected(text.split(QLatin1Char(','), Qt::SkipEmptyParts), true);
    });
    QAction* note = on_runs(make("note", action_icon("document-edit", QStyle::SP_FileDialogDetailedView), tr("Note…"),
                                 tr("Write a markdown note on the current run")));
    connect(note, &QAction::triggered, this, [this] {
        const RunRecord* run = jobs_->runAt(currentJob().row());
        bool ok = false;
        const QString text = QInputDialog::getMultiLineText(this, tr("Note (markdown)"), tr("Note:"),
                                                            run ? QString::fromStdString(run->note) : QString(), &ok);
        if (ok)
            setNoteOfCurrent(text);
    });
    QAction* archive =
        on_runs(make("archive", action_icon("archive-insert", QStyle::SP_DirClosedIcon), tr("Archive"),
                     tr("Hide the selected runs unless the query says archived:"), QKeySequence::Delete));
    connect(archive, &QAction::triggered, this, [this] { archiveSelected(true); });
    QAction* unarchive = on_runs(make("unarchive", action_icon("archive-extract", QStyle::SP_DirOpenIcon),
                                      tr("Unarchive"), tr("Show the selected runs again")));
    connect(unarchive, &QAction::triggered, this, [this] { archiveSelected(false); });
    QAction* remove = on_runs(make("delete", action_icon("edit-delete", QStyle::SP_TrashIcon), tr("Delete"),
                                   tr("Delete the selected finished runs from the catalog (Undo delete brings them "
                                      "back until the console closes)"),
                                   QKeySequence(Qt::SHIFT | Qt::Key_Delete)));
    connect(remove, &QAction::triggered, this, [this] { deleteSelected(); });
    QAction* remove_files = on_runs(make("delete_with_files", action_icon("edit-delete-shred", QStyle::SP_TrashIcon),
                                         tr("Delete with files on the worker…"),
                                         tr("Delete the selected finished runs and their checkpoints, logs and "
                                            "exports on their workers, for good")));
    // Del and Shift+Del act on the runs table: only while the focus is in its panel (not in a run's log, a dataset
    // or a sweep, where Del means something else or nothing).
    for (QAction* table_key : {archive, remove}) {
        removeAction(table_key);
        table_key->setShortcutContext(Qt::WidgetWithChildrenShortcut);
        table_->parentWidget()->addAction(table_key);
    }
    connect(remove_files, &QAction::triggered, this, [this] {
        const int count = static_cast<int>(selectedIds().size());
        if (QMessageBox::question(this, tr("Delete with files"),
                                  tr("Delete %n run(s) and, on their workers, their checkpoints, logs and exports?\n\n"
                                     "The files cannot be brought back; Undo delete restores only the records and "
                                     "curves in the catalog.",
                                     nullptr, count),
                                  QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel) == QMessageBox::Yes)
            deleteSelected(true);
    });

    QAction* preferences =
        make("settings", action_icon("preferences-system", QStyle::SP_FileDialogDetailedView), tr("Settings…"),
             tr("Appearance, where new jobs go, chart defaults, notifications, the data folder"),
             QKeySequence(Qt::CTRL | Qt::Key_Comma));
    preferences->setMenuRole(QAction::PreferencesRole);
    connect(preferences, &QAction::triggered, this, &MainWindow::openSettings);
    QAction* refresh_now = make("refresh", action_icon("view-refresh", QStyle::SP_BrowserReload), tr("Refresh"),
                                tr("Read the catalog and the backends' resources again"), QKeySequence::Refresh);
    connect(refresh_now, &QAction::triggered, this, [this] {
        refresh();
        updateResources();
        statusBar()->showMessage(tr("Refreshed"), 3000);
    });
    QList<QAction*> tab_actions;
    for (int index = 0; index < tabs_->count(); ++index) {
        QAction* show = make(QStringLiteral("tab_%1").arg(index), {}, tabs_->tabText(index),
                             tr("Show the %1 tab").arg(tabs_->tabText(index)),
                             QKeySequence(Qt::CTRL | static_cast<Qt::Key>(Qt::Key_1 + index)));
        connect(show, &QAction::triggered, this, [this, index] { tabs_->setCurrentIndex(index); });
        tab_actions << show;
    }
    QAction* columns = make("columns", action_icon("view-list-details", QStyle::SP_FileDialogListView), tr("Columns…"),
                            tr("Add any config key or summary value as a column of the runs table"));
    connect(columns, &QAction::triggered, this, [this] {
        tabs_->setCurrentIndex(0);
        showColumnsMenu();
    });
    only_differing_->setObjectName("only_differing");
    only_differing_->setStatusTip(only_differing_->toolTip());
    actions_.insert("only_differing", only_differing_);
    QAction* compare_selected = make(
        "compare_selected", action_icon("view-statistics", QStyle::SP_FileDialogContentsView), tr("Compare selected"),
        tr("Open the Compare tab on the selected runs (every run shown when fewer "
           "than two are selected)"));
    connect(compare_selected, &QAction::triggered, this, [this] {
        tabs_->setCurrentWidget(compare_tab_);
        updateCompare();
    });
    QAction* full_screen = make("full_screen", action_icon("view-fullscreen", QStyle::SP_TitleBarMaxButton),
                                tr("Full screen"), tr("Show the window on the whole screen"), QKeySequence::FullScreen);
    full_screen->setCheckable(true);
    connect(full_screen, &QAction::toggled, this, [this](bool on) { on ? showFullScreen() : showNormal(); });

    QAction* add_worker =
        make("add_worker", action_icon("network-server", QStyle::SP_DriveNetIcon), tr("Add remote worker…"),
             tr("Connect a TrainDeck worker on another machine (HTTPS and "
                "its token, or an ssh forward)"));
    connect(add_worker, &QAction::triggered, this, &MainWindow::addRemoteWorkerRequested);
    QAction* add_ssh_host =
        make("add_ssh_host", action_icon("network-wired", QStyle::SP_DriveNetIcon), tr("Add SSH host…"),
             tr("Use a machine you can ssh into: TrainDeck installs and starts its worker there (asking first) and "
                "reaches it through an ssh forward"));
    connect(add_ssh_host, &QAction::triggered, this, &MainWindow::addSshHostRequested);
    QAction* add_cloud =
        make("add_cloud_provider", action_icon("weather-overcast", QStyle::SP_DriveNetIcon), tr("Add cloud provider…"),
             tr("Rent GPU instances when jobs need them and delete them when idle, through a provider file of your "
                "cloud's CLI commands, with a maximum count and an hourly spend ceiling"));
    connect(add_cloud, &QAction::triggered, this, &MainWindow::addCloudProviderRequested);
    QAction* resources =
        make("backend_resources", action_icon("utilities-system-monitor", QStyle::SP_ComputerIcon),
             tr("Read resources again"), tr("Ask every backend for its GPUs, CPUs, memory and prices now"));
    connect(resources, &QAction::triggered, this, [this] {
        updateResources();
        statusBar()->showMessage(
            tr("Asked %n backend(s) for their resources", nullptr, static_cast<int>(backendNames().size())), 3000);
    });
    QAction* about = make("about", action_icon("help-about", QStyle::SP_MessageBoxInformation), tr("About TrainDeck"),
                          tr("The version and what it runs on (Qt, SQLite, the trainer's BLAS and CUDA)"));
    about->setMenuRole(QAction::AboutRole);
    connect(about, &QAction::triggered, this, [this] {
        auto* dialog = new AboutDialog(this);
        dialog->setAttribute(Qt::WA_DeleteOnClose);
        dialog->open();
    });
    QAction* about_qt = make("about_qt", action_icon("help-about", QStyle::SP_TitleBarMenuButton), tr("About Qt"),
                             tr("The Qt version this console runs on and its licence"));
    about_qt->setMenuRole(QAction::AboutQtRole);
    connect(about_qt, &QAction::triggered, qApp, &QApplication::aboutQt);

    // The menu bar: every action of the toolbar and the context menus, with its shortcut.
    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addActions({new_job, new_sweep, import_runs});
    file->addSeparator();
    file->addActions({export_model, export_table, export_series, action("export_runs_csv"), action("export_runs_jsonl"),
                      action("export_runs_tensorboard")});
    file->addAction(open_model);
    file->addSeparator();
    file->addAction(quit);
    QMenu* edit = menuBar()->addMenu(tr("&Edit"));
    edit->addAction(undo);
    edit->addSeparator();
    edit->addAction(find);
    edit->addSeparator();
    edit->addActions({star, unstar, add_tag, note});
    edit->addSeparator();
    edit->addActions({archive, unarchive, remove, remove_files});
    edit->addSeparator();
    edit->addAction(preferences);
    QMenu* view = menuBar()->addMenu(tr("&View"));
    view->addAction(refresh_now);
    view->addSeparator();
    view->addActions(tab_actions);
    view->addSeparator();
    view->addActions({columns, only_differing_});
    view->addSeparator();
    QMenu* jobs = menuBar()->addMenu(tr("&Jobs"));
    jobs->addActions({new_job, new_sweep, demo_mlp, demo_cnn});
    jobs->addSeparator();
    jobs->addActions({clone, cancel, resume, rerun});
    jobs->addSeparator();
    jobs->addActions({compare_selected, export_model});
    QMenu* datasets = menuBar()->addMenu(tr("&Datasets"));
    datasets->addActions(datasets_->commands());
    for (QAction* command : datasets_->commands()) {
        command->setStatusTip(command->toolTip());
        actions_.insert(command->objectName(), command);
        // They act on the Datasets tab: show it.
        connect(command, &QAction::triggered, this, [this] { tabs_->setCurrentWidget(datasets_); });
    }
    QAction* remove_backend =
        make("remove_backend", action_icon("list-remove", QStyle::SP_TrashIcon), tr("Remove backend…"),
             tr("Forget the chosen backend: its runs stay, its token leaves the keyring, it is not connected at the "
                "next start"));
    connect(remove_backend, &QAction::triggered, this, [this] { removeBackend(chosenBackend()); });
    connect(backends_view_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            &MainWindow::updateBackendActions);
    connect(backends_model_, &QAbstractItemModel::modelReset, this, &MainWindow::updateBackendActions);
    QMenu* backends = menuBar()->addMenu(tr("&Backends"));
    backends->addActions({add_worker, add_ssh_host, add_cloud, resources});
    backends->addSeparator();
    backends->addAction(remove_backend);
    // Right-click on the backends table: the Backends menu's commands, Remove for the row under the mouse.
    backends_view_->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(backends_view_, &QWidget::customContextMenuRequested, this,
            [this, add_worker, add_ssh_host, add_cloud, resources, remove_backend](const QPoint& at) {
                if (const QModelIndex index = backends_view_->indexAt(at); index.isValid())
                    backends_view_->setCurrentIndex(index);
                QMenu menu(this);
                menu.setToolTipsVisible(true);
                menu.addActions({add_worker, add_ssh_host, add_cloud, resources});
                menu.addSeparator();
                menu.addAction(remove_backend);
                menu.exec(backends_view_->viewport()->mapToGlobal(at));
            });
    updateBackendActions();
    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addActions({about, about_qt});
    // A greyed entry says why when the mouse rests on it: each run action's tip ends in the reason (updateActions).
    for (QMenu* menu : menuBar()->findChildren<QMenu*>())
        menu->setToolTipsVisible(true);

    // The toolbar: what is used most, icon and word.
    QToolBar* tools = addToolBar(tr("Main toolbar"));
    tools->setObjectName("main_toolbar");
    tools->setMovable(false);
    tools->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    tools->addActions({new_job, new_sweep, demo_mlp, demo_cnn});
    tools->addSeparator();
    tools->addActions({clone, cancel, resume, export_model});
    tools->addSeparator();
    tools->addActions({add_worker, undo});
    QAction* show_toolbar = tools->toggleViewAction();
    show_toolbar->setText(tr("Show toolbar"));
    show_toolbar->setObjectName("show_toolbar");
    show_toolbar->setStatusTip(tr("Show or hide the toolbar (every action is also in these menus)"));
    actions_.insert("show_toolbar", show_toolbar);
    view->addActions({show_toolbar, full_screen});

    connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this, &MainWindow::updateActions);
    connect(table_->selectionModel(), &QItemSelectionModel::currentChanged, this, &MainWindow::updateActions);
    connect(jobs_, &QAbstractItemModel::modelReset, this, &MainWindow::updateActions);
    connect(jobs_, &QAbstractItemModel::dataChanged, this, &MainWindow::updateActions);
    connect(jobs_, &QAbstractItemModel::layoutChanged, this, &MainWindow::updateActions);
    connect(jobs_, &QAbstractItemModel::rowsInserted, this, &MainWindow::updateActions);
    connect(jobs_, &QAbstractItemModel::rowsRemoved, this, &MainWindow::updateActions);
    updateActions();
}

void MainWindow::updateActions() {
    // The selected runs (the current one when none is selected) and what they allow.
    std::vector<const RunRecord*> runs;
    for (const QModelIndex& row : selectedRowsOrCurrent())
        if (const RunRecord* run = jobs_->runAt(row.row()))
            runs.push_back(run);
    const auto any = [&runs](auto&& test) { return std::any_of(runs.begin(), runs.end(), test); };
    const bool finished = any([](const RunRecord* run) { return is_finished_in_catalog(run->state); });
    const QString none = tr("select a run in the table first");
    // Both deletes: only runs that have ended go.
    const QString deletable = runs.empty() ? none
                              : finished   ? QString()
                                           : tr("a run still going is never deleted: cancel it first");
    // name -> why it is disabled now ("" when enabled)
    const QList<QPair<QString, QString>> states = {
        {"star", runs.empty()                                              ? none
                 : any([](const RunRecord* run) { return !run->starred; }) ? QString()
                                                                           : tr("the selected runs are starred")},
        {"unstar", runs.empty()                                             ? none
                   : any([](const RunRecord* run) { return run->starred; }) ? QString()
                                                                            : tr("no selected run is starred")},
        {"archive", runs.empty() ? none
                    : any([](const RunRecord* run) { return !run->archived && is_finished_in_catalog(run->state); })
                        ? QString()
                    : any([](const RunRecord* run) { return !run->archived; })
                        ? tr("the selected runs are still going (cancel first)")
                        : tr("the selected runs are archived")},
        {"unarchive", runs.empty()                                              ? none
                      : any([](const RunRecord* run) { return run->archived; }) ? QString()
                                                                                : tr("no selected run is archived")},
        {"cancel", runs.empty() ? none
                   : any([](const RunRecord* run) { return !is_finished_in_catalog(run->state); })
                       ? QString()
                       : tr("the selected runs have ended")},
        {"resume", runs.empty() ? none
                   : any([](const RunRecord* run) { return is_finished(run->state) && run->state != "succeeded"; })
                       ? QString()
                       : tr("only a stopped, cancelled or failed run resumes")},
        {"delete", deletable},
        {"delete_with_files", deletable},
    };
    for (QAction* each : std::as_const(run_actions_)) {
        QString why = runs.empty() ? none : QString();
        for (const auto& [name, reason] : states)
            if (name == each->objectName())
                why = reason;
        enable_or_say_why(each, why);
    }
}

void MainWindow::reproduceRun(qint64 job) {
    const QString backend = reader_.jobBackend(job);
    QStringList names = controller_->names();
    if (names.isEmpty()) {
        addAlert(tr("Not rerun: no backend is connected"));
        return;
    }
    names.removeAll(backend);
    if (controller_->find(backend))
        names.prepend(backend); // the run's own backend first: its snapshot is there already
    bool chosen = false;
    const QString target = reproduce_target_ ? reproduce_target_(names)
                                             : QInputDialog::getItem(this, tr("Rerun run %1 exactly").arg(job),
                                                                     tr("Run it again on:"), names, 0, false, &chosen);
    if (target.isEmpty() || (!reproduce_target_ && !chosen))
        return;
    // The target's engine build (for a built-in run's "bit-identical") is asked off the GUI thread; the captures are
    // read there too.
    struct Planned {
        ReproducePlan plan;
    };
    const std::optional<JobController::Connected> connected = controller_->find(target);
    if (!connected)
        return;
    const BackendRef ref = BackendRef::of(connected->backend);
    run_in_background(
        this,
        [ref, path = QString::fromStdString(reader_.path()), job] {
            QString error;
            QJsonObject resources;
            if (const BackendRef::Use use = ref.use())
                resources = use->resources(&error);
            CatalogReader reader(path);
            const CatalogReader::RunCapture capture = reader.capture(job);
            return Planned{plan_reproduction(job, QJsonDocument::fromJson(reader.jobRequest(job)).object(),
                                             QJsonDocument::fromJson(capture.code).object(),
                                             QJsonDocument::fromJson(capture.environment).object(), resources)};
        },
        [this, job, backend, target](const Planned& planned) {
            const ReproducePlan& plan = planned.plan;
            if (!plan.refused.isEmpty()) {
                addAlert(tr("Not rerun: %1").arg(plan.refused));
                return;
            }
            if (!plan.warnings.isEmpty() && !reproduce_target_) {
                const QString text = tr("Rerun run %1 on %2?\n\nIt may not be exact:\n• %3")
                                         .arg(job)
                                         .arg(target, plan.warnings.join("\n• "));
                if (QMessageBox::question(this, tr("Rerun exactly"), text) != QMessageBox::Yes)
                    return;
            }
            controller_->reproduce({job, backend, QString()}, target, plan.request, plan.code);
            statusBar()->showMessage(
                tr("Rerunning run %1 on %2%3")
                    .arg(job)
                    .arg(target, plan.warnings.isEmpty() ? QString() : tr(" (%1 note(s))").arg(plan.warnings.size())),
                8000);
        });
}

void MainWindow::openExportedModel(const QString& path) {
    run_in_background(
        this,
        [path] {
            importers::ModelMetadata metadata;
            std::string error;
            const bool ok = importers::read_model_metadata(path.toStdString(), metadata, error);
            return std::make_pair(ok ? metadata : importers::ModelMetadata(), QString::fromStdString(error));
        },
        [this, path](const std::pair<importers::ModelMetadata, QString>& read) {
            const importers::ModelMetadata& metadata = read.first;
            if (!read.second.isEmpty()) {
                model_provenance_ = tr("Not a model TrainDeck can read: %1").arg(read.second);
                addAlert(model_provenance_);
                return;
            }
            const auto property = [&](const char* key) {
                const auto found = metadata.properties.find(key);
                return found == metadata.properties.end() ? QString() : QString::fromStdString(found->second);
            };
            const QJsonObject provenance = QJsonDocument::fromJson(property("traindeck_provenance").toUtf8()).object();
            const QJsonObject checkpoint = QJsonDocument::fromJson(property("traindeck_checkpoint").toUtf8()).object();
            if (provenance.isEmpty()) {
                model_provenance_ =
                    tr("%1 (%2%3) says nothing of the run that made it: it was not exported by TrainDeck, "
                       "or by a version before provenance was written")
                        .arg(QFileInfo(path).fileName(), QString::fromStdString(metadata.format),
                             metadata.producer.empty() ? QString() : ", " + QString::fromStdString(metadata.producer));
                addAlert(model_provenance_);
                return;
            }
            const qint64 run = provenance.value("run").toInteger();
            QStringList lines;
            lines << tr("%1 was exported from run %2 “%3” on %4, checkpoint %5 (step %6).")
                         .arg(QFileInfo(path).fileName())
                         .arg(run)
                         .arg(provenance.value("name").toString(), provenance.value("backend").toString(),
                              checkpoint.value("file").toString())
                         .arg(checkpoint.value("step").toInteger());
            if (const QString dataset = provenance.value("dataset").toString(); !dataset.isEmpty())
                lines << tr("Dataset version %1…").arg(dataset.left(12));
            if (const QString commit = provenance.value("commit").toString(); !commit.isEmpty())
                lines << tr("Code: commit %1, snapshot %2…")
                             .arg(commit.left(10), provenance.value("code_snapshot").toString().left(12));
            // The run itself, when this catalog holds it (same id and name): selected, its Reproducibility shown.
            // Same id, name, backend and remote id: a file from another catalog does not pick an unrelated local run.
            int row_of_run = -1;
            for (int row = 0; row < jobs_->rowCount() && row_of_run < 0; ++row)
                if (const RunRecord* record = jobs_->runAt(row);
                    record && record->id == run &&
                    QString::fromStdString(record->name) == provenance.value("name").toString() &&
                    QString::fromStdString(record->backend) == provenance.value("backend").toString() &&
                    QString::fromStdString(record->remote_id) == provenance.value("remote_id").toString())
                    row_of_run = row;
            const bool here = row_of_run >= 0;
            lines << (here ? tr("The run is in this catalog: selected, with its Reproducibility tab.")
                           : tr("The run is not in this catalog (or not among the runs shown)."));
            model_provenance_ = lines.join('\n');
            statusBar()->showMessage(lines.front(), 15000);
            if (here) {
                tabs_->setCurrentIndex(0);
                table_->selectRow(row_of_run);
                reproducibility_->showJob(run);
                job_tabs_->setCurrentWidget(reproducibility_);
            }
            if (!open_model_quietly_) {
                QMessageBox box(QMessageBox::Information, tr("Exported model"), model_provenance_, QMessageBox::Ok,
                                this);
                box.setTextFormat(Qt::PlainText); // the file's words are never markup
                box.exec();
            }
        });
}

void MainWindow::showCodeDiff(const QList<CompareView::CapturedRun>& captured, const QHash<qint64, QString>& backends,
                              int generation) {
    // The first run against the first other whose code snapshot differs: both manifests and the changed files'
    // bytes fetched from each run's own backend, off the GUI thread.
    const auto snapshot_of = [](const CompareView::CapturedRun& run) {
        return QJsonDocument::fromJson(run.code).object().value("code").toObject().value("snapshot").toString();
    };
    if (captured.size() < 2 || snapshot_of(captured[0]).isEmpty())
        return;
    const CompareView::CapturedRun* other = nullptr;
    for (const CompareView::CapturedRun& run : captured)
        if (!snapshot_of(run).isEmpty() && snapshot_of(run) != snapshot_of(captured[0])) {
            other = &run;
            break;
        }
    if (!other)
        return;
    const std::optional<JobController::Connected> first = controller_->find(backends.value(captured[0].job));
    const std::optional<JobController::Connected> second = controller_->find(backends.value(other->job));
    const QString title = tr("Code: %1 → %2").arg(captured[0].name, other->name);
    if (!first || !second) {
        compare_->setCodeDiff(title, tr("(the code diff needs both runs' backends connected)"));
        return;
    }
    const BackendRef a = BackendRef::of(first->backend), b = BackendRef::of(second->backend);
    run_in_background(
        this,
        [a, b, snapshot_a = snapshot_of(captured[0]), snapshot_b = snapshot_of(*other)] {
            const BackendRef::Use use_a = a.use(), use_b = b.use();
            if (!use_a || !use_b)
                return tr("(a backend was closed)");
            QString error;
            const QByteArray manifest_a = use_a->codeManifest(snapshot_a, &error);
            const QByteArray manifest_b = manifest_a.isEmpty() ? QByteArray() : use_b->codeManifest(snapshot_b, &error);
            if (manifest_b.isEmpty())
                return tr("(cannot read the snapshots: %1)").arg(error);
            Backend* backend_a = &*use_a;
            Backend* backend_b = &*use_b;
            return snapshot_diff(manifest_a, manifest_b, [&](const QString& sha256, bool second_run, QString* why) {
                return (second_run ? backend_b : backend_a)->codeChunk(sha256, why);
            });
        },
        [this, generation, title](const QString& diff) {
            if (generation == compare_captures_generation_)
                compare_->setCodeDiff(title, diff.isEmpty() ? tr("(the same files)") : diff);
        });
}

} // namespace traindeck
