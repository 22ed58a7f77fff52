#include "datasetsync.h"

#include "inspect.h"
#include "manifest.h"

#include <QFileInfo>
#include <QPointer>
#include <QThread>
#include <QtConcurrent>

#include <chrono>

namespace traindeck {

DatasetSync::DatasetSync(CatalogWriter& writer, QObject* parent)
    : QObject(parent), writer_(writer), alive_(std::make_shared<std::atomic<bool>>(true)) {}

DatasetSync::~DatasetSync() {
    cancel_ = true;
    *alive_ = false;
    QThreadPool::globalInstance()->waitForDone();
}

bool DatasetSync::registerPath(const QString& name, const QString& root) {
    if (busy_)
        return false;
    busy_ = true;
    cancel_ = false;
    QPointer<DatasetSync> self(this);
    const QString absolute = QFileInfo(root).absoluteFilePath();
    (void)QtConcurrent::run([this, self, name, absolute] {
        const auto start = std::chrono::steady_clock::now();
        dataset::ScanOptions options;
        options.cancel = &cancel_;
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
        writer_.post([row, created](Catalog& catalog) { catalog.add_dataset_version(row, created.get()); });
        writer_.flush();
        const std::string write_error = writer_.last_error();
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

bool DatasetSync::upload(const QString& version, const QString& root, const QByteArray& manifest, Backend& backend,
                         const QString& backend_name, std::function<void(bool, const QString&)> done) {
    if (busy_)
        return false;
    busy_ = true;
    cancel_ = false;
    QPointer<DatasetSync> self(this);
    QPointer<Backend> target(&backend);
    (void)QtConcurrent::run([this, self, target, version, root, manifest, backend_name, done] {
        qint64 sent = 0, to_send = 0;
        double seconds = 0;
        QString error;
        const bool ok = target && target->uploadDataset(root, manifest, [&](qint64 s, qint64 total, double t) {
            sent = s;
            to_send = total;
            seconds = t;
            QMetaObject::invokeMethod(self, [self, s, total, t] {
                if (self)
                    emit self->progress(tr("Uploading"), s, total, t);
            });
        }, &error);
        if (ok) {
            writer_.post([v = version.toStdString(), b = backend_name.toStdString()](Catalog& catalog) {
                catalog.mark_dataset_uploaded(v, b);
            });
            writer_.flush();
        }
        QMetaObject::invokeMethod(self, [self, ok, error, version, backend_name, sent, to_send, seconds, done] {
            if (!self)
                return;
            self->busy_ = false;
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
