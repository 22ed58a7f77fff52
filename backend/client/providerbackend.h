#pragma once
// An elastic provider as one backend (provider.h says its file): a job submitted here runs on an instance of the
// provider's that fits it and has nothing to do; when none has, one is rented for it — within the file's maximum
// count and hourly spend ceiling, refused with a message that names the limit otherwise — then bootstrapped as an SSH
// host (SshWorkerBackend: this build's worker installed, started on the instance's loopback, reached through an ssh
// forward) and given the job. An instance whose queue stayed empty for the file's idle time (5 minutes unless it says
// otherwise) is deleted, at once when its job asked for that ({"elastic": {"release_after_job": true}} in the
// request); one that cannot be reached within the boot timeout is deleted and the job tried on an instance of
// another type.
//
// Nothing rented is forgotten: every instance is in the ledger (instanceledger.h, the console's catalog) before its
// creation is asked of the cloud, with its state, price and times; a failed deletion stays "deleting" and is tried
// again. open() reconciles the ledger with the cloud's list: instances still listed are reached again (their jobs go
// on), those no longer listed are marked vanished, and listed instances with the provider's label that the ledger does
// not hold as live (strays: a console killed between create and record, a deletion the cloud did not do) are deleted.
//
// A job that an instance already up can take is given to it at once, and its id here is "INSTANCE/ID" (ID: the
// instance's worker's), so a console that restarts finds each job's instance again. One that needs a new instance
// is placed: submit() checks the limits and reserves the instance (a refusal is said at once), and returns a
// placement id "p-HEX" while the instance is created and bootstrapped on a thread of its own; the job goes to it once
// it is up (to one of another type when it does not boot). Each placement is a file in the state folder (the request,
// where it went), so the id stays the job's for good and a console that restarts mid-placement finishes it; one that
// cannot be placed, or is cancelled first, ends as the job's one event, a "failed" or "cancelled" state. Settings
// "wait": true (the command line, which exits after its submit) places within submit() and returns "INSTANCE/ID".
//
// An instance that stops answering and is no longer in the cloud's list (a spot instance taken back, one deleted
// outside TrainDeck) is recorded as vanished and its jobs are said lost (jobsLost: the console moves those allowed to
// move, from their last checkpoint, here again, which rents a new instance); so is a job watched whose instance has
// ended. Datasets uploaded here are kept as a list (version, root and manifest, in the state folder) and sent to the
// instance that runs a job naming them, before the job; a checkpoint a moved job resumes from is dropped from the list
// once the job is on its instance.
#include "instanceledger.h"
#include "provider.h"
#include "sshworkerbackend.h"

#include <QJsonObject>
#include <QList>
#include <QMap>

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

namespace traindeck {

class ProviderBackend : public Backend {
    Q_OBJECT
public:
    using Backend::Backend;
    ~ProviderBackend() override;

    // settings: "config" (the provider file), "name" (the backend's name: the ledger's provider), "state_dir" (this
    // console's folder for the provider: instances' known_hosts, the datasets list; default under the XDG data
    // folder), "worker_binary" and "train_binary" (what is installed on an instance; default: next to this program).
    // setInstanceLedger() first.
    bool open(const QVariantMap& settings, QString* error) override;
    QString describe() const override;
    void setInstanceLedger(InstanceLedger* ledger) override { ledger_ = ledger; }

    QString submit(const QJsonObject& request, QString* error) override;
    bool cancel(const QString& remoteId, QString* error) override;
    bool resume(const QString& remoteId, double newBudget, QString* error) override;
    // {"provider", "instances": [{name, id, type, address, state, price_per_hour, spot, uptime_s, cost}],
    //  "spend_per_hour", "max_spend_per_hour", "max_instances", "gpus": []}
    QJsonObject resources(QString* error) override;
    bool removeJob(const QString& remoteId, qint64* freedBytes, QString* error) override;
    QString createSweep(const QJsonObject& spec, QString* error) override;
    QJsonObject sweeps(QString* error) override;
    QJsonObject sweep(const QString& id, QString* error) override;
    bool sweepAction(const QString& id, const QString& action, const QJsonObject& body, QString* error) override;
    bool uploadDataset(const QString& root, const QByteArray& manifest,
                       const std::function<void(qint64, qint64, double)>& progress, QString* error) override;
    QString fetchCheckpoint(const QString& remoteId, const QString& dir, QString* error) override;
    void cancelUploads() override; // the sends to instances under way
    void watch(const QString& remoteId, qint64 afterSeq) override;
    void shutdown() override;

    // The live instances (the ledger's records as they are now).
    QList<RentedInstance> instances() const;
    // Where a job runs: "INSTANCE/ID" ("" while its instance is being rented, or when it never ran).
    QString placement(const QString& remoteId) const;
    // Deletes the instance now ("release now"); its jobs end with it (said through jobsLost).
    bool release(const QString& name, QString* error);
    bool releaseInstance(const QString& name, QString* error) override { return release(name, error); }

signals:
    // An instance was recorded, came up, or went: instances() has changed.
    void instancesChanged();

private:
    struct Instance {
        RentedInstance record;
        std::shared_ptr<SshWorkerBackend> backend; // while it is reached
        // While reach() opens it (shutdown() ends that).
        std::shared_ptr<SshWorkerBackend> connecting;
        double idle_since = 0;                     // wall seconds its queue has been empty since; 0 while busy
        double unreached_since = 0;                // a restored instance not reached yet: since when
        double unanswered_since = 0;               // a reached one that stopped answering but is listed: since when
        double quiet_since = 0;                    // its worker has had no unfinished job since (0: it has one)
        // Submits choosing it right now (a rented one starts with its own submit's), and how many ever did: the
        // reaper trusts an empty queue only when no submit came while it asked.
        int claims = 0;
        uint64_t submits = 0;
        bool release_when_idle = false;
        // When the cloud's list was last asked about it (while it did not answer).
        double listed_at = 0;
        // Its jobs' ids there (submitted or watched): lost with it.
        std::set<QString> jobs;
        // Job → after seq, to watch once it is reached.
        std::map<QString, qint64> pending_watch;
    };
    using InstancePtr = std::shared_ptr<Instance>;
    // A job waiting for its instance (see the top of this file).
    struct Placement {
        QString id, state, reason; // state: placing, placed, failed, cancelled
        QString instance, job;     // its instance (reserved, then where it runs), its id there once placed
        QJsonObject request;       // as given, less "elastic"
        bool release_after_job = false;
        double created = 0;
        qint64 watch_after = -1; // watch() came while it was being placed: from this seq
    };

    bool note(const RentedInstance& record, QString* error); // the ledger, durably
    InstancePtr claim_idle(int gpus, int cpus, long long memory_mb);
    // The cheapest type that fits and has not failed to boot for this job; null when none.
    const client::InstanceType* cheapest(int gpus, int cpus, long long memory_mb,
                                         const std::set<std::string>& failed) const;
    // A new instance of the type within the limits (count, spend ceiling: refused with the limit named), its slot
    // taken and claimed; created by provision().
    InstancePtr reserve(const client::InstanceType& type, QString* error);
    // Recorded, created, reached within the boot timeout (else deleted: *boot_failed); ready and still claimed.
    bool provision(const InstancePtr& instance, QString* error, bool* boot_failed);
    // The job to a claimed, ready instance; the claim ends. Its id there, or "" with *error.
    QString run_on(const InstancePtr& instance, const QJsonObject& request, bool release_after_job, QString* error);
    // A placement's thread (or submit() itself with "wait"): an instance for the job (the one given, claimed for it:
    // reserved, or restored at start), the job to it.
    void place(const QString& id, InstancePtr instance);
    void start_placer(const QString& id, const InstancePtr& instance); // joins the placers that have ended
    // A claim given up: a reserved instance the cloud was never asked for goes; another one keeps running.
    void let_go(const InstancePtr& instance);
    // It ends without a worker's job: failed or cancelled, said as its one event when it is watched. False when it
    // was no longer being placed (placed, or ended, meanwhile).
    bool end_placement(const QString& id, const QString& state, const QString& reason);
    void emit_placement_end(const Placement& placement);
    std::optional<Placement> placement_copy(const QString& id) const;
    bool save_placement(const QString& id, QString* error); // its file as it is now, atomically
    std::optional<Placement> read_placement(const QString& path, QString* why) const;
    void load_placements();
    // With "wait" (the command line), the console owns the placements: read again from its file before use, and
    // followed by the reaper while one is watched.
    bool refresh_placement(const QString& id);
    void follow_placements();
    QString placement_state(const QString& remoteId); // "" when it is no placement
    QString console_owns(const QString& remoteId) const;
    // A job's id as its instance's: "INSTANCE/ID" for a placed one; the id itself when it is no placement.
    QString resolve(const QString& remoteId, QString* error) const;
    // The console's id for a job on an instance ("INSTANCE/ID", or its placement's).
    QString console_id(const QString& instanceJob) const;
    // The file's address command: the instance's ssh destination (its user prefixed) into its record.
    bool address(const InstancePtr& instance, QString* why);
    bool reach(const InstancePtr& instance, QString* error); // SshWorkerBackend::open with the install
    // jobs_lost: say its jobs lost (a user's release, a machine that stopped answering); not for an idle one.
    bool remove(const InstancePtr& instance, const QString& reason, QString* error, bool jobs_lost = false);
    // The instance is gone without being asked (the cloud no longer lists it): recorded as vanished, its jobs lost.
    void vanish(const InstancePtr& instance, const QString& reason);
    // The cloud's list (ids); false and *why when it failed or its output does not parse: nothing is concluded then.
    bool list_instances(std::vector<std::string>* ids, QString* why);
    // The placeholders an instance's commands (address, delete) may name.
    std::map<std::string, std::string> instance_vars(const RentedInstance& record) const;
    // The file's delete command for it; false and *why when it did not succeed.
    bool delete_in_cloud(const RentedInstance& record, std::string* why);
    // Whether the cloud still lists the instance (true too when the list cannot be had: nothing is concluded).
    bool listed(const InstancePtr& instance);
    // The versions a job names that were uploaded here (its "dataset", the "checkpoint_from" it resumes from) sent to
    // the instance that runs it (only the chunks it lacks travel); false and *error when one could not be.
    bool send_uploads(SshWorkerBackend& backend, const QJsonObject& request, QString* error);
    bool save_uploads(QString* error); // the list, as datasets.json in the state folder
    // The reached backend of a job's instance (its id here, a placement's resolved), held: a release meanwhile cannot
    // free it under the call.
    std::shared_ptr<SshWorkerBackend> backend_of(const QString& remoteId, QString* jobId, QString* error) const;
    std::vector<std::string> instance_ssh_options(const QString& name) const;
    void reap(); // the reaper thread: idle instances, retried deletions, restored instances not reached yet
    bool reconcile(QString* error);
    double now() const;

    InstanceLedger* ledger_ = nullptr;
    client::ProviderConfig config_;
    QString name_, config_path_, state_dir_, worker_binary_, train_binary_;
    std::atomic<bool> aborting_{false};

    // Guards instances_, uploads_ and what follows.
    mutable std::mutex mutex_;
    // The live instances by name; those that ended (this run, or before it) → why, for watch().
    std::map<QString, InstancePtr> instances_;
    std::map<QString, QString> gone_;
    // Root, manifest.
    // Version → root, manifest: what uploadDataset() was given, sent where a job needs it.
    std::map<QString, std::pair<QString, QByteArray>> uploads_;
    // Placements by id; the placed ones' "INSTANCE/ID" → id; their threads.
    std::map<QString, Placement> placements_;
    std::map<QString, QString> placed_;
    struct Placer {
        std::thread thread;
        std::shared_ptr<std::atomic<bool>> done;
    };
    std::vector<Placer> placers_;
    std::mutex files_mutex_; // one placement file written at a time (taken before mutex_)
    bool wait_ = false;      // "wait": placed within submit()
    bool stopping_ = false;
    std::condition_variable wake_;
    std::thread reaper_;
};

} // namespace traindeck
