#include "axisticks.h"

#include "money.h"

#include <QCategoryAxis>
#include <QLogValueAxis>

#include <cmath>

namespace traindeck {

namespace {

// The decimals that tell ticks `step` apart (2.5 needs one more than 2 or 5).
int decimals_for(double step) {
    int decimals = 0;
    for (double scaled = step; decimals < 12 && std::abs(scaled - std::round(scaled)) > 1e-9 * std::max(1.0, scaled);
         scaled *= 10)
        ++decimals;
    return decimals;
}

QString fixed(double value, int decimals) {
    QString text = QString::number(value, 'f', decimals);
    if (text == QStringLiteral("-0") || (text.startsWith(QStringLiteral("-0.")) && text.toDouble() == 0))
        text.remove(0, 1);
    return text;
}

// "1.50" → "1.5", "2.0" → "2": ticks read as the numbers they are.
QString trimmed(QString text) {
    if (text.contains(QLatin1Char('.'))) {
        while (text.endsWith(QLatin1Char('0')))
            text.chop(1);
        if (text.endsWith(QLatin1Char('.')))
            text.chop(1);
    }
    return text;
}

// 0.00025 → "2.5e-4".
QString scientific(double value) {
    QString text = QString::number(value, 'e', 3); // "2.500e-04"
    const qsizetype e = text.indexOf(QLatin1Char('e'));
    QString mantissa = trimmed(text.left(e));
    const int exponent = text.mid(e + 1).toInt();
    return mantissa + QStringLiteral("e") + QString::number(exponent);
}

} // namespace

Ticks nice_ticks(double low, double high, AxisUnit unit, int target) {
    if (!(high > low)) {
        low -= 1;
        high += 1;
    }
    const double rough = (high - low) / std::max(1, target);
    double step = 0;
    if (unit == AxisUnit::seconds && rough >= 1) {
        // Seconds, minutes and hours people count in.
        for (const double candidate : {1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0,
                                       3600.0, 7200.0, 10800.0, 21600.0, 43200.0, 86400.0})
            if (candidate >= rough) {
                step = candidate;
                break;
            }
    }
    if (step == 0) {
        const double power = std::pow(10.0, std::floor(std::log10(rough)));
        step = 10 * power;
        for (const double mantissa : {1.0, 2.0, 2.5, 5.0})
            if (mantissa * power >= rough) {
                step = mantissa * power;
                break;
            }
        if (unit == AxisUnit::count)
            step = std::max(step, 1.0);
    }
    Ticks ticks;
    ticks.step = step;
    for (double k = std::ceil(low / step - 1e-9); k * step <= high + step * 1e-9 && ticks.values.size() < 64; ++k)
        ticks.values.push_back(k * step == 0 ? 0.0 : k * step); // no -0
    return ticks;
}

QString tick_label(double value, double step, AxisUnit unit, const QString& currency_given) {
    const QString currency = currency_given.isEmpty() ? currency_symbol(display_currency()) : currency_given;
    switch (unit) {
    case AxisUnit::count: {
        const double magnitude = std::abs(value);
        if (magnitude >= 1e6 || (step >= 1e6 && value != 0))
            return trimmed(fixed(value / 1e6, decimals_for(step / 1e6))) + QStringLiteral(" M");
        if (magnitude >= 1e3 || (step >= 1e3 && value != 0))
            return trimmed(fixed(value / 1e3, decimals_for(step / 1e3))) + QStringLiteral(" k");
        return trimmed(fixed(value, decimals_for(step)));
    }
    case AxisUnit::seconds: {
        if (step < 1)
            return fixed(value, decimals_for(step)) + QStringLiteral(" s");
        const auto whole = static_cast<long long>(std::llround(std::abs(value)));
        const QString sign = value < 0 ? QStringLiteral("-") : QString();
        if (step >= 60 && whole >= 3600)
            return sign + QStringLiteral("%1:%2 h").arg(whole / 3600).arg((whole / 60) % 60, 2, 10, QLatin1Char('0'));
        return sign + QStringLiteral("%1:%2").arg(whole / 60).arg(whole % 60, 2, 10, QLatin1Char('0'));
    }
    case AxisUnit::money:
        return (value < 0 ? QStringLiteral("-") : QString()) + currency +
               fixed(std::abs(value), std::max(2, decimals_for(step)));
    case AxisUnit::number:
        break;
    }
    if (step < 1e-3 || std::abs(value) >= 1e6)
        return value == 0 ? QStringLiteral("0") : scientific(value);
    return trimmed(fixed(value, decimals_for(step)));
}

namespace {

void label_ticks(QCategoryAxis* categories, double low, double high, AxisUnit unit, const QString& currency) {
    const Ticks ticks = nice_ticks(low, high, unit);
    for (const QString& label : categories->categoriesLabels())
        categories->remove(label);
    categories->setStartValue(low);
    for (const double value : ticks.values) {
        const QString label = tick_label(value, ticks.step, unit, currency);
        if (!categories->categoriesLabels().contains(label)) // labels are keys: a repeat would be refused
            categories->append(label, value);
    }
}

} // namespace

void fit_axis(QAbstractAxis* axis, double low, double high, AxisUnit unit, const QString& currency) {
    if (!(high > low)) {
        low -= unit == AxisUnit::count || unit == AxisUnit::seconds ? 1 : 0.5;
        high += unit == AxisUnit::count || unit == AxisUnit::seconds ? 1 : 0.5;
    }
    auto* values = qobject_cast<QValueAxis*>(axis);
    if (!values)
        return;
    auto* categories = qobject_cast<QCategoryAxis*>(axis);
    if (categories) {
        categories->setProperty("tick_unit", static_cast<int>(unit));
        categories->setProperty("tick_currency", currency);
        if (!categories->property("ticks_follow").toBool()) {
            // A zoom (a drag, a right-click, a double-click) sets the range alone: the ticks follow it. A label left
            // beyond the visible range is drawn at the plot's edge by Qt Charts, over the last one in range.
            categories->setProperty("ticks_follow", true);
            QObject::connect(categories, &QValueAxis::rangeChanged, categories, [categories](qreal min, qreal max) {
                label_ticks(categories, min, max, static_cast<AxisUnit>(categories->property("tick_unit").toInt()),
                            categories->property("tick_currency").toString());
            });
        }
    }
    // A new range is labelled by the handler above; the range it had already is labelled here (the unit may differ).
    const bool same_range = values->min() == low && values->max() == high;
    values->setRange(low, high);
    if (categories && same_range)
        label_ticks(categories, low, high, unit, currency);
}

QString value_label(const QAbstractAxis* axis, double value) {
    const QVariant unit = axis ? axis->property("tick_unit") : QVariant();
    if (!unit.isValid()) // a plain axis: a whole number (a step) whole, any other to six digits
        return value == std::round(value) && std::abs(value) < 1e15 ? QString::number(static_cast<qint64>(value))
                                                                    : QString::number(value, 'g', 6);
    // Finer than any tick: the value itself, in the axis's own words.
    const double magnitude = std::abs(value);
    switch (static_cast<AxisUnit>(unit.toInt())) {
    case AxisUnit::count:
        return tick_label(std::round(value), 1, AxisUnit::count);
    case AxisUnit::seconds:
        if (magnitude >= 3600) {
            // To the second, as h:mm:ss (the axis's "1:02 h" is to the minute).
            const auto whole = static_cast<long long>(std::llround(magnitude));
            return (value < 0 ? QStringLiteral("-") : QString()) + QStringLiteral("%1:%2:%3")
                                                                       .arg(whole / 3600)
                                                                       .arg((whole / 60) % 60, 2, 10, QLatin1Char('0'))
                                                                       .arg(whole % 60, 2, 10, QLatin1Char('0'));
        }
        return tick_label(value, magnitude >= 60 ? 1 : 0.01, AxisUnit::seconds);
    case AxisUnit::money:
        return tick_label(value, 0.0001, AxisUnit::money, axis->property("tick_currency").toString());
    case AxisUnit::number:
        break;
    }
    return QString::number(value, 'g', 6);
}

QLogValueAxis* make_log_axis(const QString& title, const QString& format) {
    auto* axis = new QLogValueAxis;
    axis->setBase(10);
    axis->setLabelFormat(format);
    axis->setTitleText(title);
    return axis;
}

QAbstractAxis* make_value_axis(const QString& title) {
    auto* axis = new QCategoryAxis;
    axis->setLabelsPosition(QCategoryAxis::AxisLabelsPositionOnValue);
    axis->setTruncateLabels(false); // "…" for a label laid out before its chart had its size is no label
    axis->setTitleText(title);
    return axis;
}

} // namespace traindeck
