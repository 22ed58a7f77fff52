#pragma once
// "Import runs…" without widgets: runs of other tools (backend/importers' read_runs: TensorBoard logdirs, MLflow
// stores, W&B offline runs, metric tables) read on a pool thread and written into the catalog by its one writer, a
// run at a time, the next run read while one is written (a TensorBoard logdir is never in memory whole;
// model/runimport: idempotent, so importing again adds only what a source gained). Progress after
// each run (points and points/s); cancel() stops before the next run, and what was imported stays. The summary says
// what came in and every piece of damage (file and byte offset). Following a path (a logdir still being written)
// streams what is appended into the catalog as a local job's points stream.
#include "catalog.h"

#include <QObject>
#include <QString>
#include <QStringList>

#include <atomic>
#include <memory>

namespace traindeck {

class RunImporter : public QObject {
    Q_OBJECT
public:
    struct Progress {
        int runs_done = 0, runs_total = 0; // runs_total grows as runs are read
        qint64 points = 0;                 // scalar points added so far
        double points_per_second = 0;
        QString current;        // the path or run being read or written
        bool following = false; // the first pass is done; now looking at the files for what is written there
        QStringList lines;      // what the pass since the last report did (a line a run that changed)
        QList<qint64> changed;  // the runs it wrote to (the window refreshes them)
    };
    struct Summary {
        int runs_new = 0, runs_grown = 0, runs_same = 0, runs_failed = 0;
        qint64 points = 0, damage = 0;
        QList<qint64> jobs; // the catalog ids of the runs imported, in order
        QStringList lines;  // one a run, then each piece of damage and each note
        bool cancelled = false;
        QString text() const; // a paragraph for the dialog and the alerts
    };

    RunImporter(CatalogWriter& writer, QObject* parent = nullptr);
    ~RunImporter() override;

    bool busy() const { return busy_; }
    // format: "" (detect), or one of importers::read_formats(); false when an import is already under way. With
    // follow, once everything is in it keeps looking at the paths (a stat of their files every 200 ms) and imports
    // what is written there, as it is written, until cancel().
    bool start(const QStringList& paths, const QString& format = {}, bool include_deleted = false, bool follow = false);
    void cancel();
    // Stops every import (as cancel() does) and waits for their threads: before the catalog's writer goes (the
    // console's exit), so no import thread is left writing through it.
    static void finishAll();

signals:
    void progress(const RunImporter::Progress& progress);
    void finished(const RunImporter::Summary& summary);

private:
    CatalogWriter& writer_;
    bool busy_ = false;
    std::shared_ptr<std::atomic<bool>> cancelled_;
};

} // namespace traindeck
