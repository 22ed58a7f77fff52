#pragma once
// Runs grouped by config keys, drawn as one curve per group: the mean over the group's runs of each run's exact
// bucket value, with a band (± std, ± standard error or min–max) and N in the legend (with where it drops along the
// curve). The points are read and the statistics computed off the GUI thread (groupstats.h); a newer request
// replaces an older one still running.
#include "groupstats.h"
#include "runrecord.h"
#include "xaxis.h"

#include <QStringList>
#include <QWidget>

#include <vector>

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

    // The runs to group (the table's selection, or every run it shows). Suggests the group keys when none are
    // set: every config key that differs among the runs except seeds.
    void setRuns(std::vector<RunRecord> runs);
    void setGroupKeys(const QStringList& keys);
    QStringList groupKeys() const;
    void setMetric(const QString& series);
    QString metric() const;
    void setBand(Band band);
    // The x-axis: step (default), samples seen, wall time, time since start or spend; runs are aligned on it.
    void setXAxis(XAxis axis);
    XAxis xAxis() const;

    QChart* chart() const { return chart_; }
    // What is drawn, for tests and export: one entry per group, as its legend reads.
    QStringList legendNames() const;
    // The groups' summaries as the table under the chart shows them: per group, N and "mean ± std" of the metric's
    // best and last values (rows in the legend's order).
    QStringList summaryRows() const;
    // Writes the chart (PNG, SVG or PDF by the suffix) or, for .csv, the groups' curves with every bucket.
    QString exportTo(const QString& path);
    // The curves last drawn, per group, in the legend's order.
    const std::vector<GroupCurve>& curves() const { return curves_; }
    // Every config key that differs among the runs except seed-like ones (the default grouping).
    static QStringList suggestedKeys(const std::vector<RunRecord>& runs);

signals:
    void updated(); // new curves are drawn

private:
    void recompute();
    void draw(const std::vector<RunGroup>& groups, std::vector<GroupCurve> curves, const QString& error);

    QString catalog_path_;
    std::vector<RunRecord> runs_;
    QLineEdit* keys_;
    QComboBox* metric_;
    QComboBox* band_;
    QComboBox* x_axis_;
    QLabel* status_;
    QTableWidget* summary_;
    std::vector<RunGroup> groups_;
    QChart* chart_;
    QChartView* view_;
    std::vector<GroupCurve> curves_;
    QStringList legend_;
    quint64 generation_ = 0;
};

} // namespace traindeck
