// SSH hosts (sshhost.h): OpenSSH's client as a process, fixed scripts on the host, its answers checked.
#include "sshhost.h"

#include "process.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>

#include <csignal>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

namespace traindeck::client {

namespace {

// The scripts run on the host. They print key=value lines; "error=" says why they failed. The piped ones start with
// this (piped_command): files they make are the user's alone, and the worker is looked for where install_worker puts
// it (~/.local/lib/traindeck/bin) before the PATH.
constexpr const char* kPrelude = R"sh(umask 077
find_worker() {
  if [ -n "$1" ]; then printf '%s\n' "$1"; elif [ -x "$HOME/.local/lib/traindeck/bin/traindeck-worker" ]; then
    printf '%s\n' "$HOME/.local/lib/traindeck/bin/traindeck-worker"; else command -v traindeck-worker || true; fi
}
state_dir() {
  if [ -n "$1" ]; then printf '%s\n' "$1"; else printf '%s\n' "${XDG_DATA_HOME:-$HOME/.local/share}/traindeck/worker"; fi
}
)sh";

constexpr const char* kProbe = R"sh(w=$(find_worker "$1"); s=$(state_dir "$2")
echo "state=$s"; echo "home=$HOME"
(. /etc/os-release 2>/dev/null && echo "os=$PRETTY_NAME")
echo "kernel=$(uname -sr)"; echo "arch=$(uname -m)"
echo "cpus=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN)"
echo "memory_kb=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo 2>/dev/null)"
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null | while IFS= read -r g; do echo "gpu=$g"; done
fi
if [ -n "$w" ] && [ -x "$w" ]; then echo "worker=$w"; echo "worker_version=$("$w" --version 2>&1 | head -n 1)"; fi
if [ -e "$s/lock" ] && ! flock -n "$s/lock" true 2>/dev/null; then echo "running=1"; else echo "running=0"; fi
)sh";

// One line, run as `sh -c` (its stdin is the file): $1 the file's name, $2 its size. A copy cut short (ssh dropped
// mid-way: cat sees an end of file and succeeds) is never renamed into place.
constexpr const char* kInstall =
    R"sh(umask 077; d="$HOME/.local/lib/traindeck/bin"; mkdir -p "$d" && cat > "$d/.$1.new" && [ "$(wc -c < "$d/.$1.new")" -eq "$2" ] && chmod 755 "$d/.$1.new" && mv -f "$d/.$1.new" "$d/$1" && echo "installed=$d/$1" || { rm -f "$d/.$1.new"; echo "error=$1 arrived incomplete or could not be written in $d"; exit 5; })sh";

constexpr const char* kVersion = R"sh(w="$HOME/.local/lib/traindeck/bin/traindeck-worker"
echo "worker=$w"; echo "version=$("$w" --version 2>&1 | tr '\n' ' ' | cut -c1-400)"
)sh";

// A worker is started when none holds the state folder's lock (flock -n succeeds): a stale port file of a killed
// worker is removed first, so that the wait below sees the new one's. Two starts at once (the checker of one console
// and another console) take turns on start.lock, which the worker itself does not inherit (9>&-). The folder is
// made private: the worker's log holds its token when it made a new one. $4, when given, is the machine's price an
// hour (a rented instance's), the base of its jobs' spend.
constexpr const char* kStart = R"sh(w=$(find_worker "$1"); s=$(state_dir "$2")
[ -n "$w" ] && [ -x "$w" ] || { echo "error=no traindeck-worker on this host"; exit 3; }
mkdir -p "$s" && chmod 700 "$s" || { echo "error=cannot create $s"; exit 3; }
exec 9>"$s/start.lock"
flock -w 40 9 || { echo "error=another start of the worker in $s did not end within 40 s"; exit 4; }
started=0
if [ ! -e "$s/lock" ] || flock -n "$s/lock" true 2>/dev/null; then
  rm -f "$s/port"
  setsid "$w" --listen 127.0.0.1:0 --state-dir "$s" ${4:+--price-base "$4"} </dev/null >>"$s/worker.log" 2>&1 9>&- &
  started=1
fi
i=0
while [ ! -s "$s/port" ]; do
  i=$((i+1))
  if [ $i -gt 300 ]; then
    echo "error=the worker did not start within 30 s: $(tail -n 2 "$s/worker.log" 2>/dev/null | tr '\n' ' ')"; exit 4
  fi
  sleep 0.1
done
echo "started=$started"; echo "state=$s"; echo "port=$(head -n 1 "$s/port")"
if [ "$3" = 1 ]; then echo "token=$(head -n 1 "$s/token")"; fi
)sh";

// A value said by the host: printable ASCII and UTF-8 kept, control characters (C0, DEL, and C1 as UTF-8: U+0080 to
// U+009F, which terminals obey) dropped, at most 400 bytes.
std::string clean(std::string_view value) {
    std::string out;
    for (size_t i = 0; i < value.size() && out.size() < 400; ++i) {
        const auto c = static_cast<unsigned char>(value[i]);
        if (c == 0xc2 && i + 1 < value.size() && static_cast<unsigned char>(value[i + 1]) >= 0x80 &&
            static_cast<unsigned char>(value[i + 1]) <= 0x9f) {
            ++i;
            continue;
        }
        if (c >= 0x20 && c != 0x7f)
            out += value[i];
    }
    return out;
}

std::vector<std::pair<std::string, std::string>> key_values(const std::string& output) {
    std::vector<std::pair<std::string, std::string>> out;
    std::istringstream lines(output);
    std::string line;
    while (std::getline(lines, line)) {
        const size_t eq = line.find('=');
        if (eq == std::string::npos || eq == 0 || eq > 32)
            continue;
        out.emplace_back(line.substr(0, eq), clean(std::string_view(line).substr(eq + 1)));
    }
    return out;
}

std::string value_of(const std::vector<std::pair<std::string, std::string>>& values, const std::string& key) {
    for (const auto& [k, v] : values)
        if (k == key)
            return v;
    return {};
}

long long to_number(const std::string& text) {
    long long n = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    return ec == std::errc() && end == text.data() + text.size() ? n : -1;
}

std::string last_line(std::string text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
        text.pop_back();
    const size_t nl = text.rfind('\n');
    return clean(nl == std::string::npos ? text : text.substr(nl + 1));
}

std::string base_name(const std::string& path) {
    const size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

// head, then each word single-quoted, separated by spaces.
std::string with_quoted(std::string head, const std::vector<std::string>& words) {
    for (const std::string& word : words) {
        if (!head.empty())
            head += ' ';
        head += shell_quote(word);
    }
    return head;
}

// A multi-line script goes base64-encoded through a pipe into sh: the command line stays one line of plain words
// that any login shell (sh, bash, zsh, fish, csh) passes on unchanged.
std::string piped_command(const std::string& script, const std::vector<std::string>& args) {
    static const char* const kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const std::string text = std::string(kPrelude) + script;
    std::string encoded;
    for (size_t i = 0; i < text.size(); i += 3) {
        uint32_t n = static_cast<unsigned char>(text[i]) << 16;
        if (i + 1 < text.size())
            n |= static_cast<unsigned char>(text[i + 1]) << 8;
        if (i + 2 < text.size())
            n |= static_cast<unsigned char>(text[i + 2]);
        encoded += kAlphabet[(n >> 18) & 63];
        encoded += kAlphabet[(n >> 12) & 63];
        encoded += i + 1 < text.size() ? kAlphabet[(n >> 6) & 63] : '=';
        encoded += i + 2 < text.size() ? kAlphabet[n & 63] : '=';
    }
    return with_quoted("echo " + encoded + " | base64 -d | sh -s --", args);
}

// A one-line script whose stdin is data (install): `sh -c SCRIPT sh ARGS...`.
std::string inline_command(const std::string& script, const std::vector<std::string>& args) {
    return with_quoted("sh -c " + shell_quote(script) + " sh", args);
}

// What kInstall takes for a file: its name there and its size here (0 when it cannot be read: the copy then fails
// the size check on the host).
std::vector<std::string> install_args(const std::string& file) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(file, ec);
    return {base_name(file), std::to_string(ec ? 0 : size)};
}

} // namespace

std::string shell_quote(const std::string& word) {
    std::string out = "'";
    for (const char c : word) {
        if (c == '\'')
            out += "'\\''";
        else
            out += c;
    }
    out += '\'';
    return out;
}

std::string SshTarget::check() const {
    if (destination.empty())
        return "no host given";
    if (destination.front() == '-')
        return "a host cannot start with '-' (\"" + clean(destination) + "\")";
    for (const char c : destination)
        if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f)
            return "a host holds no spaces or control characters (\"" + clean(destination) + "\")";
    return {};
}

std::vector<std::string> SshTarget::argv() const {
    // -T and RemoteCommand=none: a config's RequestTTY or RemoteCommand would garble a copied file or refuse the
    // command; ControlPath=none: a multiplexing master (ControlMaster) would hold the forward's socket where killing
    // and restarting this ssh cannot reach it.
    std::vector<std::string> argv{"ssh", "-T"};
    for (const char* option : {"BatchMode=yes", "ConnectTimeout=10", "ServerAliveInterval=5", "ServerAliveCountMax=3",
                               "ControlPath=none", "RemoteCommand=none"}) {
        argv.emplace_back("-o");
        argv.emplace_back(option);
    }
    if (!config_file.empty()) {
        argv.emplace_back("-F");
        argv.push_back(config_file);
    }
    for (const std::string& option : options) {
        argv.emplace_back("-o");
        argv.push_back(option);
    }
    // user@host:port is not ssh's syntax; its ssh:// form is. A name with several colons (IPv6) is left to ssh.
    std::string dest = destination;
    const size_t colon = dest.rfind(':');
    if (dest.find("://") == std::string::npos && colon != std::string::npos && dest.find(':') == colon &&
        colon + 1 < dest.size() && to_number(dest.substr(colon + 1)) > 0)
        dest = "ssh://" + dest;
    argv.push_back(dest);
    return argv;
}

std::string HostFacts::describe() const {
    std::string text = os.empty() ? kernel : os;
    if (!arch.empty())
        text += ", " + arch;
    if (cpus > 0)
        text += ", " + std::to_string(cpus) + " CPUs";
    if (memory_mb > 0)
        text += ", " + std::to_string((memory_mb + 512) / 1024) + " GiB";
    text += gpus.empty() ? ", no GPU" : ", " + std::to_string(gpus.size()) + (gpus.size() == 1 ? " GPU" : " GPUs");
    return text;
}

RemoteResult run_remote(const SshTarget& target, const std::string& script, const std::vector<std::string>& args,
                        const std::string& stdin_path, double seconds, const std::atomic<bool>* abort) {
    RemoteResult result;
    if (const std::string bad = target.check(); !bad.empty()) {
        result.error = bad;
        return result;
    }
    SpawnOptions options;
    options.argv = target.argv();
    options.argv.push_back(stdin_path.empty() ? piped_command(script, args) : inline_command(script, args));
    options.search_path = true;
    options.stdin_path = stdin_path.empty() ? "/dev/null" : stdin_path;
    ProgramLimits limits;
    limits.seconds = seconds;
    limits.max_output = 1 << 20;
    limits.abort = abort;
    const ProgramResult run = run_program(options, limits);
    result.output = run.output;
    const std::string where = "ssh " + clean(target.destination);
    if (!run.started) {
        result.error = "cannot run ssh (" + run.error + "): install OpenSSH's client (openssh-client)";
    } else if (run.aborted) {
        result.error = where + ": interrupted (the backend is going away)";
    } else if (run.timed_out) {
        result.error = where + " did not answer within " + std::to_string(static_cast<int>(seconds)) + " s";
    } else if (run.exit_code == 255) {
        // ssh's own failure: its last line says it (Permission denied, Host key verification failed, ...).
        const std::string why = last_line(run.errors);
        result.error = where + " failed: " + (why.empty() ? "ssh exited with status 255" : why);
        if (why.find("Host key verification failed") != std::string::npos)
            result.error += " (connect once with `ssh " + clean(target.destination) +
                            "` and compare the host's key to accept it; nothing here accepts an unknown key)";
    } else if (run.exit_code != 0) {
        std::string why = value_of(key_values(run.output), "error");
        if (why.empty())
            why = last_line(run.errors);
        result.error = "on " + clean(target.destination) + ": " +
                       (why.empty() ? "the command exited with status " + std::to_string(run.exit_code) : why);
    } else {
        result.ok = true;
    }
    return result;
}

bool probe_host(const SshTarget& target, const std::string& worker_path, const std::string& state_dir, HostFacts* facts,
                std::string* error, const std::atomic<bool>* abort) {
    const RemoteResult run = run_remote(target, kProbe, {worker_path, state_dir}, {}, 60, abort);
    if (!run.ok) {
        *error = run.error;
        return false;
    }
    const auto values = key_values(run.output);
    HostFacts found;
    for (const auto& [key, value] : values) {
        if (key == "os")
            found.os = value;
        else if (key == "kernel")
            found.kernel = value;
        else if (key == "arch")
            found.arch = value;
        else if (key == "home")
            found.home = value;
        else if (key == "cpus")
            found.cpus = static_cast<int>(std::clamp(to_number(value), 0LL, 1LL << 20));
        else if (key == "memory_kb")
            found.memory_mb = std::max(0LL, to_number(value)) / 1024;
        else if (key == "gpu" && found.gpus.size() < 64)
            found.gpus.push_back(value);
        else if (key == "state")
            found.state_dir = value;
        else if (key == "worker")
            found.worker = value;
        else if (key == "worker_version")
            found.worker_version = value;
        else if (key == "running")
            found.running = value == "1";
    }
    if (found.kernel.empty() || found.state_dir.empty()) {
        *error = "the answer of " + clean(target.destination) +
                 " was not the probe's (a login banner or shell start-up file that prints?): " +
                 last_line(run.output.substr(0, 400));
        return false;
    }
    *facts = std::move(found);
    return true;
}

bool needs_install(const HostFacts& facts, const std::string& version) {
    return facts.worker.empty() || facts.worker_version != "traindeck-worker " + version;
}

std::vector<std::string> install_commands(const SshTarget& target, const std::vector<std::string>& local_files) {
    std::vector<std::string> commands;
    for (const std::string& file : local_files) {
        std::vector<std::string> argv = target.argv();
        argv.push_back(inline_command(kInstall, install_args(file)));
        commands.push_back(with_quoted({}, argv) + " < " + shell_quote(file));
    }
    return commands;
}

bool install_worker(const SshTarget& target, const std::vector<std::string>& local_files, std::string* worker_path,
                    std::string* error, const std::atomic<bool>* abort) {
    for (const std::string& file : local_files) {
        if (::access(file.c_str(), R_OK) != 0) {
            *error = "cannot read " + file + " to copy it: " + std::strerror(errno);
            return false;
        }
        const RemoteResult copied = run_remote(target, kInstall, install_args(file), file, 300, abort);
        if (!copied.ok) {
            *error = "copying " + base_name(file) + " failed: " + copied.error;
            return false;
        }
    }
    const RemoteResult version = run_remote(target, kVersion, {}, {}, 60, abort);
    const auto values = key_values(version.output);
    const std::string said = value_of(values, "version");
    if (!version.ok || said.rfind("traindeck-worker ", 0) != 0) {
        *error = "the copied traindeck-worker does not run on " + clean(target.destination) + " (" +
                 (said.empty() ? version.error : said) +
                 "): it needs the libraries of the system it was built on; install TrainDeck's .deb there instead "
                 "(apt install ./traindeck_*.deb)";
        return false;
    }
    *worker_path = value_of(values, "worker");
    return true;
}

StartedWorker start_worker(const SshTarget& target, const std::string& worker_path, const std::string& state_dir,
                           bool want_token, std::string* error, const std::atomic<bool>* abort, double price_per_hour) {
    StartedWorker started;
    std::ostringstream price;
    if (price_per_hour > 0)
        price << price_per_hour;
    const RemoteResult run =
        run_remote(target, kStart, {worker_path, state_dir, want_token ? "1" : "0", price.str()}, {}, 60, abort);
    if (!run.ok) {
        *error = run.error;
        return started;
    }
    const auto values = key_values(run.output);
    const long long port = to_number(value_of(values, "port"));
    if (port <= 0 || port > 65535) {
        *error = "the worker on " + clean(target.destination) + " named no port (\"" + value_of(values, "port") + "\")";
        return started;
    }
    if (want_token) {
        started.token = value_of(values, "token");
        const bool plain = !started.token.empty() && started.token.size() <= 256 &&
                           std::all_of(started.token.begin(), started.token.end(), [](char c) {
                               return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
                           });
        if (!plain) {
            *error = "the worker on " + clean(target.destination) + " has no readable token in its state folder";
            return {};
        }
    }
    started.port = static_cast<int>(port);
    started.state_dir = value_of(values, "state");
    started.started = value_of(values, "started") == "1";
    return started;
}

std::string private_socket_dir(std::string* error) {
    std::string dir;
    if (const char* runtime = std::getenv("XDG_RUNTIME_DIR"); runtime && *runtime && ::access(runtime, W_OK) == 0)
        dir = std::string(runtime) + "/traindeck-ssh";
    else
        dir = "/tmp/traindeck-ssh-" + std::to_string(::getuid());
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
        *error = "cannot create " + dir + ": " + std::strerror(errno);
        return {};
    }
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::getuid() || (st.st_mode & 077) != 0) {
        *error = dir + " is not a folder only this user can enter: the forward's socket is not made there";
        return {};
    }
    static std::once_flag orphans;
    std::call_once(orphans, [&] { end_orphan_forwards(dir); });
    return dir;
}

namespace {

// The pid a forward's file is named after (PID-N.sock, PID-N.sock.log); 0 when it is no such name.
pid_t forward_owner(const std::string& name, std::string* socket_name) {
    const std::size_t dash = name.find('-');
    const std::size_t sock = name.find(".sock");
    if (dash == std::string::npos || sock == std::string::npos || dash == 0 || sock < dash + 2)
        return 0;
    const std::string rest = name.substr(sock);
    if (rest != ".sock" && rest != ".sock.log")
        return 0;
    for (std::size_t i = 0; i < sock; ++i)
        if (i != dash && !std::isdigit(static_cast<unsigned char>(name[i])))
            return 0;
    pid_t pid = 0;
    const auto [end, problem] = std::from_chars(name.data(), name.data() + dash, pid);
    if (problem != std::errc() || end != name.data() + dash || pid <= 0)
        return 0;
    *socket_name = name.substr(0, sock + 5);
    return pid;
}

// Each process of this user that is an ssh with "-L SOCKET:..." for one of the sockets.
std::vector<pid_t> forwards_of(const std::set<std::string>& sockets) {
    std::vector<pid_t> found;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator("/proc", error)) {
        const std::string name = entry.path().filename().string();
        if (name.empty() ||
            !std::all_of(name.begin(), name.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
            continue;
        struct stat st {};
        if (::stat(entry.path().c_str(), &st) != 0 || st.st_uid != ::getuid())
            continue;
        std::ifstream in(entry.path() / "cmdline", std::ios::binary);
        std::vector<std::string> argv;
        for (std::string arg; std::getline(in, arg, '\0');)
            argv.push_back(arg);
        if (argv.empty() || std::filesystem::path(argv[0]).filename() != "ssh")
            continue;
        for (std::size_t i = 1; i < argv.size(); ++i) {
            if (argv[i - 1] != "-L")
                continue;
            const std::size_t colon = argv[i].find(':');
            if (colon != std::string::npos && sockets.contains(argv[i].substr(0, colon)))
                found.push_back(static_cast<pid_t>(std::stol(name)));
        }
    }
    return found;
}

} // namespace

int end_orphan_forwards(const std::string& dir) {
    std::set<std::string> sockets;
    std::vector<std::string> files;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
        std::string socket_name;
        const pid_t owner = forward_owner(entry.path().filename().string(), &socket_name);
        // Its maker still runs (or is not this user's to ask): its forwards are its own.
        if (owner == 0 || owner == ::getpid() || ::kill(owner, 0) == 0 || errno != ESRCH)
            continue;
        sockets.insert((std::filesystem::path(dir) / socket_name).string());
        files.push_back(entry.path().string());
    }
    if (sockets.empty())
        return 0;
    const std::vector<pid_t> orphans = forwards_of(sockets);
    for (const pid_t pid : orphans)
        ::kill(pid, SIGTERM);
    for (const std::string& file : files)
        ::unlink(file.c_str());
    return static_cast<int>(orphans.size());
}

SshForward::SshForward(SshTarget target, std::string socket_path, int remote_port, StateCallback state)
    : target_(std::move(target)), socket_(std::move(socket_path)), log_(socket_ + ".log"), state_(std::move(state)),
      remote_port_(remote_port) {
    thread_ = std::thread([this] { run(); });
}

SshForward::~SshForward() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
        if (const pid_t pid = pid_.load(); pid > 0)
            ::kill(pid, SIGTERM);
    }
    changed_.notify_all();
    thread_.join();
    ::unlink(socket_.c_str());
    ::unlink(log_.c_str());
}

bool SshForward::socket_accepts() const {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, socket_.c_str(), sizeof(address.sun_path) - 1);
    const bool ok = ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
    ::close(fd);
    return ok;
}

bool SshForward::wait_up(double seconds, std::string* error, const std::atomic<bool>* abort) {
    std::unique_lock lock(mutex_);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    // In slices, so that an abort (a console closing) is heeded within 100 ms.
    while (!ever_up_ && last_error_.empty() && !(abort && abort->load()) && std::chrono::steady_clock::now() < deadline)
        changed_.wait_for(lock, std::chrono::milliseconds(100));
    if (ever_up_)
        return true;
    if (abort && abort->load()) {
        *error = "the ssh forward to " + clean(target_.destination) + " was given up: the console is closing";
        return false;
    }
    *error = "the ssh forward to " + clean(target_.destination) + " did not come up" +
             (last_error_.empty() ? " within " + std::to_string(static_cast<int>(seconds)) + " s" : ": " + last_error_);
    return false;
}

void SshForward::set_remote_port(int port) {
    if (remote_port_.exchange(port) == port)
        return;
    {
        std::lock_guard lock(mutex_);
        if (const pid_t pid = pid_.load(); pid > 0)
            ::kill(pid, SIGTERM); // run() starts it again at once, towards the new port
    }
    changed_.notify_all(); // and does not wait out a pause between failed attempts
}

void SshForward::run() {
    using Clock = std::chrono::steady_clock;
    double pause = 0.5;
    bool said_down = false;
    while (true) {
        std::vector<std::string> argv = target_.argv();
        // The options go before the destination (the last word of argv()).
        const std::string destination = argv.back();
        argv.pop_back();
        const int port_asked = remote_port_.load(); // read once: set_remote_port() compares against it
        const std::string forward = socket_ + ":127.0.0.1:" + std::to_string(port_asked);
        for (const char* word : {"-N", "-o", "ExitOnForwardFailure=yes", "-o", "StreamLocalBindUnlink=yes", "-L"})
            argv.emplace_back(word);
        argv.push_back(forward);
        argv.push_back(destination);
        SpawnOptions options;
        options.argv = std::move(argv);
        options.search_path = true;
        options.stdin_path = "/dev/null";
        ::unlink(log_.c_str()); // its last line is this attempt's error
        options.output_path = log_;
        int error_number = 0;
        {
            std::lock_guard lock(mutex_);
            if (stopping_)
                return;
            const pid_t pid = spawn_process(options, error_number);
            pid_.store(pid);
            if (pid < 0) {
                last_error_ = std::string("cannot run ssh: ") + std::strerror(error_number);
                changed_.notify_all();
                return;
            }
        }
        const pid_t pid = pid_.load();
        const auto started = Clock::now();
        // Its end is seen without reaping it (WNOWAIT): the pid stays ssh's, never another process's, until it is
        // reaped below under the mutex together with pid_ = 0, so kill() elsewhere never reaches a stranger.
        const auto ended = [pid](bool block) {
            siginfo_t info{};
            while (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT | (block ? 0 : WNOHANG)) < 0)
                if (errno != EINTR)
                    return true;
            return info.si_pid == pid;
        };
        bool up = false;
        // Up when its socket accepts a connection; ssh that ends first failed (its log says why).
        while (!up && !ended(false)) {
            up = socket_accepts();
            if (!up)
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        if (up) {
            bool restored = false;
            {
                std::lock_guard lock(mutex_);
                up_ = true;
                restored = ever_up_;
                ever_up_ = true;
                last_error_.clear();
            }
            changed_.notify_all();
            if (restored && state_)
                state_(true, "the ssh forward to " + clean(target_.destination) + " is back");
            said_down = false;
            ended(true);
        }
        int status = 0;
        bool stopping = false;
        {
            std::lock_guard lock(mutex_);
            while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
            }
            pid_.store(0);
            up_ = false;
            stopping = stopping_;
        }
        std::string why;
        {
            std::ifstream log(log_);
            std::stringstream text;
            text << log.rdbuf();
            why = last_line(text.str());
        }
        if (why.empty())
            why = WIFEXITED(status) ? "ssh exited with status " + std::to_string(WEXITSTATUS(status))
                                    : "ssh was ended by signal " + std::to_string(WTERMSIG(status));
        {
            std::lock_guard lock(mutex_);
            if (!ever_up_)
                last_error_ = why;
        }
        changed_.notify_all();
        if (stopping)
            return;
        if (remote_port_.load() != port_asked) {
            pause = 0.5; // set_remote_port: start again at once, towards the new port
            continue;
        }
        if (!said_down && state_)
            state_(false, "the ssh forward to " + clean(target_.destination) + " ended (" + why + "); reconnecting");
        said_down = true;
        if (up && Clock::now() - started > std::chrono::seconds(30))
            pause = 0.5; // it had been up a while: this is a new drop, not the same failure again
        std::unique_lock lock(mutex_);
        changed_.wait_for(lock, std::chrono::duration<double>(pause),
                          [&] { return stopping_ || remote_port_.load() != port_asked; });
        if (stopping_)
            return;
        pause = std::min(pause * 2, 10.0);
    }
}

} // namespace traindeck::client
