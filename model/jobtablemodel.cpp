// JobTableModel and CatalogReader (jobtablemodel.h): read-only queries, each guarded, on the GUI thread's own
// connection (WAL: a reader never waits for the writer).
#include "jobtablemodel.h"

#include "groupstats.h"
#include "jobstate.h"
#include "money.h"
#include "runfield.h"
#include "xaxis.h"

#include <QColor>
#include <QCoreApplication>
#include <QPointer>
#include <QRegularExpression>
#include <QThreadPool>
#include <QFont>
#include <QImage>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPainter>
#include <QPolygonF>
#include <QDateTime>

#include <algorithm>
#include <limits>
#include <chrono>
#include <map>
#include <memory>
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

double elapsed_of(const RunRecord& r, double now) {
    // Finished as its worker counts it (jobstate.h's is_finished): its clock stops at `finished`. A job the catalog
    // marked lost is not finished in this sense (its clock runs on).
    const bool ended = is_finished(r.state);
    const double end = ended && r.finished > 0 ? r.finished : now;
    return r.started > 0 ? end - r.started : (r.state == "queued" ? 0 : end - r.created);
}

// A value to sort by: missing values go last in either order.
struct SortKey {
    bool missing = true;
    double number = NAN; // NaN: a text
    std::string text;
};

} // namespace

JobTableModel::JobTableModel(const QString& catalog_path, QObject* parent)
    : QAbstractTableModel(parent), catalog_path_(catalog_path) {
    error_ = QString::fromStdString(catalog_.open(catalog_path.toStdString(), true));
    query_ = RunQuery::parse("", &query_error_);
}

int JobTableModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}
int JobTableModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount + static_cast<int>(extra_.size());
}

const RunRecord* JobTableModel::runAt(int row) const {
    return row >= 0 && row < static_cast<int>(rows_.size()) ? &runs_[rows_[row]] : nullptr;
}

int JobTableModel::rowOf(qint64 id) const {
    const auto it = index_of_.find(id);
    if (it == index_of_.end())
        return -1;
    const auto row = std::find(rows_.begin(), rows_.end(), it->second);
    return row == rows_.end() ? -1 : static_cast<int>(row - rows_.begin());
}

std::vector<const RunRecord*> JobTableModel::visibleRuns() const {
    std::vector<const RunRecord*> out;
    out.reserve(rows_.size());
    for (const int i : rows_)
        out.push_back(&runs_[i]);
    return out;
}

std::vector<const RunRecord*> JobTableModel::queriedRuns() const {
    if (!only_active_)
        return visibleRuns();
    std::vector<int> rows = filtered(false);
    sort_rows(rows);
    std::vector<const RunRecord*> out;
    out.reserve(rows.size());
    for (const int i : rows)
        out.push_back(&runs_[i]);
    return out;
}

const RunRecord* JobTableModel::runById(qint64 id) const {
    const auto it = index_of_.find(id);
    return it == index_of_.end() ? nullptr : &runs_[it->second];
}

void JobTableModel::refresh() {
    if (!error_.isEmpty())
        return;
    if (details_loading_) {
        // The first full read is still on its way: it brings everything up to its own revision.
        move_clocks();
        return;
    }
    try {
        int64_t revision = 0;
        const bool first_in_background = !loaded_ && background_;
        std::vector<RunRecord> changed = catalog_.runs(loaded_ ? revision_ : 0, &revision, !first_in_background);
        revision_ = revision;
        read_error_.clear();
        if (first_in_background)
            load_details();
        else
            details_loaded_ = true;
        if (!loaded_ || !changed.empty()) {
            loaded_ = true;
            merge(std::move(changed));
            relayout();
            emit runsChanged();
            return;
        }
    } catch (const std::exception& e) {
        read_error_ = QString::fromUtf8(e.what());
        return;
    }
    move_clocks(); // nothing changed in the catalog
}

void JobTableModel::move_clocks() {
    if (!rows_.empty())
        emit dataChanged(index(0, Elapsed), index(static_cast<int>(rows_.size()) - 1, Eta), {Qt::DisplayRole});
}

void JobTableModel::poll() {
    if (!error_.isEmpty() || !loaded_ || details_loading_) {
        refresh();
        return;
    }
    move_clocks();
    if (polling_)
        return;
    polling_ = true;
    read_in_background(revision_, [this](std::vector<RunRecord> changed, int64_t revision, const std::string& error) {
        polling_ = false;
        if (!error.empty()) {
            read_error_ = QString::fromStdString(error);
            return;
        }
        if (revision <= revision_)
            return; // nothing new, or a refresh() read past it meanwhile
        revision_ = revision;
        read_error_.clear();
        if (changed.empty())
            return;
        merge(std::move(changed));
        relayout();
        emit runsChanged();
    });
}

void JobTableModel::load_details() {
    details_loading_ = true;
    read_in_background(0, [this](std::vector<RunRecord> runs, int64_t revision, const std::string& error) {
        details_loading_ = false;
        if (!error.empty()) {
            read_error_ = QString::fromStdString(error);
            return; // the next refresh tries again, in the foreground
        }
        details_loaded_ = true;
        revision_ = revision;
        merge(std::move(runs));
        relayout();
        emit runsChanged();
    });
}

void JobTableModel::read_in_background(int64_t since, ReadDone done) {
    QPointer<JobTableModel> self(this);
    QThreadPool::globalInstance()->start([self, path = catalog_path_.toStdString(), since, done = std::move(done)] {
        auto runs = std::make_shared<std::vector<RunRecord>>();
        int64_t revision = 0;
        Catalog catalog;
        std::string error = catalog.open(path, true);
        if (error.empty()) {
            try {
                *runs = catalog.runs(since, &revision);
            } catch (const std::exception& e) {
                error = e.what();
            }
        }
        QMetaObject::invokeMethod(
            QCoreApplication::instance(),
            [self, runs, revision, error, done] {
                if (self)
                    done(std::move(*runs), revision, error);
            },
            Qt::QueuedConnection);
    });
}

void JobTableModel::merge(std::vector<RunRecord> changed) {
    for (size_t extra = 0; extra < reach_values_.size(); ++extra)
        for (const RunRecord& run : changed) {
            reach_values_[extra].erase(run.id); // what a run reached may change with its new points
            if (reach_loading_[extra])
                reach_changed_[extra].insert(run.id); // the read under way may have seen it before the change
        }
    if (runs_.empty()) {
        // The first read: the runs as they come (by id), without the deleted ones.
        runs_ = std::move(changed);
        std::erase_if(runs_, [](const RunRecord& run) { return run.deleted; });
        index_of_.reserve(runs_.size());
        for (int i = 0; i < static_cast<int>(runs_.size()); ++i)
            index_of_[runs_[i].id] = i;
        return;
    }
    bool removed = false;
    for (RunRecord& run : changed) {
        const auto it = index_of_.find(run.id);
        if (it != index_of_.end()) {
            if (run.deleted) {
                runs_[it->second].deleted = true;
                removed = true;
            } else {
                runs_[it->second] = std::move(run);
            }
        } else if (!run.deleted) {
            // Runs come in id order and new ids are the highest: appending keeps runs_ sorted.
            const bool in_order = runs_.empty() || runs_.back().id < run.id;
            runs_.push_back(std::move(run));
            if (!in_order)
                removed = true; // re-sort below
            index_of_[runs_.back().id] = static_cast<int>(runs_.size()) - 1;
        }
    }
    if (removed) {
        shown_ids_.clear();
        for (const int row : rows_)
            shown_ids_.push_back(runs_[row].id);
        std::erase_if(runs_, [](const RunRecord& run) { return run.deleted; });
        std::sort(runs_.begin(), runs_.end(), [](const RunRecord& a, const RunRecord& b) { return a.id < b.id; });
        index_of_.clear();
        for (int i = 0; i < static_cast<int>(runs_.size()); ++i)
            index_of_[runs_[i].id] = i;
        rows_.clear(); // positions moved: relayout maps the persistent indexes by the ids in shown_ids_
    }
}

std::vector<int> JobTableModel::filtered(bool narrowed) const {
    std::vector<int> rows;
    rows.reserve(runs_.size());
    const double now = now_seconds();
    const bool only = narrowed && only_active_;
    for (int i = 0; i < static_cast<int>(runs_.size()); ++i)
        if (query_.matches(runs_[i], now) && (!only || only_.contains(runs_[i].id)))
            rows.push_back(i);
    return rows;
}

void JobTableModel::sort_rows(std::vector<int>& rows) const {
    if (sort_column_ < 0) {
        std::reverse(rows.begin(), rows.end()); // newest first
        return;
    }
    const double now = now_seconds();
    std::vector<SortKey> keys(runs_.size());
    for (const int i : rows) {
        const RunRecord& run = runs_[i];
        SortKey& key = keys[i];
        key.missing = false;
        switch (sort_column_) {
        case Name:
            key.text = run.name;
            break;
        case State:
            key.text = run.state;
            break;
        case Backend:
            key.text = run.backend;
            break;
        case Progress:
            key.number = run.progress;
            break;
        case Loss:
            key.number = run.loss;
            key.missing = std::isnan(run.loss);
            break;
        case Accuracy:
            key.number = run.accuracy;
            key.missing = std::isnan(run.accuracy);
            break;
        case Elapsed:
            key.number = elapsed_of(run, now);
            break;
        case Spend:
            key.number = run.spend;
            break;
        case Eta:
            key.number = run.progress > 0.001 && run.progress < 1
                             ? elapsed_of(run, now) * (1 - run.progress) / run.progress
                             : NAN;
            key.missing = std::isnan(key.number);
            break;
        default: {
            const FieldValue value = field_value(run, sort_column_ - ColumnCount, now);
            key.missing = !value.present;
            key.number = value.number;
            key.text = value.text;
        }
        }
    }
    const bool descending = sort_order_ == Qt::DescendingOrder;
    std::stable_sort(rows.begin(), rows.end(), [&](int a, int b) {
        const SortKey &x = keys[a], &y = keys[b];
        if (x.missing != y.missing)
            return y.missing; // missing last, either way
        if (x.missing)
            return runs_[a].id > runs_[b].id;
        // Numbers by value, before texts; texts by their bytes.
        const bool x_number = !std::isnan(x.number), y_number = !std::isnan(y.number);
        int order = 0;
        if (x_number && y_number)
            order = x.number < y.number ? -1 : x.number > y.number ? 1 : 0;
        else if (x_number != y_number)
            order = x_number ? -1 : 1;
        else
            order = x.text.compare(y.text);
        if (order == 0)
            return runs_[a].id > runs_[b].id; // ties: newest first
        return descending ? order > 0 : order < 0;
    });
}

void JobTableModel::relayout() {
    load_reach();
    std::vector<int> rows = filtered();
    sort_rows(rows);
    if (rows == rows_ && shown_ids_.empty()) {
        if (!rows_.empty())
            emit dataChanged(index(0, 0), index(static_cast<int>(rows_.size()) - 1, columnCount() - 1));
        return;
    }
    emit layoutAboutToBeChanged();
    const QModelIndexList before = persistentIndexList();
    // Old persistent indexes name rows by position; remember their runs by id before the positions change.
    QVector<qint64> ids;
    ids.reserve(before.size());
    for (const QModelIndex& index : before) {
        const int row = index.row();
        if (!shown_ids_.empty())
            ids.push_back(row < static_cast<int>(shown_ids_.size()) ? shown_ids_[row] : 0);
        else
            ids.push_back(row < static_cast<int>(rows_.size()) ? runs_[rows_[row]].id : 0);
    }
    shown_ids_.clear();
    rows_ = std::move(rows);
    std::unordered_map<int, int> row_of_position;
    for (int row = 0; row < static_cast<int>(rows_.size()); ++row)
        row_of_position[rows_[row]] = row;
    QModelIndexList after;
    after.reserve(before.size());
    for (int i = 0; i < before.size(); ++i) {
        const auto it = index_of_.find(ids[i]);
        const auto row = it == index_of_.end() ? row_of_position.end() : row_of_position.find(it->second);
        after.push_back(row == row_of_position.end() || before[i].column() >= columnCount()
                            ? QModelIndex()
                            : createIndex(row->second, before[i].column()));
    }
    changePersistentIndexList(before, after);
    emit layoutChanged();
}

bool JobTableModel::setQuery(const QString& text) {
    QueryError error;
    RunQuery query = RunQuery::parse(text.toStdString(), &error);
    if (!query.valid()) {
        query_error_ = error;
        return false;
    }
    query_error_ = {};
    query_ = std::move(query);
    query_text_ = text;
    relayout();
    return true;
}

void JobTableModel::setOnlyRuns(const QSet<qint64>& ids, bool active) {
    only_ = ids;
    only_active_ = active;
    relayout();
}

void JobTableModel::sort(int column, Qt::SortOrder order) {
    sort_column_ = column >= 0 && column < columnCount() ? column : -1;
    sort_order_ = order;
    relayout();
}

void JobTableModel::setExtraColumns(const QStringList& fields) {
    if (fields == extra_)
        return;
    beginResetModel();
    extra_ = fields;
    extra_fields_.clear();
    reach_.clear();
    reach_values_.assign(static_cast<size_t>(fields.size()), {});
    reach_loading_.assign(static_cast<size_t>(fields.size()), 0);
    reach_changed_.assign(static_cast<size_t>(fields.size()), {});
    ++reach_generation_;
    for (const QString& field : fields) {
        extra_fields_.push_back(field.toStdString());
        SpendToReach reach;
        reach_.push_back(parseSpendToReach(field, &reach) ? std::optional(reach) : std::nullopt);
    }
    if (sort_column_ >= columnCount())
        sort_column_ = -1;
    endResetModel();
    relayout();
}

bool JobTableModel::parseSpendToReach(const QString& field, SpendToReach* out) {
    static const QRegularExpression pattern(QStringLiteral(R"(^spend to reach (\S+) (>=|<=) (\S+)$)"));
    const QRegularExpressionMatch match = pattern.match(field);
    bool number = false;
    const double threshold = match.hasMatch() ? match.captured(3).toDouble(&number) : 0.0;
    if (!number)
        return false;
    if (out)
        *out = {match.captured(1).toStdString(), threshold, match.captured(2) == QLatin1String(">=")};
    return true;
}

FieldValue JobTableModel::field_value(const RunRecord& run, int extra, double now) const {
    const std::optional<SpendToReach>& reach = reach_[static_cast<size_t>(extra)];
    if (!reach)
        return run_field(run, extra_fields_[static_cast<size_t>(extra)], now);
    const auto& values = reach_values_[static_cast<size_t>(extra)];
    const auto it = values.find(run.id);
    if (it == values.end() || std::isnan(it->second))
        return {};
    return {true, it->second, number_text(it->second)};
}

bool JobTableModel::spendToReachLoading() const {
    return std::any_of(reach_loading_.begin(), reach_loading_.end(), [](char loading) { return loading != 0; });
}

void JobTableModel::load_reach() {
    for (size_t extra = 0; extra < reach_.size(); ++extra) {
        if (!reach_[extra] || reach_loading_[extra])
            continue;
        std::vector<int64_t> missing;
        for (const RunRecord& run : runs_)
            if (!reach_values_[extra].count(run.id))
                missing.push_back(run.id);
        if (missing.empty())
            continue;
        reach_loading_[extra] = 1;
        QPointer<JobTableModel> self(this);
        QThreadPool::globalInstance()->start([self, path = catalog_path_.toStdString(), reach = *reach_[extra],
                                              missing = std::move(missing), extra, generation = reach_generation_] {
            // One read per run: the one chunk where it happens and the times around it (xaxis.h).
            auto spent = std::make_shared<std::vector<std::pair<int64_t, double>>>();
            Catalog catalog;
            std::string error = catalog.open(path, true);
            for (size_t i = 0; error.empty() && i < missing.size(); ++i) {
                try {
                    spent->push_back(
                        {missing[i], spend_to_reach(catalog, missing[i], reach.series, reach.threshold, reach.above)});
                } catch (const std::exception& e) {
                    error = e.what();
                }
            }
            QMetaObject::invokeMethod(
                QCoreApplication::instance(),
                [self, spent, missing, extra, generation, error] {
                    if (!self || generation != self->reach_generation_)
                        return;
                    auto& values = self->reach_values_[extra];
                    std::unordered_set<int64_t>& changed = self->reach_changed_[extra];
                    for (const auto& [id, value] : *spent)
                        if (!changed.count(id))
                            values[id] = value;
                    if (!error.empty()) {
                        // A catalog that cannot be read: "–" for the rest (not read again until they change),
                        // and the error for the window to say.
                        self->read_error_ = QString::fromStdString(error);
                        for (const int64_t id : missing)
                            if (!changed.count(id))
                                values.emplace(id, NAN);
                    }
                    changed.clear();
                    self->reach_loading_[extra] = 0;
                    self->relayout(); // sorts by the new values, and reads what changed meanwhile
                },
                Qt::QueuedConnection);
        });
    }
}

QStringList JobTableModel::availableColumns() const {
    std::vector<const RunRecord*> all;
    all.reserve(runs_.size());
    for (const RunRecord& run : runs_)
        all.push_back(&run);
    QStringList out;
    for (const std::string& key : config_keys_of(all))
        out << QString::fromStdString(key);
    for (const std::string& field : summary_fields_of(all))
        out << QString::fromStdString(field);
    return out;
}

QStringList JobTableModel::differingKeys() const {
    const std::vector<const RunRecord*> runs = visibleRuns();
    QStringList out;
    for (const std::string& key : differing_config_keys(runs))
        out << QString::fromStdString(key);
    return out;
}

QVariant JobTableModel::data(const QModelIndex& index, int role) const {
    const RunRecord* run = index.isValid() ? runAt(index.row()) : nullptr;
    if (!run)
        return {};
    const RunRecord& r = *run;
    if (role == JobIdRole)
        return static_cast<qint64>(r.id);
    if (role == RemoteIdRole)
        return QString::fromStdString(r.remote_id);
    if (role == BackendRole)
        return QString::fromStdString(r.backend);
    if (role == StateRole)
        return QString::fromStdString(r.state);
    const double now = now_seconds();
    const double elapsed = elapsed_of(r, now);
    const bool ended = is_finished(r.state);
    if (index.column() >= ColumnCount) {
        const int extra = index.column() - ColumnCount;
        const FieldValue value = field_value(r, extra, now);
        if (role == Qt::DisplayRole) {
            if (!value.present)
                return reach_[extra] && !reach_values_[static_cast<size_t>(extra)].count(r.id)
                           ? QStringLiteral("…") // being read
                           : QStringLiteral("–");
            if (reach_[extra])
                return money(value.number, 4, backend_currency(QString::fromStdString(r.backend)));
            return value.is_number() && extra_[index.column() - ColumnCount].contains('.') &&
                           r.config.find(extra_fields_[index.column() - ColumnCount]) == r.config.end()
                       ? QString::number(value.number, 'g', 5) // a summary: 5 significant digits
                       : QString::fromStdString(value.text);   // a config value: as the run gave it
        }
        if (role == SortRole) {
            if (!value.present)
                return QVariant(double(NAN)); // "–" or "…"
            return value.is_number() ? QVariant(value.number) : QVariant(QString::fromStdString(value.text));
        }
        if (role == Qt::TextAlignmentRole && value.is_number())
            return int(Qt::AlignRight | Qt::AlignVCenter);
        if (role == Qt::ToolTipRole)
            return QString::fromStdString(value.text);
        return {};
    }
    if (role == Qt::DisplayRole) {
        switch (index.column()) {
        case Name:
            return QString::fromStdString(r.name);
        case State:
            return QString::fromStdString(r.state);
        case Backend:
            return QString::fromStdString(r.backend);
        case Progress:
            // A job that ended without ever saying how far it got (a script that reports no total) shows no figure:
            // "0.0 %" beside "succeeded" would be a false one.
            if (ended && r.progress <= 0)
                return QStringLiteral("–");
            return QStringLiteral("%1 %").arg(100.0 * r.progress, 0, 'f', 1);
        case Loss: return std::isnan(r.loss) ? QStringLiteral("–") : QString::number(r.loss, 'f', 4);
        case Accuracy:
            return std::isnan(r.accuracy) ? QStringLiteral("–")
                                          : QStringLiteral("%1 %").arg(100 * r.accuracy, 0, 'f', 2);
        case Elapsed: return duration_text(elapsed);
        case Spend:
            // In what its backend charges in.
            return money(r.spend, 4, backend_currency(QString::fromStdString(r.backend)));
        case Eta:
            if (ended || r.progress <= 0.001 || r.progress >= 1)
                return QStringLiteral("–");
            return duration_text(elapsed * (1 - r.progress) / r.progress);
        }
    }
    if (role == SortRole) {
        switch (index.column()) {
        case Name:
            return QString::fromStdString(r.name);
        case State:
            return QString::fromStdString(r.state);
        case Backend:
            return QString::fromStdString(r.backend);
        case Progress:
            return r.progress;
        case Loss:
            return r.loss;
        case Accuracy:
            return r.accuracy;
        case Elapsed:
            return elapsed;
        case Spend:
            return r.spend;
        case Eta:
            return ended || r.progress <= 0.001 || r.progress >= 1 ? double(NAN)
                                                                   : elapsed * (1 - r.progress) / r.progress;
        }
    }
    if (role == Qt::ToolTipRole) {
        QString tip = QString::fromStdString(r.reason);
        if (!r.tags.empty()) {
            QStringList tags;
            for (const std::string& tag : r.tags)
                tags << QString::fromStdString(tag);
            tip += (tip.isEmpty() ? QString() : QStringLiteral("\n")) +
                   tr("Tags: %1").arg(tags.join(QStringLiteral(", ")));
        }
        if (!r.note.empty())
            tip += (tip.isEmpty() ? QString() : QStringLiteral("\n")) + QString::fromStdString(r.note);
        return tip;
    }
    if (role == Qt::DecorationRole && index.column() == Name && r.starred)
        return QColor(0xe0, 0xa8, 0x00); // a star: gold
    if (role == Qt::FontRole && index.column() == Name && r.archived) {
        QFont font;
        font.setItalic(true);
        return font;
    }
    if (role == Qt::TextAlignmentRole && index.column() >= Progress)
        return int(Qt::AlignRight | Qt::AlignVCenter);
    if (role == Qt::DecorationRole && index.column() == State)
        return state_icon(r.state);
    return {};
}

QImage JobTableModel::state_icon(const std::string& state) {
    // A shape and a colour per state, beside the state's name (the text says it; the shape tells states apart at a
    // glance without the colour): running a triangle, queued a ring, succeeded a check, failed a cross, stopped
    // two bars, cancelled a square, stopping and preempting a half-filled ring, lost a broken ring. Drawn into a
    // QImage (no GUI application needed), once per state.
    static std::map<std::string, QImage> drawn;
    if (const auto found = drawn.find(state); found != drawn.end())
        return found->second;
    constexpr int size = 16;
    QImage image(size, size, QImage::Format_ARGB32_Premultiplied);
    image.fill(Qt::transparent);
    QPainter painter(&image);
    painter.setRenderHint(QPainter::Antialiasing);
    const auto pen = [&](const QColor& color, double width = 2.2) {
        QPen line(color, width);
        line.setCapStyle(Qt::RoundCap);
        line.setJoinStyle(Qt::RoundJoin);
        painter.setPen(line);
    };
    const QColor green(0x2e, 0x9e, 0x4f), red(0xd6, 0x3a, 0x2f), amber(0xd9, 0x9a, 0x06), blue(0x2f, 0x7e, 0xd8),
        grey(0x8a, 0x8a, 0x8a);
    if (state == "running") {
        painter.setPen(Qt::NoPen);
        painter.setBrush(green);
        painter.drawPolygon(QPolygonF({QPointF(4, 2.5), QPointF(13.5, 8), QPointF(4, 13.5)}));
    } else if (state == "queued") {
        pen(amber, 2);
        painter.drawEllipse(QRectF(3, 3, 10, 10));
    } else if (state == "succeeded") {
        pen(blue, 2.4);
        painter.drawPolyline(QPolygonF({QPointF(3, 8.5), QPointF(6.5, 12), QPointF(13, 4)}));
    } else if (state == "failed") {
        pen(red, 2.4);
        painter.drawLine(QPointF(4, 4), QPointF(12, 12));
        painter.drawLine(QPointF(12, 4), QPointF(4, 12));
    } else if (state == "stopped") {
        painter.setPen(Qt::NoPen);
        painter.setBrush(amber);
        painter.drawRect(QRectF(4, 3, 3, 10));
        painter.drawRect(QRectF(9, 3, 3, 10));
    } else if (state == "cancelled") {
        painter.setPen(Qt::NoPen);
        painter.setBrush(grey);
        painter.drawRect(QRectF(4, 4, 8, 8));
    } else if (state == "stopping" || state == "preempting") {
        pen(amber, 2);
        painter.drawEllipse(QRectF(3, 3, 10, 10));
        painter.setBrush(amber);
        painter.drawPie(QRectF(3, 3, 10, 10), 90 * 16, 180 * 16);
    } else { // lost, or a state this console does not know: a broken ring
        QPen broken(grey, 2);
        broken.setStyle(Qt::DotLine);
        painter.setPen(broken);
        painter.drawEllipse(QRectF(3, 3, 10, 10));
    }
    painter.end();
    return drawn.emplace(state, image).first->second;
}

QVariant JobTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || (role != Qt::DisplayRole && role != Qt::ToolTipRole))
        return {};
    static const char* names[] = {"Job", "State", "Backend", "Progress", "Loss", "Val acc.", "Elapsed", "Spend", "ETA"};
    if (section < ColumnCount)
        return tr(names[section]);
    if (section >= columnCount())
        return {};
    const int extra = section - ColumnCount;
    if (const std::optional<SpendToReach>& reach = reach_[static_cast<size_t>(extra)]; reach && role == Qt::DisplayRole)
        // Each cell in its run's backend's currency: the header names none.
        return tr("Spend to %1 %2 %3")
            .arg(QString::fromStdString(reach->series), reach->above ? QStringLiteral("≥") : QStringLiteral("≤"))
            .arg(reach->threshold);
    return extra_[extra];
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
        // The buckets divide the steps the run has, not all the steps there could be (which put a run of more points
        // than twice the buckets into one of them).
        const auto extent = SeriesStore::extent(catalog_.db(), id);
        if (!extent)
            return curve;
        for (const Bucket& b : SeriesStore::query(catalog_.db(), id, extent->first, extent->second, buckets)) {
            curve.last.push_back(QPointF(b.last_step, b.last));
            curve.min.push_back(QPointF(b.last_step, b.min));
            curve.max.push_back(QPointF(b.last_step, b.max));
            curve.first_step.push_back(b.first_step);
            curve.count.push_back(b.count);
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

QStringList CatalogReader::histogramNames(qint64 job) {
    return guarded(
        [&] {
            QStringList names;
            for (const std::string& name : HistogramStore::names(catalog_.db(), job))
                names << QString::fromStdString(name);
            return names;
        },
        QStringList());
}

qint64 CatalogReader::histogramCount(qint64 job, const QString& name) {
    return guarded([&] { return static_cast<qint64>(HistogramStore::count(catalog_.db(), job, name.toStdString())); },
                   qint64(0));
}

std::vector<Histogram> CatalogReader::histograms(qint64 job, const QString& name) {
    return guarded(
        [&] {
            return HistogramStore::read(catalog_.db(), job, name.toStdString(), std::numeric_limits<int64_t>::min(),
                                        std::numeric_limits<int64_t>::max());
        },
        std::vector<Histogram>());
}

QStringList CatalogReader::imageTags(qint64 job) {
    return guarded(
        [&] {
            QStringList tags;
            for (const std::string& tag : ImageStore::tags(catalog_.db(), job))
                tags << QString::fromStdString(tag);
            return tags;
        },
        QStringList());
}

qint64 CatalogReader::imageCount(qint64 job, const QString& tag) {
    return guarded([&] { return static_cast<qint64>(ImageStore::count(catalog_.db(), job, tag.toStdString())); },
                   qint64(0));
}

std::vector<ImageRef> CatalogReader::images(qint64 job, const QString& tag) {
    return guarded([&] { return ImageStore::list(catalog_.db(), job, tag.toStdString()); }, std::vector<ImageRef>());
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

std::vector<Catalog::SavedView> CatalogReader::savedViews() {
    return guarded([&] { return catalog_.views(); }, std::vector<Catalog::SavedView>());
}

QVector<QPointF> CatalogReader::points(qint64 job, const QString& series) {
    return guarded(
        [&] {
            QVector<QPointF> out;
            const int64_t id = catalog_.series(static_cast<int64_t>(job), series.toStdString(), false);
            if (!id)
                return out;
            const std::vector<MetricPoint> points = SeriesStore::points(
                catalog_.db(), id, std::numeric_limits<int64_t>::min() / 4, std::numeric_limits<int64_t>::max() / 4);
            out.reserve(static_cast<qsizetype>(points.size()));
            for (const MetricPoint& p : points)
                out.push_back(QPointF(static_cast<double>(p.step), p.value));
            return out;
        },
        QVector<QPointF>());
}

double CatalogReader::jobBudget(qint64 job) {
    return guarded([&] {
        Statement select = catalog_.db().prepare("SELECT budget FROM jobs WHERE id=?");
        select.bind(1, static_cast<int64_t>(job));
        return select.step() ? select.real(0) : 0.0;
    }, 0.0);
}

QHash<QString, double> CatalogReader::spendSince(const QDateTime& since) {
    return guarded(
        [&] {
            QHash<QString, double> spent;
            for (const auto& [backend, amount] : spend_since(catalog_, since.toMSecsSinceEpoch()))
                spent.insert(QString::fromStdString(backend), amount);
            return spent;
        },
        QHash<QString, double>());
}

double CatalogReader::samplesPerStep(qint64 job) {
    return guarded(
        [&] {
            Statement select = catalog_.db().prepare(
                "SELECT key, text, number FROM job_config WHERE job=? AND key IN ('batch_size', 'grad_accum')");
            select.bind(1, static_cast<int64_t>(job));
            std::map<std::string, ConfigValue> config;
            while (select.step())
                config[select.text(0)] = {select.text(1), select.is_null(2) ? NAN : select.real(2)};
            return samples_per_step(config);
        },
        0.0);
}

QString CatalogReader::jobBackend(qint64 job) {
    return guarded(
        [&] {
            Statement select = catalog_.db().prepare("SELECT backend FROM jobs WHERE id=?");
            select.bind(1, static_cast<int64_t>(job));
            return select.step() ? QString::fromStdString(select.text(0)) : QString();
        },
        QString());
}

QString CatalogReader::jobName(qint64 job) {
    return guarded(
        [&] {
            Statement select = catalog_.db().prepare("SELECT name FROM jobs WHERE id=?");
            select.bind(1, static_cast<int64_t>(job));
            return select.step() ? QString::fromStdString(select.text(0)) : QString();
        },
        QString());
}

CatalogReader::RunCapture CatalogReader::capture(qint64 job) {
    return guarded(
        [&] {
            RunCapture capture;
            Statement select = catalog_.db().prepare("SELECT part, data FROM captures WHERE job=? ORDER BY seq");
            select.bind(1, static_cast<int64_t>(job));
            while (select.step()) {
                const QByteArray data = QByteArray::fromStdString(select.text(1));
                if (select.text_view(0) == "environment") {
                    capture.environment = data;
                    continue;
                }
                capture.code = data;
                ++capture.code_captures;
                const QString snapshot =
                    QJsonDocument::fromJson(data).object().value("code").toObject().value("snapshot").toString();
                if (!snapshot.isEmpty() && !capture.snapshots.contains(snapshot))
                    capture.snapshots << snapshot;
            }
            return capture;
        },
        RunCapture());
}

std::vector<CatalogReader::Evaluation> CatalogReader::evaluations(qint64 job) {
    return guarded(
        [&] {
            std::vector<Evaluation> evaluations;
            Statement select = catalog_.db().prepare(
                "SELECT split, step, epoch, time, data FROM evaluations WHERE job=? ORDER BY seq");
            select.bind(1, static_cast<int64_t>(job));
            while (select.step())
                evaluations.push_back({QString::fromStdString(select.text(0)), select.integer(1), select.integer(2),
                                       select.real(3), QByteArray::fromStdString(select.text(4))});
            return evaluations;
        },
        std::vector<Evaluation>());
}

std::vector<CatalogReader::Checkpoint> CatalogReader::checkpoints(qint64 job) {
    return guarded(
        [&] {
            std::vector<Checkpoint> rows;
            Statement select =
                catalog_.db().prepare("SELECT step, path, created FROM checkpoints WHERE job=? ORDER BY step");
            select.bind(1, static_cast<int64_t>(job));
            while (select.step())
                rows.push_back({select.integer(0), QString::fromStdString(select.text(1)), select.real(2)});
            return rows;
        },
        std::vector<Checkpoint>());
}

std::vector<CatalogReader::Artifact> CatalogReader::artifacts(qint64 job) {
    return guarded(
        [&] {
            std::vector<Artifact> rows;
            Statement select = catalog_.db().prepare(
                "SELECT kind, path, bytes, info, created FROM artifacts WHERE job=? ORDER BY created, id");
            select.bind(1, static_cast<int64_t>(job));
            while (select.step())
                rows.push_back({QString::fromStdString(select.text(0)), QString::fromStdString(select.text(1)),
                                select.integer(2), QByteArray::fromStdString(select.text(3)), select.real(4)});
            return rows;
        },
        std::vector<Artifact>());
}

QByteArray CatalogReader::jobRequest(qint64 job) {
    return guarded([&] {
        Statement select = catalog_.db().prepare("SELECT spec FROM jobs WHERE id=?");
        select.bind(1, static_cast<int64_t>(job));
        return select.step() ? QByteArray::fromStdString(select.text(0)) : QByteArray();
    }, QByteArray());
}

} // namespace traindeck
