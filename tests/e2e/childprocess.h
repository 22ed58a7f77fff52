#pragma once
// One program the chaos test starts, kills with SIGKILL and starts again with the same arguments: the worker agent
// and the console. Output goes to one log file that every start appends to, so that a failure can be read in the
// order it happened.
#include "reaper.h" // process_matches: nothing is killed on the strength of a number alone

#include <string>
#include <vector>

#include <sys/types.h>

namespace traindeck::test {

class ChildProcess {
public:
    // argv[0] is the program's path; environment entries ("NAME=value") are added to this process's own.
    ChildProcess(std::vector<std::string> argv, std::vector<std::string> environment, std::string log_path);
    ~ChildProcess(); // a process still running is killed: nothing outlives the test

    bool start();                    // false (and error()) when the program could not be started
    bool running();                  // reaps it when it has exited on its own
    void kill_hard();                // SIGKILL, as a crash or the OOM killer would, and reaped
    bool stop(double grace_seconds); // SIGTERM, then SIGKILL after the grace; true when it left on SIGTERM
    void set_argv(std::vector<std::string> argv) { argv_ = std::move(argv); }

    pid_t pid() const { return pid_; }
    int starts() const { return starts_; }
    const std::string& log_path() const { return log_path_; }
    const std::string& error() const { return error_; }
    std::string exit_description() const { return exit_; } // how it ended when it ended on its own
    std::string log_tail(size_t bytes = 4000) const;

private:
    std::vector<std::string> argv_, environment_;
    std::string log_path_, error_, exit_;
    pid_t pid_ = -1;
    int starts_ = 0;
};

} // namespace traindeck::test
