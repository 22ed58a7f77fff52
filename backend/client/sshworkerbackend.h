#pragma once
// A traindeck-worker on a machine the user can ssh into (sshhost.h), as a backend: open() probes the host, installs
// this build's worker there when asked to (installPlan() says the exact commands first), starts it on the host's
// loopback unless it runs, reads its token over ssh when none is given (learnedToken(), for the keyring), and talks
// to it through an ssh forward to a private Unix socket. A worker of another version is installed over only when the
// host is added and none runs there; one that runs (or a host restored at start) is used as it is, and
// attachNotice() says the versions differ, so that an upgrade of the console never cuts it off from its jobs. The
// forward is kept up (a dropped network or a laptop that slept: ssh is started again, the event streams resume from
// their last seq); a worker that stopped on the host is started again there, and followed when it comes back on another
// port. The worker keeps running, with its jobs, while the console is away.
#include "sshhost.h"
#include "workerbackend.h"

#include <QStringList>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

namespace traindeck {

class SshWorkerBackend : public WorkerBackend {
    Q_OBJECT
public:
    using WorkerBackend::WorkerBackend;
    ~SshWorkerBackend() override;

    // settings: "url" (ssh_url(), sshurl.h) or "host" with "ssh_config", "state_dir", "worker_path" (on the host);
    // "ssh_options" (a list of more ssh -o NAME=VALUE, e.g. a provider's per-instance known_hosts); "price_per_hour"
    // (a rented machine's: the base price of a worker started there, so its jobs' spend is what the machine costs);
    // "token" (from the keyring; "" reads it over ssh); "install" (true: copy this build's worker when the host needs
    // it); "worker_binary", "train_binary" (what is copied; default: next to this program).
    bool open(const QVariantMap& settings, QString* error) override;
    QString learnedToken() const override;

    // What the last open() learned: the host's facts; when it stopped for want of a worker, the install commands.
    client::HostFacts facts() const;
    QString hostFacts() const override; // facts().describe()
    bool needsInstall() const;
    QStringList installPlan() const override;
    pid_t forwardPid() const; // the ssh process of the forward (0 while it is down)
    // Also ends an open() under way (its probe, install, start or forward wait) within 100 ms, with an error.
    void shutdown() override;

protected:
    void unreachable() override;

private:
    void check_worker(); // the checker thread: restarts or follows the host's worker when asked by unreachable()
    void drop_forward(); // ends the forward's ssh, outside ssh_mutex_

    mutable std::mutex ssh_mutex_; // guards what follows
    client::SshTarget target_;
    std::string worker_path_, state_dir_;
    int remote_port_ = 0;
    double price_per_hour_ = 0; // a worker started here is given it as its base price (0: its own default)
    client::HostFacts facts_;
    bool needs_install_ = false;
    QStringList install_plan_;
    QString learned_token_;
    std::unique_ptr<client::SshForward> forward_;
    bool check_asked_ = false, stopping_ = false;
    std::atomic<bool> aborting_{false}; // shutdown(), the destructor: an ssh command under way ends at once
    std::condition_variable check_wake_;
    std::thread checker_;
};

} // namespace traindeck
