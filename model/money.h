#pragma once
// How the console writes money: with the currency's symbol where it has a common one ("$0.0123", "€1.20") and with
// its code where not ("CHF 3.00"). What a backend charged is in the currency the backend says it charges in (a
// worker's prices carry it); anything else (a provider's prices, amounts typed in) in the console's own (Settings →
// Currency: an ISO 4217 code, USD unless chosen). Amounts are never converted.
#include <QString>

namespace traindeck {

void set_display_currency(const QString& code); // an empty or malformed code means USD
QString display_currency();                     // "USD"
QString currency_symbol(const QString& code);   // "$", "€", "CHF "
// The amount with `decimals` decimals and the currency's symbol ("-$0.50"): the console's currency by default.
QString money(double amount, int decimals, const QString& code = display_currency());
// The currency `backend` charges in, as its resources said (set_backend_currency); the console's until it said one.
void set_backend_currency(const QString& backend, const QString& code);
QString backend_currency(const QString& backend);
// Whether `code` reads as a currency code: three letters A to Z.
bool is_currency_code(const QString& code);

} // namespace traindeck
