// JobController (jobcontroller.h): every call here returns at once; the uploads and submits it starts run off the
// GUI thread (DatasetSync, JobSync).
#include "jobcontroller.h"

#include "datasetsync.h"
#include "jobsync.h"

#include <QPointer>

namespace traindeck {

JobController::JobController(DatasetSync& datasets, DatasetRoot dataset_root, QObject* parent)
    : QObject(parent), datasets_(datasets), dataset_root_(std::move(dataset_root)) {}

void JobController::add(const QString& name, JobSync& sync, Backend& backend) {
    backends_.push_back({name, &sync, &backend});
}

QStringList JobController::names() const {
    QStringList names;
    for (const Connected& c : backends_)
        names << c.name;
    return names;
}

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

} // namespace traindeck
