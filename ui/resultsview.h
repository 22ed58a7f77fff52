#pragma once
// A run's Results panel: what the model gets wrong, from the confusion matrices its evaluations carried (the
// built-in trainer's val after every epoch and test at the end; any script's "eval" records). A heat map of the
// chosen evaluation, true classes down and predicted across, each row shaded by its share (the diagonal green, the
// mistakes red on a square-root scale), with class names; per class precision, recall, F1 and support; accuracy, macro
// F1 and the pairs most often confused. Below them a gallery of the images the model got wrong (the trainer's
// thumbnails), the most confident mistakes first, with true and predicted class and confidence; a click on a matrix
// cell shows that cell's examples instead. A regression's evaluation shows instead as a scatter of predicted against
// true values (up to the first 2,000 samples the trainer sent) over the line of perfect predictions, with its R²,
// RMSE and MAE. Read on a pool thread; the GUI thread never waits on the catalog.
#include "confusion.h"

#include <QImage>
#include <QWidget>

#include <vector>

class QChart;
class QComboBox;
class QLabel;
class QListWidget;
class QPushButton;
class QLineSeries;
class QScatterSeries;
class QStackedWidget;
class QTableWidget;

namespace traindeck {

class ResultsView : public QWidget {
    Q_OBJECT
public:
    explicit ResultsView(const QString& catalog_path, QWidget* parent = nullptr);
    void showJob(qint64 job);
    void refresh(); // the same job, read again (an evaluation may have come)

    // What shows, for tests.
    int evaluationCount() const;
    void selectEvaluation(int index); // 0: the newest
    QString evaluationLabel(int index) const;
    QStringList classNames() const;
    QString cell(int truth, int predicted) const;     // the count shown
    double cellShare(int truth, int predicted) const; // its share of the row, as shaded
    QString score(int klass, int column) const;       // column: 0 precision, 1 recall, 2 F1, 3 support
    QString summary() const;
    QTableWidget* matrix() const { return matrix_; }
    // A regression's scatter as shown: its (true, predicted) points, and whether it is the page in view.
    QList<QPointF> scatterPoints() const;
    bool showsScatter() const;
    // The gallery as shown: its title, and each image with its caption ("true → predicted, 97 %").
    int galleryCount() const;
    QString galleryTitle() const;
    QString galleryCaption(int index) const;
    QImage galleryImage(int index) const;

public slots:
    // The gallery shows the examples of one cell of the matrix (what a click on the cell does); (-1, -1): the
    // mistakes again.
    void showCellExamples(int truth, int predicted);

signals:
    void loaded(); // a read was shown

private:
    struct Example {
        int truth = 0, predicted = 0;
        double confidence = 0;
        QImage image;
    };
    struct Shown {
        QString label;
        std::vector<Example> examples; // the trainer's order: each cell's most confident first, then the others
        qint64 candidates = 0;         // how many it could have sent
        std::vector<std::vector<int64_t>> matrix;
        QStringList names;
        // A regression's: (true, predicted) pairs and its figures (rmse, mae, r2 absent: NaN).
        QList<QPointF> pairs;
        double rmse = 0, mae = 0, r2 = 0;
        qint64 samples = 0;
    };
    void showScatter(const Shown& shown);
    void fillGallery();
    void showEvaluation(int index);

    QString catalog_path_;
    qint64 job_ = 0;
    int generation_ = 0;
    QByteArray shown_;
    QString error_;
    bool user_chose_ = false;        // the user picked an evaluation: it stays while new ones arrive
    std::vector<Shown> evaluations_; // newest first
    QLabel* summary_;
    QComboBox* choice_;
    QTableWidget* matrix_;
    QTableWidget* scores_;
    QLabel* confused_;
    QStackedWidget* pages_; // the matrix and scores, or a regression's scatter
    QLabel* gallery_title_;
    QPushButton* all_mistakes_;
    QListWidget* gallery_;
    int shown_index_ = -1; // the evaluation in view, and its label (which one it is, as new ones arrive)
    QString shown_label_;
    int cell_truth_ = -1, cell_predicted_ = -1; // the cell whose examples show; -1: the mistakes
    QChart* scatter_chart_;
    QLineSeries* exact_; // the diagonal: true = predicted
    QScatterSeries* scatter_;
};

} // namespace traindeck
