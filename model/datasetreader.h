#pragma once
// Read-only queries on dataset versions through a connection of its own, for work off the GUI thread (a preview,
// a diff, an upload): made, used and dropped on one thread. Manifests hold one entry per file and per 4 MiB chunk,
// megabytes for a large set, so the GUI thread never reads them. Errors are values: a damaged catalog gives "" and
// error(), never an exception.
#include "catalog.h"

#include <QByteArray>
#include <QString>

namespace traindeck {

class DatasetReader {
public:
    explicit DatasetReader(const QString& catalog_path);

    // The manifest JSON of a version ("" when absent or unreadable).
    QByteArray manifest(const QString& version);
    // The newest version of a dataset name before `version` ("" if none).
    QString previousVersion(const QString& name, const QString& version);
    QString error() const { return error_; } // the last failure, "" when none

private:
    Catalog catalog_;
    QString error_;
};

} // namespace traindeck
