#include "money.h"

#include <QHash>
#include <QReadWriteLock>

#include <algorithm>
#include <cmath>

namespace traindeck {
namespace {

QReadWriteLock lock;
QString& current() {
    static QString code = QStringLiteral("USD");
    return code;
}
QHash<QString, QString>& backends() {
    static QHash<QString, QString> codes;
    return codes;
}

} // namespace

bool is_currency_code(const QString& code) {
    return code.size() == 3 && std::all_of(code.begin(), code.end(), [](QChar c) { return c >= 'A' && c <= 'Z'; });
}

void set_display_currency(const QString& code) {
    const QWriteLocker locked(&lock);
    current() = is_currency_code(code) ? code : QStringLiteral("USD");
}

QString display_currency() {
    const QReadLocker locked(&lock);
    return current();
}

void set_backend_currency(const QString& backend, const QString& code) {
    const QWriteLocker locked(&lock);
    if (is_currency_code(code))
        backends().insert(backend, code);
    else
        backends().remove(backend);
}

QString backend_currency(const QString& backend) {
    const QReadLocker locked(&lock);
    return backends().value(backend, current());
}

QString currency_symbol(const QString& code) {
    // The symbols no other currency in common use shares in everyday writing; a dollar other than the US one keeps
    // its code (a Canadian user reads "CAD 3.00", not "$3.00" that could be either).
    static const struct {
        const char* code;
        const char* symbol;
    } symbols[] = {{"USD", "$"}, {"EUR", "€"}, {"GBP", "£"}, {"JPY", "¥"}, {"INR", "₹"}, {"KRW", "₩"}};
    for (const auto& [known, symbol] : symbols)
        if (code == QLatin1String(known))
            return QString::fromUtf8(symbol);
    // Another code as itself; what is no code is taken for USD, as set_display_currency does.
    return is_currency_code(code) ? code + QLatin1Char(' ') : QStringLiteral("$");
}

QString money(double amount, int decimals, const QString& code) {
    const QString number = QString::number(std::abs(amount), 'f', decimals);
    // No "-$0.00": a sign only on what shows as more than nothing.
    const bool negative = amount < 0 && number != QString::number(0.0, 'f', decimals);
    return (negative ? QStringLiteral("-") : QString()) + currency_symbol(code) + number;
}

} // namespace traindeck
