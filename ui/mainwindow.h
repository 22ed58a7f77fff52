#pragma once
// The console's main window: jobs table (sortable, filterable), the selected job's live curves, the backend's
// resources and the alerts. It reads models and calls the backend through JobSync; no SQL, no HTTP here.
#include "jobdetailview.h"
#include "jobsync.h"
#include "jobtablemodel.h"

#include <QMainWindow>

class QListWidget;
class QLabel;
class QLineEdit;
class QSortFilterProxyModel;
class QTableView;
class QTimer;
class QSystemTrayIcon;

namespace traindeck {

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    MainWindow(const QString& catalog_path, JobSync& sync, Backend& backend, QWidget* parent = nullptr);

    // The demo jobs of the toolbar: built-in specs on Fashion-MNIST.
    void submitDemo(const QString& model);
    // What the New job… dialog's Submit does.
    void submitDialog(const class NewJobDialog& dialog);
    JobTableModel& jobs() { return *jobs_; }
    JobDetailView& detail() { return *detail_; }
    QTableView& table() { return *table_; }
    void selectRow(int row);

public slots:
    void refresh();
    void addAlert(const QString& message);

private:
    void cancelSelected();
    void cloneSelected();
    void resumeSelected();
    void updateResources();

    JobSync& sync_;
    Backend& backend_;
    JobTableModel* jobs_;
    QSortFilterProxyModel* proxy_;
    QTableView* table_;
    QLineEdit* filter_;
    JobDetailView* detail_;
    CatalogReader reader_;
    QLabel* resources_;
    QListWidget* alerts_;
    QTimer* refresh_timer_;
    QSystemTrayIcon* tray_ = nullptr;
    bool refresh_pending_ = false;
};

} // namespace traindeck
