#pragma once
// A Backend that speaks the worker protocol over HTTP(S) through WorkerClient. The local and remote-worker
// plugins are this plus how they find their worker.
//
// Rules it keeps: no call waits behind another (each takes a connection of its own from a small pool, so a worker
// that answers one request after 10 s holds up only that request, and watch() never waits on the network at all);
// every watched job shares one long poll (POST /v1/events/watch: one thread and one connection however many jobs
// are watched; a worker without that endpoint gets one long poll per job, as before it had one); a worker on this
// machine that went away is found again where it comes back (its state folder's port file), and one this backend
// started is started again;
// names in a worker's replies are checked before they become paths (remotename.h); a reply that does not parse is
// repaired or reported, never a reason to spin or to stop a stream (jsonrepair.h); destroying the backend ends
// every request under way within 50 ms instead of waiting for the worker.
#include "backend.h"
#include "workerclient.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace traindeck {

class WorkerBackend : public Backend {
    Q_OBJECT
public:
    using Backend::Backend;
    ~WorkerBackend() override;

    QString describe() const override;
    QString submit(const QJsonObject& request, QString* error) override;
    bool cancel(const QString& remoteId, QString* error) override;
    bool removeJob(const QString& remoteId, qint64* freedBytes, QString* error) override;
    QString createSweep(const QJsonObject& spec, QString* error) override;
    QJsonObject sweeps(QString* error) override;
    QJsonObject sweep(const QString& id, QString* error) override;
    bool sweepAction(const QString& id, const QString& action, const QJsonObject& body, QString* error) override;
    bool resume(const QString& remoteId, double newBudget, QString* error) override;
    bool setPolicy(const QJsonObject& policy, QString* error) override; // PUT /v1/policy
    QJsonObject resources(QString* error) override;
    // How many of the worker's jobs are not finished (queued, running, stopping); -1 and *error when it did not say.
    int unfinishedJobs(QString* error);
    // Whether a watched job's events are still streaming: its end has not been delivered yet.
    bool watching();
    void watch(const QString& remoteId, qint64 afterSeq) override;
    bool uploadDataset(const QString& root, const QByteArray& manifest,
                       const std::function<void(qint64, qint64, double)>& progress, QString* error) override;
    QString fetchCheckpoint(const QString& remoteId, const QString& dir, QString* error) override;
    QByteArray codeManifest(const QString& version, QString* error) override;
    QByteArray codeChunk(const QString& hash, QString* error) override;
    bool storeCode(const QByteArray& manifest,
                   const std::function<QByteArray(const QString& hash, QString* error)>& chunk,
                   QString* error) override;

    // Each upload, and with shutdown() each request, ends within 50 ms; the chunks already sent stay on the worker.
    void cancelUploads() override;
    void shutdown() override;
    QString pinnedKey() const override;
    bool keyNeedsTrust() const override;
    QString attachNotice() const override;

protected:
    // Subclasses call this from open() once they know where the worker is.
    // unix_socket: reach the worker through that socket (WorkerClient::set_unix_socket), url then only names it.
    void set_endpoint(const std::string& url, const std::string& token, const std::string& pinned_key,
                      const std::string& ca_file, const QString& description, const std::string& unix_socket = {});
    client::HttpResponse call(const std::string& method, const std::string& path, const std::string& body = {},
                              long timeout_ms = 10000);
    // Finds the worker whose state folder is settings["state_dir"] (else default_state_dir) on this machine, or
    // starts one there (detached, its own session: jobs outlive the console) with extra_args, and connects.
    // settings["worker_binary"] overrides the traindeck-worker next to the app. The token goes only to the
    // process the kernel says listens on the folder's port, and only when that process is this folder's worker
    // (run by this user with --state-dir naming the folder); a port that another program holds gets nothing, a new
    // worker is started, and attachNotice() says what happened (the window shows it).
    bool start_or_attach(const QVariantMap& settings, const QString& default_state_dir, const QStringList& extra_args,
                         const QString& what, QString* error);

    // For open(): what pinnedKey() and keyNeedsTrust() answer, and what attachNotice() says.
    void set_key(const QString& pin, bool needs_trust);
    void set_attach_notice(const QString& notice);

    // A request to a worker that is not on this machine got no answer at all (at most once a second, on the thread
    // that made it): a subclass that knows another way to the worker (an SSH host: the forward, the worker's own
    // start) looks there. It must not block.
    virtual void unreachable() {}
    // shutdown(), then waits for an unreachable() under way: a subclass's destructor calls it before it lets go of
    // what unreachable() uses (no call starts after it).
    void quiesce();

private:
    struct Pooled {
        uint64_t endpoint = 0; // which set_endpoint() it was made for: older ones are dropped when returned
        std::unique_ptr<client::WorkerClient> client;
    };
    Pooled take_client();
    void return_client(Pooled pooled);
    // A request got no answer at all (refused, reset, timed out): for a worker on this machine, look again where
    // it is — it may have come back on another port — and start it again if this backend started it and nothing
    // listens. At most once a second; never on the GUI thread (calls and streams run on threads of their own).
    void lost_connection(const client::HttpResponse& response);
    // A watcher's view of the connection: it says so once per change and backs off up to 10 s while it fails.
    struct Watching {
        std::shared_ptr<std::atomic<bool>> closing;
        bool connected = true;
        int failures = 0;
        void failed(WorkerBackend& backend, const client::HttpResponse& response, const std::string& problem);
        void answered(WorkerBackend& backend);
        void pause(int ms) const; // returns early when the backend closes
    };
    void deliver(const QString& remoteId, const nlohmann::json& events, bool finished);
    void watch_all();                       // the one long poll of every watched job
    void stream(const QString& remoteId, qint64 after); // one job's long poll, for a worker without /v1/events/watch
    void start_stream(const QString& remoteId, qint64 after); // under streams_mutex_

    mutable std::mutex mutex_; // guards everything below up to streams_mutex_
    std::string url_, token_, pinned_, ca_file_;
    QString description_;
    QString pinned_key_, attach_notice_;
    bool key_needs_trust_ = false;
    std::unique_ptr<client::WorkerClient> template_; // forked for each connection; never used itself
    uint64_t endpoint_ = 0;
    std::vector<Pooled> idle_;
    int in_flight_ = 0; // calls, uploads and fetches under way; the destructor waits for them (they end at once)
    std::condition_variable drained_;
    std::vector<std::shared_ptr<std::atomic<bool>>> uploads_; // the abort flags of the uploads under way
    // A worker on this machine (start_or_attach): where to look for it again.
    struct LocalWorker {
        QString state_dir, binary, what;
        QStringList extra_args;
        bool started_here = false; // this backend started it, so it starts it again
    };
    std::unique_ptr<LocalWorker> local_;

    std::mutex reattach_mutex_; // one look at a time
    std::chrono::steady_clock::time_point last_look_, last_start_;

    std::mutex streams_mutex_; // never held across a request; guards everything below
    std::map<QString, qint64> watched_; // job → the last seq it has had; a job leaves when it ended
    // An ended job → the seq its stream ended at. A watch from before that (a catalog that has not yet written what was
    // delivered) is not a resume: streaming it again would only fetch it all twice.
    std::map<QString, qint64> ended_;
    std::thread watcher_;
    std::condition_variable watch_added_;
    // Ends the watcher's request under way: set when a job is added (the next request includes it) and on close.
    std::shared_ptr<std::atomic<bool>> watch_wake_ = std::make_shared<std::atomic<bool>>(false);
    bool per_job_ = false; // the worker has no /v1/events/watch: one stream per job
    struct Stream {
        std::thread thread;
        std::shared_ptr<std::atomic<bool>> done;
    };
    std::map<QString, Stream> streams_;
    // The abort flag of every connection: set when the backend is destroyed.
    std::shared_ptr<std::atomic<bool>> closing_ = std::make_shared<std::atomic<bool>>(false);
};

} // namespace traindeck
