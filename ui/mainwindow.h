#pragma once
// The console's main window: jobs table (sortable, filterable), the selected job's live curves, the backend's
// resources and the alerts. It reads models and acts on jobs through its JobController (which backend, upload then
// submit) and their JobSync; no SQL, no HTTP here.
#include "backendtablemodel.h"
#include "datasetsview.h"
#include "datasetsync.h"
#include "jobcontroller.h"
#include "jobdetailview.h"
#include "jobmigrator.h"
#include "jobsync.h"
#include "jobtablemodel.h"

#include <QMainWindow>
#include <QModelIndex>

class QListWidget;
class QLabel;
class QLineEdit;
class QSortFilterProxyModel;
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
    void addBackend(const QString& name, JobSync& sync, Backend& backend);
    QStringList backendNames() const;

    // The demo jobs of the toolbar: built-in specs on Fashion-MNIST.
    void submitDemo(const QString& model);
    // What the New job… dialog's Submit does.
    void submitDialog(const class NewJobDialog& dialog);
    JobTableModel& jobs() { return *jobs_; }
    BackendTableModel& backendsModel() { return *backends_model_; }
    JobDetailView& detail() { return *detail_; }
    QTableView& table() { return *table_; }
    DatasetsView& datasets() { return *datasets_; }
    DatasetSync& datasetSync() { return *dataset_sync_; }
    QTabWidget& tabs() { return *tabs_; }
    JobMigrator& migrator() { return *migrator_; }
    JobController& controller() { return *controller_; }
    void selectRow(int row);
    // The alerts panel's rows, newest first (each as shown: time, then the message).
    QStringList alerts() const;
    // Export model… for the current job: the dialog, opened non-modal (returned for tests).
    class ExportDialog* exportSelected();
    // First start: Debian's Fashion-MNIST as a ready dataset version.
    void registerFashionMnist();

signals:
    // The user asked to add a remote worker (the app wires this to its BackendManager).
    void addRemoteWorkerRequested();

public slots:
    void refresh();
    void addAlert(const QString& message);

private:
    void cancelSelected();
    void connectSync(JobSync& sync);
    void cloneSelected();
    void resumeSelected();
    void updateResources();
    QList<QPair<QString, QString>> datasetChoices();
    // The jobs table's current row, in the jobs model (invalid when there is none), and the job on a row.
    QModelIndex currentJob() const;
    JobController::Job jobAt(const QModelIndex& source) const;

    JobController* controller_;
    JobTableModel* jobs_;
    QSortFilterProxyModel* proxy_;
    QTableView* table_;
    QLineEdit* filter_;
    JobDetailView* detail_;
    CatalogReader reader_;
    BackendTableModel* backends_model_;
    QTableView* backends_view_;
    QListWidget* alerts_;
    QTimer* refresh_timer_;
    QTabWidget* tabs_;
    DatasetSync* dataset_sync_;
    DatasetsView* datasets_;
    JobMigrator* migrator_;
    QSystemTrayIcon* tray_ = nullptr;
    bool refresh_pending_ = false;
    QString last_catalog_error_;
};

} // namespace traindeck
