#pragma once
// One sweep's trials as a table: the trial's number, its state (the worker's reason as the tooltip), the ASHA rung
// it trains towards, a column per parameter of the space, the objective's best and last value, and its spend. Fed
// the worker's answer for one sweep (GET /v1/sweeps/ID, as SweepSync keeps it); it reads nothing itself. A new
// answer for the same sweep with the same parameters updates the rows in place (the selection and the scroll
// stay); another sweep resets the model.
#include <QAbstractTableModel>
#include <QJsonArray>
#include <QJsonObject>
#include <QStringList>

namespace traindeck {

class SweepTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Fixed { Trial, State, Rung, FixedCount }; // then the parameters, then Best, Last, Spend
    enum Role { SortRole = Qt::UserRole + 1, RemoteIdRole, TrialRole, StateRole };
    using QAbstractTableModel::QAbstractTableModel;

    void setSweep(const QJsonObject& sweep);
    const QJsonObject& sweep() const { return sweep_; }
    QStringList paramKeys() const { return keys_; }
    int bestColumn() const { return FixedCount + static_cast<int>(keys_.size()); }
    int lastColumn() const { return bestColumn() + 1; }
    int spendColumn() const { return bestColumn() + 2; }
    int rowOfTrial(int trial) const; // -1 when there is no such trial

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

    // A state's colour in the table (and the view's legend): running blue, completed green, pruned and stopped
    // grey, diverged and failed red, paused and the passing states amber.
    static QColor stateColour(const QString& state);

private:
    QJsonObject sweep_;
    QJsonArray trials_;
    QStringList keys_;
    QJsonArray rungs_;
    QString metric_, resource_unit_;
};

} // namespace traindeck
