#pragma once
// The runs table: every catalog run that is not deleted, as the query in the filter box selects them (runquery.h;
// archived runs only when it asks), sorted by any column. The fixed columns are the job's own; any config key or
// summary field ("optimizer.lr", "best.val/accuracy") can be added as a column. refresh() re-reads only the runs
// whose catalog rows changed since the last read (Catalog::runs), so 10,000 runs stay cheap while twenty stream.
// A query that fails (a damaged catalog, a table gone) leaves the rows as they were and sets error(); no exception
// leaves this class, so none reaches a slot or the event loop.
#include "catalog.h"
#include "histogramstore.h"
#include "imagestore.h"
#include "runfield.h"
#include "runquery.h"

#include <QDateTime>
#include <QAbstractTableModel>
#include <QImage>
#include <QPointF>
#include <QSet>
#include <QStringList>
#include <QVector>

#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace traindeck {

class JobTableModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Name, State, Backend, Progress, Loss, Accuracy, Elapsed, Spend, Eta, ColumnCount };
    // SortRole: a cell's raw value, what the runs table's CSV export writes: numbers as doubles at full precision
    // (progress and accuracy as fractions, elapsed and ETA in seconds, spend as a plain number), texts as they are,
    // NaN where the cell shows "–" (or "…").
    enum Role { JobIdRole = Qt::UserRole + 1, RemoteIdRole, BackendRole, StateRole, SortRole };

    // Reads through its own read-only connection to the catalog file.
    explicit JobTableModel(const QString& catalog_path, QObject* parent = nullptr);

    // The console's way: the first refresh reads only the runs' own fields (the table paints at once) and their
    // configs, summaries and tags on a pool thread, through a connection of its own; detailsLoaded() says when they
    // are in (runsChanged). Until then queries and extra columns see runs without config. Off (the default), the first
    // refresh reads everything before it returns.
    void setLoadDetailsInBackground(bool background) { background_ = background; }
    bool detailsLoaded() const { return details_loaded_; }

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;
    void sort(int column, Qt::SortOrder order = Qt::AscendingOrder) override;

    // Runs in the catalog (not deleted), whether the query shows them or not.
    qint64 totalJobs() const { return static_cast<qint64>(runs_.size()); }
    // Why the catalog could not be opened or last read; "" when the last read worked.
    QString error() const { return error_.isEmpty() ? read_error_ : error_; }

    // The filter box's query. A bad one keeps the rows of the last good one and returns false; queryError() says
    // where and what was expected.
    bool setQuery(const QString& text);
    QString query() const { return query_text_; }
    const QueryError& queryError() const { return query_error_; }

    // Only these runs (the compare view's brushes), on top of the query; active = false lifts it.
    void setOnlyRuns(const QSet<qint64>& ids, bool active);
    bool onlyRunsActive() const { return only_active_; }

    // Columns after the fixed ones: config keys and summary fields, in order.
    void setExtraColumns(const QStringList& fields);
    QStringList extraColumns() const { return extra_; }
    // A column "spend to reach SERIES >= X" (or <=): what each run had spent when the series first got there
    // (xaxis.h's spend_to_reach), "–" when it never did. parseSpendToReach tells such a column's name apart.
    struct SpendToReach {
        std::string series;
        double threshold = 0;
        bool above = true;
    };
    static bool parseSpendToReach(const QString& field, SpendToReach* out = nullptr);
    // True while some spend-to-reach values are read on a pool thread (their cells say "…").
    bool spendToReachLoading() const;
    // What could be a column: the config keys and summary fields the runs have (config keys first).
    QStringList availableColumns() const;
    // The config keys whose values differ among the runs the query shows (what "only what differs" shows).
    QStringList differingKeys() const;

    // The run on a row (nullptr outside the table), and the row of a run (-1 when it is not shown).
    const RunRecord* runAt(int row) const;
    int rowOf(qint64 id) const;
    // The runs the query shows, in the table's order.
    std::vector<const RunRecord*> visibleRuns() const;
    // The runs the query shows with no setOnlyRuns() narrowing them, in the table's order: what a comparison keeps
    // comparing while its brushes narrow the table.
    std::vector<const RunRecord*> queriedRuns() const;
    // A run in the catalog (not deleted) by its id, shown or not; nullptr when there is none.
    const RunRecord* runById(qint64 id) const;
    // The State column's icon for a state (a shape and a colour; the name is beside it).
    static QImage state_icon(const std::string& state);
    // Every run in the catalog (not deleted), shown or not, by id.
    const std::vector<RunRecord>& allRuns() const { return runs_; }

    // Whether a poll()'s read is under way.
    bool polling() const { return polling_; }

public slots:
    // Reads what changed in the catalog since the last read, before it returns.
    void refresh();
    // The same read on a pool thread, through a connection of its own, merged when it is back (the window's timer: the
    // GUI thread never waits on the catalog file, a checkpoint or a locked catalog holding it up to SQLite's busy
    // timeout). The clocks move at once. Before the first read, and while the background details load, it is
    // refresh(). One read at a time; a read that a refresh() overtook is dropped (the model has all it held).
    void poll();

signals:
    // Runs were added, changed or removed (a refresh that found changes, the background details arriving): what
    // depends on the runs' configs (the differing keys) is worth recomputing; a refresh that only moves the
    // clocks does not emit it.
    void runsChanged();

private:
    void merge(std::vector<RunRecord> changed);
    void load_details();
    // Only the clocks move (elapsed, ETA): their cells are repainted.
    void move_clocks();
    // Reads the runs changed after `since` on a pool thread, through a connection of its own; done gets them, the
    // catalog's revision and any error on the GUI thread, unless the model is gone by then.
    using ReadDone = std::function<void(std::vector<RunRecord> runs, int64_t revision, const std::string& error)>;
    void read_in_background(int64_t since, ReadDone done);
    // Reads on a pool thread what each run that lacks one had spent to reach each spend-to-reach column's target;
    // its cells say "…" until the answer comes (then the table sorts again).
    void load_reach();
    // Applies the query and the sort to runs_; rows that stay keep their selection (persistent indexes).
    void relayout();
    // Positions in runs_ the query shows; narrowed: only those setOnlyRuns() lets through too.
    std::vector<int> filtered(bool narrowed = true) const;
    void sort_rows(std::vector<int>& rows) const;
    // An extra column's value for a run: run_field's, or the spend-to-reach value load_reach read (kept per run until
    // the run changes; missing while it is read).
    FieldValue field_value(const RunRecord& run, int extra, double now) const;

    Catalog catalog_;
    std::vector<RunRecord> runs_;               // by id, ascending; deleted runs are dropped
    std::unordered_map<int64_t, int> index_of_; // id -> position in runs_
    std::vector<int> rows_;                     // positions in runs_, as shown
    std::vector<int64_t> shown_ids_;            // the rows' ids while positions in runs_ are being moved
    int64_t revision_ = 0;
    bool loaded_ = false, background_ = false, details_loaded_ = false, details_loading_ = false, polling_ = false;
    QString catalog_path_;
    RunQuery query_;
    QString query_text_;
    QueryError query_error_;
    QStringList extra_;
    std::vector<std::string> extra_fields_;
    std::vector<std::optional<SpendToReach>> reach_;                // per extra column
    std::vector<std::unordered_map<int64_t, double>> reach_values_; // per extra column: run id -> spent (NaN: never)
    std::vector<char> reach_loading_;                               // per extra column: a read under way
    std::vector<std::unordered_set<int64_t>> reach_changed_; // per extra column: runs that changed during the read
    int reach_generation_ = 0; // setExtraColumns moves it on: an answer for the columns before is dropped
    QSet<qint64> only_;
    bool only_active_ = false;
    int sort_column_ = -1;
    Qt::SortOrder sort_order_ = Qt::AscendingOrder;
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
        QVector<qint64> first_step, count; // per bucket: its first step and how many points it holds
        qint64 points = 0;                 // raw points the buckets summarise
    };
    Curve curve(qint64 job, const QString& series, int buckets);
    QStringList seriesNames(qint64 job);
    QStringList logTail(qint64 job, int lines);
    // A run's histograms (imported from TensorBoard): their names, how many one name has, and all of them.
    QStringList histogramNames(qint64 job);
    qint64 histogramCount(qint64 job, const QString& name);
    std::vector<Histogram> histograms(qint64 job, const QString& name);
    // A run's images (imported from TensorBoard): their tags, and where each of one tag is (model/imagestore.h).
    QStringList imageTags(qint64 job);
    qint64 imageCount(qint64 job, const QString& tag);
    std::vector<ImageRef> images(qint64 job, const QString& tag);
    QByteArray jobRequest(qint64 job); // the JSON the job was submitted with
    QString jobBackend(qint64 job);    // the backend's name ("import" for a run imported from another tool)
    QString jobName(qint64 job);
    // What the run was made of (backend/worker/capture.h): the newest capture of each part (JSON objects; empty when
    // none came), how many runs captured their code, and each distinct code snapshot in the order they came (more
    // than one: the code changed between a job's runs).
    struct RunCapture {
        QByteArray code, environment;
        int code_captures = 0;
        QStringList snapshots;
    };
    RunCapture capture(qint64 job);
    // The lineage after the run: the checkpoints it wrote and what was exported from it.
    struct Checkpoint {
        qint64 step = 0;
        QString path;
        double created = 0;
    };
    std::vector<Checkpoint> checkpoints(qint64 job);
    struct Artifact {
        QString kind, path;
        qint64 bytes = 0;
        QByteArray info; // JSON
        double created = 0;
    };
    std::vector<Artifact> artifacts(qint64 job);
    // Its evaluations with confusion matrices ("eval" records), in the order they came.
    struct Evaluation {
        QString split; // "val", "test"
        qint64 step = 0, epoch = 0;
        double time = 0;
        QByteArray data; // JSON: confusion ([true][predicted]), class_names (when known), loss, accuracy
    };
    std::vector<Evaluation> evaluations(qint64 job);
    std::vector<Catalog::SavedView> savedViews();
    // Every point of a series, for export (no cap).
    QVector<QPointF> points(qint64 job, const QString& series);
    double jobBudget(qint64 job);      // 0 when the job has no cap
    // Every run's spend from then on, per backend (xaxis.h's spend_since).
    QHash<QString, double> spendSince(const QDateTime& since);
    double samplesPerStep(qint64 job); // from its config (xaxis.h's samples_per_step); 0 when it names no batch size
    QString error() const { return error_; } // why a query failed since clearError(); "" when none did
    const std::string& path() const { return catalog_.path(); }
    void clearError() { error_.clear(); }

private:
    // Runs a query; on an exception returns fallback and keeps its message in error_.
    template <class F, class T>
    T guarded(F&& query, T fallback);

    Catalog catalog_;
    QString error_;
};

} // namespace traindeck
