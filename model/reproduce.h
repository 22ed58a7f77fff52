#pragma once
// Reproducibility over runs' captures (backend/worker/capture.h, kept by the catalog): what differs between two
// runs' code, packages and machines, and the request that reruns a run exactly, with what stands in the way of
// "exactly" said before it starts. Pure functions over the captures' JSON: no catalog, no network.
#include <QByteArray>
#include <QJsonObject>
#include <QList>
#include <QString>
#include <QStringList>

#include <functional>

namespace traindeck {

struct CaptureDifference {
    QString what;   // "numpy" (a package), "kernel", "commit", ...
    QString before; // "" when the first run has none (added)
    QString after;  // "" when the second has none (removed)
};

struct EnvironmentDiff {
    QList<CaptureDifference> code;        // commit, branch, remote, dirty, snapshot, working folder, command
    QList<CaptureDifference> packages;    // Python packages: name, version (and Debian package's version)
    QList<CaptureDifference> system;      // OS, kernel, CPU, memory, GPUs, driver, CUDA, cuDNN, NCCL, TrainDeck, engine
    QList<CaptureDifference> environment; // the job's environment variables (hidden values stay hidden)
    bool uncommitted_differs = false;     // the two runs' uncommitted diffs are not the same text
    int packages_compared = 0;            // packages in either run (0: neither said)
    bool empty() const {
        return code.isEmpty() && packages.isEmpty() && system.isEmpty() && environment.isEmpty() &&
               !uncommitted_differs;
    }
};

// code_*: a run's "code" capture event's data; environment_*: its "environment" one (either may be empty).
EnvironmentDiff diff_captures(const QJsonObject& code_a, const QJsonObject& environment_a, const QJsonObject& code_b,
                              const QJsonObject& environment_b);

// A package's version as a run had it: "1.24.2 (Debian python3-numpy 1:1.24.2-1)" or "1.24.2".
QString package_version(const QJsonObject& package);

// The code two runs started from, file by file: a unified diff of every text file that differs between their
// snapshots' manifests (the JSON GET /v1/code gives), "Binary files differ" for others. chunk(sha256, second) gives a
// file's bytes from the first or the second run's backend (empty and *error set when it cannot); a file over
// max_file_bytes is only said to differ. "" when the snapshots hold the same files; a line saying what could not be
// read when a manifest is not one.
QString snapshot_diff(const QByteArray& manifest_a, const QByteArray& manifest_b,
                      const std::function<QByteArray(const QString& sha256, bool second, QString* error)>& chunk,
                      qint64 max_file_bytes = qint64(256) * 1024);

struct ReproducePlan {
    QJsonObject request;  // to submit (with "console": {"reproduces": job}); empty when it cannot be made
    QString code;         // the code snapshot the rerun needs on its backend ("" for a built-in job)
    QStringList warnings; // why the rerun may not be exact, said before it starts
    QString refused;      // not "": no rerun can be made (what is missing)
};

// The rerun of `job`: its request as submitted (spec with seed, dataset version, resources and so thread count),
// in its captured code snapshot instead of its live folder. target_resources: GET /v1/resources of the backend
// it is to run on (its engine build), or empty.
ReproducePlan plan_reproduction(qint64 job, const QJsonObject& original_request, const QJsonObject& code_capture,
                                const QJsonObject& environment_capture, const QJsonObject& target_resources);

} // namespace traindeck
