#include "parallelcoordinates.h"

#include "runfield.h"

#include <QLocale>
#include <QAccessible>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPaintEngine>
#include <QPainter>
#include <QPainterPath>
#include <QToolTip>

#include <algorithm>
#include <array>
#include <cmath>
#include <thread>

namespace traindeck {

namespace {

// The missing slot's position: below every real position (0..1), so that a brush from it upwards includes it.
constexpr double kMissing = -1;
constexpr int kColourBins = 48;
constexpr double kAxisGrab = 10;   // px either side of an axis where a press starts a brush
constexpr double kHoverReach = 5;  // px from a line that still hovers it
constexpr double kMissingGap = 30; // px from an axis's bottom to its missing slot
// Above this many runs the bulk of the lines is drawn without antialiasing (10,000 runs must paint in < 30 ms).
constexpr size_t kAntialiasedRuns = 3000;
// A number axis with this many distinct values or fewer (seeds, widths, batch sizes) has its ticks at them.
constexpr size_t kFewValues = 8;
// From this many segments the lines are drawn by a thread per core, each on its own axis gaps.
constexpr size_t kThreadedSegments = 20000;
// Up to this many runs, lines 1.5 px wide.
constexpr size_t kWideLineRuns = 200;

// Viridis (matplotlib's perceptually uniform map, readable in grey and by most colour-blind readers), 17 stops.
constexpr std::array<std::array<unsigned char, 3>, 17> kViridis{{{68, 1, 84},
                                                                 {72, 26, 108},
                                                                 {71, 47, 125},
                                                                 {65, 68, 135},
                                                                 {57, 86, 140},
                                                                 {49, 104, 142},
                                                                 {42, 120, 142},
                                                                 {35, 136, 142},
                                                                 {31, 152, 139},
                                                                 {34, 168, 132},
                                                                 {53, 183, 121},
                                                                 {84, 197, 104},
                                                                 {122, 209, 81},
                                                                 {165, 219, 54},
                                                                 {210, 226, 27},
                                                                 {253, 231, 37},
                                                                 {253, 231, 37}}};

QColor viridis(double t) {
    t = std::clamp(t, 0.0, 1.0) * (kViridis.size() - 2);
    const int i = std::min(static_cast<int>(t), static_cast<int>(kViridis.size()) - 2);
    const double f = t - i;
    auto mix = [&](int channel) { return qRound(kViridis[i][channel] * (1 - f) + kViridis[i + 1][channel] * f); };
    return QColor(mix(0), mix(1), mix(2));
}

// 1, 2 or 5 times a power of ten, about `count` of them over the range.
std::vector<double> nice_ticks(double low, double high, int count) {
    std::vector<double> ticks;
    const double range = high - low;
    if (!(range > 0) || !std::isfinite(range))
        return ticks;
    const double raw = range / count;
    const double magnitude = std::pow(10, std::floor(std::log10(raw)));
    double step = magnitude;
    for (double factor : {1.0, 2.0, 5.0, 10.0})
        if (factor * magnitude >= raw) {
            step = factor * magnitude;
            break;
        }
    for (double tick = std::ceil(low / step - 1e-9) * step; tick <= high + step * 1e-9; tick += step)
        ticks.push_back(std::abs(tick) < step * 1e-9 ? 0 : tick);
    return ticks;
}

// Text over the lines on a box of the background's colour (the palette's base: light text on dark in the dark theme).
void draw_halo_text(QPainter& painter, const QRectF& box, int flags, const QString& text, const QColor& colour,
                    QColor halo) {
    const QRectF bounds = painter.boundingRect(box, flags, text).adjusted(-2, 0, 2, 0);
    halo.setAlpha(210);
    painter.fillRect(bounds, halo);
    painter.setPen(colour);
    painter.drawText(box, flags, text);
}

// The bulk of the lines is drawn here rather than by QPainter: Qt's raster engine hands every batch of line spans
// to its thread pool, which costs tens of microseconds a line (1.3 s for 10,000 runs × 6 axes on a busy 2-core
// machine); these plain loops over the image's pixels take a few nanoseconds a pixel.
struct Canvas {
    quint32* bits;
    qsizetype stride; // in pixels
    int width, height;
    int columns_from, columns_to; // the columns this drawing may touch (each thread has its own)
};

// Source-over of a premultiplied colour at `coverage` (0..256) onto a premultiplied pixel.
inline void blend(quint32* pixel, quint32 colour, quint32 coverage) {
    const quint32 source_rb = (((colour & 0xff00ff) * coverage) >> 8) & 0xff00ff;
    const quint32 source_ag = (((colour >> 8) & 0xff00ff) * coverage) & 0xff00ff00;
    const quint32 keep = 256 - (source_ag >> 24);
    const quint32 d = *pixel;
    *pixel = (source_rb | source_ag) +
             (((((d & 0xff00ff) * keep) >> 8) & 0xff00ff) | ((((d >> 8) & 0xff00ff) * keep) & 0xff00ff00));
}

// Source-over of a premultiplied colour, fully covering the pixel; keep = 256 - the colour's alpha.
inline void blend_full(quint32* pixel, quint32 colour, quint32 keep) {
    const quint32 d = *pixel;
    *pixel = colour + (((((d & 0xff00ff) * keep) >> 8) & 0xff00ff) | ((((d >> 8) & 0xff00ff) * keep) & 0xff00ff00));
}

// One pixel wide, not antialiased: one pixel a step along the major axis, in 16.16 fixed point.
// The pixel a point falls in, as 16-bit coordinates packed with another's into one key (images are far smaller).
struct PixelSegment {
    int x0, y0, x1, y1;
};
inline quint64 key_of(const PixelSegment& s) {
    return (quint64(s.x0) << 48) | (quint64(s.y0) << 32) | (quint64(s.x1) << 16) | quint64(s.y1);
}
inline PixelSegment segment_of(quint64 key) {
    return {int(key >> 48), int((key >> 32) & 0xffff), int((key >> 16) & 0xffff), int(key & 0xffff)};
}
inline PixelSegment pixels_of(const Canvas& canvas, QPointF from, QPointF to) {
    return {std::clamp(static_cast<int>(std::floor(from.x())), 0, canvas.width - 1),
            std::clamp(static_cast<int>(std::floor(from.y())), 0, canvas.height - 1),
            std::clamp(static_cast<int>(std::floor(to.x())), 0, canvas.width - 1),
            std::clamp(static_cast<int>(std::floor(to.y())), 0, canvas.height - 1)};
}

void raster_thin(const Canvas& canvas, const PixelSegment& segment, quint32 colour) {
    const quint32 keep = 256 - (colour >> 24);
    const int columns_from = canvas.columns_from, columns_to = canvas.columns_to;
    int x0 = segment.x0, y0 = segment.y0, x1 = segment.x1, y1 = segment.y1;
    int dx = x1 - x0, dy = y1 - y0;
    if (std::abs(dx) >= std::abs(dy)) {
        if (dx < 0) {
            std::swap(x0, x1);
            std::swap(y0, y1);
            dx = -dx;
            dy = -dy;
        }
        const int step = dx ? (dy * 65536) / dx : 0;
        int y = (y0 << 16) + 32768;
        if (x0 < columns_from) {
            y += step * (columns_from - x0);
            x0 = columns_from;
        }
        x1 = std::min(x1, columns_to);
        for (int x = x0; x <= x1; ++x, y += step)
            blend_full(canvas.bits + (y >> 16) * canvas.stride + x, colour, keep);
    } else {
        if (dy < 0) {
            std::swap(x0, x1);
            std::swap(y0, y1);
            dx = -dx;
            dy = -dy;
        }
        const int step = (dx * 65536) / dy;
        int x = (x0 << 16) + 32768;
        for (int y = y0; y <= y1; ++y, x += step) {
            const int column = x >> 16;
            if (column >= columns_from && column <= columns_to)
                blend_full(canvas.bits + y * canvas.stride + column, colour, keep);
        }
    }
}

// `width` pixels across the minor axis at each step of the major one; antialiased, the span's two end pixels are
// covered in part (for a width of 1 this is Wu's line).
void raster_wide(const Canvas& canvas, QPointF from, QPointF to, double width, bool antialiased, quint32 colour) {
    const bool steep = std::abs(to.y() - from.y()) > std::abs(to.x() - from.x());
    // Walk along u (the major axis), spread across v.
    double u0 = steep ? from.y() : from.x(), v0 = steep ? from.x() : from.y();
    double u1 = steep ? to.y() : to.x(), v1 = steep ? to.x() : to.y();
    if (u0 > u1) {
        std::swap(u0, u1);
        std::swap(v0, v1);
    }
    const int u_limit = (steep ? canvas.height : canvas.width) - 1;
    const int v_limit = (steep ? canvas.width : canvas.height) - 1;
    const double slope = u1 > u0 ? (v1 - v0) / (u1 - u0) : 0;
    const int first = std::max(0, static_cast<int>(std::floor(u0)));
    const int last = std::min(u_limit, static_cast<int>(std::floor(u1)));
    // A slanted line crosses more of each column than its width: keep its visible weight.
    const double across = width * std::sqrt(1 + slope * slope);
    auto put = [&](int u, int v, quint32 coverage) {
        if (v < 0 || v > v_limit || coverage == 0)
            return;
        const int column = steep ? v : u;
        if (column < canvas.columns_from || column > canvas.columns_to)
            return;
        quint32* pixel = steep ? canvas.bits + u * canvas.stride + v : canvas.bits + v * canvas.stride + u;
        blend(pixel, colour, coverage);
    };
    for (int u = first; u <= last; ++u) {
        const double centre = v0 + (u + 0.5 - u0) * slope;
        const double low = centre - across / 2, high = centre + across / 2;
        if (!antialiased) {
            const int start = static_cast<int>(std::floor(low + 0.5));
            const int count = std::max(1, static_cast<int>(std::lround(across)));
            for (int v = start; v < start + count; ++v)
                put(u, v, 256);
            continue;
        }
        const int start = static_cast<int>(std::floor(low)), end = static_cast<int>(std::ceil(high));
        for (int v = start; v < end; ++v) {
            const double covered = std::min(high, v + 1.0) - std::max(low, static_cast<double>(v));
            put(u, v, static_cast<quint32>(std::clamp(covered, 0.0, 1.0) * 256));
        }
    }
}

} // namespace

ParallelCoordinates::ParallelCoordinates(QWidget* parent) : QWidget(parent) {
    setMouseTracking(true);
    setAccessibleName(tr("Parallel coordinates"));
    setAccessibleDescription(help());
    setFocusPolicy(Qt::StrongFocus);
    setAttribute(Qt::WA_OpaquePaintEvent);
    setBackgroundRole(QPalette::Base);
    setAutoFillBackground(false);
}

QString ParallelCoordinates::formatNumber(double value) {
    if (std::isnan(value))
        return QStringLiteral("—");
    if (value == std::floor(value) && std::abs(value) < 1e7)
        return QString::number(static_cast<long long>(value));
    return QString::number(value, 'g', 4);
}

bool ParallelCoordinates::naturalLess(const QString& a, const QString& b) {
    qsizetype i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        if (a[i].isDigit() && b[j].isDigit()) {
            qsizetype end_a = i, end_b = j;
            while (end_a < a.size() && a[end_a].isDigit())
                ++end_a;
            while (end_b < b.size() && b[end_b].isDigit())
                ++end_b;
            // Without leading zeros, the longer number is the larger; equal lengths compare digit by digit.
            qsizetype start_a = i, start_b = j;
            while (start_a + 1 < end_a && a[start_a] == u'0')
                ++start_a;
            while (start_b + 1 < end_b && b[start_b] == u'0')
                ++start_b;
            if (end_a - start_a != end_b - start_b)
                return end_a - start_a < end_b - start_b;
            const int digits = QStringView(a)
                                   .sliced(start_a, end_a - start_a)
                                   .compare(QStringView(b).sliced(start_b, end_b - start_b));
            if (digits != 0)
                return digits < 0;
            i = end_a;
            j = end_b;
            continue;
        }
        if (a[i] != b[j])
            return a[i] < b[j];
        ++i;
        ++j;
    }
    if ((a.size() - i) != (b.size() - j))
        return a.size() - i < b.size() - j;
    return a < b; // "01" and "1": any fixed order
}

bool ParallelCoordinates::isSummaryField(const QString& field) {
    const qsizetype dot = field.indexOf('.');
    if (dot <= 0 || dot + 1 >= field.size())
        return false;
    const QStringView prefix = QStringView(field).left(dot);
    return prefix == u"last" || prefix == u"min" || prefix == u"max" || prefix == u"best";
}

std::optional<double> ParallelCoordinates::summaryValue(const RunRecord& run, const QString& field) {
    if (!isSummaryField(field))
        return std::nullopt;
    const qsizetype dot = field.indexOf('.');
    const QString prefix = field.left(dot);
    const MetricSummary* found = find_summary(run, field.mid(dot + 1).toStdString()); // '/' and '_' alike
    if (!found)
        return std::nullopt;
    const MetricSummary& summary = *found;
    const double value = prefix == u"last"  ? summary.last
                         : prefix == u"min" ? summary.min
                         : prefix == u"max" ? summary.max
                                            : summary.best;
    if (std::isnan(value))
        return std::nullopt;
    return value;
}

void ParallelCoordinates::setRuns(std::vector<RunRecord> runs) {
    const bool had_brush = hasBrush();
    runs_ = std::move(runs);
    hover_ = -1;
    // Brushes are positions on the axes; they keep their meaning only while the axes keep their ranges.
    const std::vector<Axis> old_axes = std::move(axes_);
    const std::vector<Brush> old_brushes = brushes_;
    rebuildAxes();
    bool same_axes = old_axes.size() == axes_.size();
    for (size_t i = 0; same_axes && i < axes_.size(); ++i)
        same_axes = old_axes[i].categorical == axes_[i].categorical && old_axes[i].log == axes_[i].log &&
                    old_axes[i].low == axes_[i].low && old_axes[i].high == axes_[i].high &&
                    old_axes[i].categories == axes_[i].categories;
    if (same_axes)
        brushes_ = old_brushes;
    invalidate();
    if (had_brush)
        emit brushChanged();
}

void ParallelCoordinates::setAxes(QStringList configKeys, QString metric) {
    const bool had_brush = hasBrush();
    keys_ = std::move(configKeys);
    metric_ = std::move(metric);
    hover_ = -1;
    rebuildAxes();
    invalidate();
    if (had_brush)
        emit brushChanged();
}

double ParallelCoordinates::valueToPosition(const Axis& axis, double value) const {
    if (axis.categorical) {
        const qsizetype count = std::max<qsizetype>(1, axis.categories.size());
        return (value + 0.5) / count;
    }
    const double v = axis.log ? std::log10(value) : value;
    if (!(axis.high > axis.low))
        return 0.5;
    return (v - axis.low) / (axis.high - axis.low);
}

void ParallelCoordinates::rebuildAxes() {
    axes_.clear();
    const size_t count = runs_.size();
    for (const QString& key : keys_) {
        Axis axis;
        axis.title = key;
        axis.position.assign(count, kMissing);
        axis.text.assign(count, tr("missing"));
        const std::string name = key.toStdString();
        std::vector<const ConfigValue*> values(count, nullptr);
        bool all_numbers = true;
        double low = INFINITY, high = -INFINITY;
        for (size_t r = 0; r < count; ++r) {
            const auto found = runs_[r].config.find(name);
            if (found == runs_[r].config.end()) {
                axis.any_missing = true;
                continue;
            }
            values[r] = &found->second;
            axis.text[r] = QString::fromStdString(found->second.text);
            if (found->second.is_number()) {
                low = std::min(low, found->second.number);
                high = std::max(high, found->second.number);
            } else {
                all_numbers = false;
            }
        }
        if (all_numbers) {
            // A log scale where a linear one would crowd most runs into its bottom tenth: values over several
            // decades searched log-uniformly (learning rates, weight decay), not a dropout that starts near 0.
            if (low > 0 && high / low >= 100) {
                size_t crowded = 0, present = 0;
                for (size_t r = 0; r < count; ++r)
                    if (values[r]) {
                        ++present;
                        crowded += values[r]->number < low + (high - low) / 10;
                    }
                axis.log = crowded * 2 > present;
            }
            axis.low = axis.log ? std::log10(low) : low;
            axis.high = axis.log ? std::log10(high) : high;
            if (!std::isfinite(axis.low))
                axis.low = axis.high = 0;
            for (size_t r = 0; r < count; ++r)
                if (values[r]) {
                    axis.position[r] = valueToPosition(axis, values[r]->number);
                    if (axis.distinct.size() <= kFewValues &&
                        std::find(axis.distinct.begin(), axis.distinct.end(), values[r]->number) == axis.distinct.end())
                        axis.distinct.push_back(values[r]->number);
                }
            if (axis.distinct.size() > kFewValues)
                axis.distinct.clear();
            std::sort(axis.distinct.begin(), axis.distinct.end());
        } else {
            axis.categorical = true;
            for (size_t r = 0; r < count; ++r)
                if (values[r])
                    axis.categories << axis.text[r];
            std::sort(axis.categories.begin(), axis.categories.end(), naturalLess);
            axis.categories.erase(std::unique(axis.categories.begin(), axis.categories.end()), axis.categories.end());
            for (size_t r = 0; r < count; ++r)
                if (values[r]) {
                    const auto at =
                        std::lower_bound(axis.categories.begin(), axis.categories.end(), axis.text[r], naturalLess);
                    axis.position[r] = valueToPosition(axis, static_cast<double>(at - axis.categories.begin()));
                }
        }
        axes_.push_back(std::move(axis));
    }

    // The metric: a number axis, and the lines' colour.
    Axis metric;
    metric.title = metric_;
    metric.position.assign(count, kMissing);
    metric.text.assign(count, tr("missing"));
    std::vector<double> values(count, NAN);
    double low = INFINITY, high = -INFINITY;
    metric_higher_is_better_ = true;
    bool goal_known = false;
    const std::string series = metric_.section('.', 1).toStdString();
    for (size_t r = 0; r < count; ++r) {
        if (!goal_known) {
            const auto found = runs_[r].summaries.find(series);
            if (found != runs_[r].summaries.end() && found->second.goal != MetricGoal::none) {
                goal_known = true;
                metric_higher_is_better_ = found->second.goal == MetricGoal::maximize;
            }
        }
        const std::optional<double> value = summaryValue(runs_[r], metric_);
        if (!value || !std::isfinite(*value)) {
            metric.any_missing = true;
            continue;
        }
        values[r] = *value;
        metric.text[r] = formatNumber(*value);
        low = std::min(low, *value);
        high = std::max(high, *value);
    }
    metric.low = std::isfinite(low) ? low : 0;
    metric.high = std::isfinite(high) ? high : 1;
    metric_low_ = metric.low;
    metric_high_ = metric.high;
    colour_value_.assign(count, NAN);
    for (size_t r = 0; r < count; ++r)
        if (!std::isnan(values[r])) {
            metric.position[r] = valueToPosition(metric, values[r]);
            colour_value_[r] = static_cast<float>(metric.position[r]);
        }
    axes_.push_back(std::move(metric));
    brushes_.assign(axes_.size(), Brush{});
}

void ParallelCoordinates::invalidate() {
    cache_valid_ = false;
    update();
}

QSet<qint64> ParallelCoordinates::selectedRuns() const {
    QSet<qint64> ids;
    ids.reserve(static_cast<qsizetype>(runs_.size()));
    for (size_t r = 0; r < runs_.size(); ++r)
        if (isSelected(r))
            ids.insert(runs_[r].id);
    return ids;
}

bool ParallelCoordinates::hasBrush() const {
    return std::any_of(brushes_.begin(), brushes_.end(), [](const Brush& b) { return b.active; });
}

bool ParallelCoordinates::isSelected(size_t run) const {
    for (size_t a = 0; a < brushes_.size(); ++a) {
        const Brush& brush = brushes_[a];
        if (!brush.active)
            continue;
        const double position = axes_[a].position[run];
        if (position < brush.low || position > brush.high)
            return false;
    }
    return true;
}

void ParallelCoordinates::setBrush(int axis, double low, double high, bool includeMissing) {
    if (axis < 0 || axis >= axisCount())
        return;
    if (low > high)
        std::swap(low, high);
    const Axis& a = axes_[axis];
    // Widened by a hair so that a value exactly at an end is inside however its position rounds.
    constexpr double hair = 1e-9;
    Brush& brush = brushes_[axis];
    brush.active = true;
    brush.low = includeMissing ? kMissing : valueToPosition(a, low) - hair;
    brush.high = valueToPosition(a, high) + hair;
    invalidate();
    emit brushChanged();
}

void ParallelCoordinates::clearBrush(int axis) {
    if (axis < 0 || axis >= axisCount() || !brushes_[axis].active)
        return;
    brushes_[axis].active = false;
    invalidate();
    emit brushChanged();
}

void ParallelCoordinates::clearBrushes() {
    if (!hasBrush())
        return;
    for (Brush& brush : brushes_)
        brush.active = false;
    invalidate();
    emit brushChanged();
}

QStringList ParallelCoordinates::categories(int axis) const {
    if (axis < 0 || axis >= axisCount())
        return {};
    return axes_[axis].categories;
}

std::pair<QString, QString> ParallelCoordinates::titleParts(const Axis& axis) const {
    const qsizetype dot = axis.title.lastIndexOf('.');
    QString prefix = dot > 0 ? axis.title.left(dot) : QString();
    const QString leaf = dot > 0 ? axis.title.mid(dot + 1) : axis.title;
    if (axis.log)
        prefix = prefix.isEmpty() ? tr("log scale") : tr("%1 · log").arg(prefix);
    return {prefix, leaf};
}

double ParallelCoordinates::titleWidth(const Axis& axis) const {
    QFont bold = font();
    bold.setBold(true);
    QFont small_font = font();
    small_font.setPointSizeF(font().pointSizeF() * 0.9);
    const auto [prefix, leaf] = titleParts(axis);
    return std::max(QFontMetricsF(bold).horizontalAdvance(leaf), QFontMetricsF(small_font).horizontalAdvance(prefix));
}

ParallelCoordinates::Layout ParallelCoordinates::layoutFor(QSizeF size) const {
    const QFontMetricsF metrics(font());
    const double line = metrics.height();
    const size_t count = axes_.size();
    // Tick labels sit left of their axis; the first axis needs room for them, the last one for the colour bar.
    double left = 12 + metrics.horizontalAdvance(QStringLiteral("0.0000e-00"));
    double right = 30 + 14 + metrics.horizontalAdvance(QStringLiteral("0.0000 (best)")) + line;
    const double width = std::max(1.0, size.width() - left - right);
    const double spacing = count > 1 ? width / (count - 1) : width;
    // A title is two lines, the key's last part in bold under the rest ("optimizer" over "lr"); titles alternate
    // between two heights when they would collide side by side.
    double widest = 0;
    for (const Axis& axis : axes_)
        widest = std::max(widest, titleWidth(axis));
    Layout layout;
    layout.two_rows = count > 1 && widest + 12 > spacing;
    const double top = 8 + line * (layout.two_rows ? 4 : 2) + 10;
    const bool any_missing = std::any_of(axes_.begin(), axes_.end(), [](const Axis& a) { return a.any_missing; });
    const double bottom = 10 + (any_missing ? kMissingGap + line / 2 : line / 2);
    layout.plot = QRectF(left, top, width, std::max(1.0, size.height() - top - bottom));
    layout.missing_y = layout.plot.bottom() + kMissingGap;
    layout.x.resize(count);
    for (size_t i = 0; i < count; ++i)
        layout.x[i] = count > 1 ? left + spacing * i : left + width / 2;
    const double bar_x = size.width() - right + 30;
    layout.legend = QRectF(bar_x, layout.plot.top(), 14, layout.plot.height());
    return layout;
}

double ParallelCoordinates::yOf(const Layout& layout, double position) const {
    if (position <= kMissing)
        return layout.missing_y;
    return layout.plot.bottom() - position * layout.plot.height();
}

double ParallelCoordinates::positionOf(const Layout& layout, double y) const {
    if (y > layout.plot.bottom() + kMissingGap / 2)
        return kMissing;
    return std::clamp((layout.plot.bottom() - y) / layout.plot.height(), 0.0, 1.0);
}

ParallelCoordinates::AxisGeometry ParallelCoordinates::axisGeometry(int axis) const {
    if (axis < 0 || axis >= axisCount())
        return {};
    const Layout layout = layoutFor(size());
    return {layout.x[axis], layout.plot.top(), layout.plot.bottom(), layout.missing_y};
}

int ParallelCoordinates::axisAt(const Layout& layout, QPointF point) const {
    if (point.y() < layout.plot.top() - kAxisGrab || point.y() > layout.missing_y + kAxisGrab)
        return -1;
    for (size_t i = 0; i < layout.x.size(); ++i)
        if (std::abs(point.x() - layout.x[i]) <= kAxisGrab)
            return static_cast<int>(i);
    return -1;
}

int ParallelCoordinates::runAt(const Layout& layout, QPointF point) const {
    const size_t count = layout.x.size();
    if (count == 0 || runs_.empty())
        return -1;
    // The segment between the two axes around the point (or the one axis when there is only one).
    size_t left = 0;
    while (left + 1 < count && layout.x[left + 1] < point.x())
        ++left;
    const size_t right = std::min(left + 1, count - 1);
    const double span = layout.x[right] - layout.x[left];
    const double f = span > 0 ? std::clamp((point.x() - layout.x[left]) / span, 0.0, 1.0) : 0;
    if (point.x() < layout.x.front() - kHoverReach || point.x() > layout.x.back() + kHoverReach)
        return -1;
    const bool brushed = hasBrush();
    int best = -1;
    double best_distance = kHoverReach;
    for (size_t r = 0; r < runs_.size(); ++r) {
        if (brushed && !isSelected(r))
            continue;
        const double y0 = yOf(layout, axes_[left].position[r]);
        const double y1 = yOf(layout, axes_[right].position[r]);
        const double distance = std::abs(y0 + (y1 - y0) * f - point.y());
        if (distance <= best_distance) {
            best_distance = distance;
            best = static_cast<int>(r);
        }
    }
    return best;
}

std::vector<ParallelCoordinates::LineBatch> ParallelCoordinates::lineBatches(const Layout& layout) const {
    const size_t count = runs_.size();
    const size_t axes = axes_.size();
    if (count == 0 || axes == 0)
        return {};
    // More lines, fainter lines: where many runs agree the colour builds up instead of one solid mass. Counted over
    // the runs drawn in colour, so that a brush to a few of many shows them clearly.
    const bool brushed = hasBrush();
    size_t coloured = count;
    if (brushed) {
        coloured = 0;
        for (size_t r = 0; r < count; ++r)
            coloured += isSelected(r);
    }
    const int alpha =
        std::clamp(static_cast<int>(255 * 12 / std::sqrt(static_cast<double>(std::max<size_t>(1, coloured)))), 28, 235);
    const int faint_alpha = std::clamp(static_cast<int>(255 * 6 / std::sqrt(static_cast<double>(count))), 14, 120);
    // Bins 0..kColourBins-1 by colour, then runs without the metric, then runs outside the brushes.
    std::vector<QVector<QLineF>> bins(kColourBins + 2);
    const int no_metric = kColourBins, outside = kColourBins + 1;
    std::vector<double> y(axes);
    for (size_t r = 0; r < count; ++r) {
        int bin;
        if (brushed && !isSelected(r))
            bin = outside;
        else if (std::isnan(colour_value_[r]))
            bin = no_metric;
        else
            bin = std::min(kColourBins - 1, static_cast<int>(colour_value_[r] * kColourBins));
        QVector<QLineF>& lines = bins[bin];
        for (size_t a = 0; a < axes; ++a)
            y[a] = yOf(layout, axes_[a].position[r]);
        if (axes == 1) {
            lines.append(QLineF(layout.x[0] - 6, y[0], layout.x[0] + 6, y[0]));
            continue;
        }
        for (size_t a = 0; a + 1 < axes; ++a)
            lines.append(QLineF(layout.x[a], y[a], layout.x[a + 1], y[a + 1]));
    }
    std::vector<LineBatch> batches;
    auto add = [&](int bin, QColor colour) {
        if (!bins[bin].isEmpty())
            batches.push_back({colour, std::move(bins[bin])});
    };
    add(outside, QColor(175, 175, 175, faint_alpha));
    add(no_metric, QColor(120, 120, 120, alpha));
    // The better runs last, on top.
    for (int i = 0; i < kColourBins; ++i) {
        const int bin = metric_higher_is_better_ ? i : kColourBins - 1 - i;
        QColor colour = viridis((bin + 0.5) / kColourBins);
        colour.setAlpha(alpha);
        add(bin, colour);
    }
    return batches;
}

void ParallelCoordinates::paintLines(QPainter& painter, const std::vector<LineBatch>& batches) const {
    painter.save();
    painter.setRenderHint(QPainter::Antialiasing, true);
    QPen pen;
    pen.setCosmetic(true);
    pen.setWidthF(runs_.size() > kAntialiasedRuns ? 0.6 : 1);
    for (const LineBatch& batch : batches) {
        pen.setColor(batch.colour);
        painter.setPen(pen);
        painter.drawLines(batch.lines);
    }
    painter.restore();
}

void ParallelCoordinates::rasterLines(QImage& image, const Layout& layout, const std::vector<LineBatch>& batches,
                                      double scale, bool antialiased) const {
    if (image.format() != QImage::Format_ARGB32_Premultiplied)
        return;
    // A hairline on screen; in a high-resolution image about as wide as a screen's pixel.
    // A few runs are drawn a little wider than a hairline, many as hairlines; at a high resolution (a 300 dpi
    // figure) as wide as they would be on screen.
    const double screen_width = runs_.size() <= kWideLineRuns ? 1.5 : 1;
    const double width = std::max(1.0, std::round(scale * screen_width * 2) / 2);
    const bool thin = !antialiased && width == 1;
    std::vector<quint32> colours;
    size_t segments = 0;
    for (const LineBatch& batch : batches) {
        colours.push_back(qPremultiply(batch.colour.rgba()));
        segments += batch.lines.size();
    }
    // Gap by gap between two axes (each batch holds its runs' segments in gap order): the pixels being blended stay
    // in the cache, and the gaps' columns are apart, so that threads can take a share of the gaps each. A pixel
    // sees its batches in the same order as batch by batch; the axis's own column belongs to the gap on its right
    // (the axis line covers it).
    const int gaps = std::max<int>(1, static_cast<int>(axes_.size()) - 1);
    auto draw_gaps = [&](int first_gap, int end_gap) {
        Canvas canvas{reinterpret_cast<quint32*>(image.bits()),
                      image.bytesPerLine() / 4,
                      image.width(),
                      image.height(),
                      0,
                      image.width() - 1};
        if (first_gap > 0 && static_cast<size_t>(first_gap) < layout.x.size())
            canvas.columns_from = static_cast<int>(std::floor(layout.x[first_gap] * scale));
        if (static_cast<size_t>(end_gap) < layout.x.size() && end_gap < gaps)
            canvas.columns_to = static_cast<int>(std::floor(layout.x[end_gap] * scale)) - 1;
        std::vector<quint64> keys;
        for (int gap = first_gap; gap < end_gap; ++gap)
            for (size_t b = 0; b < batches.size(); ++b) {
                const QVector<QLineF>& lines = batches[b].lines;
                if (!thin) {
                    for (qsizetype i = gap; i < lines.size(); i += gaps)
                        raster_wide(canvas, lines[i].p1() * scale, lines[i].p2() * scale, width, antialiased,
                                    colours[b]);
                    continue;
                }
                // Runs that share a segment to the pixel (a grid's values, a category) are one line of the
                // colour k times over: alpha 1 - (1 - a)^k, drawn once. Blends of one colour commute, so this
                // is the image the k lines would give.
                keys.clear();
                for (qsizetype i = gap; i < lines.size(); i += gaps)
                    keys.push_back(key_of(pixels_of(canvas, lines[i].p1() * scale, lines[i].p2() * scale)));
                std::sort(keys.begin(), keys.end());
                const QColor colour = batches[b].colour;
                for (size_t i = 0; i < keys.size();) {
                    size_t end = i + 1;
                    while (end < keys.size() && keys[end] == keys[i])
                        ++end;
                    quint32 premultiplied = colours[b];
                    if (end - i > 1) {
                        QColor stacked = colour;
                        stacked.setAlphaF(1 - std::pow(1 - colour.alphaF(), static_cast<double>(end - i)));
                        premultiplied = qPremultiply(stacked.rgba());
                    }
                    raster_thin(canvas, segment_of(keys[i]), premultiplied);
                    i = end;
                }
            }
    };
    const int threads =
        segments >= kThreadedSegments ? std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, gaps) : 1;
    if (threads == 1) {
        draw_gaps(0, gaps);
        return;
    }
    std::vector<std::thread> helpers;
    for (int t = 1; t < threads; ++t)
        helpers.emplace_back(draw_gaps, gaps * t / threads, gaps * (t + 1) / threads);
    draw_gaps(0, gaps / threads);
    for (std::thread& helper : helpers)
        helper.join();
}

QString ParallelCoordinates::tickText(const Axis& axis, double value) const {
    return formatNumber(axis.log ? std::pow(10, value) : value);
}

void ParallelCoordinates::paintAxes(QPainter& painter, const Layout& layout) const {
    const QFontMetricsF metrics(font());
    const double line = metrics.height();
    const QColor ink = palette().color(QPalette::Text);
    const QColor faint = palette().color(QPalette::PlaceholderText);
    const QColor paper = palette().color(QPalette::Base);
    painter.save();
    painter.setRenderHint(QPainter::Antialiasing, true);
    const size_t count = axes_.size();
    const double spacing = count > 1 ? layout.x[1] - layout.x[0] : layout.plot.width();
    const double label_width = std::max(40.0, std::min(spacing - 14, 12 + metrics.horizontalAdvance("0.0000e-00")));
    QFont bold = font();
    bold.setBold(true);
    const QFontMetricsF bold_metrics(bold);
    QFont small_font = font();
    small_font.setPointSizeF(font().pointSizeF() * 0.9);
    for (size_t i = 0; i < count; ++i) {
        const Axis& axis = axes_[i];
        const double x = layout.x[i];
        const Brush& brush = brushes_[i];
        if (brush.active) {
            // A brush set by value may reach past the axis's ends; drawn, it stops there.
            const double top = yOf(layout, std::min(brush.high, 1.0)), bottom = yOf(layout, brush.low);
            QRectF band(x - 9, top - 2, 18, std::max(4.0, bottom - top + 4));
            painter.setPen(QPen(QColor(31, 119, 180, 220), 1));
            painter.setBrush(QColor(31, 119, 180, 60));
            painter.drawRect(band);
            painter.setBrush(Qt::NoBrush);
        }
        painter.setPen(QPen(ink, 1.4));
        painter.drawLine(QPointF(x, layout.plot.top()), QPointF(x, layout.plot.bottom()));

        // Title, elided to two axes' spacing when alternating heights, to one otherwise.
        const auto [prefix, leaf] = titleParts(axis);
        const double title_room = std::max(layout.two_rows ? 2 * spacing - 12 : spacing - 8, 50.0);
        const double title_y = 8 + (layout.two_rows && i % 2 == 1 ? 2 * line : 0);
        if (!prefix.isEmpty()) {
            painter.setFont(small_font);
            draw_halo_text(painter, QRectF(x - title_room / 2, title_y, title_room, line),
                           Qt::AlignHCenter | Qt::AlignBottom,
                           QFontMetricsF(small_font).elidedText(prefix, Qt::ElideMiddle, title_room), faint, paper);
        }
        painter.setFont(bold);
        draw_halo_text(painter, QRectF(x - title_room / 2, title_y + line, title_room, line),
                       Qt::AlignHCenter | Qt::AlignTop, bold_metrics.elidedText(leaf, Qt::ElideMiddle, title_room), ink,
                       paper);
        painter.setFont(font());

        // Ticks: round numbers, the few distinct values, or the categories; a label that would overlap the one
        // before it is left out.
        struct Tick {
            double position;
            QString text;
        };
        std::vector<Tick> ticks;
        if (axis.categorical) {
            for (qsizetype c = 0; c < axis.categories.size(); ++c)
                ticks.push_back({valueToPosition(axis, static_cast<double>(c)), axis.categories[c]});
        } else if (!(axis.high > axis.low)) {
            if (axis.position.size() > 0 &&
                std::any_of(axis.position.begin(), axis.position.end(), [](double p) { return p > kMissing; }))
                ticks.push_back({0.5, tickText(axis, axis.low)});
        } else if (!axis.distinct.empty()) {
            for (double value : axis.distinct)
                ticks.push_back({valueToPosition(axis, value), formatNumber(value)});
        } else if (axis.log) {
            for (double decade = std::ceil(axis.low - 1e-9); decade <= axis.high + 1e-9; decade += 1)
                ticks.push_back({(decade - axis.low) / (axis.high - axis.low), tickText(axis, decade)});
        } else {
            const int wanted = std::max(2, static_cast<int>(layout.plot.height() / (line * 2.5)));
            for (double value : nice_ticks(axis.low, axis.high, std::min(wanted, 8)))
                ticks.push_back({(value - axis.low) / (axis.high - axis.low), tickText(axis, value)});
        }
        double last_label_y = -1e9;
        for (const Tick& tick : ticks) {
            const double y = yOf(layout, tick.position);
            painter.setPen(QPen(ink, 1));
            painter.drawLine(QPointF(x - 4, y), QPointF(x, y));
            if (std::abs(y - last_label_y) < line * 1.05)
                continue;
            last_label_y = y;
            const QString text = metrics.elidedText(tick.text, Qt::ElideRight, label_width);
            draw_halo_text(painter, QRectF(x - 6 - label_width, y - line / 2, label_width, line),
                           Qt::AlignRight | Qt::AlignVCenter, text, ink, paper);
        }
        if (axis.any_missing) {
            painter.setPen(QPen(faint, 1, Qt::DotLine));
            painter.drawLine(QPointF(x, layout.plot.bottom()), QPointF(x, layout.missing_y));
            painter.setPen(QPen(ink, 1.2));
            painter.setBrush(palette().color(QPalette::Base));
            painter.drawEllipse(QPointF(x, layout.missing_y), 3.5, 3.5);
            painter.setBrush(Qt::NoBrush);
            QFont italic = font();
            italic.setItalic(true);
            painter.setFont(italic);
            draw_halo_text(painter, QRectF(x - 8 - label_width, layout.missing_y - line / 2, label_width, line),
                           Qt::AlignRight | Qt::AlignVCenter, tr("missing"), faint, paper);
            painter.setFont(font());
        }
    }
    painter.restore();
}

void ParallelCoordinates::paintLegend(QPainter& painter, const Layout& layout) const {
    if (axes_.empty())
        return;
    const QFontMetricsF metrics(font());
    const double line = metrics.height();
    const QColor ink = palette().color(QPalette::Text);
    const QRectF bar = layout.legend;
    QLinearGradient gradient(bar.bottomLeft(), bar.topLeft());
    for (int i = 0; i <= 16; ++i)
        gradient.setColorAt(i / 16.0, viridis(i / 16.0));
    painter.save();
    painter.fillRect(bar, gradient);
    painter.setPen(QPen(ink, 1));
    painter.drawRect(bar);
    const QString better = tr(" (best)");
    const QString high = formatNumber(metric_high_) + (metric_higher_is_better_ ? better : QString());
    const QString low = formatNumber(metric_low_) + (metric_higher_is_better_ ? QString() : better);
    const double text_x = bar.right() + 4;
    painter.drawText(QRectF(text_x, bar.top() - line / 2, 200, line), Qt::AlignLeft | Qt::AlignVCenter, high);
    painter.drawText(QRectF(text_x, bar.bottom() - line / 2, 200, line), Qt::AlignLeft | Qt::AlignVCenter, low);
    // The metric's name along the bar.
    painter.translate(bar.left() - 6, bar.center().y());
    painter.rotate(-90);
    const QString name = metrics.elidedText(metric_, Qt::ElideMiddle, bar.height());
    painter.drawText(QRectF(-bar.height() / 2, -line, bar.height(), line), Qt::AlignCenter, name);
    painter.restore();
}

void ParallelCoordinates::paintHover(QPainter& painter, const Layout& layout) const {
    if (hover_ < 0 || static_cast<size_t>(hover_) >= runs_.size() || axes_.empty())
        return;
    QPolygonF points;
    for (size_t a = 0; a < axes_.size(); ++a)
        points << QPointF(layout.x[a], yOf(layout, axes_[a].position[hover_]));
    painter.save();
    painter.setRenderHint(QPainter::Antialiasing, true);
    // A halo of the background's colour sets the hovered run off from the lines under it.
    QColor halo = palette().color(QPalette::Base);
    halo.setAlpha(230);
    painter.setPen(QPen(halo, 5, Qt::SolidLine, Qt::RoundCap, Qt::RoundJoin));
    painter.drawPolyline(points);
    const double value = colour_value_[hover_];
    const QColor colour = std::isnan(value) ? QColor(90, 90, 90) : viridis(value).darker(115);
    painter.setPen(QPen(colour, 2.5, Qt::SolidLine, Qt::RoundCap, Qt::RoundJoin));
    painter.drawPolyline(points);
    painter.setBrush(colour);
    painter.setPen(QPen(palette().color(QPalette::Base), 1));
    for (const QPointF& p : points)
        painter.drawEllipse(p, 3.5, 3.5);
    painter.restore();
}

void ParallelCoordinates::paintEvent(QPaintEvent*) {
    QElapsedTimer timer;
    timer.start();
    QPainter painter(this);
    const Layout layout = layoutFor(size());
    const qreal ratio = devicePixelRatioF();
    // Rendered elsewhere than on screen (a file, a scaled image): no cached pixels.
    const QTransform device = painter.deviceTransform();
    const bool elsewhere = painter.paintEngine()->type() != QPaintEngine::Raster ||
                           std::abs(device.m11() - ratio) > 1e-6 || std::abs(device.m22() - ratio) > 1e-6;
    last_paint_rebuilt_ = false;
    if (painter.paintEngine()->type() != QPaintEngine::Raster) {
        // An SVG or PDF file: every line a vector.
        painter.fillRect(rect(), palette().color(QPalette::Base));
        paintLines(painter, lineBatches(layout));
        paintAxes(painter, layout);
        paintLegend(painter, layout);
    } else if (elsewhere) {
        // A scaled image (a figure at 300 dpi): the lines at its resolution, the text drawn over them.
        const double scale = std::max(std::abs(device.m11()), std::abs(device.m22()));
        QImage lines((QSizeF(size()) * scale).toSize(), QImage::Format_ARGB32_Premultiplied);
        lines.fill(palette().color(QPalette::Base));
        rasterLines(lines, layout, lineBatches(layout), scale, true);
        painter.drawImage(QRectF(rect()), lines);
        paintAxes(painter, layout);
        paintLegend(painter, layout);
    } else {
        const QSize pixels = (QSizeF(size()) * ratio).toSize();
        if (!cache_valid_ || cache_.size() != pixels) {
            if (cache_.size() != pixels)
                cache_ = QImage(pixels, QImage::Format_ARGB32_Premultiplied);
            cache_.setDevicePixelRatio(1);
            cache_.fill(palette().color(QPalette::Base));
            rasterLines(cache_, layout, lineBatches(layout), ratio, runs_.size() <= kAntialiasedRuns);
            cache_.setDevicePixelRatio(ratio);
            QPainter cache_painter(&cache_);
            cache_painter.setFont(font());
            cache_painter.setRenderHint(QPainter::TextAntialiasing);
            paintAxes(cache_painter, layout);
            paintLegend(cache_painter, layout);
            cache_valid_ = true;
            last_paint_rebuilt_ = true;
        }
        painter.drawImage(QPointF(0, 0), cache_);
    }
    paintHover(painter, layout);
    if (!elsewhere)
        paintFocus(painter, layout);
    paint_ms_ = timer.nsecsElapsed() / 1e6;
}

void ParallelCoordinates::resizeEvent(QResizeEvent* event) {
    cache_valid_ = false;
    QWidget::resizeEvent(event);
}

void ParallelCoordinates::changeEvent(QEvent* event) {
    if (event->type() == QEvent::FontChange || event->type() == QEvent::PaletteChange ||
        event->type() == QEvent::StyleChange)
        invalidate();
    QWidget::changeEvent(event);
}

void ParallelCoordinates::mousePressEvent(QMouseEvent* event) {
    if (event->button() != Qt::LeftButton)
        return QWidget::mousePressEvent(event);
    const Layout layout = layoutFor(size());
    drag_axis_ = axisAt(layout, event->position());
    press_point_ = event->position();
    if (drag_axis_ >= 0)
        drag_start_ = positionOf(layout, event->position().y());
}

void ParallelCoordinates::mouseMoveEvent(QMouseEvent* event) {
    const Layout layout = layoutFor(size());
    if (drag_axis_ >= 0 && (event->buttons() & Qt::LeftButton)) {
        if (std::abs(event->position().y() - press_point_.y()) < 3)
            return;
        const double here = positionOf(layout, event->position().y());
        Brush& brush = brushes_[drag_axis_];
        brush.active = true;
        brush.low = std::min(drag_start_, here);
        brush.high = std::max(drag_start_, here);
        hover_ = -1;
        invalidate();
        emit brushChanged();
        return;
    }
    setCursor(axisAt(layout, event->position()) >= 0 ? Qt::SplitVCursor : Qt::ArrowCursor);
    const int run = runAt(layout, event->position());
    if (run != hover_) {
        hover_ = run;
        update();
    }
    if (run >= 0)
        showHoverTip(event->globalPosition().toPoint());
    else
        QToolTip::hideText();
}

void ParallelCoordinates::mouseReleaseEvent(QMouseEvent* event) {
    if (event->button() != Qt::LeftButton || drag_axis_ < 0)
        return QWidget::mouseReleaseEvent(event);
    const int axis = drag_axis_;
    drag_axis_ = -1;
    // A click (no drag) on an axis clears its brush.
    if (std::abs(event->position().y() - press_point_.y()) < 3)
        clearBrush(axis);
}

void ParallelCoordinates::leaveEvent(QEvent* event) {
    if (hover_ >= 0) {
        hover_ = -1;
        update();
    }
    QWidget::leaveEvent(event);
}

void ParallelCoordinates::focusInEvent(QFocusEvent* event) {
    if (focus_axis_ < 0 && axisCount() > 0)
        focus_axis_ = 0;
    update();
    QWidget::focusInEvent(event);
}

void ParallelCoordinates::focusOutEvent(QFocusEvent* event) {
    update();
    QWidget::focusOutEvent(event);
}

void ParallelCoordinates::paintFocus(QPainter& painter, const Layout& layout) const {
    if (!hasFocus() || focus_axis_ < 0 || focus_axis_ >= axisCount())
        return;
    const double x = layout.x[static_cast<size_t>(focus_axis_)];
    QPen pen(palette().color(QPalette::Highlight), 1.5, Qt::DashLine);
    painter.save();
    painter.setPen(pen);
    painter.setBrush(Qt::NoBrush);
    painter.drawRect(QRectF(x - 14, layout.plot.top() - 6, 28, layout.missing_y - layout.plot.top() + 14));
    painter.restore();
}

QString ParallelCoordinates::positionText(const Axis& axis, double position) const {
    if (axis.categorical) {
        const qsizetype count = std::max<qsizetype>(1, axis.categories.size());
        const auto index = std::clamp<qsizetype>(static_cast<qsizetype>(std::floor(position * count)), 0, count - 1);
        return axis.categories.value(index);
    }
    const double v = axis.low + std::clamp(position, 0.0, 1.0) * (axis.high - axis.low);
    return formatNumber(axis.log ? std::pow(10.0, v) : v);
}

QString ParallelCoordinates::help() {
    return tr("One line per run across the chosen keys and the summary; drag on an axis to brush (the runs table then "
              "shows only the brushed runs). Keys: Left and Right choose an axis, Up and Down set or move its brush, "
              "Shift+Up and Shift+Down widen it (below the bottom: the runs missing the key too), Ctrl+Up and "
              "Ctrl+Down narrow it, Delete clears it, Escape clears every brush, Space says what is brushed");
}

void ParallelCoordinates::say(const QString& text) {
    // Said after the help, which stays: a screen reader reads the description again when it changes.
    setAccessibleDescription(help() + QLatin1Char('\n') + text);
    QAccessibleEvent event(this, QAccessible::DescriptionChanged);
    QAccessible::updateAccessibility(&event);
}

QString ParallelCoordinates::focusedAxisText() const {
    if (focus_axis_ < 0 || focus_axis_ >= axisCount())
        return tr("No axis");
    const Axis& axis = axes_[static_cast<size_t>(focus_axis_)];
    const Brush& brush = brushes_[static_cast<size_t>(focus_axis_)];
    const QString kept = tr("%1 of %2 runs shown").arg(selectedRuns().size()).arg(runs_.size());
    if (!brush.active)
        return tr("%1: not brushed; %2").arg(axis.title, kept);
    return tr("%1: brushed from %2 to %3%4; %5")
        .arg(axis.title, positionText(axis, brush.low), positionText(axis, brush.high),
             brush.low <= kMissing ? tr(" and the missing") : QString(), kept);
}

void ParallelCoordinates::keyPressEvent(QKeyEvent* event) {
    const int key = event->key();
    if (axisCount() == 0)
        return QWidget::keyPressEvent(event);
    focus_axis_ = std::clamp(focus_axis_, 0, axisCount() - 1);
    Brush& brush = brushes_[static_cast<size_t>(focus_axis_)];
    const Axis& axis = axes_[static_cast<size_t>(focus_axis_)];
    const bool widen = event->modifiers() & Qt::ShiftModifier, narrow = event->modifiers() & Qt::ControlModifier;
    // A tenth of a number axis; one category of a category axis (each has a slot of 1/count).
    const double step =
        axis.categorical ? 1.0 / static_cast<double>(std::max<qsizetype>(1, axis.categories.size())) : 0.1;
    if (key == Qt::Key_Left || key == Qt::Key_Right) {
        focus_axis_ = std::clamp(focus_axis_ + (key == Qt::Key_Left ? -1 : 1), 0, axisCount() - 1);
        update();
        say(focusedAxisText());
    } else if (key == Qt::Key_Up || key == Qt::Key_Down) {
        const double direction = key == Qt::Key_Up ? 1 : -1;
        if (!brush.active) {
            // A new brush: the top or the bottom category, or fifth of a number axis.
            const double size = axis.categorical ? step : 0.2;
            brush.active = true;
            brush.low = direction > 0 ? 1.0 - size : 0.0;
            brush.high = direction > 0 ? 1.0 : size;
        } else if (widen) {
            if (direction > 0)
                brush.high = std::min(brush.high + step, 1.0);
            else if (brush.low > 1e-9)
                brush.low = std::max(brush.low - step, 0.0);
            else if (axis.any_missing)
                brush.low = kMissing; // past the bottom: the runs without the key too
        } else if (narrow) {
            // Never narrower than one step: the top comes down, or the bottom goes up (leaving the missing slot).
            if (direction < 0)
                brush.high = std::max(brush.high - step, std::max(brush.low, 0.0) + step);
            else
                brush.low = brush.low <= kMissing ? 0.0 : std::min(brush.low + step, brush.high - step);
        } else {
            // Moved, kept inside the axis.
            const double width = brush.high - std::max(brush.low, 0.0);
            const double low = std::clamp(std::max(brush.low, 0.0) + direction * step, 0.0, 1.0 - width);
            brush.low = low;
            brush.high = low + width;
        }
        invalidate();
        emit brushChanged();
    } else if (key == Qt::Key_Delete || key == Qt::Key_Backspace) {
        clearBrush(focus_axis_);
    } else if (key == Qt::Key_Escape && hasBrush()) {
        clearBrushes();
    } else if (key == Qt::Key_Space) {
        const QString text = focusedAxisText();
        const Layout layout = layoutFor(size());
        QToolTip::showText(mapToGlobal(QPoint(static_cast<int>(layout.x[static_cast<size_t>(focus_axis_)]),
                                              static_cast<int>(layout.plot.center().y()))),
                           text, this);
        say(text);
    } else {
        return QWidget::keyPressEvent(event);
    }
    event->accept();
}

void ParallelCoordinates::showHoverTip(QPoint global) {
    const RunRecord& run = runs_[hover_];
    QString html = QStringLiteral("<b>%1</b> <span style='color:gray'>#%2</span><table>")
                       .arg(QString::fromStdString(run.name).toHtmlEscaped())
                       .arg(run.id);
    for (const Axis& axis : axes_)
        html += QStringLiteral("<tr><td>%1</td><td align='right'>&nbsp;%2</td></tr>")
                    .arg(axis.title.toHtmlEscaped(), axis.text[hover_].toHtmlEscaped());
    html += QStringLiteral("</table>");
    QToolTip::showText(global, html, this);
}

} // namespace traindeck
