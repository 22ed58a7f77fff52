#include "workerprocess.h"

#include "process.h"

#include <chrono>
#include <cstdio>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace traindeck::test {

namespace fs = std::filesystem;

std::string worker_binary() { return TRAINDECK_WORKER_BINARY; }
std::string train_binary() { return TRAINDECK_TRAIN_BINARY; }
std::string source_dir() { return TRAINDECK_SOURCE_DIR; }

bool torch_available() {
    static const bool available = std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0;
    return available;
}

std::vector<std::string> test_gpus(int count) {
    return {std::string("LD_LIBRARY_PATH=") + TRAINDECK_TEST_NVML_DIR, "TRAINDECK_TEST_GPUS=" + std::to_string(count)};
}

WorkerProcess::WorkerProcess(std::vector<std::string> extra_args, std::string state_dir, std::vector<std::string> env)
    : args_(std::move(extra_args)), env_(std::move(env)) {
    if (state_dir.empty()) {
        std::string pattern = (fs::temp_directory_path() / "traindeck-worker-test-XXXXXX").string();
        state_dir_ = ::mkdtemp(pattern.data());
        owns_state_dir_ = true;
    } else {
        state_dir_ = std::move(state_dir);
    }
    output_path_ = state_dir_ + "/worker-output.log";
    start();
}

WorkerProcess::~WorkerProcess() {
    if (pid_ > 0) {
        // Cancel what is still running so no job outlives the test, then stop the worker.
        if (client_) {
            const auto jobs = client().get("/v1/jobs").json();
            if (jobs.is_object())
                for (const auto& job : jobs["jobs"])
                    if (job["state"] == "running" || job["state"] == "queued")
                        client().post("/v1/jobs/" + std::to_string(job["id"].get<int64_t>()) + "/cancel", std::string("{}"));
            for (const auto& job : jobs.is_object() ? jobs["jobs"] : nlohmann::json::array())
                wait_for_state(job["id"].get<int64_t>(), {"succeeded", "failed", "cancelled", "stopped"}, 10);
        }
        client_.reset(); // an idle keep-alive connection would hold a server thread until its timeout
        ::kill(pid_, SIGTERM);
        int status = 0;
        for (int i = 0; i < 200 && ::waitpid(pid_, &status, WNOHANG) == 0; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        if (::waitpid(pid_, &status, WNOHANG) == 0) {
            std::fprintf(stderr, "worker %d ignored SIGTERM for 10 s; killing it\n", pid_);
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, &status, 0);
        }
    }
    if (owns_state_dir_) {
        std::error_code ec;
        fs::remove_all(state_dir_, ec);
    }
}

bool WorkerProcess::start() {
    ::unlink((state_dir_ + "/port").c_str());
    std::vector<std::string> words = {worker_binary(), "--listen", "127.0.0.1:0", "--state-dir", state_dir_};
    words.insert(words.end(), args_.begin(), args_.end());
    SpawnOptions worker;
    worker.argv = words;
    worker.output_path = output_path_;
    if (!env_.empty()) {
        worker.environment = Environment::current();
        worker.environment->set_entries(env_);
    }
    int error_number = 0;
    const pid_t pid = spawn_process(worker, error_number);
    pid_ = pid;
    client_.reset();
    for (int i = 0; i < 200 && pid_ > 0; ++i) {
        std::ifstream port_file(state_dir_ + "/port");
        if (port_file >> port_) {
            std::ifstream token_file(state_dir_ + "/token");
            token_file >> token_;
            return true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    return false;
}

void WorkerProcess::kill_hard() {
    if (pid_ <= 0)
        return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    client_.reset();
}

bool WorkerProcess::restart() {
    kill_hard();
    return start();
}

client::WorkerClient& WorkerProcess::client() {
    if (!client_) {
        client_ = std::make_unique<client::WorkerClient>(url(), token_);
        if (!tls_ca_.empty())
            client_->set_tls("", tls_ca_);
    }
    return *client_;
}

int64_t WorkerProcess::submit(const nlohmann::json& request) {
    const client::HttpResponse response = client().post("/v1/jobs", request);
    if (response.status != 201) {
        last_error = std::to_string(response.status) + " " + response.message();
        return 0;
    }
    return response.json()["id"].get<int64_t>();
}

nlohmann::json WorkerProcess::job(int64_t id) { return client().get("/v1/jobs/" + std::to_string(id)).json(); }

std::vector<nlohmann::json> WorkerProcess::drain(int64_t job, double timeout_s) {
    std::vector<nlohmann::json> events;
    int64_t after = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < deadline) {
        const auto response = client().get("/v1/jobs/" + std::to_string(job) + "/events?after=" + std::to_string(after) +
                                               "&wait_ms=2000",
                                           10000);
        const auto reply = response.json();
        if (!reply.is_object() || !reply.contains("next")) {
            last_error = response.message() + ": " + response.body.substr(0, 300);
            std::fprintf(stderr, "drain: %s\n", last_error.c_str());
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            continue;
        }
        for (const auto& event : reply["events"])
            events.push_back(event);
        after = reply["next"].get<int64_t>();
        const std::string state = reply["state"];
        if (reply["events"].empty() &&
            (state == "succeeded" || state == "failed" || state == "cancelled" || state == "stopped"))
            return events;
    }
    return {};
}

nlohmann::json WorkerProcess::wait_for_state(int64_t id, const std::vector<std::string>& states, double timeout_s) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < deadline) {
        nlohmann::json j = job(id);
        if (j.is_object())
            for (const auto& state : states)
                if (j["state"] == state)
                    return j;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return nullptr;
}

} // namespace traindeck::test
