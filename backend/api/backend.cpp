// Anchors the Backend meta-object (moc output) in this shared library.
#include "backend.h"

namespace traindeck {

namespace {
QString no_store() { return QStringLiteral("this backend keeps no code snapshots"); }
} // namespace

QByteArray Backend::codeManifest(const QString&, QString* error) {
    if (error)
        *error = no_store();
    return {};
}

QByteArray Backend::codeChunk(const QString&, QString* error) {
    if (error)
        *error = no_store();
    return {};
}

bool Backend::storeCode(const QByteArray&, const std::function<QByteArray(const QString&, QString*)>&, QString* error) {
    if (error)
        *error = no_store();
    return false;
}

} // namespace traindeck
