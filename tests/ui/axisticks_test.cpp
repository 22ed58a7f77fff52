// Axis ticks and labels (ui/axisticks.h): round ticks, labels for the magnitude and unit, the category axis set to
// them.
#include "axisticks.h"

#include <QCategoryAxis>

#include <gtest/gtest.h>

using namespace traindeck;

QT_BEGIN_NAMESPACE
inline void PrintTo(const QString& text, std::ostream* out) { *out << '"' << text.toStdString() << '"'; }
QT_END_NAMESPACE

namespace {

QStringList labels(double low, double high, AxisUnit unit) {
    const Ticks ticks = nice_ticks(low, high, unit);
    QStringList out;
    for (double value : ticks.values)
        out << tick_label(value, ticks.step, unit);
    return out;
}

} // namespace

TEST(AxisTicks, AStepAxisEndsWhereTheRunEndsWithRoundTicks) {
    // The 2,110-step demo job: ticks every 500, none past the run (not an axis to 4,000).
    const Ticks ticks = nice_ticks(0, 2110, AxisUnit::count);
    EXPECT_EQ(ticks.step, 500);
    EXPECT_EQ(ticks.values, (std::vector<double>{0, 500, 1000, 1500, 2000}));
    EXPECT_EQ(labels(0, 2110, AxisUnit::count), (QStringList{"0", "500", "1 k", "1.5 k", "2 k"}));
    EXPECT_EQ(labels(0, 10'000'000, AxisUnit::count), (QStringList{"0", "2 M", "4 M", "6 M", "8 M", "10 M"}));
    EXPECT_EQ(labels(0, 12'000'000, AxisUnit::count), (QStringList{"0", "2.5 M", "5 M", "7.5 M", "10 M"}));
    EXPECT_EQ(labels(0, 3, AxisUnit::count), (QStringList{"0", "1", "2", "3"})); // never a fraction of a step
}

TEST(AxisTicks, NumbersGetTheDecimalsTheirStepNeedsAndScientificWhenTiny) {
    EXPECT_EQ(labels(0, 2.3, AxisUnit::number), (QStringList{"0", "0.5", "1", "1.5", "2"}));
    EXPECT_EQ(labels(0, 1, AxisUnit::number), (QStringList{"0", "0.2", "0.4", "0.6", "0.8", "1"}));
    EXPECT_EQ(labels(0.2, 0.45, AxisUnit::number), (QStringList{"0.2", "0.25", "0.3", "0.35", "0.4", "0.45"}));
    EXPECT_EQ(labels(0, 0.0004, AxisUnit::number), (QStringList{"0", "1e-4", "2e-4", "3e-4", "4e-4"}));
    EXPECT_EQ(labels(0, 0.0006, AxisUnit::number), (QStringList{"0", "2e-4", "4e-4", "6e-4"}));
    EXPECT_EQ(labels(0, 0.004, AxisUnit::number), (QStringList{"0", "0.001", "0.002", "0.003", "0.004"}));
    EXPECT_EQ(labels(0, 105, AxisUnit::number), (QStringList{"0", "25", "50", "75", "100"}));
}

TEST(AxisTicks, TimeIsMinutesAndSecondsThenHours) {
    EXPECT_EQ(labels(0, 200, AxisUnit::seconds), (QStringList{"0:00", "1:00", "2:00", "3:00"}));
    EXPECT_EQ(labels(0, 50, AxisUnit::seconds), (QStringList{"0:00", "0:10", "0:20", "0:30", "0:40", "0:50"}));
    EXPECT_EQ(labels(0, 4 * 3600, AxisUnit::seconds), (QStringList{"0:00", "1:00 h", "2:00 h", "3:00 h", "4:00 h"}));
    EXPECT_EQ(labels(0, 2, AxisUnit::seconds).first(), "0.0 s");
}

TEST(AxisTicks, MoneyHasItsCurrencyAndAtLeastCents) {
    EXPECT_EQ(labels(0, 2, AxisUnit::money), (QStringList{"$0.00", "$0.50", "$1.00", "$1.50", "$2.00"}));
    EXPECT_EQ(labels(0, 0.0004, AxisUnit::money).last(), "$0.0004");
}

TEST(AxisTicks, ACategoryAxisGetsTheDataRangeAndOneLabelPerTick) {
    QCategoryAxis axis;
    fit_axis(&axis, 0, 2110, AxisUnit::count);
    EXPECT_EQ(axis.min(), 0);
    EXPECT_EQ(axis.max(), 2110);
    EXPECT_EQ(axis.categoriesLabels(), (QStringList{"0", "500", "1 k", "1.5 k", "2 k"}));
    fit_axis(&axis, 0, 0.9, AxisUnit::number); // refitted: the old labels go
    EXPECT_EQ(axis.categoriesLabels(), (QStringList{"0", "0.2", "0.4", "0.6", "0.8"}));
    fit_axis(&axis, 5, 5, AxisUnit::count); // one point: a range around it, not an empty axis
    EXPECT_LT(axis.min(), 5);
    EXPECT_GT(axis.max(), 5);
}

TEST(AxisTicks, TheTicksFollowTheRangeSetByAZoom) {
    QCategoryAxis axis;
    fit_axis(&axis, 0, 3, AxisUnit::seconds);
    EXPECT_EQ(axis.categoriesLabels(), (QStringList{"0:00", "0:01", "0:02", "0:03"}));
    axis.setRange(0, 1.5); // as QChart::zoomIn does: the range alone
    EXPECT_EQ(axis.categoriesLabels(), (QStringList{"0.0 s", "0.5 s", "1.0 s", "1.5 s"}));
    axis.setRange(-2, 0.5); // zoomed out and dragged left of 0
    for (const QString& label : axis.categoriesLabels()) {
        EXPECT_GE(axis.endValue(label), -2) << label.toStdString();
        EXPECT_LE(axis.endValue(label), 0.5) << label.toStdString();
    }
    fit_axis(&axis, 0, 2110, AxisUnit::count); // another unit: followed from then on
    axis.setRange(1000, 1100);
    EXPECT_EQ(axis.categoriesLabels().first(), "1 k");
    EXPECT_EQ(axis.categoriesLabels().last(), "1.1 k");
}

TEST(AxisTicks, AValueIsWrittenAsItsAxisWritesItsUnit) {
    QCategoryAxis seconds, steps, money, plain;
    fit_axis(&seconds, 0, 600, AxisUnit::seconds);
    fit_axis(&steps, 0, 20000, AxisUnit::count);
    fit_axis(&money, 0, 1, AxisUnit::money, QStringLiteral("€"));
    EXPECT_EQ(value_label(&seconds, 65.4), "1:05");
    EXPECT_EQ(value_label(&seconds, 12.346), "12.35 s");
    EXPECT_EQ(value_label(&steps, 12345), "12.345 k");
    EXPECT_EQ(value_label(&steps, 7), "7");
    EXPECT_EQ(value_label(&money, 0.01234), "€0.0123");
    EXPECT_EQ(value_label(&seconds, 3725), "1:02:05");
    EXPECT_EQ(value_label(&plain, 0.123456789), "0.123457"); // no unit: the number
    EXPECT_EQ(value_label(&plain, 1234567), "1234567");      // a step, whole
    EXPECT_EQ(value_label(nullptr, 2.5), "2.5");
}
