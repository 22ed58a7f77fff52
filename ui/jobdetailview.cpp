// JobDetailView (jobdetailview.h): the two charts, their axes and refresh, the log tail, and export.
#include "jobdetailview.h"

#include "axisticks.h"

#include "background.h"
#include "chartexport.h"
#include "chartview.h"
#include "curvelayer.h"
#include "histogramheatmap.h"
#include "imagestrip.h"
#include "money.h"

#include <QAreaSeries>
#include <QChart>
#include <QChartView>
#include <QCheckBox>
#include <QComboBox>
#include <QDateTime>
#include <QDateTimeAxis>
#include <QDir>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QLabel>
#include <QLegend>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QMenu>
#include <QPlainTextEdit>
#include <QSignalBlocker>
#include <QSlider>
#include <QSplitter>
#include <QTimer>
#include <QToolButton>
#include <QValueAxis>
#include <QVBoxLayout>

#include <cmath>
#include <algorithm>
#include <numeric>
#include <optional>
#include <utility>

namespace traindeck {

namespace {

// A labelled chooser above what it chooses for (the histograms' heatmap, the images' strip), hidden until a run has
// something to show there.
QWidget* chooser_box(const QString& label, QComboBox* chooser, QWidget* shown) {
    auto* box = new QWidget;
    auto* layout = new QVBoxLayout(box);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* row = new QHBoxLayout;
    row->addWidget(new QLabel(label));
    row->addWidget(chooser, 1);
    layout->addLayout(row);
    layout->addWidget(shown, 1);
    return box;
}

// Lists `choices` in the box when they differ from what it lists, keeping the chosen one where it still is (the
// histograms' names, the images' tags: an import that is following adds some).
void offer(QComboBox* box, const QStringList& choices) {
    QStringList listed;
    for (int i = 0; i < box->count(); ++i)
        listed << box->itemText(i);
    if (listed == choices)
        return;
    const QSignalBlocker blocker(box);
    const QString current = box->currentText();
    box->clear();
    box->addItems(choices);
    box->setCurrentIndex(std::max<qsizetype>(0, choices.indexOf(current)));
}

// Exponential moving average, as TensorBoard's slider does; 0 = raw.
QVector<QPointF> smooth(const QVector<QPointF>& points, double weight) {
    if (weight <= 0)
        return points;
    QVector<QPointF> out;
    double last = points.isEmpty() ? 0 : points.front().y();
    for (const QPointF& p : points) {
        last = last * weight + (1 - weight) * p.y();
        out.push_back(QPointF(p.x(), last));
    }
    return out;
}

void fit(QAbstractAxis* axis, double low, double high) {
    if (!(high > low)) {
        low -= 0.5;
        high += 0.5;
    }
    if (auto* dates = qobject_cast<QDateTimeAxis*>(axis)) {
        // Wall time in milliseconds; the date too once the run spans more than a day.
        dates->setFormat(high - low > 86'400'000.0 ? QStringLiteral("MMM d HH:mm") : QStringLiteral("HH:mm:ss"));
        dates->setRange(QDateTime::fromMSecsSinceEpoch(static_cast<qint64>(low)),
                        QDateTime::fromMSecsSinceEpoch(static_cast<qint64>(high)));
        return;
    }
    // Round ticks labelled for their unit (axisticks.h); a log axis keeps its own.
    const QVariant unit = axis->property("unit");
    if (unit.isValid())
        fit_axis(axis, low, high, static_cast<AxisUnit>(unit.toInt()), axis->property("money_symbol").toString());
    else
        axis->setRange(low, high);
}

// The accuracy axis's range: the accuracies drawn (each bucket's min and max) with a tenth of their spread above and
// below, at least ±0.01, and never past 0 or 1 when they lie within; 0 to 1 before the first evaluation.
std::pair<double, double> accuracy_range(const CatalogReader::Curve& accuracy) {
    double low = 1e300, high = -1e300;
    for (const QVector<QPointF>* points : {&accuracy.min, &accuracy.max, &accuracy.last})
        for (const QPointF& p : *points) {
            low = std::min(low, p.y());
            high = std::max(high, p.y());
        }
    if (!(high >= low))
        return {0, 1};
    const double pad = std::max((high - low) * 0.1, 0.01);
    return {low >= 0 ? std::max(0.0, low - pad) : low - pad, high <= 1 ? std::min(1.0, high + pad) : high + pad};
}

// The lowest lines of the system chart's log axes: a value at or below zero is drawn there.
constexpr double kCpuLogFloor = 0.1, kSpendLogFloor = 0.0001;

QAbstractAxis* unit_axis(const QString& title, AxisUnit unit) {
    QAbstractAxis* axis = make_value_axis(title);
    axis->setProperty("unit", static_cast<int>(unit));
    return axis;
}

} // namespace

// A job's record times and spend, read once per job and refresh, whatever number of its curves use them (another
// x-axis maps each bucket's last step through them, xaxis.h).
struct RefreshSources {
    std::vector<MetricPoint> times, spend;
    double samples_per_step = 0;
};

// What a refresh reads for: the shown run and what the view's widgets chose (read on the GUI thread).
struct RefreshRequest {
    qint64 job = 0;
    int buckets = 0;
    XAxis x_axis = XAxis::step;
    QList<qint64> overlays;
    QString histogram_name, histograms_shown, image_tag, images_shown;
};

struct RefreshOverlay {
    qint64 job = 0;
    CatalogReader::Curve loss;
    RefreshSources sources;
};

// Everything one refresh draws, read from the catalog on a pool thread.
struct RefreshData {
    RefreshRequest request;
    QString error, backend, main_curve = QStringLiteral("loss");
    QStringList names;
    bool imported = false;
    CatalogReader::Curve loss, accuracy, cpu, spend;
    RefreshSources own;
    std::vector<RefreshOverlay> overlays;
    std::vector<std::pair<QString, CatalogReader::Curve>> gpus; // utilisation and memory % per GPU
    double budget = 0;
    QStringList histogram_names, image_tags;
    // The chosen histogram and image tag, and their contents when they changed since what the view shows.
    QString histogram_name, histogram_key, image_tag, image_key;
    std::optional<std::vector<Histogram>> histograms;
    std::optional<std::vector<ImageRef>> images;
    QStringList log;
};

namespace {

RefreshData read_refresh_from(CatalogReader& reader, const RefreshRequest& request);

// What a refresh draws. A failure to read (an exception past the reader's own guards: memory) is its error, never an
// answer that does not come (the view would wait for it for good).
RefreshData read_refresh(CatalogReader& reader, const RefreshRequest& request) {
    try {
        return read_refresh_from(reader, request);
    } catch (const std::exception& error) {
        RefreshData data;
        data.request = request;
        data.error = QString::fromUtf8(error.what());
        return data;
    }
}

RefreshData read_refresh_from(CatalogReader& reader, const RefreshRequest& request) {
    RefreshData data;
    data.request = request;
    reader.clearError();
    const qint64 job = request.job;
    const int buckets = request.buckets;
    data.backend = reader.jobBackend(job);
    data.imported = data.backend == QLatin1String("import");
    // The main curve: "loss" as the built-in trainer and the helper write it; a run from another tool (imported)
    // may name it otherwise: its first curve with "loss" in the name (then "entropy", "error"), else its first curve.
    data.names = reader.seriesNames(job);
    if (!data.names.contains(data.main_curve)) {
        QStringList own;
        for (const QString& name : data.names)
            if (!name.startsWith("telemetry/") && !name.startsWith('_') && name != "val/accuracy")
                own << name;
        const auto named = [&](const char* word) {
            return std::find_if(own.begin(), own.end(),
                                [word](const QString& name) { return name.contains(word, Qt::CaseInsensitive); });
        };
        auto chosen = named("loss");
        for (const char* word : {"entropy", "error"})
            if (chosen == own.end())
                chosen = named(word);
        if (chosen != own.end())
            data.main_curve = *chosen;
        else if (!own.isEmpty())
            data.main_curve = own.front();
    }
    data.loss = reader.curve(job, data.main_curve, buckets);
    data.accuracy = reader.curve(job, "val/accuracy", buckets);
    const XAxis x_axis = request.x_axis;
    auto sources_of = [&](qint64 of) {
        RefreshSources sources;
        if (x_axis == XAxis::samples)
            sources.samples_per_step = reader.samplesPerStep(of);
        if (x_axis == XAxis::step || x_axis == XAxis::samples)
            return sources;
        for (const QPointF& p : reader.curve(of, "_time", buckets).last)
            sources.times.push_back({static_cast<int64_t>(p.x()), p.y()});
        if (x_axis == XAxis::spend)
            for (const QPointF& p : reader.curve(of, "telemetry/spend", buckets).last)
                sources.spend.push_back({static_cast<int64_t>(p.x()), p.y()});
        return sources;
    };
    data.own = sources_of(job);
    for (const qint64 id : request.overlays)
        data.overlays.push_back({id, reader.curve(id, "loss", buckets), sources_of(id)});
    data.cpu = reader.curve(job, "telemetry/cpu_percent", buckets);
    data.spend = reader.curve(job, "telemetry/spend", buckets);
    for (const QString& name : data.names)
        if (name.startsWith("telemetry/gpu") && (name.endsWith("/utilization") || name.endsWith("/memory_percent")))
            data.gpus.emplace_back(name, reader.curve(job, name, buckets));
    data.budget = reader.jobBudget(job);
    // Histograms and images: read again only when the run, the name or the count changed (an import that is
    // following grows them). The one chosen, or the first when it is not there (as offer() will choose).
    data.histogram_names = reader.histogramNames(job);
    if (!data.histogram_names.isEmpty()) {
        data.histogram_name = data.histogram_names.contains(request.histogram_name) ? request.histogram_name
                                                                                    : data.histogram_names.front();
        data.histogram_key =
            QString("%1/%2/%3").arg(job).arg(data.histogram_name).arg(reader.histogramCount(job, data.histogram_name));
        if (data.histogram_key != request.histograms_shown)
            data.histograms = reader.histograms(job, data.histogram_name);
    }
    data.image_tags = reader.imageTags(job);
    if (!data.image_tags.isEmpty()) {
        data.image_tag = data.image_tags.contains(request.image_tag) ? request.image_tag : data.image_tags.front();
        data.image_key = QString("%1/%2/%3").arg(job).arg(data.image_tag).arg(reader.imageCount(job, data.image_tag));
        if (data.image_key != request.images_shown)
            data.images = reader.images(job, data.image_tag);
    }
    data.log = reader.logTail(job, 200);
    data.error = reader.error();
    return data;
}

} // namespace

JobDetailView::JobDetailView(const QString& catalog_path, QWidget* parent)
    : QWidget(parent), catalog_path_(catalog_path), background_reader_(std::make_shared<CatalogReader>(catalog_path)) {
    read_soon_ = new QTimer(this);
    read_soon_->setSingleShot(true);
    read_soon_->setInterval(0);
    connect(read_soon_, &QTimer::timeout, this, &JobDetailView::readNow);
    title_ = new QLabel(tr("Select a job"));
    QFont font = title_->font();
    font.setPointSizeF(font.pointSizeF() * 1.3);
    font.setBold(true);
    title_->setFont(font);
    coverage_ = new QLabel;
    coverage_->setToolTip(tr("Curves are drawn from exact per-bucket min/max/last of every point; the band shows the "
                             "spread inside each bucket. Nothing is sampled away."));
    log_axis_ = new QCheckBox(tr("Log scale"));
    log_axis_->setToolTip(tr("A log y-axis for the loss chart"));
    // Each chart its own: a spend of cents beside a budget of dollars, or a GPU idling at 2 %, reads on a log axis.
    system_log_ = new QCheckBox(tr("Log system"));
    system_log_->setToolTip(tr("A log y-axis for the CPU, GPU and spend chart (zero reads as its lowest line)"));
    x_axis_ = new QComboBox;
    for (const XAxis axis : {XAxis::step, XAxis::samples, XAxis::wall_time, XAxis::relative_time, XAxis::spend})
        x_axis_->addItem(tr(x_axis_title(axis)), static_cast<int>(axis));
    x_axis_->setToolTip(tr("Draw the loss and accuracy against the step, the samples seen (the run's batch size × "
                           "gradient accumulation), the wall-clock time, the time since the run started, or its "
                           "spend"));
    smoothing_ = new QSlider(Qt::Horizontal);
    smoothing_->setRange(0, 99);
    smoothing_->setValue(60);
    smoothing_->setMaximumWidth(160);
    smoothing_->setMinimumWidth(90); // a long run name must not squeeze it to nothing
    smoothing_->setAccessibleName(tr("Smoothing"));
    title_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred); // a long name is cut, not the window
    // A menu, not a right-click on the charts: there a right-click zooms out (chartview.h).
    export_button_ = new QToolButton;
    export_button_->setText(tr("Export…"));
    export_button_->setToolTip(tr("A chart as PNG, SVG or PDF at publication size (160 × 100 mm), or its series as "
                                  "CSV with every point"));
    export_button_->setPopupMode(QToolButton::InstantPopup);
    auto* export_menu = new QMenu(export_button_);
    export_menu->addAction(tr("Loss and validation accuracy…"), this, [this] { exportWithDialog(Chart::loss); });
    export_menu->addAction(tr("CPU, GPU and spend…"), this, [this] { exportWithDialog(Chart::system); });
    export_button_->setMenu(export_menu);
    export_status_ = new QLabel;
    export_status_->setForegroundRole(QPalette::PlaceholderText);
    connect(this, &JobDetailView::exported, this, [this](const QString& path, const QString& error) {
        export_status_->setText(error.isEmpty() ? tr("Written to %1").arg(QDir::toNativeSeparators(path)) : error);
        export_status_->setVisible(true);
    });

    loss_chart_ = new QChart;
    loss_chart_->setTitle(tr("Loss and validation accuracy"));
    loss_ = new QLineSeries;
    loss_->setName(tr("train loss"));
    loss_min_ = new QLineSeries;
    loss_max_ = new QLineSeries;
    loss_band_ = new QAreaSeries(loss_max_, loss_min_);
    loss_band_->setName(tr("loss min–max"));
    loss_band_->setColor(QColor(31, 119, 180, 50));
    loss_band_->setBorderColor(Qt::transparent);
    loss_->setColor(QColor(31, 119, 180));
    val_accuracy_ = new QLineSeries;
    val_accuracy_->setName(tr("val accuracy"));
    val_accuracy_->setColor(QColor(214, 39, 40));
    val_accuracy_->setPointsVisible(true);
    loss_chart_->addSeries(loss_band_);
    loss_chart_->addSeries(loss_);
    loss_chart_->addSeries(val_accuracy_);
    loss_view_ = make_chart_view(loss_chart_);
    curves_ = new CurveLayer(loss_chart_);
    static_cast<ChartView*>(loss_view_)->setCurveLayer(curves_);

    system_chart_ = new QChart;
    system_chart_->setTitle(tr("CPU, GPU and spend"));
    cpu_ = new QLineSeries;
    cpu_->setName(tr("CPU %"));
    spend_ = new QLineSeries;
    spend_->setName(tr("spend (%1)").arg(currency_symbol(display_currency()).trimmed()));
    budget_ = new QLineSeries;
    budget_->setName(tr("budget"));
    QPen budget_pen(QColor(179, 38, 30));
    budget_pen.setStyle(Qt::DashLine);
    budget_pen.setWidth(2);
    budget_->setPen(budget_pen);
    system_chart_->addSeries(cpu_);
    system_chart_->addSeries(spend_);
    system_chart_->addSeries(budget_);
    system_view_ = make_chart_view(system_chart_);
    rebuildAxes();

    log_ = new QPlainTextEdit;
    log_->setReadOnly(true);
    log_->setMaximumBlockCount(2000);
    log_->setFont(QFont(QStringLiteral("monospace")));

    // The run's name on a line of its own (a long one is cut there, not the controls), the controls under it.
    auto* heading = new QHBoxLayout;
    heading->addWidget(title_, 1);
    auto* controls = new QHBoxLayout;
    controls->addWidget(coverage_);
    controls->addStretch(1);
    controls->addWidget(new QLabel(tr("Smoothing")));
    controls->addWidget(smoothing_);
    controls->addWidget(log_axis_);
    controls->addWidget(system_log_);
    controls->addWidget(x_axis_);
    controls->addWidget(export_button_);
    // Histograms (an imported TensorBoard run's weights and gradients): a heatmap over the steps, one name at a time.
    histogram_name_ = new QComboBox;
    histogram_name_->setAccessibleName(tr("Histogram"));
    heatmap_ = new HistogramHeatmap;
    histograms_box_ = chooser_box(tr("Histogram"), histogram_name_, heatmap_);
    histograms_box_->hide();
    connect(histogram_name_, &QComboBox::currentIndexChanged, this, &JobDetailView::refresh);
    // Images (an imported TensorBoard run's samples): a strip over the steps, one tag at a time.
    image_tag_ = new QComboBox;
    image_tag_->setAccessibleName(tr("Image tag"));
    image_strip_ = new ImageStrip;
    images_box_ = chooser_box(tr("Images"), image_tag_, image_strip_);
    images_box_->hide();
    connect(image_tag_, &QComboBox::currentIndexChanged, this, &JobDetailView::refresh);
    splitter_ = new QSplitter(Qt::Vertical);
    QSplitter* splitter = splitter_;
    splitter->addWidget(loss_view_);
    splitter->addWidget(histograms_box_);
    splitter->addWidget(images_box_);
    splitter->addWidget(system_view_);
    splitter->addWidget(log_);
    loss_view_->setMinimumHeight(320);
    system_view_->setMinimumHeight(220);
    log_->setMinimumHeight(90);
    splitter->setSizes({520, 0, 0, 280, 140});
    splitter->setCollapsible(1, false);
    note_ = new QLabel;
    note_->setTextFormat(Qt::MarkdownText);
    note_->setWordWrap(true);
    note_->setTextInteractionFlags(Qt::TextBrowserInteraction);
    note_->setOpenExternalLinks(true);
    note_->setStyleSheet(QStringLiteral("QLabel { background: palette(alternate-base); padding: 4px; }"));
    note_->setToolTip(tr("The run's note (right-click the run: Note…)"));
    note_->hide();
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(heading);
    layout->addLayout(controls);
    layout->addWidget(note_);
    layout->addWidget(splitter);
    export_status_->setWordWrap(true);
    export_status_->hide(); // until something was exported
    layout->addWidget(export_status_);

    connect(x_axis_, &QComboBox::currentIndexChanged, this, [this] {
        rebuildAxes();
        refresh();
    });
    // Everything shown again: what came while a chart was zoomed is drawn now, not at the next event.
    for (QChartView* view : {loss_view_, system_view_})
        if (auto* chart_view = qobject_cast<ChartView*>(view))
            connect(chart_view, &ChartView::viewReset, this, &JobDetailView::refresh);
    for (QCheckBox* log : {log_axis_, system_log_})
        connect(log, &QCheckBox::toggled, this, [this] {
            rebuildAxes();
            refresh();
        });
    connect(smoothing_, &QSlider::valueChanged, this, &JobDetailView::refresh);
}

void JobDetailView::setChartDefaults(int smoothing, bool log_scale) {
    smoothing_->setValue(std::clamp(smoothing, 0, 99));
    log_axis_->setChecked(log_scale);
}

void JobDetailView::currencyChanged() {
    spend_currency_.clear(); // the next refresh names it again and rebuilds the money axes
    refresh();
}

void JobDetailView::rebuildAxes() {
    for (QChart* chart : {loss_chart_, system_chart_}) {
        chart->zoomReset(); // new axes: a zoom of the old ones means nothing on them
        for (QAbstractAxis* axis : chart->axes()) {
            chart->removeAxis(axis);
            delete axis;
        }
    }
    const XAxis x_axis = x_axis_ ? static_cast<XAxis>(x_axis_->currentData().toInt()) : XAxis::step;
    QAbstractAxis* step;
    if (x_axis == XAxis::wall_time) {
        step = new QDateTimeAxis;
        step->setTitleText(tr(x_axis_title(x_axis)));
    } else {
        step = unit_axis(tr(x_axis_title(x_axis)), x_axis == XAxis::spend           ? AxisUnit::money
                                                   : x_axis == XAxis::relative_time ? AxisUnit::seconds
                                                                                    : AxisUnit::count);
    }
    QAbstractAxis* loss_axis =
        log_axis_ && log_axis_->isChecked() ? make_log_axis(tr("loss")) : unit_axis(tr("loss"), AxisUnit::number);
    // Fitted to the run's accuracies (refresh): 0.856 to 0.889 reads as the climb it is, not a line along the top.
    QAbstractAxis* accuracy_axis = unit_axis(tr("accuracy"), AxisUnit::number);
    // The right-hand axes have their ticks on the edge: one grid, the left axis's (two do not line up).
    accuracy_axis->setGridLineVisible(false);
    loss_chart_->addAxis(step, Qt::AlignBottom);
    loss_chart_->addAxis(loss_axis, Qt::AlignLeft);
    loss_chart_->addAxis(accuracy_axis, Qt::AlignRight);
    for (QAbstractSeries* s : {static_cast<QAbstractSeries*>(loss_band_), static_cast<QAbstractSeries*>(loss_)}) {
        s->attachAxis(step);
        s->attachAxis(loss_axis);
    }
    val_accuracy_->attachAxis(step);
    val_accuracy_->attachAxis(accuracy_axis);
    for (auto& [id, series] : overlays_) {
        series->attachAxis(step);
        series->attachAxis(loss_axis);
    }

    QAbstractAxis* time = unit_axis(tr("time since start"), AxisUnit::seconds);
    const bool system_log = system_log_ && system_log_->isChecked();
    QAbstractAxis* cpu_axis = system_log ? make_log_axis(tr("CPU / GPU %"), QStringLiteral("%g"))
                                         : unit_axis(tr("CPU / GPU %"), AxisUnit::number);
    const QString symbol = currency_symbol(spend_currency_.isEmpty() ? display_currency() : spend_currency_);
    QAbstractAxis* spend_axis = system_log ? make_log_axis(tr("spend"), symbol + QStringLiteral("%.3g"))
                                           : unit_axis(tr("spend"), AxisUnit::money);
    spend_axis->setProperty("money_symbol", symbol);
    step->setProperty("money_symbol", symbol);
    spend_axis->setGridLineVisible(false);
    system_chart_->addAxis(time, Qt::AlignBottom);
    system_chart_->addAxis(cpu_axis, Qt::AlignLeft);
    system_chart_->addAxis(spend_axis, Qt::AlignRight);
    cpu_->attachAxis(time);
    cpu_->attachAxis(cpu_axis);
    spend_->attachAxis(time);
    spend_->attachAxis(spend_axis);
    budget_->attachAxis(time);
    budget_->attachAxis(spend_axis);
    for (QLineSeries* series : gpu_series_) {
        series->attachAxis(time);
        series->attachAxis(cpu_axis);
    }
    // Ticks and labels before the first data (a category axis has none until fitted).
    fit(step, 0, 1);
    fit(loss_axis, log_axis_ && log_axis_->isChecked() ? 0.1 : 0, 1);
    fit(accuracy_axis, 0, 1);
    fit(time, 0, 1);
    fit(cpu_axis, system_log ? kCpuLogFloor : 0, 100);
    fit(spend_axis, system_log ? kSpendLogFloor : 0, system_log ? 0.01 : 0.0001);
    // The curves the layer draws are mapped through the new axes from the next paint, which must come even when
    // their points stay the same (a log scale ticked on a finished run).
    if (curves_)
        curves_->axesChanged();
}

void JobDetailView::setOverlays(const QList<QPair<qint64, QString>>& jobs) {
    for (auto& [id, series] : overlays_) {
        curves_->remove(series);
        loss_chart_->removeSeries(series);
        delete series;
    }
    overlays_.clear();
    static const QColor palette[] = {QColor(255, 127, 14), QColor(44, 160, 44), QColor(148, 103, 189),
                                     QColor(140, 86, 75), QColor(227, 119, 194), QColor(127, 127, 127)};
    const auto axes = loss_chart_->axes();
    for (const auto& [id, name] : jobs) {
        if (id == job_)
            continue;
        auto* series = new QLineSeries;
        series->setName(tr("loss: %1").arg(name));
        series->setColor(palette[overlays_.size() % std::size(palette)]);
        loss_chart_->addSeries(series);
        series->attachAxis(axes[0]);
        series->attachAxis(axes[1]);
        overlays_.push_back({id, series});
    }
    refresh();
}

int JobDetailView::budgetPoints() const { return budget_->count(); }

QStringList JobDetailView::systemCurveNames() const {
    QStringList names;
    for (QAbstractSeries* series : system_chart_->series())
        names << series->name();
    return names;
}

void JobDetailView::setXAxis(XAxis axis) { x_axis_->setCurrentIndex(x_axis_->findData(static_cast<int>(axis))); }

QVector<QPointF> JobDetailView::lossPoints() const {
    const QList<QPointF>* drawn = curves_->points(loss_);
    return drawn ? *drawn : QVector<QPointF>();
}

void JobDetailView::setNote(const QString& markdown) {
    note_->setText(markdown);
    note_->setVisible(!markdown.trimmed().isEmpty());
}

QString JobDetailView::note() const { return note_->isVisible() ? note_->text() : QString(); }

void JobDetailView::exportTo(Chart which, const QString& path) {
    if (!path.endsWith(QStringLiteral(".csv"), Qt::CaseInsensitive)) {
        emit exported(path, traindeck::exportChart(chart(which), path));
        return;
    }
    if (job_ == 0) {
        emit exported(path, tr("Cannot export %1: no run is shown. Select a run in the table first.")
                                .arg(QDir::toNativeSeparators(path)));
        return;
    }
    // What the chart draws, by its catalog series: this run's, and on the loss chart the overlaid runs' losses.
    struct Wanted {
        qint64 job;
        QString series, name;
    };
    QList<Wanted> wanted;
    if (which == Chart::loss) {
        wanted = {{job_, QStringLiteral("loss"), QStringLiteral("loss")},
                  {job_, QStringLiteral("val/accuracy"), QStringLiteral("val/accuracy")}};
        for (const auto& [id, series] : overlays_)
            wanted.push_back({id, QStringLiteral("loss"), series->name()});
    } else {
        wanted = {{job_, QStringLiteral("telemetry/cpu_percent"), QStringLiteral("telemetry/cpu_percent")},
                  {job_, QStringLiteral("telemetry/spend"), QStringLiteral("telemetry/spend")}};
        for (const QString& name : gpu_series_.keys())
            wanted.push_back({job_, name, name});
    }
    // Every point can be millions of rows: read and written on a pool thread, through a connection of its own.
    run_in_background(
        this,
        [catalog = catalog_path_, wanted, path] {
            CatalogReader reader(catalog);
            QStringList names;
            QVector<QVector<QPointF>> series;
            for (const Wanted& one : wanted) {
                QVector<QPointF> points = reader.points(one.job, one.series);
                if (points.isEmpty())
                    continue; // not reported (yet): no rows rather than a name with none
                names << one.name;
                series.push_back(std::move(points));
            }
            if (!reader.error().isEmpty())
                return tr("Cannot export %1: the catalog could not be read (%2). Check the file, then export again.")
                    .arg(QDir::toNativeSeparators(path), reader.error());
            return writeSeriesCsv(path, names, series);
        },
        [this, path](const QString& error) { emit exported(path, error); });
}

void JobDetailView::exportWithDialog(Chart which) {
    const QString base =
        which == Chart::loss ? QStringLiteral("job-%1-loss").arg(job_) : QStringLiteral("job-%1-system").arg(job_);
    const QString path = QFileDialog::getSaveFileName(
        this, which == Chart::loss ? tr("Export the loss chart") : tr("Export the system chart"),
        base + QStringLiteral(".pdf"), tr("PDF (*.pdf);;SVG (*.svg);;PNG (*.png);;CSV, every point (*.csv)"));
    if (!path.isEmpty())
        exportTo(which, path);
}

void JobDetailView::showJob(qint64 job, const QString& title) {
    if (job != job_) {
        // Another job: shown whole, not in the last one's zoom.
        loss_chart_->zoomReset();
        system_chart_->zoomReset();
        for (QLineSeries* series : gpu_series_) {
            system_chart_->removeSeries(series);
            delete series;
        }
        gpu_series_.clear();
        // Nothing of the last run stays under the new one's title while its curves are read.
        for (QLineSeries* series : {loss_, loss_min_, loss_max_, val_accuracy_, cpu_, spend_, budget_})
            series->clear();
        curves_->setPoints(loss_, {});
        curves_->setBand(loss_band_, {}, {});
        coverage_->clear();
    }
    job_ = job;
    title_->setText(title);
    log_->clear();
    refresh();
}

void JobDetailView::refresh() {
    // Every refresh asked for in one turn of the event loop (a click selects a run and sets the overlays) is one read.
    if (job_ != 0)
        read_soon_->start();
}

void JobDetailView::readNow() {
    if (job_ == 0)
        return;
    // One read at a time; a refresh asked for meanwhile reads again once it is drawn.
    if (reading_) {
        read_again_ = true;
        return;
    }
    reading_ = true;
    RefreshRequest request;
    request.job = job_;
    // About two buckets per pixel column of the plot area.
    request.buckets = std::max(200, 2 * static_cast<int>(loss_chart_->plotArea().width()));
    request.x_axis = static_cast<XAxis>(x_axis_->currentData().toInt());
    for (const auto& [id, series] : overlays_)
        request.overlays.push_back(id);
    request.histogram_name = histogram_name_->currentText();
    request.histograms_shown = histograms_shown_;
    request.image_tag = image_tag_->currentText();
    request.images_shown = images_shown_;
    // The catalog is read on a pool thread, through a connection of its own (the GUI thread never waits on the disk);
    // the answer is drawn here.
    run_in_background(
        this, [reader = background_reader_, request] { return read_refresh(*reader, request); },
        [this](const RefreshData& data) {
            reading_ = false;
            // Another run shown meanwhile, or another x-axis chosen (the axes were rebuilt for it): this answer is
            // not drawn, and the view reads again.
            const bool current =
                data.request.job == job_ && data.request.x_axis == static_cast<XAxis>(x_axis_->currentData().toInt());
            if (current)
                draw(data);
            if (std::exchange(read_again_, false) || !current)
                readNow();
            else
                emit refreshed();
        },
        QThreadPool::globalInstance());
}

void JobDetailView::draw(const RefreshData& data) {
    error_ = data.error;
    // Money in what the job's backend charges in: a change (another job, another currency) names it anew.
    if (const QString currency = backend_currency(data.backend); currency != spend_currency_) {
        spend_currency_ = currency;
        spend_->setName(tr("spend (%1)").arg(currency_symbol(currency).trimmed()));
        rebuildAxes();
    }
    main_curve_ = data.main_curve;
    loss_->setName(main_curve_ == "loss" ? tr("train loss") : main_curve_);
    // A run of another tool (imported: no telemetry, its own curve names) has no CPU, GPU or spend to chart; a
    // TrainDeck job keeps the chart from the start, before its first telemetry arrives.
    system_view_->setVisible((main_curve_ == "loss" && !data.imported) ||
                             std::any_of(data.names.begin(), data.names.end(),
                                         [](const QString& name) { return name.startsWith("telemetry/"); }));
    CatalogReader::Curve loss = data.loss;
    CatalogReader::Curve accuracy = data.accuracy;
    // Another x-axis: each bucket's last step mapped through the run's record times (and spend), as xaxis.h does.
    const XAxis x_axis = data.request.x_axis;
    auto on_axis = [&](const RefreshSources& sources, const QVector<QPointF>& points) {
        if (x_axis == XAxis::step)
            return points;
        std::vector<MetricPoint> steps;
        steps.reserve(static_cast<size_t>(points.size()));
        for (const QPointF& p : points)
            steps.push_back({static_cast<int64_t>(p.x()), p.y()});
        QVector<QPointF> out;
        const double scale = x_axis == XAxis::wall_time ? 1.0 : x_axis_scale(x_axis); // a date axis takes ms
        for (const MetricPoint& p : to_x_axis(steps, x_axis, {sources.times, sources.spend, sources.samples_per_step}))
            out.push_back(QPointF(static_cast<double>(p.step) / scale, p.value));
        return out;
    };
    // What each drawn point stands for (the crosshair's min, max, last and x range): its bucket's first step on the x
    // axis beside its last (already there). None where the axis left a bucket's last step out (no record time for
    // it): the points would not align. A first step the axis cannot place (before the run's first record time, which
    // is the first bucket's last step of "_time") takes the bucket's last x.
    auto summaries_of = [&](const RefreshSources& sources, const CatalogReader::Curve& curve) {
        QVector<PointSummary> out;
        const qsizetype count = curve.first_step.size();
        if (curve.last.size() != count || curve.min.size() != count || curve.max.size() != count)
            return out;
        out.reserve(count);
        for (qsizetype i = 0; i < count; ++i) {
            const QVector<QPointF> first =
                on_axis(sources, QVector<QPointF>{QPointF(static_cast<double>(curve.first_step[i]), 0)});
            out.push_back({first.isEmpty() ? curve.last[i].x() : first.front().x(), curve.last[i].x(),
                           curve.count.value(i), curve.min[i].y(), curve.max[i].y(), curve.last[i].y()});
        }
        return out;
    };
    const RefreshSources& own = data.own;
    if (x_axis != XAxis::step) {
        loss.last = on_axis(own, loss.last);
        loss.min = on_axis(own, loss.min);
        loss.max = on_axis(own, loss.max);
        accuracy.last = on_axis(own, accuracy.last);
        accuracy.min = on_axis(own, accuracy.min);
        accuracy.max = on_axis(own, accuracy.max);
    }
    auto* loss_view = static_cast<ChartView*>(loss_view_);
    const double weight = smoothing_->value() / 100.0;
    const bool log_scale = log_axis_->isChecked();
    auto positive = [&](QVector<QPointF> points) {
        if (log_scale)
            for (QPointF& p : points)
                p.setY(std::max(p.y(), 1e-6));
        return points;
    };
    // The long curves (the loss, its band, the overlaid runs' losses) are drawn by the chart's CurveLayer, which
    // builds nothing ahead of the paint (curvelayer.h); the validation accuracy, a point an evaluation, by Qt Charts.
    curves_->setPoints(loss_, positive(smooth(loss.last, weight)));
    curves_->setBand(loss_band_, positive(loss.max), positive(loss.min));
    std::vector<std::pair<QXYSeries*, QVector<PointSummary>>> summaries{{loss_, summaries_of(own, loss)},
                                                                        {val_accuracy_, summaries_of(own, accuracy)}};
    double overlay_end = 0, overlay_low = 1e300, overlay_high = -1e300, first = 1e300;
    for (auto& [id, series] : overlays_) {
        const auto read = std::find_if(data.overlays.begin(), data.overlays.end(),
                                       [job = id](const RefreshOverlay& overlay) { return overlay.job == job; });
        if (read == data.overlays.end()) {
            // Overlaid since the read began: the next refresh draws it.
            if (const QList<QPointF>* drawn = curves_->points(series); drawn && !drawn->isEmpty())
                first = std::min(first, drawn->front().x());
            continue;
        }
        CatalogReader::Curve other = read->loss;
        const RefreshSources& sources = read->sources;
        other.last = on_axis(sources, other.last);
        other.min = on_axis(sources, other.min);
        other.max = on_axis(sources, other.max);
        const QList<QPointF> drawn = positive(smooth(other.last, weight));
        if (!drawn.isEmpty())
            first = std::min(first, drawn.front().x());
        curves_->setPoints(series, drawn);
        summaries.emplace_back(series, summaries_of(sources, other));
        for (const QPointF& p : other.last) {
            overlay_end = std::max(overlay_end, p.x());
            overlay_low = std::min(overlay_low, p.y());
            overlay_high = std::max(overlay_high, p.y());
        }
    }
    coverage_->setText(tr("%1 points in %2 buckets").arg(loss.points).arg(loss.last.size()));
    // Qt Charts rebuilds a curve's whole geometry when its points change, and again for every curve when an axis's
    // range does: a live run's chart has both each refresh. The validation accuracy, the curve it draws here, is
    // emptied first when it gets new points, so the axes' change rebuilds nothing of it, then given them: one rebuild.
    if (val_accuracy_->points() != accuracy.last)
        val_accuracy_->clear();

    // Axes fit everything drawn: this job's band and curves and the overlaid jobs' curves.
    const auto axes = loss_chart_->axes();
    double end = overlay_end, low = overlay_low, high = overlay_high;
    for (const QPointF& p : loss.min) {
        first = std::min(first, p.x());
        low = std::min(low, p.y());
    }
    for (const QPointF& p : loss.max) {
        end = std::max(end, p.x());
        high = std::max(high, p.y());
    }
    if (!accuracy.last.isEmpty())
        end = std::max(end, accuracy.last.back().x());
    // A chart the user zoomed keeps the view chosen while its job goes on (double-click shows everything again).
    if (high >= low && end >= first && !loss_chart_->isZoomed()) {
        if (log_scale)
            low = std::max(low, 1e-6);
        fit(axes[0], first, end);
        fit(axes[1], log_scale ? low : std::min(0.0, low), high * 1.05);
    }
    if (!loss_chart_->isZoomed()) {
        const auto [accuracy_low, accuracy_high] = accuracy_range(accuracy);
        fit(axes[2], accuracy_low, accuracy_high);
    }
    replace_points(val_accuracy_, accuracy.last);
    for (auto& curve : summaries)
        loss_view->setSummaries(curve.first, std::move(curve.second));

    const CatalogReader::Curve& cpu = data.cpu;
    const CatalogReader::Curve& spend = data.spend;
    // On the chart's log axes a value at or below the floor is drawn on it (a log axis cannot place zero).
    const bool system_log = system_log_->isChecked();
    auto seconds = [system_log](QVector<QPointF> points, double origin, double floor = kCpuLogFloor) {
        for (QPointF& p : points) {
            p.setX((p.x() - origin) / 1000.0);
            if (system_log)
                p.setY(std::max(p.y(), floor));
        }
        return points;
    };
    const double origin = !cpu.last.isEmpty() ? cpu.last.front().x() : (!spend.last.isEmpty() ? spend.last.front().x() : 0);
    // The telemetry's buckets cover spans of time (their "steps" are Unix milliseconds).
    auto* system_view = static_cast<ChartView*>(system_view_);
    auto telemetry_summaries = [origin](const CatalogReader::Curve& curve) {
        QVector<PointSummary> out;
        if (curve.first_step.size() != curve.last.size() || curve.min.size() != curve.last.size() ||
            curve.max.size() != curve.last.size())
            return out;
        for (qsizetype i = 0; i < curve.last.size(); ++i)
            out.push_back({(static_cast<double>(curve.first_step[i]) - origin) / 1000.0,
                           (curve.last[i].x() - origin) / 1000.0, curve.count.value(i), curve.min[i].y(),
                           curve.max[i].y(), curve.last[i].y()});
        return out;
    };
    replace_points(cpu_, seconds(cpu.last, origin));
    system_view->setSummaries(cpu_, telemetry_summaries(cpu));
    replace_points(spend_, seconds(spend.last, origin, kSpendLogFloor));
    system_view->setSummaries(spend_, telemetry_summaries(spend));
    // GPU utilisation and memory (% of the card) share the percent axis, on the same time axis as the CPU.
    const auto system_axes_now = system_chart_->axes();
    for (const auto& [name, gpu] : data.gpus) {
        QLineSeries*& series = gpu_series_[name];
        if (!series) {
            series = new QLineSeries;
            const QString gpu = name.section('/', 1, 1).mid(3);
            series->setName(name.endsWith("/utilization") ? tr("GPU%1 util %").arg(gpu) : tr("GPU%1 memory %").arg(gpu));
            system_chart_->addSeries(series);
            series->attachAxis(system_axes_now[0]);
            series->attachAxis(system_axes_now[1]);
        }
        replace_points(series, seconds(gpu.last, origin));
        system_view->setSummaries(series, telemetry_summaries(gpu));
    }
    const auto system_axes = system_chart_->axes();
    double time_end = 1, cpu_high = 100, spend_high = 0;
    for (const QPointF& p : cpu_->points()) {
        time_end = std::max(time_end, p.x());
        cpu_high = std::max(cpu_high, p.y());
    }
    for (const QPointF& p : spend_->points())
        spend_high = std::max(spend_high, p.y());
    // A job that costs nothing (a free local machine) reads $0.00 to $0.05, not six decimals of nothing.
    spend_high = spend_high > 0 ? std::max(spend_high, 0.0001) : 0.05;
    // The budget as a dashed line: spend runs up to it, and the job stops (checkpoint first) where they meet.
    const double budget = data.budget;
    budget_->setVisible(budget > 0); // no legend entry for an uncapped job
    if (budget > 0) {
        replace_points(budget_, QVector<QPointF>{{0, budget}, {time_end, budget}});
        spend_high = std::max(spend_high, budget);
    } else {
        budget_->clear();
    }
    if (!system_chart_->isZoomed()) {
        fit(system_axes[0], 0, time_end);
        fit(system_axes[1], system_log ? kCpuLogFloor : 0, cpu_high * 1.05);
        fit(system_axes[2], system_log ? kSpendLogFloor : 0, spend_high * 1.1);
    }
    // A crosshair the mouse rests on says what is under it now.
    loss_view->updateCrosshair();
    system_view->updateCrosshair();

    // Histograms: read again only when the run, the name or the count changed (an import that is following grows it).
    const QStringList& histogram_names = data.histogram_names;
    const QStringList& image_tags = data.image_tags;
    if (histogram_names.isEmpty() != histograms_box_->isHidden() || image_tags.isEmpty() != images_box_->isHidden()) {
        histograms_box_->setVisible(!histogram_names.isEmpty());
        images_box_->setVisible(!image_tags.isEmpty());
        shareRoom();
    }
    if (!histogram_names.isEmpty()) {
        offer(histogram_name_, histogram_names);
        // Read for the name chosen when the read began (another chosen since is read by the refresh it asked for).
        if (data.histograms && histogram_name_->currentText() == data.histogram_name) {
            histograms_shown_ = data.histogram_key;
            heatmap_->setHistograms(data.histogram_name, *data.histograms);
        }
    }

    // Images: the same, by tag.
    if (!image_tags.isEmpty()) {
        offer(image_tag_, image_tags);
        if (data.images && image_tag_->currentText() == data.image_tag) {
            images_shown_ = data.image_key;
            image_strip_->setImages(data.image_tag, *data.images);
        }
    }

    const QStringList& lines = data.log;
    if (log_->toPlainText().split('\n').size() != lines.size())
        log_->setPlainText(lines.join('\n'));
}

void JobDetailView::shareRoom() {
    // Room for the histograms and the images while they show (the charts give some: their minimum heights are lower
    // then), or their room back. The order is the splitter's: loss, histograms, images, system, log.
    const bool histograms = !histograms_box_->isHidden(), images = !images_box_->isHidden();
    const bool extras = histograms || images;
    loss_view_->setMinimumHeight(extras ? 200 : 320);
    system_view_->setMinimumHeight(extras ? 150 : 220);
    const QList<int> sizes = splitter_->sizes();
    const int total = std::accumulate(sizes.begin(), sizes.end(), 0);
    const int image_room = images ? images_box_->sizeHint().height() : 0;
    const int rest = std::max(0, total - image_room);
    const int loss = histograms ? 40 : 60, heat = histograms ? 32 : 0, system = histograms ? 18 : 25,
              log = histograms ? 10 : 15;
    splitter_->setSizes({rest * loss / 100, rest * heat / 100, image_room, rest * system / 100, rest * log / 100});
}

} // namespace traindeck
