#pragma once
// A real traindeck-worker process on an ephemeral loopback port, for tests and benchmarks.
#include "workerclient.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

namespace traindeck::test {

class WorkerProcess {
public:
    // Starts the worker with a state folder of its own (kept across restart()), extra arguments and extra
    // environment entries ("KEY=value", added to this process's own).
    explicit WorkerProcess(std::vector<std::string> extra_args = {}, std::string state_dir = {},
                           std::vector<std::string> env = {});
    ~WorkerProcess();

    bool running() const { return pid_ > 0; }
    const std::string& state_dir() const { return state_dir_; }
    const std::string& token() const { return token_; }
    std::string url() const {
        return (tls_ca_.empty() ? "http://127.0.0.1:" : "https://127.0.0.1:") + std::to_string(port_);
    }
    // A worker started with --tls-cert: its client speaks HTTPS, trusting that certificate.
    void use_tls(const std::string& ca_file) {
        tls_ca_ = ca_file;
        client_.reset();
    }
    int pid() const { return pid_; }
    const std::string& output() const { return output_path_; }

    void kill_hard();   // SIGKILL, as a crash would
    bool restart();     // the same state folder, a new process (and port)
    client::WorkerClient& client();

    // Submits and returns the id (0 on failure, with the reply in last_error).
    int64_t submit(const nlohmann::json& request);
    // Every event of the job, waiting until it is finished (or timeout); empty if it times out.
    std::vector<nlohmann::json> drain(int64_t job, double timeout_s = 120);
    nlohmann::json job(int64_t id);
    // Waits until the job's state is one of `states`; returns the job JSON (null on timeout).
    nlohmann::json wait_for_state(int64_t id, const std::vector<std::string>& states, double timeout_s = 60);
    std::string last_error;

private:
    bool start();

    std::vector<std::string> args_, env_;
    std::string state_dir_, token_, output_path_;
    bool owns_state_dir_ = false;
    int pid_ = -1;
    int port_ = 0;
    std::string tls_ca_;
    std::unique_ptr<client::WorkerClient> client_;
};

// Paths to the built programs and the source tree.
std::string worker_binary();
std::string train_binary();
std::string source_dir();
bool torch_available();
// The environment entries under which a worker sees `count` GPUs of NVML's test double (tests/worker/testnvml.cpp).
std::vector<std::string> test_gpus(int count);

} // namespace traindeck::test
