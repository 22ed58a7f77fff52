#pragma once
// The remote workers' connection lifecycle, without widgets: connecting, probing, trusting and letting go.
// - A new worker is first probed: opened without its token, which learns the server's key and sends nothing else.
//   Unless its CA file already vouches for it, trustNeeded() then asks whoever shows the question (BackendManager);
//   trust(name) connects with that key pinned, distrust(name) drops it with the token never sent.
// - The token goes into the keyring before it is first sent, so a worker is never left connected with a token the
//   console cannot find at its next start; the pin goes into the catalog once connected.
// - An SSH host (the "ssh" plugin) needs no trust question: ssh verified the host against the user's known_hosts.
//   addSsh() connects; a host without this build's worker stops there and installNeeded() shows what it has and the
//   exact install commands; addSsh(..., true) is the user's consent. The token the backend read over ssh goes into
//   the keyring before the host is kept in the catalog.
// - A cloud provider (the "cloud" plugin) is a provider file: addCloud() opens it (which reconciles the cloud's list
//   with the instance ledger, the catalog's, that the connector gives every backend) and keeps it in the catalog with
//   the file's path; there is no token (each instance's is read over ssh when it is reached).
// - restore() reconnects the workers the catalog has, with their pins and the keyring's tokens.
// - Destroying the connector disconnects them all: every backend is retired (its requests end, no task calls it
//   after) and deleted. A probe still under way then is deleted when it ends.
#include "backend.h"
#include "catalog.h"
#include "catalogledger.h"
#include "jobsync.h"

#include <QMap>
#include <QObject>
#include <QVariantMap>

#include <memory>
#include <vector>

namespace traindeck {

class BackendConnector : public QObject {
    Q_OBJECT
public:
    // worker_factory: the remote-worker plugin's, or nullptr when it is not installed (nothing can be added).
    BackendConnector(Catalog& catalog, CatalogWriter& writer, BackendFactory* worker_factory,
                     QObject* parent = nullptr);
    ~BackendConnector() override;

    bool canConnect() const { return factory_ != nullptr; }
    // The SSH-host plugin's factory (nullptr: SSH hosts can be neither added nor restored).
    void setSshFactory(BackendFactory* factory) { ssh_factory_ = factory; }
    bool canConnectSsh() const { return ssh_factory_ != nullptr; }
    // The cloud-provider plugin's factory (nullptr: providers can be neither added nor restored).
    void setCloudFactory(BackendFactory* factory) { cloud_factory_ = factory; }
    bool canConnectCloud() const { return cloud_factory_ != nullptr; }
    void restore();
    void add(const QString& name, const QString& url, const QString& token);
    // url: ssh_url() (sshurl.h); install: the user consented to the commands installNeeded() showed.
    void addSsh(const QString& name, const QString& url, bool install);
    // config: the provider file (backend/client/provider.h).
    void addCloud(const QString& name, const QString& config);
    // The answer to trustNeeded(name, ...).
    void trust(const QString& name);
    void distrust(const QString& name);
    // Forgets a backend the user added: its catalog row (refused while a provider still rents a live instance), then
    // its token in the keyring. It stays connected until the console closes (its runs, sweeps and uploads keep their
    // connection meanwhile) and is not connected again at the next start. removed(name, note) or failed(why) follows.
    void remove(const QString& name);

signals:
    // The worker at url presents this key; nothing but the probe has reached it yet.
    void trustNeeded(const QString& name, const QString& url, const QString& key);
    // The SSH host has no worker of this build: facts (one line) and the exact commands addSsh(name, url, true) runs.
    void installNeeded(const QString& name, const QString& url, const QString& facts, const QStringList& commands);
    // Connected and kept until the connector goes: the window shows it, its JobSync watches its jobs from now on.
    void connected(const QString& name, JobSync& sync, Backend& backend);
    void failed(const QString& message);
    // remove(name) done; note: what the keyring said when the token could not be removed, else "".
    void removed(const QString& name, const QString& note);

private:
    enum class Step {
        Restore,  // a stored worker: its pin from the catalog, its token from the keyring
        FirstUse, // a new worker: learn its key, ask the user
        Trusted,  // the user accepted the key: connect with it pinned, then store the worker
        SshAdd,   // a new SSH host: its token read over ssh goes to the keyring, then the host to the catalog
        CloudAdd, // a new provider: kept in the catalog with its file's path once it opened
    };
    void connectBackend(const QString& name, const QVariantMap& settings, Step step);
    void attach(const QString& name, Backend* backend);

    Catalog& catalog_;
    CatalogWriter& writer_;
    BackendFactory* factory_;
    BackendFactory* ssh_factory_ = nullptr;
    BackendFactory* cloud_factory_ = nullptr;
    CatalogInstanceLedger ledger_;              // what providers rent; outlives every backend (destroyed after them)
    QMap<QString, QVariantMap> awaiting_trust_; // name → settings (url, token, the key to pin) until trust/distrust
    std::vector<std::unique_ptr<JobSync>> syncs_;
    std::vector<Backend*> backends_;
};

} // namespace traindeck
