#pragma once
// Helpers shared by the engine tests: temp folders that clean up, and running traindeck-train as a
// real child process with its output captured.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace traindeck::test {

class TempDir {
public:
    TempDir();
    ~TempDir();
    const std::filesystem::path& path() const { return path_; }
    std::string file(const std::string& name) const { return (path_ / name).string(); }

private:
    std::filesystem::path path_;
};

void write_text(const std::string& path, const std::string& text);

struct ProcessResult {
    int exit_code = -1;
    std::string out, err;
    // The metrics protocol records found on stdout ("@traindeck " lines).
    std::vector<nlohmann::json> records() const;
    std::vector<nlohmann::json> records(const std::string& type) const;
};

// Runs traindeck-train with args; env entries are added to the environment. With metrics_path set, the
// child gets that file open as fd 3 and TRAINDECK_METRICS_FD=3.
ProcessResult run_trainer(const std::vector<std::string>& args, const std::vector<std::string>& env = {},
                          const std::string& metrics_path = {});

// Starts traindeck-train in the background; returns its pid and the read end of its stdout.
struct RunningProcess {
    int pid = -1;
    int stdout_fd = -1;
};
RunningProcess start_trainer(const std::vector<std::string>& args);
// Reads the rest of stdout and waits; the exit code, or 128+signal.
ProcessResult finish(RunningProcess& process);
// Reads stdout until a line contains needle (or EOF); the text read so far is appended to out.
bool read_until(RunningProcess& process, const std::string& needle, std::string& out);

bool fashion_mnist_installed();

} // namespace traindeck::test
