#include "compareview.h"

#include "axisticks.h"
#include "chartexport.h"
#include "chartview.h"
#include "diffhighlighter.h"
#include "theme.h"
#include "groupstats.h"
#include "parallelcoordinates.h"
#include "reproduce.h"

#include <QCategoryAxis>
#include <QChart>
#include <QChartView>
#include <QCheckBox>
#include <QComboBox>
#include <QCursor>
#include <QEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLegend>
#include <QListWidget>
#include <QLogValueAxis>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScatterSeries>
#include <QSplitter>
#include <QStandardItemModel>
#include <QTabWidget>
#include <QTableView>
#include <QToolTip>
#include <QValueAxis>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace traindeck {

namespace {

constexpr int kMaxPreselectedAxes = 8;
const char* const kSummaryKinds[] = {"last", "min", "max", "best"};

// Pastel backgrounds for the distinct values of a diff row, so that runs sharing a value read as a group (dark shades
// of the same hues in the dark theme: background_tint).
const QColor kValueTints[] = {QColor(222, 235, 247), QColor(254, 230, 206), QColor(229, 245, 224),
                              QColor(239, 237, 245), QColor(253, 224, 221), QColor(255, 247, 188)};

QString text_of(const std::string& text) { return QString::fromStdString(text); }

MetricGoal goal_of(const std::vector<RunRecord>& runs, const std::string& series) {
    for (const RunRecord& run : runs) {
        const auto found = run.summaries.find(series);
        if (found != run.summaries.end() && found->second.goal != MetricGoal::none)
            return found->second.goal;
    }
    return MetricGoal::none;
}

// The figure's default: the best validation accuracy when there is one, else the best of any series with a goal.
QString default_metric(const QStringList& fields) {
    for (const char* wanted : {"best.val/accuracy", "best.val_accuracy", "best.val/loss", "best.loss", "last.loss"})
        if (fields.contains(QLatin1String(wanted)))
            return QLatin1String(wanted);
    for (const QString& field : fields)
        if (field.startsWith("best."))
            return field;
    return fields.isEmpty() ? QString() : fields.front();
}

// Numbers on a log scale when they are all positive and span three decades or more (learning rates).
bool wants_log(double low, double high) { return low > 0 && high / low >= 100; }

QTableView* make_table(QStandardItemModel* model) {
    auto* table = new QTableView;
    table->setModel(model);
    table->setAlternatingRowColors(false);
    table->setSelectionMode(QAbstractItemView::ContiguousSelection);
    table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table->setWordWrap(false);
    table->setTextElideMode(Qt::ElideMiddle);
    table->verticalHeader()->hide();
    table->verticalHeader()->setDefaultSectionSize(table->fontMetrics().height() + 8);
    table->horizontalHeader()->setTextElideMode(Qt::ElideMiddle);
    table->horizontalHeader()->setDefaultAlignment(Qt::Alignment(Qt::AlignCenter | Qt::TextWordWrap));
    table->horizontalHeader()->setHighlightSections(false);
    // Run names wrap at their hyphens onto up to three lines instead of being cut to a few letters.
    table->horizontalHeader()->setMinimumHeight(table->fontMetrics().height() * 3 + 10);
    table->setCornerButtonEnabled(false);
    return table;
}

// The first columns fit their contents; the run columns share the rest (Stretch), so that a selection of a dozen
// or two runs needs no horizontal scrolling; past that, they keep a readable minimum width and the table scrolls.
void fit_columns(QTableView* table, int fixed_columns) {
    QHeaderView* header = table->horizontalHeader();
    header->setMinimumSectionSize(table->fontMetrics().horizontalAdvance(QStringLiteral("0.00000")) + 8);
    const int columns = table->model()->columnCount();
    for (int c = 0; c < columns; ++c)
        header->setSectionResizeMode(c, c < fixed_columns ? QHeaderView::Interactive : QHeaderView::Stretch);
    for (int c = 0; c < fixed_columns && c < columns; ++c) {
        table->resizeColumnToContents(c);
        table->setColumnWidth(c, std::min(table->columnWidth(c) + 6, 220));
    }
}

QStandardItem* make_item(const QString& text) {
    auto* item = new QStandardItem(text);
    item->setEditable(false);
    return item;
}

} // namespace

CompareView::CompareView(QWidget* parent) : QWidget(parent) {
    heading_ = new QLabel(tr("Select runs to compare"));
    QFont heading_font = heading_->font();
    heading_font.setPointSizeF(heading_font.pointSizeF() * 1.2);
    heading_font.setBold(true);
    heading_->setFont(heading_font);
    auto* export_button = new QPushButton(tr("Export…"));
    export_button->setToolTip(tr("Save this tab: the tables as CSV (every row), the plots as PNG, SVG or PDF at "
                                 "160 × 100 mm, 300 dpi"));

    // (1) Config diff.
    config_model_ = new QStandardItemModel(this);
    config_table_ = make_table(config_model_);
    show_all_keys_ = new QCheckBox(tr("Show all keys"));
    show_all_keys_->setToolTip(tr("Also the keys on which every run agrees (shown in grey)"));
    auto* config_page = new QWidget;
    auto* config_layout = new QVBoxLayout(config_page);
    config_layout->setContentsMargins(6, 6, 6, 6);
    config_layout->addWidget(show_all_keys_);
    config_layout->addWidget(config_table_);

    // (2) Summaries.
    summary_model_ = new QStandardItemModel(this);
    summary_table_ = make_table(summary_model_);
    auto* summary_note = new QLabel(tr("Bold: the best run in each row, by the metric's goal (higher or lower)."));
    summary_note->setForegroundRole(QPalette::PlaceholderText);
    auto* summary_page = new QWidget;
    auto* summary_layout = new QVBoxLayout(summary_page);
    summary_layout->setContentsMargins(6, 6, 6, 6);
    summary_layout->addWidget(summary_note);
    summary_layout->addWidget(summary_table_);

    // (3) Parallel coordinates with its axis chooser.
    parallel_ = new ParallelCoordinates;
    axis_list_ = new QListWidget;
    axis_list_->setToolTip(tr("Checked keys are the axes, in this order; drag a key to move its axis"));
    axis_list_->setDragDropMode(QAbstractItemView::InternalMove);
    axis_list_->setMaximumWidth(220);
    metric_ = new QComboBox;
    metric_->setMaximumWidth(220);
    metric_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    brush_label_ = new QLabel;
    brush_label_->setWordWrap(true);
    auto* clear_brushes = new QPushButton(tr("Clear brushes"));
    auto* chooser = new QWidget;
    chooser->setMaximumWidth(230);
    auto* chooser_layout = new QVBoxLayout(chooser);
    chooser_layout->setContentsMargins(0, 0, 0, 0);
    chooser_layout->addWidget(new QLabel(tr("Colour and last axis")));
    chooser_layout->addWidget(metric_);
    chooser_layout->addSpacing(6);
    chooser_layout->addWidget(new QLabel(tr("Config axes")));
    chooser_layout->addWidget(axis_list_, 1);
    chooser_layout->addWidget(brush_label_);
    chooser_layout->addWidget(clear_brushes);
    auto* hint = new QLabel(tr("Drag along an axis to brush a range; click the axis to clear it."));
    hint->setForegroundRole(QPalette::PlaceholderText);
    auto* plot_side = new QWidget;
    auto* plot_layout = new QVBoxLayout(plot_side);
    plot_layout->setContentsMargins(0, 0, 0, 0);
    plot_layout->addWidget(parallel_, 1);
    plot_layout->addWidget(hint);
    auto* parallel_page = new QWidget;
    auto* parallel_layout = new QHBoxLayout(parallel_page);
    parallel_layout->setContentsMargins(6, 6, 6, 6);
    parallel_layout->addWidget(chooser);
    parallel_layout->addWidget(plot_side, 1);

    // (4) Scatter.
    scatter_x_ = new QComboBox;
    scatter_y_ = new QComboBox;
    for (QComboBox* combo : {scatter_x_, scatter_y_}) {
        combo->setMinimumContentsLength(18);
        combo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    }
    scatter_chart_ = new QChart;
    // The console's chart view (drag to zoom, double-click back, keys, the palette's theme), without the crosshair:
    // a hovered point says its run.
    scatter_view_ = make_chart_view(scatter_chart_);
    static_cast<ChartView*>(scatter_view_)->setCrosshairEnabled(false);
    scatter_chart_->legend()->hide();
    scatter_chart_->setMargins(QMargins(6, 6, 6, 6));
    auto* scatter_controls = new QHBoxLayout;
    scatter_controls->addWidget(new QLabel(tr("X")));
    scatter_controls->addWidget(scatter_x_);
    scatter_controls->addSpacing(16);
    scatter_controls->addWidget(new QLabel(tr("Y")));
    scatter_controls->addWidget(scatter_y_);
    scatter_controls->addSpacing(16);
    scatter_log_x_ = new QCheckBox(tr("Log X"));
    scatter_log_x_->setToolTip(tr("A log scale for X (chosen for positive values spanning 100× or more)"));
    scatter_controls->addWidget(scatter_log_x_);
    scatter_controls->addStretch();
    auto* scatter_page = new QWidget;
    auto* scatter_layout = new QVBoxLayout(scatter_page);
    scatter_layout->setContentsMargins(6, 6, 6, 6);
    scatter_layout->addLayout(scatter_controls);
    scatter_layout->addWidget(scatter_view_, 1);

    tabs_ = new QTabWidget;
    tabs_->addTab(config_page, tr("Config diff"));
    tabs_->addTab(summary_page, tr("Summaries"));
    tabs_->addTab(parallel_page, tr("Parallel coordinates"));
    tabs_->addTab(scatter_page, tr("Scatter"));

    // (5) Environment: what the runs were made of, where it differs (model/reproduce.h).
    environment_model_ = new QStandardItemModel(this);
    environment_table_ = make_table(environment_model_);
    environment_note_ = new QLabel(tr("Select runs to compare what they were made of."));
    environment_note_->setWordWrap(true);
    auto* environment_page = new QWidget;
    auto* environment_layout = new QVBoxLayout(environment_page);
    environment_layout->setContentsMargins(6, 6, 6, 6);
    environment_layout->addWidget(environment_note_);
    code_diff_title_ = new QLabel;
    code_diff_ = make_diff_view();
    auto* code_box = new QWidget;
    auto* code_layout = new QVBoxLayout(code_box);
    code_layout->setContentsMargins(0, 0, 0, 0);
    code_layout->addWidget(code_diff_title_);
    code_layout->addWidget(code_diff_, 1);
    code_box->hide();
    auto* environment_split = new QSplitter(Qt::Vertical);
    environment_split->addWidget(environment_table_);
    environment_split->addWidget(code_box);
    environment_split->setStretchFactor(0, 3);
    environment_split->setStretchFactor(1, 2);
    environment_layout->addWidget(environment_split, 1);
    tabs_->addTab(environment_page, tr("Environment"));

    auto* top = new QHBoxLayout;
    top->addWidget(heading_);
    top->addStretch();
    top->addWidget(export_button);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(8, 8, 8, 8);
    layout->addLayout(top);
    layout->addWidget(tabs_, 1);

    connect(show_all_keys_, &QCheckBox::toggled, this, &CompareView::rebuildConfigTable);
    connect(axis_list_, &QListWidget::itemChanged, this, &CompareView::applyParallelAxes);
    connect(axis_list_->model(), &QAbstractItemModel::rowsMoved, this, &CompareView::applyParallelAxes);
    connect(metric_, &QComboBox::currentIndexChanged, this, &CompareView::applyParallelAxes);
    connect(clear_brushes, &QPushButton::clicked, parallel_, &ParallelCoordinates::clearBrushes);
    connect(parallel_, &ParallelCoordinates::brushChanged, this, [this] {
        updateBrushLabel();
        rebuildScatter(); // the brushed runs stand out there too
        emit brushChanged(parallel_->selectedRuns(), parallel_->hasBrush());
    });
    connect(scatter_x_, &QComboBox::currentIndexChanged, this, &CompareView::rebuildScatter);
    connect(scatter_y_, &QComboBox::currentIndexChanged, this, &CompareView::rebuildScatter);
    connect(scatter_log_x_, &QCheckBox::toggled, this, &CompareView::rebuildScatter);
    connect(tabs_, &QTabWidget::currentChanged, this, [this](int tab) {
        if (tab == scatterTab && scatter_stale_)
            rebuildScatterNow();
    });
    connect(export_button, &QPushButton::clicked, this, &CompareView::exportWithDialog);
}

const QAbstractItemModel& CompareView::configModel() const { return *config_model_; }
const QAbstractItemModel& CompareView::summaryModel() const { return *summary_model_; }

void CompareView::setShowAllKeys(bool all) { show_all_keys_->setChecked(all); }

void CompareView::setCurrentTab(Tab tab) { tabs_->setCurrentIndex(tab); }

void CompareView::setRuns(std::vector<RunRecord> runs) {
    runs_ = std::move(runs);
    std::vector<const RunRecord*> pointers;
    pointers.reserve(runs_.size());
    for (const RunRecord& run : runs_)
        pointers.push_back(&run);
    differing_ = differing_config_keys(pointers);
    std::set<std::string> keys;
    std::set<std::string> series;
    for (const RunRecord& run : runs_) {
        for (const auto& [key, value] : run.config)
            keys.insert(key);
        for (const auto& [name, summary] : run.summaries)
            series.insert(name);
    }
    all_keys_.assign(keys.begin(), keys.end());
    summary_fields_.clear();
    for (const std::string& name : series)
        for (const char* kind : {"best", "last", "min", "max"})
            summary_fields_ << QStringLiteral("%1.%2").arg(QLatin1String(kind), text_of(name));

    const qsizetype run_count = static_cast<qsizetype>(runs_.size());
    const qsizetype key_count = static_cast<qsizetype>(differing_.size());
    heading_->setText((run_count == 1 ? tr("Comparing 1 run") : tr("Comparing %1 runs").arg(run_count)) +
                      (key_count == 1 ? tr(" · 1 config key differs") : tr(" · %1 config keys differ").arg(key_count)));
    rebuildConfigTable();
    rebuildSummaryTable();

    updating_ = true;
    const QString old_metric = metric_->currentText();
    metric_->clear();
    metric_->addItems(summary_fields_);
    metric_->setCurrentText(summary_fields_.contains(old_metric) ? old_metric : default_metric(summary_fields_));
    parallel_->setRuns(runs_);
    rebuildAxisChooser();

    // Scatter: x any key (the differing first) or summary field, y any summary field.
    const QString old_x = scatter_x_->currentText(), old_y = scatter_y_->currentText();
    scatter_x_->clear();
    scatter_y_->clear();
    QStringList x_fields;
    for (const std::string& key : differing_)
        x_fields << text_of(key);
    for (const std::string& key : all_keys_)
        if (!std::binary_search(differing_.begin(), differing_.end(), key))
            x_fields << text_of(key);
    x_fields << summary_fields_;
    scatter_x_->addItems(x_fields);
    scatter_y_->addItems(summary_fields_);
    QString x = old_x;
    if (!x_fields.contains(x)) {
        // A differing number key reads best against a metric: a learning rate first, else the one with the most
        // distinct values; never a seed (noise by design).
        x = x_fields.isEmpty() ? QString() : x_fields.front();
        size_t most = 0;
        bool learning_rate = false;
        for (const std::string& key : differing_) {
            if (key == "seed" || key.ends_with(".seed"))
                continue;
            std::set<double> distinct;
            bool numeric = true;
            for (const RunRecord& run : runs_) {
                const auto found = run.config.find(key);
                if (found == run.config.end())
                    continue;
                numeric = numeric && found->second.is_number();
                distinct.insert(found->second.number);
            }
            if (!numeric)
                continue;
            const bool is_rate = key == "lr" || key.ends_with(".lr") || key.find("learning_rate") != std::string::npos;
            if ((is_rate && !learning_rate) || (is_rate == learning_rate && distinct.size() > most)) {
                x = text_of(key);
                most = distinct.size();
                learning_rate = is_rate;
            }
        }
    }
    scatter_x_->setCurrentText(x);
    scatter_y_->setCurrentText(summary_fields_.contains(old_y) ? old_y : default_metric(summary_fields_));
    updating_ = false;
    applyParallelAxes();
    rebuildScatter();
    updateBrushLabel();
}

void CompareView::rebuildConfigTable() {
    const bool all = show_all_keys_->isChecked();
    const std::vector<std::string>& keys = all ? all_keys_ : differing_;
    config_model_->clear();
    config_model_->setColumnCount(1 + static_cast<int>(runs_.size()));
    config_model_->setHorizontalHeaderItem(0, make_item(tr("key")));
    for (size_t r = 0; r < runs_.size(); ++r) {
        QStandardItem* header = make_item(text_of(runs_[r].name));
        header->setToolTip(QStringLiteral("%1 (#%2)").arg(text_of(runs_[r].name)).arg(runs_[r].id));
        config_model_->setHorizontalHeaderItem(1 + static_cast<int>(r), header);
    }
    const QColor faint = palette().color(QPalette::PlaceholderText);
    QFont bold = font();
    bold.setBold(true);
    for (const std::string& key : keys) {
        const bool differs = std::binary_search(differing_.begin(), differing_.end(), key);
        QList<QStandardItem*> row;
        QStandardItem* key_item = make_item(text_of(key));
        if (all && differs)
            key_item->setFont(bold);
        if (!differs)
            key_item->setForeground(faint);
        row << key_item;
        // Distinct values in order of first appearance, each with its tint (when few enough to tell apart).
        std::map<std::string, int> tint_of;
        for (const RunRecord& run : runs_) {
            const auto found = run.config.find(key);
            if (found != run.config.end())
                tint_of.emplace(found->second.text, static_cast<int>(tint_of.size()));
        }
        const bool tinted = differs && tint_of.size() <= std::size(kValueTints) && tint_of.size() < runs_.size();
        for (const RunRecord& run : runs_) {
            const auto found = run.config.find(key);
            QStandardItem* item;
            if (found == run.config.end()) {
                item = make_item(QStringLiteral("—"));
                item->setForeground(faint);
                item->setToolTip(tr("%1 does not have %2").arg(text_of(run.name), text_of(key)));
            } else {
                // The value as the run reported it: exact, so that two values never look alike when they differ.
                item = make_item(text_of(found->second.text));
                item->setToolTip(QStringLiteral("%1 = %2").arg(text_of(key), text_of(found->second.text)));
                if (!differs)
                    item->setForeground(faint);
                if (tinted)
                    item->setBackground(background_tint(kValueTints[tint_of[found->second.text]], palette()));
            }
            item->setTextAlignment(Qt::AlignCenter);
            row << item;
        }
        config_model_->appendRow(row);
    }
    fit_columns(config_table_, 1);
}

void CompareView::rebuildSummaryTable() {
    summary_model_->clear();
    summary_table_->clearSpans();
    summary_model_->setColumnCount(2 + static_cast<int>(runs_.size()));
    summary_model_->setHorizontalHeaderItem(0, make_item(tr("metric")));
    summary_model_->setHorizontalHeaderItem(1, make_item(tr("summary")));
    for (size_t r = 0; r < runs_.size(); ++r) {
        QStandardItem* header = make_item(text_of(runs_[r].name));
        header->setToolTip(QStringLiteral("%1 (#%2)").arg(text_of(runs_[r].name)).arg(runs_[r].id));
        summary_model_->setHorizontalHeaderItem(2 + static_cast<int>(r), header);
    }
    std::set<std::string> series;
    for (const RunRecord& run : runs_)
        for (const auto& [name, summary] : run.summaries)
            series.insert(name);
    QFont bold = font();
    bold.setBold(true);
    const QColor best_tint(229, 245, 224);
    const QColor faint = palette().color(QPalette::PlaceholderText);
    int row_index = 0;
    for (const std::string& name : series) {
        const MetricGoal goal = goal_of(runs_, name);
        const int first_row = row_index;
        for (const char* kind : kSummaryKinds) {
            const QString field = QStringLiteral("%1.%2").arg(QLatin1String(kind), text_of(name));
            QList<QStandardItem*> row;
            QStandardItem* metric_item = make_item(text_of(name));
            metric_item->setTextAlignment(Qt::AlignLeft | Qt::AlignTop);
            if (goal != MetricGoal::none)
                metric_item->setToolTip(goal == MetricGoal::maximize ? tr("higher is better") : tr("lower is better"));
            row << metric_item << make_item(QLatin1String(kind));
            std::vector<double> values;
            for (const RunRecord& run : runs_)
                values.push_back(ParallelCoordinates::summaryValue(run, field).value_or(NAN));
            // The best of the row by the goal: the largest accuracy, the smallest loss, for every summary kind. Runs
            // that tie are all bold; a row where every run ties (a max loss of 2.3 at step 0) has no best.
            double best = NAN;
            size_t present = 0, at_best = 0;
            if (goal != MetricGoal::none)
                for (double value : values)
                    if (!std::isnan(value)) {
                        ++present;
                        if (std::isnan(best) || (goal == MetricGoal::maximize ? value > best : value < best))
                            best = value;
                    }
            for (double value : values)
                at_best += value == best;
            const bool has_best = present > 1 && at_best < present;
            for (size_t r = 0; r < values.size(); ++r) {
                QStandardItem* item = make_item(ParallelCoordinates::formatNumber(values[r]));
                item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
                if (std::isnan(values[r]))
                    item->setForeground(faint);
                else
                    item->setToolTip(QStringLiteral("%1 of %2: %3")
                                         .arg(field, text_of(runs_[r].name), QString::number(values[r], 'g', 17)));
                if (has_best && values[r] == best) {
                    item->setFont(bold);
                    item->setBackground(best_tint);
                }
                row << item;
            }
            summary_model_->appendRow(row);
            ++row_index;
        }
        summary_table_->setSpan(first_row, 0, row_index - first_row, 1);
    }
    fit_columns(summary_table_, 2);
}

void CompareView::rebuildAxisChooser() {
    // Kept checked what the user had checked, when those keys are still there; else the differing keys.
    QStringList checked;
    for (int i = 0; i < axis_list_->count(); ++i)
        if (axis_list_->item(i)->checkState() == Qt::Checked)
            checked << axis_list_->item(i)->text();
    bool keep = !checked.isEmpty();
    for (const QString& key : checked)
        keep = keep && std::binary_search(all_keys_.begin(), all_keys_.end(), key.toStdString());
    const QSignalBlocker blocker(axis_list_);
    axis_list_->clear();
    int preselected = 0;
    auto add = [&](const std::string& key, bool differs) {
        auto* item = new QListWidgetItem(text_of(key), axis_list_);
        item->setFlags(Qt::ItemIsUserCheckable | Qt::ItemIsEnabled | Qt::ItemIsSelectable);
        bool on = keep ? checked.contains(item->text()) : differs && preselected < kMaxPreselectedAxes;
        if (on && !keep)
            ++preselected;
        item->setCheckState(on ? Qt::Checked : Qt::Unchecked);
        if (!differs)
            item->setForeground(palette().color(QPalette::PlaceholderText));
        item->setToolTip(differs ? tr("differs among these runs") : tr("the same in every run"));
    };
    // Seeds first: on the left they fan out, and the keys that matter meet the metric's axis.
    auto is_seed = [](const std::string& key) { return key == "seed" || key.ends_with(".seed"); };
    for (const std::string& key : differing_)
        if (is_seed(key))
            add(key, true);
    for (const std::string& key : differing_)
        if (!is_seed(key))
            add(key, true);
    for (const std::string& key : all_keys_)
        if (!std::binary_search(differing_.begin(), differing_.end(), key))
            add(key, false);
}

void CompareView::applyParallelAxes() {
    if (updating_)
        return;
    QStringList keys;
    for (int i = 0; i < axis_list_->count(); ++i)
        if (axis_list_->item(i)->checkState() == Qt::Checked)
            keys << axis_list_->item(i)->text();
    // The same axes again (setRuns with the runs compared before) keep their brushes: setAxes would clear them.
    if (keys != parallel_->configKeys() || metric_->currentText() != parallel_->metric())
        parallel_->setAxes(keys, metric_->currentText());
    updateBrushLabel();
}

void CompareView::updateBrushLabel() {
    if (!parallel_->hasBrush())
        brush_label_->setText(runs_.size() == 1 ? tr("No brush: the one run")
                                                : tr("No brush: all %1 runs").arg(runs_.size()));
    else
        brush_label_->setText(
            tr("%1 of %2 runs inside the brushes").arg(parallel_->selectedRuns().size()).arg(runs_.size()));
}

void CompareView::setScatterFields(const QString& x, const QString& y) {
    updating_ = true;
    scatter_x_->setCurrentText(x);
    scatter_y_->setCurrentText(y);
    updating_ = false;
    rebuildScatter();
}

QChart* CompareView::scatterChart() {
    if (scatter_stale_)
        rebuildScatterNow();
    return scatter_chart_;
}

void CompareView::rebuildScatter() {
    if (updating_)
        return;
    // A brush drag asks on every mouse move; a hidden scatter waits until it is shown.
    if (tabs_->currentIndex() != scatterTab) {
        scatter_stale_ = true;
        return;
    }
    rebuildScatterNow();
}

void CompareView::rebuildScatterNow() {
    scatter_stale_ = false;
    scatter_chart_->removeAllSeries();
    for (QAbstractAxis* axis : scatter_chart_->axes()) {
        scatter_chart_->removeAxis(axis);
        delete axis;
    }
    scatter_points_.clear();
    const QString x_field = scatter_x_->currentText(), y_field = scatter_y_->currentText();
    scatter_chart_->setTitle(x_field.isEmpty() || y_field.isEmpty() ? QString()
                                                                    : tr("%1 against %2").arg(y_field, x_field));
    if (x_field.isEmpty() || y_field.isEmpty())
        return;

    // X: a summary field, a number key, or a text key as categories (with a small spread so that runs sharing a
    // category, such as seeds, do not hide one another).
    const bool x_summary = ParallelCoordinates::isSummaryField(x_field) &&
                           !std::binary_search(all_keys_.begin(), all_keys_.end(), x_field.toStdString());
    const std::string x_key = x_field.toStdString();
    bool x_numeric = true;
    QStringList categories;
    if (!x_summary) {
        for (const RunRecord& run : runs_) {
            const auto found = run.config.find(x_key);
            if (found == run.config.end())
                continue;
            if (!found->second.is_number())
                x_numeric = false;
            categories << text_of(found->second.text);
        }
        std::sort(categories.begin(), categories.end(), ParallelCoordinates::naturalLess);
        categories.erase(std::unique(categories.begin(), categories.end()), categories.end());
    }
    const bool brushed = parallel_->hasBrush();
    const QSet<qint64> selected = brushed ? parallel_->selectedRuns() : QSet<qint64>();
    auto* inside = new QScatterSeries;
    inside->setName(brushed ? tr("inside the brushes") : tr("runs"));
    inside->setMarkerSize(10);
    inside->setColor(QColor(31, 119, 180));
    inside->setBorderColor(Qt::white);
    auto* outside = new QScatterSeries;
    outside->setName(tr("outside the brushes"));
    outside->setMarkerSize(8);
    outside->setColor(QColor(190, 190, 190));
    outside->setBorderColor(Qt::white);
    std::map<int, int> seen_in_category;
    double x_low = INFINITY, x_high = -INFINITY, y_low = INFINITY, y_high = -INFINITY;
    for (size_t r = 0; r < runs_.size(); ++r) {
        const RunRecord& run = runs_[r];
        const std::optional<double> y = ParallelCoordinates::summaryValue(run, y_field);
        if (!y)
            continue;
        double x;
        if (x_summary) {
            const std::optional<double> value = ParallelCoordinates::summaryValue(run, x_field);
            if (!value)
                continue;
            x = *value;
        } else {
            const auto found = run.config.find(x_key);
            if (found == run.config.end())
                continue;
            if (x_numeric) {
                x = found->second.number;
            } else {
                const int category = static_cast<int>(categories.indexOf(text_of(found->second.text)));
                const int nth = seen_in_category[category]++;
                // -0.2 … +0.2 around the category, in a repeating pattern of 9 places.
                x = category + ((nth % 9) - 4) * 0.05;
            }
        }
        if (!std::isfinite(x) || !std::isfinite(*y))
            continue;
        x_low = std::min(x_low, x);
        x_high = std::max(x_high, x);
        y_low = std::min(y_low, *y);
        y_high = std::max(y_high, *y);
        (brushed && !selected.contains(run.id) ? outside : inside)->append(x, *y);
        scatter_points_.push_back({QPointF(x, *y), r});
    }
    scatter_chart_->addSeries(outside);
    scatter_chart_->addSeries(inside);
    if (brushed)
        scatter_chart_->legend()->show();
    else
        scatter_chart_->legend()->hide();

    // The log scale is chosen for each new X field, then it is the user's.
    const bool can_log = x_numeric && std::isfinite(x_low) && x_low > 0;
    if (x_field != log_chosen_for_) {
        log_chosen_for_ = x_field;
        const QSignalBlocker blocker(scatter_log_x_);
        scatter_log_x_->setChecked(can_log && wants_log(x_low, x_high));
    }
    scatter_log_x_->setEnabled(can_log);
    QAbstractAxis* x_axis;
    if (!x_numeric) {
        auto* axis = new QCategoryAxis;
        axis->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
        for (qsizetype c = 0; c < categories.size(); ++c)
            axis->append(categories[c], static_cast<double>(c));
        axis->setRange(-0.5, std::max<double>(0.5, categories.size() - 0.5));
        x_axis = axis;
    } else if (can_log && scatter_log_x_->isChecked()) {
        QLogValueAxis* axis = make_log_axis(QString(), QStringLiteral("%g"));
        axis->setRange(x_low / 1.5, x_high * 1.5);
        axis->setMinorTickCount(-1);
        x_axis = axis;
    } else {
        auto* axis = new QValueAxis;
        axis->setLabelFormat("%.4g");
        if (std::isfinite(x_low)) {
            const double pad = x_high > x_low ? (x_high - x_low) * 0.06 : std::max(std::abs(x_low) * 0.1, 0.5);
            axis->setRange(x_low - pad, x_high + pad);
            axis->applyNiceNumbers();
        }
        x_axis = axis;
    }
    x_axis->setTitleText(x_field);
    auto* y_axis = new QValueAxis;
    y_axis->setLabelFormat("%.4g");
    y_axis->setTitleText(y_field);
    if (std::isfinite(y_low)) {
        const double pad = y_high > y_low ? (y_high - y_low) * 0.08 : std::max(std::abs(y_low) * 0.1, 0.05);
        y_axis->setRange(y_low - pad, y_high + pad);
        y_axis->applyNiceNumbers();
    }
    for (QAbstractAxis* axis : {x_axis, static_cast<QAbstractAxis*>(y_axis)}) {
        QFont title = axis->titleFont();
        title.setBold(true);
        title.setPointSizeF(font().pointSizeF());
        axis->setTitleFont(title);
    }
    scatter_chart_->addAxis(x_axis, Qt::AlignBottom);
    scatter_chart_->addAxis(y_axis, Qt::AlignLeft);
    for (QScatterSeries* series : {outside, inside}) {
        series->attachAxis(x_axis);
        series->attachAxis(y_axis);
        connect(
            series, &QScatterSeries::hovered, this, [this, series, x_field, y_field](const QPointF& point, bool state) {
                if (!state) {
                    QToolTip::hideText();
                    return;
                }
                // Nearest on the screen, not in the values (an lr of 0.001 and an accuracy of 0.9 are not one scale).
                const QPointF here = scatter_chart_->mapToPosition(point, series);
                const auto nearest = std::min_element(
                    scatter_points_.begin(), scatter_points_.end(), [&](const ScatterPoint& a, const ScatterPoint& b) {
                        return QLineF(scatter_chart_->mapToPosition(a.at, series), here).length() <
                               QLineF(scatter_chart_->mapToPosition(b.at, series), here).length();
                    });
                if (nearest == scatter_points_.end())
                    return;
                const RunRecord& run = runs_[nearest->run];
                const auto x_config = run.config.find(x_field.toStdString());
                const QString x_text = x_config != run.config.end()
                                           ? text_of(x_config->second.text)
                                           : ParallelCoordinates::formatNumber(nearest->at.x());
                QToolTip::showText(QCursor::pos(),
                                   QStringLiteral("<b>%1</b> <span style='color:gray'>#%2</span><br>%3: %4<br>%5: %6")
                                       .arg(text_of(run.name).toHtmlEscaped())
                                       .arg(run.id)
                                       .arg(x_field.toHtmlEscaped(), x_text.toHtmlEscaped(), y_field.toHtmlEscaped(),
                                            ParallelCoordinates::formatNumber(nearest->at.y())),
                                   scatter_view_);
            });
    }
}

QString CompareView::exportCurrent(const QString& path) {
    const QString suffix = QFileInfo(path).suffix().toLower();
    switch (tabs_->currentIndex()) {
    case configTab:
    case summaryTab:
        if (suffix != "csv")
            return tr("Cannot export the table to %1: tables export as CSV; use a file name ending in .csv.").arg(path);
        return writeModelCsv(tabs_->currentIndex() == configTab ? *config_model_ : *summary_model_, path);
    case environmentTab:
        if (suffix != "csv")
            return tr("Cannot export the table to %1: tables export as CSV; use a file name ending in .csv.").arg(path);
        return writeModelCsv(*environment_model_, path);
    case parallelTab:
        return exportWidget(parallel_, path);
    case scatterTab:
        return exportChart(scatterChart(), path);
    default:
        return tr("Nothing to export on this tab.");
    }
}

void CompareView::exportWithDialog() {
    const bool table = tabs_->currentIndex() == configTab || tabs_->currentIndex() == summaryTab;
    const QString filter = table ? tr("CSV (*.csv)") : tr("PDF (*.pdf);;SVG (*.svg);;PNG (*.png)");
    const QString name = table ? (tabs_->currentIndex() == configTab ? "config-diff.csv" : "summaries.csv")
                               : (tabs_->currentIndex() == parallelTab ? "parallel-coordinates.pdf" : "scatter.pdf");
    const QString path = QFileDialog::getSaveFileName(this, tr("Export"), name, filter);
    if (path.isEmpty())
        return;
    const QString error = exportCurrent(path);
    if (!error.isEmpty())
        QMessageBox::warning(this, tr("Export"), error);
}

const QAbstractItemModel& CompareView::environmentModel() const { return *environment_model_; }

void CompareView::setCodeDiff(const QString& title, const QString& diff) {
    code_diff_title_->setText(title);
    code_diff_->setPlainText(diff);
    code_diff_->parentWidget()->setVisible(!title.isEmpty());
}

QString CompareView::codeDiff() const { return code_diff_->toPlainText(); }

QString CompareView::environmentNote() const { return environment_note_->text(); }

void CompareView::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() != QEvent::PaletteChange)
        return;
    rebuildConfigTable();
    if (!captures_.isEmpty())
        setCaptures(QList<CapturedRun>(captures_));
}

void CompareView::setCaptures(const QList<CapturedRun>& runs) {
    captures_ = runs;
    environment_model_->clear();
    setCodeDiff({}, {});
    QList<CapturedRun> captured;
    QStringList without;
    for (const CapturedRun& run : runs) {
        if (run.code.isEmpty() && run.environment.isEmpty())
            without << run.name;
        else
            captured << run;
    }
    if (captured.size() < 2) {
        environment_note_->setText(
            runs.size() < 2 ? tr("Select two or more runs to compare what they were made of.")
                            : tr("Fewer than two of these runs have a capture of their code and environment (runs are "
                                 "captured as they start on a worker; imported runs have none)."));
        return;
    }
    environment_model_->setColumnCount(2 + static_cast<int>(captured.size()));
    environment_model_->setHorizontalHeaderItem(0, make_item(tr("kind")));
    environment_model_->setHorizontalHeaderItem(1, make_item(tr("what")));
    for (int r = 0; r < captured.size(); ++r)
        environment_model_->setHorizontalHeaderItem(2 + r, make_item(captured[r].name));
    // Each run against the first: every thing that differs in any becomes a row, with each run's value.
    auto object = [](const QByteArray& bytes) { return QJsonDocument::fromJson(bytes).object(); };
    const QJsonObject first_code = object(captured[0].code), first_environment = object(captured[0].environment);
    std::map<std::pair<QString, QString>, std::vector<QString>> rows; // (kind, what) -> values
    std::map<std::pair<QString, QString>, QString> reference;
    int packages = 0;
    bool code_diff_differs = false;
    for (int r = 1; r < captured.size(); ++r) {
        const EnvironmentDiff diff =
            diff_captures(first_code, first_environment, object(captured[r].code), object(captured[r].environment));
        packages = std::max(packages, diff.packages_compared);
        code_diff_differs = code_diff_differs || diff.uncommitted_differs;
        const std::pair<QString, const QList<CaptureDifference>*> kinds[] = {{tr("code"), &diff.code},
                                                                             {tr("package"), &diff.packages},
                                                                             {tr("system"), &diff.system},
                                                                             {tr("variable"), &diff.environment}};
        for (const auto& [kind, list] : kinds)
            for (const CaptureDifference& difference : *list) {
                auto& values = rows[{kind, difference.what}];
                values.resize(captured.size());
                values[r] = difference.after.isEmpty() ? tr("(none)") : difference.after;
                reference[{kind, difference.what}] = difference.before.isEmpty() ? tr("(none)") : difference.before;
            }
    }
    for (auto& [key, values] : rows) {
        values[0] = reference[key];
        for (int r = 1; r < captured.size(); ++r)
            if (values[r].isEmpty())
                values[r] = values[0]; // not in that run's differences: as the first
        QList<QStandardItem*> row{make_item(key.first), make_item(key.second)};
        for (const QString& value : values) {
            QStandardItem* item = make_item(value);
            item->setToolTip(value);
            if (value != values[0])
                item->setBackground(background_tint(QColor(255, 236, 179), palette()));
            row << item;
        }
        environment_model_->appendRow(row);
    }
    fit_columns(environment_table_, 2);
    QString note = rows.empty() ? tr("The same code, packages (%1 compared), machine and variables in all %2 runs.")
                                      .arg(packages)
                                      .arg(captured.size())
                                : tr("%1 difference(s) from %2, the first run (%3 packages compared).")
                                      .arg(rows.size())
                                      .arg(captured[0].name)
                                      .arg(packages);
    if (code_diff_differs)
        note += tr(" Their uncommitted changes differ: see each run's Reproducibility tab.");
    if (!without.isEmpty())
        note += tr(" No capture for: %1.").arg(without.join(", "));
    environment_note_->setText(note);
}

} // namespace traindeck
