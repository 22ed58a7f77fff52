#pragma once
// Remote workers beyond the local one, as the user sees them: the "Add remote worker" dialog (name, address,
// token), the "Add cloud provider" dialog (name, provider file), the "Add SSH host" dialog and its install question
// (what the host has, the exact commands), the trust-on-first-use question (the server's key, to compare with the
// fingerprint printed on that machine) and the window's alerts. What happens to the connections — probing, pinning, the
// keyring, the catalog, reconnecting at start-up, letting go — is BackendConnector's.
#include "backendconnector.h"
#include "catalog.h"

#include <QObject>

namespace traindeck {

class MainWindow;

class BackendManager : public QObject {
    Q_OBJECT
public:
    // ssh_factory, cloud_factory: the SSH-host and cloud-provider plugins' (nullptr: their "Add …" says the plugin
    // is missing).
    BackendManager(Catalog& catalog, CatalogWriter& writer, BackendFactory* worker_factory, MainWindow& window,
                   BackendFactory* ssh_factory = nullptr, BackendFactory* cloud_factory = nullptr);
    ~BackendManager() override;

    void restore();   // reconnects the backends stored in the catalog (tokens from the keyring)
    void addRemote(); // asks for name, URL and token, then addRemote(name, url, token)
    // Learns the worker's key (no token sent), asks the user to trust it, then connects with it pinned.
    void addRemote(const QString& name, const QString& url, const QString& token);
    // "Add SSH host…": a name, a host from ~/.ssh/config (read off the GUI thread) or user@host[:port], optionally
    // an ssh config file and the worker's folder there; then addSsh(name, url).
    void addSshHost();
    void addSsh(const QString& name, const QString& url);
    // "Add cloud provider…": a name and a provider file (backend/client/provider.h); then addCloud(name, file).
    void addCloudProvider();
    void addCloud(const QString& name, const QString& file);
    // Remove backend…: asks, then remove(name) (BackendConnector::remove: the catalog row, then the keyring's token).
    void askRemove(const QString& name);
    void remove(const QString& name);

private:
    // Whether a new backend may take `name` (typed, spaces around it dropped): not empty, and no backend connected in
    // this session has it, a removed one included (it stays connected until the console closes).
    bool nameFree(const QString& name) const;

    void askTrust(const QString& name, const QString& url, const QString& key);
    void askInstall(const QString& name, const QString& url, const QString& facts, const QStringList& commands);

    MainWindow& window_;
    BackendConnector connector_;
};

} // namespace traindeck
