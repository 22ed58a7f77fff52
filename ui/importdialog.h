#pragma once
// Import runs…: runs of other tools into the catalog (RunImporter does the work). A folder or file chosen here, or
// dropped on the jobs view; the format detected unless the user picks one; progress with points/s and Cancel; then
// a summary of what came in and every piece of damage. Imported runs are runs like any other (table, groups,
// compare). "Keep following" goes on importing what is written there (a logdir of a run still training) until the
// user stops it. Closing the dialog while it imports cancels after the run being written.
#include "runimporter.h"

#include <QDialog>

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;

namespace traindeck {

class ImportDialog : public QDialog {
    Q_OBJECT
public:
    ImportDialog(CatalogWriter& writer, QWidget* parent = nullptr);

    void setPaths(const QStringList& paths);
    void startImport();
    void setFollow(bool follow); // "Keep following" (before startImport)
    void stop();                 // Cancel import / Stop following
    bool importing() const { return importer_.busy(); }
    QString status() const;
    QString summaryText() const;

signals:
    void imported(const QList<qint64>& jobs); // after each import that wrote runs (the window refreshes)

protected:
    void reject() override;

private:
    void finish(const RunImporter::Summary& summary);

    RunImporter importer_;
    QLineEdit* paths_;
    QComboBox* format_;
    QCheckBox* deleted_;
    QCheckBox* follow_;
    QPushButton* import_;
    QPushButton* cancel_;
    QProgressBar* bar_;
    QLabel* status_;
    QPlainTextEdit* summary_;
};

} // namespace traindeck
