#pragma once
// A run's histograms over its steps as a heatmap (TensorBoard's histograms, imported): a column a step, the values on
// the vertical axis, darker where more of the values fell. Each column is scaled to its own largest cell, so a step's
// shape shows whatever its count. With more steps than pixel columns, a column sums neighbouring steps and the
// caption says how many (nothing is dropped unsaid). The cursor's cell is named in a tooltip (steps, value range,
// share of the step's values there).
#include "histogramstore.h"

#include <QWidget>

#include <vector>

namespace traindeck {

class HistogramHeatmap : public QWidget {
    Q_OBJECT
public:
    explicit HistogramHeatmap(QWidget* parent = nullptr);

    void setHistograms(const QString& name, std::vector<Histogram> histograms);
    QString caption() const; // what the widget says under the map ("120 steps, …")
    QSize sizeHint() const override { return {480, 220}; }

    // The grid the map paints: columns × rows of shares (0..1 of the column's largest cell), and each column's steps.
    struct Grid {
        int columns = 0, rows = 0;
        std::vector<double> share; // column-major: column * rows + row (row 0 is the lowest values)
        std::vector<std::pair<int64_t, int64_t>> steps;
        double low = 0, high = 1;
    };
    static Grid grid(const std::vector<Histogram>& histograms, int columns, int rows);

protected:
    void paintEvent(QPaintEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;

private:
    QRect plotArea() const;

    QString name_;
    std::vector<Histogram> histograms_;
};

} // namespace traindeck
