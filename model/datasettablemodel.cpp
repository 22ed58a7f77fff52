#include "datasettablemodel.h"

#include <QDateTime>

namespace traindeck {

QString formatBytes(qint64 bytes) {
    const char* units[] = {"B", "KB", "MB", "GB", "TB"};
    double value = static_cast<double>(bytes);
    int unit = 0;
    while (value >= 1000 && unit < 4) {
        value /= 1000;
        ++unit;
    }
    return unit == 0 ? QString("%1 B").arg(bytes) : QString("%1 %2").arg(value, 0, 'f', value < 10 ? 2 : 1).arg(units[unit]);
}

DatasetTableModel::DatasetTableModel(const QString& catalog_path, QObject* parent) : QAbstractTableModel(parent) {
    catalog_.open(catalog_path.toStdString(), true);
    refresh();
}

void DatasetTableModel::refresh() {
    QVector<Row> rows;
    try {
        Statement select = catalog_.db().prepare(
            "SELECT d.name, v.hash, v.root, v.format, v.summary, v.files, v.bytes, v.created, "
            "(SELECT group_concat(backend, ', ') FROM dataset_uploads u WHERE u.version=v.hash) "
            "FROM dataset_versions v JOIN datasets d ON d.id=v.dataset ORDER BY v.id DESC");
        while (select.step())
            rows.push_back({QString::fromStdString(select.text(0)), QString::fromStdString(select.text(1)),
                            QString::fromStdString(select.text(2)), QString::fromStdString(select.text(3)),
                            QString::fromStdString(select.text(4)), select.integer(5), select.integer(6), select.real(7),
                            select.is_null(8) ? QStringList() : QString::fromStdString(select.text(8)).split(", ")});
    } catch (const std::exception&) {
        return; // a catalog being migrated by the writer: the next refresh reads it
    }
    beginResetModel();
    rows_ = std::move(rows);
    endResetModel();
}

int DatasetTableModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : rows_.size(); }
int DatasetTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

int DatasetTableModel::rowOfVersion(const QString& version) const {
    for (int i = 0; i < rows_.size(); ++i)
        if (rows_[i].version == version)
            return i;
    return -1;
}

QVariant DatasetTableModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rows_.size())
        return {};
    const Row& row = rows_[index.row()];
    switch (role) {
    case VersionRole: return row.version;
    case RootRole: return row.root;
    case NameRole: return row.name;
    case SummaryRole: return row.summary;
    case Qt::ToolTipRole: return tr("%1\nversion %2\nfrom %3").arg(row.summary, row.version, row.root);
    case Qt::TextAlignmentRole:
        return index.column() == Files || index.column() == Size ? QVariant(Qt::AlignRight | Qt::AlignVCenter) : QVariant();
    case Qt::DisplayRole:
        switch (index.column()) {
        case Name: return row.name;
        case Version: return row.version.left(12);
        case Files: return row.files;
        case Size: return formatBytes(row.bytes);
        case Format: return row.format;
        case Registered: return QDateTime::fromSecsSinceEpoch(static_cast<qint64>(row.created)).toString("yyyy-MM-dd hh:mm");
        case UploadedTo: return row.backends.isEmpty() ? tr("—") : row.backends.join(", ");
        }
    }
    return {};
}

QVariant DatasetTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    static const char* names[] = {"Dataset", "Version", "Files", "Size", "Format", "Registered", "On backends"};
    return tr(names[section]);
}

} // namespace traindeck
