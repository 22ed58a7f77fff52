#pragma once
// Chart axes a reader reads at a glance: ticks at round values (1, 2, 2.5 or 5 × 10^k; whole minutes and hours on
// time), labels written for their magnitude and unit ("0.25", "1e-4", "12 k", "1:30", "2:15 h", "$0.50"), and a
// range that is the data's, with a little headroom where the caller asks for it. Pure functions for the ticks and
// labels (tested alone), and one that sets a QCategoryAxis (whose labels, unlike a QValueAxis's printf format, can
// say "k" or "mm:ss") to them.
#include <QString>

#include <vector>

class QAbstractAxis;
class QLogValueAxis;

namespace traindeck {

enum class AxisUnit {
    number,  // losses, percentages: decimals as the step needs, scientific below 1e-3 or from 1e6
    count,   // steps, samples: whole numbers, "12 k", "1.5 M"
    seconds, // elapsed time: "m:ss" below an hour, "h:mm h" from one
    money,   // spend: the currency's symbol, at least cents
};

struct Ticks {
    double step = 1;
    std::vector<double> values; // the multiples of step inside [low, high]
};

// Ticks at round values, about `target` of them, over [low, high] (low < high; a point range is widened by one).
Ticks nice_ticks(double low, double high, AxisUnit unit, int target = 5);
// currency: the symbol money is written with ("" = the console's, model/money.h).
QString tick_label(double value, double step, AxisUnit unit, const QString& currency = QString());
// Sets the axis (a QCategoryAxis; any other QValueAxis gets the range only) to [low, high] with those ticks and labels.
// From then on the ticks follow the axis's range when something else sets it (a zoom): labelled for what is visible.
void fit_axis(QAbstractAxis* axis, double low, double high, AxisUnit unit, const QString& currency = QString());
// One value as the axis fit_axis() set writes its unit ("1:05", "12.345 k", "$0.0123"), finer than its ticks; a plain
// number for any other axis.
QString value_label(const QAbstractAxis* axis, double value);
// A new axis ready for fit_axis.
QAbstractAxis* make_value_axis(const QString& title);
// A new base-10 log axis whose labels are printf's `format` ("%.3g", "$%.3g"); minor ticks as Qt's default (none)
// unless the caller asks (setMinorTickCount(-1): the 2…9 of each decade).
QLogValueAxis* make_log_axis(const QString& title, const QString& format = QStringLiteral("%.3g"));

} // namespace traindeck
