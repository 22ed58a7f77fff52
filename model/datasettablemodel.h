#pragma once
// The datasets table: one row per registered dataset version, newest first (name, short version, files, size,
// format, when, which backends hold it). refresh() re-reads; the catalog has few versions, so all rows load.
#include "catalog.h"

#include <QAbstractTableModel>
#include <QVector>

namespace traindeck {

class DatasetTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Name, Version, Files, Size, Format, Registered, UploadedTo, ColumnCount };
    enum Role { VersionRole = Qt::UserRole + 1, RootRole, NameRole, SummaryRole };

    explicit DatasetTableModel(const QString& catalog_path, QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;
    int rowOfVersion(const QString& version) const; // -1 when absent

public slots:
    void refresh();

private:
    struct Row {
        QString name, version, root, format, summary;
        qint64 files = 0, bytes = 0;
        double created = 0;
        QStringList backends;
    };
    Catalog catalog_;
    QVector<Row> rows_;
};

QString formatBytes(qint64 bytes);

} // namespace traindeck
