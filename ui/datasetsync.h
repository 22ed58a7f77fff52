#pragma once
// Datasets between the disk, the catalog and the backends: registers a folder or file as a version (hashing and
// format checks off the GUI thread, the row written by the catalog's writer) and uploads versions to backends.
// One operation at a time; progress and results arrive as signals on the GUI thread. cancel() stops the one under
// way (an upload within 50 ms on a WorkerBackend); destroying this cancels too and waits for nothing.
#include "backend.h"
#include "catalog.h"

#include <QObject>
#include <QPointer>

#include <atomic>
#include <functional>
#include <memory>

namespace traindeck {

class DatasetSync : public QObject {
    Q_OBJECT
public:
    // catalog_path: uploads read the version's manifest through a connection of their own, off the GUI thread.
    DatasetSync(CatalogWriter& writer, const QString& catalog_path, QObject* parent = nullptr);
    ~DatasetSync() override;

    bool busy() const { return busy_; }
    // Registers root (a folder or a file) under name; a changed folder becomes a new version of that name.
    bool registerPath(const QString& name, const QString& root);
    // Sends a version to a backend (only missing chunks); `done` runs on the GUI thread either way.
    bool upload(const QString& version, const QString& root, Backend& backend, const QString& backend_name,
                std::function<void(bool ok, const QString& error)> done = {});
    void cancel();

signals:
    void progress(const QString& what, qint64 done, qint64 total, double seconds);
    // is_new: false when these exact bytes were registered before (the existing version is reused).
    void registered(const QString& name, const QString& version, bool is_new);
    void uploaded(const QString& version, const QString& backend, qint64 bytes_sent, qint64 bytes_total, double seconds);
    void failed(const QString& message);
    void catalogChanged();
    void busyChanged(bool busy); // an operation started (true) or ended (false): cancel() has something to stop

private:
    CatalogWriter& writer_;
    QString catalog_path_;
    bool busy_ = false;
    // Shared with the operation under way, which may outlive this object by the moment it takes to stop.
    std::shared_ptr<std::atomic<bool>> cancel_;
    QPointer<Backend> uploading_; // the backend of the upload under way, to cancel it there
};

} // namespace traindeck
