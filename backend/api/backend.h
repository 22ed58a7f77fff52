#pragma once
// The backend plugin interface: how the console talks to wherever jobs run (a local worker, a remote worker,
// a Slurm cluster through a worker). Qt Core only. Plugins are Qt plugins implementing BackendFactory, loaded
// with QPluginLoader from the plugin folder; each factory makes Backend objects (one per configured backend).
//
// Calls that touch the network are blocking and must not run on the GUI thread (the console runs them with
// QtConcurrent). Events arrive through the eventsArrived signal from the backend's own threads.
#include "instanceledger.h"

#include <QJsonObject>
#include <QObject>
#include <QString>
#include <QStringList>
#include <QVariantMap>
#include <QtPlugin>

#include <functional>

namespace traindeck {

class Backend : public QObject {
    Q_OBJECT
public:
    using QObject::QObject;
    ~Backend() override = default;

    // Connects (a local backend first starts its worker when none runs). False and *error when it cannot.
    virtual bool open(const QVariantMap& settings, QString* error) = 0;
    virtual QString describe() const = 0; // e.g. "local worker on 127.0.0.1:40123"

    // Submits a worker job request (see README: POST /v1/jobs); returns the backend's id for the job.
    virtual QString submit(const QJsonObject& request, QString* error) = 0;
    virtual bool cancel(const QString& remoteId, QString* error) = 0;
    // A stopped, cancelled or failed job continues from its checkpoint; newBudget > 0 raises its budget.
    virtual bool resume(const QString& remoteId, double newBudget, QString* error) = 0;
    virtual QJsonObject resources(QString* error) = 0;
    // Deletes a finished job on the backend for good: its record there and its files (checkpoints, logs, exports).
    // An active job is refused. *freedBytes gets the bytes of files removed.
    virtual bool removeJob(const QString& remoteId, qint64* freedBytes, QString* error) = 0;

    // Sweeps (README: Sweeps): the backend's worker runs them, each trial one of its jobs, and keeps them going
    // while no console watches. createSweep returns the sweep's id ("" and *error when the spec is refused: the
    // message names the key). sweeps() answers {"sweeps": [...]} (each with its state, spend and best trial);
    // sweep() one sweep with its spec, rungs and trials (each with its job's id: the remote id of a run).
    // sweepAction: "stop", "resume" or "extend" (body {"max_trials", "budget", "gpu_hours"}).
    virtual QString createSweep(const QJsonObject& spec, QString* error) = 0;
    virtual QJsonObject sweeps(QString* error) = 0;
    virtual QJsonObject sweep(const QString& id, QString* error) = 0;
    virtual bool sweepAction(const QString& id, const QString& action, const QJsonObject& body, QString* error) = 0;

    // Sends a dataset version (its manifest JSON, made from the folder or file at root) to the backend's
    // content-addressed store; only the chunks it lacks travel. progress(bytes sent, bytes to send, seconds).
    // Resumable: calling again after a failure sends what is still missing.
    virtual bool uploadDataset(const QString& root, const QByteArray& manifest,
                               const std::function<void(qint64, qint64, double)>& progress, QString* error) = 0;
    // Code snapshots (backend/worker/capture.h), for rerunning a run on another backend: codeManifest gives a
    // snapshot's manifest (JSON) as this backend holds it, codeChunk one chunk's bytes; storeCode puts a snapshot
    // into this backend's store, asking `chunk` only for the chunks it lacks (each checked against its hash before
    // it is sent on). Blocking, so never on the GUI thread. Backends without a store say so in *error.
    virtual QByteArray codeManifest(const QString& version, QString* error);
    virtual QByteArray codeChunk(const QString& hash, QString* error);
    virtual bool storeCode(const QByteArray& manifest,
                           const std::function<QByteArray(const QString& hash, QString* error)>& chunk, QString* error);
    // Copies the job's newest checkpoint into dir; returns the file's path ("" and *error when there is none).
    virtual QString fetchCheckpoint(const QString& remoteId, const QString& dir, QString* error) = 0;

    // Streams the job's events after afterSeq until it ends, reconnecting with backoff; each batch is emitted as
    // eventsArrived. Idempotent: watching a watched job does nothing.
    virtual void watch(const QString& remoteId, qint64 afterSeq) = 0;

    // Stops every dataset upload under way: each ends soon with an error saying it was cancelled; what was sent
    // stays, so uploading again continues. Safe from any thread.
    virtual void cancelUploads() {}
    // Ends every request under way and refuses new ones, without waiting; the object stays valid until deleted.
    // The console calls it before it lets go of a backend, so no task is left waiting on a peer that may never
    // answer. Safe from any thread.
    virtual void shutdown() {}

    // What open() learnt, for the console to show or keep: the public-key pin of a worker reached over TLS ("" when
    // there is none); whether that key still waits for the user's trust (open() then returned false and sent no
    // token); a notice on how the backend was reached (e.g. a port that another program held), "" when all went
    // as expected.
    virtual QString pinnedKey() const { return {}; }
    virtual bool keyNeedsTrust() const { return false; }
    virtual QString attachNotice() const { return {}; }
    // The bearer token open() read itself (an SSH host's, read over ssh from the worker's state folder) for the
    // console to keep in the keyring; "" when the token came from the settings.
    virtual QString learnedToken() const { return {}; }
    // What the backend's machine has, one line ("" when it did not look: only an SSH host does), and, when open()
    // stopped because that machine needs this build's worker installed first, the exact commands open() runs with
    // settings["install"] true, for the user to read before consenting (empty otherwise).
    virtual QString hostFacts() const { return {}; }
    virtual QStringList installPlan() const { return {}; }
    // Where a backend that rents machines (a provider: backend/client/providerbackend.h) records them; the console
    // gives its catalog's ledger before open(). Others ignore it. The ledger outlives the backend.
    virtual void setInstanceLedger(InstanceLedger* ledger) { (void)ledger; }
    // Deletes one of the instances a provider rented, now (the console's "Release now"); its jobs end with it. Other
    // backends rent nothing and say so.
    virtual bool releaseInstance(const QString& name, QString* error) {
        (void)name;
        if (error)
            *error = QStringLiteral("%1 rents no instances").arg(describe());
        return false;
    }
    // What the machine costs and when a job on it counts as idle, changed while it runs (Settings, for the local
    // worker): any of {"price_base", "price_gpu", "price_cpu" (per hour), "idle_percent", "idle_seconds",
    // "idle_stop"}. A backend that has no such policy says so.
    virtual bool setPolicy(const QJsonObject& policy, QString* error) {
        (void)policy;
        if (error)
            *error = QStringLiteral("%1 has no prices or idle policy to set").arg(describe());
        return false;
    }

signals:
    // events: a JSON array of {"seq","time","type","data"} in seq order; the receiver upserts by (job, seq).
    void eventsArrived(const QString& remoteId, const QByteArray& events, bool finished);
    void connectionChanged(bool connected, const QString& message);
    // Some of this backend's jobs went with the machine that ran them while the backend itself still answers (a
    // provider's instance that vanished: a spot instance taken back). The console moves those it may move
    // (JobMigrator), from their last checkpoint, and marks the rest lost.
    void jobsLost(const QStringList& remoteIds, const QString& reason);
    // Something the user should hear of that is no error of a call (a provider released an idle instance, saw one
    // vanish, could not send a dataset to a new one): the console shows it among its alerts.
    void notice(const QString& message);
};

class BackendFactory {
public:
    virtual ~BackendFactory() = default;
    virtual QString kind() const = 0; // "local", "worker"
    virtual Backend* create(QObject* parent) = 0;
};

} // namespace traindeck

#define TrainDeckBackendFactory_iid "org.traindeck.BackendFactory/7"
Q_DECLARE_INTERFACE(traindeck::BackendFactory, TrainDeckBackendFactory_iid)
