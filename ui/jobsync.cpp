// JobSync (jobsync.h): every backend call on the network pool, every catalog write on the writer thread; the GUI
// thread only posts and receives.
#include "jobsync.h"

#include "jsonbridge.h"

#include "background.h"
#include "backendref.h"
#include "jobstate.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonDocument>
#include <QStandardPaths>
#include <QMetaObject>
#include <QPointer>

namespace traindeck {

JobSync::JobSync(Catalog& catalog, CatalogWriter& writer, Backend& backend, QString backend_name, QObject* parent)
    : QObject(parent), catalog_(catalog), writer_(writer), backend_(backend), backend_name_(std::move(backend_name)) {
    connect(&backend_, &Backend::eventsArrived, this, &JobSync::onEvents, Qt::QueuedConnection);
    connect(
        &backend_, &Backend::notice, this,
        [this](const QString& message) { emit failed(tr("%1: %2").arg(backend_name_, message)); },
        Qt::QueuedConnection);
    connect(&backend_, &Backend::connectionChanged, this, [this](bool up, const QString& message) {
        if (!up)
            emit failed(tr("Lost the connection to %1: %2 (retrying)").arg(backend_name_, message));
    });
}

void JobSync::resumeWatching() {
    // Read on the writer thread: it owns the writable connection.
    QPointer<JobSync> self(this);
    const std::string backend = backend_name_.toStdString();
    writer_.post([self, backend](Catalog& catalog) {
        Statement select = catalog.db().prepare(
            "SELECT remote_id, last_seq - seq_offset FROM jobs WHERE backend=? AND state NOT IN (" +
            std::string(catalog_finished_states_sql()) + ")");
        select.bind(1, backend);
        std::vector<std::pair<QString, qint64>> jobs;
        while (select.step())
            jobs.emplace_back(QString::fromStdString(select.text(0)), select.integer(1));
        QMetaObject::invokeMethod(self, [self, jobs] {
            if (self)
                for (const auto& [remote, last] : jobs)
                    self->backend_.watch(remote, last);
        }, Qt::QueuedConnection);
    });
}

void JobSync::submit(const QString& name, const QJsonObject& request) {
    const BackendRef ref = BackendRef::of(&backend_);
    QJsonObject sent = request;
    sent.remove("console"); // the console's own settings (migration): the catalog keeps them, the worker never sees them
    struct Submitted {
        QString remote, error;
    };
    run_in_background(this, [ref, sent] {
        Submitted submitted{{}, tr("the console is closing")};
        if (const BackendRef::Use backend = ref.use())
            submitted.remote = backend->submit(sent, &submitted.error);
        return submitted;
    }, [this, name, request](const Submitted& submitted) {
        if (submitted.remote.isEmpty()) {
            emit failed(tr("Could not submit “%1”: %2").arg(name, submitted.error));
            return;
        }
        QPointer<JobSync> self(this);
        const std::string backend_name = backend_name_.toStdString();
        const nlohmann::json spec = to_nlohmann(request);
        writer_.post([self, remote = submitted.remote, name, backend_name, spec](Catalog& catalog) {
            const int64_t id = catalog.add_job(name.toStdString(), backend_name, remote.toStdString(), spec);
            QMetaObject::invokeMethod(self, [self, id, remote] {
                if (!self)
                    return;
                self->backend_.watch(remote, 0);
                emit self->submitted(id);
                emit self->catalogChanged();
            }, Qt::QueuedConnection);
        });
    });
}

void JobSync::cancel(qint64 job, const QString& remote_id) {
    Q_UNUSED(job);
    const BackendRef ref = BackendRef::of(&backend_);
    run_in_background(this, [ref, remote_id] {
        QString error = tr("the console is closing");
        const BackendRef::Use backend = ref.use();
        return backend && backend->cancel(remote_id, &error) ? QString() : error;
    }, [this](const QString& error) {
        if (!error.isEmpty())
            emit failed(tr("Cancel failed: %1").arg(error));
    });
}

void JobSync::removeFiles(qint64 job, const QString& remote_id) {
    const BackendRef ref = BackendRef::of(&backend_);
    struct Removed {
        QString error;
        qint64 bytes = 0;
    };
    run_in_background(
        this,
        [ref, remote_id, job] {
            Removed removed{tr("the console is closing")};
            const BackendRef::Use backend = ref.use();
            if (!backend || !backend->removeJob(remote_id, &removed.bytes, &removed.error))
                return removed;
            removed.error.clear();
            QDir(checkpointDir(job)).removeRecursively(); // the console's copy goes with the worker's
            return removed;
        },
        [this, job](const Removed& removed) {
            if (!removed.error.isEmpty())
                emit failed(
                    tr("The files of run %1 were not deleted on %2: %3").arg(job).arg(backend_name_, removed.error));
            else
                emit filesRemoved(job, removed.bytes);
        });
}

void JobSync::resume(qint64 job, const QString& remote_id) {
    const BackendRef ref = BackendRef::of(&backend_);
    run_in_background(this, [ref, remote_id] {
        QString error = tr("the console is closing");
        const BackendRef::Use backend = ref.use();
        return backend && backend->resume(remote_id, 0, &error) ? QString() : error;
    }, [this, remote_id, job](const QString& error) {
        if (!error.isEmpty()) {
            emit failed(tr("Resume failed: %1").arg(error));
            return;
        }
        // Stream again from the last event the catalog has (read on the writer thread).
        QPointer<JobSync> self(this);
        writer_.post([self, remote_id, job](Catalog& catalog) {
            const int64_t after = catalog.remote_last_seq(job);
            QMetaObject::invokeMethod(self, [self, remote_id, after] {
                if (self)
                    self->backend_.watch(remote_id, after);
            }, Qt::QueuedConnection);
        });
    });
}

void JobSync::onEvents(const QString& remote_id, const QByteArray& events, bool finished) {
    Q_UNUSED(finished);
    QPointer<JobSync> self(this);
    const std::string backend = backend_name_.toStdString();
    const std::string remote = remote_id.toStdString();
    writer_.post([self, backend, remote, events](Catalog& catalog) {
        Statement select = catalog.db().prepare("SELECT id FROM jobs WHERE backend=? AND remote_id=?");
        select.bind(1, backend).bind(2, remote);
        if (!select.step())
            return; // a job this catalog did not submit
        const int64_t job = select.integer(0);
        // The array as the backend handed it on: the catalog reads it (simdjson; the plain metric records without
        // building them as nlohmann::json: tests/bench/console_ingest).
        const Catalog::Ingested ingested =
            catalog.ingest_text(job, std::string_view(events.constData(), static_cast<size_t>(events.size())));
        // take_alerts() holds only what this ingest raised: the writer thread runs one lambda at a time.
        const auto alerts = catalog.take_alerts();
        // A job that may move to another worker has each new checkpoint copied to the console.
        bool checkpointed = ingested.checkpoints > 0;
        if (checkpointed) {
            Statement migrate = catalog.db().prepare("SELECT migrate FROM jobs WHERE id=?");
            migrate.bind(1, job);
            checkpointed = migrate.step() && migrate.integer(0) != 0;
        }
        const QString unreadable = QString::fromStdString(ingested.error);
        const QString remote_id = QString::fromStdString(remote);
        QMetaObject::invokeMethod(
            self,
            [self, alerts, checkpointed, job, remote_id, unreadable] {
                if (!self)
                    return;
                if (!unreadable.isEmpty())
                    emit self->failed(tr("Events of run %1 from %2 were not read and are not in the catalog: %3")
                                          .arg(job)
                                          .arg(self->backend_name_, unreadable));
                for (const auto& a : alerts)
                    emit self->alertRaised(a.job, QString::fromStdString(a.kind), QString::fromStdString(a.message));
                emit self->catalogChanged();
                if (checkpointed)
                    self->syncCheckpoint(job, remote_id);
            },
            Qt::QueuedConnection);
    });
}

void JobSync::recordArtifacts(qint64 job, const QJsonObject& report) {
    const nlohmann::json info = to_nlohmann(report);
    writer_.post([job, info](Catalog& catalog) {
        for (const auto& artifact : info.value("artifacts", nlohmann::json::array()))
            catalog.add_artifact(job, artifact.value("kind", ""), artifact.value("path", ""), artifact.value("bytes", int64_t(0)), info);
    });
}

void JobSync::syncCheckpoint(qint64 job, const QString& remote_id) {
    if (checkpoint_fetches_.contains(job)) {
        checkpoint_again_.insert(job); // one copy at a time per job; fetch the newest once this one is done
        return;
    }
    checkpoint_fetches_.insert(job);
    const BackendRef ref = BackendRef::of(&backend_);
    const QString dir = checkpointDir(job);
    struct Copy {
        QString kept, error;
    };
    run_in_background(this, [ref, remote_id, dir] {
        Copy copy;
        const BackendRef::Use backend = ref.use();
        if (!backend) {
            copy.error = tr("the console is closing");
            return copy;
        }
        const QString path = backend->fetchCheckpoint(remote_id, dir + "/incoming", &copy.error);
        if (path.isEmpty())
            return copy;
        // The newest one replaces the older copies (rename within the folder: never half a file under a name).
        const QString kept = dir + "/" + QFileInfo(path).fileName();
        QFile::remove(kept);
        if (!QFile::rename(path, kept)) {
            copy.error = tr("cannot move %1 to %2; check the folder's permissions and free space").arg(path, kept);
            return copy;
        }
        for (const QString& old : QDir(dir).entryList({"ckpt-*.tdck"}, QDir::Files))
            if (dir + "/" + old != kept)
                QFile::remove(dir + "/" + old);
        copy.kept = kept;
        return copy;
    }, [this, job, remote_id](const Copy& copy) {
        checkpoint_fetches_.remove(job);
        if (!copy.kept.isEmpty()) {
            const int64_t bytes = QFileInfo(copy.kept).size();
            writer_.post([job, path = copy.kept.toStdString(), bytes](Catalog& catalog) {
                catalog.add_artifact(job, "checkpoint", path, bytes, nlohmann::json::object());
            });
            emit checkpointSynced(job, copy.kept);
        } else {
            // The job can still move only from an older copy (or from the start): the user must know.
            emit failed(tr("Checkpoint of job %1 not copied from %2: %3").arg(job).arg(backend_name_, copy.error));
        }
        if (checkpoint_again_.remove(job))
            syncCheckpoint(job, remote_id);
    });
}

QString JobSync::checkpointDir(qint64 job) {
    return QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation) + QString("/traindeck/checkpoints/job-%1").arg(job);
}

} // namespace traindeck
