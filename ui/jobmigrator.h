#pragma once
// Watches every backend's heartbeat (its /v1/resources answer). A worker silent for longer than the timeout is
// lost: its unfinished jobs are marked lost, and those the user allowed to move are resubmitted to a healthy
// worker from their last checkpoint (which JobSync copied to the console as it was written), their events
// continuing the same curve. When a lost worker answers again, the copies left running there are cancelled. A
// backend that still answers may say some of its jobs are lost (a provider's instance that vanished): those are moved
// the same way, to that backend first.
#include "backend.h"
#include "catalog.h"
#include "jobcontroller.h"

#include <QMap>
#include <QObject>
#include <QSet>

class QTimer;

namespace traindeck {

class JobMigrator : public QObject {
    Q_OBJECT
public:
    // backends: the workers watched, and where lost jobs may go.
    JobMigrator(const QString& catalog_path, CatalogWriter& writer, const JobController& backends,
                QObject* parent = nullptr);

    void setTimeouts(int poll_ms, int lost_after_ms);
    bool isLost(const QString& backend) const { return lost_.contains(backend); }

signals:
    void workerLost(const QString& backend, const QString& message);
    void workerBack(const QString& backend);
    void jobMoved(qint64 job, const QString& from, const QString& to);
    void problem(const QString& message);

private:
    void poll();
    void heard(const QString& name, bool ok);
    struct Row {
        qint64 id;
        QString remote;
        QJsonObject request;
        bool migrate;
    };
    void heed(const QString& name, Backend* backend); // its jobsLost, from when it is added
    void migrateJobsOf(const QString& backend);
    // Jobs a backend said it lost (Backend::jobsLost: a provider's instance that vanished) while it still answers:
    // marked lost, and those allowed to move are moved, to the same backend first (a provider rents anew).
    void migrateLostJobs(const QString& backend, const QStringList& remote_ids, const QString& reason);
    void moveJobs(const QString& backend, const QList<Row>& rows, bool same_backend_first = false);
    void move(qint64 job, const QString& from, const QString& remote_id, const QJsonObject& request,
              const JobController::Connected& to);

    CatalogWriter& writer_;
    const JobController& backends_;
    QTimer* timer_;
    int lost_after_ms_ = 60000;
    QMap<QString, qint64> last_heard_; // ms since epoch
    QSet<QString> lost_, polling_;
    QMap<QString, QStringList> moved_away_; // backend → remote ids of jobs moved from it
};

} // namespace traindeck
