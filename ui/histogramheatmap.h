#pragma once
// A run's histograms over its steps as a heatmap (TensorBoard's histograms, imported): a column a step, the values on
// the vertical axis, darker where more of the values fell. Each column is scaled to its own largest cell, so a step's
// shape shows whatever its count. With more steps than pixel columns, a column sums neighbouring steps and the
// caption says how many (nothing is dropped unsaid). The cursor's cell is named in a tooltip (steps, value range,
// share of the step's values there).
#include "histogramstore.h"

#include <QImage>
#include <QWidget>

#include <optional>
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
    // How many grids the widget has made (tests): one a set of histograms and width, however often it paints or the
    // cursor moves.
    int gridsMade() const { return grids_made_; }

protected:
    void paintEvent(QPaintEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;

private:
    QRect plotArea() const;
    // The grid for the plot area's width, made once (a paint and every mouse move read it), and its cells as an
    // image of one pixel a cell in the palette's colours, drawn scaled over the plot area.
    const Grid& gridFor(int width);
    const QImage& cells(const Grid& grid);

    QString name_;
    std::vector<Histogram> histograms_;
    std::optional<Grid> grid_;
    int grid_width_ = -1, grids_made_ = 0;
    QImage cells_;
    QRgb cells_base_ = 0, cells_ink_ = 0;
};

} // namespace traindeck
