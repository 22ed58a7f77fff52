#include "backendtablemodel.h"
#include "money.h"

#include <QColor>
#include <QJsonArray>

namespace traindeck {

void BackendTableModel::update(const QString& name, const QString& address, const QJsonObject& resources,
                               const QString& error) {
    for (int i = 0; i < rows_.size(); ++i) {
        if (rows_[i].name == name) {
            rows_[i] = {name, address, error, error.isEmpty() ? resources : rows_[i].resources};
            emit dataChanged(index(i, 0), index(i, ColumnCount - 1));
            return;
        }
    }
    beginInsertRows({}, rows_.size(), rows_.size());
    rows_.push_back({name, address, error, resources});
    endInsertRows();
}

int BackendTableModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : rows_.size(); }
int BackendTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant BackendTableModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rows_.size())
        return {};
    const Row& row = rows_[index.row()];
    const QJsonObject& r = row.resources;
    const QJsonArray gpus = r.value("gpus").toArray();
    if (role == Qt::ToolTipRole)
        return row.error.isEmpty() ? r.value("gpu_status").toString() : row.error;
    if (role == Qt::ForegroundRole && !row.error.isEmpty())
        return QColor(0xb3, 0x26, 0x1e);
    if (role != Qt::DisplayRole)
        return {};
    // A provider (backend/client/providerbackend.h) has what its live instances have, and its spend now.
    const bool provider = r.contains("instances");
    if (provider && index.column() >= Gpus) {
        switch (index.column()) {
        case Gpus:
            return r.value("gpu_count").toInt() > 0 ? tr("%1 rented").arg(r.value("gpu_count").toInt()) : tr("none");
        case Load:
            return tr("–");
        case Memory:
            return r.value("memory_mb").toDouble() > 0
                       ? tr("%1 GB rented").arg(r.value("memory_mb").toDouble() / 1024, 0, 'f', 1)
                       : tr("–");
        case Price:
            return r.value("max_spend_per_hour").toDouble() > 0
                       ? tr("%1 now, ceiling %2")
                             .arg(money(r.value("spend_per_hour").toDouble(), 2),
                                  money(r.value("max_spend_per_hour").toDouble(), 2))
                       : tr("%1 now").arg(money(r.value("spend_per_hour").toDouble(), 2));
        }
    }
    switch (index.column()) {
    case Name: return row.name;
    case Address: return row.error.isEmpty() ? row.address : tr("unreachable: %1").arg(row.error);
    case Cpus: return r.value("cpus").toInt();
    case Gpus: {
        if (gpus.isEmpty())
            return tr("none");
        QStringList cards;
        for (const auto& g : gpus) {
            const QJsonObject gpu = g.toObject();
            cards << tr("%1 %2 %, %3/%4 GB")
                         .arg(gpu.value("name").toString())
                         .arg(gpu.value("utilization").toDouble(), 0, 'f', 0)
                         .arg(gpu.value("memory_used_mb").toDouble() / 1024, 0, 'f', 1)
                         .arg(gpu.value("memory_total_mb").toDouble() / 1024, 0, 'f', 0);
        }
        return cards.join("; ");
    }
    case Load: return tr("%1 %").arg(r.value("host").toObject().value("cpu_percent").toDouble(), 0, 'f', 0);
    case Memory: {
        const QJsonObject host = r.value("host").toObject();
        return tr("%1 / %2 GB").arg(host.value("memory_used_mb").toDouble() / 1024, 0, 'f', 1)
            .arg(host.value("memory_total_mb").toDouble() / 1024, 0, 'f', 1);
    }
    case Price: {
        const QJsonObject prices = r.value("prices").toObject();
        // In the worker's own currency where it says one.
        const QString code = prices.value("currency").toString();
        const QString currency = is_currency_code(code) ? code : display_currency();
        return tr("%1 + %2/GPU")
            .arg(money(prices.value("base_per_hour").toDouble(), 2, currency),
                 money(prices.value("gpu_per_hour").toDouble(), 2, currency));
    }
    }
    return {};
}

QVariant BackendTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    static const char* names[] = {"Backend", "Address", "CPUs", "GPUs", "Load", "Memory", "Price/h"};
    return section < ColumnCount ? tr(names[section]) : QVariant();
}

} // namespace traindeck
