#pragma once
// The Slurm backend: a traindeck-worker on this machine (a cluster login node) whose executor is Slurm, started
// or found like the local one. Jobs become Slurm batch jobs; the console sees them like any worker's jobs.
#include "workerbackend.h"

#include <QObject>

namespace traindeck {

class SlurmBackend : public WorkerBackend {
    Q_OBJECT
public:
    using WorkerBackend::WorkerBackend;
    // settings: "state_dir" (default $XDG_DATA_HOME/traindeck/slurm-worker; must be on the cluster's shared
    // filesystem), "slurm_rest" (slurmrestd URL; empty: sbatch/squeue/scancel), "slurm_token_file", "slurm_user",
    // "slurm_partition", "slurm_conf", "worker_binary".
    bool open(const QVariantMap& settings, QString* error) override;
};

class SlurmBackendFactory : public QObject, public BackendFactory {
    Q_OBJECT
    Q_PLUGIN_METADATA(IID TrainDeckBackendFactory_iid FILE "slurm.json")
    Q_INTERFACES(traindeck::BackendFactory)
public:
    QString kind() const override { return QStringLiteral("slurm"); }
    Backend* create(QObject* parent) override { return new SlurmBackend(parent); }
};

} // namespace traindeck
