#pragma once
// The backends panel: one row per connected worker with its address, CPUs, GPUs (utilisation and memory, or why
// there are none), host load and price. The window feeds it what each backend's /v1/resources returns.
#include <QAbstractTableModel>
#include <QJsonObject>
#include <QVector>

namespace traindeck {

class BackendTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Name, Address, Cpus, Gpus, Load, Memory, Price, ColumnCount };
    using QAbstractTableModel::QAbstractTableModel;

    // Adds the backend or updates its row; error non-empty marks it unreachable.
    void update(const QString& name, const QString& address, const QJsonObject& resources, const QString& error);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

private:
    struct Row {
        QString name, address, error;
        QJsonObject resources;
    };
    QVector<Row> rows_;
};

} // namespace traindeck
