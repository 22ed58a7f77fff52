// DatasetReader (datasetreader.h): the same two queries DatasetTableModel makes, on a connection of the caller's thread.
#include "datasetreader.h"

namespace traindeck {

DatasetReader::DatasetReader(const QString& catalog_path) {
    error_ = QString::fromStdString(catalog_.open(catalog_path.toStdString(), true));
}

QByteArray DatasetReader::manifest(const QString& version) {
    if (!catalog_.db().handle())
        return {};
    try {
        Statement select = catalog_.db().prepare("SELECT manifest FROM dataset_versions WHERE hash=?");
        select.bind(1, version.toStdString());
        if (select.step())
            return QByteArray::fromStdString(select.text(0));
        error_ = QStringLiteral("version %1 is not in the catalog").arg(version.left(12));
    } catch (const std::exception& e) {
        error_ = QStringLiteral("the catalog could not be read (%1)").arg(e.what());
    }
    return {};
}

QString DatasetReader::previousVersion(const QString& name, const QString& version) {
    if (!catalog_.db().handle())
        return {};
    try {
        Statement select = catalog_.db().prepare(
            "SELECT v.hash FROM dataset_versions v JOIN datasets d ON d.id=v.dataset WHERE d.name=? AND v.id < "
            "(SELECT id FROM dataset_versions WHERE hash=?) ORDER BY v.id DESC LIMIT 1");
        select.bind(1, name.toStdString()).bind(2, version.toStdString());
        return select.step() ? QString::fromStdString(select.text(0)) : QString();
    } catch (const std::exception& e) {
        error_ = QStringLiteral("the catalog could not be read (%1)").arg(e.what());
        return {};
    }
}

} // namespace traindeck
