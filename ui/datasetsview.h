#pragma once
// The Datasets tab: registered versions (drop a folder or file on it, or use the buttons), the selected version's
// preview (IDX images with their labels, CSV rows with column types, class-folder thumbnails), what changed
// against the previous version of the same dataset, and upload to a backend with progress and throughput.
// Manifests, diffs, previews and thumbnails are read and decoded off the GUI thread; the view only shows results.
#include "datasetsync.h"
#include "datasettablemodel.h"
#include "jobcontroller.h"

#include <QWidget>

class QAction;
class QComboBox;
class QLabel;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QStackedWidget;
class QTableView;
class QTableWidget;

namespace traindeck {

class DatasetsView : public QWidget {
    Q_OBJECT
public:
    // backends: where versions can be uploaded to (the names of its connected backends).
    DatasetsView(const QString& catalog_path, DatasetSync& sync, const JobController& backends,
                 QWidget* parent = nullptr);

    DatasetTableModel& model() { return *model_; }
    QTableView& table() { return *table_; }
    QString status() const;
    QString diffText() const;
    QString previewSummary() const { return preview_summary_; }
    // The words the preview shows: its summary above the images or rows, or its message (empty state, errors).
    QString previewWords() const;
    // Registers a folder or file (what a drop does); the name is its file name.
    // false: busy with another dataset (said in the tab's status line).
    bool registerPath(const QString& root, const QString& name = {});
    void uploadSelected(const QString& backend_name);
    void selectVersion(const QString& version);
    void refreshBackends();
    // The tab's commands as actions (its buttons trigger them; the window's Datasets menu shows them): register a
    // folder, register a file, add Fashion-MNIST, upload the selected version, cancel the upload.
    QList<QAction*> commands() const { return commands_; }

protected:
    void dragEnterEvent(class QDragEnterEvent* event) override;
    void dropEvent(class QDropEvent* event) override;
    // A theme switched: the preview's images are drawn again on the new palette.
    void changeEvent(QEvent* event) override;

private:
    void showVersion(const QString& version);
    void showNothing(); // no version chosen: what to do first
    void setStatus(const QString& text, bool error = false);

    QString catalog_path_;
    DatasetSync& sync_;
    const JobController& backends_;
    DatasetTableModel* model_;
    QTableView* table_;
    QComboBox* backend_;
    QPushButton* upload_;
    QProgressBar* progress_;
    QLabel* status_;
    QStackedWidget* preview_;
    QLabel* images_;
    QTableWidget* rows_;
    QLabel* preview_text_;
    QLabel* summary_; // the preview in words, above its images or rows
    QPlainTextEdit* diff_;
    QString preview_summary_;
    QString shown_version_;
    QString kept_version_;
    QList<QAction*> commands_;
};

} // namespace traindeck
