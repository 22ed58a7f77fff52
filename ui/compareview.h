#pragma once
// The compare view for a selection of runs (no cap on how many): the config keys that differ among them side by
// side, their summary values side by side (the best run of each row in bold, by the metric's goal), parallel
// coordinates of chosen keys against a chosen summary value (brushing an axis filters the runs table: brushChanged),
// and a scatter of any key or summary value against any summary value. Each tab exports (Export…): the tables to
// CSV, the plots to PNG, SVG or PDF at publication size (chartexport.h). Works on RunRecords handed to it; it reads
// nothing itself.
#include "runrecord.h"

#include <QSet>
#include <QStringList>
#include <QWidget>

#include <vector>

class QCheckBox;
class QChart;
class QChartView;
class QComboBox;
class QLabel;
class QListWidget;
class QPlainTextEdit;
class QScatterSeries;
class QStandardItemModel;
class QTabWidget;
class QTableView;
class QAbstractItemModel;

namespace traindeck {

class ParallelCoordinates;

class CompareView : public QWidget {
    Q_OBJECT
public:
    enum Tab { configTab, summaryTab, parallelTab, scatterTab, environmentTab };

    explicit CompareView(QWidget* parent = nullptr);

    void setRuns(std::vector<RunRecord> runs);
    ParallelCoordinates& parallel() { return *parallel_; }

    // The config diff: column 0 the key, then one column per run (header = run name); one row per differing key,
    // or per key of any run with showAllKeys.
    const QAbstractItemModel& configModel() const;
    void setShowAllKeys(bool all);
    // The summaries: columns "metric", "summary" (last, min, max, best), then one per run.
    const QAbstractItemModel& summaryModel() const;

    // "last.loss", "best.val/accuracy", … for every series any run has.
    QStringList summaryFields() const { return summary_fields_; }
    // The scatter's axes: x a config key or a summary field, y a summary field.
    void setScatterFields(const QString& x, const QString& y);
    // The scatter, brought up to date first (while its tab is hidden it is rebuilt only when shown).
    QChart* scatterChart();
    void setCurrentTab(Tab tab);

    // The runs' captures (backend/worker/capture.h: "code" and "environment" JSON, empty when a run has none), for
    // the Environment tab: what differs from the first run in code, Python packages, machine and variables, one
    // column per run.
    struct CapturedRun {
        qint64 job = 0;
        QString name;
        QByteArray code, environment;
    };
    void setCaptures(const QList<CapturedRun>& runs);
    // Columns "kind", "what", then one per run; one row per thing that differs.
    const QAbstractItemModel& environmentModel() const;
    QString environmentNote() const;
    // The code two of the runs started from, file by file (model/reproduce.h's snapshot_diff), under a title saying
    // which two; "" hides it.
    void setCodeDiff(const QString& title, const QString& diff);
    QString codeDiff() const;

    // Exports the current tab to `path`: the tables as CSV, the plots as PNG, SVG or PDF (by the suffix; a table
    // tab also takes .csv only). "" or what went wrong.
    QString exportCurrent(const QString& path);

    QSize sizeHint() const override { return {1200, 800}; }

signals:
    // The runs inside the parallel coordinates' brushes; active is false when there is no brush (all runs).
    void brushChanged(QSet<qint64> ids, bool active);

protected:
    // A theme switched: the tables' tints are made again for the new palette (theme.h background_tint).
    void changeEvent(QEvent* event) override;

private:
    void rebuildConfigTable();
    void rebuildSummaryTable();
    void rebuildAxisChooser();
    void applyParallelAxes();
    void rebuildScatter(); // now when the scatter's tab is shown, else when it is next shown
    void rebuildScatterNow();
    void updateBrushLabel();
    void exportWithDialog();

    std::vector<RunRecord> runs_;
    std::vector<std::string> differing_, all_keys_;
    QStringList summary_fields_;

    QLabel* heading_;
    QTabWidget* tabs_;
    QStandardItemModel* config_model_;
    QTableView* config_table_;
    QCheckBox* show_all_keys_;
    QStandardItemModel* summary_model_;
    QTableView* summary_table_;
    QStandardItemModel* environment_model_;
    QTableView* environment_table_;
    QLabel* environment_note_;
    QLabel* code_diff_title_;
    QPlainTextEdit* code_diff_;
    ParallelCoordinates* parallel_;
    QListWidget* axis_list_;
    QComboBox* metric_;
    QLabel* brush_label_;
    QComboBox* scatter_x_;
    QComboBox* scatter_y_;
    QCheckBox* scatter_log_x_;
    QString log_chosen_for_; // the X field the log scale was last chosen for
    QChart* scatter_chart_;
    QChartView* scatter_view_;
    struct ScatterPoint {
        QPointF at;
        size_t run;
    };
    std::vector<ScatterPoint> scatter_points_;
    bool updating_ = false;
    bool scatter_stale_ = false;
    QList<CapturedRun> captures_; // what setCaptures was given, for a theme switch
};

} // namespace traindeck
