// SweepListModel (sweeplistmodel.h).
#include "sweeplistmodel.h"

#include "sweeptablemodel.h"
#include "money.h"

#include <QColor>
#include <QJsonArray>

#include <algorithm>

namespace traindeck {

void SweepListModel::setSweeps(const QString& backend, const QJsonObject& answer) {
    QVector<Row> rows;
    for (const Row& row : rows_)
        if (row.backend != backend)
            rows.push_back(row);
    for (const auto& sweep : answer.value("sweeps").toArray())
        if (sweep.toObject().value("id").toInteger() > 0)
            rows.push_back({backend, sweep.toObject()});
    // Newest first: the sweep just started is the one looked for.
    std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
        return a.sweep.value("created").toDouble() > b.sweep.value("created").toDouble();
    });
    const bool same = rows.size() == rows_.size() &&
                      std::equal(rows.begin(), rows.end(), rows_.begin(), [](const Row& a, const Row& b) {
                          return a.backend == b.backend && a.sweep.value("id") == b.sweep.value("id");
                      });
    if (!same) {
        beginResetModel();
        rows_ = std::move(rows);
        endResetModel();
        return;
    }
    rows_ = std::move(rows);
    if (!rows_.isEmpty())
        emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
}

int SweepListModel::rowOf(const QString& backend, qint64 id) const {
    for (int row = 0; row < rows_.size(); ++row)
        if (rows_[row].backend == backend && rows_[row].sweep.value("id").toInteger() == id)
            return row;
    return -1;
}

QJsonObject SweepListModel::sweepAt(int row) const {
    return row >= 0 && row < rows_.size() ? rows_[row].sweep : QJsonObject();
}

int SweepListModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int SweepListModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QString SweepListModel::money(double amount) { return traindeck::money(amount, 4); }

QVariant SweepListModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rows_.size())
        return {};
    const Row& row = rows_[index.row()];
    const QJsonObject& sweep = row.sweep;
    switch (role) {
    case IdRole:
        return sweep.value("id").toInteger();
    case BackendRole:
        return row.backend;
    case SweepRole:
        return sweep;
    case Qt::ToolTipRole:
        return index.column() == State || index.column() == Name ? sweep.value("reason").toString() : QVariant();
    case Qt::ForegroundRole:
        if (index.column() != State)
            return {};
        // A finished sweep reads as done, as a completed trial does; one stopped at its budget as one held.
        return SweepTableModel::stateColour(sweep.value("state").toString() == "finished" ? QStringLiteral("completed")
                                            : sweep.value("state").toString() == "budget"
                                                ? QStringLiteral("paused")
                                                : sweep.value("state").toString());
    case Qt::DisplayRole:
        break;
    default:
        return {};
    }
    switch (index.column()) {
    case Name:
        return QStringLiteral("#%1 %2").arg(sweep.value("id").toInteger()).arg(sweep.value("name").toString());
    case Backend:
        return row.backend;
    case State:
        return sweep.value("state").toString();
    case Trials: {
        const int max = sweep.value("max_trials").toInt();
        const int started = sweep.value("trials_count").toInt();
        return max > 0 ? QStringLiteral("%1 / %2").arg(started).arg(max) : QString::number(started);
    }
    case Best: {
        const QJsonObject best = sweep.value("best").toObject();
        if (best.isEmpty())
            return QStringLiteral("–");
        return QStringLiteral("%1 (#%2)")
            .arg(best.value("best").toDouble(), 0, 'f', 4)
            .arg(best.value("trial").toInt());
    }
    case Spend: {
        const double budget = sweep.value("budget").toDouble();
        const QString spent = money(sweep.value("spend").toDouble());
        return budget > 0 ? tr("%1 of %2").arg(spent, money(budget)) : tr("%1 (no cap)").arg(spent);
    }
    default:
        return {};
    }
}

QVariant SweepListModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case Name:
        return tr("Sweep");
    case Backend:
        return tr("Backend");
    case State:
        return tr("State");
    case Trials:
        return tr("Trials");
    case Best:
        return tr("Best");
    case Spend:
        return tr("Spend");
    default:
        return {};
    }
}

} // namespace traindeck
