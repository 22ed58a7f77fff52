#pragma once
// Keeps the console in step with one backend's sweeps (README: Sweeps), as JobSync does with its jobs: every ~2 s it
// asks the backend for its sweeps and, for each sweep that runs, changed since the last answer or is looked at, its
// trials; every trial job the catalog does not have yet becomes a run (through the catalog's writer: named as the
// worker names it, tagged sweep:ID, its parameters applied to the base as its spec, so they are config columns from
// the start) and is watched like any job, so its curves stream in. A trial the worker resumes (an ASHA promotion, a
// resumed sweep) is watched again from the catalog's last event. The answers are handed on (sweepsChanged,
// detailChanged) for the sweep view. Also the sweep's actions — create, stop, resume, extend — and "promote the best
// trial to a full run" (a normal job through JobController). Every backend call runs off the GUI thread
// (run_in_background, BackendRef); one poll at a time. Nothing a worker says chooses a local path: its ids are
// numbers, its names only names. No widgets.
#include "catalog.h"

#include <QElapsedTimer>
#include <QHash>
#include <QJsonObject>
#include <QObject>
#include <QSet>

class QTimer;

namespace traindeck {

class JobController;
class JobSync;

// The job request a sweep's trial is (trial > 0: "<name> #<trial>", with TRAINDECK_PARAMS, TRAINDECK_SWEEP and
// TRAINDECK_TRIAL in its env), or its full run (trial 0: the base with the parameters and no early stopping, named
// "<name> best"): the sweep's spec's base with `params` set at their dotted paths in its built-in spec (a base
// counting ASHA epochs trains max_resource epochs, as the worker's trials do). {} and *error when the spec cannot be
// read or a parameter not applied.
QJsonObject sweep_trial_request(const QJsonObject& spec, qint64 sweep, const QJsonObject& params, int trial,
                                QString* error);

class SweepSync : public QObject {
    Q_OBJECT
public:
    SweepSync(JobSync& sync, JobController& controller, QObject* parent = nullptr);

    const QString& backendName() const;
    // Polls every interval_ms from now on (the first poll at once).
    void start(int interval_ms = 2000);
    // One poll now, or right after the one under way.
    void poll();
    // The latest answers: {"sweeps": [...]}, and one sweep's detail ({} until it was fetched).
    const QJsonObject& sweeps() const { return sweeps_; }
    QJsonObject detail(qint64 sweep) const { return details_.value(sweep); }
    // The sweep the user looks at: its detail is fetched on every poll, whatever its state.
    void setWatchedSweep(qint64 sweep);
    // The backend's prices ({"base_per_hour", "gpu_per_hour", "cpu_per_hour", "currency"}; {} until known).
    const QJsonObject& prices() const { return prices_; }

    // Each answers through a signal (created / actionDone, or failed) and polls again.
    void create(const QJsonObject& spec);
    void stop(qint64 sweep);
    void resume(qint64 sweep);
    void extend(qint64 sweep, const QJsonObject& body); // {"max_trials", "budget", "gpu_hours"}, any of them
    // Submits the best trial's full run (sweep_trial_request with trial 0) through the JobController; false and
    // failed() when the sweep has no best trial yet or its spec cannot be read.
    bool promoteBest(qint64 sweep);

signals:
    void sweepsChanged(const QJsonObject& sweeps);
    void detailChanged(qint64 sweep, const QJsonObject& detail);
    void created(qint64 sweep);
    void actionDone(qint64 sweep, const QString& action);
    void promoted(qint64 sweep, const QString& job_name);
    void trialsImported(int runs); // new runs in the catalog
    void failed(const QString& message);

private:
    struct Polled;
    void finishPoll(const Polled& polled);
    // Imports the detail's trial jobs the catalog lacks and watches those that run.
    void syncTrials(qint64 sweep, const QJsonObject& detail);
    void act(qint64 sweep, const QString& action, const QJsonObject& body);

    JobSync& sync_;
    JobController& controller_;
    QTimer* timer_;
    bool polling_ = false, poll_again_ = false;
    QJsonObject sweeps_, prices_;
    QString last_error_; // the last poll's problem, said once
    QHash<qint64, QJsonObject> details_;
    QHash<qint64, QJsonObject> summaries_; // each sweep's last summary: a changed one has its detail fetched
    qint64 watched_sweep_ = 0;
    QElapsedTimer prices_age_;
    QSet<QString> settled_; // trial jobs in the catalog that have ended: nothing more to import or watch
};

} // namespace traindeck
