// BackendConnector (backendconnector.h): the token leaves the console only towards a key the user accepted. Opening
// a backend runs on the network pool; everything else here on the GUI thread.
#include "backendconnector.h"

#include "background.h"
#include "backendref.h"
#include "jobsync.h"
#include "tokenstore.h"

#include <QPointer>

namespace traindeck {

BackendConnector::BackendConnector(Catalog& catalog, CatalogWriter& writer, BackendFactory* worker_factory,
                                   QObject* parent)
    : QObject(parent), catalog_(catalog), writer_(writer), factory_(worker_factory), ledger_(writer) {}

BackendConnector::~BackendConnector() {
    syncs_.clear();
    for (Backend* backend : backends_) {
        BackendRef::retire(backend); // its requests end; no task calls it after this
        delete backend;
    }
}

void BackendConnector::restore() {
    QPointer<BackendConnector> self(this);
    writer_.post([self](Catalog& catalog) {
        const auto rows = catalog.backends();
        QMetaObject::invokeMethod(
            self,
            [self, rows] {
                if (!self)
                    return;
                for (const auto& row : rows) {
                    const QString name = QString::fromStdString(row.name);
                    if (row.kind == "cloud") {
                        self->connectBackend(
                            name, {{"kind", "cloud"}, {"config", QString::fromStdString(row.url)}, {"name", name}},
                            Step::Restore);
                        continue;
                    }
                    if (row.kind != "worker" && row.kind != "ssh")
                        continue;
                    QString token, error;
                    if (!TokenStore::load(name, &token, &error)) {
                        emit self->failed(tr("Worker “%1” not connected: %2").arg(name, error));
                        continue;
                    }
                    self->connectBackend(name,
                                         {{"kind", QString::fromStdString(row.kind)},
                                          {"url", QString::fromStdString(row.url)},
                                          {"token", token},
                                          {"pinned_public_key", QString::fromStdString(row.pinned_public_key)}},
                                         Step::Restore);
                }
            },
            Qt::QueuedConnection);
    });
}

void BackendConnector::remove(const QString& name) {
    // What the writer's closure found, kept for when its transaction is committed: a closure runs again when its
    // batch is retried, and nothing leaves the keyring, nor is the user told, before the row's removal is on disk.
    struct Outcome {
        std::string kind;
        int live = 0;
        bool removed = false;
    };
    auto outcome = std::make_shared<Outcome>();
    writer_.post([outcome, name](Catalog& catalog) {
        *outcome = {};
        for (const Catalog::BackendRow& row : catalog.backends())
            if (row.name == name.toStdString())
                outcome->kind = row.kind;
        outcome->removed = catalog.remove_backend(name.toStdString(), &outcome->live);
    });
    QPointer<BackendConnector> self(this);
    run_in_background(
        this, [&writer = writer_] { return writer.flush(); },
        [self, name, outcome](const std::string& error) {
            if (!error.empty()) {
                emit self->failed(tr("“%1” not removed: the catalog could not be written (%2)")
                                      .arg(name, QString::fromStdString(error)));
                return;
            }
            if (!outcome->removed) {
                emit self->failed(tr("“%1” not removed: it still rents %n instance(s); release them first "
                                     "(Rented instances, Release now)",
                                     nullptr, outcome->live)
                                      .arg(name));
                return;
            }
            // A provider has no token; a worker's or an SSH host's leaves the keyring (whose call runs an event loop:
            // the connector may be gone after it).
            QString keyring_error;
            const bool kept = outcome->kind != "cloud" && !TokenStore::remove(name, &keyring_error);
            if (!self)
                return;
            emit self->removed(name, !kept                     ? QString()
                                     : keyring_error.isEmpty() ? tr("the keyring did not say why")
                                                               : keyring_error);
        });
}

void BackendConnector::add(const QString& name, const QString& url, const QString& token) {
    connectBackend(name, {{"url", url}, {"token", token}}, Step::FirstUse);
}

void BackendConnector::addSsh(const QString& name, const QString& url, bool install) {
    connectBackend(name, {{"kind", "ssh"}, {"url", url}, {"install", install}}, Step::SshAdd);
}

void BackendConnector::addCloud(const QString& name, const QString& config) {
    connectBackend(name, {{"kind", "cloud"}, {"config", config}, {"name", name}}, Step::CloudAdd);
}

void BackendConnector::connectBackend(const QString& name, const QVariantMap& settings, Step step) {
    const bool ssh = settings.value("kind").toString() == "ssh";
    const bool cloud = settings.value("kind").toString() == "cloud";
    BackendFactory* factory = ssh ? ssh_factory_ : cloud ? cloud_factory_ : factory_;
    if (!factory) {
        emit failed(ssh     ? tr("SSH host “%1” not connected: the SSH-host plugin is not installed").arg(name)
                    : cloud ? tr("Provider “%1” not connected: the cloud-provider plugin is not installed").arg(name)
                            : tr("The remote-worker plugin is not installed"));
        return;
    }
    Backend* backend = factory->create(nullptr); // made here: it lives on the GUI thread, only open() runs on the pool
    backend->setInstanceLedger(&ledger_);
    struct Opened {
        bool ok = false;
        QString error;
    };
    run_in_background(
        this,
        [backend, settings] {
            Opened opened;
            opened.ok = backend->open(settings, &opened.error);
            return opened;
        },
        [this, backend, settings, name, step, ssh, cloud](const Opened& opened) {
            if (!opened.ok && step == Step::FirstUse && backend->keyNeedsTrust()) {
                QVariantMap pinned = settings;
                // From now on only this key: a different server is refused before the token goes.
                pinned["pinned_public_key"] = backend->pinnedKey();
                delete backend; // it learned the key and sent nothing else
                awaiting_trust_[name] = pinned;
                emit trustNeeded(name, pinned.value("url").toString(), pinned.value("pinned_public_key").toString());
                return;
            }
            if (!opened.ok && step == Step::SshAdd && !backend->installPlan().isEmpty()) {
                const QString facts = backend->hostFacts();
                const QStringList commands = backend->installPlan();
                delete backend; // it only looked: nothing was copied or started
                emit installNeeded(name, settings.value("url").toString(), facts, commands);
                return;
            }
            if (!opened.ok) {
                emit failed((ssh     ? tr("Cannot connect to SSH host “%1”: %2")
                             : cloud ? tr("Cannot open provider “%1”: %2")
                                     : tr("Cannot connect to worker “%1”: %2"))
                                .arg(name, opened.error));
                delete backend;
                return;
            }
            if (step == Step::CloudAdd) {
                Catalog::BackendRow row{
                    name.toStdString(), "cloud", settings.value("config").toString().toStdString(), {}};
                writer_.post([row](Catalog& catalog) { catalog.add_backend(row); });
            } else if (step == Step::SshAdd) {
                // The token ssh read on the host goes to the keyring before the host is kept: a restart finds both.
                QString keyring_error;
                if (!TokenStore::save(name, backend->learnedToken(), &keyring_error)) {
                    emit failed(tr("SSH host “%1” not added: %2").arg(name, keyring_error));
                    delete backend;
                    return;
                }
                Catalog::BackendRow row{name.toStdString(), "ssh", settings.value("url").toString().toStdString(), {}};
                writer_.post([row](Catalog& catalog) { catalog.add_backend(row); });
            } else if (step != Step::Restore) {
                // Trusted now (or through its CA file): remember it, its pin in the catalog, its token in the keyring.
                if (step == Step::FirstUse) {
                    QString keyring_error;
                    if (!TokenStore::save(name, settings.value("token").toString(), &keyring_error)) {
                        emit failed(tr("Worker “%1” not added: %2").arg(name, keyring_error));
                        delete backend;
                        return;
                    }
                }
                Catalog::BackendRow row{name.toStdString(), "worker", settings.value("url").toString().toStdString(),
                                        backend->pinnedKey().toStdString()};
                writer_.post([row](Catalog& catalog) { catalog.add_backend(row); });
            }
            attach(name, backend);
        },
        [backend](Opened&&) {
            delete backend; // the connector went while the probe ran: nobody else holds it
        });
}

void BackendConnector::trust(const QString& name) {
    if (!awaiting_trust_.contains(name))
        return;
    const QVariantMap pinned = awaiting_trust_.take(name);
    // The token is kept before it is first sent: a worker is never left connected with a token the console
    // cannot find again at its next start.
    QString keyring_error;
    if (!TokenStore::save(name, pinned.value("token").toString(), &keyring_error)) {
        emit failed(tr("Worker “%1” not added: %2").arg(name, keyring_error));
        return;
    }
    connectBackend(name, pinned, Step::Trusted);
}

void BackendConnector::distrust(const QString& name) {
    if (awaiting_trust_.remove(name))
        emit failed(tr("Worker “%1” not added: its key was not trusted, and its token was not sent").arg(name));
}

void BackendConnector::attach(const QString& name, Backend* backend) {
    backends_.push_back(backend);
    syncs_.push_back(std::make_unique<JobSync>(catalog_, writer_, *backend, name));
    emit connected(name, *syncs_.back(), *backend);
    syncs_.back()->resumeWatching();
}

} // namespace traindeck
