#include "workerserver.h"

#include "jobshim.h"
#include "sqlitedb.h"

#include <httplib.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <regex>
#include <fstream>
#include <sstream>

#include <sys/stat.h>

namespace traindeck::worker {

using nlohmann::json;

namespace {

void reply(httplib::Response& res, int status, const json& body) {
    res.status = status;
    res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void error_reply(httplib::Response& res, int status, const std::string& message) { reply(res, status, {{"error", message}}); }

// Each HTTP thread reads through a read-only connection of its own; WAL lets them read while the loop writes.
Database& reader(const std::string& path) {
    thread_local Database db;
    thread_local std::string opened;
    if (opened != path) {
        db = Database();
        if (!db.open(path, true).empty())
            throw std::runtime_error("cannot open " + path + " for reading");
        opened = path;
    }
    return db;
}

json job_json(const Statement& row) {
    json job = {{"id", row.integer(0)},         {"name", row.text(1)},         {"request", json::parse(row.text_view(2))},
                {"state", row.text(3)},         {"reason", row.text(4)},       {"priority", row.integer(5)},
                {"restarts", row.integer(6)},   {"last_seq", row.integer(7) - 1}, {"pid", row.integer(8)},
                {"gpus", json::parse(row.text_view(9))}, {"spend", row.real(10)}, {"run_seconds", row.real(11)},
                {"warnings", row.integer(12)},  {"exit_code", row.integer(13)}, {"submitted", row.real(14)},
                {"started", row.real(15)},      {"finished", row.real(16)}};
    return job;
}

constexpr int64_t kManifestMaxBytes = 64 << 20;

const std::regex kCheckpointName(R"(ckpt-\d{10}\.tdck)");

bool too_large(const httplib::Request& req, httplib::Response& res, int64_t limit) {
    if (static_cast<int64_t>(req.body.size()) <= limit)
        return false;
    error_reply(res, 413, "request body too large (at most " + std::to_string(limit) + " bytes here)");
    return true;
}

constexpr const char* kJobColumns = "SELECT id, name, request, state, reason, priority, restarts, next_seq, pid, gpus, spend, "
                                    "run_seconds, warnings, exit_code, submitted, started, finished FROM jobs";

bool parse_int(const std::string& text, int64_t& out) {
    try {
        size_t used = 0;
        out = std::stoll(text, &used);
        return used == text.size();
    } catch (...) {
        return false;
    }
}

} // namespace

std::string load_or_create_token(const std::string& state_dir, bool& created, std::string& error) {
    created = false;
    const std::string path = state_dir + "/token";
    std::ifstream in(path);
    std::string token;
    if (in >> token && token.size() >= 32)
        return token;
    unsigned char bytes[32];
    if (RAND_bytes(bytes, sizeof(bytes)) != 1) {
        error = "cannot generate a token (OpenSSL RAND_bytes failed)";
        return {};
    }
    static const char* hex = "0123456789abcdef";
    for (unsigned char b : bytes) {
        token += hex[b >> 4];
        token += hex[b & 15];
    }
    const mode_t old_mask = ::umask(077);
    const bool ok = write_file_atomically(path, token + "\n", error);
    ::umask(old_mask);
    if (!ok)
        return {};
    ::chmod(path.c_str(), 0600);
    created = true;
    return token;
}

WorkerServer::WorkerServer(Supervisor& supervisor, EventBoard& board, std::string token)
    : supervisor_(supervisor), board_(board), token_(std::move(token)) {}

WorkerServer::~WorkerServer() = default;

std::string WorkerServer::bind(const std::string& host, int port, const std::string& cert, const std::string& key) {
    if (!cert.empty() || !key.empty()) {
        if (cert.empty() || key.empty())
            return "TLS needs both --tls-cert and --tls-key";
        auto tls = std::make_unique<httplib::SSLServer>(cert.c_str(), key.c_str());
        if (!tls->is_valid())
            return "cannot load the TLS certificate " + cert + " or key " + key + " (PEM files expected)";
        server_ = std::move(tls);
    } else {
        server_ = std::make_unique<httplib::Server>();
    }
    // Long-polling readers each hold a thread while they wait: give the pool room for many.
    server_->new_task_queue = [] { return new httplib::ThreadPool(96); };
    // Chunks and manifests are larger than any JSON request: the transport allows the largest, each endpoint
    // checks its own limit (jobs: max_body_bytes).
    server_->set_payload_max_length(static_cast<size_t>(std::max<int64_t>(supervisor_.config().max_body_bytes, kManifestMaxBytes)));
    server_->set_keep_alive_max_count(100000);
    server_->set_read_timeout(30, 0);
    server_->set_write_timeout(30, 0);
    routes();
    port_ = port == 0 ? server_->bind_to_any_port(host.c_str()) : (server_->bind_to_port(host.c_str(), port) ? port : -1);
    if (port_ <= 0)
        return "cannot listen on " + host + ":" + std::to_string(port) + " (in use, or not an address of this machine)";
    return {};
}

void WorkerServer::run() { server_->listen_after_bind(); }

void WorkerServer::stop() {
    if (server_)
        server_->stop();
}

void WorkerServer::routes() {
    httplib::Server& s = *server_;
    s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
        const std::string header = req.get_header_value("Authorization");
        const std::string expected = "Bearer " + token_;
        if (header.size() != expected.size() || CRYPTO_memcmp(header.data(), expected.data(), expected.size()) != 0) {
            res.set_header("WWW-Authenticate", "Bearer");
            error_reply(res, 401, header.empty() ? "missing \"Authorization: Bearer <token>\" (the token is in the worker's state folder)"
                                                 : "wrong token");
            return httplib::Server::HandlerResponse::Handled;
        }
        return httplib::Server::HandlerResponse::Unhandled;
    });
    s.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr error) {
        std::string message = "internal error";
        try {
            std::rethrow_exception(error);
        } catch (const std::exception& e) {
            message = e.what();
        } catch (...) {
        }
        error_reply(res, 500, message);
    });
    s.set_error_handler([](const httplib::Request&, httplib::Response& res) {
        if (res.body.empty()) {
            if (res.status == 413)
                error_reply(res, 413, "request body too large");
            else if (res.status == 404)
                error_reply(res, 404, "no such endpoint (see /v1/...)");
            else
                error_reply(res, res.status, "request failed");
        }
    });

    s.Get("/v1/health", [this](const httplib::Request&, httplib::Response& res) {
        reply(res, 200, {{"ok", true}, {"service", "traindeck-worker"}, {"api", 1}, {"pid", ::getpid()}});
    });
    s.Get("/v1/resources", [this](const httplib::Request&, httplib::Response& res) {
        reply(res, 200, supervisor_.resources());
    });
    s.Post("/v1/jobs", [this](const httplib::Request& req, httplib::Response& res) {
        if (too_large(req, res, supervisor_.config().max_body_bytes))
            return;
        const json body = json::parse(req.body, nullptr, false);
        if (body.is_discarded())
            return error_reply(res, 400, "the body is not valid JSON");
        JobRequest request;
        std::string error;
        if (!parse_job_request(body, request, error))
            return error_reply(res, 400, error);
        const Supervisor::Result result = supervisor_.submit(request);
        reply(res, result.status, result.body);
    });
    s.Get("/v1/jobs", [this](const httplib::Request& req, httplib::Response& res) {
        Database& db = reader(supervisor_.database_path());
        const std::string state = req.get_param_value("state");
        Statement select = db.prepare(std::string(kJobColumns) + (state.empty() ? "" : " WHERE state=?") + " ORDER BY id");
        if (!state.empty())
            select.bind(1, state);
        json jobs = json::array();
        while (select.step())
            jobs.push_back(job_json(select));
        reply(res, 200, {{"jobs", jobs}});
    });
    s.Get(R"(/v1/jobs/(\d+))", [this](const httplib::Request& req, httplib::Response& res) {
        Database& db = reader(supervisor_.database_path());
        Statement select = db.prepare(std::string(kJobColumns) + " WHERE id=?");
        select.bind(1, static_cast<int64_t>(std::stoll(req.matches[1])));
        if (!select.step())
            return error_reply(res, 404, "no job " + std::string(req.matches[1]));
        reply(res, 200, job_json(select));
    });
    s.Post(R"(/v1/jobs/(\d+)/cancel)", [this](const httplib::Request& req, httplib::Response& res) {
        const Supervisor::Result result = supervisor_.cancel(std::stoll(req.matches[1]));
        reply(res, result.status, result.body);
    });
    s.Get(R"(/v1/jobs/(\d+)/checkpoints)", [this](const httplib::Request& req, httplib::Response& res) {
        const std::string dir = supervisor_.config().state_dir + "/jobs/" + std::string(req.matches[1]) + "/checkpoints";
        std::error_code ec;
        if (!std::filesystem::is_directory(dir, ec))
            return error_reply(res, 404, "no job " + std::string(req.matches[1]) + " with checkpoints on this worker");
        json list = json::array();
        for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
            const std::string name = entry.path().filename().string();
            if (std::regex_match(name, kCheckpointName))
                list.push_back({{"name", name}, {"step", std::stoll(name.substr(5, 10))}, {"bytes", entry.file_size(ec)}});
        }
        std::sort(list.begin(), list.end(), [](const json& a, const json& b) { return a["step"] < b["step"]; });
        reply(res, 200, {{"checkpoints", list}});
    });
    // A checkpoint's bytes (the trainer wrote it atomically, so a listed name is always a whole file).
    s.Get(R"(/v1/jobs/(\d+)/checkpoints/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
        const std::string name = req.matches[2];
        if (!std::regex_match(name, kCheckpointName))
            return error_reply(res, 400, "checkpoint names look like ckpt-0000001234.tdck");
        const std::string path = supervisor_.config().state_dir + "/jobs/" + std::string(req.matches[1]) + "/checkpoints/" + name;
        std::ifstream in(path, std::ios::binary);
        if (!in)
            return error_reply(res, 404, "no checkpoint " + name + " (the trainer keeps only the newest few)");
        std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        res.status = 200;
        res.set_content(std::move(bytes), "application/octet-stream");
    });
    s.Post(R"(/v1/jobs/(\d+)/resume)", [this](const httplib::Request& req, httplib::Response& res) {
        const json body = req.body.empty() ? json::object() : json::parse(req.body, nullptr, false);
        if (!body.is_object() || (body.contains("budget") && !body["budget"].is_number()))
            return error_reply(res, 400, "the body must be {} or {\"budget\": number}");
        for (const auto& [key, value] : body.items())
            if (key != "budget")
                return error_reply(res, 400, "unknown field \"" + key + "\" (known: budget)");
        const Supervisor::Result result = supervisor_.resume(std::stoll(req.matches[1]), body.value("budget", 0.0));
        reply(res, result.status, result.body);
    });
    dataset_routes();

    // Events after a sequence number, oldest first. With wait_ms the call waits (long poll) until there is at
    // least one, or the job has ended. The reply says the last seq it carries ("next" asks after it).
    s.Get(R"(/v1/jobs/(\d+)/events)", [this](const httplib::Request& req, httplib::Response& res) {
        const int64_t job = std::stoll(req.matches[1]);
        int64_t after = 0, limit = 5000, wait_ms = 0;
        if ((req.has_param("after") && !parse_int(req.get_param_value("after"), after)) ||
            (req.has_param("limit") && !parse_int(req.get_param_value("limit"), limit)) ||
            (req.has_param("wait_ms") && !parse_int(req.get_param_value("wait_ms"), wait_ms)) || after < 0 ||
            limit <= 0 || wait_ms < 0)
            return error_reply(res, 400, "after, limit and wait_ms must be non-negative integers");
        limit = std::min<int64_t>(limit, 50000);
        wait_ms = std::min<int64_t>(wait_ms, 60000);
        Database& db = reader(supervisor_.database_path());
        Statement state = db.prepare("SELECT state, next_seq FROM jobs WHERE id=?");
        state.bind(1, job);
        if (!state.step())
            return error_reply(res, 404, "no job " + std::to_string(job));
        const bool finished = state.text(0) == "succeeded" || state.text(0) == "failed" ||
                              state.text(0) == "cancelled" || state.text(0) == "stopped";
        if (wait_ms > 0 && !finished && state.integer(1) - 1 <= after)
            board_.wait(job, after, static_cast<int>(wait_ms));
        state.reset();
        Statement select = db.prepare("SELECT seq, time, type, data FROM events WHERE job=? AND seq>? ORDER BY seq LIMIT ?");
        select.bind(1, job).bind(2, after).bind(3, limit);
        // Stored data is JSON already: splice it in rather than parse and print it again.
        std::string body = "{\"events\":[";
        int64_t last = after;
        bool first = true;
        while (select.step()) {
            last = select.integer(0);
            // to_chars: printf's %f costs more than the whole rest of an event on this path.
            char number[64];
            body += first ? "{\"seq\":" : ",{\"seq\":";
            body.append(number, std::to_chars(number, number + sizeof(number), last).ptr);
            body += ",\"time\":";
            body.append(number, std::to_chars(number, number + sizeof(number), select.real(1), std::chars_format::fixed, 6).ptr);
            body += ",\"type\":\"";
            body += select.text_view(2);
            body += "\",\"data\":";
            body += select.text_view(3);
            body += '}';
            first = false;
        }
        state.bind(1, job);
        state.step();
        const std::string job_state = state.text(0);
        body += "],\"next\":" + std::to_string(last) + ",\"state\":\"" + job_state + "\"}";
        res.status = 200;
        res.set_content(body, "application/json");
    });
}

// The content-addressed dataset store: ask which chunks are missing, send those, then put the manifest, which
// builds and verifies the version. Every step can be repeated, so an interrupted upload resumes by asking again.
void WorkerServer::dataset_routes() {
    httplib::Server& s = *server_;
    dataset::ContentStore& store = supervisor_.store();
    s.Post("/v1/chunks/missing", [&store](const httplib::Request& req, httplib::Response& res) {
        if (too_large(req, res, kManifestMaxBytes))
            return;
        const json body = json::parse(req.body, nullptr, false);
        if (!body.is_object() || !body.contains("chunks") || !body["chunks"].is_array())
            return error_reply(res, 400, "the body must be {\"chunks\": [sha256, ...]}");
        std::vector<std::string> hashes;
        for (const json& hash : body["chunks"]) {
            if (!hash.is_string() || !dataset::is_sha256_hex(hash.get<std::string>()))
                return error_reply(res, 400, "chunk hashes are 64 lower-case hex digits");
            hashes.push_back(hash);
        }
        reply(res, 200, {{"missing", store.missing_chunks(hashes)}});
    });
    s.Put(R"(/v1/chunks/([0-9a-f]{64}))", [&store](const httplib::Request& req, httplib::Response& res) {
        std::string error;
        const int status = store.put_chunk(req.matches[1], req.body, error);
        if (status >= 300)
            return error_reply(res, status, error);
        reply(res, status, {{"stored", std::string(req.matches[1])}});
    });
    s.Put(R"(/v1/datasets/([0-9a-f]{64}))", [&store](const httplib::Request& req, httplib::Response& res) {
        if (too_large(req, res, kManifestMaxBytes))
            return;
        const json body = json::parse(req.body, nullptr, false);
        if (body.is_discarded())
            return error_reply(res, 400, "the body is not valid JSON (a dataset manifest)");
        dataset::Manifest manifest;
        std::string error;
        if (!dataset::Manifest::from_json(body, manifest, error))
            return error_reply(res, 400, error);
        if (manifest.version() != req.matches[1].str())
            return error_reply(res, 400, "the manifest's version is " + manifest.version() + ", not the one in the URL");
        std::vector<std::string> missing;
        const int status = store.materialize(manifest, missing, error);
        if (status == 409)
            return reply(res, 409, {{"error", error}, {"missing", missing}});
        if (status >= 300)
            return error_reply(res, status, error);
        reply(res, status, {{"version", manifest.version()}, {"files", manifest.files.size()}, {"bytes", manifest.bytes()}});
    });
    s.Get("/v1/datasets", [&store](const httplib::Request&, httplib::Response& res) {
        reply(res, 200, {{"datasets", store.versions()}});
    });
    s.Get(R"(/v1/datasets/([0-9a-f]{64}))", [&store](const httplib::Request& req, httplib::Response& res) {
        if (store.dataset_path(req.matches[1]).empty())
            return error_reply(res, 404, "dataset version " + std::string(req.matches[1]) + " is not on this worker");
        reply(res, 200, {{"version", std::string(req.matches[1])}, {"complete", true}});
    });
}

} // namespace traindeck::worker
