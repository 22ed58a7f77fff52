#pragma once
// Ending what a test started, by pid and never by a pattern (`pkill -f` would also hit another test's processes
// or the user's own): a worker from its state folder's STATE/pid, each job's process group from STATE/jobs/N/pid.
// A pid is signalled only while /proc says it is still the process the folder names (pids are reused).
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <sys/types.h>
#include <unistd.h>

namespace traindeck::test {

// Whether pid is a live (not zombie) process whose command line contains `needle`.
inline bool process_matches(pid_t pid, const std::string& needle) {
    if (pid <= 0)
        return false;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line))
        return false;
    // "pid (comm) S ...": the state follows the last ')' (comm may itself hold parentheses).
    const size_t close = line.rfind(')');
    if (close == std::string::npos || close + 2 >= line.size() || line[close + 2] == 'Z')
        return false;
    std::ifstream cmdline("/proc/" + std::to_string(pid) + "/cmdline");
    std::stringstream words;
    words << cmdline.rdbuf();
    std::string text = words.str();
    for (char& c : text)
        if (c == '\0')
            c = ' ';
    return text.find(needle) != std::string::npos;
}

inline pid_t pid_in(const std::string& path) {
    std::ifstream in(path);
    pid_t pid = -1;
    in >> pid;
    return in ? pid : -1;
}

// Sends `signal` to every job of the worker folder that still runs: to the job's whole process group, which the
// job shim leads (it runs in a session of its own and names the job's folder on its command line).
inline void signal_jobs(const std::string& state_dir, int signal) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(state_dir + "/jobs", ec)) {
        const pid_t job = pid_in(entry.path().string() + "/pid");
        if (job <= 0)
            continue;
        const pid_t group = ::getpgid(job);
        if (group > 1 && process_matches(group, entry.path().string()))
            ::kill(-group, signal);
        else if (process_matches(job, state_dir))
            ::kill(job, signal);
    }
}

// The worker of `state_dir` (SIGTERM, then SIGKILL after 10 s), then its jobs, which outlive their worker.
inline void reap_state_dir(const std::string& state_dir) {
    const pid_t worker = pid_in(state_dir + "/pid");
    if (process_matches(worker, "--state-dir " + state_dir)) {
        ::kill(worker, SIGTERM);
        for (int i = 0; i < 200 && process_matches(worker, state_dir); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        if (process_matches(worker, state_dir))
            ::kill(worker, SIGKILL);
    }
    signal_jobs(state_dir, SIGKILL);
}

} // namespace traindeck::test
