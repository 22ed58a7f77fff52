// traindeck-worker: the job agent. Runs, queues, supervises and meters jobs; serves the /v1 HTTP API.
#include "atomicfile.h"
#include "jobshim.h"
#include "supervisor.h"
#include "workerserver.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <unistd.h>

namespace {

traindeck::worker::WorkerServer* g_server = nullptr;

void request_stop(int) {
    if (g_server)
        g_server->stop();
}

void print_usage() {
    std::printf(
        "usage: traindeck-worker [options]\n"
        "\n"
        "Runs jobs on this machine and serves the TrainDeck worker API. Jobs keep running when the worker stops;\n"
        "a restarted worker takes them back.\n"
        "\n"
        "  --listen HOST:PORT     where to listen (default 127.0.0.1:7878; port 0 = any free port)\n"
        "  --tls-cert FILE --tls-key FILE   serve HTTPS (required to listen beyond loopback)\n"
        "  --insecure             allow plain HTTP beyond loopback (not recommended)\n"
        "  --state-dir DIR        database, token and job folders (default $XDG_DATA_HOME/traindeck/worker)\n"
        "  --train-binary FILE    traindeck-train for built-in jobs (default: next to this program)\n"
        "  --cpus N --memory-mb N  resource slots to offer (default: the whole machine)\n"
        "  --price-base X --price-gpu X --price-cpu X --currency C   per-hour prices for spend\n"
        "  --idle-percent P --idle-seconds S [--idle-stop]   idle policy (report, optionally stop)\n"
        "  --budget-warn P        warn when a job has spent P %% of its budget (default 80; it stops at 100)\n"
        "  --stop-grace S         seconds between SIGTERM and SIGKILL when stopping a job (default 60)\n"
        "  --capture-exclude GLOB never capture matching files of a job's code (repeatable; .env files, keys\n"
        "                         and a folder's .traindeckignore patterns are never captured anyway)\n"
        "  --executor local|slurm where jobs run (default local). slurm: as Slurm batch jobs; the state folder must "
        "be\n"
        "                         on a filesystem the nodes share (installer/slurm-single-node.sh makes a test "
        "cluster)\n"
        "  --slurm-rest URL       slurmrestd (OpenAPI v0.0.38, JWT); without it sbatch/squeue/scancel are used\n"
        "  --slurm-token-file F   the JWT for slurmrestd (scontrol token), else $SLURM_JWT\n"
        "  --slurm-user NAME      who the jobs run as (default: the worker's own user; a worker running as root\n"
        "                         must name one, --slurm-user root if that is really meant)\n"
        "  --slurm-partition P    partition (default: the cluster's default)\n"
        "  --slurm-conf FILE      SLURM_CONF for the Slurm commands\n"
        "\n"
        "  --version              print the version\n"
        "\n"
        "One worker per state folder (STATE/lock); a second one exits with status 3 naming the first's pid.\n");
}

std::string default_state_dir() {
    if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg)
        return std::string(xdg) + "/traindeck/worker";
    const char* home = std::getenv("HOME");
    return std::string(home ? home : "/tmp") + "/.local/share/traindeck/worker";
}

bool is_loopback(const std::string& host) { return host == "127.0.0.1" || host == "localhost" || host == "::1"; }

// One worker per state folder: two would run every queued job twice and write the same database. The lock is an
// flock on STATE/lock held for the life of the process (close-on-exec, so the jobs it starts, which outlive it, do
// not hold it: a restarted worker takes them back). Returns the fd, or -1 with *error saying who holds it.
int lock_state_dir(const std::string& state_dir, std::string* error) {
    const std::string path = state_dir + "/lock";
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        *error = "cannot open " + path + ": " + std::strerror(errno);
        return -1;
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        const int why = errno;
        ::close(fd);
        std::string holder;
        if (FILE* pid = std::fopen((state_dir + "/pid").c_str(), "r")) {
            char line[32] = {};
            if (std::fgets(line, sizeof line, pid) && line[0] != '\n') {
                line[std::strcspn(line, "\n")] = '\0';
                holder = std::string(" (pid ") + line + ")";
            }
            std::fclose(pid);
        }
        *error = why == EWOULDBLOCK ? "another traindeck-worker" + holder + " runs on " + state_dir +
                                          "; stop it first, or give this one another --state-dir"
                                    : "cannot lock " + path + ": " + std::strerror(why);
        return -1;
    }
    return fd;
}

} // namespace

int main(int argc, char** argv) {
    using namespace traindeck::worker;
    if (argc == 3 && std::strcmp(argv[1], "--run-job") == 0)
        return run_job_shim(argv[2]);

    WorkerConfig config;
    config.version = TRAINDECK_VERSION;
    config.state_dir = default_state_dir();
    const std::string self = std::filesystem::canonical("/proc/self/exe").string();
    config.self_binary = self;
    config.train_binary = (std::filesystem::path(self).parent_path() / "traindeck-train").string();
    bool insecure = false;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "traindeck-worker: %s needs a value (see --help)\n", arg.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        auto number = [&]() -> double {
            const std::string text = value();
            char* end = nullptr;
            const double parsed = std::strtod(text.c_str(), &end);
            if (text.empty() || *end != '\0' || parsed < 0) {
                std::fprintf(stderr, "traindeck-worker: %s expects a non-negative number, not \"%s\"\n", arg.c_str(), text.c_str());
                std::exit(2);
            }
            return parsed;
        };
        if (arg == "--help" || arg == "-h") {
            print_usage();
            return 0;
        }
        if (arg == "--version") {
            std::printf("traindeck-worker %s\n", TRAINDECK_VERSION);
            return 0;
        } else if (arg == "--listen") {
            const std::string listen = value();
            const size_t colon = listen.rfind(':');
            if (colon == std::string::npos) {
                std::fprintf(stderr, "traindeck-worker: --listen expects HOST:PORT, not \"%s\"\n", listen.c_str());
                return 2;
            }
            config.listen_host = listen.substr(0, colon);
            config.listen_port = std::atoi(listen.c_str() + colon + 1);
        } else if (arg == "--tls-cert") {
            config.tls_cert = value();
        } else if (arg == "--tls-key") {
            config.tls_key = value();
        } else if (arg == "--insecure") {
            insecure = true;
        } else if (arg == "--state-dir") {
            config.state_dir = value();
        } else if (arg == "--train-binary") {
            config.train_binary = value();
        } else if (arg == "--cpus") {
            config.cpu_slots = static_cast<int>(number());
        } else if (arg == "--memory-mb") {
            config.memory_mb = static_cast<int64_t>(number());
        } else if (arg == "--price-base") {
            config.price_base = number();
        } else if (arg == "--price-gpu") {
            config.price_gpu = number();
        } else if (arg == "--price-cpu") {
            config.price_cpu = number();
        } else if (arg == "--currency") {
            config.currency = value();
        } else if (arg == "--idle-percent") {
            config.idle_percent = number();
        } else if (arg == "--idle-seconds") {
            config.idle_seconds = number();
        } else if (arg == "--idle-stop") {
            config.idle_stop = true;
        } else if (arg == "--budget-warn") {
            config.budget_warn_percent = number();
            if (!(config.budget_warn_percent >= 1 && config.budget_warn_percent <= 99)) {
                std::fprintf(stderr, "traindeck-worker: --budget-warn takes a percent from 1 to 99\n");
                return 2;
            }
        } else if (arg == "--stop-grace") {
            config.stop_grace_seconds = number();
        } else if (arg == "--capture-exclude") {
            config.capture_exclude.push_back(value());
        } else if (arg == "--executor") {
            config.executor = value();
            if (config.executor != "local" && config.executor != "slurm") {
                std::fprintf(stderr, "traindeck-worker: --executor is local or slurm, not \"%s\"\n", config.executor.c_str());
                return 2;
            }
        } else if (arg == "--slurm-rest") {
            config.slurm_rest = value();
        } else if (arg == "--slurm-user") {
            config.slurm_user = value();
        } else if (arg == "--slurm-token-file") {
            config.slurm_token_file = value();
        } else if (arg == "--slurm-partition") {
            config.slurm_partition = value();
        } else if (arg == "--slurm-conf") {
            config.slurm_conf = value();
        } else {
            std::fprintf(stderr, "traindeck-worker: unknown option %s (see --help)\n", arg.c_str());
            return 2;
        }
    }
    if (config.executor == "slurm" && config.slurm_user.empty()) {
        // Jobs run as the worker's own user unless told otherwise; a root worker never runs them as root by default.
        const passwd* self = ::getpwuid(::geteuid());
        if (::geteuid() == 0 || !self) {
            std::fprintf(stderr, "traindeck-worker: the Slurm executor would run every job as root; give --slurm-user USER "
                                 "(or --slurm-user root if that is really meant)\n");
            return 2;
        }
        config.slurm_user = self->pw_name;
    }
    if (!is_loopback(config.listen_host) && config.tls_cert.empty() && !insecure) {
        std::fprintf(stderr, "traindeck-worker: listening on %s without TLS would send the token in clear; give "
                             "--tls-cert and --tls-key (or --insecure if you really mean it)\n",
                     config.listen_host.c_str());
        return 2;
    }
    config.state_dir = std::filesystem::absolute(config.state_dir).string();
    std::error_code ec;
    std::filesystem::create_directories(config.state_dir, ec);
    if (ec) {
        std::fprintf(stderr, "traindeck-worker: cannot create %s: %s\n", config.state_dir.c_str(), ec.message().c_str());
        return 1;
    }

    std::string error;
    if (lock_state_dir(config.state_dir, &error) < 0) {
        std::fprintf(stderr, "traindeck-worker: %s\n", error.c_str());
        return 3;
    }
    // Who runs here: the console sends its token only to the process that listens on STATE/port and whose pid is
    // this (backend/client/workerbackend.cpp).
    if (!traindeck::write_file_atomically(config.state_dir + "/pid", std::to_string(::getpid()) + "\n", 0600, error)) {
        std::fprintf(stderr, "traindeck-worker: %s\n", error.c_str());
        return 1;
    }
    bool created = false;
    const std::string token = load_or_create_token(config.state_dir, created, error);
    if (token.empty()) {
        std::fprintf(stderr, "traindeck-worker: %s\n", error.c_str());
        return 1;
    }
    EventBoard board;
    Supervisor supervisor(config, board);
    if (error = supervisor.start(); !error.empty()) {
        std::fprintf(stderr, "traindeck-worker: %s\n", error.c_str());
        return 1;
    }
    WorkerServer server(supervisor, board, token);
    if (error = server.bind(config.listen_host, config.listen_port, config.tls_cert, config.tls_key); !error.empty()) {
        std::fprintf(stderr, "traindeck-worker: %s\n", error.c_str());
        return 1;
    }
    traindeck::write_file_atomically(config.state_dir + "/port", std::to_string(server.port()) + "\n", 0600, error);
    g_server = &server;
    std::signal(SIGTERM, request_stop);
    std::signal(SIGINT, request_stop);
    std::signal(SIGPIPE, SIG_IGN);
    std::printf("traindeck-worker: listening on %s://%s:%d (state in %s)\n", config.tls_cert.empty() ? "http" : "https",
                config.listen_host.c_str(), server.port(), config.state_dir.c_str());
    if (created)
        std::printf("traindeck-worker: new access token (shown once; also in %s/token, mode 0600): %s\n",
                    config.state_dir.c_str(), token.c_str());
    std::fflush(stdout);
    server.run();
    supervisor.stop();
    // Nobody listens any more: a console asking STATE/port learns it at once instead of from a refused connection.
    std::filesystem::remove(config.state_dir + "/port", ec);
    return 0;
}
