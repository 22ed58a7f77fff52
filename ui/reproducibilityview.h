#pragma once
// A run's Reproducibility panel: what it was made of, as its worker captured it when it started
// (backend/worker/capture.h, kept by the catalog): its code (commit, branch, remote, uncommitted or not, the diff,
// the snapshot and what was never captured), its Python packages (and the Debian packages behind them), its machine,
// its environment variables, and its lineage (dataset version -> run -> checkpoints -> exports). "Rerun exactly…"
// asks for the run again from its snapshot (reproduceRequested). Read on a pool thread; the GUI thread never waits
// on the catalog.
#include "jobtablemodel.h"

#include <QWidget>

class QLabel;
class QPlainTextEdit;
class QPushButton;
class QTabWidget;
class QTableWidget;
class QTreeWidget;

namespace traindeck {

class ReproducibilityView : public QWidget {
    Q_OBJECT
public:
    explicit ReproducibilityView(const QString& catalog_path, QWidget* parent = nullptr);
    void showJob(qint64 job);
    void refresh(); // the same job, read again (a capture may have come)

    // What shows, for tests.
    QString summary() const;
    QString diffText() const;
    int packageRows() const;
    QString packageVersion(const QString& name) const; // "" when the run has no such package
    QStringList leftOut() const;                       // "path: why"
    QStringList lineage() const;                       // the lineage tree's rows, depth-first, indented by depth
    QTabWidget* tabs() const { return tabs_; }
    bool canReproduce() const;

signals:
    void reproduceRequested(qint64 job);
    void loaded(); // a read was shown

private:
    struct Loaded;
    void show(const Loaded& loaded);

    QString catalog_path_;
    qint64 job_ = 0;
    int generation_ = 0; // a read for an earlier showJob is dropped
    QByteArray shown_;   // what the shown read held
    QLabel* summary_;
    QPushButton* reproduce_;
    QTabWidget* tabs_;
    QTableWidget* left_out_;
    QPlainTextEdit* diff_;
    QTableWidget* packages_;
    QTableWidget* system_;
    QTableWidget* environment_;
    QTreeWidget* lineage_;
};

} // namespace traindeck
