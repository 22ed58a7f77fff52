#pragma once
// The local backend: finds the traindeck-worker of this user on this machine (its state folder holds the port
// and token) or starts one, detached so that jobs outlive the console. The user never starts it by hand.
#include "workerbackend.h"

#include <QObject>

namespace traindeck {

class LocalBackend : public WorkerBackend {
    Q_OBJECT
public:
    using WorkerBackend::WorkerBackend;
    // settings: "state_dir" (default $XDG_DATA_HOME/traindeck/worker), "worker_binary" (default: next to the app).
    bool open(const QVariantMap& settings, QString* error) override;
};

class LocalBackendFactory : public QObject, public BackendFactory {
    Q_OBJECT
    Q_PLUGIN_METADATA(IID TrainDeckBackendFactory_iid FILE "local.json")
    Q_INTERFACES(traindeck::BackendFactory)
public:
    QString kind() const override { return QStringLiteral("local"); }
    Backend* create(QObject* parent) override { return new LocalBackend(parent); }
};

} // namespace traindeck
