#pragma once
// Starting other programs: an environment edited by key, and one posix_spawn wrapper for every process TrainDeck
// starts (the worker from the console, the job shim from the worker, Slurm's commands, the engine's rank processes,
// the tests' workers). Always argv, never a shell; a failure to start is an errno, never an exception.
#include <sys/types.h>

#include <atomic>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace traindeck {

// "KEY=value" entries, in order, each key at most once.
class Environment {
public:
    Environment() = default;
    static Environment current(); // this process's environment
    static Environment from_entries(const std::vector<std::string>& entries);

    std::optional<std::string> get(std::string_view key) const;
    void set(std::string_view key, std::string_view value);    // replaces, or appends a new key
    void set_entries(const std::vector<std::string>& entries); // each "KEY=value" as set(); one without '=' is ignored
    void erase(std::string_view key);
    template <typename Keep> // bool(std::string_view key)
    void keep_only(Keep keep) {
        std::erase_if(entries_, [&](const std::string& entry) { return !keep(key_of(entry)); });
    }
    const std::vector<std::string>& entries() const { return entries_; }

    static std::string_view key_of(std::string_view entry) { return entry.substr(0, entry.find('=')); }

private:
    std::vector<std::string> entries_;
};

// argv and envp as exec and posix_spawn take them: pointers into strings this object owns, ending in nullptr.
class CStringArray {
public:
    explicit CStringArray(std::vector<std::string> words);
    char* const* data() const { return pointers_.data(); }

private:
    std::vector<std::string> words_;
    std::vector<char*> pointers_;
};

struct SpawnOptions {
    std::vector<std::string> argv;          // argv[0] is the program
    std::optional<Environment> environment; // none: this process's own
    bool search_path = false;               // argv[0] looked up in PATH (posix_spawnp)
    bool new_session = false;               // setsid: the child leaves our process group and terminal
    std::vector<int> blocked_signals;       // blocked in the child until it unblocks them
    std::string stdin_path;                 // opened read-only as fd 0; empty: inherited
    std::string output_path;                // appended to as fd 1 and 2 (mode 0600); empty: inherited
    std::string cwd;                        // the child's working folder; empty: ours
    std::vector<std::pair<int, int>> fds;   // {fd here, fd in the child}, dup'ed last: a pipe as 1 and 2, metrics as 3
};

// The child's pid, or -1 with error_number set to what failed (ENOENT: no such program, ...).
pid_t spawn_process(const SpawnOptions& options, int& error_number);

// A short-lived tool run to its end, its output read: git, dpkg-query, nvidia-smi, sbatch.
struct ProgramResult {
    bool started = false;   // false: it could not be started (error says why)
    bool timed_out = false; // killed (SIGKILL) after the time limit
    int exit_code = -1;     // when it exited; -1 when a signal ended it
    std::string output;     // stdout (with stderr too when merge_stderr), at most max_output bytes
    std::string errors;     // stderr when not merged, at most 64 KiB
    bool truncated = false; // output went past max_output (the rest was read and dropped)
    bool aborted = false;   // killed (SIGKILL) because limits.abort was set
    std::string error;      // why it could not be started
    bool ok() const { return started && !timed_out && !aborted && exit_code == 0; }
};
struct ProgramLimits {
    double seconds = 30;
    size_t max_output = 16 << 20;
    bool merge_stderr = false;
    // Looked at every 100 ms when given: true kills the program and returns at once (a backend that is going away).
    const std::atomic<bool>* abort = nullptr;
};
// Runs options.argv (the pipes replace options.fds 1 and 2; stdin is /dev/null unless stdin_path says otherwise) and
// waits for it, at most limits.seconds.
ProgramResult run_program(SpawnOptions options, const ProgramLimits& limits = {});

} // namespace traindeck
