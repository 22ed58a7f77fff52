#include "testsupport.h"

#include "process.h"

#include <fstream>
#include <random>
#include <sstream>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace traindeck::test {

TempDir::TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "traindeck-test-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
}

TempDir::~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
}

void write_text(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
}

std::vector<nlohmann::json> ProcessResult::records() const {
    std::vector<nlohmann::json> found;
    std::istringstream lines(out);
    std::string line;
    const std::string prefix = "@traindeck ";
    while (std::getline(lines, line))
        if (line.rfind(prefix, 0) == 0)
            found.push_back(nlohmann::json::parse(line.substr(prefix.size())));
    return found;
}

std::vector<nlohmann::json> ProcessResult::records(const std::string& type) const {
    std::vector<nlohmann::json> found;
    for (auto& record : records())
        if (record.value("type", "") == type)
            found.push_back(record);
    return found;
}

namespace {

std::string read_all(int fd) {
    std::string text;
    char buffer[65536];
    for (ssize_t got; (got = ::read(fd, buffer, sizeof(buffer))) != 0;) {
        if (got < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        text.append(buffer, static_cast<size_t>(got));
    }
    return text;
}

int spawn(const std::vector<std::string>& args, const std::vector<std::string>& env, int out_fd, int err_fd,
          int metrics_fd = -1) {
    SpawnOptions train;
    train.argv = {TRAINDECK_TRAIN_BINARY};
    train.argv.insert(train.argv.end(), args.begin(), args.end());
    train.environment = Environment::current();
    train.environment->set_entries(env); // the test's variables win over this process's
    train.fds = {{out_fd, 1}};
    if (err_fd >= 0)
        train.fds.emplace_back(err_fd, 2);
    if (metrics_fd >= 0)
        train.fds.emplace_back(metrics_fd, 3);
    int error_number = 0;
    return spawn_process(train, error_number);
}

int wait_exit(int pid) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

} // namespace

ProcessResult run_trainer(const std::vector<std::string>& args, const std::vector<std::string>& env,
                          const std::string& metrics_path) {
    std::vector<std::string> full_env = env;
    int metrics_fd = -1;
    if (!metrics_path.empty()) {
        metrics_fd = ::open(metrics_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        full_env.push_back("TRAINDECK_METRICS_FD=3");
    }
    // stderr goes to a file so a full pipe can never block the child while we read stdout.
    char err_path[] = "/tmp/traindeck-stderr-XXXXXX";
    const int err_fd = ::mkstemp(err_path);
    int out_pipe[2];
    if (::pipe(out_pipe) != 0)
        return {};
    const int pid = spawn(args, full_env, out_pipe[1], err_fd, metrics_fd);
    ::close(out_pipe[1]);
    if (metrics_fd >= 0)
        ::close(metrics_fd);
    ProcessResult result;
    result.out = read_all(out_pipe[0]);
    ::close(out_pipe[0]);
    result.exit_code = wait_exit(pid);
    ::lseek(err_fd, 0, SEEK_SET);
    result.err = read_all(err_fd);
    ::close(err_fd);
    ::unlink(err_path);
    return result;
}

RunningProcess start_trainer(const std::vector<std::string>& args) {
    int out_pipe[2];
    if (::pipe(out_pipe) != 0)
        return {};
    RunningProcess process;
    process.pid = spawn(args, {}, out_pipe[1], -1);
    ::close(out_pipe[1]);
    process.stdout_fd = out_pipe[0];
    return process;
}

bool read_until(RunningProcess& process, const std::string& needle, std::string& out) {
    char c;
    std::string line;
    while (::read(process.stdout_fd, &c, 1) == 1) {
        out += c;
        line += c;
        if (c == '\n') {
            if (line.find(needle) != std::string::npos)
                return true;
            line.clear();
        }
    }
    return false;
}

ProcessResult finish(RunningProcess& process) {
    ProcessResult result;
    result.out = read_all(process.stdout_fd);
    ::close(process.stdout_fd);
    result.exit_code = wait_exit(process.pid);
    return result;
}

bool fashion_mnist_installed() {
    return std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz");
}

} // namespace traindeck::test
