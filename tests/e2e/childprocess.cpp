// ChildProcess (childprocess.h): posix_spawn with the log file as stdout and stderr, and waitpid for every end.
#include "childprocess.h"

#include "process.h"

#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace traindeck::test {

namespace {

std::string describe_status(int status) {
    if (WIFSIGNALED(status))
        return std::string("killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
               strsignal(WTERMSIG(status)) + ")";
    return "exit code " + std::to_string(WEXITSTATUS(status));
}

} // namespace

ChildProcess::ChildProcess(std::vector<std::string> argv, std::vector<std::string> environment, std::string log_path)
    : argv_(std::move(argv)), environment_(std::move(environment)), log_path_(std::move(log_path)) {}

ChildProcess::~ChildProcess() {
    if (pid_ > 0)
        kill_hard();
}

bool ChildProcess::start() {
    if (running()) {
        error_ = "already running as pid " + std::to_string(pid_);
        return false;
    }
    SpawnOptions child;
    child.argv = argv_;
    // The given entries replace this process's variables of the same name.
    child.environment = Environment::current();
    child.environment->set_entries(environment_);
    child.stdin_path = "/dev/null";
    child.output_path = log_path_;

    {
        std::ofstream log(log_path_, std::ios::app);
        log << "---- start " << (starts_ + 1) << ":";
        for (const auto& word : argv_)
            log << " " << word;
        log << "\n";
    }
    int rc = 0;
    const pid_t pid = spawn_process(child, rc);
    if (pid < 0) {
        error_ = "cannot start " + argv_[0] + ": " + std::strerror(rc);
        return false;
    }
    pid_ = pid;
    exit_.clear();
    ++starts_;
    return true;
}

bool ChildProcess::running() {
    if (pid_ <= 0)
        return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        exit_ = describe_status(status);
        pid_ = -1;
        return false;
    }
    return true;
}

void ChildProcess::kill_hard() {
    if (pid_ <= 0)
        return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
}

bool ChildProcess::stop(double grace_seconds) {
    if (!running())
        return false;
    ::kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_seconds);
    while (std::chrono::steady_clock::now() < deadline) {
        if (!running())
            return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    kill_hard();
    return false;
}

std::string ChildProcess::log_tail(size_t bytes) const {
    std::ifstream in(log_path_);
    std::stringstream all;
    all << in.rdbuf();
    const std::string text = all.str();
    return text.size() > bytes ? "…" + text.substr(text.size() - bytes) : text;
}

} // namespace traindeck::test
