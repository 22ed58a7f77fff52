#pragma once
// The console's main window: the runs table (query box, any config key or summary as a column, tags, notes, stars,
// archive, delete with undo, saved views), the selected job's live curves, the Compare tab (groups with bands, config
// diff, summaries, parallel coordinates, scatter), the backend's resources and the alerts. It reads models and acts on
// jobs through its JobController (which backend, upload then submit) and their JobSync; no SQL, no HTTP here.
#include "backendtablemodel.h"
#include "compareview.h"
#include "datasetsview.h"
#include "datasetsync.h"
#include "jobcontroller.h"
#include "jobdetailview.h"
#include "jobmigrator.h"
#include "jobsync.h"
#include "jobtablemodel.h"
#include "runexport.h"
#include "settingsdialog.h"

#include <QHash>
#include <QSet>
#include <QMainWindow>

#include <functional>
#include <vector>
#include <QModelIndex>

class QListWidget;
class QLabel;
class QLineEdit;
class QMenu;
class QToolButton;
class QTabWidget;
class QTableView;
class QTimer;
class QSystemTrayIcon;

namespace traindeck {

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    // The first backend (the local worker); more join through addBackend().
    MainWindow(const QString& catalog_path, JobSync& sync, Backend& backend, QWidget* parent = nullptr);
    // Before the widgets go: the runs table's header resizes its sections as it is hidden, and its slots here use
    // members already destroyed by then.
    ~MainWindow() override;
    void addBackend(const QString& name, JobSync& sync, Backend& backend);
    QStringList backendNames() const;

    // The demo jobs of the toolbar: built-in specs on Fashion-MNIST.
    void submitDemo(const QString& model);
    // What the New job… dialog's Submit does.
    void submitDialog(const class NewJobDialog& dialog);
    JobTableModel& jobs() { return *jobs_; }
    BackendTableModel& backendsModel() { return *backends_model_; }
    JobDetailView& detail() { return *detail_; }
    class ReproducibilityView& reproducibility() {
        return *reproducibility_;
    }
    class ResultsView& results() {
        return *results_;
    }
    QTabWidget& jobTabs() { return *job_tabs_; }
    // Reruns a run exactly (model/reproduce.h) on a backend the user picks; tests pick through the hook instead of
    // the dialog (and confirm any warning).
    void reproduceRun(qint64 job);
    // Reads an exported model's metadata (off the GUI thread) and says which run and checkpoint made it; selects
    // that run when this catalog holds it. What it found: modelProvenance(). quietly: no message box (tests).
    void openExportedModel(const QString& path);
    QString modelProvenance() const { return model_provenance_; }
    void setOpenModelQuietly(bool quietly) { open_model_quietly_ = quietly; }
    void setReproduceTarget(std::function<QString(const QStringList& backends)> pick) {
        reproduce_target_ = std::move(pick);
    }
    QTableView& table() { return *table_; }
    DatasetsView& datasets() { return *datasets_; }
    DatasetSync& datasetSync() { return *dataset_sync_; }
    QTabWidget& tabs() { return *tabs_; }
    JobMigrator& migrator() { return *migrator_; }
    class GroupChart& groups() {
        return *groups_;
    }
    class CompareView& compare() {
        return *compare_;
    }
    class SweepView& sweeps() {
        return *sweeps_;
    }
    // The query box (its error, if any, is shown under it, and the table keeps its last good result).
    void setQuery(const QString& text);
    QString queryError() const;
    // "Only what differs": the config keys that differ among the runs shown become the extra columns.
    void setOnlyDiffering(bool on);
    bool onlyDiffering() const;
    // A column of what each run had spent when a metric first reached a value ("val/accuracy >= 0.9"); false (and an
    // alert saying the form) when the text is not such a target.
    bool addSpendToReachColumn(const QString& target);
    // Run hygiene on the selected runs, through the catalog's writer; the table refreshes once they are written.
    void tagSelected(const QStringList& tags, bool add);
    void starSelected(bool starred);
    void archiveSelected(bool archived);
    void setNoteOfCurrent(const QString& note);
    // Deletes the selected runs that have finished from the catalog (each undo brings back the most recent deletion
    // not yet undone, until the console closes); an active run is left alone and said so. With files: their record
    // and files on their worker go too, for good (undo brings back the catalog's record only).
    void deleteSelected(bool with_files = false);
    void undoDelete();
    // Saved views: the query, the columns the user chose, "only what differs", the grouping and the group chart's
    // metric, x-axis, band and log scale, under a name, in the catalog.
    void saveView(const QString& name);
    bool applyView(const QString& name);
    // The runs the Compare tab shows: the selected rows when two or more are, else every run the table shows. While
    // the parallel coordinates' brushes narrow the table, the runs it compared before them (the brushes are kept).
    std::vector<RunRecord> compareRuns() const;
    void updateCompare();
    JobController& controller() { return *controller_; }
    void selectRow(int row);
    // One of the runs table's own columns shown or hidden (the header's menu; kept at the next start).
    void showColumn(int column, bool shown);
    // Remove backend… for `name` (the Backends table's chosen row): refused, said, while a run is still going there.
    void removeBackend(const QString& name);
    // BackendConnector forgot it (removed(name, note)): it takes no new work, its Remove is greyed, the user is told.
    void backendRemoved(const QString& name, const QString& keyring_note);
    // The alerts panel's rows, newest first (each as shown: time, then the message).
    QStringList alerts() const;
    // Export model… for the current job: the dialog, opened non-modal (returned for tests).
    class ExportDialog* exportSelected();
    // First start: Debian's Fashion-MNIST as a ready dataset version.
    void registerFashionMnist();
    // The window's actions by name (the menus, the toolbar and the runs table's context menu share them:
    // "new_job", "cancel", "archive", ...), and every action of the menu bar in menu order.
    QAction* action(const QString& name) const;
    QList<QAction*> menuActions() const;
    // Import runs…: the dialog; given paths (a drop on the window), it imports them at once.
    class ImportDialog* importPaths(const QStringList& paths);
    // Export runs as…: the runs `ids` (the selection) written under `folder` off the GUI thread, each a CSV or JSONL
    // file or a TensorBoard run folder named after it (export_paths), as traindeck-cli export writes a selection;
    // the alerts panel says what was written (and runsExported says it too, with it).
    void exportRuns(const QList<qint64>& ids, RunExportFormat format, const QString& folder);
    // A dropped path: a folder of class folders of images (directly, or as train/ and test/) is registered as a
    // dataset version and New job opens on it (non-modal) with defaults from the images; anything else imports.
    // Looked at off the GUI thread; `opened` (tests) gets the dialog, or null when the path went to the importer.
    void dropPath(const QString& dropped, const std::function<void(class NewJobDialog*)>& opened = {});

    // What Settings… does with the dialog's answer once it is saved: the theme, the chart defaults, and the local
    // worker's prices and idle alert (pushLocalPolicy) where they changed.
    void applySettings(const ConsoleSettings& settings);

signals:
    // The user asked to add a remote worker (the app wires this to its BackendManager).
    void addRemoteWorkerRequested();
    // Remove backend… for a backend with no run still going (BackendManager asks, then forgets it).
    void removeBackendRequested(const QString& name);
    void addSshHostRequested();
    void addCloudProviderRequested();
    // exportRuns() is done: what the alerts panel says of it.
    void runsExported(const QString& summary);

public slots:
    void refresh();
    void addAlert(const QString& message);

protected:
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;

private:
    // Compare → Environment's code diff of two of the compared runs (their captures just read).
    void showCodeDiff(const QList<CompareView::CapturedRun>& captured, const QHash<qint64, QString>& backends,
                      int generation);
    // Runs another program added or resumed in the catalog (traindeck-cli submit, resume) are watched as the
    // console's own are: each sync looks again for the active jobs of its backend when a new one shows.
    void watchNewRuns();
    void scheduleRefresh(); // refresh() within 200 ms, once however many ask meanwhile
    void cancelSelected();
    void connectSync(JobSync& sync);
    void cloneSelected();
    void resumeSelected();
    void trainOnImageFolder(const QString& root, const struct ImageFolderSurvey& survey,
                            const std::function<void(class NewJobDialog*)>& opened);
    void updateResources();
    // "Release now" on the instances table: the provider deletes the instance (off the GUI thread).
    void releaseInstance(const QString& backend_name, const QString& instance);
    QList<QPair<QString, QString>> datasetChoices();
    // The jobs table's current row, in the jobs model (invalid when there is none), and the job on a row.
    QModelIndex currentJob() const;
    JobController::Job jobAt(const QModelIndex& source) const;
    QList<qint64> selectedIds() const;
    // The selected rows, or the current one when none is selected (what the run actions act on).
    QModelIndexList selectedRowsOrCurrent() const;
    // Runs fn on the writer thread for each id, then refreshes once it is committed.
    void writeRuns(const QList<qint64>& ids, std::function<void(Catalog&, int64_t)> fn);
    void showTableMenu(const QPoint& at);
    void showColumnsMenu();
    // With "only what differs" on, the extra columns become the keys that differ among the runs shown now.
    void followDifferingKeys();
    // Adds the column (a config key, a summary, a spend-to-reach target) at the end, or removes it.
    void chooseColumn(const QString& field, bool shown);
    void exportTableCsv();
    void exportCurrentSeriesCsv();
    // The menu bar, the toolbar and their actions (README: The console); updateActions disables those that need
    // a selected run while there is none, saying so in their tips.
    void createActions();
    void updateActions();
    // Settings… (settingsdialog.h): the dialog, and what changes at once (theme, chart defaults, notifications).
    void openSettings();
    // The window as the user left it (QSettings), saved when it closes.
    void restoreLayout();
    void saveLayout();
    void fitColumns();
    QString chosenBackend() const; // the Backends table's current row's name, or ""
    void sayCatalogError(const QString& error); // an alert, once per new message ("" says nothing)
    void updateBackendActions();
    void fitSoon(bool all); // all: every column fitted again (else they only grow)
    QString columnKey(int column) const;
    // Settings' prices and idle alert to the local worker (Backend::setPolicy), off the GUI thread.
    void pushLocalPolicy();
    void closeEvent(QCloseEvent* event) override;
    // A palette change (Settings → Appearance, or the desktop's): the actions' icons drawn for it (readableIcons()).
    void changeEvent(QEvent* event) override;
    // Each action's icon as the palette needs it: a dark monochrome one (Qt's own play and stop are black) drawn in
    // the palette's text colour on a dark palette, so it shows on a dark toolbar; any other as it is.
    void readableIcons();
    // The status bar's "today" and the tray icon's tip: jobs running now and what every run spent since midnight (read
    // on a pool thread; one read at a time, another after it when the catalog changed meanwhile).
    void updateTray();
    // An empty runs table says how to start (no runs yet: New job…, the demo) or that the query hides every run.
    void updateEmptyState();

    JobController* controller_;
    JobTableModel* jobs_;
    CatalogWriter& writer_;
    QTableView* table_;
    QLineEdit* filter_;
    QLabel* query_error_;
    QToolButton* columns_button_;
    QToolButton* views_button_;
    QAction* only_differing_;
    QHash<QString, QAction*> actions_;
    QList<QAction*> run_actions_;          // disabled while no run is selected
    QStringList chosen_columns_;           // the extra columns the user picked (kept while "only what differs" is on)
    QList<qint64> compared_selection_;     // the selection last compared (empty: every run the query shows)
    std::vector<QList<qint64>> deletions_; // this session's deletions not undone, the most recent last
    class GroupChart* groups_;
    class CompareView* compare_;
    class SweepView* sweeps_ = nullptr;
    QWidget* compare_tab_;
    JobDetailView* detail_;
    class ReproducibilityView* reproducibility_;
    class ResultsView* results_;
    QTabWidget* job_tabs_;
    std::function<QString(const QStringList&)> reproduce_target_;
    QString model_provenance_;
    bool open_model_quietly_ = false;
    int compare_captures_generation_ = 0; // an older read of the compared runs' captures is dropped
    CatalogReader reader_;
    BackendTableModel* backends_model_;
    QTableView* backends_view_;
    class InstancesView* instances_view_;
    QListWidget* alerts_;
    QTimer* refresh_timer_;
    QTabWidget* tabs_;
    DatasetSync* dataset_sync_;
    DatasetsView* datasets_;
    JobMigrator* migrator_;
    QSystemTrayIcon* tray_ = nullptr;
    QAction* tray_status_ = nullptr; // the tray menu's first line: "2 running · €1.23 today"
    QLabel* today_ = nullptr; // "2 running · €1.23 today"
    bool today_reading_ = false, today_again_ = false;
    ConsoleSettings settings_;
    bool settings_applied_ = false;
    QWidget* empty_ = nullptr;
    QLabel* empty_text_ = nullptr;
    QList<QToolButton*> empty_button_list_;
    QSet<int> hidden_columns_; // of the runs table's own columns (the header's menu; kept across model resets)
    QHash<QString, int> user_widths_; // the runs table's columns the user dragged (columnKey)
    bool fitting_columns_ = false;    // fitColumns is resizing: not the user
    bool fit_all_ = true;             // the next fit may shrink columns too
    QTimer* fit_timer_ = nullptr;     // one fit for a burst of model changes
    bool refresh_pending_ = false;
    QTimer* follow_timer_;     // reads what other programs wrote to the catalog (each second)
    QSet<qint64> active_runs_; // the active runs last seen, for watchNewRuns
    QString last_catalog_error_;
    QString pending_drop_; // the dropped image folder being registered (its name), or empty
};

} // namespace traindeck
