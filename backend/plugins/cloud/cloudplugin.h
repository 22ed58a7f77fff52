#pragma once
// The cloud-provider plugin: instances rented, used and released through a provider file's commands
// (ProviderBackend, in traindeck_worker_backend so that the tests can drive it without the plugin loader).
#include "providerbackend.h"

namespace traindeck {

class ProviderBackendFactory : public QObject, public BackendFactory {
    Q_OBJECT
    Q_PLUGIN_METADATA(IID TrainDeckBackendFactory_iid FILE "cloud.json")
    Q_INTERFACES(traindeck::BackendFactory)
public:
    QString kind() const override { return QStringLiteral("cloud"); }
    Backend* create(QObject* parent) override { return new ProviderBackend(parent); }
};

} // namespace traindeck
