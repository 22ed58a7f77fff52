#pragma once
// A remote traindeck-worker over HTTPS with a bearer token. Its certificate is usually self-signed, so its public
// key is pinned on first use: open() without "pinned_public_key" (and without "ca_file") only learns the key — it
// sends no token and returns false — and exposes it as pinnedKey() (with keyNeedsTrust() true) for the console to
// show; once the user accepted it, open() with that pin connects, and
// only that key is accepted from then on. The token never reaches a server the user has not accepted.
// The token comes from the console, which keeps it in the system keyring, never in the catalog.
#include "workerbackend.h"

namespace traindeck {

class RemoteWorkerBackend : public WorkerBackend {
    Q_OBJECT
public:
    using WorkerBackend::WorkerBackend;
    // settings: "url" (https://host:port), "token", optional "pinned_public_key" (sha256//...), optional "ca_file".
    bool open(const QVariantMap& settings, QString* error) override;
};

class RemoteWorkerBackendFactory : public QObject, public BackendFactory {
    Q_OBJECT
    Q_PLUGIN_METADATA(IID TrainDeckBackendFactory_iid FILE "worker.json")
    Q_INTERFACES(traindeck::BackendFactory)
public:
    QString kind() const override { return QStringLiteral("worker"); }
    Backend* create(QObject* parent) override { return new RemoteWorkerBackend(parent); }
};

} // namespace traindeck
