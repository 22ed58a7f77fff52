#pragma once
// How the console writes money. One currency for the whole console (Settings → Currency: an ISO 4217 code, USD
// unless chosen), written with its symbol where it has a common one ("$0.0123", "€1.20") and with its code where
// not ("CHF 3.00"). A backend that says its own currency (a worker's prices) is written in that one.
#include <QString>

namespace traindeck {

void set_display_currency(const QString& code); // an empty or malformed code means USD
QString display_currency();                     // "USD"
QString currency_symbol(const QString& code);   // "$", "€", "CHF "
// The amount with `decimals` decimals and the currency's symbol ("-$0.50"): the console's currency by default.
QString money(double amount, int decimals, const QString& code = display_currency());
// Whether `code` reads as a currency code: three letters A to Z.
bool is_currency_code(const QString& code);

} // namespace traindeck
