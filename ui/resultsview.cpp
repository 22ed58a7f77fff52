// ResultsView (resultsview.h): one read of the run's evaluations on a pool thread per showJob/refresh; the chosen
// one shown as a shaded matrix and a table of per-class scores.
#include "resultsview.h"

#include "background.h"
#include "chartview.h"
#include "jobtablemodel.h"

#include <QChart>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineSeries>
#include <QPen>
#include <QScatterSeries>
#include <QSplitter>
#include <QStackedWidget>
#include <QTableWidget>
#include <QValueAxis>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace traindeck {

namespace {

QColor mix(const QColor& from, const QColor& to, double amount) {
    const double a = std::clamp(amount, 0.0, 1.0);
    return QColor::fromRgbF(static_cast<float>(from.redF() + (to.redF() - from.redF()) * a),
                            static_cast<float>(from.greenF() + (to.greenF() - from.greenF()) * a),
                            static_cast<float>(from.blueF() + (to.blueF() - from.blueF()) * a));
}

QTableWidgetItem* cell_item(const QString& text, Qt::Alignment alignment = Qt::AlignRight | Qt::AlignVCenter) {
    auto* item = new QTableWidgetItem(text);
    item->setTextAlignment(alignment);
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
    return item;
}

} // namespace

ResultsView::ResultsView(const QString& catalog_path, QWidget* parent) : QWidget(parent), catalog_path_(catalog_path) {
    summary_ = new QLabel(tr("Select a run to see what its model gets wrong."));
    summary_->setWordWrap(true);
    summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    choice_ = new QComboBox;
    choice_->setToolTip(tr("Which evaluation: the test set at the end, or the validation set after each epoch"));
    choice_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    choice_->setMinimumContentsLength(30);
    connect(choice_, &QComboBox::currentIndexChanged, this, [this](int index) { showEvaluation(index); });
    connect(choice_, &QComboBox::activated, this, [this] { user_chose_ = true; });

    matrix_ = new QTableWidget;
    matrix_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    matrix_->setSelectionMode(QAbstractItemView::SingleSelection);
    matrix_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    matrix_->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    matrix_->setToolTip(tr("Rows: the true class; columns: the class predicted. Each row is shaded by its share of "
                           "the class's samples."));
    scores_ = new QTableWidget(0, 4);
    scores_->setHorizontalHeaderLabels({tr("Precision"), tr("Recall"), tr("F1"), tr("Support")});
    scores_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    scores_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    scores_->setSortingEnabled(false);
    confused_ = new QLabel;
    confused_->setWordWrap(true);
    confused_->setTextInteractionFlags(Qt::TextSelectableByMouse);

    auto* split = new QSplitter(Qt::Horizontal);
    split->addWidget(matrix_);
    split->addWidget(scores_);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    scatter_chart_ = new QChart;
    scatter_chart_->legend()->setAlignment(Qt::AlignBottom);
    scatter_chart_->setMargins(QMargins(6, 6, 6, 6));
    // The line of exact predictions first, so that the samples are drawn over it; both axes span the same range.
    exact_ = new QLineSeries;
    exact_->setName(tr("exact prediction"));
    QPen dashed(palette().color(QPalette::Mid));
    dashed.setStyle(Qt::DashLine);
    exact_->setPen(dashed);
    scatter_ = new QScatterSeries;
    scatter_->setName(tr("samples (true, predicted)"));
    scatter_->setMarkerSize(5);
    scatter_->setPen(Qt::NoPen);
    scatter_chart_->addSeries(exact_);
    scatter_chart_->addSeries(scatter_);
    auto* true_axis = new QValueAxis;
    true_axis->setTitleText(tr("true value"));
    auto* predicted_axis = new QValueAxis;
    predicted_axis->setTitleText(tr("predicted"));
    scatter_chart_->addAxis(true_axis, Qt::AlignBottom);
    scatter_chart_->addAxis(predicted_axis, Qt::AlignLeft);
    for (QValueAxis* axis : {true_axis, predicted_axis}) {
        axis->setLabelFormat("%.6g");
        exact_->attachAxis(axis);
        scatter_->attachAxis(axis);
    }
    auto* scatter_view = make_chart_view(scatter_chart_);
    static_cast<ChartView*>(scatter_view)->setCrosshairEnabled(false);
    scatter_view->setToolTip(tr("Each dot is a sample: across its true value, up its prediction. On the line the "
                                "prediction is exact; above it, too high."));
    pages_ = new QStackedWidget;
    pages_->addWidget(split);
    pages_->addWidget(scatter_view);
    auto* top = new QHBoxLayout;
    top->addWidget(summary_, 1);
    top->addWidget(choice_, 0, Qt::AlignTop);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(top);
    layout->addWidget(pages_, 1);
    layout->addWidget(confused_);
}

void ResultsView::showJob(qint64 job) {
    if (job != job_) {
        shown_.clear();
        user_chose_ = false; // another run: its newest evaluation first
    }
    job_ = job;
    refresh();
}

void ResultsView::refresh() {
    if (job_ <= 0)
        return;
    const int generation = ++generation_;
    struct Read {
        int generation = 0;
        QByteArray key; // what was read, to leave the view alone when nothing came
        std::vector<Shown> evaluations;
        QString error;
    };
    run_in_background(
        this,
        [path = catalog_path_, job = job_, generation] {
            // Read and parsed here, on the pool thread; the GUI thread only fills the tables.
            Read read;
            read.generation = generation;
            CatalogReader reader(path);
            const std::vector<CatalogReader::Evaluation> evaluations = reader.evaluations(job);
            read.error = reader.error();
            read.key = QByteArray::number(job) + read.error.toUtf8();
            for (auto it = evaluations.rbegin(); it != evaluations.rend(); ++it) {
                read.key += '/' + QByteArray::number(it->step) + it->split.toUtf8();
                const QJsonObject data = QJsonDocument::fromJson(it->data).object();
                Shown shown;
                shown.label = it->split == "test"
                                  ? tr("test set, step %1").arg(it->step)
                                  : tr("%1 set, epoch %2 (step %3)").arg(it->split).arg(it->epoch).arg(it->step);
                for (const auto& row : data.value("confusion").toArray()) {
                    std::vector<int64_t> counts;
                    for (const auto& count : row.toArray())
                        counts.push_back(count.toInteger());
                    shown.matrix.push_back(std::move(counts));
                }
                for (const auto& name : data.value("class_names").toArray())
                    shown.names << name.toString();
                for (const auto& pair : data.value("pairs").toArray())
                    shown.pairs << QPointF(pair.toArray().at(0).toDouble(), pair.toArray().at(1).toDouble());
                shown.rmse = data.value("rmse").toDouble(std::nan(""));
                shown.mae = data.value("mae").toDouble(std::nan(""));
                shown.r2 = data.value("r2").toDouble(std::nan(""));
                shown.samples = data.value("samples").toInteger(shown.pairs.size());
                while (shown.names.size() < static_cast<qsizetype>(shown.matrix.size()))
                    shown.names << tr("class %1").arg(shown.names.size());
                read.evaluations.push_back(std::move(shown));
            }
            return read;
        },
        [this](const Read& read) {
            if (read.generation != generation_ || read.key == shown_)
                return; // an older read, or nothing new: the user's view stays as it is
            shown_ = read.key;
            error_ = read.error;
            // The newest evaluation shows as they arrive, unless the user chose one: that choice stays.
            const QString chosen = user_chose_ ? choice_->currentText() : QString();
            evaluations_ = read.evaluations;
            const QSignalBlocker block(choice_);
            choice_->clear();
            for (const Shown& e : evaluations_)
                choice_->addItem(e.label);
            const int keep = chosen.isEmpty() ? -1 : choice_->findText(chosen);
            choice_->setCurrentIndex(keep >= 0 ? keep : 0);
            showEvaluation(choice_->currentIndex());
            emit loaded();
        },
        QThreadPool::globalInstance());
}

void ResultsView::showEvaluation(int index) {
    pages_->setCurrentIndex(0);
    matrix_->clear();
    scores_->setRowCount(0);
    confused_->clear();
    if (index < 0 || index >= static_cast<int>(evaluations_.size())) {
        matrix_->setRowCount(0);
        matrix_->setColumnCount(0);
        if (!error_.isEmpty())
            summary_->setText(tr("<b>The catalog could not be read:</b> %1").arg(error_.toHtmlEscaped()));
        else if (evaluations_.empty())
            summary_->setText(tr("<b>No confusion matrix for this run.</b> The built-in trainer reports one after "
                                 "every epoch (validation) and at the end (test); a script can send \"eval\" records "
                                 "with a \"confusion\" matrix, or a regression's \"pairs\" of true and predicted "
                                 "values (backend/api/METRICS.md)."));
        return;
    }
    const Shown& shown = evaluations_[index];
    if (!shown.pairs.isEmpty()) {
        showScatter(shown);
        return;
    }
    pages_->setCurrentIndex(0);
    const ConfusionSummary s = summarize_confusion(shown.matrix);
    const int n = static_cast<int>(shown.matrix.size());
    matrix_->setRowCount(n);
    matrix_->setColumnCount(n);
    matrix_->setHorizontalHeaderLabels(shown.names);
    matrix_->setVerticalHeaderLabels(shown.names);
    const QColor base = palette().color(QPalette::Base);
    const QColor right(46, 160, 67), wrong(207, 34, 46);
    for (int t = 0; t < n; ++t)
        for (int p = 0; p < n; ++p) {
            const int64_t count = shown.matrix[t][p];
            const double share = s.classes[t].support > 0 ? static_cast<double>(count) / s.classes[t].support : 0.0;
            auto* item = cell_item(QString::number(count), Qt::AlignCenter);
            // Mistakes on a square-root scale: a class taken for another 5 % of the time must already stand out.
            const double amount = t == p ? share : std::min(1.0, std::sqrt(2.0 * share));
            const QColor fill = mix(base, t == p ? right : wrong, amount);
            item->setBackground(fill);
            item->setForeground(fill.lightnessF() < 0.55 ? QColor(Qt::white) : palette().color(QPalette::Text));
            item->setData(Qt::UserRole, share);
            item->setToolTip(tr("true %1, predicted %2: %3 (%4 % of %1)")
                                 .arg(shown.names[t], shown.names[p])
                                 .arg(count)
                                 .arg(100.0 * share, 0, 'f', 1));
            matrix_->setItem(t, p, item);
        }
    scores_->setRowCount(n);
    scores_->setVerticalHeaderLabels(shown.names);
    for (int c = 0; c < n; ++c) {
        const ClassScores& cs = s.classes[c];
        scores_->setItem(c, 0, cell_item(QString::number(cs.precision, 'f', 3)));
        scores_->setItem(c, 1, cell_item(QString::number(cs.recall, 'f', 3)));
        scores_->setItem(c, 2, cell_item(QString::number(cs.f1, 'f', 3)));
        scores_->setItem(c, 3, cell_item(QString::number(cs.support)));
    }
    summary_->setText(tr("<b>%1</b>: accuracy %2 % (%3 of %4), macro F1 %5")
                          .arg(shown.label)
                          .arg(100.0 * s.accuracy, 0, 'f', 2)
                          .arg(s.correct)
                          .arg(s.total)
                          .arg(s.macro_f1, 0, 'f', 3));
    QStringList pairs;
    for (const auto& pair : s.most_confused)
        pairs << tr("%1 → %2 (%3)").arg(shown.names[pair.truth], shown.names[pair.predicted]).arg(pair.count);
    confused_->setText(pairs.isEmpty() ? tr("No mistakes.")
                                       : tr("Most often confused (true → predicted): %1").arg(pairs.join(", ")));
}

void ResultsView::showScatter(const Shown& shown) {
    pages_->setCurrentIndex(1);
    matrix_->setRowCount(0);
    matrix_->setColumnCount(0);
    scatter_->replace(shown.pairs);
    double low = shown.pairs.front().x(), high = low;
    for (const QPointF& p : shown.pairs) {
        low = std::min({low, p.x(), p.y()});
        high = std::max({high, p.x(), p.y()});
    }
    if (high <= low)
        high = low + 1;
    // The same round range on both axes, so that the line of exact predictions is the diagonal.
    for (QAbstractAxis* axis : scatter_chart_->axes()) {
        auto* values = static_cast<QValueAxis*>(axis);
        values->setRange(low, high);
        values->applyNiceNumbers();
        low = values->min();
        high = values->max();
    }
    exact_->replace(QList<QPointF>{{low, low}, {high, high}});
    auto figure = [](double value, int digits) {
        return std::isnan(value) ? QStringLiteral("–") : QString::number(value, 'g', digits);
    };
    summary_->setText(tr("<b>%1</b>: R² %2, RMSE %3, MAE %4 over %5 samples")
                          .arg(shown.label, figure(shown.r2, 4), figure(shown.rmse, 5), figure(shown.mae, 5))
                          .arg(shown.samples));
    confused_->setText(shown.samples > shown.pairs.size()
                           ? tr("The scatter shows the first %1 of the %2 samples (as many as the trainer sends).")
                                 .arg(shown.pairs.size())
                                 .arg(shown.samples)
                           : tr("The scatter shows every sample."));
}

QList<QPointF> ResultsView::scatterPoints() const { return scatter_->points(); }

bool ResultsView::showsScatter() const { return pages_->currentIndex() == 1; }

int ResultsView::evaluationCount() const { return static_cast<int>(evaluations_.size()); }

void ResultsView::selectEvaluation(int index) {
    choice_->setCurrentIndex(index);
    user_chose_ = true; // as a user's pick in the list
}

QString ResultsView::evaluationLabel(int index) const { return choice_->itemText(index); }

QStringList ResultsView::classNames() const {
    const int index = choice_->currentIndex();
    return index >= 0 && index < evaluationCount() ? evaluations_[index].names : QStringList();
}

QString ResultsView::cell(int truth, int predicted) const {
    const QTableWidgetItem* item = matrix_->item(truth, predicted);
    return item ? item->text() : QString();
}

double ResultsView::cellShare(int truth, int predicted) const {
    const QTableWidgetItem* item = matrix_->item(truth, predicted);
    return item ? item->data(Qt::UserRole).toDouble() : -1.0;
}

QString ResultsView::score(int klass, int column) const {
    const QTableWidgetItem* item = scores_->item(klass, column);
    return item ? item->text() : QString();
}

QString ResultsView::summary() const { return summary_->text() + '\n' + confused_->text(); }

} // namespace traindeck
