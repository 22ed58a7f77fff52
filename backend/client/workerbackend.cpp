#include "workerbackend.h"

#include "datasetupload.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QThread>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSaveFile>

#include <chrono>

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

bool start_worker(const QString& binary, const QString& state_dir, const QStringList& extra_args, QString* error) {
    QDir().mkpath(state_dir);
    const std::string program = binary.toStdString();
    const std::string dir = state_dir.toStdString();
    const std::string log = (state_dir + "/worker.log").toStdString();
    std::vector<std::string> words = {program, "--listen", "127.0.0.1:0", "--state-dir", dir};
    for (const QString& arg : extra_args)
        words.push_back(arg.toStdString());
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

bool WorkerBackend::start_or_attach(const QVariantMap& settings, const QString& default_state_dir, const QStringList& extra_args,
                                    const QString& what, QString* error) {
    QString state_dir = settings.value("state_dir").toString();
    if (state_dir.isEmpty())
        state_dir = default_state_dir;
    QString binary = settings.value("worker_binary").toString();
    if (binary.isEmpty())
        binary = QCoreApplication::applicationDirPath() + "/traindeck-worker";

    auto attach = [&]() -> bool {
        const QString port = read_first_line(state_dir + "/port");
        const QString token = read_first_line(state_dir + "/token");
        if (port.isEmpty() || token.isEmpty())
            return false;
        const std::string url = "http://127.0.0.1:" + port.toStdString();
        set_endpoint(url, token.toStdString(), {}, {}, QStringLiteral("%1 on 127.0.0.1:%2").arg(what, port));
        return call("GET", "/v1/health").ok();
    };
    if (attach())
        return true;
    // A stale port file from a worker that is gone: start a new one and wait for its port file.
    QFile::remove(state_dir + "/port");
    if (!start_worker(binary, state_dir, extra_args, error))
        return false;
    for (int i = 0; i < 200; ++i) {
        if (attach())
            return true;
        QThread::msleep(50);
    }
    if (error)
        *error = QStringLiteral("the %1 did not come up within 10 s; see %2/worker.log").arg(what, state_dir);
    return false;
}


WorkerBackend::~WorkerBackend() {
    closing_ = true;
    for (auto& [id, stream] : streams_)
        if (stream.thread.joinable())
            stream.thread.join();
}

void WorkerBackend::set_endpoint(const std::string& url, const std::string& token, const std::string& pinned_key,
                                 const std::string& ca_file, const QString& description) {
    std::lock_guard lock(mutex_);
    url_ = url;
    token_ = token;
    pinned_ = pinned_key;
    ca_file_ = ca_file;
    description_ = description;
    client_ = std::make_unique<client::WorkerClient>(url_, token_);
    client_->set_tls(pinned_, ca_file_);
}

client::HttpResponse WorkerBackend::call(const std::string& method, const std::string& path, const std::string& body) {
    std::lock_guard lock(mutex_);
    if (!client_)
        return {0, {}, "not connected"};
    return method == "GET" ? client_->get(path) : client_->post(path, body);
}

QString WorkerBackend::submit(const QJsonObject& request, QString* error) {
    const auto response = call("POST", "/v1/jobs", QJsonDocument(request).toJson(QJsonDocument::Compact).toStdString());
    if (response.status != 201) {
        if (error)
            *error = QString::fromStdString(response.message());
        return {};
    }
    const auto reply = QJsonDocument::fromJson(QByteArray::fromStdString(response.body)).object();
    return QString::number(reply.value("id").toInteger());
}

bool WorkerBackend::cancel(const QString& remoteId, QString* error) {
    const auto response = call("POST", "/v1/jobs/" + remoteId.toStdString() + "/cancel", "{}");
    if (!response.ok() && error)
        *error = QString::fromStdString(response.message());
    return response.ok();
}

QJsonObject WorkerBackend::resources(QString* error) {
    const auto response = call("GET", "/v1/resources");
    if (!response.ok()) {
        if (error)
            *error = QString::fromStdString(response.message());
        return {};
    }
    return QJsonDocument::fromJson(QByteArray::fromStdString(response.body)).object();
}

bool WorkerBackend::resume(const QString& remoteId, double newBudget, QString* error) {
    const std::string body = newBudget > 0 ? "{\"budget\":" + std::to_string(newBudget) + "}" : "{}";
    const auto response = call("POST", "/v1/jobs/" + remoteId.toStdString() + "/resume", body);
    if (!response.ok() && error)
        *error = QString::fromStdString(response.message());
    return response.ok();
}

bool WorkerBackend::uploadDataset(const QString& root, const QByteArray& manifest_json,
                                  const std::function<void(qint64, qint64, double)>& progress, QString* error) {
    dataset::Manifest manifest;
    std::string message;
    const nlohmann::json parsed = nlohmann::json::parse(manifest_json.toStdString(), nullptr, false);
    if (!dataset::Manifest::from_json(parsed, manifest, message)) {
        if (error)
            *error = "the catalog's manifest is damaged: " + QString::fromStdString(message);
        return false;
    }
    std::unique_ptr<client::WorkerClient> connection;
    {
        std::lock_guard lock(mutex_);
        if (!client_) {
            if (error)
                *error = "not connected";
            return false;
        }
        connection = client_->fork();
    }
    client::UploadOptions options;
    options.progress = [&](const client::UploadProgress& p) {
        if (progress)
            progress(p.bytes_sent, p.bytes_to_send, p.seconds);
    };
    client::UploadProgress result;
    if (!client::upload_dataset(*connection, manifest, root.toStdString(), result, message, options)) {
        if (error)
            *error = QString::fromStdString(message);
        return false;
    }
    if (progress)
        progress(result.bytes_sent, result.bytes_to_send, result.seconds);
    return true;
}

QString WorkerBackend::fetchCheckpoint(const QString& remoteId, const QString& dir, QString* error) {
    auto fail = [&](const QString& message) {
        if (error)
            *error = message;
        return QString();
    };
    const auto listed = call("GET", "/v1/jobs/" + remoteId.toStdString() + "/checkpoints");
    if (!listed.ok())
        return fail(QString::fromStdString(listed.message()));
    const QJsonArray list = QJsonDocument::fromJson(QByteArray::fromStdString(listed.body)).object().value("checkpoints").toArray();
    if (list.isEmpty())
        return fail(tr("job %1 has written no checkpoint yet").arg(remoteId));
    const QString name = list.last().toObject().value("name").toString();
    const auto bytes = call("GET", "/v1/jobs/" + remoteId.toStdString() + "/checkpoints/" + name.toStdString());
    if (!bytes.ok())
        return fail(QString::fromStdString(bytes.message()));
    QDir().mkpath(dir);
    const QString path = QDir(dir).filePath(name);
    QSaveFile file(path); // temp file + rename: a reader never sees half a checkpoint
    if (!file.open(QIODevice::WriteOnly) || file.write(bytes.body.data(), static_cast<qint64>(bytes.body.size())) !=
                                                    static_cast<qint64>(bytes.body.size()) || !file.commit())
        return fail(tr("cannot write %1: %2").arg(path, file.errorString()));
    return path;
}

void WorkerBackend::watch(const QString& remoteId, qint64 afterSeq) {
    std::lock_guard lock(mutex_);
    auto it = streams_.find(remoteId);
    if (it != streams_.end()) {
        if (!it->second.done->load())
            return; // already streaming
        it->second.thread.join(); // its job had ended; it was resumed, so stream again
        streams_.erase(it);
    }
    auto done = std::make_shared<std::atomic<bool>>(false);
    streams_[remoteId] = {std::thread([this, remoteId, afterSeq, done] {
                              stream(remoteId, afterSeq);
                              done->store(true);
                          }),
                          done};
}

void WorkerBackend::stream(QString remoteId, qint64 after) {
    std::string url, token, pinned, ca;
    {
        std::lock_guard lock(mutex_);
        url = url_;
        token = token_;
        pinned = pinned_;
        ca = ca_file_;
    }
    client::WorkerClient client(url, token);
    client.set_tls(pinned, ca);
    int failures = 0;
    bool connected = true;
    while (!closing_) {
        const auto response = client.get("/v1/jobs/" + remoteId.toStdString() + "/events?limit=20000&wait_ms=1000&after=" +
                                             std::to_string(after),
                                         15000);
        if (!response.ok()) {
            // Backoff up to 10 s; the next successful call asks after the last seq we had, so nothing is lost.
            if (connected)
                emit connectionChanged(false, QString::fromStdString(response.message()));
            connected = false;
            const int delay_ms = std::min(10000, 250 << std::min(failures++, 6));
            for (int waited = 0; waited < delay_ms && !closing_; waited += 50)
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
            continue;
        }
        if (!connected)
            emit connectionChanged(true, description_);
        connected = true;
        failures = 0;
        // The reply is {"events":[...],"next":N,"state":"..."}: hand the raw array on, the catalog's writer parses it.
        const QJsonDocument reply = QJsonDocument::fromJson(QByteArray::fromStdString(response.body));
        const QJsonObject object = reply.object();
        const QJsonArray events = object.value("events").toArray();
        const QString state = object.value("state").toString();
        const bool finished = events.isEmpty() && (state == "succeeded" || state == "failed" || state == "cancelled" ||
                                                   state == "stopped");
        if (!events.isEmpty() || finished)
            emit eventsArrived(remoteId, QJsonDocument(events).toJson(QJsonDocument::Compact), finished);
        after = object.value("next").toInteger(after);
        if (finished)
            return;
    }
}

} // namespace traindeck
