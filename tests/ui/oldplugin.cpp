// A backend plugin built for an older interface (BackendFactory/2): the registry must refuse it by its metadata,
// without loading it as a factory of today's interface. Built only for console_test.cpp.
#include <QObject>
#include <QtPlugin>

class OldBackendPlugin : public QObject {
    Q_OBJECT
    Q_PLUGIN_METADATA(IID "org.traindeck.BackendFactory/2" FILE "oldplugin.json")
};

#include "oldplugin.moc"
