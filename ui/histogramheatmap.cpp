#include "histogramheatmap.h"

#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <cmath>

namespace traindeck {

namespace {

constexpr int kRows = 64;
constexpr int kMargin = 48, kCaption = 34;

} // namespace

HistogramHeatmap::HistogramHeatmap(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setMinimumHeight(160);
    setAccessibleName(tr("Histogram heatmap"));
}

void HistogramHeatmap::setHistograms(const QString& name, std::vector<Histogram> histograms) {
    name_ = name;
    histograms_ = std::move(histograms);
    grid_.reset();
    setAccessibleDescription(caption());
    update();
}

HistogramHeatmap::Grid HistogramHeatmap::grid(const std::vector<Histogram>& histograms, int columns, int rows) {
    Grid out;
    const int n = static_cast<int>(histograms.size());
    if (n == 0 || columns <= 0 || rows <= 0)
        return out;
    out.columns = std::min(n, columns);
    out.rows = rows;
    double low = INFINITY, high = -INFINITY;
    for (const auto& h : histograms)
        if (std::isfinite(h.min) && std::isfinite(h.max) && h.num > 0) {
            low = std::min(low, h.min);
            high = std::max(high, h.max);
        }
    if (!std::isfinite(low)) {
        low = 0;
        high = 1;
    }
    if (high <= low) {
        low -= 0.5;
        high += 0.5;
    }
    out.low = low;
    out.high = high;
    out.share.assign(static_cast<size_t>(out.columns) * rows, 0.0);
    out.steps.assign(static_cast<size_t>(out.columns), {0, 0});
    const double row_height = (high - low) / rows;
    for (int c = 0; c < out.columns; ++c) {
        const int first = static_cast<int>(static_cast<int64_t>(c) * n / out.columns);
        const int last = static_cast<int>(static_cast<int64_t>(c + 1) * n / out.columns); // exclusive
        out.steps[static_cast<size_t>(c)] = {histograms[static_cast<size_t>(first)].step,
                                             histograms[static_cast<size_t>(last - 1)].step};
        double* column = out.share.data() + static_cast<size_t>(c) * rows;
        for (int i = first; i < last; ++i) {
            const auto& h = histograms[static_cast<size_t>(i)];
            if (!std::isfinite(h.min) || !std::isfinite(h.max))
                continue; // nowhere to put its values (a damaged source); the others still show
            // Bucket b holds the values in (limit[b-1], limit[b]]; the first starts at the histogram's min and the
            // last ends at its max (TensorBoard's outer limits are ±1e300-ish). Its count is spread evenly over the
            // rows it covers.
            for (size_t b = 0; b < h.counts.size() && b < h.limits.size(); ++b) {
                const double count = h.counts[b];
                if (!(count > 0))
                    continue;
                double left = b == 0 ? h.min : h.limits[b - 1];
                double right = h.limits[b];
                // (A damaged source may say min > max: the bucket is kept inside whatever range it names.)
                const double lo = std::min(h.min, h.max), hi = std::max(h.min, h.max);
                left = std::clamp(std::isfinite(left) ? left : lo, lo, hi);
                right = std::clamp(std::isfinite(right) ? right : hi, lo, hi);
                if (right < left)
                    std::swap(left, right);
                // In rows, kept inside the grid before any cast (a histogram of no values may lie outside it).
                const double from = std::clamp((left - low) / row_height, 0.0, static_cast<double>(rows));
                const double to = std::clamp((right - low) / row_height, 0.0, static_cast<double>(rows));
                const int r0 = std::clamp(static_cast<int>(std::floor(from)), 0, rows - 1);
                const int r1 = std::clamp(static_cast<int>(std::floor(to)), 0, rows - 1);
                if (r0 == r1 || to - from <= 0) {
                    column[r0] += count;
                    continue;
                }
                for (int r = r0; r <= r1; ++r) {
                    const double overlap = std::min<double>(r + 1, to) - std::max<double>(r, from);
                    if (overlap > 0)
                        column[r] += count * overlap / (to - from);
                }
            }
        }
        const double top = *std::max_element(column, column + rows);
        if (top > 0)
            for (int r = 0; r < rows; ++r)
                column[r] /= top;
    }
    return out;
}

QString HistogramHeatmap::caption() const {
    if (histograms_.empty())
        return tr("No histograms");
    const int columns = std::max(1, plotArea().width());
    const int n = static_cast<int>(histograms_.size());
    QString text = tr("%1: %n histogram(s), steps %2 to %3", nullptr, n)
                       .arg(name_)
                       .arg(histograms_.front().step)
                       .arg(histograms_.back().step);
    if (n > columns)
        text += tr("; each column sums about %1 steps' histograms (the window is narrower than the steps)")
                    .arg((n + columns - 1) / columns);
    return text + tr(". Darker: more of that step's values.");
}

QRect HistogramHeatmap::plotArea() const { return rect().adjusted(kMargin + 16, 8, -12, -kCaption); }

const HistogramHeatmap::Grid& HistogramHeatmap::gridFor(int width) {
    if (!grid_ || grid_width_ != width) {
        grid_ = grid(histograms_, width, kRows);
        grid_width_ = width;
        ++grids_made_;
        cells_ = QImage();
    }
    return *grid_;
}

const QImage& HistogramHeatmap::cells(const Grid& g) {
    // From the base colour to the highlight colour: readable in the light and the dark palette (made again when the
    // palette changes).
    const QColor base = palette().color(QPalette::Base), ink = palette().color(QPalette::Highlight);
    if (!cells_.isNull() && cells_base_ == base.rgb() && cells_ink_ == ink.rgb())
        return cells_;
    cells_ = QImage(g.columns, g.rows, QImage::Format_RGB32);
    cells_.fill(base);
    for (int c = 0; c < g.columns; ++c)
        for (int r = 0; r < g.rows; ++r) {
            const double share = g.share[static_cast<size_t>(c) * g.rows + r];
            if (share <= 0)
                continue;
            const double t = std::sqrt(share); // small shares stay visible
            const QColor colour = QColor::fromRgbF(base.redF() + (ink.redF() - base.redF()) * t,
                                                   base.greenF() + (ink.greenF() - base.greenF()) * t,
                                                   base.blueF() + (ink.blueF() - base.blueF()) * t);
            cells_.setPixelColor(c, g.rows - 1 - r, colour); // row 0, the lowest values, at the bottom
        }
    cells_base_ = base.rgb();
    cells_ink_ = ink.rgb();
    return cells_;
}

void HistogramHeatmap::paintEvent(QPaintEvent*) {
    QPainter painter(this);
    const QPalette& pal = palette();
    painter.fillRect(rect(), pal.color(QPalette::Base));
    const QRect area = plotArea();
    painter.setPen(pal.color(QPalette::Text));
    if (histograms_.empty() || area.width() < 4 || area.height() < 4) {
        painter.drawText(rect(), Qt::AlignCenter, caption());
        return;
    }
    const Grid& g = gridFor(area.width());
    // A pixel a cell, scaled without smoothing: each cell a flat rectangle, as it was drawn cell by cell before (a
    // column of a wide map is a few pixels, 64 rows over the height).
    painter.drawImage(QRectF(area.left(), area.top(), area.width(), area.height()), cells(g));
    painter.setPen(pal.color(QPalette::Mid));
    painter.drawRect(area.adjusted(0, 0, -1, -1));
    painter.setPen(pal.color(QPalette::Text));
    const QFontMetrics metrics(font());
    // The value axis: its ends and middle; the step axis: first and last step.
    for (const double f : {0.0, 0.5, 1.0}) {
        const double value = g.low + (g.high - g.low) * f;
        const int y = area.bottom() - static_cast<int>(f * area.height());
        painter.drawText(QRect(0, y - metrics.height() / 2, kMargin + 12, metrics.height()),
                         Qt::AlignRight | Qt::AlignVCenter, QString::number(value, 'g', 3));
    }
    painter.drawText(QRect(area.left(), area.bottom() + 2, area.width(), metrics.height()), Qt::AlignLeft,
                     tr("step %1").arg(histograms_.front().step));
    painter.drawText(QRect(area.left(), area.bottom() + 2, area.width(), metrics.height()), Qt::AlignRight,
                     tr("step %1").arg(histograms_.back().step));
    painter.drawText(QRect(area.left(), area.bottom() + 2 + metrics.height(), area.width(), metrics.height()),
                     Qt::AlignHCenter, metrics.elidedText(caption(), Qt::ElideRight, area.width()));
}

void HistogramHeatmap::mouseMoveEvent(QMouseEvent* event) {
    const QRect area = plotArea();
    if (histograms_.empty() || !area.contains(event->position().toPoint())) {
        QToolTip::hideText();
        return;
    }
    const Grid& g = gridFor(area.width());
    const int c = std::clamp(static_cast<int>((event->position().x() - area.left()) * g.columns / area.width()), 0,
                             g.columns - 1);
    const int r =
        std::clamp(static_cast<int>((area.bottom() - event->position().y()) * g.rows / area.height()), 0, g.rows - 1);
    const double row_height = (g.high - g.low) / g.rows;
    const auto [first, last] = g.steps[static_cast<size_t>(c)];
    const QString steps = first == last ? tr("step %1").arg(first) : tr("steps %1–%2").arg(first).arg(last);
    QToolTip::showText(event->globalPosition().toPoint(),
                       tr("%1\nvalues %2 to %3\n%4 % of the column's largest cell")
                           .arg(steps)
                           .arg(g.low + r * row_height, 0, 'g', 4)
                           .arg(g.low + (r + 1) * row_height, 0, 'g', 4)
                           .arg(100.0 * g.share[static_cast<size_t>(c) * g.rows + r], 0, 'f', 1),
                       this);
}

} // namespace traindeck
