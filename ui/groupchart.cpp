// GroupChart (groupchart.h): the controls, the background read and the drawing.
#include "groupchart.h"

#include "background.h"
#include "catalog.h"
#include "chartexport.h"
#include "chartview.h"
#include "runfield.h"

#include <QAreaSeries>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QDateTime>
#include <QDateTimeAxis>
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
#include <QThreadPool>
#include <QValueAxis>
#include <QVBoxLayout>

#include <algorithm>
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
    status_ = new QLabel;
    status_->setStyleSheet(QStringLiteral("color: palette(mid)"));

    chart_ = new QChart;
    view_ = make_chart_view(chart_);
    view_->setMinimumHeight(300);

    summary_ = new QTableWidget(0, 4);
    summary_->setHorizontalHeaderLabels({tr("Group"), tr("N"), tr("best"), tr("last")});
    summary_->verticalHeader()->hide();
    summary_->verticalHeader()->setDefaultSectionSize(summary_->fontMetrics().height() + 6);
    summary_->setWordWrap(false);
    summary_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    summary_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    summary_->setAlternatingRowColors(true);
    summary_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    summary_->setMaximumHeight(112);
    auto* export_button = new QPushButton(tr("Export…"));
    export_button->setToolTip(tr("The chart as PNG, SVG or PDF at publication size, or the curves as CSV"));
    connect(export_button, &QPushButton::clicked, this, [this] {
        const QString path =
            QFileDialog::getSaveFileName(this, tr("Export the group chart"), QStringLiteral("groups.svg"),
                                         tr("SVG (*.svg);;PDF (*.pdf);;PNG (*.png);;CSV (*.csv)"));
        if (path.isEmpty())
            return;
        const QString error = exportTo(path);
        status_->setText(error.isEmpty() ? tr("Written to %1").arg(path) : error);
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
}

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

QString GroupChart::exportTo(const QString& path) {
    if (!path.endsWith(QStringLiteral(".csv"), Qt::CaseInsensitive))
        return exportChart(chart_, path);
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
    return writeSeriesCsv(path, names, series);
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
                draw(computed.groups, std::move(computed.curves), computed.error);
        },
        statistics_pool());
}

void GroupChart::draw(const std::vector<RunGroup>& groups, std::vector<GroupCurve> curves, const QString& error) {
    chart_->removeAllSeries();
    for (QAbstractAxis* axis : chart_->axes())
        chart_->removeAxis(axis);
    legend_.clear();
    curves_ = std::move(curves);
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
    auto* y_axis = new QValueAxis;
    y_axis->setTitleText(metric_->currentText());
    chart_->addAxis(x_axis, Qt::AlignBottom);
    chart_->addAxis(y_axis, Qt::AlignLeft);
    double x_low = std::numeric_limits<double>::max(), x_high = -x_low, y_low = x_low, y_high = -x_low;
    for (size_t g = 0; g < groups.size() && g < curves_.size(); ++g) {
        const GroupCurve& curve = curves_[g];
        QStringList label;
        for (int k = 0; k < keys.size() && k < static_cast<int>(groups[g].values.size()); ++k)
            label << QStringLiteral("%1=%2").arg(keys[k], QString::fromStdString(groups[g].values[k]));
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
            mean_points.append({x, curve.mean[i]});
            low_points.append({x, curve.low[i]});
            high_points.append({x, curve.high[i]});
            x_low = std::min(x_low, x);
            x_high = std::max(x_high, x);
            y_low = std::min(y_low, curve.low[i]);
            y_high = std::max(y_high, curve.high[i]);
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
        y_axis->setRange(y_low, y_high > y_low ? y_high : y_low + 1);
        y_axis->applyNiceNumbers();
    }
    // The groups' summaries from the runs' own (kept on ingest): mean ± std over the group's runs, and N.
    groups_ = groups;
    summary_->setRowCount(static_cast<int>(groups.size()));
    summary_->setHorizontalHeaderLabels(
        {tr("Group"), tr("N"), tr("best %1").arg(metric_->currentText()), tr("last %1").arg(metric_->currentText())});
    const std::string series = metric_->currentText().toStdString();
    std::unordered_map<int64_t, const RunRecord*> by_id;
    for (const RunRecord& run : runs_)
        by_id.emplace(run.id, &run);
    for (size_t g = 0; g < groups.size(); ++g) {
        std::vector<double> best, last;
        for (const int64_t id : groups[g].runs)
            if (const auto it = by_id.find(id); it != by_id.end())
                if (const MetricSummary* summary = find_summary(*it->second, series)) {
                    best.push_back(summary->best);
                    last.push_back(summary->last);
                }
        auto text = [](const std::vector<double>& values) {
            const SummaryStat stat = summary_stat(values);
            if (stat.n == 0)
                return QStringLiteral("–");
            return stat.n == 1 ? QString::number(stat.mean, 'g', 4)
                               : QStringLiteral("%1 ± %2").arg(QString::number(stat.mean, 'g', 4),
                                                               QString::number(stat.std_dev, 'g', 2));
        };
        const QString label = g < static_cast<size_t>(legend_.size()) ? legend_[static_cast<int>(g)] : QString();
        summary_->setItem(static_cast<int>(g), 0,
                          new QTableWidgetItem(label.left(label.lastIndexOf(QStringLiteral("  (N=")))));
        summary_->setItem(static_cast<int>(g), 1, new QTableWidgetItem(QString::number(groups[g].runs.size())));
        summary_->setItem(static_cast<int>(g), 2, new QTableWidgetItem(text(best)));
        summary_->setItem(static_cast<int>(g), 3, new QTableWidgetItem(text(last)));
    }
    const QString band_name = band_->currentText();
    status_->setText(!error.isEmpty() ? tr("Could not read the runs' points: %1").arg(error)
                     : groups.empty() ? tr("No runs to group")
                                      : tr("%1 groups of %2 runs · mean %3 per step bucket, from every point")
                                            .arg(groups.size())
                                            .arg(runs_.size())
                                            .arg(band_name));
    chart_->setTitle(metric_->currentText().isEmpty() ? QString() : tr("%1 by group").arg(metric_->currentText()));
    emit updated();
}

} // namespace traindeck
