// JobMigrator (jobmigrator.h): heartbeats and moves on the network pool; the catalog read and written on its writer
// thread, never flushed from the GUI thread.
#include "jobmigrator.h"

#include "background.h"
#include "backendref.h"
#include "jobstate.h"
#include "jobsync.h"
#include "manifest.h"

#include <QDateTime>
#include <QDir>
#include <QJsonDocument>
#include <QPointer>
#include <QTimer>

namespace traindeck {

JobMigrator::JobMigrator(const QString& catalog_path, CatalogWriter& writer, const JobController& backends,
                         QObject* parent)
    : QObject(parent), writer_(writer), backends_(backends) {
    Q_UNUSED(catalog_path); // the writer reads what it needs, on its thread
    timer_ = new QTimer(this);
    connect(timer_, &QTimer::timeout, this, &JobMigrator::poll);
    for (const JobController::Connected& t : backends_.backends())
        heed(t.name, t.backend);
    connect(&backends_, &JobController::added, this, &JobMigrator::heed);
    timer_->start(5000);
}

void JobMigrator::setTimeouts(int poll_ms, int lost_after_ms) {
    lost_after_ms_ = lost_after_ms;
    timer_->start(poll_ms);
}

void JobMigrator::heed(const QString& name, Backend* backend) {
    connect(
        backend, &Backend::jobsLost, this,
        [this, name](const QStringList& ids, const QString& reason) { migrateLostJobs(name, ids, reason); },
        Qt::QueuedConnection);
}

void JobMigrator::poll() {
    for (const JobController::Connected& t : backends_.backends()) {
        if (polling_.contains(t.name))
            continue; // the previous question is still out (a dead host can take the whole connect timeout)
        if (!last_heard_.contains(t.name))
            last_heard_[t.name] = QDateTime::currentMSecsSinceEpoch();
        polling_.insert(t.name);
        const BackendRef ref = BackendRef::of(t.backend);
        run_in_background(this, [ref] {
            QString error;
            const BackendRef::Use backend = ref.use();
            return backend && !backend->resources(&error).isEmpty();
        }, [this, name = t.name](bool ok) { heard(name, ok); });
    }
}

void JobMigrator::heard(const QString& name, bool ok) {
    polling_.remove(name);
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    if (ok) {
        last_heard_[name] = now;
        if (lost_.remove(name)) {
            emit workerBack(name);
            // Fencing: what moved away must not also finish here.
            if (const std::optional<JobController::Connected> back = backends_.find(name))
                for (const QString& remote : moved_away_.take(name)) {
                    const BackendRef ref = BackendRef::of(back->backend);
                    run_in_background(
                        this,
                        [ref, remote] {
                            QString error;
                            if (const BackendRef::Use backend = ref.use())
                                backend->cancel(remote, &error);
                        },
                        [] {});
                }
        }
        return;
    }
    if (lost_.contains(name) || now - last_heard_.value(name, now) < lost_after_ms_)
        return;
    lost_.insert(name);
    emit workerLost(name, tr("Worker %1 has not answered for %2 s: its running jobs are lost")
                              .arg(name).arg((now - last_heard_.value(name)) / 1000.0, 0, 'f', 0));
    migrateJobsOf(name);
}

void JobMigrator::migrateJobsOf(const QString& backend) {
    // On the writer thread: read the lost worker's unfinished jobs and mark them lost in one transaction, then
    // hand the list back here. The GUI thread waits for neither the read nor the commit.
    QPointer<JobMigrator> self(this);
    const std::string name = backend.toStdString();
    writer_.post([self, name, backend](Catalog& catalog) {
        QList<Row> rows;
        Statement select =
            catalog.db().prepare("SELECT id, remote_id, spec, migrate FROM jobs WHERE backend=? AND state NOT IN (" +
                                 std::string(catalog_finished_states_sql()) + ")");
        select.bind(1, name);
        while (select.step())
            rows.push_back({select.integer(0), QString::fromStdString(select.text(1)),
                            QJsonDocument::fromJson(QByteArray::fromStdString(select.text(2))).object(), select.integer(3) != 0});
        const std::string reason = "worker " + name + " lost";
        for (const Row& row : rows)
            catalog.mark_lost(row.id, reason);
        QMetaObject::invokeMethod(self, [self, backend, rows] {
            if (self)
                self->moveJobs(backend, rows);
        }, Qt::QueuedConnection);
    });
}

void JobMigrator::migrateLostJobs(const QString& backend, const QStringList& remote_ids, const QString& reason) {
    QPointer<JobMigrator> self(this);
    writer_.post(
        [self, backend, remote_ids, name = backend.toStdString(), why = reason.toStdString()](Catalog& catalog) {
            QList<Row> rows;
            Statement select = catalog.db().prepare("SELECT id, remote_id, spec, migrate FROM jobs WHERE backend=? AND "
                                                    "remote_id=? AND state NOT IN (" +
                                                    std::string(catalog_finished_states_sql()) + ")");
            for (const QString& remote : remote_ids) {
                select.reset();
                select.bind(1, name).bind(2, remote.toStdString());
                while (select.step())
                    rows.push_back({select.integer(0), QString::fromStdString(select.text(1)),
                                    QJsonDocument::fromJson(QByteArray::fromStdString(select.text(2))).object(),
                                    select.integer(3) != 0});
            }
            for (const Row& row : rows)
                catalog.mark_lost(row.id, why);
            QMetaObject::invokeMethod(
                self,
                [self, backend, rows] {
                    if (self && !rows.isEmpty())
                        self->moveJobs(backend, rows, true);
                },
                Qt::QueuedConnection);
        });
}

void JobMigrator::moveJobs(const QString& backend, const QList<Row>& rows, bool same_backend_first) {
    const JobController::Connected* to = nullptr;
    const QList<JobController::Connected> targets = backends_.backends();
    for (const JobController::Connected& t : targets)
        if (same_backend_first && t.name == backend && !lost_.contains(t.name))
            to = &t;
    for (const JobController::Connected& t : targets)
        if (!to && t.name != backend && !lost_.contains(t.name)) {
            to = &t;
            break;
        }
    for (const Row& row : rows) {
        if (!row.migrate)
            continue;
        if (!to) {
            emit problem(tr("Job %1 cannot move: no other worker is reachable").arg(row.id));
            continue;
        }
        move(row.id, backend, row.remote, row.request, *to);
    }
}

void JobMigrator::move(qint64 job, const QString& from, const QString& remote_id, const QJsonObject& request,
                       const JobController::Connected& to) {
    const QString dir = JobSync::checkpointDir(job);
    const BackendRef ref = BackendRef::of(to.backend);
    QJsonObject sent = request;
    sent.remove("console");
    struct Outcome {
        QString remote, error, checkpoint;
    };
    // Off the GUI thread: send the checkpoint (as a one-file version in the target's store), then submit.
    run_in_background(this, [ref, dir, sent]() mutable {
        Outcome outcome;
        const BackendRef::Use backend = ref.use();
        if (!backend) {
            outcome.error = tr("the console is closing");
            return outcome;
        }
        const QStringList files = QDir(dir).entryList({"ckpt-*.tdck"}, QDir::Files, QDir::Name);
        if (!files.isEmpty()) {
            outcome.checkpoint = dir + "/" + files.last();
            dataset::Manifest manifest;
            std::string error;
            if (!dataset::scan_manifest(outcome.checkpoint.toStdString(), manifest, error)) {
                outcome.error = QString::fromStdString(error);
                return outcome;
            }
            QString upload_error;
            if (!backend->uploadDataset(outcome.checkpoint, QByteArray::fromStdString(manifest.to_json().dump()), {}, &upload_error)) {
                outcome.error = upload_error;
                return outcome;
            }
            sent["checkpoint_from"] = QString::fromStdString(manifest.version());
        }
        outcome.remote = backend->submit(sent, &outcome.error);
        return outcome;
    }, [this, job, from, remote_id, to](const Outcome& outcome) {
        if (outcome.remote.isEmpty()) {
            emit problem(tr("Job %1 could not move to %2: %3").arg(job).arg(to.name, outcome.error));
            return;
        }
        const std::string reason = "moved from lost worker " + from.toStdString() +
                                   (outcome.checkpoint.isEmpty() ? ", from the start (no checkpoint yet)"
                                                                 : ", from " + QFileInfo(outcome.checkpoint).fileName().toStdString());
        // The writer runs what it is given in order: the job is reassigned before any event of its new copy,
        // which arrives only once watched, is ingested. No flush, so the GUI thread does not wait for the commit.
        writer_.post([job, name = to.name.toStdString(), remote = outcome.remote.toStdString(), reason](Catalog& catalog) {
            catalog.reassign_job(job, name, remote, reason);
        });
        moved_away_[from] << remote_id;
        to.backend->watch(outcome.remote, 0);
        emit jobMoved(job, from, to.name);
    });
}

} // namespace traindeck
