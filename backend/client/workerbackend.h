#pragma once
// A Backend that speaks the worker protocol over HTTP(S) through WorkerClient. The local and remote-worker
// plugins are this plus how they find their worker.
#include "backend.h"
#include "workerclient.h"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace traindeck {

class WorkerBackend : public Backend {
    Q_OBJECT
public:
    using Backend::Backend;
    ~WorkerBackend() override;

    QString describe() const override { return description_; }
    QString submit(const QJsonObject& request, QString* error) override;
    bool cancel(const QString& remoteId, QString* error) override;
    bool resume(const QString& remoteId, double newBudget, QString* error) override;
    QJsonObject resources(QString* error) override;
    void watch(const QString& remoteId, qint64 afterSeq) override;
    bool uploadDataset(const QString& root, const QByteArray& manifest,
                       const std::function<void(qint64, qint64, double)>& progress, QString* error) override;
    QString fetchCheckpoint(const QString& remoteId, const QString& dir, QString* error) override;

protected:
    // Subclasses call this from open() once they know where the worker is.
    void set_endpoint(const std::string& url, const std::string& token, const std::string& pinned_key,
                      const std::string& ca_file, const QString& description);
    client::HttpResponse call(const std::string& method, const std::string& path, const std::string& body = {});
    // Finds the worker whose state folder is settings["state_dir"] (else default_state_dir) on this machine, or
    // starts one there (detached, its own session: jobs outlive the console) with extra_args, and connects.
    // settings["worker_binary"] overrides the traindeck-worker next to the app.
    bool start_or_attach(const QVariantMap& settings, const QString& default_state_dir, const QStringList& extra_args,
                         const QString& what, QString* error);

private:
    void stream(QString remoteId, qint64 after);

    std::string url_, token_, pinned_, ca_file_;
    QString description_;
    std::mutex mutex_;
    std::unique_ptr<client::WorkerClient> client_; // for calls; each stream has its own
    struct Stream {
        std::thread thread;
        std::shared_ptr<std::atomic<bool>> done;
    };
    std::map<QString, Stream> streams_;
    std::atomic<bool> closing_{false};
};

} // namespace traindeck
