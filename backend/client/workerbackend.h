#pragma once
// A Backend that speaks the worker protocol over HTTP(S) through WorkerClient. The local and remote-worker
// plugins are this plus how they find their worker.
//
// Rules it keeps: no call waits behind another (each takes a connection of its own from a small pool, so a worker
// that answers one request after 10 s holds up only that request, and watch() never waits on the network at all);
// names in a worker's replies are checked before they become paths (remotename.h); a reply that does not parse is
// repaired or reported, never a reason to spin or to stop a stream (jsonrepair.h); destroying the backend ends
// every request under way within 50 ms instead of waiting for the worker.
#include "backend.h"
#include "workerclient.h"

#include <atomic>
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
    bool resume(const QString& remoteId, double newBudget, QString* error) override;
    QJsonObject resources(QString* error) override;
    void watch(const QString& remoteId, qint64 afterSeq) override;
    bool uploadDataset(const QString& root, const QByteArray& manifest,
                       const std::function<void(qint64, qint64, double)>& progress, QString* error) override;
    QString fetchCheckpoint(const QString& remoteId, const QString& dir, QString* error) override;

    // Stops every dataset upload under way: each ends within 50 ms with an error saying it was cancelled; the
    // chunks already sent stay on the worker, so uploading again continues. Safe from any thread. The Backend
    // interface has no cancel of its own yet, so the console invokes this by name.
    Q_INVOKABLE void cancelUploads();
    // Ends every request under way and refuses new ones (each ends within 50 ms with an error), without waiting;
    // the backend stays a valid object until deleted. The console calls it by name before it lets go of a backend
    // (ui/backendref.h), so that no task is left waiting on a worker that may never answer.
    Q_INVOKABLE void shutdown();

protected:
    // Subclasses call this from open() once they know where the worker is.
    void set_endpoint(const std::string& url, const std::string& token, const std::string& pinned_key,
                      const std::string& ca_file, const QString& description);
    client::HttpResponse call(const std::string& method, const std::string& path, const std::string& body = {},
                              long timeout_ms = 10000);
    // Finds the worker whose state folder is settings["state_dir"] (else default_state_dir) on this machine, or
    // starts one there (detached, its own session: jobs outlive the console) with extra_args, and connects.
    // settings["worker_binary"] overrides the traindeck-worker next to the app. The token goes only to the
    // process the kernel says listens on the folder's port, and only when that process is this folder's worker
    // (run by this user with --state-dir naming the folder); a port that another program holds gets nothing, a new
    // worker is started, and the dynamic property "attach_notice" says what happened (the window shows it).
    bool start_or_attach(const QVariantMap& settings, const QString& default_state_dir, const QStringList& extra_args,
                         const QString& what, QString* error);

private:
    struct Pooled {
        uint64_t endpoint = 0; // which set_endpoint() it was made for: older ones are dropped when returned
        std::unique_ptr<client::WorkerClient> client;
    };
    Pooled take_client();
    void return_client(Pooled pooled);
    void stream(QString remoteId, qint64 after);

    mutable std::mutex mutex_; // guards everything below up to streams_mutex_
    std::string url_, token_, pinned_, ca_file_;
    QString description_;
    std::unique_ptr<client::WorkerClient> template_; // forked for each connection; never used itself
    uint64_t endpoint_ = 0;
    std::vector<Pooled> idle_;
    int in_flight_ = 0; // calls, uploads and fetches under way; the destructor waits for them (they end at once)
    std::condition_variable drained_;
    std::vector<std::shared_ptr<std::atomic<bool>>> uploads_; // the abort flags of the uploads under way

    std::mutex streams_mutex_; // never held across a request
    struct Stream {
        std::thread thread;
        std::shared_ptr<std::atomic<bool>> done;
    };
    std::map<QString, Stream> streams_;
    // The abort flag of every connection: set when the backend is destroyed.
    std::shared_ptr<std::atomic<bool>> closing_ = std::make_shared<std::atomic<bool>>(false);
};

} // namespace traindeck
