#include "localbackend.h"

#include <QStandardPaths>

namespace traindeck {

bool LocalBackend::open(const QVariantMap& settings, QString* error) {
    return start_or_attach(settings, QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation) + "/traindeck/worker",
                           {}, tr("local worker"), error);
}

} // namespace traindeck
