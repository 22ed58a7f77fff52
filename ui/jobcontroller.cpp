// JobController (jobcontroller.h): every call here returns at once; the uploads and submits it starts run off the
// GUI thread (DatasetSync, JobSync).
#include "jobcontroller.h"

#include "background.h"
#include "backendref.h"
#include "datasetsync.h"
#include "jobsync.h"

#include <QPointer>

namespace traindeck {

JobController::JobController(DatasetSync& datasets, DatasetRoot dataset_root, QObject* parent)
    : QObject(parent), datasets_(datasets), dataset_root_(std::move(dataset_root)) {}

void JobController::add(const QString& name, JobSync& sync, Backend& backend) {
    backends_.push_back({name, &sync, &backend});
    emit added(name, &backend);
}

QStringList JobController::names() const {
    QStringList names;
    for (const Connected& c : backends_)
        if (!retired_.contains(c.name))
            names << c.name;
    return names;
}

void JobController::retire(const QString& name) { retired_.insert(name); }

std::optional<JobController::Connected> JobController::find(const QString& name) const {
    for (const Connected& c : backends_)
        if (c.name == name)
            return c;
    return std::nullopt;
}

std::optional<JobController::Connected> JobController::connectedOrSay(const Job& job) {
    std::optional<Connected> connected = backendOf(job);
    if (!connected)
        emit problem(tr("The job's backend is not connected"));
    return connected;
}

bool JobController::cancel(const Job& job) {
    const std::optional<Connected> connected = connectedOrSay(job);
    if (connected)
        connected->sync->cancel(job.id, job.remote_id);
    return connected.has_value();
}

bool JobController::resume(const Job& job) {
    const std::optional<Connected> connected = connectedOrSay(job);
    if (connected)
        connected->sync->resume(job.id, job.remote_id);
    return connected.has_value();
}

bool JobController::removeFiles(const Job& job) {
    const std::optional<Connected> connected = connectedOrSay(job);
    if (connected)
        connected->sync->removeFiles(job.id, job.remote_id);
    return connected.has_value();
}

void JobController::submit(const QString& backend_name, const QString& job_name, const QJsonObject& request) {
    const std::optional<Connected> connected = find(backend_name);
    if (!connected) {
        emit problem(tr("Not submitted: backend “%1” is not connected").arg(backend_name));
        return;
    }
    const QString version = request.value("dataset").toString();
    if (version.isEmpty()) {
        connected->sync->submit(job_name, request);
        return;
    }
    // The worker must hold the dataset version first: upload what it lacks (often nothing), then submit.
    const QString root = dataset_root_(version);
    if (root.isEmpty()) {
        emit problem(tr("Not submitted: dataset version %1 is not in the catalog").arg(version.left(12)));
        return;
    }
    QPointer<JobController> self(this);
    JobSync* sync = connected->sync;
    const bool started = datasets_.upload(version, root, *connected->backend, connected->name,
                                          [self, sync, job_name, request](bool ok, const QString& error) {
                                              if (!self)
                                                  return;
                                              if (ok)
                                                  sync->submit(job_name, request);
                                              else
                                                  emit self->problem(tr("Not submitted: %1").arg(error));
                                          });
    if (!started)
        emit problem(tr("Not submitted: a dataset upload is still running; try again when it is done"));
}

void JobController::reproduce(const Job& original, const QString& backend_name, const QJsonObject& request,
                              const QString& code) {
    const std::optional<Connected> target = find(backend_name);
    if (!target) {
        emit problem(tr("Not rerun: backend “%1” is not connected").arg(backend_name));
        return;
    }
    const QString name = request.value("name").toString();
    if (code.isEmpty() || original.backend == backend_name) {
        submit(backend_name, name, request);
        return;
    }
    const std::optional<Connected> source = find(original.backend);
    if (!source) {
        emit problem(
            tr("Not rerun: the run's code snapshot is on backend “%1”, which is not connected").arg(original.backend));
        return;
    }
    const BackendRef from_ref = BackendRef::of(source->backend), to_ref = BackendRef::of(target->backend);
    run_in_background(
        this,
        [from_ref, to_ref, code] {
            const BackendRef::Use from = from_ref.use();
            const BackendRef::Use to = to_ref.use();
            if (!from || !to)
                return tr("a backend was closed");
            QString error;
            const QByteArray manifest = from->codeManifest(code, &error);
            if (manifest.isEmpty())
                return error;
            Backend* source = &*from;
            if (!to->storeCode(
                    manifest, [source](const QString& hash, QString* why) { return source->codeChunk(hash, why); },
                    &error))
                return error;
            return QString();
        },
        [this, backend_name, name, request](const QString& error) {
            if (!error.isEmpty())
                emit problem(tr("Not rerun: %1").arg(error));
            else
                submit(backend_name, name, request);
        });
}

} // namespace traindeck
