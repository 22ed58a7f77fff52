#include "runimport.h"

#include "clock.h"
#include "imagestore.h"

#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>

namespace traindeck {

using importers::ImportedRun;
using nlohmann::json;

namespace {

constexpr const char* kBackend = "import";

struct Imported {
    int64_t points = 0, last_step = 0;
    double last_value = NAN;
};

bool same_value(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

std::map<std::pair<std::string, std::string>, Imported> imported_series(Database& db, int64_t job) {
    std::map<std::pair<std::string, std::string>, Imported> out;
    Statement select = db.prepare("SELECT kind, name, points, last_step, last_value FROM import_series WHERE job=?");
    select.bind(1, job);
    while (select.step())
        out[{select.text(0), select.text(1)}] = {select.integer(2), select.integer(3),
                                                 select.is_null(4) ? NAN : select.real(4)};
    return out;
}

void remember_series(Database& db, int64_t job, const std::string& kind, const std::string& name, int64_t points,
                     int64_t last_step, double last_value) {
    Statement upsert =
        db.prepare("INSERT OR REPLACE INTO import_series(job, kind, name, points, last_step, last_value) "
                   "VALUES(?, ?, ?, ?, ?, ?)");
    upsert.bind(1, job).bind(2, kind).bind(3, name).bind(4, points).bind(5, last_step);
    if (std::isnan(last_value))
        upsert.bind_null(6);
    else
        upsert.bind(6, last_value);
    upsert.step();
}

// Where one series' new points start, as the index of the first point the catalog does not hold yet (counted from the
// source's first point): the points after those taken before; -1 when the source no longer starts with them (it was
// rewritten). A run read on holds only the points after the `skipped` it had before (ImportedRun::points_before),
// which holds_what_was_read_before() found in the catalog.
template <typename Point, typename ValueOf>
int64_t first_new_point(const std::vector<Point>& points, const Imported* before, ValueOf value_of,
                        int64_t skipped = 0) {
    if (!before)
        return 0;
    if (skipped + static_cast<int64_t>(points.size()) < before->points)
        return -1;
    if (before->points > skipped) {
        const Point& last = points[static_cast<size_t>(before->points - skipped - 1)];
        if (last.step != before->last_step || !same_value(value_of(last), before->last_value))
            return -1;
    }
    return before->points;
}

// Whether the catalog holds every point a run read on was read on from (ImportedRun::points_before): not when the
// run was deleted and purged since, or an import of it failed. Then the run must be read whole again.
bool holds_what_was_read_before(const ImportedRun& run,
                                const std::map<std::pair<std::string, std::string>, Imported>& before) {
    for (const auto& [key, skipped] : run.points_before) {
        const auto it = before.find(key);
        if (it == before.end() || it->second.points < skipped.points ||
            (it->second.points == skipped.points &&
             (it->second.last_step != skipped.last_step || !same_value(it->second.last_value, skipped.last_value))))
            return false;
    }
    return true;
}

// How many points of a series a run read on had before those it holds (0 for a run read whole).
int64_t points_before(const ImportedRun& run, const char* kind, const std::string& name) {
    if (run.points_before.empty())
        return 0;
    const auto it = run.points_before.find({kind, name});
    return it == run.points_before.end() ? 0 : it->second.points;
}

// A source file's path as the catalog keeps it: absolute, so a view finds it whatever its working folder.
std::string absolute_path(const std::string& path) {
    std::error_code ec;
    const std::filesystem::path absolute = std::filesystem::absolute(path, ec);
    return ec ? path : absolute.lexically_normal().string();
}

json damage_json(const ImportedRun& run) {
    json out = json::array();
    for (const auto& d : run.damage)
        out.push_back({{"file", d.file}, {"offset", d.offset}, {"what", d.what}});
    return out;
}

// The catalog's words for how the run ended, and why.
std::pair<std::string, std::string> outcome(const ImportedRun& run) {
    const std::string said = run.state_reason.empty() ? "" : " (" + run.state_reason + ")";
    if (run.state == "succeeded" || run.state == "failed" || run.state == "cancelled")
        return {run.state, "imported from " + run.format + said};
    if (run.state == "running")
        // Nothing watches an imported run: it is not shown as active forever. Importing again brings what it gained.
        return {"lost", "imported from " + run.format + " while it said it was running" + said +
                            "; import it again to bring in what it wrote since"};
    return {"succeeded", "imported from " + run.format + "; the source does not record how the run ended"};
}

// The histograms from points[index] on, which is seq `seq` of the series, stored over the reader's buckets (no copy
// of them).
void write_histograms(Catalog& catalog, int64_t job, const std::string& name,
                      const std::vector<importers::HistogramPoint>& points, int64_t index, int64_t seq) {
    std::vector<HistogramView> views;
    views.reserve(points.size() - static_cast<size_t>(index));
    for (size_t i = static_cast<size_t>(index); i < points.size(); ++i) {
        const auto& h = points[i];
        views.push_back(
            {h.step, h.wall_time, h.min, h.max, h.num, h.sum, h.sum_squares, h.bucket_limit, h.bucket_count});
    }
    catalog.append_histograms(job, name, seq, views);
}

RunImportResult write(Catalog& catalog, const ImportedRun& run) {
    Database& db = catalog.db();
    RunImportResult result;
    const std::string remote_id = import_remote_id(run);
    {
        Statement find = db.prepare("SELECT id, deleted FROM jobs WHERE backend=? AND remote_id=? ORDER BY id LIMIT 1");
        find.bind(1, std::string_view(kBackend)).bind(2, remote_id);
        if (find.step()) {
            result.job = find.integer(0);
            if (find.real(1) > 0) {
                result.notes.push_back("the run imported from " + run.source +
                                       " is deleted in the catalog: restore it (undo) or let it be purged, then import "
                                       "again; nothing was changed");
                // A run read on: what it holds is not in the catalog; read whole once it is restored or purged.
                result.read_whole_again = !run.points_before.empty();
                return result;
            }
        }
    }
    // What each series took before (none for a new run), read once: a run read on must find in it what it was read
    // on from, else nothing is written and it is read whole again.
    const auto before =
        result.job == 0 ? std::map<std::pair<std::string, std::string>, Imported>() : imported_series(db, result.job);
    if (!holds_what_was_read_before(run, before)) {
        result.read_whole_again = true;
        return result;
    }
    const json spec = {
        {"import", {{"path", run.source}, {"format", run.format}, {"tool", run.tool}, {"source_id", run.source_id}}}};
    if (result.job == 0) {
        result.job = catalog.add_job(run.name, kBackend, remote_id, spec);
        result.created = true;
        result.changed = true;
    }
    const int64_t job = result.job;

    // The source's record: written when it differs from what the last import left.
    json files = run.files;
    json config = run.config;
    if (!run.tags.empty())
        config["tags"] = run.tags;
    // The source's own final values (W&B's summary) are kept beside the config: the catalog's summaries are computed
    // from the points, and a summary may hold values no series has ("best_step", a note).
    if (run.summary.is_object() && !run.summary.empty())
        config["summary"] = run.summary;
    const std::string config_text = config.dump(), files_text = files.dump(), damage_text = damage_json(run).dump();
    std::string stored_config;
    bool source_changed = true;
    {
        Statement select = db.prepare("SELECT path, format, tool, source_id, files, damage, config FROM import_sources "
                                      "WHERE job=?");
        select.bind(1, job);
        if (select.step()) {
            stored_config = select.text(6);
            source_changed = select.text(0) != run.source || select.text(1) != run.format ||
                             select.text(2) != run.tool || select.text(3) != run.source_id ||
                             select.text(4) != files_text || select.text(5) != damage_text ||
                             stored_config != config_text;
        }
    }
    if (source_changed) {
        Statement upsert =
            db.prepare("INSERT OR REPLACE INTO import_sources(job, path, format, tool, source_id, files, "
                       "damage, config, imported) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)");
        upsert.bind(1, job).bind(2, run.source).bind(3, run.format).bind(4, run.tool).bind(5, run.source_id);
        upsert.bind(6, files_text).bind(7, damage_text).bind(8, config_text).bind(9, wall_seconds());
        upsert.step();
        result.changed = true;
    }
    if (stored_config != config_text && config.is_object() && !config.empty()) {
        if (const std::string left_out = catalog.set_config(job, config); !left_out.empty())
            result.notes.push_back("the run's config was too large: " + left_out);
    }
    if (result.created) {
        std::vector<std::string> labels = {"imported", "import:" + run.format};
        if (!run.experiment.empty())
            labels.push_back("experiment:" + run.experiment);
        if (run.deleted_in_source)
            labels.push_back("deleted-in-source");
        labels.insert(labels.end(), run.labels.begin(), run.labels.end());
        catalog.add_tags(job, labels);
        if (!run.note.empty()) // on creation only: a note the user writes later is theirs
            catalog.set_note(job, run.note);
    }

    // Points: only those after what each series took before.
    // The new points' record times (step, wall time), one run sorted by step a series, merged once at the end: a
    // map lookup a point cost more than the rest of the import's bookkeeping together.
    std::vector<MetricPoint> times;
    std::vector<size_t> time_runs{0};
    const auto by_step = [](const MetricPoint& a, const MetricPoint& b) { return a.step < b.step; };
    for (const auto& [name, points] : run.scalars) {
        const auto it = before.find({"scalar", name});
        const Imported* had = it == before.end() ? nullptr : &it->second;
        const int64_t skipped = points_before(run, "scalar", name);
        const int64_t from = first_new_point(
            points, had, [](const importers::ScalarPoint& p) { return p.value; }, skipped);
        if (from < 0) {
            result.notes.push_back("series " + name + " of " + run.source + " was rewritten, not grown (" +
                                   std::to_string(skipped + static_cast<int64_t>(points.size())) + " points now, " +
                                   std::to_string(had->points) +
                                   " imported before, or a different last point): nothing added to it; delete the "
                                   "run and import it again to start over");
            continue;
        }
        result.points_kept += from;
        if (from == skipped + static_cast<int64_t>(points.size()))
            continue;
        std::vector<MetricPoint> add;
        add.reserve(points.size() - static_cast<size_t>(from - skipped));
        for (size_t i = static_cast<size_t>(from - skipped); i < points.size(); ++i) {
            const auto& p = points[i];
            ++result.points_added;
            if (!std::isfinite(p.value)) {
                ++result.not_finite;
                continue;
            }
            add.push_back({p.step, p.value});
            if (p.wall_time > 0 && std::isfinite(p.wall_time))
                times.push_back({p.step, p.wall_time});
        }
        if (!std::is_sorted(times.begin() + static_cast<std::ptrdiff_t>(time_runs.back()), times.end(), by_step))
            std::stable_sort(times.begin() + static_cast<std::ptrdiff_t>(time_runs.back()), times.end(), by_step);
        time_runs.push_back(times.size());
        catalog.append_points(job, name, add);
        remember_series(db, job, "scalar", name, skipped + static_cast<int64_t>(points.size()), points.back().step,
                        points.back().value);
        result.changed = true;
    }
    if (!times.empty()) {
        // The record times, for the wall-time and relative-time x-axes (xaxis.h), as ingest keeps them: one a step,
        // the latest of the points there.
        for (size_t width = 1; width + 1 < time_runs.size(); width *= 2)
            for (size_t i = 0; i + width + 1 < time_runs.size(); i += 2 * width) {
                const auto first = times.begin() + static_cast<std::ptrdiff_t>(time_runs[i]);
                const auto middle = times.begin() + static_cast<std::ptrdiff_t>(time_runs[i + width]);
                const auto last = times.begin() +
                                  static_cast<std::ptrdiff_t>(time_runs[std::min(i + 2 * width, time_runs.size() - 1)]);
                std::inplace_merge(first, middle, last, by_step);
            }
        size_t kept = 0;
        for (const MetricPoint& t : times) {
            if (kept > 0 && times[kept - 1].step == t.step)
                times[kept - 1].value = std::max(times[kept - 1].value, t.value);
            else
                times[kept++] = t;
        }
        times.resize(kept);
        catalog.append_points(job, "_time", times);
    }
    for (const auto& [name, points] : run.histograms) {
        const auto it = before.find({"histogram", name});
        const Imported* had = it == before.end() ? nullptr : &it->second;
        const int64_t skipped = points_before(run, "histogram", name);
        const int64_t from = first_new_point(
            points, had, [](const importers::HistogramPoint& h) { return h.num; }, skipped);
        if (from < 0) {
            result.notes.push_back("histogram " + name + " of " + run.source +
                                   " was rewritten, not grown: nothing added to it");
            continue;
        }
        const int64_t total = skipped + static_cast<int64_t>(points.size());
        if (from == total)
            continue;
        write_histograms(catalog, job, name, points, from - skipped, from);
        result.histograms_added += total - from;
        remember_series(db, job, "histogram", name, total, points.back().step, points.back().num);
        result.changed = true;
    }

    std::optional<ImageStore> image_store;
    std::vector<std::string> absolute_paths; // of run.files, made once
    for (const std::string& file : run.files)
        absolute_paths.push_back(run.images.empty() ? std::string() : absolute_path(file));
    for (const auto& [tag, images] : run.images) {
        const auto it = before.find({"image", tag});
        const Imported* had = it == before.end() ? nullptr : &it->second;
        const auto size_of = [](const importers::ImagePoint& image) {
            return static_cast<double>(image.encoded_bytes);
        };
        const int64_t from = first_new_point(images, had, size_of);
        if (from < 0) {
            result.notes.push_back("images " + tag + " of " + run.source + " were rewritten, not grown: nothing added");
            continue;
        }
        if (from == static_cast<int64_t>(images.size()))
            continue;
        if (!image_store)
            image_store.emplace(db);
        std::vector<ImageRef> refs;
        // From the border of the chunk the first new one falls in: the source still has the ones before it there
        // (first_new_point said so), so that chunk is written whole again and a damaged stored one is never read.
        const int64_t border = from - from % ImageStore::kChunkImages;
        refs.reserve(images.size() - static_cast<size_t>(border));
        for (size_t i = static_cast<size_t>(border); i < images.size(); ++i) {
            const importers::ImagePoint& image = images[i];
            ImageRef ref;
            ref.step = image.step;
            ref.time = image.wall_time;
            ref.width = image.width;
            ref.height = image.height;
            ref.bytes = static_cast<int64_t>(image.encoded_bytes);
            ref.file = image.file < run.files.size() ? absolute_paths.at(image.file) : std::string();
            ref.record_offset = static_cast<int64_t>(image.record_offset);
            ref.item = image.item;
            refs.push_back(std::move(ref));
        }
        image_store->append(job, tag, border, refs);
        result.images_added += static_cast<int64_t>(images.size()) - from;
        remember_series(db, job, "image", tag, static_cast<int64_t>(images.size()), images.back().step,
                        size_of(images.back()));
        result.changed = true;
    }

    // How it ended: set when it differs from what the row says.
    const auto [state, reason] = outcome(run);
    {
        Statement select = db.prepare("SELECT state, reason, started, finished FROM jobs WHERE id=?");
        select.bind(1, job);
        if (select.step() && (select.text(0) != state || select.text(1) != reason || select.real(2) != run.started ||
                              select.real(3) != run.finished)) {
            catalog.set_outcome(job, state, reason, run.started, run.finished);
            result.changed = true;
        }
    }
    return result;
}

} // namespace

std::string import_remote_id(const ImportedRun& run) {
    std::error_code ec;
    std::filesystem::path path = std::filesystem::weakly_canonical(std::filesystem::absolute(run.source, ec), ec);
    if (ec)
        path = run.source;
    std::string id = run.format + ":" + path.lexically_normal().generic_string();
    // A file that holds several runs (none of ours yet) would tell them apart by their own ids.
    if (!run.source_id.empty() && run.format != "mlflow" && run.format != "wandb")
        id += "#" + run.source_id;
    return id;
}

Expected<RunImportResult> import_run(Catalog& catalog, const ImportedRun& run) {
    Database& db = catalog.db();
    // Inside the caller's transaction a database error goes up as it came, for the caller to undo (CatalogWriter
    // retries a transient one with its whole batch): caught here it would let half an import commit.
    if (sqlite3_get_autocommit(db.handle()) == 0)
        return write(catalog, run);
    try {
        db.exec("BEGIN IMMEDIATE");
        catalog.forget_if_others_wrote(); // the console (or another import) may have written since
        RunImportResult result = write(catalog, run);
        db.exec("COMMIT");
        return result;
    } catch (const std::exception& e) {
        try {
            db.exec("ROLLBACK");
        } catch (...) {
        } // SQLite may have rolled it back itself
        catalog.discard_caches();
        return Error{"importing " + run.source + " into the catalog failed (" + e.what() +
                     "); the catalog is as it was; free disk space or close what locks it, then import again"};
    }
}

} // namespace traindeck
