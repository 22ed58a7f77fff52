#pragma once
// A run's Results panel: what the model gets wrong, from the confusion matrices its evaluations carried (the
// built-in trainer's val after every epoch and test at the end; any script's "eval" records). A heat map of the
// chosen evaluation, true classes down and predicted across, each row shaded by its share (the diagonal green, the
// mistakes red on a square-root scale), with class names; per class precision, recall, F1 and support; accuracy, macro
// F1 and the pairs most often confused. A regression's evaluation shows instead as a scatter of predicted against
// true values (up to the first 2,000 samples the trainer sent) over the line of perfect predictions, with its R²,
// RMSE and MAE. Read on a pool thread; the GUI thread never waits on the catalog.
#include "confusion.h"

#include <QWidget>

#include <vector>

class QChart;
class QComboBox;
class QLabel;
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

signals:
    void loaded(); // a read was shown

private:
    struct Shown {
        QString label;
        std::vector<std::vector<int64_t>> matrix;
        QStringList names;
        // A regression's: (true, predicted) pairs and its figures (rmse, mae, r2 absent: NaN).
        QList<QPointF> pairs;
        double rmse = 0, mae = 0, r2 = 0;
        qint64 samples = 0;
    };
    void showScatter(const Shown& shown);
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
    QChart* scatter_chart_;
    QLineSeries* exact_; // the diagonal: true = predicted
    QScatterSeries* scatter_;
};

} // namespace traindeck
