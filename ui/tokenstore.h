#pragma once
// Bearer tokens of remote workers live in the system keyring (QtKeychain: Secret Service, KWallet), under the
// service "TrainDeck" and the backend's name — never in the catalog, never in a plain file. Without a keyring
// the calls fail with a message that says how to get one; there is deliberately no plaintext fallback.
#include <QObject>
#include <QString>

namespace traindeck {

class TokenStore {
public:
    static constexpr const char* kService = "TrainDeck";
    // Blocking (a local D-Bus round trip, milliseconds); returns false and sets error on failure.
    static bool save(const QString& backend, const QString& token, QString* error);
    static bool load(const QString& backend, QString* token, QString* error);
    static bool remove(const QString& backend, QString* error); // true when there was none to remove
};

} // namespace traindeck
