#pragma once
// The jobs table: one row per catalog job, newest first, fetched lazily in pages so that a catalog with
// 100 k jobs opens at once. refresh() re-reads the loaded rows (cheap: one indexed query). A query that fails (a
// damaged catalog, a table gone) leaves the rows as they were and sets error(); no exception leaves this class, so
// none reaches a slot or the event loop.
#include "catalog.h"

#include <QAbstractTableModel>
#include <QPointF>
#include <QStringList>
#include <QVector>

namespace traindeck {

class JobTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Name, State, Backend, Progress, Loss, Accuracy, Elapsed, Spend, Eta, ColumnCount };
    enum Role { JobIdRole = Qt::UserRole + 1, RemoteIdRole, BackendRole, StateRole };
    static constexpr int kPage = 256;

    // Reads through its own read-only connection to the catalog file.
    explicit JobTableModel(const QString& catalog_path, QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;
    bool canFetchMore(const QModelIndex& parent) const override;
    void fetchMore(const QModelIndex& parent) override;

    qint64 totalJobs() const { return total_; }
    // Why the catalog could not be opened or last read; "" when the last read worked.
    QString error() const { return error_.isEmpty() ? read_error_ : error_; }

public slots:
    void refresh();

private:
    struct Row {
        qint64 id = 0;
        QString name, state, reason, backend, remote_id;
        double progress = 0, loss = qQNaN(), accuracy = qQNaN(), spend = 0, created = 0, started = 0, finished = 0;
        // Finished as its worker counts it (jobstate.h's is_finished): its elapsed time stops at `finished` and
        // it has no ETA. A job the catalog marked lost is not finished in this sense (its clock runs on).
        bool ended = false;
    };
    QVector<Row> load(qint64 below_id, int limit, qint64 from_id = 0);

    Catalog catalog_;
    QVector<Row> rows_;
    qint64 total_ = 0;
    QString error_, read_error_;
};

// Read-only access for views: chart data for a job's series (~2 buckets per pixel column, exact min/max/last
// per bucket), its log tail and the request it was submitted with. A failed query gives an empty answer and
// error(), never an exception.
class CatalogReader {
public:
    explicit CatalogReader(const QString& catalog_path);
    struct Curve {
        QVector<QPointF> last, min, max; // per bucket: (last step, value)
        qint64 points = 0;               // raw points the buckets summarise
    };
    Curve curve(qint64 job, const QString& series, int buckets);
    QStringList seriesNames(qint64 job);
    QStringList logTail(qint64 job, int lines);
    QByteArray jobRequest(qint64 job); // the JSON the job was submitted with
    double jobBudget(qint64 job);      // 0 when the job has no cap
    QString error() const { return error_; } // why a query failed since clearError(); "" when none did
    void clearError() { error_.clear(); }

private:
    // Runs a query; on an exception returns fallback and keeps its message in error_.
    template <class F, class T>
    T guarded(F&& query, T fallback);

    Catalog catalog_;
    QString error_;
};

} // namespace traindeck
