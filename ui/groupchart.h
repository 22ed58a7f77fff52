#pragma once
// Runs grouped by config keys, drawn as one curve per group: the mean over the group's runs of each run's exact
// bucket value, with a band (± std, ± standard error or min–max) and N in the legend (with where it drops along the
// curve), on a linear or log y-axis. Under it the group table: per group N and the mean ± std over its runs of the
// metric's last, min, max and best (the runs' own summaries). The points are read and the statistics computed off
// the GUI thread (groupstats.h); a newer request replaces an older one still running. Export…: the chart to PNG,
// SVG or PDF, the curves or the group table to CSV.
#include "groupstats.h"
#include "runrecord.h"
#include "xaxis.h"

#include <QStringList>
#include <QWidget>

#include <vector>

class QCheckBox;
class QChart;
class QChartView;
class QComboBox;
class QLabel;
class QLineEdit;
class QTableWidget;

namespace traindeck {

class GroupChart : public QWidget {
    Q_OBJECT
public:
    explicit GroupChart(const QString& catalog_path, QWidget* parent = nullptr);
    ~GroupChart() override;

    // The runs to group (the table's selection, or every run it shows). Suggests the group keys when none are
    // set: every config key that differs among the runs except seeds.
    void setRuns(std::vector<RunRecord> runs);
    void setGroupKeys(const QStringList& keys);
    QStringList groupKeys() const;
    void setMetric(const QString& series);
    QString metric() const;
    void setBand(Band band);
    Band band() const;
    // A log y-axis (base 10); values at or below zero (a band's low edge under a small mean) are drawn at 1e-6, as
    // the job view's log scale does.
    void setLogScale(bool on);
    bool logScale() const;
    // The x-axis: step (default), samples seen, wall time, time since start or spend; runs are aligned on it.
    void setXAxis(XAxis axis);
    XAxis xAxis() const;

    QChart* chart() const { return chart_; }
    // What is drawn, for tests and export: one entry per group, as its legend reads.
    QStringList legendNames() const;
    // The group table as shown, a row per group in the legend's order, cells joined by " | ": the group, N, then
    // "mean ± std" (the mean alone for one run, "–" for none) of the metric's last, min, max and best.
    QStringList summaryRows() const;
    // One group's row of the table in numbers: the mean and sample standard deviation over the group's runs of each
    // of the metric's summary values (NaN where no run has one), N the group's runs.
    struct GroupSummary {
        QStringList values; // the group keys' values, in the keys' order
        int n = 0;
        SummaryStat last, min, max, best;
    };
    const std::vector<GroupSummary>& summaries() const { return summaries_; }
    // What Export… writes: the chart (.png, .svg or .pdf by the suffix), the groups' curves with every bucket
    // (series,step,value: each group's mean, low, high and n), or the group table with raw numbers (a column per
    // group key, N, then a mean and a std column for each summary value), both as CSV.
    enum class Export { chart, curves, table };
    // The chart is drawn into the file here; a CSV is written on a pool thread. exported(path, error) follows, ""
    // or what went wrong.
    void exportTo(Export what, const QString& path);
    // The curves last drawn, per group, in the legend's order.
    const std::vector<GroupCurve>& curves() const { return curves_; }
    // Every config key that differs among the runs except seed-like ones (the default grouping).
    static QStringList suggestedKeys(const std::vector<RunRecord>& runs);

signals:
    void updated(); // new curves are drawn
    void exported(const QString& path, const QString& error);

private:
    void recompute();
    void draw(std::vector<RunGroup> groups, std::vector<GroupCurve> curves, const QString& error);
    void drawCurves(); // the chart from groups_ and curves_, on the axis the log scale asks for
    void fillTable();  // summaries_ and the table from groups_ and the runs' summaries
    void exportWithDialog();

    QString catalog_path_;
    std::vector<RunRecord> runs_;
    QLineEdit* keys_;
    QComboBox* metric_;
    QComboBox* band_;
    QComboBox* x_axis_;
    QCheckBox* log_scale_;
    QLabel* status_;
    QTableWidget* summary_;
    std::vector<RunGroup> groups_;
    QChart* chart_;
    QChartView* view_;
    std::vector<GroupCurve> curves_;
    std::vector<GroupSummary> summaries_;
    QString error_; // why the last computation could not read the points ("" when it could)
    QStringList legend_;
    quint64 generation_ = 0;
};

} // namespace traindeck
