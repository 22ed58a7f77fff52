// WorkerBackend (see workerbackend.h for the rules it keeps): start-or-attach for workers on this machine (and
// finding them again), a pool of connections for calls, one long poll for every watched job, and the checks on
// what a worker answers.
#include "workerbackend.h"

#include "codetransfer.h"
#include "datasetupload.h"
#include "jobstate.h"
#include "jsonrepair.h"
#include "portlistener.h"
#include "process.h"
#include "remotename.h"
#include "watchreply.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QThread>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSaveFile>
#include <QUrl>

#include <algorithm>
#include <chrono>
#include <optional>

#include <unistd.h>

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
    SpawnOptions worker;
    worker.argv = {program, "--listen", "127.0.0.1:0", "--state-dir", dir};
    for (const QString& arg : extra_args)
        worker.argv.push_back(arg.toStdString());
    worker.new_session = true; // closing or killing the console must not stop the worker or its jobs
    worker.stdin_path = "/dev/null";
    worker.output_path = log;
    int rc = 0;
    const pid_t pid = spawn_process(worker, rc);
    if (pid < 0 && error)
        *error = QStringLiteral("cannot start %1: %2").arg(binary, QString::fromLocal8Bit(strerror(rc)));
    return pid >= 0;
}

// Whether the process listening on 127.0.0.1:port is the worker of state_dir. Only the kernel's socket table is
// trusted here: whatever holds the port could answer anything, so it is not asked.
enum class Listener {
    Ours,    // this folder's worker, run by this user
    Nobody,  // nothing listens: the worker is simply gone
    Foreign, // another program (or another user's) holds the port
    Unknown, // cannot be told (no /proc/net, a holder we may not look into): nothing is sent, nothing started
};

Listener check_listener(int port, const QString& state_dir, QString* why) {
    bool readable = false;
    const std::vector<client::PortListener> listeners = client::port_listeners(port, &readable);
    if (!readable) {
        *why = QStringLiteral("this system does not show which process listens on a port (/proc/net/tcp is not readable)");
        return Listener::Unknown;
    }
    if (listeners.empty()) {
        *why = QStringLiteral("nothing listens on 127.0.0.1:%1").arg(port);
        return Listener::Nobody;
    }
    const QString folder = QFileInfo(state_dir).canonicalFilePath();
    const QString pid_file = read_first_line(state_dir + "/pid"); // when the worker writes one, it must match
    for (const client::PortListener& listener : listeners) {
        if (listener.uid != ::geteuid()) {
            *why = QStringLiteral("port %1 is held by a process of another user (uid %2)").arg(port).arg(listener.uid);
            return Listener::Foreign;
        }
        if (listener.holders.empty()) {
            *why = QStringLiteral("cannot tell which process holds port %1").arg(port);
            return Listener::Unknown;
        }
        bool ours = false;
        for (const client::PortHolder& holder : listener.holders) {
            if (!pid_file.isEmpty() && pid_file != QString::number(holder.pid))
                continue;
            for (size_t i = 0; i + 1 < holder.argv.size(); ++i)
                if (holder.argv[i] == "--state-dir") {
                    const QString named = QDir(QString::fromStdString(holder.cwd)).absoluteFilePath(QString::fromStdString(holder.argv[i + 1]));
                    ours = ours || (!folder.isEmpty() && QFileInfo(named).canonicalFilePath() == folder);
                }
        }
        if (!ours) {
            const client::PortHolder& holder = listener.holders.front();
            const QString program = holder.argv.empty() ? QStringLiteral("?") : QFileInfo(QString::fromStdString(holder.argv[0])).fileName();
            *why = QStringLiteral("port %1 is held by process %2 (%3), not by the worker of %4").arg(port).arg(holder.pid).arg(program, state_dir);
            return Listener::Foreign;
        }
    }
    return Listener::Ours;
}

// A name from a worker as the user may read it in a message: control characters shown as “?”, at most 120 characters.
QString printable(const std::string& name) {
    QString text = QString::fromUtf8(name.data(), static_cast<qsizetype>(std::min<size_t>(name.size(), 480))).left(120);
    for (QChar& c : text)
        if (c.category() == QChar::Other_Control)
            c = QLatin1Char('?');
    return text;
}

// A reply's JSON, repaired when it does not parse as it came (invalid UTF-8, 1e999: jsonrepair.h); null when it
// cannot be read even so, with *why saying what was wrong.
nlohmann::json parse_reply(const std::string& body, std::string* why) {
    nlohmann::json parsed = nlohmann::json::parse(body, nullptr, false);
    if (!parsed.is_discarded())
        return parsed;
    client::JsonRepairs repairs;
    const std::string repaired = client::repair_json(body, repairs);
    parsed = nlohmann::json::parse(repaired, nullptr, false);
    if (!parsed.is_discarded())
        return parsed;
    try {
        parsed = nlohmann::json::parse(repaired); // only for the parser's words on what is wrong
    } catch (const std::exception& e) {
        *why = e.what();
    }
    return nullptr;
}

// One job's part of an events reply ({"events":[...],"next":N,"state":"..."}): what came, whether the job has
// ended with nothing more to send, and the seq to ask after next time (past the last that came when "next" is absent).
struct JobNews {
    const nlohmann::json* events = nullptr;
    bool finished = false;
    qint64 next = 0;
};

JobNews read_news(const nlohmann::json& part, qint64 seen) {
    static const nlohmann::json no_events = nlohmann::json::array();
    JobNews news;
    news.events = part.is_object() && part.contains("events") && part["events"].is_array() ? &part["events"] : &no_events;
    const std::string state = part.is_object() && part.contains("state") && part["state"].is_string() ? part["state"].get<std::string>() : "";
    news.finished = news.events->empty() && is_finished(state);
    news.next = seen;
    if (part.is_object() && part.contains("next") && part["next"].is_number_integer())
        news.next = part["next"].get<qint64>();
    else
        for (const auto& event : *news.events)
            if (event.is_object() && event.contains("seq") && event["seq"].is_number_integer())
                news.next = std::max(news.next, event["seq"].get<qint64>());
    news.next = std::max(news.next, seen);
    return news;
}

} // namespace

void WorkerBackend::deliver(const QString& remoteId, const nlohmann::json& events, bool finished) {
    // The array goes on as it is; the catalog's writer ingests it.
    if (!events.empty() || finished)
        emit eventsArrived(remoteId, QByteArray::fromStdString(events.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)),
                           finished);
}

void WorkerBackend::Watching::failed(WorkerBackend& backend, const client::HttpResponse& response, const std::string& problem) {
    backend.lost_connection(response);
    // Backoff up to 10 s; the next successful call asks after the last seq each job had, so nothing is lost.
    if (connected)
        emit backend.connectionChanged(false, QString::fromStdString(problem));
    connected = false;
    pause(std::min(10000, 250 << std::min(failures++, 6)));
}

void WorkerBackend::Watching::answered(WorkerBackend& backend) {
    if (!connected)
        emit backend.connectionChanged(true, backend.describe());
    connected = true;
    failures = 0;
}

void WorkerBackend::Watching::pause(int ms) const {
    for (int waited = 0; waited < ms && !closing->load(); waited += 50)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

bool WorkerBackend::start_or_attach(const QVariantMap& settings, const QString& default_state_dir, const QStringList& extra_args,
                                    const QString& what, QString* error) {
    QString state_dir = settings.value("state_dir").toString();
    if (state_dir.isEmpty())
        state_dir = default_state_dir;
    QString binary = settings.value("worker_binary").toString();
    if (binary.isEmpty())
        binary = QCoreApplication::applicationDirPath() + "/traindeck-worker";
    {
        std::lock_guard lock(mutex_);
        local_ = std::make_unique<LocalWorker>(LocalWorker{state_dir, binary, what, extra_args, false});
    }

    QString notice, refusal;
    bool unknown = false;
    auto attach = [&]() -> bool {
        const QString port = read_first_line(state_dir + "/port");
        const QString token = read_first_line(state_dir + "/token");
        if (port.isEmpty() || token.isEmpty())
            return false;
        QString why;
        const Listener listener = check_listener(port.toInt(), state_dir, &why);
        if (listener != Listener::Ours) {
            if (listener == Listener::Foreign && notice.isEmpty())
                notice = tr("The token of the %1 was not sent to 127.0.0.1:%2: %3. The worker that wrote %4/port is gone; "
                            "a new one was started.").arg(what, port, why, state_dir);
            unknown = listener == Listener::Unknown;
            refusal = listener == Listener::Nobody ? QString() : why;
            return false;
        }
        refusal.clear();
        const std::string url = "http://127.0.0.1:" + port.toStdString();
        set_endpoint(url, token.toStdString(), {}, {}, QStringLiteral("%1 on 127.0.0.1:%2").arg(what, port));
        return call("GET", "/v1/health").ok();
    };
    if (attach())
        return true;
    if (unknown) {
        // Maybe the worker runs and this system hides who holds its port: starting a second worker on the same folder
        // would be worse than asking the user.
        if (error)
            *error = tr("the token of the %1 was not sent: %2; stop the process on that port, or remove %3/port if no worker "
                        "runs there").arg(what, refusal, state_dir);
        return false;
    }
    // A stale port file from a worker that is gone (or a port that another program holds now): start a new one
    // and wait for its port file.
    QFile::remove(state_dir + "/port");
    if (!start_worker(binary, state_dir, extra_args, error))
        return false;
    {
        std::lock_guard lock(mutex_);
        local_->started_here = true;
    }
    for (int i = 0; i < 200; ++i) {
        if (attach()) {
            std::lock_guard lock(mutex_);
            attach_notice_ = notice;
            return true;
        }
        if (unknown)
            break;
        QThread::msleep(50);
    }
    if (error)
        *error = refusal.isEmpty() ? tr("the %1 did not come up within 10 s; see %2/worker.log").arg(what, state_dir)
                                   : tr("the %1 was started but its token was not sent: %2; see %3/worker.log").arg(what, refusal, state_dir);
    return false;
}

void WorkerBackend::lost_connection(const client::HttpResponse& response) {
    if (response.status != 0 || closing_->load())
        return;
    std::unique_lock look(reattach_mutex_, std::try_to_lock);
    const auto now = std::chrono::steady_clock::now();
    if (!look.owns_lock() || now - last_look_ < std::chrono::seconds(1) || closing_->load())
        return; // another thread is looking, or looked a moment ago, or the backend is going (quiesce)
    last_look_ = now;
    LocalWorker local;
    std::string url;
    bool remote = false;
    {
        std::lock_guard lock(mutex_);
        remote = !local_;
        if (!remote) {
            local = *local_;
            url = url_;
        }
    }
    if (remote) {
        unreachable(); // its address is asked again by the next request; a subclass may know another way
        return;
    }
    const QString port = read_first_line(local.state_dir + "/port");
    const QString token = read_first_line(local.state_dir + "/token");
    if (!port.isEmpty() && !token.isEmpty()) {
        QString why;
        const Listener listener = check_listener(port.toInt(), local.state_dir, &why);
        if (listener == Listener::Ours) {
            const std::string found = "http://127.0.0.1:" + port.toStdString();
            if (found != url) {
                // It came back on another port (a restart with --listen 127.0.0.1:0): the same folder, the same token.
                set_endpoint(found, token.toStdString(), {}, {}, QStringLiteral("%1 on 127.0.0.1:%2").arg(local.what, port));
                emit connectionChanged(true, describe());
            }
            return; // ours and alive: slow, or back where it was
        }
        if (listener == Listener::Unknown)
            return; // the token goes nowhere we cannot tell; start_or_attach said so when it opened
    }
    // Nothing of this folder listens. A worker someone else runs (systemd, a test, the user) is theirs to start; one
    // this backend started it starts again (at most every 10 s: a worker that cannot start says why in its log). Its
    // lock on the state folder makes two starts at once harmless: the second exits.
    if (!local.started_here || now - last_start_ < std::chrono::seconds(10))
        return;
    last_start_ = now;
    QString error;
    if (!start_worker(local.binary, local.state_dir, local.extra_args, &error))
        emit connectionChanged(false, error);
}

void WorkerBackend::shutdown() {
    closing_->store(true);
    watch_wake_->store(true);
    {
        std::lock_guard lock(streams_mutex_);
        watch_added_.notify_all();
    }
    cancelUploads();
}

void WorkerBackend::quiesce() {
    shutdown();
    std::lock_guard wait(reattach_mutex_); // a lost_connection() that took it before closing_ was set ends first
}

WorkerBackend::~WorkerBackend() {
    // Everything under way ends within 50 ms (the connections' abort flag); nothing waits for the worker.
    shutdown();
    {
        std::lock_guard lock(streams_mutex_);
        for (auto& [id, stream] : streams_)
            if (stream.thread.joinable())
                stream.thread.join();
    }
    if (watcher_.joinable())
        watcher_.join();
    std::unique_lock lock(mutex_);
    drained_.wait(lock, [&] { return in_flight_ == 0; });
}

void WorkerBackend::set_endpoint(const std::string& url, const std::string& token, const std::string& pinned_key,
                                 const std::string& ca_file, const QString& description,
                                 const std::string& unix_socket) {
    std::lock_guard lock(mutex_);
    url_ = url;
    token_ = token;
    pinned_ = pinned_key;
    ca_file_ = ca_file;
    description_ = description;
    template_ = std::make_unique<client::WorkerClient>(url_, token_);
    template_->set_tls(pinned_, ca_file_);
    template_->set_unix_socket(unix_socket);
    template_->set_abort(closing_);
    ++endpoint_;
    idle_.clear();
}

void WorkerBackend::set_attach_notice(const QString& notice) {
    std::lock_guard lock(mutex_);
    attach_notice_ = notice;
}

void WorkerBackend::set_key(const QString& pin, bool needs_trust) {
    std::lock_guard lock(mutex_);
    pinned_key_ = pin;
    key_needs_trust_ = needs_trust;
}

QString WorkerBackend::pinnedKey() const {
    std::lock_guard lock(mutex_);
    return pinned_key_;
}

bool WorkerBackend::keyNeedsTrust() const {
    std::lock_guard lock(mutex_);
    return key_needs_trust_;
}

QString WorkerBackend::attachNotice() const {
    std::lock_guard lock(mutex_);
    return attach_notice_;
}

QString WorkerBackend::describe() const {
    std::lock_guard lock(mutex_);
    return description_;
}

WorkerBackend::Pooled WorkerBackend::take_client() {
    std::lock_guard lock(mutex_);
    if (!template_ || closing_->load())
        return {};
    ++in_flight_;
    if (!idle_.empty()) {
        Pooled pooled = std::move(idle_.back());
        idle_.pop_back();
        return pooled;
    }
    return {endpoint_, template_->fork()};
}

void WorkerBackend::return_client(Pooled pooled) {
    {
        std::lock_guard lock(mutex_);
        --in_flight_;
        // A few idle connections are kept alive for the next calls; more only when many calls overlap.
        if (pooled.endpoint == endpoint_ && idle_.size() < 4)
            idle_.push_back(std::move(pooled));
    }
    drained_.notify_all();
}

client::HttpResponse WorkerBackend::call(const std::string& method, const std::string& path, const std::string& body,
                                         long timeout_ms) {
    Pooled pooled = take_client();
    if (!pooled.client)
        return {0, {}, closing_->load() ? "the console is closing" : "not connected"};
    client::HttpResponse response = method == "GET"      ? pooled.client->get(path, timeout_ms)
                                    : method == "DELETE" ? pooled.client->del(path, timeout_ms)
                                    : method == "PUT" ? pooled.client->put(path, body, "application/json", timeout_ms)
                                                      : pooled.client->post(path, body, timeout_ms);
    return_client(std::move(pooled));
    lost_connection(response);
    return response;
}

QString WorkerBackend::submit(const QJsonObject& request, QString* error) {
    // A minute, not the usual 10 s: a busy worker may take its time, and giving up on a submission it then accepts
    // leaves a job the user does not know of (and submits again).
    const auto response = call("POST", "/v1/jobs", QJsonDocument(request).toJson(QJsonDocument::Compact).toStdString(), 60000);
    if (response.status != 201) {
        if (error)
            *error = QString::fromStdString(response.message());
        return {};
    }
    const auto reply = QJsonDocument::fromJson(QByteArray::fromStdString(response.body)).object();
    const qint64 id = reply.value("id").toInteger();
    if (id <= 0) {
        // The id goes into every later path of this job: only a number is taken.
        if (error)
            *error = tr("the worker accepted the job but gave no numeric id (%1); look for it on the worker before "
                        "submitting again").arg(QString::fromStdString(response.body.substr(0, 200)));
        return {};
    }
    {
        // A new job under an id an ended one had (a worker whose state folder was replaced): streamed from its start.
        std::lock_guard lock(streams_mutex_);
        ended_.erase(QString::number(id));
    }
    return QString::number(id);
}

bool WorkerBackend::cancel(const QString& remoteId, QString* error) {
    const auto response = call("POST", "/v1/jobs/" + remoteId.toStdString() + "/cancel", "{}");
    if (!response.ok() && error)
        *error = QString::fromStdString(response.message());
    return response.ok();
}

bool WorkerBackend::removeJob(const QString& remoteId, qint64* freedBytes, QString* error) {
    // The id goes into a path: only the worker's own kind of id (digits) is sent, never a path of the catalog's.
    const std::string id = remoteId.toStdString();
    if (id.empty() || id.size() > 18 ||
        !std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        if (error)
            *error = QStringLiteral("“%1” is not a worker job id").arg(remoteId);
        return false;
    }
    const auto response = call("DELETE", "/v1/jobs/" + id);
    if (!response.ok()) {
        if (error)
            *error = QString::fromStdString(response.message());
        return false;
    }
    const nlohmann::json reply = response.json();
    if (freedBytes)
        *freedBytes = reply.is_object() && reply.value("bytes", nlohmann::json()).is_number_unsigned()
                          ? static_cast<qint64>(std::min<uint64_t>(reply["bytes"].get<uint64_t>(), INT64_MAX))
                          : 0;
    return true;
}

namespace {

// Ids go into paths: only digits, as the worker makes them.
bool is_worker_id(const QString& id) {
    return !id.isEmpty() && id.size() <= 18 &&
           std::all_of(id.begin(), id.end(), [](QChar c) { return c.isDigit() && c.unicode() < 128; });
}

QJsonObject object_of(const client::HttpResponse& response) {
    return QJsonDocument::fromJson(QByteArray::fromStdString(response.body)).object();
}

} // namespace

QString WorkerBackend::createSweep(const QJsonObject& spec, QString* error) {
    const auto response =
        call("POST", "/v1/sweeps", QJsonDocument(spec).toJson(QJsonDocument::Compact).toStdString(), 60000);
    const QJsonObject reply = object_of(response);
    if (!response.ok() || !reply.value("id").isDouble()) {
        if (error)
            *error = response.ok() ? QStringLiteral("the worker's answer names no sweep")
                                   : QString::fromStdString(response.message());
        return {};
    }
    return QString::number(static_cast<qint64>(reply.value("id").toDouble()));
}

QJsonObject WorkerBackend::sweeps(QString* error) {
    const auto response = call("GET", "/v1/sweeps");
    if (!response.ok() && error)
        *error = QString::fromStdString(response.message());
    return response.ok() ? object_of(response) : QJsonObject();
}

QJsonObject WorkerBackend::sweep(const QString& id, QString* error) {
    if (!is_worker_id(id)) {
        if (error)
            *error = QStringLiteral("“%1” is not a sweep id").arg(id);
        return {};
    }
    const auto response = call("GET", "/v1/sweeps/" + id.toStdString());
    if (!response.ok() && error)
        *error = QString::fromStdString(response.message());
    return response.ok() ? object_of(response) : QJsonObject();
}

bool WorkerBackend::sweepAction(const QString& id, const QString& action, const QJsonObject& body, QString* error) {
    if (!is_worker_id(id) || (action != "stop" && action != "resume" && action != "extend")) {
        if (error)
            *error = QStringLiteral("no such sweep action: %1 on “%2”").arg(action, id);
        return false;
    }
    const auto response = call("POST", "/v1/sweeps/" + id.toStdString() + "/" + action.toStdString(),
                               QJsonDocument(body).toJson(QJsonDocument::Compact).toStdString());
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

bool WorkerBackend::watching() {
    std::lock_guard lock(streams_mutex_);
    return !watched_.empty();
}

int WorkerBackend::unfinishedJobs(QString* error) {
    const auto response = call("GET", "/v1/jobs");
    const QJsonDocument answer = QJsonDocument::fromJson(QByteArray::fromStdString(response.body));
    if (!response.ok() || !answer.object().value("jobs").isArray()) {
        if (error)
            *error =
                response.ok() ? tr("the worker's job list does not parse") : QString::fromStdString(response.message());
        return -1;
    }
    int unfinished = 0;
    const QJsonArray jobs = answer.object().value("jobs").toArray();
    for (const auto& job : jobs)
        unfinished += is_finished(job.toObject().value("state").toString().toStdString()) ? 0 : 1;
    return unfinished;
}

bool WorkerBackend::resume(const QString& remoteId, double newBudget, QString* error) {
    const std::string body = newBudget > 0 ? "{\"budget\":" + std::to_string(newBudget) + "}" : "{}";
    const auto response = call("POST", "/v1/jobs/" + remoteId.toStdString() + "/resume", body);
    if (response.ok()) {
        std::lock_guard lock(streams_mutex_);
        ended_.erase(remoteId);
    }
    if (!response.ok() && error)
        *error = QString::fromStdString(response.message());
    return response.ok();
}

bool WorkerBackend::setPolicy(const QJsonObject& policy, QString* error) {
    const auto response = call("PUT", "/v1/policy", QJsonDocument(policy).toJson(QJsonDocument::Compact).toStdString());
    if (!response.ok() && error)
        *error = QString::fromStdString(response.message());
    return response.ok();
}

void WorkerBackend::cancelUploads() {
    std::lock_guard lock(mutex_);
    for (const auto& flag : uploads_)
        flag->store(true);
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
    auto cancelled = std::make_shared<std::atomic<bool>>(false);
    Pooled pooled = take_client();
    if (!pooled.client) {
        if (error)
            *error = closing_->load() ? tr("the console is closing") : tr("not connected");
        return false;
    }
    {
        std::lock_guard lock(mutex_);
        uploads_.push_back(cancelled);
    }
    // Its own connections, aborted by cancelUploads() (and by the destructor, which cancels too).
    std::unique_ptr<client::WorkerClient> connection = pooled.client->fork();
    connection->set_abort(cancelled);
    client::UploadOptions options;
    options.cancel = cancelled.get();
    options.progress = [&](const client::UploadProgress& p) {
        if (progress)
            progress(p.bytes_sent, p.bytes_to_send, p.seconds);
    };
    client::UploadProgress result;
    const bool ok = client::upload_dataset(*connection, manifest, root.toStdString(), result, message, options);
    {
        std::lock_guard lock(mutex_);
        std::erase(uploads_, cancelled);
    }
    return_client(std::move(pooled));
    if (!ok) {
        if (error)
            *error = cancelled->load() ? tr("the upload was cancelled; upload again to continue where it stopped (the chunks "
                                            "already sent stay on the worker)")
                                       : QString::fromStdString(message);
        return false;
    }
    if (progress)
        progress(result.bytes_sent, result.bytes_to_send, result.seconds);
    return true;
}

QByteArray WorkerBackend::codeManifest(const QString& version, QString* error) {
    Pooled pooled = take_client();
    if (!pooled.client) {
        if (error)
            *error = closing_->load() ? tr("the console is closing") : tr("not connected");
        return {};
    }
    dataset::Manifest manifest;
    std::string message;
    const bool ok = client::fetch_code_manifest(*pooled.client, version.toStdString(), manifest, message);
    return_client(std::move(pooled));
    if (!ok && error)
        *error = QString::fromStdString(message);
    return ok ? QByteArray::fromStdString(manifest.to_json().dump()) : QByteArray();
}

QByteArray WorkerBackend::codeChunk(const QString& hash, QString* error) {
    Pooled pooled = take_client();
    if (!pooled.client) {
        if (error)
            *error = closing_->load() ? tr("the console is closing") : tr("not connected");
        return {};
    }
    std::string bytes, message;
    const bool ok = client::fetch_chunk(*pooled.client, hash.toStdString(), bytes, message);
    return_client(std::move(pooled));
    if (!ok && error)
        *error = QString::fromStdString(message);
    return ok ? QByteArray::fromStdString(bytes) : QByteArray();
}

bool WorkerBackend::storeCode(const QByteArray& manifest_json,
                              const std::function<QByteArray(const QString& hash, QString* error)>& chunk,
                              QString* error) {
    dataset::Manifest manifest;
    std::string message;
    const nlohmann::json parsed = nlohmann::json::parse(manifest_json.toStdString(), nullptr, false);
    if (parsed.is_discarded() || !dataset::Manifest::from_json(parsed, manifest, message)) {
        if (error)
            *error = tr("the snapshot's manifest is damaged: %1").arg(QString::fromStdString(message));
        return false;
    }
    Pooled pooled = take_client();
    if (!pooled.client) {
        if (error)
            *error = closing_->load() ? tr("the console is closing") : tr("not connected");
        return false;
    }
    client::CodeTransfer result;
    const bool ok = client::store_code_snapshot(
        *pooled.client, manifest,
        [&chunk](const std::string& hash, std::string& bytes, std::string& why) {
            QString problem;
            const QByteArray got = chunk(QString::fromStdString(hash), &problem);
            if (!problem.isEmpty()) {
                why = problem.toStdString();
                return false;
            }
            bytes = got.toStdString();
            return true;
        },
        result, message);
    return_client(std::move(pooled));
    if (!ok && error)
        *error = QString::fromStdString(message);
    return ok;
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
    std::string why;
    const nlohmann::json reply = parse_reply(listed.body, &why);
    const nlohmann::json* list = reply.is_object() && reply.contains("checkpoints") && reply["checkpoints"].is_array()
                                     ? &reply["checkpoints"] : nullptr;
    if (!list)
        return fail(tr("the worker's list of checkpoints of job %1 is not {\"checkpoints\": [...]}; is it a traindeck-worker?")
                        .arg(remoteId));
    if (list->empty())
        return fail(tr("job %1 has written no checkpoint yet").arg(remoteId));
    const nlohmann::json& newest = list->back();
    const std::string name = newest.is_object() && newest.contains("name") && newest["name"].is_string()
                                 ? newest["name"].get<std::string>() : std::string();
    // The name becomes a file in dir: the worker must not choose any other place (“../../x”, “/etc/x”).
    if (const std::string problem = client::unsafe_remote_name(name); !problem.empty())
        return fail(tr("the worker named job %1's checkpoint “%2”, which %3; nothing was written. Is %4 the worker you "
                       "meant to trust?").arg(remoteId, printable(name),
                                              QString::fromStdString(problem), describe()));
    const QByteArray encoded = QUrl::toPercentEncoding(QString::fromStdString(name));
    const auto bytes = call("GET", "/v1/jobs/" + remoteId.toStdString() + "/checkpoints/" + encoded.toStdString(), {}, 600000);
    if (!bytes.ok())
        return fail(QString::fromStdString(bytes.message()));
    if (!QDir().mkpath(dir))
        return fail(tr("cannot create %1; check its permissions and free space").arg(dir));
    QString path = QDir(dir).filePath(QString::fromStdString(name));
    QSaveFile file(path); // temp file + rename: a reader never sees half a checkpoint
    if (!file.open(QIODevice::WriteOnly) || file.write(bytes.body.data(), static_cast<qint64>(bytes.body.size())) !=
                                                    static_cast<qint64>(bytes.body.size()) || !file.commit())
        return fail(tr("cannot write %1: %2").arg(path, file.errorString()));
    return path;
}

void WorkerBackend::watch(const QString& remoteId, qint64 afterSeq) {
    // Only the streams' own lock: the GUI thread calls this, and it must not wait on a request under way.
    std::lock_guard lock(streams_mutex_);
    if (closing_->load())
        return;
    if (const auto ended = ended_.find(remoteId); ended != ended_.end()) {
        if (afterSeq < ended->second)
            return;          // its events are on their way to the catalog
        ended_.erase(ended); // resumed (by another program too): stream it again
    }
    if (per_job_)
        return start_stream(remoteId, afterSeq);
    if (watched_.contains(remoteId))
        return; // already watched
    watched_[remoteId] = afterSeq;
    // The request under way does not know this job: end it, the next one asks for it too.
    watch_wake_->store(true);
    watch_added_.notify_all();
    if (!watcher_.joinable())
        watcher_ = std::thread([this] { watch_all(); });
}

void WorkerBackend::start_stream(const QString& remoteId, qint64 afterSeq) {
    auto it = streams_.find(remoteId);
    if (it != streams_.end()) {
        if (!it->second.done->load())
            return; // already streaming
        it->second.thread.join(); // its job had ended (the thread has returned); it was resumed, so stream again
        streams_.erase(it);
    }
    auto done = std::make_shared<std::atomic<bool>>(false);
    streams_[remoteId] = {std::thread([this, remoteId, afterSeq, done] {
                              stream(remoteId, afterSeq);
                              done->store(true);
                          }),
                          done};
}

void WorkerBackend::watch_all() {
    std::unique_ptr<client::WorkerClient> client;
    uint64_t client_endpoint = 0;
    Watching watching{closing_};
    bool told_missing = false;
    bool shared_budget = true; // false for a worker from before "total", which refuses the field
    while (!closing_->load()) {
        nlohmann::json after = nlohmann::json::object();
        size_t jobs = 0;
        {
            std::unique_lock lock(streams_mutex_);
            watch_added_.wait(lock, [&] { return closing_->load() || !watched_.empty(); });
            if (closing_->load())
                return;
            watch_wake_->store(false); // from here on a new job ends the request below
            for (const auto& [id, seq] : watched_)
                after[id.toStdString()] = seq;
            jobs = watched_.size();
        }
        {
            std::lock_guard lock(mutex_);
            if (!template_)
                return;
            if (!client || client_endpoint != endpoint_) { // first time, or the worker was found elsewhere
                client = template_->fork();
                client->set_abort(watch_wake_);
                client_endpoint = endpoint_;
                shared_budget = true; // a worker found again may be a newer one
            }
        }
        // At most about 20,000 events in one reply, shared by the worker among the jobs that have news; the rest come
        // next time. Measured with tests/bench/worker_events (1,000 jobs watched, 50 streaming 300,000 lines/s in
        // all): replies of 20,000 kept up with p50 0.8-1.5 s; of 10,000 they fell behind (30 a second is about all
        // one request at a time makes), and of 50,000-200,000 each took so long to build and read that p50 was 2-6 s.
        // An older worker takes a per-job limit only, sized for every watched job having news.
        nlohmann::json request{{"after", after}, {"wait_ms", 5000}};
        if (shared_budget) {
            request["total"] = 20000;
            request["limit"] = 20000;
        } else
            request["limit"] = std::clamp<int64_t>(200000 / static_cast<int64_t>(jobs), 200, 20000);
        const auto started = std::chrono::steady_clock::now();
        const auto response = client->post("/v1/events/watch", request, 20000);
        if (closing_->load())
            return;
        if (shared_budget && response.status == 400 &&
            response.message().find("unknown field \"total\"") != std::string::npos) {
            shared_budget = false;
            continue;
        }
        if (watch_wake_->load() && !response.ok())
            continue; // a job was added: ask again with it
        if (response.status == 404) {
            // A worker from before /v1/events/watch: one long poll per job, as it was then.
            std::lock_guard lock(streams_mutex_);
            per_job_ = true;
            for (const auto& [id, seq] : watched_)
                start_stream(id, seq);
            watched_.clear();
            return;
        }
        std::string problem = response.ok() ? std::string() : response.message();
        // The plain reply read fast (each job's events handed on as the worker wrote them); any other, or one that
        // needs repair, read with nlohmann as before.
        std::optional<std::vector<client::WatchedJob>> parts;
        if (problem.empty())
            parts = client::read_watch_reply(response.body);
        if (problem.empty() && !parts) {
            std::string why;
            const nlohmann::json reply = parse_reply(response.body, &why);
            if (!reply.is_object() || !reply.contains("jobs") || !reply["jobs"].is_object())
                problem = "the worker's answer to a watch of " + std::to_string(jobs) + " jobs is not {\"jobs\": {...}} (" +
                          (why.empty() ? "not readable" : why) + "); retrying";
            else {
                parts = client::watched_jobs_of(reply["jobs"]);
                if (reply.contains("missing") && reply["missing"].is_array() && !reply["missing"].empty() &&
                    !told_missing) {
                    // Jobs the worker does not know (its state folder was replaced?): kept, in case it is the wrong
                    // worker for now.
                    told_missing = true;
                    qWarning("%s does not know job(s) %s; still watching them", qPrintable(describe()),
                             reply["missing"].dump().c_str());
                }
            }
        }
        if (!problem.empty()) {
            watching.failed(*this, response, problem);
            continue;
        }
        watching.answered(*this);
        bool news = false;
        for (client::WatchedJob& part : *parts) {
            const QString id = QString::fromStdString(part.id);
            qint64 seq = 0;
            {
                std::lock_guard lock(streams_mutex_);
                const auto it = watched_.find(id);
                if (it == watched_.end())
                    continue; // not a job we asked about
                seq = it->second;
            }
            const qint64 next = std::max<qint64>(seq, part.next.value_or(seq));
            const bool finished = part.count == 0 && is_finished(part.state);
            // The array goes on as it came; the catalog's writer reads it.
            if (part.count > 0 || finished)
                emit eventsArrived(id, QByteArray::fromStdString(part.events), finished);
            news = news || part.count > 0;
            std::lock_guard lock(streams_mutex_);
            if (finished) {
                watched_.erase(id); // watch() again after a resume
                ended_[id] = next;
            } else if (const auto it = watched_.find(id); it != watched_.end())
                it->second = std::max(it->second, next);
        }
        // A worker long-polls (wait_ms); one that answers "nothing yet" at once must not be asked in a tight loop.
        if (!news && std::chrono::steady_clock::now() - started < std::chrono::milliseconds(200))
            watching.pause(200);
    }
}

void WorkerBackend::stream(const QString& remoteId, qint64 after) {
    std::unique_ptr<client::WorkerClient> client;
    uint64_t client_endpoint = 0;
    Watching watching{closing_};
    while (!closing_->load()) {
        {
            std::lock_guard lock(mutex_);
            if (!template_)
                return;
            if (!client || client_endpoint != endpoint_) { // first time, or the worker was found elsewhere
                client = template_->fork();
                client_endpoint = endpoint_;
            }
        }
        const auto started = std::chrono::steady_clock::now();
        const auto response = client->get("/v1/jobs/" + remoteId.toStdString() + "/events?limit=20000&wait_ms=1000&after=" +
                                              std::to_string(after),
                                          15000);
        std::string problem = response.ok() ? std::string() : response.message();
        nlohmann::json reply;
        if (problem.empty()) {
            std::string why;
            reply = parse_reply(response.body, &why);
            if (!reply.is_object() || (reply.contains("events") && !reply["events"].is_array()))
                problem = "the worker's events of job " + remoteId.toStdString() + " after " + std::to_string(after) +
                          " are not readable JSON (" + (why.empty() ? "not an object" : why) + "); retrying";
        }
        if (!problem.empty()) {
            if (closing_->load())
                return;
            watching.failed(*this, response, problem);
            continue;
        }
        watching.answered(*this);
        const JobNews news = read_news(reply, after);
        deliver(remoteId, *news.events, news.finished);
        after = news.next;
        if (news.finished) {
            std::lock_guard lock(streams_mutex_);
            ended_[remoteId] = after;
            return;
        }
        // A worker long-polls (wait_ms); one that answers "nothing yet" at once must not be asked in a tight loop.
        if (news.events->empty() && std::chrono::steady_clock::now() - started < std::chrono::milliseconds(200))
            watching.pause(200);
    }
}

} // namespace traindeck
