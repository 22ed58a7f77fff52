#pragma once
// Parallel coordinates of runs: one vertical axis per chosen config key and a last one for a metric's summary value
// ("best.val/accuracy", "last.loss"), each run a polyline coloured by that value (viridis, with its legend; the
// better runs drawn last, on top). Number axes run from the smallest to the largest value, on a log scale where a
// linear one would crowd most runs into its bottom tenth (learning rates searched log-uniformly), with ticks at the
// values themselves when there are few (seeds, widths); text-valued keys are categories in natural order ("b2"
// before "b10"); a run that lacks a key meets that axis in a "missing" slot under it. Dragging along an axis
// brushes a range; runs outside any brush turn grey. From the keyboard (Tab to it): Left and Right choose an axis
// (framed), Up and Down set or move its brush a tenth at a time, Shift+Up and Shift+Down widen it, Delete clears it,
// Escape clears every brush, Space says the axis, its brush and how many runs it keeps.
//
// Painted with QPainter, not Qt Charts: 10,000 runs must repaint in under 30 ms. The lines are drawn once into a
// cached image (again only when the runs, the axes, the brushes or the size change) by plain loops over its pixels,
// not by QPainter's raster engine, which takes a round trip through its thread pool for every batch of spans (1.3 s
// for 10,000 runs on a busy 2-core machine): one colour bin after another, runs that share a segment drawn once
// with their stacked alpha, the gaps between axes shared among threads (each its own columns, so the image is the
// same with any number of them), antialiased up to 3,000 runs. Hovering draws only the hovered run over the cache.
// Files get vectors (SVG, PDF) or the lines at the file's resolution (a PNG at 300 dpi).
#include "runrecord.h"

#include <QElapsedTimer>
#include <QColor>
#include <QImage>
#include <QLineF>
#include <QVector>
#include <QSet>
#include <QStringList>
#include <QWidget>

#include <optional>
#include <utility>
#include <vector>

namespace traindeck {

class ParallelCoordinates : public QWidget {
    Q_OBJECT
public:
    explicit ParallelCoordinates(QWidget* parent = nullptr);

    void setRuns(std::vector<RunRecord> runs);
    // Keys of RunRecord::config, then the metric as "<last|min|max|best>.<series>". Clears the brushes.
    void setAxes(QStringList configKeys, QString metric);
    QStringList configKeys() const { return keys_; }
    QString metric() const { return metric_; }
    int axisCount() const { return static_cast<int>(axes_.size()); }

    // The runs inside every brush (all runs when there is none).
    QSet<qint64> selectedRuns() const;
    bool hasBrush() const;
    // Brushes axis `axis` (0 = the first config key, axisCount() - 1 = the metric) from `low` to `high` in the
    // axis's values (for a category axis: category indices, 0 = the first in sorted order); with includeMissing
    // the runs in the missing slot too.
    void setBrush(int axis, double low, double high, bool includeMissing = false);
    void clearBrush(int axis);
    void clearBrushes();
    // Where axis `axis` is drawn: x, the top (largest value) and the bottom (smallest) of its line, and the y of
    // its missing slot, in widget coordinates. For tests that drag with the mouse.
    struct AxisGeometry {
        double x = 0, top = 0, bottom = 0, missing = 0;
    };
    AxisGeometry axisGeometry(int axis) const;
    // A category axis's values in the order drawn (empty for a number axis).
    QStringList categories(int axis) const;
    // The axis the keyboard works on (-1: none yet), and what Space says about it.
    int focusedAxis() const { return focus_axis_; }
    QString focusedAxisText() const;

    // How long the last paint took (with the cache rebuilt or not), for the benchmark.
    double paintMilliseconds() const { return paint_ms_; }
    bool lastPaintRebuiltCache() const { return last_paint_rebuilt_; }

    // A summary field "best.val/accuracy" of a run; nullopt when the run lacks the series or the field is
    // malformed (the prefix is one of last, min, max, best).
    static std::optional<double> summaryValue(const RunRecord& run, const QString& field);
    static bool isSummaryField(const QString& field);
    // Text order with the numbers inside compared as numbers ("layer2" before "layer10"), as the category axes sort.
    static bool naturalLess(const QString& a, const QString& b);
    // Four significant digits as %g writes them, whole numbers written out (50000, not 5e+04); "—" for NaN.
    static QString formatNumber(double value);

    QSize sizeHint() const override { return {900, 480}; }
    QSize minimumSizeHint() const override { return {320, 220}; }

signals:
    void brushChanged();

protected:
    void paintEvent(QPaintEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void leaveEvent(QEvent* event) override;
    void keyPressEvent(QKeyEvent* event) override;
    void focusInEvent(QFocusEvent* event) override;
    void focusOutEvent(QFocusEvent* event) override;
    void changeEvent(QEvent* event) override;

private:
    struct Axis {
        QString title;
        bool categorical = false, log = false, any_missing = false;
        double low = 0, high = 1;     // number axes (log10 of the values on a log axis)
        std::vector<double> distinct; // a number axis's values when there are few (ticks at them), else empty
        QStringList categories;       // category axes, sorted
        std::vector<double> position; // per run: 0 = bottom, 1 = top, kMissing = the missing slot
        std::vector<QString> text;    // per run: the value as shown in the tooltip
    };
    struct Brush {
        bool active = false;
        double low = 0, high = 0; // in positions, as Axis::position
    };
    struct Layout {
        QRectF plot; // from the first axis's x to the last's, from the top to the bottom of the axes
        double missing_y = 0;
        std::vector<double> x;
        QRectF legend;         // the colour bar
        bool two_rows = false; // titles at alternating heights
    };

    void rebuildAxes();
    std::pair<QString, QString> titleParts(const Axis& axis) const; // the key's first parts, its last part
    double titleWidth(const Axis& axis) const;
    void invalidate();
    Layout layoutFor(QSizeF size) const;
    double yOf(const Layout& layout, double position) const;
    double positionOf(const Layout& layout, double y) const;
    int axisAt(const Layout& layout, QPointF point) const;
    int runAt(const Layout& layout, QPointF point) const;
    bool isSelected(size_t run) const;
    struct LineBatch {
        QColor colour;
        QVector<QLineF> lines;
    };
    // The runs' segments by colour, in drawing order (brushed-out runs first, the better runs last).
    std::vector<LineBatch> lineBatches(const Layout& layout) const;
    void paintLines(QPainter& painter, const std::vector<LineBatch>& batches) const;
    void rasterLines(QImage& image, const Layout& layout, const std::vector<LineBatch>& batches, double scale,
                     bool antialiased) const;
    void paintAxes(QPainter& painter, const Layout& layout) const;
    void paintLegend(QPainter& painter, const Layout& layout) const;
    void paintHover(QPainter& painter, const Layout& layout) const;
    void showHoverTip(QPoint global);
    void paintFocus(QPainter& painter, const Layout& layout) const; // the keyboard's axis, framed
    static QString help();                                          // the accessible description: how to use it
    void say(const QString& text);                                  // to a screen reader, after the help
    QString positionText(const Axis& axis, double position) const;  // the value at a position of the axis

    double valueToPosition(const Axis& axis, double value) const;
    QString tickText(const Axis& axis, double value) const;

    std::vector<RunRecord> runs_;
    QStringList keys_;
    QString metric_;
    std::vector<Axis> axes_;          // the keys', then the metric's
    std::vector<float> colour_value_; // per run, 0..1 along the colour map, NaN without the metric
    double metric_low_ = 0, metric_high_ = 1;
    bool metric_higher_is_better_ = true;
    std::vector<Brush> brushes_;
    QImage cache_;
    bool cache_valid_ = false;
    int hover_ = -1;
    int focus_axis_ = -1;
    int drag_axis_ = -1;
    double drag_start_ = 0;
    QPointF press_point_;
    double paint_ms_ = 0;
    bool last_paint_rebuilt_ = false;
};

} // namespace traindeck
