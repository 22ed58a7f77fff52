#pragma once
// The SSH-host plugin: a traindeck-worker on a machine reached with the user's own ssh (SshWorkerBackend, in
// traindeck_worker_backend so that the tests can drive it without the plugin loader).
#include "sshworkerbackend.h"

namespace traindeck {

class SshWorkerBackendFactory : public QObject, public BackendFactory {
    Q_OBJECT
    Q_PLUGIN_METADATA(IID TrainDeckBackendFactory_iid FILE "ssh.json")
    Q_INTERFACES(traindeck::BackendFactory)
public:
    QString kind() const override { return QStringLiteral("ssh"); }
    Backend* create(QObject* parent) override { return new SshWorkerBackend(parent); }
};

} // namespace traindeck
