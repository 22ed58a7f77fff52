#include "localbackend.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QStandardPaths>
#include <QThread>

#include <fcntl.h>
#include <spawn.h>
#include <unistd.h>

extern char** environ;

namespace traindeck {

namespace {

QString read_first_line(const QString& path) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return {};
    return QString::fromUtf8(file.readLine()).trimmed();
}

bool start_worker(const QString& binary, const QString& state_dir, QString* error) {
    QDir().mkpath(state_dir);
    const std::string program = binary.toStdString();
    const std::string dir = state_dir.toStdString();
    const std::string log = (state_dir + "/worker.log").toStdString();
    std::vector<std::string> words = {program, "--listen", "127.0.0.1:0", "--state-dir", dir};
    std::vector<char*> argv;
    for (auto& word : words)
        argv.push_back(word.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    // Its own session: closing or killing the console must not stop the worker or its jobs.
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSID);
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, program.c_str(), &actions, &attributes, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (rc != 0 && error)
        *error = QStringLiteral("cannot start %1: %2").arg(binary, QString::fromLocal8Bit(strerror(rc)));
    return rc == 0;
}

} // namespace

bool LocalBackend::open(const QVariantMap& settings, QString* error) {
    QString state_dir = settings.value("state_dir").toString();
    if (state_dir.isEmpty())
        state_dir = QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation) + "/traindeck/worker";
    QString binary = settings.value("worker_binary").toString();
    if (binary.isEmpty())
        binary = QCoreApplication::applicationDirPath() + "/traindeck-worker";

    auto attach = [&]() -> bool {
        const QString port = read_first_line(state_dir + "/port");
        const QString token = read_first_line(state_dir + "/token");
        if (port.isEmpty() || token.isEmpty())
            return false;
        const std::string url = "http://127.0.0.1:" + port.toStdString();
        set_endpoint(url, token.toStdString(), {}, {}, QStringLiteral("local worker on 127.0.0.1:%1").arg(port));
        return call("GET", "/v1/health").ok();
    };
    if (attach())
        return true;
    // A stale port file from a worker that is gone: start a new one and wait for its port file.
    QFile::remove(state_dir + "/port");
    if (!start_worker(binary, state_dir, error))
        return false;
    for (int i = 0; i < 200; ++i) {
        if (attach())
            return true;
        QThread::msleep(50);
    }
    if (error)
        *error = QStringLiteral("the local worker did not come up within 10 s; see %1/worker.log").arg(state_dir);
    return false;
}

} // namespace traindeck
