#pragma once
// A machine the user can ssh into (a lab server, a rented VM) as a place for a traindeck-worker: OpenSSH's own `ssh`
// client run as a process, so the user's ~/.ssh/config, agent and known_hosts decide who is reached and how. Nothing
// here stores a password or answers a prompt (BatchMode): an unknown host key is refused unless the user's own
// config says StrictHostKeyChecking accept-new or no. What runs on the host is fixed scripts of this file, their
// arguments single-quoted; what the host prints back is read as key=value lines, each value checked
// before use (a host can print anything). Plain C++, no Qt: the SSH plugin, traindeck-cli and the tests share it.
//
// The worker is reached through `ssh -N -L SOCKET:127.0.0.1:PORT`: the worker listens on the host's loopback only,
// no certificate and no open port are needed, and the console's end is a Unix socket in a folder only this user
// can open (a TCP port on 127.0.0.1 could be taken by another user's program while the forward is down).
#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace traindeck::client {

// Single-quoted for a POSIX shell: the remote login shell reads the command line ssh sends.
std::string shell_quote(const std::string& word);

struct SshTarget {
    // A ~/.ssh/config host name, user@host, host:port, user@host:port or ssh://user@host:port.
    std::string destination;
    std::string config_file;          // ssh -F (default: the user's ~/.ssh/config)
    std::vector<std::string> options; // more -o NAME=VALUE, e.g. from the test's set-up
    // ssh's argv up to and including the destination: BatchMode (no password or host-key prompt), a connect timeout,
    // keep-alives that notice a dead network in 15 s.
    std::vector<std::string> argv() const;
    // "" or why the destination cannot be used (empty, starts with '-', holds spaces or control characters).
    std::string check() const;
};

// What a host has, from the probe script. Every field said by the host, length-capped and printable.
struct HostFacts {
    std::string os, kernel, arch, home;
    int cpus = 0;
    long long memory_mb = 0;
    std::vector<std::string> gpus;      // nvidia-smi's "name, memory MiB" per GPU; none without nvidia-smi
    std::string state_dir;              // the worker's state folder there
    std::string worker, worker_version; // the traindeck-worker found there ("" none) and its --version line
    bool running = false;               // a worker holds the state folder's lock
    std::string describe() const;       // one line for people: "Debian GNU/Linux 12, x86_64, 16 CPUs, 64 GiB, 2 GPUs"
};

// Runs a fixed script on the host with ARGS as $1...; ssh's own failure (exit 255: unreachable, refused key, unknown
// host key) is said with ssh's last line; the script's "error=" line says its own.
struct RemoteResult {
    bool ok = false;
    std::string output, error; // error: a sentence for people when !ok
};
// Without stdin_path the script (any length) is piped into the host's sh; with one, the script must be one line (it
// is given to sh -c, and the file is its stdin). abort: as ProgramLimits::abort.
RemoteResult run_remote(const SshTarget& target, const std::string& script, const std::vector<std::string>& args,
                        const std::string& stdin_path = {}, double seconds = 60,
                        const std::atomic<bool>* abort = nullptr);

// The host's facts. worker_path/state_dir "" for the defaults there: ~/.local/lib/traindeck/bin/traindeck-worker
// (where install_worker puts it), else traindeck-worker on its PATH; $XDG_DATA_HOME/traindeck/worker.
bool probe_host(const SshTarget& target, const std::string& worker_path, const std::string& state_dir, HostFacts* facts,
                std::string* error, const std::atomic<bool>* abort = nullptr);

// Whether the host needs this build's worker: none there, or another version than `version` (TRAINDECK_VERSION).
bool needs_install(const HostFacts& facts, const std::string& version);

// Copying this build's traindeck-worker and traindeck-train into ~/.local/lib/traindeck/bin on the host (each file
// written beside and renamed, so a worker running there keeps its binary until it restarts). install_commands says
// each step as the shell command it is, for the user to read before consenting; install_worker runs them and then
// the new worker's --version there (a host without this build's libraries fails here, said with the way through the
// .deb).
std::vector<std::string> install_commands(const SshTarget& target, const std::vector<std::string>& local_files);
bool install_worker(const SshTarget& target, const std::vector<std::string>& local_files, std::string* worker_path,
                    std::string* error, const std::atomic<bool>* abort = nullptr);

// Starts the host's worker when none holds its state folder (setsid: it outlives the ssh session, and the console),
// listening on the host's 127.0.0.1 on a free port (price_per_hour > 0: its --price-base, what a rented machine
// costs), and waits for its port file. Returns the port, with the token
// read from its state folder when want_token. 0 and error when not.
struct StartedWorker {
    int port = 0;
    std::string token, state_dir;
    bool started = false; // this call started it (else one was running)
};
StartedWorker start_worker(const SshTarget& target, const std::string& worker_path, const std::string& state_dir,
                           bool want_token, std::string* error, const std::atomic<bool>* abort = nullptr,
                           double price_per_hour = 0);

// `ssh -N -L SOCKET:127.0.0.1:PORT` kept up: when ssh ends (a network drop, a laptop that slept, the test killing
// it) it is started again after a pause (0.5 s, doubling to 10 s while it keeps failing). The remote port can change
// (set_remote_port: the worker restarted on another). SOCKET's folder is made 0700 first.
class SshForward {
public:
    // state(up, message): the forward came up (after a drop: "forward to HOST restored") or went down (why, from
    // ssh's last error line). Called on the forward's own thread.
    using StateCallback = std::function<void(bool up, const std::string& message)>;
    SshForward(SshTarget target, std::string socket_path, int remote_port, StateCallback state);
    ~SshForward(); // stops ssh and the thread
    SshForward(const SshForward&) = delete;
    SshForward& operator=(const SshForward&) = delete;

    // Waits until the socket accepts a connection the first time, at most seconds. False with ssh's error.
    bool wait_up(double seconds, std::string* error, const std::atomic<bool>* abort = nullptr);
    void set_remote_port(int port); // restarts the forward towards the new port
    pid_t pid() const { return pid_.load(); }
    const std::string& socket_path() const { return socket_; }

private:
    void run();
    bool socket_accepts() const;

    SshTarget target_;
    std::string socket_, log_;
    StateCallback state_;
    std::atomic<int> remote_port_;
    std::atomic<pid_t> pid_{0};
    std::mutex mutex_;
    std::condition_variable changed_;
    bool stopping_ = false, up_ = false, ever_up_ = false;
    std::string last_error_;
    std::thread thread_;
};

// A private folder for this user's forward sockets: $XDG_RUNTIME_DIR/traindeck-ssh, else /tmp/traindeck-ssh-UID,
// made 0700 (refused when it exists and is not this user's, or others may enter it). "" and error when not. The first
// call in a process ends the forwards that consoles killed before (end_orphan_forwards).
std::string private_socket_dir(std::string* error);

// A forward's socket is named PID-N.sock after the process that made it. One whose process has ended without ending
// it (kill -9, a crash) leaves its ssh running, connected, for good: each such ssh of this user (argv[0] "ssh", a
// "-L" of exactly that socket) is sent SIGTERM, and the socket and its log go. Returns how many ssh were ended.
int end_orphan_forwards(const std::string& dir);

} // namespace traindeck::client
