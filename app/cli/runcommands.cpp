// traindeck-cli's commands on runs: ls, show, logs, import, export. They read the catalog through its own
// connection; import writes each run in a transaction of its own, as the console's writer does.
#include "cli.h"

#include "catalog.h"
#include "changewatch.h"
#include "followeddamage.h"
#include "jobstate.h"
#include "metricexport.h"
#include "readruns.h"
#include "runexport.h"
#include "runfield.h"
#include "runimport.h"
#include "runquery.h"
#include "sourcefollower.h"
#include "tfevents.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QJsonDocument>
#include <QProcess>
#include <QTimer>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <optional>
#include <unistd.h>

namespace traindeck::cli {

using nlohmann::json;

namespace {

json number_or_null(double value) { return std::isfinite(value) ? json(value) : json(nullptr); }

std::string number_cell(double value) { return std::isfinite(value) ? number_text(value) : std::string("-"); }

json run_json(const RunRecord& run, bool details) {
    json out = {{"id", run.id},
                {"name", run.name},
                {"state", run.state},
                {"reason", run.reason},
                {"backend", run.backend},
                {"remote_id", run.remote_id},
                {"progress", run.progress},
                {"spend", run.spend},
                {"loss", number_or_null(run.loss)},
                {"accuracy", number_or_null(run.accuracy)},
                {"created", run.created},
                {"started", run.started},
                {"finished", run.finished},
                {"starred", run.starred},
                {"archived", run.archived},
                {"tags", run.tags}};
    if (!details)
        return out;
    out["note"] = run.note;
    json config = json::object();
    for (const auto& [key, value] : run.config)
        config[key] = value.is_number() ? json(value.number) : json(value.text);
    out["config"] = config;
    json metrics = json::object();
    for (const auto& [name, summary] : run.summaries)
        metrics[name] = {{"last", number_or_null(summary.last)}, {"min", number_or_null(summary.min)},
                         {"max", number_or_null(summary.max)},   {"best", number_or_null(summary.best)},
                         {"last_step", summary.last_step},       {"points", summary.count}};
    out["metrics"] = metrics;
    return out;
}

// Columns padded to their widest cell (in characters: UTF-8 continuation bytes do not count); the last one is not
// padded. Plain std::string: ls prints 10,000 rows of it.
using Row = std::vector<std::string>;
size_t text_width(const std::string& text) {
    return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}
std::string table_text(const std::vector<Row>& rows) {
    std::vector<size_t> widths;
    for (const Row& row : rows)
        for (size_t i = 0; i < row.size(); ++i) {
            if (i >= widths.size())
                widths.push_back(0);
            widths[i] = std::max(widths[i], text_width(row[i]));
        }
    std::string text;
    for (const Row& row : rows) {
        for (size_t i = 0; i < row.size(); ++i) {
            text += row[i];
            if (i + 1 < row.size())
                text.append(widths[i] + 2 - text_width(row[i]), ' ');
        }
        text += '\n';
    }
    return text;
}

} // namespace

int cmd_ls(Cli& cli) {
    QStringList args = cli.options().args;
    const std::optional<QString> limit_text = take_option(args, "--limit");
    if (const QString unknown = unknown_option(args); !unknown.isEmpty())
        return cli.fail(kUsage, unknown);
    bool limit_ok = true;
    const int limit = limit_text ? limit_text->toInt(&limit_ok) : 0;
    if (!limit_ok || limit < 0)
        return cli.fail(kUsage, "--limit takes a number of runs");
    const std::string text = args.join(' ').toStdString();
    QueryError error;
    const RunQuery query = RunQuery::parse(text, &error);
    if (!query.valid())
        return cli.fail(kUsage, QString("the query \"%1\" is not valid at character %2: %3 (README: Query runs)")
                                    .arg(QString::fromStdString(text))
                                    .arg(error.position + 1)
                                    .arg(QString::fromStdString(error.message)));
    if (!cli.openCatalog())
        return kFailed;
    std::vector<RunRecord> runs;
    try {
        int64_t revision = 0;
        // Configs, summaries and tags only when the query may name them: a plain ls reads the jobs table alone.
        runs = cli.catalog().runs(0, &revision, args.join(QString()).trimmed().size() > 0);
    } catch (const std::exception& e) {
        return cli.fail(kFailed, QString("the catalog %1 could not be read: %2").arg(cli.catalogPath(), e.what()));
    }
    const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    std::vector<const RunRecord*> shown;
    for (const RunRecord& run : runs)
        if (!run.deleted && query.matches(run, now))
            shown.push_back(&run);
    std::sort(shown.begin(), shown.end(), [](const RunRecord* a, const RunRecord* b) { return a->id > b->id; });
    if (limit > 0 && shown.size() > static_cast<size_t>(limit))
        shown.resize(static_cast<size_t>(limit));
    json list = json::array();
    std::vector<Row> rows{{"ID", "NAME", "STATE", "BACKEND", "LOSS", "ACCURACY", "CREATED"}};
    rows.reserve(shown.size() + 1);
    for (const RunRecord* run : shown) {
        if (cli.json())
            list.push_back(run_json(*run, false));
        else
            rows.push_back({std::to_string(run->id), run->name, run->state, run->backend, number_cell(run->loss),
                            number_cell(run->accuracy), time_text(run->created).toStdString()});
    }
    if (cli.json() || shown.empty()) {
        cli.print(list, "no runs match");
    } else {
        const std::string text = table_text(rows);
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::fflush(stdout);
    }
    return kOk;
}

int cmd_show(Cli& cli) {
    QStringList args = cli.options().args;
    if (const QString unknown = unknown_option(args); !unknown.isEmpty())
        return cli.fail(kUsage, unknown);
    if (args.size() != 1)
        return cli.fail(kUsage, "usage: traindeck-cli show RUN");
    int exit = kOk;
    const std::optional<RunRecord> run = cli.findRun(args[0], &exit);
    if (!run)
        return exit;
    json out = run_json(*run, true);
    QString text = QString("Run %1: %2\n").arg(run->id).arg(QString::fromStdString(run->name));
    text += QString("  state     %1%2\n")
                .arg(QString::fromStdString(run->state),
                     run->reason.empty() ? QString() : " (" + QString::fromStdString(run->reason) + ")");
    text += QString("  backend   %1  (job %2)\n")
                .arg(QString::fromStdString(run->backend), QString::fromStdString(run->remote_id));
    text += QString("  created   %1\n").arg(time_text(run->created));
    if (run->started > 0)
        text += QString("  started   %1\n").arg(time_text(run->started));
    if (run->finished > 0)
        text += QString("  finished  %1\n").arg(time_text(run->finished));
    if (run->spend > 0)
        text += QString("  spend     $%1\n").arg(run->spend, 0, 'f', 2);
    if (!run->tags.empty()) {
        QStringList tags;
        for (const std::string& tag : run->tags)
            tags << QString::fromStdString(tag);
        text += "  tags      " + tags.join(", ") + "\n";
    }
    if (!run->note.empty())
        text += "  note      " + QString::fromStdString(run->note) + "\n";
    // Where an imported run came from, and what of it was damaged.
    Statement source = cli.catalog().db().prepare("SELECT path, format, tool, damage FROM import_sources WHERE job=?");
    source.bind(1, run->id);
    if (source.step()) {
        const json damage = json::parse(source.text(3), nullptr, false);
        out["source"] = {{"path", source.text(0)},
                         {"format", source.text(1)},
                         {"tool", source.text(2)},
                         {"damage", damage.is_array() ? damage : json::array()}};
        text += QString("  source    %1 (%2%3)\n")
                    .arg(QString::fromStdString(source.text(0)), QString::fromStdString(source.text(1)),
                         source.text(2).empty() ? QString() : ", written by " + QString::fromStdString(source.text(2)));
        if (damage.is_array())
            for (const json& piece : damage)
                text += "  damaged   " + QString::fromStdString(piece.dump()) + "\n";
    }
    // What the run was made of (backend/worker/capture.h): the newest capture of each part.
    Statement captured = cli.catalog().db().prepare("SELECT part, data FROM captures WHERE job=? AND seq IN (SELECT "
                                                    "MAX(seq) FROM captures WHERE job=? GROUP BY part)");
    captured.bind(1, run->id).bind(2, run->id);
    while (captured.step()) {
        const json data = json::parse(captured.text(1), nullptr, false);
        if (!data.is_object())
            continue;
        out["capture"][captured.text(0)] = data;
        if (captured.text(0) == "code" && data.contains("code") && data["code"].is_object()) {
            const json& code = data["code"];
            const auto field = [&](const char* key) {
                return code.contains(key) && code[key].is_string()
                           ? QString::fromStdString(code[key].get<std::string>())
                           : QString();
            };
            if (code.value("kind", "") == "git")
                text += QString("  code      git %1 @ %2%3%4\n")
                            .arg(field("branch"), field("commit").left(10),
                                 code.value("dirty", false) ? ", with uncommitted changes" : ", clean",
                                 field("remote").isEmpty() ? QString() : " (" + field("remote") + ")");
            else if (!field("kind").isEmpty())
                text += "  code      " + field("kind") + " " + field("root") + "\n";
            if (!field("snapshot").isEmpty())
                text += QString("  snapshot  %1 (%2 files, %3 bytes)\n")
                            .arg(field("snapshot"))
                            .arg(code.value("files", 0))
                            .arg(code.value("bytes", int64_t(0)));
            if (code.contains("left_out") && code["left_out"].is_array())
                for (const json& row : code["left_out"])
                    if (row.is_object())
                        text += QString("  left out  %1: %2\n")
                                    .arg(QString::fromStdString(row.value("path", "")),
                                         QString::fromStdString(row.value("why", "")));
        }
        if (captured.text(0) == "environment" && data.contains("python") && data["python"].is_object())
            text += QString("  python    %1 (%2 packages)\n")
                        .arg(QString::fromStdString(data["python"].value("executable", "")))
                        .arg(data["python"].contains("packages") && data["python"]["packages"].is_object()
                                 ? static_cast<int>(data["python"]["packages"].size())
                                 : 0);
    }
    if (!run->config.empty()) {
        text += "Config\n";
        std::vector<Row> rows;
        for (const auto& [key, value] : run->config)
            rows.push_back({"  " + key, value.text});
        text += QString::fromStdString(table_text(rows));
    }
    if (!run->summaries.empty()) {
        text += "Metrics\n";
        std::vector<Row> rows{{"  NAME", "LAST", "MIN", "MAX", "LAST STEP", "POINTS"}};
        for (const auto& [name, summary] : run->summaries)
            rows.push_back({"  " + name, number_cell(summary.last), number_cell(summary.min), number_cell(summary.max),
                            std::to_string(summary.last_step), std::to_string(summary.count)});
        text += QString::fromStdString(table_text(rows));
    }
    Statement artifacts = cli.catalog().db().prepare("SELECT kind, path, bytes FROM artifacts WHERE job=? ORDER BY id");
    artifacts.bind(1, run->id);
    json files = json::array();
    while (artifacts.step()) {
        if (files.empty())
            text += "Artifacts\n";
        files.push_back({{"kind", artifacts.text(0)}, {"path", artifacts.text(1)}, {"bytes", artifacts.integer(2)}});
        text += QString("  %1  %2 (%3 bytes)\n")
                    .arg(QString::fromStdString(artifacts.text(0)), QString::fromStdString(artifacts.text(1)))
                    .arg(artifacts.integer(2));
    }
    out["artifacts"] = files;
    cli.print(out, text);
    return kOk;
}

namespace {

volatile std::sig_atomic_t g_stop_following = 0;

// One pass over a path: read, import each run (its own transaction), and say what changed. Following, the path is
// read by its follower (only what changed since its last pass). With only_changes (a follow's later passes) runs that
// gained nothing are not mentioned. Damage is said as `damage` lets it (each piece once; while following, a file's
// cut-short end not until following stops with it so).
json import_path(Cli& cli, const QString& path, const importers::ReadRunsOptions& options,
                 importers::SourceFollower* follower, bool only_changes, importers::FollowedDamage& damage_said,
                 QString& text, int& exit) {
    const auto started = std::chrono::steady_clock::now();
    const bool following = follower != nullptr;
    json runs = json::array();
    int64_t points = 0, runs_read = 0;
    // Each run imported as soon as it is read (a logdir is never in memory whole).
    const auto each =
        [&](importers::ImportedRun&& run) {
            ++runs_read;
            auto result = import_run(cli.catalog(), run);
            if (follower && (!result || result->read_whole_again))
                follower->forget(run.source);
            if (!result) {
                cli.fail(kFailed, QString("%1 was not imported: %2")
                                      .arg(QString::fromStdString(run.source), QString::fromStdString(result.error())));
                runs.push_back({{"source", run.source}, {"error", result.error()}});
                exit = kFailed;
                return true;
            }
            points += result->points_added;
            if (only_changes && !result->changed)
                return true;
            const std::vector<importers::Damage> said = damage_said.pass(run.source, run.damage, following);
            json damage = json::array();
            for (const importers::Damage& piece : said)
                damage.push_back({{"file", piece.file}, {"offset", piece.offset}, {"what", piece.what}});
            if (!said.empty() && exit == kOk)
                exit = kDamaged;
            runs.push_back({{"run", result->job},
                            {"name", run.name},
                            {"source", run.source},
                            {"created", result->created},
                            {"points_added", result->points_added},
                            {"points_kept", result->points_kept},
                            {"not_finite", result->not_finite},
                            {"histograms_added", result->histograms_added},
                            {"images_added", result->images_added},
                            {"damage", damage},
                            {"notes", result->notes}});
            text += QString("%1 run %2 %3: %4 points added, %5 already here%6\n")
                        .arg(result->created ? "new" : (result->changed ? "grew" : "same"))
                        .arg(result->job)
                        .arg(QString::fromStdString(run.name))
                        .arg(result->points_added)
                        .arg(result->points_kept)
                        .arg(result->not_finite ? QString(" (%1 NaN or infinite, not stored)").arg(result->not_finite)
                                                : QString());
            for (const importers::Damage& piece : said)
                text += QString("  damaged: %1 at byte %2: %3\n")
                            .arg(QString::fromStdString(piece.file))
                            .arg(piece.offset)
                            .arg(QString::fromStdString(piece.what));
            for (const std::string& note : result->notes)
                text += "  note: " + QString::fromStdString(note) + "\n";

            return true;
        };
    auto read = follower ? follower->pass(each)
                         : importers::read_runs_each(QFileInfo(path).absoluteFilePath().toStdString(), options, each);
    if (!read) {
        cli.fail(kFailed, QString::fromStdString(read.error()));
        exit = kFailed;
        return {{"path", path.toStdString()}, {"error", read.error()}};
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (!only_changes) {
        for (const std::string& note : read->notes)
            text += "note: " + QString::fromStdString(note) + "\n";
        text += QString("%1: %2 run(s) from %3 in %4 s (%5 points/s)\n")
                    .arg(path)
                    .arg(runs_read)
                    .arg(QString::fromStdString(read->format))
                    .arg(seconds, 0, 'f', 2)
                    .arg(seconds > 0 ? points / seconds : 0.0, 0, 'f', 0);
    }
    return {{"path", path.toStdString()},
            {"format", read->format},
            {"runs", runs},
            {"notes", read->notes},
            {"seconds", seconds}};
}

} // namespace

int cmd_import(Cli& cli) {
    QStringList args = cli.options().args;
    importers::ReadRunsOptions options;
    if (const auto format = take_option(args, "--format"))
        options.format = format->toStdString();
    options.include_deleted = take_flag(args, "--include-deleted");
    const bool follow = take_flag(args, "--follow");
    const std::optional<QString> interval_text = take_option(args, "--interval");
    if (const QString unknown = unknown_option(args); !unknown.isEmpty())
        return cli.fail(kUsage, unknown);
    bool interval_ok = true;
    const int interval_ms = interval_text ? interval_text->toInt(&interval_ok) : 200;
    if (!interval_ok || interval_ms < 10 || interval_ms > 3600000)
        return cli.fail(kUsage, "--interval takes milliseconds between looks at the files (10 to 3600000)");
    if (args.isEmpty())
        return cli.fail(kUsage, "usage: traindeck-cli import PATH... [--format tensorboard|mlflow|wandb|csv|jsonl] "
                                "[--include-deleted] [--follow [--interval MS]]");
    if (!cli.openCatalog())
        return kFailed;
    int exit = kOk;
    json report = json::array();
    QString text;
    std::vector<importers::SourceFollower> followers;
    importers::FollowedDamage damage_said;
    followers.reserve(static_cast<size_t>(args.size()));
    // Following, a change under a path wakes the loop below at once (before the first import: a write during it
    // counts too); the look at every interval stays, for what inotify is not told of (NFS).
    std::vector<std::string> absolute;
    for (const QString& path : args)
        absolute.push_back(QFileInfo(path).absoluteFilePath().toStdString());
    std::optional<importers::ChangeWatch> watch;
    if (follow)
        watch.emplace(absolute);
    for (size_t i = 0; i < absolute.size(); ++i) {
        if (follow)
            followers.emplace_back(absolute[i], options);
        report.push_back(import_path(cli, args[static_cast<int>(i)], options, follow ? &followers.back() : nullptr,
                                     false, damage_said, text, exit));
    }
    cli.print(report, text);
    if (!follow)
        return exit;
    // Live: each path is looked at when a change under it is told, and at every interval (a stat of its files), and
    // what changed is read again (its follower reads only that); import_run adds only what it gained. Until SIGINT or
    // SIGTERM.
    std::signal(SIGINT, [](int) { g_stop_following = 1; });
    std::signal(SIGTERM, [](int) { g_stop_following = 1; });
    if (!cli.json())
        std::fprintf(stderr, "traindeck-cli: following %s (Ctrl+C stops)\n", qPrintable(args.join(", ")));
    int pass_ms = 0; // how long the last look's reading took: the next waits at least that (half a core at most)
    while (!g_stop_following) {
        if (const std::string problem = watch->take_problem(); !problem.empty())
            std::fprintf(stderr, "traindeck-cli: %s (looking every %d ms)\n", problem.c_str(), interval_ms);
        watch->wait(interval_ms, std::max(20, pass_ms));
        const auto look = std::chrono::steady_clock::now();
        for (int i = 0; i < args.size() && !g_stop_following; ++i) {
            importers::SourceFollower& follower = followers[static_cast<size_t>(i)];
            if (!follower.changed())
                continue;
            QString changes;
            int pass_exit = kOk;
            // A pass that failed (a path that cannot be read) is tried again when something at it changes; the worst
            // outcome is kept.
            const json pass = import_path(cli, args[i], options, &follower, true, damage_said, changes, pass_exit);
            if (pass_exit == kFailed || (pass_exit == kDamaged && exit == kOk))
                exit = pass_exit;
            if (cli.json())
                std::printf("%s\n", pass.dump().c_str());
            else if (!changes.isEmpty())
                std::printf("%s", qPrintable(changes));
            std::fflush(stdout);
        }
        pass_ms = static_cast<int>(std::min<int64_t>(
            interval_ms,
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - look).count()));
    }
    // A file that still ends inside a record when following stops: its writer stopped mid-record, or is slow.
    json ends = json::array();
    QString ends_text;
    for (const importers::Damage& piece : damage_said.finish()) {
        ends.push_back({{"file", piece.file}, {"offset", piece.offset}, {"what", piece.what}});
        ends_text += QString("damaged (still so when following stopped): %1 at byte %2: %3\n")
                         .arg(QString::fromStdString(piece.file))
                         .arg(piece.offset)
                         .arg(QString::fromStdString(piece.what));
    }
    if (!ends.empty()) {
        if (exit == kOk)
            exit = kDamaged;
        if (cli.json())
            std::printf("%s\n", json{{"damage", ends}}.dump().c_str());
        else
            std::printf("%s", qPrintable(ends_text));
        std::fflush(stdout);
    }
    return exit;
}

int cmd_export(Cli& cli) {
    QStringList args = cli.options().args;
    const std::optional<QString> csv = take_option(args, "--csv"), jsonl = take_option(args, "--jsonl"),
                                 tensorboard = take_option(args, "--tensorboard"), onnx = take_option(args, "--onnx");
    const bool no_int8 = take_flag(args, "--no-int8");
    if (const QString unknown = unknown_option(args); !unknown.isEmpty())
        return cli.fail(kUsage, unknown);
    if (args.isEmpty() || (!csv && !jsonl && !tensorboard && !onnx))
        return cli.fail(kUsage,
                        "usage: traindeck-cli export RUN... (--csv FILE|DIR | --jsonl FILE|DIR | --tensorboard DIR | "
                        "--onnx DIR [--no-int8])...");
    if (onnx && args.size() > 1)
        return cli.fail(kUsage, "--onnx exports one run's model: name one run");
    int exit = kOk;
    std::vector<RunRecord> runs;
    for (const QString& name : args) {
        std::optional<RunRecord> run = cli.findRun(name, &exit);
        if (!run)
            return exit;
        runs.push_back(std::move(*run));
    }
    const RunRecord* const run = &runs.front();
    json written = json::array();
    QString text;
    // One run: --csv and --jsonl name its file (or a folder that exists). A selection: they name a folder, as
    // --tensorboard does, with a file (a run folder) a run named after it (export_paths: no name leaves the folder).
    std::vector<std::pair<int64_t, std::string>> selection;
    selection.reserve(runs.size());
    for (const RunRecord& each : runs)
        selection.emplace_back(each.id, each.name);
    struct Plan {
        RunExportFormat format;
        QString folder; // "" for one run's named file
        std::vector<std::string> targets;
    };
    std::vector<Plan> plans;
    QStringList refused;
    for (const auto& [path, format] : {std::pair{csv, RunExportFormat::csv}, std::pair{jsonl, RunExportFormat::jsonl},
                                       std::pair{tensorboard, RunExportFormat::tensorboard}}) {
        if (!path)
            continue;
        Plan plan{format, *path, export_paths(path->toStdString(), selection, format)};
        const bool named_file = runs.size() == 1 && format != RunExportFormat::tensorboard && !QFileInfo(*path).isDir();
        if (named_file) {
            // The file the user named is written (over what is there, as any program saving to a named file).
            plan.folder.clear();
            plan.targets = {path->toStdString()};
        } else {
            // Names the runs chose never go over a file: refused, with nothing written (for TensorBoard, a run
            // folder with event files: TensorBoard reads a folder's event files as one run, every point twice).
            for (const std::string& existing : existing_exports(plan.targets, format))
                refused << QString::fromStdString(existing);
        }
        plans.push_back(std::move(plan));
    }
    if (!refused.isEmpty())
        return cli.fail(kFailed, QString("%1 already holds what the export would write (an earlier export?)%2; remove "
                                         "it or export to another folder; nothing was written")
                                     .arg(refused.join(", "),
                                          tensorboard ? ": TensorBoard reads a folder's event files as one run, so "
                                                        "every point would show twice"
                                                      : ""));
    for (const Plan& plan : plans)
        if (!plan.folder.isEmpty() && !QDir().mkpath(plan.folder))
            return cli.fail(kFailed,
                            QString("cannot create the folder %1; check its parent's permissions").arg(plan.folder));
    for (const Plan& plan : plans) {
        for (size_t i = 0; i < runs.size(); ++i) {
            auto result = export_run(cli.catalog(), runs[i].id, plan.format, plan.targets[i]);
            if (!result)
                return cli.fail(kFailed, QString("%1 (%2 file(s) written before it)")
                                             .arg(QString::fromStdString(result.error()))
                                             .arg(written.size()));
            const char* format_name = plan.format == RunExportFormat::csv     ? "csv"
                                      : plan.format == RunExportFormat::jsonl ? "jsonl"
                                                                              : "tensorboard";
            json entry = {
                {"run", runs[i].id}, {"format", format_name}, {"path", result->path}, {"points", result->points}};
            text += QString("%1 points written to %2\n").arg(result->points).arg(QString::fromStdString(result->path));
            for (const auto& [tag, renamed] : result->renamed) {
                entry["renamed"][tag] = renamed;
                text += QString("  the tag \"%1\" is written as \"%2\": \"%1\" is a JSONL line's own key\n")
                            .arg(QString::fromStdString(tag), QString::fromStdString(renamed));
            }
            written.push_back(std::move(entry));
        }
    }
    if (onnx) {
        // The model: the run's newest checkpoint from its backend, exported by traindeck-train as the console's
        // Export dialog does (fp32 ONNX, int8 unless --no-int8, safetensors), with the report it prints.
        const json request = [&] {
            Statement select = cli.catalog().db().prepare("SELECT spec FROM jobs WHERE id=?");
            select.bind(1, run->id);
            return select.step() ? json::parse(select.text(0), nullptr, false) : json();
        }();
        if (!request.is_object() || !request.contains("builtin"))
            return cli.fail(kUsage, QString("run %1 is not a built-in job: only the built-in trainer's models export "
                                            "to ONNX (a script's model is its own to save)")
                                        .arg(run->id));
        Backend* backend = cli.connect(QString::fromStdString(run->backend), &exit);
        if (!backend)
            return exit;
        QDir().mkpath(*onnx);
        QString error;
        const QString checkpoint = backend->fetchCheckpoint(QString::fromStdString(run->remote_id),
                                                            QDir(*onnx).filePath("checkpoint"), &error);
        if (checkpoint.isEmpty())
            return cli.fail(kFailed, "no checkpoint to export: " + error);
        const QString spec_path = QDir(*onnx).filePath("spec.json");
        {
            QFile spec(spec_path);
            if (!spec.open(QIODevice::WriteOnly) ||
                spec.write(QByteArray::fromStdString(request["builtin"].dump(2))) < 0)
                return cli.fail(kFailed, QString("cannot write %1: %2").arg(spec_path, spec.errorString()));
        }
        QStringList train_args = {"export", spec_path, "--checkpoint", checkpoint, "--out", *onnx, "--name", "model"};
        if (no_int8)
            train_args << "--no-int8";
        QProcess train;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        if (const std::string version = request.value("dataset", std::string()); !version.empty()) {
            Statement root = cli.catalog().db().prepare("SELECT root FROM dataset_versions WHERE version=?");
            root.bind(1, version);
            if (root.step())
                env.insert("TRAINDECK_DATASET_DIR", QString::fromStdString(root.text(0)));
        }
        train.setProcessEnvironment(env);
        train.setProcessChannelMode(QProcess::ForwardedErrorChannel);
        const QString binary =
            qEnvironmentVariable("TRAINDECK_TRAIN_BINARY", QCoreApplication::applicationDirPath() + "/traindeck-train");
        train.start(binary, train_args);
        if (!train.waitForFinished(-1) || train.exitStatus() != QProcess::NormalExit || train.exitCode() != 0)
            return cli.fail(kFailed, QString("the export failed: %1 %2")
                                         .arg(binary, train.error() == QProcess::FailedToStart
                                                          ? "could not be started: " + train.errorString()
                                                          : QString("exited with %1").arg(train.exitCode())));
        const QList<QByteArray> lines = train.readAllStandardOutput().trimmed().split('\n');
        const json report = json::parse(lines.last().toStdString(), nullptr, false);
        if (!report.is_object())
            return cli.fail(kFailed, "the export printed no report");
        // The files are the run's artifacts, as the console records them.
        for (const json& artifact : report.value("artifacts", json::array()))
            if (artifact.is_object())
                cli.catalog().add_artifact(run->id, artifact.value("kind", std::string()),
                                           artifact.value("path", std::string()), artifact.value("bytes", int64_t(0)),
                                           report);
        written.push_back({{"format", "onnx"}, {"report", report}});
        text += QString("exported to %1:\n%2\n").arg(*onnx, QString::fromStdString(report.dump(2)));
    }
    cli.print(written, text);
    return kOk;
}

} // namespace traindeck::cli
