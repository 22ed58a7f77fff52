// SweepView (sweepview.h): the widgets, fed by the SweepSyncs' answers; the best-so-far curve is read from the catalog
// on a pool thread (read_trial_series, best_so_far), a newer request replacing an older one.
#include "sweepview.h"

#include "axisticks.h"
#include "background.h"
#include "chartview.h"
#include "jobcontroller.h"
#include "jobsync.h"
#include "money.h"
#include "newsweepdialog.h"
#include "parallelcoordinates.h"
#include "sweepprogress.h"
#include "sweepsync.h"

#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QCheckBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QProgressBar>
#include <QPushButton>
#include <QScatterSeries>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QThreadPool>
#include <QTimer>
#include <QVBoxLayout>
#include <QValueAxis>

#include <algorithm>
#include <cmath>

namespace traindeck {

namespace {

// Where the objective's colour comes from in the charts: the runs' best, as the job view draws accuracy.
const QColor kBest(214, 39, 40);
const QColor kReport(31, 119, 180, 150);

void fit(QValueAxis* axis, double low, double high) {
    if (!(high > low)) {
        low -= 0.5;
        high += 0.5;
    }
    axis->setRange(low, high);
    axis->applyNiceNumbers(); // round ticks, not repeated truncated labels
}

QString plural_unit(double resource, const QString& unit) {
    // "1 epoch", "3 epochs", "100 steps"
    return resource == 1 && unit.endsWith('s') ? QStringLiteral("1 %1").arg(unit.chopped(1))
                                               : QStringLiteral("%1 %2").arg(resource).arg(unit);
}

} // namespace

SweepView::SweepView(const QString& catalog_path, JobController& controller, QWidget* parent)
    : QWidget(parent), catalog_path_(catalog_path), controller_(controller) {
    sweeps_ = new SweepListModel(this);
    list_ = new QTableView;
    list_->setModel(sweeps_);
    list_->setSelectionBehavior(QAbstractItemView::SelectRows);
    list_->setSelectionMode(QAbstractItemView::SingleSelection);
    list_->verticalHeader()->hide();
    list_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    list_->horizontalHeader()->setStretchLastSection(true);
    list_->setAlternatingRowColors(true);
    list_->setWordWrap(false);
    connect(list_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& current) {
        if (!current.isValid())
            return;
        current_backend_ = sweeps_->data(current, SweepListModel::BackendRole).toString();
        current_id_ = sweeps_->data(current, SweepListModel::IdRole).toLongLong();
        showSelected();
    });
    // A new answer may list other sweeps: the one shown stays selected.
    connect(sweeps_, &QAbstractItemModel::modelReset, this, [this] {
        if (pending_id_ && selectSweep(pending_backend_, pending_id_)) {
            pending_id_ = 0;
            return;
        }
        const int row = sweeps_->rowOf(current_backend_, current_id_);
        if (row >= 0)
            list_->selectRow(row);
        else if (sweeps_->rowCount() > 0)
            list_->selectRow(0);
    });

    title_ = new QLabel(tr("No sweep yet: New sweep… in the toolbar starts one"));
    QFont font = title_->font();
    font.setPointSizeF(font.pointSizeF() * 1.3);
    font.setBold(true);
    title_->setFont(font);
    reason_ = new QLabel;
    reason_->setWordWrap(true);
    reason_->setForegroundRole(QPalette::PlaceholderText);
    spend_bar_ = new QProgressBar;
    spend_bar_->setTextVisible(true);
    spend_bar_->setMinimumWidth(260);
    stop_ = new QPushButton(tr("Stop"));
    stop_->setToolTip(tr("Checkpoint and stop every running trial; Resume continues them"));
    resume_ = new QPushButton(tr("Resume"));
    resume_->setToolTip(tr("Continue a stopped sweep (one stopped at its budget: Extend… its budget first)"));
    extend_ = new QPushButton(tr("Extend…"));
    extend_->setToolTip(tr("More trials, or a higher budget"));
    promote_ = new QPushButton(tr("Promote best"));
    promote_->setToolTip(tr("Submit the best trial's parameters as a full run (a normal job, no early stopping)"));
    connect(stop_, &QPushButton::clicked, this, &SweepView::stopCurrent);
    connect(resume_, &QPushButton::clicked, this, &SweepView::resumeCurrent);
    connect(extend_, &QPushButton::clicked, this, &SweepView::extendWithDialog);
    connect(promote_, &QPushButton::clicked, this, &SweepView::promoteCurrent);
    auto* header = new QHBoxLayout;
    header->addWidget(title_);
    header->addStretch(1);
    header->addWidget(new QLabel(tr("Spend")));
    header->addWidget(spend_bar_);
    header->addSpacing(12);
    for (QPushButton* button : {stop_, resume_, extend_, promote_})
        header->addWidget(button);

    trials_ = new SweepTableModel(this);
    trials_sorted_ = new QSortFilterProxyModel(this);
    trials_sorted_->setSourceModel(trials_);
    trials_sorted_->setSortRole(SweepTableModel::SortRole);
    trials_view_ = new QTableView;
    trials_view_->setModel(trials_sorted_);
    trials_view_->setSortingEnabled(true);
    trials_view_->sortByColumn(SweepTableModel::Trial, Qt::AscendingOrder);
    trials_view_->setSelectionBehavior(QAbstractItemView::SelectRows);
    trials_view_->verticalHeader()->hide();
    trials_view_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    trials_view_->horizontalHeader()->setStretchLastSection(true);
    trials_view_->setAlternatingRowColors(true);
    trials_view_->setWordWrap(false);

    rungs_box_ = new QGroupBox(tr("ASHA rungs: trials that reached each"));
    rungs_layout_ = new QGridLayout(rungs_box_);
    rungs_none_ = new QLabel(tr("No early stopping: every trial trains to its end"));
    rungs_none_->setForegroundRole(QPalette::PlaceholderText);
    rungs_layout_->addWidget(rungs_none_, 0, 0, 1, 2);

    best_chart_ = new QChart;
    best_chart_->setTitle(tr("Best so far"));
    reports_ = new QScatterSeries;
    reports_->setName(tr("each trial's reports"));
    reports_->setMarkerSize(7);
    reports_->setColor(kReport);
    reports_->setBorderColor(Qt::transparent);
    best_line_ = new QLineSeries;
    best_line_->setName(tr("best so far"));
    QPen best_pen(kBest);
    best_pen.setWidth(2);
    best_line_->setPen(best_pen);
    best_chart_->addSeries(reports_);
    best_chart_->addSeries(best_line_);
    auto* x_axis = new QValueAxis;
    auto* y_axis = new QValueAxis;
    best_chart_->addAxis(x_axis, Qt::AlignBottom);
    best_chart_->addAxis(y_axis, Qt::AlignLeft);
    for (QAbstractSeries* series : std::initializer_list<QAbstractSeries*>{reports_, best_line_}) {
        series->attachAxis(x_axis);
        series->attachAxis(y_axis);
    }
    best_view_ = make_chart_view(best_chart_);
    best_view_->setMinimumHeight(240);
    best_axis_ = new QComboBox;
    best_axis_->addItem(tr("over time"));
    best_axis_->addItem(tr("over spend"));
    connect(best_axis_, &QComboBox::currentIndexChanged, this, &SweepView::drawBest);
    best_log_ = new QCheckBox(tr("Log scale"));
    best_log_->setToolTip(tr("A log y-axis (for a metric that is positive: a loss)"));
    connect(best_log_, &QCheckBox::toggled, this, &SweepView::drawBest);
    parallel_ = new ParallelCoordinates;
    parallel_->setMinimumHeight(220);

    auto* left = new QWidget;
    auto* left_layout = new QVBoxLayout(left);
    left_layout->setContentsMargins(0, 0, 0, 0);
    left_layout->addWidget(new QLabel(tr("<b>Trials</b> (hover a state for its reason)")));
    left_layout->addWidget(trials_view_, 1);
    left_layout->addWidget(rungs_box_);
    auto* chart_box = new QWidget;
    auto* chart_layout = new QVBoxLayout(chart_box);
    chart_layout->setContentsMargins(0, 0, 0, 0);
    auto* chart_row = new QHBoxLayout;
    chart_row->addStretch(1);
    chart_row->addWidget(new QLabel(tr("x-axis")));
    chart_row->addWidget(best_axis_);
    chart_row->addWidget(best_log_);
    chart_layout->addLayout(chart_row);
    chart_layout->addWidget(best_view_, 1);
    auto* right = new QSplitter(Qt::Vertical);
    right->addWidget(chart_box);
    right->addWidget(parallel_);
    right->setSizes({360, 300});
    auto* body = new QSplitter;
    body->addWidget(left);
    body->addWidget(right);
    body->setSizes({640, 760});
    auto* detail = new QWidget;
    auto* detail_layout = new QVBoxLayout(detail);
    detail_layout->setContentsMargins(0, 0, 0, 0);
    detail_layout->addLayout(header);
    detail_layout->addWidget(reason_);
    detail_layout->addWidget(body, 1);
    auto* outer = new QSplitter(Qt::Vertical);
    outer->addWidget(list_);
    outer->addWidget(detail);
    outer->setSizes({110, 740});
    // What went wrong is said here, where the sweep is, not only in the Jobs tab's alerts.
    notice_ = new QLabel;
    notice_->setWordWrap(true);
    notice_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    notice_->setAccessibleName(tr("Sweep notice"));
    notice_->hide();
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(notice_);
    layout->addWidget(outer);

    // Backends join the controller as they connect (the window's addBackend); each gets its SweepSync here.
    follow_timer_ = new QTimer(this);
    connect(follow_timer_, &QTimer::timeout, this, &SweepView::followBackends);
    follow_timer_->start(2000);
    best_timer_ = new QTimer(this);
    best_timer_->setSingleShot(true);
    connect(best_timer_, &QTimer::timeout, this, &SweepView::recomputeBest);
    QTimer::singleShot(0, this, &SweepView::followBackends);
    updateButtons();
}

void SweepView::followBackends() {
    for (const JobController::Connected& connected : controller_.backends())
        syncFor(connected.name);
}

SweepSync* SweepView::syncFor(const QString& backend) {
    if (const auto it = syncs_.find(backend); it != syncs_.end())
        return it->second;
    const std::optional<JobController::Connected> connected = controller_.find(backend);
    if (!connected)
        return nullptr;
    auto* sync = new SweepSync(*connected->sync, controller_, this);
    syncs_[backend] = sync;
    connect(sync, &SweepSync::sweepsChanged, this,
            [this, backend](const QJsonObject& answer) { sweeps_->setSweeps(backend, answer); });
    connect(sync, &SweepSync::detailChanged, this, [this, backend](qint64 id, const QJsonObject& detail) {
        if (backend == current_backend_ && id == current_id_)
            showDetail(detail);
    });
    connect(sync, &SweepSync::created, this, [this, backend](qint64 id) {
        notice_->hide(); // a sweep started: what failed before is not the news any more
        pending_backend_ = backend;
        pending_id_ = id;
        if (selectSweep(backend, id))
            pending_id_ = 0;
    });
    connect(sync, &SweepSync::failed, this, [this](const QString& message) { say(message, true); });
    connect(sync, &SweepSync::promoted, this, [this](qint64, const QString& name) {
        say(tr("Submitted “%1”, the best trial's parameters as a full run").arg(name), false);
    });
    // New events of the trials' runs move the best-so-far curve (at most twice a second).
    connect(connected->sync, &JobSync::catalogChanged, this, &SweepView::scheduleBest);
    sync->start();
    return sync;
}

void SweepView::say(const QString& message, bool failure) {
    notice_->setStyleSheet(failure ? QStringLiteral("color: #b3261e") : QString());
    notice_->setText(message);
    notice_->show();
    emit problem(message);
}

QString SweepView::notice() const { return notice_->isHidden() ? QString() : notice_->text(); }

void SweepView::newSweep() {
    NewSweepDialog dialog(this);
    followBackends();
    dialog.setBackends(controller_.names(), current_backend_);
    QHash<QString, QJsonObject> prices;
    for (const auto& [name, sync] : syncs_)
        if (!sync->prices().isEmpty())
            prices.insert(name, sync->prices());
    dialog.setPrices(prices);
    if (dialog.exec() == QDialog::Accepted)
        create(dialog.backendName(), dialog.spec());
}

void SweepView::create(const QString& backend, const QJsonObject& spec) {
    SweepSync* sync = syncFor(backend);
    if (!sync) {
        say(tr("Sweep not started: backend “%1” is not connected").arg(backend), true);
        return;
    }
    sync->create(spec);
}

bool SweepView::selectSweep(const QString& backend, qint64 id) {
    const int row = sweeps_->rowOf(backend, id);
    if (row < 0)
        return false;
    list_->selectRow(row);
    current_backend_ = backend;
    current_id_ = id;
    showSelected();
    return true;
}

QJsonObject SweepView::currentDetail() const {
    const auto it = syncs_.find(current_backend_);
    return it == syncs_.end() ? QJsonObject() : it->second->detail(current_id_);
}

void SweepView::showSelected() {
    for (const auto& [name, sync] : syncs_)
        sync->setWatchedSweep(name == current_backend_ ? current_id_ : 0);
    const QJsonObject detail = currentDetail();
    if (!detail.isEmpty())
        showDetail(detail);
    else
        updateButtons();
}

void SweepView::showDetail(const QJsonObject& detail) {
    const QJsonObject objective = detail.value("objective").toObject();
    title_->setText(QStringLiteral("#%1 %2 · %3")
                        .arg(detail.value("id").toInteger())
                        .arg(detail.value("name").toString(), detail.value("state").toString()));
    const QString method = detail.value("spec").toObject().value("method").toString();
    reason_->setText(tr("%1 — %2 %3 by %4 search")
                         .arg(detail.value("reason").toString(),
                              objective.value("goal").toString() == "min" ? tr("minimising") : tr("maximising"),
                              objective.value("metric").toString(), method));
    trials_->setSweep(detail);
    showSpend(detail);
    showRungs(detail);
    showParallel(detail);
    updateButtons();
    scheduleBest();
}

void SweepView::showSpend(const QJsonObject& detail) {
    const double spend = detail.value("spend").toDouble();
    const QJsonObject budget = detail.value("spec").toObject().value("budget").toObject();
    const double money = budget.value("money").toDouble(), hours = budget.value("gpu_hours").toDouble();
    if (money > 0 || hours > 0) {
        const double used = money > 0 ? spend / money : detail.value("gpu_hours").toDouble() / hours;
        spend_bar_->setRange(0, 1000);
        spend_bar_->setValue(static_cast<int>(std::lround(std::clamp(used, 0.0, 1.0) * 1000)));
        spend_bar_->setFormat(
            money > 0 ? tr("%1 of %2 (%p%)").arg(SweepListModel::money(spend), SweepListModel::money(money))
                      : tr("%1 of %2 GPU-hours (%p%)").arg(detail.value("gpu_hours").toDouble(), 0, 'f', 3).arg(hours));
    } else {
        spend_bar_->setRange(0, 1);
        spend_bar_->setValue(0);
        spend_bar_->setFormat(tr("%1 spent · no cap").arg(SweepListModel::money(spend)));
    }
}

void SweepView::showRungs(const QJsonObject& detail) {
    const QJsonArray rungs = detail.value("rungs").toArray();
    const QJsonArray trials = detail.value("trials").toArray();
    const QString unit =
        detail.value("spec").toObject().value("early_stopping").toObject().value("resource").toString("epochs");
    rungs_none_->setVisible(rungs.isEmpty());
    while (rung_rows_.size() > rungs.size()) {
        auto [label, bar] = rung_rows_.takeLast();
        delete label;
        delete bar;
    }
    while (rung_rows_.size() < rungs.size()) {
        auto* label = new QLabel;
        auto* bar = new QProgressBar;
        bar->setTextVisible(true);
        bar->setMaximumHeight(18);
        rungs_layout_->addWidget(label, static_cast<int>(rung_rows_.size()) + 1, 0);
        rungs_layout_->addWidget(bar, static_cast<int>(rung_rows_.size()) + 1, 1);
        rung_rows_.push_back({label, bar});
    }
    for (int rung = 0; rung < rungs.size(); ++rung) {
        // Reached: the trial completed the rung's resource and reported its objective there.
        int reached = 0;
        for (const auto& trial : trials)
            if (trial.toObject().value("objectives").toArray().size() > rung)
                ++reached;
        auto [label, bar] = rung_rows_[rung];
        label->setText(tr("rung %1 (%2)").arg(rung).arg(plural_unit(rungs[rung].toDouble(), unit)));
        bar->setRange(0, std::max<int>(1, static_cast<int>(trials.size())));
        bar->setValue(reached);
        bar->setFormat(tr("%1 of %n trial(s)", nullptr, static_cast<int>(trials.size())).arg(reached));
    }
}

QStringList SweepView::rungTexts() const {
    QStringList texts;
    for (const auto& [label, bar] : rung_rows_)
        texts << label->text() + ": " + bar->text();
    return texts;
}

void SweepView::showParallel(const QJsonObject& detail) {
    const QString metric = detail.value("objective").toObject().value("metric").toString();
    const MetricGoal goal = detail.value("objective").toObject().value("goal").toString() == "min"
                                ? MetricGoal::minimize
                                : MetricGoal::maximize;
    // Each trial as a run of its own: its parameters are its config, the worker's best and last its summary.
    std::vector<RunRecord> runs;
    for (const auto& value : detail.value("trials").toArray()) {
        const QJsonObject trial = value.toObject();
        RunRecord run;
        run.id = trial.value("trial").toInt();
        run.name = QStringLiteral("#%1").arg(run.id).toStdString();
        run.state = trial.value("state").toString().toStdString();
        const QJsonObject params = trial.value("params").toObject();
        for (auto it = params.begin(); it != params.end(); ++it) {
            ConfigValue config;
            if (it.value().isDouble()) {
                config.number = it.value().toDouble();
                config.text = QString::number(config.number, 'g', 17).toStdString();
            } else if (it.value().isBool()) {
                config.number = it.value().toBool() ? 1 : 0;
                config.text = it.value().toBool() ? "true" : "false";
            } else {
                config.text = it.value().isString()
                                  ? it.value().toString().toStdString()
                                  : QJsonDocument(QJsonArray{it.value()}).toJson(QJsonDocument::Compact).toStdString();
            }
            run.config[it.key().toStdString()] = config;
        }
        if (trial.value("best").isDouble()) {
            MetricSummary summary;
            summary.best = trial.value("best").toDouble();
            summary.last = trial.value("last").toDouble(summary.best);
            summary.min = summary.max = summary.best;
            summary.count = 1;
            summary.goal = goal;
            run.summaries[metric.toStdString()] = summary;
        }
        runs.push_back(std::move(run));
    }
    const QStringList keys = trials_->paramKeys();
    parallel_->setRuns(std::move(runs));
    if (keys != parallel_keys_ || metric != parallel_metric_) {
        parallel_keys_ = keys;
        parallel_metric_ = metric;
        parallel_->setAxes(keys, "best." + metric); // clears the brushes: only when the axes change
    }
}

void SweepView::updateButtons() {
    const QJsonObject detail = currentDetail();
    const QString state = detail.value("state").toString();
    stop_->setEnabled(state == "running");
    resume_->setEnabled(state == "stopped" || state == "budget");
    extend_->setEnabled(!detail.isEmpty());
    promote_->setEnabled(!detail.value("best").toObject().isEmpty());
}

void SweepView::stopCurrent() {
    if (SweepSync* sync = syncFor(current_backend_); sync && current_id_)
        sync->stop(current_id_);
}

void SweepView::resumeCurrent() {
    if (SweepSync* sync = syncFor(current_backend_); sync && current_id_)
        sync->resume(current_id_);
}

void SweepView::extendCurrent(const QJsonObject& body) {
    if (SweepSync* sync = syncFor(current_backend_); sync && current_id_)
        sync->extend(current_id_, body);
}

void SweepView::promoteCurrent() {
    if (SweepSync* sync = syncFor(current_backend_); sync && current_id_)
        sync->promoteBest(current_id_);
}

void SweepView::extendWithDialog() {
    const QJsonObject detail = currentDetail();
    if (detail.isEmpty())
        return;
    const QJsonObject spec = detail.value("spec").toObject();
    const QJsonObject budget = spec.value("budget").toObject();
    QDialog dialog(this);
    dialog.setWindowTitle(tr("Extend “%1”").arg(detail.value("name").toString()));
    auto* trials = new QSpinBox;
    const int started = static_cast<int>(detail.value("trials").toArray().size());
    trials->setRange(std::max(1, started), 1000000); // never fewer than it has
    trials->setValue(spec.value("max_trials").toInt(started));
    auto* money = new QDoubleSpinBox;
    money->setRange(0, 1e7);
    money->setPrefix(currency_symbol(display_currency()));
    money->setSpecialValueText(tr("no cap"));
    money->setValue(budget.value("money").toDouble());
    auto* hours = new QDoubleSpinBox;
    hours->setRange(0, 1e7);
    hours->setSuffix(tr(" GPU-hours"));
    hours->setSpecialValueText(tr("no cap"));
    hours->setValue(budget.value("gpu_hours").toDouble());
    auto* form = new QFormLayout(&dialog);
    form->addRow(tr("Max trials"), trials);
    form->addRow(tr("Budget"), money);
    form->addRow(tr("GPU time"), hours);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    form->addRow(buttons);
    if (dialog.exec() == QDialog::Accepted)
        extendCurrent({{"max_trials", trials->value()}, {"budget", money->value()}, {"gpu_hours", hours->value()}});
}

void SweepView::scheduleBest() {
    if (current_id_ && !best_timer_->isActive())
        best_timer_->start(500);
}

void SweepView::recomputeBest() {
    if (best_reading_) {
        best_again_ = true; // one read at a time; the newest request follows the one under way
        return;
    }
    const QJsonObject detail = currentDetail();
    if (detail.isEmpty())
        return;
    std::vector<std::pair<int, std::string>> trials;
    for (const auto& value : detail.value("trials").toArray()) {
        const QJsonObject trial = value.toObject();
        if (const qint64 job = trial.value("job").toInteger(); job > 0)
            trials.emplace_back(trial.value("trial").toInt(), std::to_string(job));
    }
    const QJsonObject objective = detail.value("objective").toObject();
    const std::string metric = objective.value("metric").toString().toStdString();
    const bool maximize = objective.value("goal").toString() != "min";
    const quint64 generation = ++best_generation_;
    best_reading_ = true;
    best_origin_ = detail.value("created").toDouble();
    best_metric_ = objective.value("metric").toString();
    struct Read {
        std::vector<BestSoFarPoint> points;
        QString error;
    };
    run_in_background(
        this,
        [path = catalog_path_.toStdString(), backend = current_backend_.toStdString(), trials, metric, maximize] {
            Read read;
            // Exceptions end here: a catalog changed under the reader is said, never thrown across the thread.
            try {
                Catalog catalog;
                if (const std::string error = catalog.open(path, true); !error.empty()) {
                    read.error = QString::fromStdString(error);
                    return read;
                }
                const std::vector<TrialSeries> series = read_trial_series(catalog, backend, trials, metric);
                read.points = best_so_far(series, maximize);
            } catch (const std::exception& error) {
                read.error = QString::fromUtf8(error.what());
            }
            return read;
        },
        [this, generation](const Read& read) {
            best_reading_ = false;
            if (generation == best_generation_) {
                best_error_ = read.error;
                best_points_.clear();
                for (const BestSoFarPoint& point : read.points)
                    best_points_.push_back({point.time, point.spend, point.value, point.best, point.trial});
                drawBest();
            }
            if (std::exchange(best_again_, false))
                recomputeBest();
        },
        QThreadPool::globalInstance());
}

void SweepView::setBestAxis(BestAxis axis) { best_axis_->setCurrentIndex(axis == BestAxis::spend ? 1 : 0); }

int SweepView::bestPointCount() const { return static_cast<int>(best_points_.size()); }

void SweepView::drawBest() {
    const bool spend = best_axis_->currentIndex() == 1;
    // Minutes once the sweep has run for more than ten of them: seconds would be five-digit ticks.
    const double span = best_points_.empty() ? 0 : best_points_.back().time - best_origin_;
    const double unit = span > 600 ? 60.0 : 1.0;
    QList<QPointF> reports, best;
    double low_x = 0, high_x = 0, low_y = 0, high_y = 0;
    bool first = true;
    for (const Report& point : best_points_) {
        const double x = spend ? point.spend : (point.time - best_origin_) / unit;
        reports << QPointF(x, point.value);
        // A step: the best holds until the report that beats it.
        if (!best.isEmpty())
            best << QPointF(x, best.last().y());
        best << QPointF(x, point.best);
        low_x = first ? x : std::min(low_x, x);
        high_x = first ? x : std::max(high_x, x);
        low_y = first ? point.value : std::min(low_y, point.value);
        high_y = first ? point.value : std::max(high_y, point.value);
        first = false;
    }
    reports_->replace(reports);
    best_line_->replace(best);
    // The y-axis a log one while asked for and every value is positive (else linear, the box greyed out).
    const bool can_log = !best_points_.empty() && low_y > 0;
    best_log_->setEnabled(can_log);
    const bool log = can_log && best_log_->isChecked();
    QAbstractAxis* y_now = best_chart_->axes(Qt::Vertical).value(0);
    if (y_now && (qobject_cast<QLogValueAxis*>(y_now) != nullptr) != log) {
        best_chart_->removeAxis(y_now);
        delete y_now;
        QAbstractAxis* axis = nullptr;
        if (log) {
            QLogValueAxis* log_axis = make_log_axis(best_metric_);
            log_axis->setMinorTickCount(-1);
            axis = log_axis;
        } else {
            axis = new QValueAxis;
        }
        best_chart_->addAxis(axis, Qt::AlignLeft);
        reports_->attachAxis(axis);
        best_line_->attachAxis(axis);
    }
    if (auto* log_axis = qobject_cast<QLogValueAxis*>(best_chart_->axes(Qt::Vertical).value(0))) {
        log_axis->setTitleText(best_metric_);
        log_axis->setRange(low_y / 1.2, high_y * 1.2);
    }
    if (auto* x_axis = qobject_cast<QValueAxis*>(best_chart_->axes(Qt::Horizontal).value(0))) {
        x_axis->setTitleText(spend ? tr("the sweep's spend (%1)").arg(currency_symbol(display_currency()).trimmed())
                             : unit > 1 ? tr("minutes since the sweep started")
                                        : tr("seconds since the sweep started"));
        x_axis->setLabelFormat(spend ? QStringLiteral("%.4f") : QStringLiteral("%g"));
        fit(x_axis, std::min(low_x, 0.0), high_x);
    }
    if (auto* y_axis = qobject_cast<QValueAxis*>(best_chart_->axes(Qt::Vertical).value(0))) {
        y_axis->setTitleText(best_metric_);
        const double margin = (high_y - low_y) * 0.05;
        fit(y_axis, low_y - margin, high_y + margin);
    }
    best_chart_->setTitle(!best_error_.isEmpty()
                              ? tr("Best so far: the catalog could not be read (%1)").arg(best_error_)
                          : best_points_.empty() ? tr("Best so far: no trial has reported %1 yet").arg(best_metric_)
                                                 : tr("Best %1 so far").arg(best_metric_));
    emit bestUpdated();
}

} // namespace traindeck
