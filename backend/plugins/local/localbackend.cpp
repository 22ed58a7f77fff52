#include "localbackend.h"

#include <QStandardPaths>

namespace traindeck {

bool LocalBackend::open(const QVariantMap& settings, QString* error) {
    // "args": more of the worker's command line when it is started here (the console's Settings: prices, idle policy).
    return start_or_attach(settings,
                           QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation) + "/traindeck/worker",
                           settings.value("args").toStringList(), tr("local worker"), error);
}

} // namespace traindeck
