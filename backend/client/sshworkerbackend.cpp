// SshWorkerBackend (sshworkerbackend.h): probe, install when consented, start, forward, then the worker protocol.
#include "sshworkerbackend.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QUrl>
#include <QUrlQuery>

#include <atomic>
#include <chrono>

#include <sys/utsname.h>
#include <unistd.h>

namespace traindeck {

namespace {

// A socket name of its own for each backend of this process (two consoles, or a console and a test, may reach the
// same host): the folder is private, the name only has to be unique and short (sun_path holds 108 bytes).
std::string socket_name() {
    static std::atomic<int> next{0};
    return std::to_string(::getpid()) + "-" + std::to_string(next.fetch_add(1)) + ".sock";
}

} // namespace

SshWorkerBackend::~SshWorkerBackend() {
    // No unreachable() runs after quiesce(); a start_worker() under way in the checker ends now, not after its 60 s.
    quiesce();
    aborting_.store(true);
    {
        std::lock_guard lock(ssh_mutex_);
        stopping_ = true;
    }
    check_wake_.notify_all();
    if (checker_.joinable())
        checker_.join();
    drop_forward(); // the worker keeps running there
}

void SshWorkerBackend::shutdown() {
    aborting_.store(true);
    WorkerBackend::shutdown();
}

void SshWorkerBackend::drop_forward() {
    std::unique_ptr<client::SshForward> forward;
    {
        std::lock_guard lock(ssh_mutex_);
        forward = std::move(forward_);
    }
    forward.reset(); // ends ssh outside the lock: its thread may be saying so (connectionChanged)
}

bool SshWorkerBackend::open(const QVariantMap& settings, QString* error) {
    auto fail = [&](const QString& why) {
        if (error)
            *error = why;
        return false;
    };
    client::SshTarget target;
    std::string worker_path = settings.value("worker_path").toString().toStdString();
    std::string state_dir = settings.value("state_dir").toString().toStdString();
    target.config_file = settings.value("ssh_config").toString().toStdString();
    for (const QString& option : settings.value("ssh_options").toStringList())
        target.options.push_back(option.toStdString());
    const QString url = settings.value("url").toString();
    if (!url.isEmpty()) {
        // ssh://[user@]host[:port]?config=...: the destination is the URL without its query, as ssh takes it.
        const QUrl parsed(url);
        if (!parsed.isValid() || parsed.scheme() != "ssh" || parsed.host().isEmpty())
            return fail(tr("an SSH host is ssh://[user@]host[:port], not “%1”").arg(url));
        const QUrlQuery query(parsed);
        target.destination = parsed.toString(QUrl::RemoveQuery | QUrl::FullyEncoded).toStdString();
        if (parsed.userName().isEmpty() && parsed.port() < 0)
            target.destination = parsed.host().toStdString(); // an ~/.ssh/config name, as the user typed it
        if (query.hasQueryItem("config"))
            target.config_file = query.queryItemValue("config", QUrl::FullyDecoded).toStdString();
        if (query.hasQueryItem("state_dir"))
            state_dir = query.queryItemValue("state_dir", QUrl::FullyDecoded).toStdString();
        if (query.hasQueryItem("worker"))
            worker_path = query.queryItemValue("worker", QUrl::FullyDecoded).toStdString();
    } else {
        target.destination = settings.value("host").toString().toStdString();
    }
    if (const std::string bad = target.check(); !bad.empty())
        return fail(QString::fromStdString(bad));
    const QString host = QString::fromStdString(target.destination);
    drop_forward(); // open() again: a new forward below
    {
        std::lock_guard lock(ssh_mutex_);
        target_ = target;
        needs_install_ = false;
        install_plan_.clear();
        learned_token_.clear();
    }
    set_attach_notice({});

    std::string why;
    client::HostFacts facts;
    if (!client::probe_host(target, worker_path, state_dir, &facts, &why, &aborting_))
        return fail(QString::fromStdString(why));
    {
        std::lock_guard lock(ssh_mutex_);
        facts_ = facts;
    }
    std::string worker = worker_path.empty() ? facts.worker : worker_path;
    const QString given_token = settings.value("token").toString();
    const bool adding = given_token.isEmpty(); // a new host (its token read below), not one restored from the catalog
    const bool other_version = client::needs_install(facts, TRAINDECK_VERSION);
    if (other_version && !facts.worker.empty() && (facts.running || !adding)) {
        set_attach_notice(tr("%1 runs %2, and this console is %3: it is used as it is (add the host again once its "
                             "jobs are done to install this version there)")
                              .arg(host, QString::fromStdString(facts.worker_version), TRAINDECK_VERSION));
    } else if (other_version) {
        // This build's binaries run only on a machine of its architecture (and its Debian's libraries, checked
        // after the copy by running them).
        utsname here{};
        ::uname(&here);
        if (!facts.arch.empty() && facts.arch != here.machine)
            return fail(tr("%1 is %2 and this build is %3: install TrainDeck's traindeck-worker package there")
                            .arg(host, QString::fromStdString(facts.arch), QString::fromLatin1(here.machine)));
        QString local_worker = settings.value("worker_binary").toString();
        if (local_worker.isEmpty())
            local_worker = QCoreApplication::applicationDirPath() + "/traindeck-worker";
        QString local_train = settings.value("train_binary").toString();
        if (local_train.isEmpty())
            local_train = QFileInfo(local_worker).absolutePath() + "/traindeck-train";
        const std::vector<std::string> files{local_worker.toStdString(), local_train.toStdString()};
        if (!settings.value("install").toBool()) {
            QStringList plan;
            for (const std::string& command : client::install_commands(target, files))
                plan << QString::fromStdString(command);
            {
                std::lock_guard lock(ssh_mutex_);
                needs_install_ = true;
                install_plan_ = plan;
            }
            return fail(facts.worker.empty()
                            ? tr("%1 has no traindeck-worker: this build's can be copied there (%2)")
                                  .arg(host, QString::fromStdString(facts.describe()))
                            : tr("%1 has %2, not traindeck-worker %3: this build's can be copied beside it")
                                  .arg(host, QString::fromStdString(facts.worker_version), TRAINDECK_VERSION));
        }
        if (!client::install_worker(target, files, &worker, &why, &aborting_))
            return fail(QString::fromStdString(why));
    }

    const bool want_token = adding;
    const double price = settings.value("price_per_hour").toDouble();
    {
        std::lock_guard lock(ssh_mutex_);
        price_per_hour_ = price;
    }
    const client::StartedWorker started =
        client::start_worker(target, worker, state_dir, want_token, &why, &aborting_, price);
    if (started.port == 0)
        return fail(QString::fromStdString(why));
    const QString token = want_token ? QString::fromStdString(started.token) : given_token;

    const std::string socket_dir = client::private_socket_dir(&why);
    if (socket_dir.empty())
        return fail(QString::fromStdString(why));
    auto forward = std::make_unique<client::SshForward>(
        target, socket_dir + "/" + socket_name(), started.port,
        [this](bool up, const std::string& message) { emit connectionChanged(up, QString::fromStdString(message)); });
    if (!forward->wait_up(40, &why, &aborting_))
        return fail(QString::fromStdString(why));
    const std::string socket = forward->socket_path();
    {
        std::lock_guard lock(ssh_mutex_);
        forward_ = std::move(forward);
        worker_path_ = worker;
        state_dir_ = started.state_dir;
        remote_port_ = started.port;
    }
    set_endpoint("http://localhost", token.toStdString(), {}, {}, tr("worker on %1 (ssh)").arg(host), socket);
    const auto health = call("GET", "/v1/health");
    if (!health.ok()) {
        drop_forward();
        return fail(health.status == 401
                        ? tr("the worker on %1 refused the token: its state folder %2 was made again? Add the host "
                             "again to read the new one")
                              .arg(host, QString::fromStdString(started.state_dir))
                        : QString::fromStdString(health.message()));
    }
    std::lock_guard lock(ssh_mutex_);
    if (want_token)
        learned_token_ = token;
    if (!checker_.joinable())
        checker_ = std::thread([this] { check_worker(); });
    return true;
}

QString SshWorkerBackend::learnedToken() const {
    std::lock_guard lock(ssh_mutex_);
    return learned_token_;
}

client::HostFacts SshWorkerBackend::facts() const {
    std::lock_guard lock(ssh_mutex_);
    return facts_;
}

QString SshWorkerBackend::hostFacts() const {
    std::lock_guard lock(ssh_mutex_);
    return QString::fromStdString(facts_.describe());
}

bool SshWorkerBackend::needsInstall() const {
    std::lock_guard lock(ssh_mutex_);
    return needs_install_;
}

QStringList SshWorkerBackend::installPlan() const {
    std::lock_guard lock(ssh_mutex_);
    return install_plan_;
}

pid_t SshWorkerBackend::forwardPid() const {
    std::lock_guard lock(ssh_mutex_);
    return forward_ ? forward_->pid() : 0;
}

void SshWorkerBackend::unreachable() {
    {
        std::lock_guard lock(ssh_mutex_);
        check_asked_ = true;
    }
    check_wake_.notify_all();
}

void SshWorkerBackend::check_worker() {
    using Clock = std::chrono::steady_clock;
    auto last = Clock::now() - std::chrono::hours(1);
    std::unique_lock lock(ssh_mutex_);
    while (true) {
        check_wake_.wait(lock, [this] { return stopping_ || check_asked_; });
        if (stopping_)
            return;
        // At most every 10 s: while the network is down every request fails, and each would ask.
        if (Clock::now() - last < std::chrono::seconds(10)) {
            check_wake_.wait_until(lock, last + std::chrono::seconds(10), [this] { return stopping_; });
            if (stopping_)
                return;
        }
        check_asked_ = false;
        last = Clock::now();
        const client::SshTarget target = target_;
        const std::string worker = worker_path_, state_dir = state_dir_;
        const double price = price_per_hour_;
        lock.unlock();
        // The forward may be down (ssh restarts it), or up towards a worker that stopped: start_worker starts it
        // again when nothing holds its state folder, and says where it listens now.
        std::string why;
        const client::StartedWorker started =
            client::start_worker(target, worker, state_dir, false, &why, &aborting_, price);
        lock.lock();
        if (started.port == 0 || !forward_)
            continue;
        if (started.port != remote_port_) {
            remote_port_ = started.port;
            forward_->set_remote_port(started.port);
        }
        if (started.started) {
            lock.unlock();
            emit connectionChanged(true, tr("the worker on %1 had stopped; it was started again")
                                             .arg(QString::fromStdString(target.destination)));
            lock.lock();
        }
    }
}

} // namespace traindeck
