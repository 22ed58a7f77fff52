// Environment and spawn_process: edited environments reach the child exactly, options become what the kernel shows
// of the child (its session, its blocked signals, its output), and a program that cannot start is an errno.
#include "process.h"
#include "tempfolder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>

#include <sys/wait.h>
#include <unistd.h>

using namespace traindeck;
using namespace traindeck::test;

namespace {

int wait_for(pid_t pid) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string proc_status_field(pid_t pid, const std::string& field) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(in, line);)
        if (line.rfind(field + ":", 0) == 0)
            return line.substr(field.size() + 1);
    return {};
}

// The session id is field 6 of /proc/PID/stat (after the parenthesised command name).
long session_of(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::istringstream rest(text.substr(text.rfind(')') + 2));
    std::string state;
    long parent = 0, group = 0, session = 0;
    rest >> state >> parent >> group >> session;
    return session;
}

} // namespace

TEST(Environment, SetReplacesEraseRemovesKeepOnlyFilters) {
    Environment env = Environment::from_entries({"PATH=/bin", "HOME=/home/a", "SLURM_JWT=secret", "broken", "EMPTY="});
    EXPECT_EQ(env.entries(), (std::vector<std::string>{"PATH=/bin", "HOME=/home/a", "SLURM_JWT=secret", "EMPTY="}));
    EXPECT_EQ(env.get("EMPTY"), "");
    EXPECT_EQ(env.get("broken"), std::nullopt);
    env.set("PATH", "/usr/bin:/bin");
    env.set("RANK", "3");
    EXPECT_EQ(env.get("PATH"), "/usr/bin:/bin");
    EXPECT_EQ(env.entries().size(), 5u); // PATH replaced in place, RANK appended
    env.erase("SLURM_JWT");
    EXPECT_EQ(env.get("SLURM_JWT"), std::nullopt);
    env.keep_only([](std::string_view key) { return key != "HOME"; });
    EXPECT_EQ(env.entries(), (std::vector<std::string>{"PATH=/usr/bin:/bin", "EMPTY=", "RANK=3"}));
    EXPECT_EQ(Environment::key_of("A=b=c"), "A");
}

TEST(Environment, CurrentIsThisProcesssEnvironment) {
    ::setenv("TRAINDECK_COMMON_TEST", "value with = sign", 1);
    EXPECT_EQ(Environment::current().get("TRAINDECK_COMMON_TEST"), "value with = sign");
    ::unsetenv("TRAINDECK_COMMON_TEST");
}

TEST(SpawnProcess, TheChildGetsExactlyTheGivenEnvironmentAndWritesToTheOutputFile) {
    TempFolder folder;
    SpawnOptions options;
    options.argv = {"/usr/bin/env"};
    options.environment = Environment::from_entries({"ONLY=this", "AND=that"});
    options.output_path = folder.file("out.log");
    options.stdin_path = "/dev/null";
    int error_number = -1;
    const pid_t pid = spawn_process(options, error_number);
    ASSERT_GT(pid, 0) << std::strerror(error_number);
    EXPECT_EQ(error_number, 0);
    EXPECT_EQ(wait_for(pid), 0);
    EXPECT_EQ(read_file(folder.file("out.log")), "ONLY=this\nAND=that\n");
}

TEST(SpawnProcess, SearchesPathOnlyWhenAskedAndReportsWhatCouldNotStart) {
    SpawnOptions options;
    options.argv = {"true"};
    int error_number = 0;
    EXPECT_EQ(spawn_process(options, error_number), -1); // not a path, and PATH is not searched
    EXPECT_EQ(error_number, ENOENT);
    options.search_path = true;
    const pid_t pid = spawn_process(options, error_number);
    ASSERT_GT(pid, 0) << std::strerror(error_number);
    EXPECT_EQ(wait_for(pid), 0);
    options.argv = {};
    EXPECT_EQ(spawn_process(options, error_number), -1);
    EXPECT_EQ(error_number, EINVAL);
}

TEST(SpawnProcess, RedirectedFdsCarryStdoutAndStderr) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    SpawnOptions options;
    options.argv = {"/bin/ls", "/nonexistent-traindeck-path", "/"};
    options.fds = {{fds[1], 1}, {fds[1], 2}};
    int error_number = 0;
    const pid_t pid = spawn_process(options, error_number);
    ::close(fds[1]);
    ASSERT_GT(pid, 0);
    std::string output;
    char buffer[4096];
    for (ssize_t n; (n = ::read(fds[0], buffer, sizeof(buffer))) > 0;)
        output.append(buffer, static_cast<size_t>(n));
    ::close(fds[0]);
    EXPECT_NE(wait_for(pid), 0);
    EXPECT_NE(output.find("nonexistent-traindeck-path"), std::string::npos) << output; // stderr
    EXPECT_NE(output.find("usr"), std::string::npos) << output;                        // stdout
}

TEST(SpawnProcess, ANewSessionAndBlockedSignalsAreWhatTheKernelShows) {
    SpawnOptions options;
    options.argv = {"/bin/sleep", "30"};
    options.new_session = true;
    options.blocked_signals = {SIGTERM, SIGHUP};
    int error_number = 0;
    const pid_t pid = spawn_process(options, error_number);
    ASSERT_GT(pid, 0) << std::strerror(error_number);
    // posix_spawn returns once the child has exec'ed (glibc spawns with CLONE_VFORK), so /proc already shows what
    // the child runs with; sleep never unblocks anything.
    EXPECT_EQ(session_of(pid), pid);
    EXPECT_NE(session_of(pid), session_of(::getpid()));
    const std::string blocked = proc_status_field(pid, "SigBlk");
    const unsigned long long mask = std::stoull(blocked, nullptr, 16);
    EXPECT_EQ(mask, (1ull << (SIGTERM - 1)) | (1ull << (SIGHUP - 1))) << blocked;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
}
