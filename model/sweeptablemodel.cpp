// SweepTableModel (sweeptablemodel.h): the trials of one worker answer, shown as they came.
#include "sweeptablemodel.h"
#include "money.h"

#include <QColor>
#include <QJsonDocument>
#include <QSet>

#include <cmath>

namespace traindeck {

namespace {

// A parameter's value as the table shows it: numbers short (0.002, not 0.0020000000000000000416), texts as they are,
// arrays and objects as compact JSON.
QString valueText(const QJsonValue& value) {
    if (value.isDouble())
        return QString::number(value.toDouble(), 'g', 6);
    if (value.isString())
        return value.toString();
    if (value.isBool())
        return value.toBool() ? QStringLiteral("true") : QStringLiteral("false");
    if (value.isArray())
        return QString::fromUtf8(QJsonDocument(value.toArray()).toJson(QJsonDocument::Compact));
    if (value.isObject())
        return QString::fromUtf8(QJsonDocument(value.toObject()).toJson(QJsonDocument::Compact));
    return QStringLiteral("–");
}

QString numberText(const QJsonValue& value) {
    return value.isDouble() && std::isfinite(value.toDouble()) ? QString::number(value.toDouble(), 'f', 4)
                                                               : QStringLiteral("–");
}

} // namespace

void SweepTableModel::setSweep(const QJsonObject& sweep) {
    const QJsonObject spec = sweep.value("spec").toObject();
    // The space's keys in its order, then any a trial has beyond them (a spec the console cannot read).
    QStringList keys = spec.value("space").toObject().keys();
    const QJsonArray trials = sweep.value("trials").toArray();
    for (const auto& trial : trials)
        for (const QString& key : trial.toObject().value("params").toObject().keys())
            if (!keys.contains(key))
                keys << key;
    const bool same = sweep.value("id") == sweep_.value("id") && keys == keys_ && trials.size() >= trials_.size();
    if (!same)
        beginResetModel();
    else if (trials.size() > trials_.size())
        beginInsertRows({}, static_cast<int>(trials_.size()), static_cast<int>(trials.size()) - 1);
    const bool inserted = same && trials.size() > trials_.size();
    sweep_ = sweep;
    trials_ = trials;
    keys_ = keys;
    rungs_ = sweep.value("rungs").toArray();
    metric_ = sweep.value("objective").toObject().value("metric").toString(QStringLiteral("objective"));
    resource_unit_ = spec.value("early_stopping").toObject().value("resource").toString("epochs");
    if (!same) {
        endResetModel();
        return;
    }
    if (inserted)
        endInsertRows();
    if (!trials_.isEmpty())
        emit dataChanged(index(0, 0), index(rowCount() - 1, columnCount() - 1));
}

int SweepTableModel::rowOfTrial(int trial) const {
    for (int row = 0; row < trials_.size(); ++row)
        if (trials_[row].toObject().value("trial").toInt() == trial)
            return row;
    return -1;
}

int SweepTableModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(trials_.size());
}

int SweepTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : spendColumn() + 1; }

QColor SweepTableModel::stateColour(const QString& state) {
    if (state == "running")
        return {0x1f, 0x6f, 0xd1};
    if (state == "completed")
        return {0x1e, 0x88, 0x3e};
    if (state == "diverged" || state == "failed")
        return {0xb3, 0x26, 0x1e};
    if (state == "pruned" || state == "stopped")
        return {0x70, 0x70, 0x70};
    return {0xa8, 0x6a, 0x00}; // paused, pausing, stopping: waiting on something
}

QVariant SweepTableModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= trials_.size())
        return {};
    const QJsonObject trial = trials_[index.row()].toObject();
    const int column = index.column();
    const QString state = trial.value("state").toString();
    switch (role) {
    case RemoteIdRole: {
        const qint64 job = trial.value("job").toInteger();
        return job > 0 ? QString::number(job) : QString();
    }
    case TrialRole:
        return trial.value("trial").toInt();
    case StateRole:
        return state;
    case Qt::ToolTipRole:
        if (column == State || column == Trial)
            return trial.value("reason").toString();
        if (column == Rung && !rungs_.isEmpty())
            return tr("Trains towards rung %1 of %2").arg(trial.value("rung").toInt()).arg(rungs_.size() - 1);
        return {};
    case Qt::ForegroundRole:
        return column == State ? QVariant(stateColour(state)) : QVariant();
    case Qt::TextAlignmentRole:
        return column == State || (column >= FixedCount && column < bestColumn())
                   ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
                   : QVariant(Qt::AlignRight | Qt::AlignVCenter);
    case SortRole:
    case Qt::DisplayRole:
        break;
    default:
        return {};
    }
    const bool sort = role == SortRole;
    if (column == Trial)
        return sort ? QVariant(trial.value("trial").toInt())
                    : QVariant(QStringLiteral("#%1").arg(trial.value("trial").toInt()));
    if (column == State)
        return state;
    if (column == Rung) {
        const int rung = trial.value("rung").toInt();
        if (sort)
            return rung;
        if (rungs_.isEmpty())
            return QStringLiteral("–");
        const double resource = rungs_.at(std::min<qsizetype>(rung, rungs_.size() - 1)).toDouble();
        const QString unit = resource == 1 && resource_unit_.endsWith('s') ? resource_unit_.chopped(1) : resource_unit_;
        return QStringLiteral("%1 (%2 %3)").arg(rung).arg(resource).arg(unit);
    }
    if (column < bestColumn()) {
        const QJsonValue value = trial.value("params").toObject().value(keys_[column - FixedCount]);
        if (sort && value.isDouble())
            return value.toDouble();
        return valueText(value);
    }
    const QJsonValue value = trial.value(column == bestColumn() ? "best" : column == lastColumn() ? "last" : "spend");
    if (sort)
        return value.isDouble() ? value.toDouble() : NAN;
    if (column == spendColumn())
        return money(value.toDouble(), 4);
    return numberText(value);
}

QVariant SweepTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal)
        return {};
    if (role == Qt::ToolTipRole && section >= bestColumn() && section < spendColumn())
        return tr("The objective, %1: the best value the trial reported, and its latest").arg(metric_);
    if (role != Qt::DisplayRole)
        return {};
    switch (section) {
    case Trial:
        return tr("Trial");
    case State:
        return tr("State");
    case Rung:
        return tr("Rung");
    default:
        break;
    }
    if (section < bestColumn())
        return keys_.value(section - FixedCount);
    if (section == bestColumn())
        return tr("best %1").arg(metric_);
    if (section == lastColumn())
        return tr("last %1").arg(metric_);
    return tr("Spend");
}

} // namespace traindeck
