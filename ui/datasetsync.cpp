// DatasetSync (datasetsync.h): hashing on Qt's global pool, uploads on the network pool, rows through the writer,
// each through run_in_background_reporting (progress and the answer come back only while this object lives).
// The work captures shared state, not `this`, so the window can close while one runs.
#include "datasetsync.h"

#include "background.h"
#include "backendref.h"
#include "datasetreader.h"
#include "inspect.h"
#include "manifest.h"

#include <QFileInfo>

#include <chrono>

namespace traindeck {

DatasetSync::DatasetSync(CatalogWriter& writer, const QString& catalog_path, QObject* parent)
    : QObject(parent), writer_(writer), catalog_path_(catalog_path), cancel_(std::make_shared<std::atomic<bool>>(false)) {}

DatasetSync::~DatasetSync() { cancel(); }

void DatasetSync::cancel() {
    cancel_->store(true);
    // A backend whose cancelUploads() does nothing lets the upload run to its end; what this class does after it
    // is skipped all the same.
    if (uploading_)
        uploading_->cancelUploads();
}

bool DatasetSync::registerPath(const QString& name, const QString& root) {
    if (busy_)
        return false;
    busy_ = true;
    emit busyChanged(true);
    cancel_ = std::make_shared<std::atomic<bool>>(false);
    const QString absolute = QFileInfo(root).absoluteFilePath();
    CatalogWriter& writer = writer_;
    struct Registration {
        QString error; // not registered: why ("" when it was)
        std::string version;
        bool created = false;
    };
    run_in_background_reporting(
        this,
        [absolute, name, cancel = cancel_, &writer](const auto& report) {
            Registration registration;
            const auto start = std::chrono::steady_clock::now();
            dataset::ScanOptions options;
            options.cancel = cancel.get();
            options.progress_every = 16 << 20;
            options.progress = [&](const dataset::ScanProgress& p) {
                report(p.bytes_done, p.bytes_total,
                       std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
            };
            dataset::Manifest manifest;
            dataset::Preview preview;
            std::string error;
            const bool ok = dataset::scan_manifest(absolute.toStdString(), manifest, error, options) &&
                            dataset::inspect_dataset(absolute.toStdString(), manifest, preview, error, 1);
            if (!ok) {
                registration.error = tr("Not registered: %1").arg(QString::fromStdString(error));
                return registration;
            }
            Catalog::DatasetVersionRow row{name.toStdString(),
                                           manifest.version(),
                                           manifest.to_json().dump(),
                                           absolute.toStdString(),
                                           preview.format,
                                           preview.summary,
                                           manifest.bytes(),
                                           static_cast<int64_t>(manifest.files.size())};
            if (cancel->load()) {
                // Cancelled (or the window closed, and the writer may be gone): nothing is written.
                registration.error = tr("Not registered: cancelled");
                return registration;
            }
            // The catalog's writer thread records it; one transaction, so no half-registered version.
            auto created = std::make_shared<bool>(false);
            writer.post([row, created](Catalog& catalog) { catalog.add_dataset_version(row, created.get()); });
            const std::string write_error = writer.flush(); // on this thread, never the GUI's
            if (!write_error.empty()) {
                registration.error =
                    tr("Not registered: the catalog refused it (%1)").arg(QString::fromStdString(write_error));
                return registration;
            }
            registration.version = row.version;
            registration.created = *created;
            return registration;
        },
        [this](qint64 done, qint64 total, double seconds) { emit progress(tr("Hashing"), done, total, seconds); },
        [this, name](const Registration& registration) {
            busy_ = false;
            emit busyChanged(false);
            if (!registration.error.isEmpty()) {
                emit failed(registration.error);
                return;
            }
            emit catalogChanged();
            emit registered(name, QString::fromStdString(registration.version), registration.created);
        },
        QThreadPool::globalInstance());
    return true;
}

bool DatasetSync::upload(const QString& version, const QString& root, Backend& backend, const QString& backend_name,
                         std::function<void(bool, const QString&)> done) {
    if (busy_)
        return false;
    busy_ = true;
    emit busyChanged(true);
    cancel_ = std::make_shared<std::atomic<bool>>(false);
    uploading_ = &backend;
    const BackendRef ref = BackendRef::of(&backend);
    CatalogWriter& writer = writer_;
    struct Upload {
        bool ok = false;
        QString error;
        qint64 sent = 0, to_send = 0;
        double seconds = 0;
    };
    run_in_background_reporting(
        this,
        [ref, version, root, backend_name, catalog_path = catalog_path_, cancel = cancel_,
         &writer](const auto& report) {
            Upload upload;
            // The manifest (one JSON line per file and chunk: megabytes for a large set) is read here, not on the GUI
            // thread.
            DatasetReader reader(catalog_path);
            const QByteArray manifest = reader.manifest(version);
            if (manifest.isEmpty())
                upload.error = reader.error();
            const BackendRef::Use target = ref.use();
            upload.ok = upload.error.isEmpty() && !cancel->load() && target &&
                        target->uploadDataset(
                            root, manifest,
                            [&](qint64 sent, qint64 total, double seconds) {
                                upload.sent = sent;
                                upload.to_send = total;
                                upload.seconds = seconds;
                                report(sent, total, seconds);
                            },
                            &upload.error);
            if (!upload.ok && upload.error.isEmpty())
                upload.error = tr("the upload was cancelled");
            if (upload.ok && !cancel->load()) {
                writer.post([v = version.toStdString(), b = backend_name.toStdString()](Catalog& catalog) {
                    catalog.mark_dataset_uploaded(v, b);
                });
                writer.flush(); // on this thread: the table shows the upload when the signal below refreshes it
            }
            return upload;
        },
        [this](qint64 sent, qint64 total, double seconds) { emit progress(tr("Uploading"), sent, total, seconds); },
        [this, version, backend_name, done = std::move(done)](const Upload& upload) {
            busy_ = false;
            uploading_ = nullptr;
            emit busyChanged(false);
            if (upload.ok) {
                emit catalogChanged();
                emit uploaded(version, backend_name, upload.sent, upload.to_send, upload.seconds);
            } else {
                emit failed(tr("Upload to %1 failed: %2").arg(backend_name, upload.error));
            }
            if (done)
                done(upload.ok, upload.error);
        });
    return true;
}

} // namespace traindeck
