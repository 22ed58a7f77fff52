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
#include <QListWidget>
#include <QPen>
#include <QPixmap>
#include <QPushButton>
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

    // A cell chosen by the mouse or the keyboard (the arrows, Enter) shows its examples.
    connect(matrix_, &QTableWidget::cellClicked, this, &ResultsView::showCellExamples);
    connect(matrix_, &QTableWidget::cellActivated, this, &ResultsView::showCellExamples);
    matrix_->setAccessibleName(tr("Confusion matrix"));
    matrix_->setAccessibleDescription(tr("Rows: the true class; columns: the class predicted. Arrows move between "
                                         "cells; Enter shows a cell's examples below."));
    scores_->setAccessibleName(tr("Per-class scores"));
    auto* split = new QSplitter(Qt::Horizontal);
    split->addWidget(matrix_);
    split->addWidget(scores_);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    // The gallery under them: thumbnails twice their size, pixel for pixel, captioned.
    gallery_title_ = new QLabel;
    gallery_title_->setWordWrap(true);
    all_mistakes_ = new QPushButton(tr("Show the mistakes"));
    all_mistakes_->setToolTip(tr("Back to the most confident mistakes of every class"));
    all_mistakes_->setVisible(false);
    connect(all_mistakes_, &QPushButton::clicked, this, [this] { showCellExamples(-1, -1); });
    gallery_ = new QListWidget;
    gallery_->setAccessibleName(tr("Examples"));
    gallery_->setViewMode(QListView::IconMode);
    gallery_->setResizeMode(QListView::Adjust);
    gallery_->setMovement(QListView::Static);
    gallery_->setWrapping(true);
    gallery_->setUniformItemSizes(true);
    gallery_->setIconSize(QSize(64, 64));
    gallery_->setGridSize(QSize(150, 118));
    gallery_->setWordWrap(true);
    gallery_->setSelectionMode(QAbstractItemView::SingleSelection);
    auto* gallery_box = new QWidget;
    auto* gallery_layout = new QVBoxLayout(gallery_box);
    gallery_layout->setContentsMargins(0, 0, 0, 0);
    auto* gallery_top = new QHBoxLayout;
    gallery_top->addWidget(gallery_title_, 1);
    gallery_top->addWidget(all_mistakes_);
    gallery_layout->addLayout(gallery_top);
    gallery_layout->addWidget(gallery_, 1);
    auto* matrix_page = new QSplitter(Qt::Vertical);
    matrix_page->addWidget(split);
    matrix_page->addWidget(gallery_box);
    matrix_page->setStretchFactor(0, 3);
    matrix_page->setStretchFactor(1, 2);
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
    pages_->addWidget(matrix_page);
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
                // The gallery's thumbnails, decoded here (QImage, not QPixmap, off the GUI thread).
                const QJsonObject examples = data.value("examples").toObject();
                const int height = examples.value("height").toInt(), width = examples.value("width").toInt();
                const int channels = examples.value("channels").toInt();
                shown.candidates = examples.value("candidates").toInteger();
                for (const auto& value : examples.value("items").toArray()) {
                    const QJsonArray item = value.toArray();
                    const QByteArray pixels = QByteArray::fromBase64(item.at(3).toString().toLatin1());
                    if (pixels.size() != qsizetype(height) * width * channels)
                        continue; // the catalog checked them; a file changed since is not worth a crash
                    const QImage image(reinterpret_cast<const uchar*>(pixels.constData()), width, height,
                                       qsizetype(width) * channels,
                                       channels == 3 ? QImage::Format_RGB888 : QImage::Format_Grayscale8);
                    shown.examples.push_back(
                        {item.at(0).toInt(), item.at(1).toInt(), item.at(2).toDouble(), image.copy()});
                }
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
    // Another evaluation (by what it is, not where it stands in the list): its mistakes first.
    const QString label =
        index >= 0 && index < static_cast<int>(evaluations_.size()) ? evaluations_[index].label : QString();
    if (label != shown_label_)
        cell_truth_ = cell_predicted_ = -1;
    shown_label_ = label;
    shown_index_ = index;
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
        fillGallery();
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
    fillGallery();
}

void ResultsView::showCellExamples(int truth, int predicted) {
    // A click where the style activates on one click says it twice (cellClicked, cellActivated): shown once.
    if (truth >= 0 && truth == cell_truth_ && predicted == cell_predicted_ && gallery_->count() > 0)
        return;
    cell_truth_ = truth;
    cell_predicted_ = predicted;
    fillGallery();
}

void ResultsView::fillGallery() {
    gallery_->clear();
    all_mistakes_->setVisible(cell_truth_ >= 0);
    if (shown_index_ < 0 || shown_index_ >= static_cast<int>(evaluations_.size())) {
        gallery_title_->clear();
        return;
    }
    const Shown& shown = evaluations_[shown_index_];
    if (shown.examples.empty()) {
        gallery_title_->setText(tr("No example images in this evaluation. The built-in trainer sends them with an "
                                   "image classifier's test set (without one, with its last validation); a sweep's "
                                   "trial stopped early has none."));
        return;
    }
    std::vector<const Example*> chosen;
    for (const Example& e : shown.examples)
        if (cell_truth_ >= 0 ? e.truth == cell_truth_ && e.predicted == cell_predicted_ : e.truth != e.predicted)
            chosen.push_back(&e);
    std::stable_sort(chosen.begin(), chosen.end(),
                     [](const Example* a, const Example* b) { return a->confidence > b->confidence; });
    auto name = [&](int klass) {
        return klass >= 0 && klass < shown.names.size() ? shown.names[klass] : tr("class %1").arg(klass);
    };
    for (const Example* e : chosen) {
        const QString caption =
            e->truth == e->predicted
                ? tr("%1\n%2 %").arg(name(e->truth)).arg(100.0 * e->confidence, 0, 'f', 0)
                : tr("%1 → %2\n%3 %").arg(name(e->truth), name(e->predicted)).arg(100.0 * e->confidence, 0, 'f', 0);
        const QImage big = e->image.scaled(e->image.size() * std::max(1, 64 / std::max(1, e->image.width())),
                                           Qt::KeepAspectRatio, Qt::FastTransformation);
        auto* item = new QListWidgetItem(QIcon(QPixmap::fromImage(big)), caption);
        item->setToolTip(tr("true %1, predicted %2 with probability %3 %")
                             .arg(name(e->truth), name(e->predicted))
                             .arg(100.0 * e->confidence, 0, 'f', 1));
        item->setData(Qt::UserRole, e->image);
        gallery_->addItem(item);
    }
    // The trainer keeps up to three of each cell; a record has room for so many: what did not fit is said.
    const QString cut = shown.candidates > static_cast<qint64>(shown.examples.size())
                            ? tr(" %1 of its %2 examples fitted the record; the others were left out.")
                                  .arg(shown.examples.size())
                                  .arg(shown.candidates)
                            : QString();
    if (cell_truth_ < 0) {
        gallery_title_->setText(
            (chosen.empty() ? tr("No mistakes among the %1 example images kept.").arg(shown.examples.size())
                            : tr("<b>Mistakes</b>, the most confident first: %1 shown (the trainer keeps up to three "
                                 "of each cell of the matrix). Click a cell to see its examples.")
                                  .arg(chosen.size())) +
            cut);
        return;
    }
    const int64_t count = cell_truth_ < static_cast<int>(shown.matrix.size()) &&
                                  cell_predicted_ < static_cast<int>(shown.matrix[cell_truth_].size())
                              ? shown.matrix[cell_truth_][cell_predicted_]
                              : 0;
    gallery_title_->setText(tr("<b>True %1, predicted %2</b>: %3 of its %4 samples shown, the most confident first.")
                                .arg(name(cell_truth_).toHtmlEscaped(), name(cell_predicted_).toHtmlEscaped())
                                .arg(chosen.size())
                                .arg(count) +
                            (chosen.empty() && count > 0 ? cut : QString()));
}

int ResultsView::galleryCount() const { return gallery_->count(); }

QString ResultsView::galleryTitle() const { return gallery_title_->text(); }

QString ResultsView::galleryCaption(int index) const {
    const QListWidgetItem* item = gallery_->item(index);
    return item ? item->text() : QString();
}

QImage ResultsView::galleryImage(int index) const {
    const QListWidgetItem* item = gallery_->item(index);
    return item ? item->data(Qt::UserRole).value<QImage>() : QImage();
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
    // The same round range on both axes, so that the line of exact predictions is the diagonal: rounded once,
    // on the first axis, and copied with its tick count to the other.
    const QList<QAbstractAxis*> axes = scatter_chart_->axes();
    auto* rounded = static_cast<QValueAxis*>(axes.front());
    rounded->setTickCount(5);
    rounded->setRange(low, high);
    rounded->applyNiceNumbers();
    low = rounded->min();
    high = rounded->max();
    for (QAbstractAxis* axis : axes) {
        static_cast<QValueAxis*>(axis)->setTickCount(rounded->tickCount());
        axis->setRange(low, high);
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
