// GroupChart (groupchart.h): the controls, the background read, the drawing, the group table and export.
#include "groupchart.h"

#include "axisticks.h"
#include "background.h"
#include "catalog.h"
#include "chartexport.h"
#include "chartview.h"
#include "runfield.h"

#include <QAreaSeries>
#include <QChart>
#include <QChartView>
#include <QCheckBox>
#include <QComboBox>
#include <QDateTime>
#include <QDateTimeAxis>
#include <QDir>
#include <QFileDialog>
#include <QHeaderView>
#include <QPushButton>
#include <QTableWidget>
#include <QHBoxLayout>
#include <QLabel>
#include <QLegend>
#include <QLegendMarker>
#include <QLineEdit>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QStandardItemModel>
#include <QThreadPool>
#include <QValueAxis>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <unordered_map>

namespace traindeck {

namespace {

// Tableau's ten: distinct at a glance, readable on white.
const QColor kPalette[] = {{31, 119, 180}, {255, 127, 14},  {44, 160, 44},   {214, 39, 40},  {148, 103, 189},
                           {140, 86, 75},  {227, 119, 194}, {127, 127, 127}, {188, 189, 34}, {23, 190, 207}};

bool seed_like(const std::string& key) {
    const size_t dot = key.rfind('.');
    const std::string last = dot == std::string::npos ? key : key.substr(dot + 1);
    return last == "seed" || last == "random_seed" || last == "rng_seed";
}

// The chart's statistics pool: reading 100 series of 100,000 points is disk work, not network work.
QThreadPool* statistics_pool() {
    static QThreadPool* pool = [] {
        auto* p = new QThreadPool;
        p->setMaxThreadCount(1); // one at a time: a newer request waits for the older, whose answer is ignored
        return p;
    }();
    return pool;
}

// Where a log axis draws what is at or below zero, as the job view's log scale does.
constexpr double kLogFloor = 1e-6;

struct Computed {
    quint64 generation = 0;
    std::vector<RunGroup> groups;
    std::vector<GroupCurve> curves;
    QString error;
};

} // namespace

GroupChart::GroupChart(const QString& catalog_path, QWidget* parent) : QWidget(parent), catalog_path_(catalog_path) {
    keys_ = new QLineEdit;
    keys_->setPlaceholderText(tr("config keys, comma-separated (empty: one group)"));
    keys_->setToolTip(tr("Runs with the same values of these keys form a group; its curve is the mean over them"));
    metric_ = new QComboBox;
    metric_->setMinimumContentsLength(14);
    band_ = new QComboBox;
    band_->addItem(tr("± std"), static_cast<int>(Band::std_dev));
    band_->addItem(tr("± std. error"), static_cast<int>(Band::std_error));
    band_->addItem(tr("min–max"), static_cast<int>(Band::min_max));
    x_axis_ = new QComboBox;
    for (const XAxis axis : {XAxis::step, XAxis::samples, XAxis::wall_time, XAxis::relative_time, XAxis::spend})
        x_axis_->addItem(tr(x_axis_title(axis)), static_cast<int>(axis));
    x_axis_->setToolTip(tr("Align and draw the runs by step, samples seen, wall time, time since each run started, "
                           "or money spent"));
    log_scale_ = new QCheckBox(tr("Log scale"));
    log_scale_->setToolTip(tr("A log y-axis; values at or below zero (a band under a small mean) reach the bottom"));
    status_ = new QLabel;
    status_->setStyleSheet(QStringLiteral("color: palette(mid)"));

    chart_ = new QChart;
    view_ = make_chart_view(chart_);
    view_->setMinimumHeight(300);

    summary_ = new QTableWidget(0, 6);
    summary_->setHorizontalHeaderLabels({tr("Group"), tr("N"), tr("last"), tr("min"), tr("max"), tr("best")});
    summary_->verticalHeader()->hide();
    summary_->verticalHeader()->setDefaultSectionSize(summary_->fontMetrics().height() + 6);
    summary_->setWordWrap(false);
    summary_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    summary_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    summary_->setAlternatingRowColors(true);
    summary_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    summary_->setMaximumHeight(112);
    auto* export_button = new QPushButton(tr("Export…"));
    export_button->setToolTip(tr("The chart as PNG, SVG or PDF at publication size, the curves (every bucket) or "
                                 "the group table as CSV"));
    connect(export_button, &QPushButton::clicked, this, &GroupChart::exportWithDialog);
    connect(this, &GroupChart::exported, this, [this](const QString& path, const QString& error) {
        status_->setText(error.isEmpty() ? tr("Written to %1").arg(QDir::toNativeSeparators(path)) : error);
    });

    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("Group by")));
    controls->addWidget(keys_, 2);
    controls->addWidget(new QLabel(tr("Metric")));
    controls->addWidget(metric_, 1);
    controls->addWidget(new QLabel(tr("x")));
    controls->addWidget(x_axis_);
    controls->addWidget(new QLabel(tr("Band")));
    controls->addWidget(band_);
    controls->addWidget(log_scale_);
    controls->addWidget(export_button);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addLayout(controls);
    layout->addWidget(view_, 1);
    layout->addWidget(summary_);
    layout->addWidget(status_);

    connect(keys_, &QLineEdit::editingFinished, this, &GroupChart::recompute);
    connect(metric_, &QComboBox::currentTextChanged, this, &GroupChart::recompute);
    connect(band_, &QComboBox::currentIndexChanged, this, &GroupChart::recompute);
    connect(x_axis_, &QComboBox::currentIndexChanged, this, &GroupChart::recompute);
    // The same curves on another axis: nothing to read again.
    connect(log_scale_, &QCheckBox::toggled, this, [this] {
        drawCurves();
        emit updated();
    });
}

// ~QWidget hides the chart after its members are gone; the keys' box losing the focus then would finish its editing
// and recompute over them.
GroupChart::~GroupChart() { disconnect(keys_, nullptr, this, nullptr); }

QStringList GroupChart::suggestedKeys(const std::vector<RunRecord>& runs) {
    std::vector<const RunRecord*> pointers;
    pointers.reserve(runs.size());
    for (const RunRecord& run : runs)
        pointers.push_back(&run);
    QStringList keys;
    for (const std::string& key : differing_config_keys(pointers))
        if (!seed_like(key))
            keys << QString::fromStdString(key);
    return keys;
}

void GroupChart::setRuns(std::vector<RunRecord> runs) {
    runs_ = std::move(runs);
    if (keys_->text().trimmed().isEmpty())
        keys_->setText(suggestedKeys(runs_).join(QStringLiteral(", ")));
    // The metrics every run can be grouped on: the series the runs have, loss first when there is one.
    std::set<std::string> names;
    for (const RunRecord& run : runs_)
        for (const auto& [name, summary] : run.summaries)
            if (name.rfind("telemetry/", 0) != 0)
                names.insert(name);
    const QString keep = metric_->currentText();
    {
        const QSignalBlocker block(metric_);
        metric_->clear();
        for (const std::string& name : names)
            metric_->addItem(QString::fromStdString(name));
        const int at = metric_->findText(keep.isEmpty() ? QStringLiteral("loss") : keep);
        metric_->setCurrentIndex(at >= 0 ? at : 0);
    }
    recompute();
}

void GroupChart::setGroupKeys(const QStringList& keys) {
    keys_->setText(keys.join(QStringLiteral(", ")));
    recompute();
}

QStringList GroupChart::groupKeys() const {
    QStringList keys;
    for (const QString& key : keys_->text().split(QLatin1Char(','), Qt::SkipEmptyParts))
        if (!key.trimmed().isEmpty())
            keys << key.trimmed();
    return keys;
}

void GroupChart::setMetric(const QString& series) {
    const int at = metric_->findText(series);
    if (at < 0)
        metric_->addItem(series);
    metric_->setCurrentText(series);
}

QString GroupChart::metric() const { return metric_->currentText(); }

void GroupChart::setXAxis(XAxis axis) { x_axis_->setCurrentIndex(x_axis_->findData(static_cast<int>(axis))); }

XAxis GroupChart::xAxis() const { return static_cast<XAxis>(x_axis_->currentData().toInt()); }

void GroupChart::setBand(Band band) { band_->setCurrentIndex(band_->findData(static_cast<int>(band))); }

Band GroupChart::band() const { return static_cast<Band>(band_->currentData().toInt()); }

void GroupChart::setLogScale(bool on) { log_scale_->setChecked(on); }

bool GroupChart::logScale() const { return log_scale_->isChecked(); }

QStringList GroupChart::legendNames() const { return legend_; }

QStringList GroupChart::summaryRows() const {
    QStringList rows;
    for (int row = 0; row < summary_->rowCount(); ++row) {
        QStringList cells;
        for (int column = 0; column < summary_->columnCount(); ++column)
            cells << (summary_->item(row, column) ? summary_->item(row, column)->text() : QString());
        rows << cells.join(QStringLiteral(" | "));
    }
    return rows;
}

void GroupChart::exportTo(Export what, const QString& path) {
    if (what == Export::chart) {
        emit exported(path, exportChart(chart_, path));
        return;
    }
    if (!path.endsWith(QStringLiteral(".csv"), Qt::CaseInsensitive)) {
        emit exported(path, tr("Cannot export %1: the curves and the group table export as CSV; use a file name "
                               "ending in .csv.")
                                .arg(QDir::toNativeSeparators(path)));
        return;
    }
    // Copies of what is drawn now: a redraw while the file is written changes nothing in it.
    std::function<QString()> write;
    if (what == Export::curves) {
        // Long format, every bucket of every group: the mean, the band and N.
        QStringList names;
        QVector<QVector<QPointF>> series;
        for (size_t g = 0; g < curves_.size() && g < static_cast<size_t>(legend_.size()); ++g) {
            const GroupCurve& curve = curves_[g];
            const char* parts[] = {"mean", "low", "high", "n"};
            for (int part = 0; part < 4; ++part) {
                names << legend_[static_cast<int>(g)] + QStringLiteral(" ") + QLatin1String(parts[part]);
                QVector<QPointF> points;
                for (size_t i = 0; i < curve.x.size(); ++i)
                    points.push_back({curve.x[i], part == 0   ? curve.mean[i]
                                                  : part == 1 ? curve.low[i]
                                                  : part == 2 ? curve.high[i]
                                                              : curve.n[i]});
                series.push_back(points);
            }
        }
        write = [path, names, series] { return writeSeriesCsv(path, names, series); };
    } else {
        QStringList header = groupKeys();
        if (header.isEmpty())
            header << tr("group");
        header << QStringLiteral("N");
        const QString metric = metric_->currentText();
        for (const char* kind : {"last", "min", "max", "best"})
            header << QStringLiteral("%1.%2 mean").arg(QLatin1String(kind), metric)
                   << QStringLiteral("%1.%2 std").arg(QLatin1String(kind), metric);
        write = [path, header, rows = summaries_, all_runs = tr("all runs")] {
            // The model lives and dies on this thread; writeModelCsv writes its doubles at full precision, NaN empty.
            const int keys = static_cast<int>(header.size()) - 9;
            QStandardItemModel model(static_cast<int>(rows.size()), static_cast<int>(header.size()));
            model.setHorizontalHeaderLabels(header);
            for (int row = 0; row < static_cast<int>(rows.size()); ++row) {
                const GroupSummary& summary = rows[static_cast<size_t>(row)];
                for (int k = 0; k < keys; ++k)
                    model.setData(model.index(row, k), summary.values.isEmpty() ? all_runs : summary.values.value(k));
                model.setData(model.index(row, keys), summary.n);
                int column = keys + 1;
                for (const SummaryStat* stat : {&summary.last, &summary.min, &summary.max, &summary.best}) {
                    model.setData(model.index(row, column++), stat->mean);
                    model.setData(model.index(row, column++), stat->std_dev);
                }
            }
            return writeModelCsv(model, path);
        };
    }
    run_in_background(
        this, std::move(write), [this, path](const QString& error) { emit exported(path, error); }, statistics_pool());
}

void GroupChart::exportWithDialog() {
    const QString curves = tr("Curves, CSV with every bucket (*.csv)"), table = tr("Group table, CSV (*.csv)");
    QString filter;
    const QString path =
        QFileDialog::getSaveFileName(this, tr("Export the group chart"), QStringLiteral("groups.pdf"),
                                     tr("PDF (*.pdf);;SVG (*.svg);;PNG (*.png);;") + curves + ";;" + table, &filter);
    if (path.isEmpty())
        return;
    const bool csv = path.endsWith(QStringLiteral(".csv"), Qt::CaseInsensitive);
    exportTo(!csv ? Export::chart : filter == table ? Export::table : Export::curves, path);
}

void GroupChart::recompute() {
    const quint64 generation = ++generation_;
    const QString series = metric_->currentText();
    if (runs_.empty() || series.isEmpty()) {
        draw({}, {}, runs_.empty() ? tr("No runs to group") : tr("The runs have no metric yet"));
        return;
    }
    std::vector<std::string> keys;
    for (const QString& key : groupKeys())
        keys.push_back(key.toStdString());
    std::vector<const RunRecord*> pointers;
    for (const RunRecord& run : runs_)
        pointers.push_back(&run);
    std::vector<RunGroup> groups = group_runs(pointers, keys);
    const Band band = static_cast<Band>(band_->currentData().toInt());
    const XAxis axis = xAxis();
    // Samples per step from each run's config (batch_size × grad_accum), for the samples axis.
    std::unordered_map<int64_t, double> samples_per_step;
    for (const RunRecord& run : runs_)
        if (const double samples = traindeck::samples_per_step(run.config); samples > 0)
            samples_per_step[run.id] = samples;
    const int buckets = std::clamp(view_->width() * 2, 200, 4000); // ~2 per pixel column, as the job charts
    status_->setText(tr("Reading %1 runs…").arg(runs_.size()));
    run_in_background(
        this,
        [path = catalog_path_, groups = std::move(groups), series = series.toStdString(), band, buckets, generation,
         axis, samples_per_step = std::move(samples_per_step)] {
            Computed computed;
            computed.generation = generation;
            computed.groups = groups;
            Catalog catalog;
            if (std::string error = catalog.open(path.toStdString(), true); !error.empty()) {
                computed.error = QString::fromStdString(error);
                return computed;
            }
            try {
                // Every group on one step range, so their buckets line up.
                std::vector<std::vector<std::vector<MetricPoint>>> points(groups.size());
                int64_t from = std::numeric_limits<int64_t>::max(), to = std::numeric_limits<int64_t>::min();
                for (size_t g = 0; g < groups.size(); ++g)
                    for (const int64_t run : groups[g].runs)
                        if (const int64_t id = catalog.series(run, series, false)) {
                            const auto all = [&](int64_t series_id) {
                                return series_id ? SeriesStore::points(catalog.db(), series_id,
                                                                       std::numeric_limits<int64_t>::min() / 4,
                                                                       std::numeric_limits<int64_t>::max() / 4)
                                                 : std::vector<MetricPoint>();
                            };
                            std::vector<MetricPoint> raw = all(id);
                            if (axis != XAxis::step) {
                                const std::vector<MetricPoint> times = axis == XAxis::samples
                                                                           ? std::vector<MetricPoint>()
                                                                           : all(catalog.series(run, "_time", false));
                                const std::vector<MetricPoint> spend =
                                    axis == XAxis::spend ? all(catalog.series(run, "telemetry/spend", false))
                                                         : std::vector<MetricPoint>();
                                XAxisSources sources{times, spend, 0};
                                if (const auto it = samples_per_step.find(run); it != samples_per_step.end())
                                    sources.samples_per_step = it->second;
                                raw = to_x_axis(raw, axis, sources);
                                std::sort(raw.begin(), raw.end(),
                                          [](const MetricPoint& a, const MetricPoint& b) { return a.step < b.step; });
                            }
                            points[g].push_back(std::move(raw));
                            if (!points[g].back().empty()) {
                                from = std::min(from, points[g].back().front().step);
                                to = std::max(to, points[g].back().back().step);
                            }
                        }
                for (auto& group : points) {
                    std::vector<std::span<const MetricPoint>> spans(group.begin(), group.end());
                    computed.curves.push_back(from <= to ? group_curve(spans, from, to, buckets, band) : GroupCurve{});
                }
            } catch (const std::exception& e) {
                computed.error = QString::fromUtf8(e.what());
            }
            return computed;
        },
        [this](Computed computed) {
            if (computed.generation == generation_)
                draw(std::move(computed.groups), std::move(computed.curves), computed.error);
        },
        statistics_pool());
}

void GroupChart::draw(std::vector<RunGroup> groups, std::vector<GroupCurve> curves, const QString& error) {
    groups_ = std::move(groups);
    curves_ = std::move(curves);
    error_ = error;
    drawCurves();
    fillTable();
    status_->setText(!error_.isEmpty() ? tr("Could not read the runs' points: %1").arg(error_)
                     : groups_.empty() ? tr("No runs to group")
                                       : tr("%1 groups of %2 runs · mean %3 per step bucket, from every point")
                                             .arg(groups_.size())
                                             .arg(runs_.size())
                                             .arg(band_->currentText()));
    emit updated();
}

void GroupChart::drawCurves() {
    chart_->removeAllSeries();
    for (QAbstractAxis* axis : chart_->axes()) {
        chart_->removeAxis(axis);
        delete axis; // removeAxis gives it back to us
    }
    legend_.clear();
    const QStringList keys = groupKeys();
    const XAxis axis = xAxis();
    const double scale = axis == XAxis::wall_time ? 1.0 : x_axis_scale(axis); // a date axis takes milliseconds
    QAbstractAxis* x_axis = nullptr;
    if (axis == XAxis::wall_time) {
        auto* dates = new QDateTimeAxis;
        dates->setFormat(QStringLiteral("HH:mm:ss"));
        x_axis = dates;
    } else {
        auto* values = new QValueAxis;
        values->setLabelFormat(axis == XAxis::spend ? QStringLiteral("%.4g") : QStringLiteral("%.0f"));
        x_axis = values;
    }
    x_axis->setTitleText(tr(x_axis_title(axis)));
    const bool log_scale = logScale();
    QAbstractAxis* y_axis = nullptr;
    if (log_scale) {
        QLogValueAxis* logarithmic = make_log_axis(QString());
        logarithmic->setMinorTickCount(-1); // the 2…9 ticks of each decade
        y_axis = logarithmic;
    } else {
        y_axis = new QValueAxis;
    }
    y_axis->setTitleText(metric_->currentText());
    chart_->addAxis(x_axis, Qt::AlignBottom);
    chart_->addAxis(y_axis, Qt::AlignLeft);
    // On a log axis the drawn values are clipped to kLogFloor, but the range follows the positive ones: a band that
    // reaches zero runs off the bottom instead of squashing every curve into the top of six decades.
    auto drawn = [log_scale](double y) { return log_scale ? std::max(y, kLogFloor) : y; };
    double x_low = std::numeric_limits<double>::max(), x_high = -x_low, y_low = x_low, y_high = -x_low;
    auto widen_y = [&](double y) {
        if (log_scale && !(y > 0))
            return;
        y_low = std::min(y_low, y);
        y_high = std::max(y_high, y);
    };
    for (size_t g = 0; g < groups_.size() && g < curves_.size(); ++g) {
        const GroupCurve& curve = curves_[g];
        QStringList label;
        for (int k = 0; k < keys.size() && k < static_cast<int>(groups_[g].values.size()); ++k)
            label << QStringLiteral("%1=%2").arg(keys[k], QString::fromStdString(groups_[g].values[k]));
        const auto [n_low, n_high] = curve.n.empty() ? std::pair(0, 0) : [&] {
            const auto [lo, hi] = std::minmax_element(curve.n.begin(), curve.n.end());
            return std::pair(*lo, *hi);
        }();
        // N: how many runs the mean is over; "5→3" where runs end early (the last buckets have fewer).
        const int n_end = curve.n.empty() ? 0 : curve.n.back();
        const QString n_text = n_low == n_high   ? QString::number(n_high)
                               : n_end == n_high ? QStringLiteral("%1–%2").arg(n_low).arg(n_high)
                                                 : QStringLiteral("%1→%2").arg(n_high).arg(n_end);
        const QString name = (label.isEmpty() ? tr("all runs") : label.join(QStringLiteral(" · "))) +
                             QStringLiteral("  (N=%1)").arg(n_text);
        legend_ << name;
        const QColor color = kPalette[g % std::size(kPalette)];
        auto* mean = new QLineSeries;
        auto* low = new QLineSeries;
        auto* high = new QLineSeries;
        QList<QPointF> mean_points, low_points, high_points;
        for (size_t i = 0; i < curve.x.size(); ++i) {
            const double x = curve.x[i] / scale;
            mean_points.append({x, drawn(curve.mean[i])});
            low_points.append({x, drawn(curve.low[i])});
            high_points.append({x, drawn(curve.high[i])});
            x_low = std::min(x_low, x);
            x_high = std::max(x_high, x);
            widen_y(curve.low[i]);
            widen_y(curve.mean[i]);
            widen_y(curve.high[i]);
        }
        mean->replace(mean_points);
        low->replace(low_points);
        high->replace(high_points);
        auto* band = new QAreaSeries(high, low);
        QColor fill = color;
        fill.setAlpha(55);
        band->setColor(fill);
        band->setBorderColor(Qt::transparent);
        band->setName(name + tr(" band"));
        mean->setName(name);
        QPen pen(color);
        pen.setWidthF(1.6);
        mean->setPen(pen);
        chart_->addSeries(band);
        chart_->addSeries(mean);
        for (QAbstractSeries* s : {static_cast<QAbstractSeries*>(band), static_cast<QAbstractSeries*>(mean)}) {
            s->attachAxis(x_axis);
            s->attachAxis(y_axis);
        }
        // One legend entry per group: the band's marker would repeat it.
        for (QLegendMarker* marker : chart_->legend()->markers(band))
            marker->setVisible(false);
    }
    if (x_high >= x_low) {
        if (auto* dates = qobject_cast<QDateTimeAxis*>(x_axis)) {
            dates->setRange(
                QDateTime::fromMSecsSinceEpoch(static_cast<qint64>(x_low)),
                QDateTime::fromMSecsSinceEpoch(static_cast<qint64>(x_high > x_low ? x_high : x_low + 1000)));
        } else if (auto* values = qobject_cast<QValueAxis*>(x_axis)) {
            values->setRange(x_low, x_high > x_low ? x_high : x_low + 1);
            values->applyNiceNumbers();
        }
    }
    if (y_high >= y_low) {
        if (auto* values = qobject_cast<QValueAxis*>(y_axis)) {
            values->setRange(y_low, y_high > y_low ? y_high : y_low + 1);
            values->applyNiceNumbers();
        } else {
            y_axis->setRange(y_low, y_high > y_low ? y_high : y_low * 10);
        }
    } else if (log_scale) {
        y_axis->setRange(kLogFloor, 1); // nothing positive to draw
    }
    chart_->setTitle(metric_->currentText().isEmpty() ? QString() : tr("%1 by group").arg(metric_->currentText()));
}

void GroupChart::fillTable() {
    // From the runs' own summaries (kept on ingest): mean ± std over the group's runs, and N.
    const QString metric = metric_->currentText();
    const std::string series = metric.toStdString();
    summary_->setRowCount(static_cast<int>(groups_.size()));
    summary_->setHorizontalHeaderLabels({tr("Group"), tr("N"), tr("last %1").arg(metric), tr("min %1").arg(metric),
                                         tr("max %1").arg(metric), tr("best %1").arg(metric)});
    std::unordered_map<int64_t, const RunRecord*> by_id;
    for (const RunRecord& run : runs_)
        by_id.emplace(run.id, &run);
    summaries_.clear();
    for (size_t g = 0; g < groups_.size(); ++g) {
        std::vector<double> last, min, max, best;
        for (const int64_t id : groups_[g].runs)
            if (const auto it = by_id.find(id); it != by_id.end())
                if (const MetricSummary* summary = find_summary(*it->second, series)) {
                    last.push_back(summary->last);
                    min.push_back(summary->min);
                    max.push_back(summary->max);
                    best.push_back(summary->best); // NaN for a metric without a goal: "–"
                }
        GroupSummary summary;
        for (const std::string& value : groups_[g].values)
            summary.values << QString::fromStdString(value);
        summary.n = static_cast<int>(groups_[g].runs.size());
        summary.last = summary_stat(last);
        summary.min = summary_stat(min);
        summary.max = summary_stat(max);
        summary.best = summary_stat(best);
        const int row = static_cast<int>(g);
        const QString label = row < legend_.size() ? legend_[row] : QString();
        summary_->setItem(row, 0, new QTableWidgetItem(label.left(label.lastIndexOf(QStringLiteral("  (N=")))));
        summary_->setItem(row, 1, new QTableWidgetItem(QString::number(summary.n)));
        int column = 2;
        for (const SummaryStat* stat : {&summary.last, &summary.min, &summary.max, &summary.best}) {
            auto* item = new QTableWidgetItem(
                stat->n == 0   ? QStringLiteral("–")
                : stat->n == 1 ? QString::number(stat->mean, 'g', 4)
                               : QStringLiteral("%1 ± %2").arg(QString::number(stat->mean, 'g', 4),
                                                               QString::number(stat->std_dev, 'g', 2)));
            if (stat->n < summary.n) // some runs have not reported the metric (yet)
                item->setToolTip(tr("over the %1 of %2 runs that report %3").arg(stat->n).arg(summary.n).arg(metric));
            summary_->setItem(row, column++, item);
        }
        summaries_.push_back(std::move(summary));
    }
}

} // namespace traindeck
