// RunImporter (runimporter.h): the reading on a pool thread of its own (it may take minutes: the network pool stays
// free), each run's writing on the catalog's writer thread; the GUI thread only starts, cancels and shows.
#include "runimporter.h"

#include "background.h"
#include "changewatch.h"
#include "followeddamage.h"
#include "readruns.h"
#include "runimport.h"
#include "sourcefollower.h"

#include <QFileInfo>
#include <QThreadPool>

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>

namespace traindeck {

namespace {

// Two at once: an import being followed keeps its thread until stopped, and another import still starts.
QThreadPool* importPool() {
    static QThreadPool* pool = [] {
        auto* made = new QThreadPool(QCoreApplication::instance());
        made->setMaxThreadCount(2);
        return made;
    }();
    return pool;
}

// Set by finishAll(): every import stops at its next look, as if cancelled.
std::atomic<bool> g_finishing{false};

} // namespace

QString RunImporter::Summary::text() const {
    QString out = RunImporter::tr("%1 run(s) imported: %2 new, %3 grown, %4 unchanged; %5 points added")
                      .arg(runs_new + runs_grown + runs_same)
                      .arg(runs_new)
                      .arg(runs_grown)
                      .arg(runs_same)
                      .arg(points);
    if (runs_failed > 0)
        out += RunImporter::tr("; %1 failed").arg(runs_failed);
    if (damage > 0)
        out += RunImporter::tr("; %1 damaged piece(s) skipped, the rest read").arg(damage);
    if (cancelled)
        out += RunImporter::tr("; cancelled (what was imported stays: importing again continues)");
    return out;
}

RunImporter::RunImporter(CatalogWriter& writer, QObject* parent)
    : QObject(parent), writer_(writer), cancelled_(std::make_shared<std::atomic<bool>>(false)) {}

RunImporter::~RunImporter() { cancel(); }

void RunImporter::finishAll() {
    g_finishing = true;
    importPool()->waitForDone();
    g_finishing = false;
}

void RunImporter::cancel() { cancelled_->store(true); }

bool RunImporter::start(const QStringList& paths, const QString& format, bool include_deleted, bool follow) {
    if (busy_)
        return false;
    busy_ = true;
    cancelled_ = std::make_shared<std::atomic<bool>>(false);
    CatalogWriter* writer = &writer_;
    run_in_background_reporting(
        this,
        [writer, paths, follow, cancel_flag = cancelled_,
         options = importers::ReadRunsOptions{format.toStdString(), include_deleted}](const auto& report) {
            Summary summary;
            Progress progress;
            const auto stopped = [&] { return cancel_flag->load() || g_finishing.load(); }; // cancel(), or the exit
            const auto started = std::chrono::steady_clock::now();
            const auto seconds = [&] {
                return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
            };
            // The run written last: its result is taken once the next run is read, so the catalog's writer writes
            // one run while this thread reads the next (the logdir is never in memory whole).
            std::shared_ptr<Expected<RunImportResult>> result;
            std::shared_ptr<importers::ImportedRun> written;
            bool later = false; // a follow's later pass: only the runs that changed are spoken of
            // Each piece of damage said once; while following, a file's cut-short end not until following stops.
            importers::FollowedDamage damage_said;
            // Following, each path has a follower, which reads only what changed since its last pass.
            std::vector<importers::SourceFollower> followers;
            followers.reserve(static_cast<size_t>(paths.size()));
            importers::SourceFollower* follower = nullptr; // the path's being read, when following
            const auto take_result = [&] {
                if (!written)
                    return;
                // flush() returns once the run is committed, or says why not; while the catalog cannot take it now
                // (another program holds it, a full disk) the writer keeps it and retries: wait for it.
                std::string error = writer->flush();
                while (error.rfind("not written yet", 0) == 0 && !stopped())
                    error = writer->flush();
                const std::shared_ptr<importers::ImportedRun> run = std::exchange(written, nullptr);
                const QString name = QString::fromStdString(run->name);
                if (follower && (!error.empty() || !*result || (*result)->read_whole_again))
                    follower->forget(run->source); // read whole at the next pass
                if (!error.empty() || !*result) {
                    ++summary.runs_failed;
                    progress.lines << tr("%1 was not imported: %2")
                                          .arg(name, QString::fromStdString(error.empty() ? result->error() : error));
                } else {
                    const RunImportResult& done = **result;
                    summary.points += done.points_added;
                    if (!later) {
                        (done.created ? summary.runs_new : done.changed ? summary.runs_grown : summary.runs_same)++;
                        summary.jobs << done.job;
                        ++progress.runs_done;
                    }
                    if (!later || done.changed) {
                        progress.changed << done.job;
                        progress.lines << tr("%1 run %2 “%3”: %4 points added, %5 already here")
                                              .arg(done.created   ? tr("New")
                                                   : done.changed ? tr("Grown")
                                                                  : tr("Unchanged"))
                                              .arg(done.job)
                                              .arg(name)
                                              .arg(done.points_added)
                                              .arg(done.points_kept);
                        for (const importers::Damage& piece : damage_said.pass(run->source, run->damage, follow)) {
                            ++summary.damage;
                            progress.lines << tr("  damaged: %1 at byte %2: %3")
                                                  .arg(QString::fromStdString(piece.file))
                                                  .arg(piece.offset)
                                                  .arg(QString::fromStdString(piece.what));
                        }
                        for (const std::string& note : done.notes)
                            progress.lines << "  " + QString::fromStdString(note);
                    }
                    progress.points = summary.points;
                    progress.points_per_second = summary.points / std::max(seconds(), 1e-3);
                }
                if (!progress.lines.isEmpty() || !later)
                    report(progress);
                summary.lines << progress.lines;
                progress.lines.clear();
                progress.changed.clear();
            };
            const auto import_path = [&](const QString& path) {
                if (!later) {
                    progress.current = path;
                    report(progress);
                }
                const auto each =
                    [&](importers::ImportedRun&& run) {
                        take_result(); // the run before, written while this one was read
                        if (stopped())
                            return false;
                        if (!later)
                            ++progress.runs_total;
                        progress.current = QString::fromStdString(run.name);
                        if (!later)
                            report(progress);
                        result = std::make_shared<Expected<RunImportResult>>(Error{"not written"});
                        written = std::make_shared<importers::ImportedRun>(std::move(run));
                        writer->post(
                            [into = result, run = written](Catalog& catalog) { *into = import_run(catalog, *run); });
                        return true;
                    };
                auto read = follower ? follower->pass(each)
                                     : importers::read_runs_each(QFileInfo(path).absoluteFilePath().toStdString(),
                                                                 options, each);
                take_result();
                if (!read) {
                    ++summary.runs_failed;
                    progress.lines << tr("%1: %2").arg(path, QString::fromStdString(read.error()));
                } else if (!later) {
                    for (const std::string& note : read->notes)
                        progress.lines << QString::fromStdString(note);
                }
                if (!progress.lines.isEmpty())
                    report(progress);
                summary.lines << progress.lines;
                progress.lines.clear();
                progress.changed.clear();
            };
            // Following, a change under a path wakes the loop below at once (watched before the first import: a
            // write during it counts too); the look every 200 ms stays, for what inotify is not told of (NFS).
            std::vector<std::string> absolute;
            for (const QString& path : paths)
                absolute.push_back(QFileInfo(path).absoluteFilePath().toStdString());
            std::optional<importers::ChangeWatch> watch;
            if (follow)
                watch.emplace(absolute);
            for (size_t i = 0; i < absolute.size() && !stopped(); ++i) {
                if (follow)
                    follower = &followers.emplace_back(absolute[i], options);
                import_path(paths[static_cast<int>(i)]);
            }
            later = true;
            if (follow && !stopped()) {
                progress.following = true;
                progress.current = paths.join(QStringLiteral(", "));
                report(progress);
            }
            int pass_ms = 0; // how long the last look's reading took: the next waits at least that
            while (follow && !stopped()) {
                if (const std::string problem = watch->take_problem(); !problem.empty()) {
                    progress.lines << tr("%1 (looking every 200 ms)").arg(QString::fromStdString(problem));
                    report(progress);
                    summary.lines << progress.lines;
                    progress.lines.clear();
                }
                for (int waited = 0; waited < 200 && !stopped(); waited += 20)
                    if (watch->wait(20, std::max(20, pass_ms)))
                        break;
                const auto look = std::chrono::steady_clock::now();
                // A pass that failed (a path that cannot be read) is tried again when something at it changes.
                for (size_t i = 0; i < followers.size() && !stopped(); ++i) {
                    follower = &followers[i];
                    if (follower->changed())
                        import_path(paths[static_cast<int>(i)]);
                }
                pass_ms = static_cast<int>(std::min<int64_t>(
                    200, std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - look)
                             .count()));
            }
            // A file still ending inside a record when following stops: its writer stopped mid-record, or is slow.
            for (const importers::Damage& piece : damage_said.finish()) {
                ++summary.damage;
                summary.lines << tr("  damaged (still so when following stopped): %1 at byte %2: %3")
                                     .arg(QString::fromStdString(piece.file))
                                     .arg(piece.offset)
                                     .arg(QString::fromStdString(piece.what));
            }
            summary.cancelled = stopped() && !follow;
            return summary;
        },
        [this](const Progress& progress) { emit this->progress(progress); },
        [this](const Summary& summary) {
            busy_ = false;
            emit finished(summary);
        },
        importPool());
    return true;
}

} // namespace traindeck
