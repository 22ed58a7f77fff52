#pragma once
// Remote workers beyond the local one: the "Add remote worker" flow (trust on first use: learn the server's key
// without sending the token, show its fingerprint, and only once the user accepted it store the token in the
// keyring, connect with the key pinned and keep the pin in the catalog) and reconnecting them at start-up.
#include "backend.h"
#include "catalog.h"

#include <QObject>

#include <memory>
#include <vector>

namespace traindeck {

class JobSync;
class MainWindow;

class BackendManager : public QObject {
    Q_OBJECT
public:
    BackendManager(Catalog& catalog, CatalogWriter& writer, BackendFactory* worker_factory, MainWindow& window);
    ~BackendManager() override;

    void restore();   // reconnects the backends stored in the catalog (tokens from the keyring)
    void addRemote(); // asks for name, URL and token, then addRemote(name, url, token)
    // Learns the worker's key (no token sent), asks the user to trust it, then connects with it pinned.
    void addRemote(const QString& name, const QString& url, const QString& token);

private:
    enum class Step {
        Restore,  // a stored worker: its pin from the catalog, its token from the keyring
        FirstUse, // a new worker: learn its key, ask the user
        Trusted,  // the user accepted the key: connect with it pinned, then store the worker
    };
    void connectBackend(const QString& name, const QVariantMap& settings, Step step);
    void askTrust(const QString& name, const QVariantMap& settings, Backend* probe);
    void attach(const QString& name, Backend* backend);

    Catalog& catalog_;
    CatalogWriter& writer_;
    BackendFactory* factory_;
    MainWindow& window_;
    std::vector<std::unique_ptr<JobSync>> syncs_;
    std::vector<Backend*> backends_;
};

} // namespace traindeck
