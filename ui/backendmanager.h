#pragma once
// Remote workers beyond the local one: the "Add remote worker" flow (trust on first use: show the server key's
// fingerprint, store the pin in the catalog and the token in the keyring) and reconnecting them at start-up.
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
    void addRemote(); // asks for name, URL and token, then connects

private:
    void connectBackend(const QString& name, const QVariantMap& settings, bool first_time);
    void attach(const QString& name, Backend* backend);

    Catalog& catalog_;
    CatalogWriter& writer_;
    BackendFactory* factory_;
    MainWindow& window_;
    std::vector<std::unique_ptr<JobSync>> syncs_;
    std::vector<Backend*> backends_;
};

} // namespace traindeck
