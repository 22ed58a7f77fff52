// DatasetSync (datasetsync.h): hashing on Qt's global pool, uploads on the network pool, rows through the writer.
// The operations capture shared state, not `this`, so the window can close while one runs.
#include "datasetsync.h"

#include "backendref.h"
#include "datasetreader.h"
#include "inspect.h"
#include "manifest.h"
#include "networkpool.h"

#include <QFileInfo>
#include <QPointer>
#include <QtConcurrent>

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
    cancel_ = std::make_shared<std::atomic<bool>>(false);
    QPointer<DatasetSync> self(this);
    const QString absolute = QFileInfo(root).absoluteFilePath();
    CatalogWriter& writer = writer_;
    (void)QtConcurrent::run([self, name, absolute, cancel = cancel_, &writer] {
        const auto start = std::chrono::steady_clock::now();
        dataset::ScanOptions options;
        options.cancel = cancel.get();
        options.progress_every = 16 << 20;
        options.progress = [&](const dataset::ScanProgress& p) {
            const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            QMetaObject::invokeMethod(self, [self, p, seconds] {
                if (self)
                    emit self->progress(tr("Hashing"), p.bytes_done, p.bytes_total, seconds);
            });
        };
        dataset::Manifest manifest;
        dataset::Preview preview;
        std::string error;
        const bool ok = dataset::scan_manifest(absolute.toStdString(), manifest, error, options) &&
                        dataset::inspect_dataset(absolute.toStdString(), manifest, preview, error, 1);
        if (!ok) {
            QMetaObject::invokeMethod(self, [self, error] {
                if (!self)
                    return;
                self->busy_ = false;
                emit self->failed(tr("Not registered: %1").arg(QString::fromStdString(error)));
            });
            return;
        }
        Catalog::DatasetVersionRow row{name.toStdString(), manifest.version(), manifest.to_json().dump(), absolute.toStdString(),
                                       preview.format, preview.summary, manifest.bytes(), static_cast<int64_t>(manifest.files.size())};
        // The catalog's writer thread records it; one transaction, so no half-registered version.
        auto created = std::make_shared<bool>(false);
        if (cancel->load()) {
            // Cancelled (or the window closed, and the writer may be gone): nothing is written.
            QMetaObject::invokeMethod(self, [self] {
                if (!self)
                    return;
                self->busy_ = false;
                emit self->failed(tr("Not registered: cancelled"));
            });
            return;
        }
        writer.post([row, created](Catalog& catalog) { catalog.add_dataset_version(row, created.get()); });
        const std::string write_error = writer.flush(); // on this thread, never the GUI's
        QMetaObject::invokeMethod(self, [self, name, row, created, write_error] {
            if (!self)
                return;
            self->busy_ = false;
            if (!write_error.empty()) {
                emit self->failed(tr("Not registered: the catalog refused it (%1)").arg(QString::fromStdString(write_error)));
                return;
            }
            emit self->catalogChanged();
            emit self->registered(name, QString::fromStdString(row.version), *created);
        });
    });
    return true;
}

bool DatasetSync::upload(const QString& version, const QString& root, Backend& backend, const QString& backend_name,
                         std::function<void(bool, const QString&)> done) {
    if (busy_)
        return false;
    busy_ = true;
    cancel_ = std::make_shared<std::atomic<bool>>(false);
    uploading_ = &backend;
    QPointer<DatasetSync> self(this);
    const BackendRef ref = BackendRef::of(&backend);
    CatalogWriter& writer = writer_;
    const QString catalog_path = catalog_path_;
    (void)QtConcurrent::run(networkPool(), [self, ref, version, root, backend_name, done, catalog_path, cancel = cancel_, &writer] {
        qint64 sent = 0, to_send = 0;
        double seconds = 0;
        QString error;
        // The manifest (one JSON line per file and chunk: megabytes for a large set) is read here, not on the GUI thread.
        DatasetReader reader(catalog_path);
        const QByteArray manifest = reader.manifest(version);
        if (manifest.isEmpty())
            error = reader.error();
        const BackendRef::Use target = ref.use();
        const bool ok = error.isEmpty() && !cancel->load() && target && target->uploadDataset(root, manifest, [&](qint64 s, qint64 total, double t) {
            sent = s;
            to_send = total;
            seconds = t;
            QMetaObject::invokeMethod(self, [self, s, total, t] {
                if (self)
                    emit self->progress(tr("Uploading"), s, total, t);
            });
        }, &error);
        if (!ok && error.isEmpty())
            error = tr("the upload was cancelled");
        if (ok && !cancel->load()) {
            writer.post([v = version.toStdString(), b = backend_name.toStdString()](Catalog& catalog) {
                catalog.mark_dataset_uploaded(v, b);
            });
            writer.flush(); // on this thread: the table shows the upload when the signal below refreshes it
        }
        QMetaObject::invokeMethod(self, [self, ok, error, version, backend_name, sent, to_send, seconds, done] {
            if (!self)
                return;
            self->busy_ = false;
            self->uploading_ = nullptr;
            if (ok) {
                emit self->catalogChanged();
                emit self->uploaded(version, backend_name, sent, to_send, seconds);
            } else {
                emit self->failed(tr("Upload to %1 failed: %2").arg(backend_name, error));
            }
            if (done)
                done(ok, error);
        });
    });
    return true;
}

} // namespace traindeck
