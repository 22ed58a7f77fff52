#pragma once
// The sweeps of every connected backend, a row each: its name, backend, state, trials started against its maximum,
// the best objective value (and which trial has it) and its spend against its budget. Fed each backend's answer to
// GET /v1/sweeps (SweepSync keeps them); it reads nothing itself. A sweep is named by its backend and its id there.
// New answers with the same sweeps update the rows in place (the selection stays).
#include <QAbstractTableModel>
#include <QJsonObject>
#include <QVector>

namespace traindeck {

class SweepListModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Name, Backend, State, Trials, Best, Spend, ColumnCount };
    enum Role { IdRole = Qt::UserRole + 1, BackendRole, SweepRole };
    using QAbstractTableModel::QAbstractTableModel;

    // The sweeps `backend` has now ({"sweeps": [...]}); its rows are replaced, the other backends' stay.
    void setSweeps(const QString& backend, const QJsonObject& answer);
    int rowOf(const QString& backend, qint64 id) const; // -1 when there is no such sweep
    QJsonObject sweepAt(int row) const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

    // Money as the console shows it ($0.0123): four decimals, as a sweep of small CPU trials spends fractions of a
    // cent.
    static QString money(double amount);

private:
    struct Row {
        QString backend;
        QJsonObject sweep;
    };
    QVector<Row> rows_;
};

} // namespace traindeck
