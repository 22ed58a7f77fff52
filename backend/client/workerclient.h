#pragma once
// The one client of the worker protocol (libcurl): used by the console's backend plugins, the tests and the
// benchmarks. One WorkerClient per thread; it keeps its connection alive between calls. A request can be abandoned
// from another thread through the abort flag (set_abort): it is looked at every 50 ms, so closing the console or
// cancelling an upload never waits for a slow or silent worker.
#include <nlohmann/json.hpp>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace traindeck::client {

struct HttpResponse {
    int status = 0;       // 0 when the request never got an answer
    std::string body;
    std::string error;    // transport error (connection refused, TLS failure, timeout), "" otherwise
    bool ok() const { return error.empty() && status >= 200 && status < 300; }
    nlohmann::json json() const;   // the body parsed; null when it is not JSON
    std::string message() const;   // error, or the server's {"error": ...}, or the status
};

class WorkerClient {
public:
    // base_url like "http://127.0.0.1:7878" or "https://gpu-box:7878".
    WorkerClient(std::string base_url, std::string token);
    ~WorkerClient();
    WorkerClient(const WorkerClient&) = delete;
    WorkerClient& operator=(const WorkerClient&) = delete;

    // HTTPS: pin the server's public key ("sha256//BASE64"), as curl's CURLOPT_PINNEDPUBLICKEY takes it, and/or
    // trust a CA file (a self-signed worker certificate).
    void set_tls(std::string pinned_public_key, std::string ca_file, bool verify_host = true);

    // Trust on first use: connects without verifying the certificate and returns the server's public-key pin
    // ("sha256//BASE64", the form set_tls takes) for the caller to show, store and use from then on.
    std::string fetch_public_key_pin(std::string& error);

    // A new client with the same address, token and TLS settings (one per thread).
    std::unique_ptr<WorkerClient> fork() const;

    // While *flag is true every request (one under way, and the next ones) ends at once with error "interrupted".
    // Forks share the flag.
    void set_abort(std::shared_ptr<const std::atomic<bool>> flag) { abort_ = std::move(flag); }

    // The largest answer body read (0: any): a peer that sends more has its answer cut off with an error.
    void set_max_response_bytes(size_t bytes) { max_response_bytes_ = bytes; }

    // Connect through this Unix socket instead of the URL's host and port (the URL still names the request): an
    // SSH host's worker, reached through `ssh -L SOCKET:127.0.0.1:PORT`, whose socket only this user may open.
    void set_unix_socket(std::string path) { unix_socket_ = std::move(path); }

    // Extra request headers ("Name: value"); with an empty token no Authorization header is sent (slurmrestd).
    void set_headers(std::vector<std::string> headers) { headers_ = std::move(headers); }

    HttpResponse get(const std::string& path, long timeout_ms = 10000);
    HttpResponse del(const std::string& path, long timeout_ms = 10000) { return perform("DELETE", path, nullptr, timeout_ms); }
    HttpResponse put(const std::string& path, const std::string& body, const char* content_type, long timeout_ms = 60000);
    // A PUT whose body is size bytes of an open file from offset, read straight into libcurl's send buffer (no copy
    // of the whole body in memory). A file that ends early fails the request with an error that says so.
    HttpResponse put_file(const std::string& path, int fd, int64_t offset, int64_t size, const char* content_type,
                          long timeout_ms = 60000);
    HttpResponse post(const std::string& path, const std::string& body, long timeout_ms = 10000);
    HttpResponse post(const std::string& path, const nlohmann::json& body, long timeout_ms = 10000) {
        return post(path, body.dump(), timeout_ms);
    }

private:
    struct FileBody {
        int fd = -1;
        int64_t offset = 0, size = 0, sent = 0;
        bool short_file = false;
    };
    HttpResponse perform(const std::string& method, const std::string& path, const std::string* body, long timeout_ms,
                         const char* content_type = "application/json", FileBody* file = nullptr);

    std::string base_url_, token_, pinned_, ca_file_, unix_socket_;
    std::vector<std::string> headers_;
    size_t max_response_bytes_ = 0;
    bool verify_host_ = true;
    std::shared_ptr<const std::atomic<bool>> abort_;
    void* curl_ = nullptr;
    void* multi_ = nullptr; // drives curl_ so that a transfer can be left every 50 ms (abort_)
};

} // namespace traindeck::client
