#pragma once
// The Sweeps tab: every connected backend's sweeps in a list (name, state, trials against the maximum, the best
// objective value, spend against the budget) and, for the selected sweep, its spend against its budget as a bar,
// Stop / Resume / Extend… / Promote best, its trials (state, rung, every parameter, the objective's best and last,
// spend), the ASHA rungs (how many trials reached each), the best-so-far curve of the objective over time or over
// spend (read from the trials' runs in the catalog, off the GUI thread), and parallel coordinates of the space against
// the objective. It keeps one SweepSync per backend the JobController has (made as backends connect), which polls and
// imports the trials as runs; "New sweep…" opens the NewSweepDialog and starts what it makes there. No SQL, no HTTP.
#include "sweeplistmodel.h"
#include "sweeptablemodel.h"

#include <QHash>
#include <QJsonObject>
#include <QPointer>
#include <QWidget>

#include <map>
#include <memory>

class QChart;
class QChartView;
class QCheckBox;
class QComboBox;
class QGridLayout;
class QGroupBox;
class QLabel;
class QLineSeries;
class QProgressBar;
class QPushButton;
class QScatterSeries;
class QSortFilterProxyModel;
class QTableView;
class QTimer;

namespace traindeck {

class JobController;
class ParallelCoordinates;
class SweepSync;

class SweepView : public QWidget {
    Q_OBJECT
public:
    SweepView(const QString& catalog_path, JobController& controller, QWidget* parent = nullptr);

    // The SweepSync of a connected backend (made when first asked for); null when no backend of that name is.
    SweepSync* syncFor(const QString& backend);
    // "New sweep…": the dialog, modal; what it makes is started on the backend it names.
    void newSweep();
    void create(const QString& backend, const QJsonObject& spec);

    // The sweep shown; false when the list has no such sweep (yet).
    bool selectSweep(const QString& backend, qint64 id);
    qint64 currentSweep() const { return current_id_; }
    QString currentBackend() const { return current_backend_; }
    QJsonObject currentDetail() const;

    // What the buttons do, on the sweep shown.
    void stopCurrent();
    void resumeCurrent();
    void extendCurrent(const QJsonObject& body); // {"max_trials", "budget", "gpu_hours"}
    void promoteCurrent();

    enum class BestAxis { time, spend };
    void setBestAxis(BestAxis axis);
    QChart* bestChart() const { return best_chart_; }
    int bestPointCount() const; // the objective values the curve is drawn from

    SweepListModel& sweepsModel() { return *sweeps_; }
    SweepTableModel& trialsModel() { return *trials_; }
    ParallelCoordinates& parallel() { return *parallel_; }
    QProgressBar& spendBar() { return *spend_bar_; }
    // Each rung's row as shown: "rung 0 (1 epochs): 3 of 3 trials".
    QStringList rungTexts() const;
    QPushButton* stopButton() const { return stop_; }
    QPushButton* resumeButton() const { return resume_; }
    QPushButton* promoteButton() const { return promote_; }
    // The last thing the sweeps said here (a failure in red, above the list), also sent to the window's alerts.
    QString notice() const;

signals:
    void problem(const QString& message); // for the window's alerts
    void bestUpdated();                   // the best-so-far curve was drawn again

private:
    void followBackends(); // a SweepSync for each backend the controller has that has none yet
    void showSelected();
    void showDetail(const QJsonObject& detail);
    void showSpend(const QJsonObject& detail);
    void showRungs(const QJsonObject& detail);
    void showParallel(const QJsonObject& detail);
    void updateButtons();
    void say(const QString& message, bool failure);
    void recomputeBest();
    void scheduleBest();
    void drawBest();
    void extendWithDialog();

    QString catalog_path_;
    JobController& controller_;
    std::map<QString, SweepSync*> syncs_; // by backend name; children of this view
    QTimer* follow_timer_;
    QTimer* best_timer_;

    SweepListModel* sweeps_;
    QTableView* list_;
    QString current_backend_;
    qint64 current_id_ = 0;
    QString pending_backend_; // a sweep just created, selected once it is listed
    qint64 pending_id_ = 0;

    QLabel* title_;
    QLabel* reason_;
    QLabel* notice_;
    QProgressBar* spend_bar_;
    QPushButton* stop_;
    QPushButton* resume_;
    QPushButton* extend_;
    QPushButton* promote_;
    SweepTableModel* trials_;
    QSortFilterProxyModel* trials_sorted_;
    QTableView* trials_view_;
    QGroupBox* rungs_box_;
    QGridLayout* rungs_layout_;
    QList<QPair<QLabel*, QProgressBar*>> rung_rows_;
    QLabel* rungs_none_;
    QComboBox* best_axis_;
    QCheckBox* best_log_; // the best-so-far chart's own log scale (a loss falling over decades)
    QChart* best_chart_;
    QChartView* best_view_;
    QLineSeries* best_line_;
    QScatterSeries* reports_;
    ParallelCoordinates* parallel_;
    QStringList parallel_keys_;
    QString parallel_metric_;

    struct Report {
        double time, spend, value, best;
        int trial;
    };
    std::vector<Report> best_points_;
    double best_origin_ = 0; // the sweep's start (Unix seconds): the time axis counts from it
    QString best_metric_, best_error_;
    quint64 best_generation_ = 0;
    bool best_reading_ = false, best_again_ = false;
};

} // namespace traindeck
