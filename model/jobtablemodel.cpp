// JobTableModel and CatalogReader (jobtablemodel.h): read-only queries, each guarded, on the GUI thread's own
// connection (WAL: a reader never waits for the writer).
#include "jobtablemodel.h"

#include "jobstate.h"

#include <QColor>
#include <QDateTime>

#include <chrono>
#include <cmath>

namespace traindeck {

namespace {
double now_seconds() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

QString duration_text(double seconds) {
    if (seconds <= 0 || !std::isfinite(seconds))
        return QStringLiteral("–");
    const qint64 s = static_cast<qint64>(seconds);
    if (s < 3600)
        return QStringLiteral("%1:%2").arg(s / 60).arg(s % 60, 2, 10, QLatin1Char('0'));
    return QStringLiteral("%1h %2m").arg(s / 3600).arg((s % 3600) / 60, 2, 10, QLatin1Char('0'));
}
} // namespace

JobTableModel::JobTableModel(const QString& catalog_path, QObject* parent) : QAbstractTableModel(parent) {
    error_ = QString::fromStdString(catalog_.open(catalog_path.toStdString(), true));
    if (error_.isEmpty()) {
        try {
            Statement count = catalog_.db().prepare("SELECT COUNT(*) FROM jobs");
            total_ = count.step() ? count.integer(0) : 0;
        } catch (const std::exception& e) {
            read_error_ = QString::fromUtf8(e.what());
        }
    }
}

QVector<JobTableModel::Row> JobTableModel::load(qint64 below_id, int limit, qint64 from_id) {
    QVector<Row> rows;
    if (!error_.isEmpty())
        return rows;
    try {
        Statement select = catalog_.db().prepare(
            "SELECT id, name, state, reason, backend, remote_id, progress, loss, accuracy, spend, created, started, finished "
            "FROM jobs WHERE id < ? AND id >= ? ORDER BY id DESC LIMIT ?");
        select.bind(1, static_cast<int64_t>(below_id)).bind(2, static_cast<int64_t>(from_id)).bind(3, static_cast<int64_t>(limit));
        while (select.step()) {
            Row r;
            r.id = select.integer(0);
            r.name = QString::fromStdString(select.text(1));
            r.ended = is_finished(select.text(2));
            r.state = QString::fromStdString(select.text(2));
            r.reason = QString::fromStdString(select.text(3));
            r.backend = QString::fromStdString(select.text(4));
            r.remote_id = QString::fromStdString(select.text(5));
            r.progress = select.real(6);
            r.loss = select.is_null(7) ? qQNaN() : select.real(7);
            r.accuracy = select.is_null(8) ? qQNaN() : select.real(8);
            r.spend = select.real(9);
            r.created = select.real(10);
            r.started = select.real(11);
            r.finished = select.real(12);
            rows.push_back(r);
        }
    } catch (const std::exception& e) {
        read_error_ = QString::fromUtf8(e.what());
        return {};
    }
    return rows;
}

int JobTableModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : rows_.size(); }
int JobTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

bool JobTableModel::canFetchMore(const QModelIndex& parent) const { return !parent.isValid() && rows_.size() < total_; }

void JobTableModel::fetchMore(const QModelIndex& parent) {
    if (parent.isValid())
        return;
    const qint64 below = rows_.isEmpty() ? std::numeric_limits<qint64>::max() : rows_.back().id;
    const QVector<Row> more = load(below, kPage);
    if (more.isEmpty())
        return;
    beginInsertRows({}, rows_.size(), rows_.size() + more.size() - 1);
    rows_ += more;
    endInsertRows();
}

void JobTableModel::refresh() {
    if (!error_.isEmpty())
        return;
    qint64 newest = 0;
    try {
        Statement count = catalog_.db().prepare("SELECT COUNT(*), MAX(id) FROM jobs");
        if (!count.step())
            return;
        total_ = count.integer(0);
        newest = count.integer(1);
        read_error_.clear();
    } catch (const std::exception& e) {
        read_error_ = QString::fromUtf8(e.what());
        return;
    }
    if (rows_.isEmpty()) {
        // Nothing loaded yet: the first page only; the view fetches more as it scrolls.
        if (canFetchMore({}))
            fetchMore({});
        return;
    }
    // New jobs go on top; the loaded ones are re-read in one query.
    const qint64 top = rows_.front().id;
    if (newest > top) {
        const QVector<Row> fresh = load(newest + 1, static_cast<int>(std::min<qint64>(newest - top, 100000)), top + 1);
        if (!fresh.isEmpty()) {
            beginInsertRows({}, 0, fresh.size() - 1);
            rows_ = fresh + rows_;
            endInsertRows();
        }
    }
    const QVector<Row> current = load(rows_.front().id + 1, rows_.size(), rows_.back().id);
    for (int i = 0; i < current.size() && i < rows_.size(); ++i)
        if (current[i].id == rows_[i].id)
            rows_[i] = current[i];
    emit dataChanged(index(0, 0), index(rows_.size() - 1, ColumnCount - 1));
}

QVariant JobTableModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rows_.size())
        return {};
    const Row& r = rows_[index.row()];
    if (role == JobIdRole)
        return r.id;
    if (role == RemoteIdRole)
        return r.remote_id;
    if (role == BackendRole)
        return r.backend;
    if (role == StateRole)
        return r.state;
    const double end = r.ended && r.finished > 0 ? r.finished : now_seconds();
    const double elapsed = r.started > 0 ? end - r.started : (r.state == "queued" ? 0 : end - r.created);
    if (role == Qt::DisplayRole) {
        switch (index.column()) {
        case Name: return r.name;
        case State: return r.state;
        case Backend: return r.backend;
        case Progress: return QStringLiteral("%1 %").arg(100.0 * r.progress, 0, 'f', 1);
        case Loss: return std::isnan(r.loss) ? QStringLiteral("–") : QString::number(r.loss, 'f', 4);
        case Accuracy: return std::isnan(r.accuracy) ? QStringLiteral("–") : QStringLiteral("%1 %").arg(100 * r.accuracy, 0, 'f', 2);
        case Elapsed: return duration_text(elapsed);
        case Spend: return QStringLiteral("$%1").arg(r.spend, 0, 'f', 4);
        case Eta:
            if (r.ended || r.progress <= 0.001 || r.progress >= 1)
                return QStringLiteral("–");
            return duration_text(elapsed * (1 - r.progress) / r.progress);
        }
    }
    if (role == Qt::ToolTipRole)
        return r.reason;
    if (role == Qt::TextAlignmentRole && index.column() >= Progress)
        return int(Qt::AlignRight | Qt::AlignVCenter);
    if (role == Qt::ForegroundRole && index.column() == State) {
        if (r.state == "running")
            return QColor(0x1b, 0x7f, 0x3b);
        if (r.state == "failed")
            return QColor(0xb3, 0x26, 0x1e);
        if (r.state == "queued" || r.state == "preempting")
            return QColor(0x8a, 0x6d, 0x00);
    }
    return {};
}

QVariant JobTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    static const char* names[] = {"Job", "State", "Backend", "Progress", "Loss", "Val acc.", "Elapsed", "Spend", "ETA"};
    return section < ColumnCount ? tr(names[section]) : QVariant();
}

CatalogReader::CatalogReader(const QString& catalog_path) {
    error_ = QString::fromStdString(catalog_.open(catalog_path.toStdString(), true));
}

template <class F, class T>
T CatalogReader::guarded(F&& query, T fallback) {
    try {
        return query();
    } catch (const std::exception& e) {
        error_ = QString::fromUtf8(e.what());
        return fallback;
    }
}

CatalogReader::Curve CatalogReader::curve(qint64 job, const QString& series, int buckets) {
    return guarded([&] {
        Curve curve;
        const int64_t id = catalog_.series(static_cast<int64_t>(job), series.toStdString(), false);
        if (!id)
            return curve;
        for (const Bucket& b : SeriesStore::query(catalog_.db(), id, std::numeric_limits<int64_t>::min() / 4,
                                                  std::numeric_limits<int64_t>::max() / 4, buckets)) {
            curve.last.push_back(QPointF(b.last_step, b.last));
            curve.min.push_back(QPointF(b.last_step, b.min));
            curve.max.push_back(QPointF(b.last_step, b.max));
            curve.points += b.count;
        }
        return curve;
    }, Curve());
}

QStringList CatalogReader::seriesNames(qint64 job) {
    return guarded([&] {
        QStringList names;
        for (const auto& name : catalog_.series_names(static_cast<int64_t>(job)))
            names << QString::fromStdString(name);
        return names;
    }, QStringList());
}

QStringList CatalogReader::logTail(qint64 job, int lines) {
    return guarded([&] {
        QStringList out;
        Statement select = catalog_.db().prepare("SELECT stream, line FROM job_logs WHERE job=? ORDER BY seq DESC LIMIT ?");
        select.bind(1, static_cast<int64_t>(job)).bind(2, static_cast<int64_t>(lines));
        while (select.step())
            out.prepend(QString::fromStdString(select.text(1)));
        return out;
    }, QStringList());
}

} // namespace traindeck

namespace traindeck {

double CatalogReader::jobBudget(qint64 job) {
    return guarded([&] {
        Statement select = catalog_.db().prepare("SELECT budget FROM jobs WHERE id=?");
        select.bind(1, static_cast<int64_t>(job));
        return select.step() ? select.real(0) : 0.0;
    }, 0.0);
}

QByteArray CatalogReader::jobRequest(qint64 job) {
    return guarded([&] {
        Statement select = catalog_.db().prepare("SELECT spec FROM jobs WHERE id=?");
        select.bind(1, static_cast<int64_t>(job));
        return select.step() ? QByteArray::fromStdString(select.text(0)) : QByteArray();
    }, QByteArray());
}

} // namespace traindeck
