#include "slurmbackend.h"

#include <QStandardPaths>

namespace traindeck {

bool SlurmBackend::open(const QVariantMap& settings, QString* error) {
    QStringList args = {"--executor", "slurm"};
    for (const char* key : {"slurm_rest", "slurm_token_file", "slurm_user", "slurm_partition", "slurm_conf"}) {
        const QString value = settings.value(key).toString();
        if (!value.isEmpty())
            args << "--" + QString(key).replace('_', '-') << value;
    }
    return start_or_attach(settings, QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation) + "/traindeck/slurm-worker",
                           args, tr("Slurm worker"), error);
}

} // namespace traindeck
