#pragma once
// Keeps the catalog in step with the backends: submits jobs, watches them from the last event the catalog has,
// and hands every batch of events to the catalog's writer thread (which parses and commits off the GUI thread).
#include "backend.h"
#include "catalog.h"

#include <QObject>
#include <QSet>

namespace traindeck {

class JobSync : public QObject {
    Q_OBJECT
public:
    JobSync(Catalog& catalog, CatalogWriter& writer, Backend& backend, QString backend_name, QObject* parent = nullptr);

    // Watches every job of this backend that the catalog does not have as finished.
    void resumeWatching();
    // Submits (off the GUI thread) and records the job; `done` reports the catalog id or an error.
    void submit(const QString& name, const QJsonObject& request);
    void cancel(qint64 job, const QString& remote_id);
    void resume(qint64 job, const QString& remote_id);
    // Deletes the job's record and files (checkpoints, logs, exports) on its worker for good, and the console's own
    // copy of its checkpoint; filesRemoved or failed says how it went.
    void removeFiles(qint64 job, const QString& remote_id);
    // Records an export's files as the job's artifacts.
    void recordArtifacts(qint64 job, const QJsonObject& report);
    CatalogWriter& writer() { return writer_; }
    // Copies the job's newest checkpoint from its worker into checkpointDir(job) (one copy kept).
    void syncCheckpoint(qint64 job, const QString& remote_id);
    static QString checkpointDir(qint64 job);
    const QString& backendName() const { return backend_name_; }
    Backend& backend() { return backend_; }

signals:
    void catalogChanged();               // a batch was committed: views refresh
    void failed(const QString& message); // for the alerts panel / status bar
    void submitted(qint64 job);
    void alertRaised(qint64 job, const QString& kind, const QString& message);
    void checkpointSynced(qint64 job, const QString& path);
    void filesRemoved(qint64 job, qint64 bytes); // bytes of files the worker removed

private:
    void onEvents(const QString& remote_id, const QByteArray& events, bool finished);

    Catalog& catalog_;
    CatalogWriter& writer_;
    Backend& backend_;
    QString backend_name_;
    QSet<qint64> checkpoint_fetches_, checkpoint_again_;
};

} // namespace traindeck
