#pragma once
// Which backend a job runs on, and the actions that need it: the one list of connected backends (each with the
// JobSync that keeps the catalog in step with it), the one place that resolves a job or a backend's name to them,
// and the upload-then-submit flow (a job whose dataset version must be on its backend first: upload what the
// backend lacks, often nothing, then submit). The window, the datasets tab and the migrator ask here; none keeps a
// list of its own. No widgets: problems are said through problem(), for the window's alerts.
#include "backend.h"

#include <QJsonObject>
#include <QList>
#include <QObject>
#include <QSet>
#include <QStringList>

#include <functional>
#include <optional>

namespace traindeck {

class DatasetSync;
class JobSync;

class JobController : public QObject {
    Q_OBJECT
public:
    struct Connected {
        QString name;
        JobSync* sync;
        Backend* backend;
    };
    // A job as the jobs table names it.
    struct Job {
        qint64 id = 0;
        QString backend, remote_id;
    };
    // The local folder of a registered dataset version; "" when the catalog has no such version.
    using DatasetRoot = std::function<QString(const QString& version)>;

    JobController(DatasetSync& datasets, DatasetRoot dataset_root, QObject* parent = nullptr);

    void add(const QString& name, JobSync& sync, Backend& backend);
    const QList<Connected>& backends() const { return backends_; }
    QStringList names() const; // the connected backends new work may go to (not those retired)
    // A backend the user removed: it takes no new job, sweep, upload or rerun from now on (names() leaves it out),
    // while what it runs already is still reached through find() until the console closes.
    void retire(const QString& name);
    bool retired(const QString& name) const { return retired_.contains(name); }
    // The connected backend of that name; none when it is not connected (any more).
    std::optional<Connected> find(const QString& name) const;
    std::optional<Connected> backendOf(const Job& job) const { return find(job.backend); }

    // On the job's backend; false, and problem(), when that backend is not connected.
    bool cancel(const Job& job);
    bool resume(const Job& job);
    // Deletes a finished job's files on its backend for good (JobSync::removeFiles).
    bool removeFiles(const Job& job);
    // Submits to the named backend; a request with a "dataset" version has that version uploaded there first (only
    // the chunks it lacks). What stops it is said through problem(), as "Not submitted: …".
    void submit(const QString& backend_name, const QString& job_name, const QJsonObject& request);
    // Reruns a job on the named backend (a request from model/reproduce.h's plan_reproduction): its code snapshot is
    // copied there from the job's own backend first when they differ (only the chunks it lacks, off the GUI
    // thread), then it is submitted as submit() does. What stops it is said through problem(), as "Not rerun: …".
    void reproduce(const Job& original, const QString& backend_name, const QJsonObject& request, const QString& code);

signals:
    void problem(const QString& message);
    // add() was called: the backend is connected from now on.
    void added(const QString& name, Backend* backend);

private:
    std::optional<Connected> connectedOrSay(const Job& job);

    DatasetSync& datasets_;
    DatasetRoot dataset_root_;
    QList<Connected> backends_;
    QSet<QString> retired_;
};

} // namespace traindeck
