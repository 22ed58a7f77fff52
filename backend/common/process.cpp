// posix_spawn with file actions and attributes built from SpawnOptions; Environment over "KEY=value" strings.
#include "process.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <utility>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace traindeck {

Environment Environment::current() {
    Environment env;
    for (char** entry = environ; *entry; ++entry)
        env.entries_.emplace_back(*entry);
    return env;
}

Environment Environment::from_entries(const std::vector<std::string>& entries) {
    Environment env;
    env.set_entries(entries);
    return env;
}

std::optional<std::string> Environment::get(std::string_view key) const {
    for (const std::string& entry : entries_)
        if (key_of(entry) == key && entry.size() > key.size())
            return entry.substr(key.size() + 1);
    return std::nullopt;
}

void Environment::set(std::string_view key, std::string_view value) {
    std::string entry = std::string(key) + "=" + std::string(value);
    for (std::string& existing : entries_)
        if (key_of(existing) == key) {
            existing = std::move(entry);
            return;
        }
    entries_.push_back(std::move(entry));
}

void Environment::set_entries(const std::vector<std::string>& entries) {
    for (const std::string& entry : entries) {
        const size_t eq = entry.find('=');
        if (eq != std::string::npos)
            set(std::string_view(entry).substr(0, eq), std::string_view(entry).substr(eq + 1));
    }
}

void Environment::erase(std::string_view key) {
    std::erase_if(entries_, [&](const std::string& entry) { return key_of(entry) == key; });
}

CStringArray::CStringArray(std::vector<std::string> words) : words_(std::move(words)) {
    for (std::string& word : words_)
        pointers_.push_back(word.data());
    pointers_.push_back(nullptr);
}

pid_t spawn_process(const SpawnOptions& options, int& error_number) {
    error_number = 0;
    if (options.argv.empty()) {
        error_number = EINVAL;
        return -1;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (!options.stdin_path.empty())
        posix_spawn_file_actions_addopen(&actions, 0, options.stdin_path.c_str(), O_RDONLY, 0);
    if (!options.output_path.empty()) {
        posix_spawn_file_actions_addopen(&actions, 1, options.output_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
        posix_spawn_file_actions_adddup2(&actions, 1, 2);
    }
    for (const auto& [here, in_child] : options.fds)
        posix_spawn_file_actions_adddup2(&actions, here, in_child);
    if (!options.cwd.empty())
        posix_spawn_file_actions_addchdir_np(&actions, options.cwd.c_str());
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    short flags = 0;
    if (options.new_session)
        flags |= POSIX_SPAWN_SETSID;
    if (!options.blocked_signals.empty()) {
        sigset_t blocked;
        sigemptyset(&blocked);
        for (int signal : options.blocked_signals)
            sigaddset(&blocked, signal);
        posix_spawnattr_setsigmask(&attributes, &blocked);
        flags |= POSIX_SPAWN_SETSIGMASK;
    }
    posix_spawnattr_setflags(&attributes, flags);
    const Environment inherited = options.environment ? Environment() : Environment::current();
    const CStringArray argv(options.argv);
    const CStringArray envp((options.environment ? *options.environment : inherited).entries());
    pid_t pid = -1;
    const auto spawn = options.search_path ? ::posix_spawnp : ::posix_spawn;
    const int rc = spawn(&pid, options.argv.front().c_str(), &actions, &attributes, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (rc != 0) {
        error_number = rc;
        return -1;
    }
    return pid;
}

ProgramResult run_program(SpawnOptions options, const ProgramLimits& limits) {
    ProgramResult result;
    int out[2] = {-1, -1}, err[2] = {-1, -1};
    if (::pipe2(out, O_CLOEXEC) != 0 || (!limits.merge_stderr && ::pipe2(err, O_CLOEXEC) != 0)) {
        result.error = std::string("pipe: ") + std::strerror(errno);
        for (int fd : {out[0], out[1]})
            if (fd >= 0)
                ::close(fd);
        return result;
    }
    if (options.stdin_path.empty())
        options.stdin_path = "/dev/null";
    options.output_path.clear();
    options.fds = {{out[1], 1}, {limits.merge_stderr ? out[1] : err[1], 2}};
    int error_number = 0;
    const pid_t pid = spawn_process(options, error_number);
    ::close(out[1]);
    if (err[1] >= 0)
        ::close(err[1]);
    if (pid < 0) {
        ::close(out[0]);
        if (err[0] >= 0)
            ::close(err[0]);
        result.error = "cannot run " + options.argv.front() + ": " + std::strerror(error_number);
        return result;
    }
    result.started = true;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limits.seconds);
    pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
    const int count = err[0] >= 0 ? 2 : 1;
    char buffer[65536];
    for (int open = count; open > 0;) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            ::kill(pid, SIGKILL);
            result.timed_out = true;
            break;
        }
        if (limits.abort && limits.abort->load()) {
            ::kill(pid, SIGKILL);
            result.aborted = true;
            break;
        }
        const int ready =
            ::poll(fds, count, static_cast<int>(std::min<int64_t>(left.count(), limits.abort ? 100 : 1000)));
        if (ready < 0 && errno != EINTR)
            break;
        for (int i = 0; i < count; ++i) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            const ssize_t n = ::read(fds[i].fd, buffer, sizeof(buffer));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                fds[i].fd = -1;
                --open;
                continue;
            }
            std::string& into = i == 0 ? result.output : result.errors;
            const size_t cap = i == 0 ? limits.max_output : size_t(64 << 10);
            const size_t take = std::min(static_cast<size_t>(n), cap - std::min(cap, into.size()));
            into.append(buffer, take);
            if (take < static_cast<size_t>(n) && i == 0)
                result.truncated = true;
        }
    }
    ::close(out[0]);
    if (err[0] >= 0)
        ::close(err[0]);
    // A program that closed its output may still run: it too is held to the time limit.
    int status = 0;
    for (;;) {
        const pid_t done = ::waitpid(pid, &status, WNOHANG);
        if (done == pid || (done < 0 && errno != EINTR))
            break;
        if (done == 0 && std::chrono::steady_clock::now() >= deadline && !result.timed_out) {
            ::kill(pid, SIGKILL);
            result.timed_out = true;
        }
        if (done == 0 && limits.abort && limits.abort->load() && !result.aborted) {
            ::kill(pid, SIGKILL);
            result.aborted = true;
        }
        if (done == 0)
            ::usleep(2000);
    }
    if (WIFEXITED(status))
        result.exit_code = WEXITSTATUS(status);
    return result;
}

} // namespace traindeck
