#include "workerserver.h"

#include "atomicfile.h"
#include "bodyreader.h"
#include "elasticthreadpool.h"
#include "jobshim.h"
#include "jobtable.h"
#include "sqlitedb.h"

#include <httplib.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <regex>
#include <fstream>
#include <limits>
#include <numeric>
#include <optional>
#include <sstream>

#include <sys/socket.h>
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

// One read transaction for a reply's many statements, and one snapshot: each statement outside a transaction takes
// and drops SQLite's shared lock and finds its place in the WAL by itself (1,000 jobs watched: a thousand of those a
// request, most of the watch's time, perf on tests/bench/worker_events --idle 950).
class ReadSnapshot {
public:
    explicit ReadSnapshot(Database& db) : db_(db) { db_.exec("BEGIN"); }
    ~ReadSnapshot() {
        // A read transaction has nothing to keep: one that cannot commit is rolled back, so that the thread's
        // connection never stays on an old snapshot for its next request.
        try {
            db_.exec("COMMIT");
        } catch (...) {
            try {
                db_.exec("ROLLBACK");
            } catch (...) {
                // SQLite ended it already
            }
        }
    }
    ReadSnapshot(const ReadSnapshot&) = delete;
    ReadSnapshot& operator=(const ReadSnapshot&) = delete;

private:
    Database& db_;
};

json job_json(const Statement& select) {
    const JobRow row = read_job_row(select);
    json job = {{"id", row.id},             {"name", row.name},          {"request", json::parse(row.request_json)},
                {"state", to_string(row.state)}, {"reason", row.reason}, {"priority", row.priority},
                {"restarts", row.restarts}, {"last_seq", row.next_seq - 1}, {"pid", row.pid},
                {"gpus", row.gpus},         {"spend", row.spend},        {"run_seconds", row.run_seconds},
                {"warnings", row.warnings}, {"exit_code", row.exit_code}, {"submitted", row.submitted},
                {"started", row.started},   {"finished", row.finished}};
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

// The manifest a request's body holds, for the version its URL names (match 1); false once it has answered why not.
bool manifest_of(const httplib::Request& req, httplib::Response& res, const char* what, dataset::Manifest& manifest) {
    if (too_large(req, res, kManifestMaxBytes))
        return false;
    const json body = json::parse(req.body, nullptr, false);
    std::string error;
    if (body.is_discarded() || !dataset::Manifest::from_json(body, manifest, error)) {
        error_reply(res, 400,
                    std::string("the body is not a ") + what + "'s manifest" + (error.empty() ? "" : ": " + error));
        return false;
    }
    if (manifest.version() != req.matches[1].str()) {
        error_reply(res, 400, "the manifest's version is " + manifest.version() + ", not the one in the URL");
        return false;
    }
    return true;
}

bool parse_int(const std::string& text, int64_t& out) {
    try {
        size_t used = 0;
        out = std::stoll(text, &used);
        return used == text.size();
    } catch (...) {
        return false;
    }
}

// The job id in a /v1/jobs/<id>/... URL. (\d+) matched it, but more digits than an int64 holds made std::stoll throw
// (a 500 saying "stoll"); no job has such an id.
bool job_id(const httplib::Request& req, httplib::Response& res, int64_t& id) {
    if (parse_int(req.matches[1], id))
        return true;
    error_reply(res, 404, "no job " + std::string(req.matches[1]));
    return false;
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
    const bool ok = write_file_atomically(path, token + "\n", 0600, error);
    ::umask(old_mask);
    if (!ok)
        return {};
    ::chmod(path.c_str(), 0600);
    created = true;
    return token;
}

// The endpoints as routes() and dataset_routes() declare them. Matched as httplib 0.11 matches (Server::routing):
// the handlers of the request's method (HEAD as GET) in the order they were added, the first whose pattern matches
// the whole path.
struct WorkerServer::Routes {
    struct Route {
        std::string method, pattern;
        std::regex regex;
        httplib::Server::Handler handler;
    };
    std::vector<Route> list;

    void Get(const std::string& pattern, httplib::Server::Handler handler) { add("GET", pattern, std::move(handler)); }
    void Post(const std::string& pattern, httplib::Server::Handler handler) { add("POST", pattern, std::move(handler)); }
    void Put(const std::string& pattern, httplib::Server::Handler handler) { add("PUT", pattern, std::move(handler)); }
    void Delete(const std::string& pattern, httplib::Server::Handler handler) {
        add("DELETE", pattern, std::move(handler));
    }

private:
    void add(const char* method, const std::string& pattern, httplib::Server::Handler handler) {
        list.push_back({method, pattern, std::regex(pattern), std::move(handler)});
    }
};

namespace {

// Before any endpoint (httplib's pre-routing handler): true when it answered, the request going no further.
bool refused_without_token(const std::string& token, const httplib::Request& req, httplib::Response& res) {
    const std::string header = req.get_header_value("Authorization");
    const std::string expected = "Bearer " + token;
    if (header.size() != expected.size() || CRYPTO_memcmp(header.data(), expected.data(), expected.size()) != 0) {
        res.set_header("WWW-Authenticate", "Bearer");
        error_reply(res, 401, header.empty() ? "missing \"Authorization: Bearer <token>\" (the token is in the worker's state folder)"
                                             : "wrong token");
        return true;
    }
    return false;
}

// An exception out of an endpoint (httplib's exception handler).
void exception_reply(httplib::Response& res, const std::exception_ptr& error) {
    std::string message = "internal error";
    try {
        std::rethrow_exception(error);
    } catch (const std::exception& e) {
        message = e.what();
    } catch (...) {
    }
    error_reply(res, 500, message);
}

// Any status from 400 on (httplib's error handler): a JSON body where the endpoint or httplib left none.
void error_page(httplib::Response& res) {
    if (res.body.empty()) {
        if (res.status == 413)
            error_reply(res, 413, "request body too large");
        else if (res.status == 404)
            error_reply(res, 404, "no such endpoint (see /v1/...)");
        else
            error_reply(res, res.status, "request failed");
    }
}

void store_chunk(dataset::ContentStore& store, const std::string& hash, AlignedBytes bytes, httplib::Response& res) {
    std::string error;
    const int status = store.put_chunk(hash, std::move(bytes), error);
    if (status >= 300)
        return error_reply(res, status, error);
    reply(res, status, {{"stored", hash}});
}

// How many events each ready job (id, events waiting) may put in a reply of TOTAL, none more than LIMIT: an equal
// share each, and what a job leaves of its share goes to the jobs with more waiting (filled from the job with fewest
// up). Every job with events waiting gets at least one, so none is starved by a crowd: a reply holds at most the
// larger of TOTAL and the number of jobs with news.
std::vector<int64_t> share_reply(const std::vector<std::pair<int64_t, int64_t>>& ready, int64_t total, int64_t limit) {
    std::vector<size_t> order(ready.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::sort(order.begin(), order.end(), [&ready](size_t a, size_t b) { return ready[a].second < ready[b].second; });
    std::vector<int64_t> grants(ready.size(), 0);
    int64_t left = total;
    for (size_t k = 0; k < order.size(); ++k) {
        const int64_t share = std::max<int64_t>(left / static_cast<int64_t>(order.size() - k), 1);
        const int64_t grant = std::min({ready[order[k]].second, share, limit});
        grants[order[k]] = grant;
        left = std::max<int64_t>(left - grant, 0);
    }
    return grants;
}

// Appends "\"events\":[...]" with the job's events after `after` (at most limit) to body; returns the last seq.
int64_t append_events(Database& db, int64_t job, int64_t after, int64_t limit, std::string& body) {
    // Stored as the fragments a reply carries (jobtable.h): spliced in, not parsed and printed again.
    body += "\"events\":[";
    bool first = true;
    const int64_t last = read_events(db, job, after, limit, [&](int64_t, std::string_view fragment) {
        if (!first)
            body += ',';
        body += fragment;
        first = false;
    });
    body += ']';
    return last;
}

} // namespace

WorkerServer::WorkerServer(Supervisor& supervisor, EventBoard& board, std::string token)
    : supervisor_(supervisor), board_(board), token_(std::move(token)), routes_(std::make_unique<Routes>()) {
    routes();
}

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
    // httplib gives each connection a thread for its whole life: a pool that grows whenever every thread is busy,
    // so that idle, slow or hostile connections never make /v1/health or a submit wait (tests/bench/worker_connections).
    server_->new_task_queue = [] { return new ElasticThreadPool(8, 4096); };
    // Chunks and manifests are larger than any JSON request: the transport allows the largest, each endpoint
    // checks its own limit (jobs: max_body_bytes).
    server_->set_payload_max_length(static_cast<size_t>(std::max<int64_t>(supervisor_.config().max_body_bytes, kManifestMaxBytes)));
    server_->set_keep_alive_max_count(100000);
    // Idle connections go after 5 s; a request must keep arriving (5 s at most between reads) and be read quickly.
    server_->set_keep_alive_timeout(5);
    // Headers and body are separate writes: without TCP_NODELAY, Nagle's algorithm and the client's delayed ACK
    // add 40 ms to every answer on a kept-alive connection (measured: /v1/health p50 43 ms → see the bench).
    server_->set_tcp_nodelay(true);
    server_->set_read_timeout(5, 0);
    server_->set_write_timeout(30, 0);
    httplib::Server& s = *server_;
    s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
        return refused_without_token(token_, req, res) ? httplib::Server::HandlerResponse::Handled
                                                       : httplib::Server::HandlerResponse::Unhandled;
    });
    s.set_exception_handler([](const httplib::Request&, httplib::Response& res, const std::exception_ptr& error) {
        exception_reply(res, error);
    });
    s.set_error_handler([](const httplib::Request&, httplib::Response& res) { error_page(res); });
    for (const Routes::Route& route : routes_->list) {
        if (route.method == "GET")
            s.Get(route.pattern, route.handler);
        else if (route.method == "POST")
            s.Post(route.pattern, route.handler);
        else if (route.method == "DELETE")
            s.Delete(route.pattern, route.handler);
        else
            s.Put(route.pattern, route.handler);
    }
    if (cert.empty()) {
        // Chunks on a plain connection: the body in large reads from the socket (bodyreader.h). httplib tries the
        // routes that take a ContentReader before the others, so this one answers every chunk PUT here.
        s.Put(R"(/v1/chunks/([0-9a-f]{64}))",
              [this](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
                  AlignedBytes body;
                  std::string error;
                  if (const int status = read_body(req, reader, dataset::kChunkBytes, 5000, body, error); status != 0)
                      return error_reply(res, status, error);
                  store_chunk(supervisor_.store(), req.matches[1], std::move(body), res);
              });
    }
    // httplib listens with a backlog of 5: under a burst of connections the kernel drops SYNs and every new client
    // (the console's next request too) waits a 1 s retransmit. The socket is ours to widen once it listens.
    int listening = -1;
    server_->set_socket_options([&listening](int fd) {
        const int yes = 1;
        ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes)); // what httplib's default options do
        listening = fd;
    });
    port_ = port == 0 ? server_->bind_to_any_port(host.c_str()) : (server_->bind_to_port(host.c_str(), port) ? port : -1);
    if (port_ <= 0)
        return "cannot listen on " + host + ":" + std::to_string(port) + " (in use, or not an address of this machine)";
    if (listening >= 0)
        ::listen(listening, SOMAXCONN);
    return {};
}

void WorkerServer::run() { server_->listen_after_bind(); }

void WorkerServer::stop() {
    if (server_)
        server_->stop();
}

WorkerServer::Reply WorkerServer::handle(const std::string& method, const std::string& path, const Fields& params,
                                         const Fields& headers, std::string body) const {
    httplib::Request req;
    req.method = method;
    req.path = path;
    req.params = httplib::Params(params.begin(), params.end());
    req.headers = httplib::Headers(headers.begin(), headers.end());
    req.body = std::move(body);
    httplib::Response res; // status -1 until answered, as httplib has it
    // What httplib's Server::process_request does around Server::routing, step for step.
    bool routed = false;
    try {
        if (refused_without_token(token_, req, res)) {
            routed = true;
        } else {
            const std::string wanted = req.method == "HEAD" ? "GET" : req.method;
            for (const Routes::Route& route : routes_->list) {
                if (route.method == wanted && std::regex_match(req.path, req.matches, route.regex)) {
                    route.handler(req, res);
                    routed = true;
                    break;
                }
            }
            if (!routed && wanted != "GET" && wanted != "POST" && wanted != "PUT" && wanted != "DELETE" && wanted != "OPTIONS" &&
                wanted != "PATCH")
                res.status = 400;
        }
    } catch (...) {
        exception_reply(res, std::current_exception());
        routed = true;
    }
    if (res.status == -1)
        res.status = routed ? 200 : 404;
    if (res.status >= 400)
        error_page(res);
    return {res.status, res.body, res.get_header_value("Content-Type")};
}

void WorkerServer::routes() {
    Routes& s = *routes_;
    s.Get("/v1/health", [](const httplib::Request&, httplib::Response& res) {
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
        Statement select = db.prepare(select_jobs_sql(state.empty() ? "ORDER BY id" : "WHERE state=? ORDER BY id"));
        if (!state.empty())
            select.bind(1, state);
        json jobs = json::array();
        while (select.step())
            jobs.push_back(job_json(select));
        reply(res, 200, {{"jobs", jobs}});
    });
    s.Get(R"(/v1/jobs/(\d+))", [this](const httplib::Request& req, httplib::Response& res) {
        int64_t id = 0;
        if (!job_id(req, res, id))
            return;
        Database& db = reader(supervisor_.database_path());
        Statement select = db.prepare(select_jobs_sql("WHERE id=?"));
        select.bind(1, id);
        if (!select.step())
            return error_reply(res, 404, "no job " + std::string(req.matches[1]));
        reply(res, 200, job_json(select));
    });
    s.Post(R"(/v1/jobs/(\d+)/cancel)", [this](const httplib::Request& req, httplib::Response& res) {
        int64_t id = 0;
        if (!job_id(req, res, id))
            return;
        const Supervisor::Result result = supervisor_.cancel(id);
        reply(res, result.status, result.body);
    });
    s.Post("/v1/sweeps", [this](const httplib::Request& req, httplib::Response& res) {
        if (too_large(req, res, supervisor_.config().max_body_bytes))
            return;
        json body = json::parse(req.body, nullptr, false);
        if (body.is_discarded())
            return error_reply(res, 400, "the body is not valid JSON");
        const Supervisor::Result result = supervisor_.sweep_command(
            [body = std::move(body)](SweepController& sweeps) { return sweeps.create(body); });
        reply(res, result.status, result.body);
    });
    s.Get("/v1/sweeps", [this](const httplib::Request&, httplib::Response& res) {
        reply(res, 200, SweepController::describe(reader(supervisor_.database_path()), 0));
    });
    s.Get(R"(/v1/sweeps/(\d+))", [this](const httplib::Request& req, httplib::Response& res) {
        int64_t id = 0;
        if (!parse_int(req.matches[1], id))
            return error_reply(res, 404, "no sweep " + std::string(req.matches[1]));
        json sweep = SweepController::describe(reader(supervisor_.database_path()), id);
        if (sweep.is_null())
            return error_reply(res, 404, "no sweep " + std::string(req.matches[1]));
        reply(res, 200, sweep);
    });
    s.Post(R"(/v1/sweeps/(\d+)/(stop|resume|extend))", [this](const httplib::Request& req, httplib::Response& res) {
        int64_t id = 0;
        if (!parse_int(req.matches[1], id))
            return error_reply(res, 404, "no sweep " + std::string(req.matches[1]));
        const std::string action = req.matches[2];
        json body = req.body.empty() ? json::object() : json::parse(req.body, nullptr, false);
        if (body.is_discarded())
            return error_reply(res, 400, "the body is not valid JSON");
        const Supervisor::Result result =
            supervisor_.sweep_command([id, action, body = std::move(body)](SweepController& sweeps) {
                return action == "stop"     ? sweeps.stop(id)
                       : action == "resume" ? sweeps.resume(id)
                                            : sweeps.extend(id, body);
            });
        reply(res, result.status, result.body);
    });
    s.Delete(R"(/v1/jobs/(\d+))", [this](const httplib::Request& req, httplib::Response& res) {
        int64_t id = 0;
        if (!job_id(req, res, id))
            return;
        const Supervisor::Result result = supervisor_.remove(id);
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
        res.body = std::move(bytes); // set_content would copy it: httplib 0.11 takes only a const std::string&
        res.set_header("Content-Type", "application/octet-stream");
    });
    // The machine's prices and idle policy (Supervisor::set_policy); GET says them as they are.
    s.Get("/v1/policy", [this](const httplib::Request&, httplib::Response& res) {
        const Supervisor::Result result = supervisor_.get_policy();
        reply(res, result.status, result.body);
    });
    s.Put("/v1/policy", [this](const httplib::Request& req, httplib::Response& res) {
        if (too_large(req, res, supervisor_.config().max_body_bytes))
            return;
        const json body = json::parse(req.body, nullptr, false);
        if (body.is_discarded())
            return error_reply(res, 400, "the body is not JSON");
        const Supervisor::Result result = supervisor_.set_policy(body);
        reply(res, result.status, result.body);
    });
    s.Post(R"(/v1/jobs/(\d+)/resume)", [this](const httplib::Request& req, httplib::Response& res) {
        const json body = req.body.empty() ? json::object() : json::parse(req.body, nullptr, false);
        if (!body.is_object() || (body.contains("budget") && !body["budget"].is_number()))
            return error_reply(res, 400, "the body must be {} or {\"budget\": number}");
        for (const auto& [key, value] : body.items())
            if (key != "budget")
                return error_reply(res, 400, "unknown field \"" + key + "\" (known: budget)");
        int64_t id = 0;
        if (!job_id(req, res, id))
            return;
        const Supervisor::Result result = supervisor_.resume(id, body.value("budget", 0.0));
        reply(res, result.status, result.body);
    });
    dataset_routes();

    // Events after a sequence number, oldest first. With wait_ms the call waits (long poll) until there is at
    // least one, or the job has ended. The reply says the last seq it carries ("next" asks after it).
    s.Get(R"(/v1/jobs/(\d+)/events)", [this](const httplib::Request& req, httplib::Response& res) {
        int64_t job = 0;
        if (!job_id(req, res, job))
            return;
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
        const bool finished = is_finished(state.text_view(0));
        const int64_t last_seq = state.integer(1) - 1;
        // Off its row before the wait: a stepping statement holds its read snapshot, and checkpoints, until reset.
        state.reset();
        if (wait_ms > 0 && !finished && last_seq <= after)
            board_.wait(job, after, static_cast<int>(wait_ms));
        std::string body = "{";
        const int64_t last = append_events(db, job, after, limit, body);
        state.bind(1, job);
        state.step();
        const std::string job_state = state.text(0);
        body += ",\"next\":" + std::to_string(last) + ",\"state\":\"" + job_state + "\"}";
        res.status = 200;
        res.set_content(body, "application/json");
    });

    // Many jobs' events in one long poll: {"after": {"ID": SEQ, ...}, "wait_ms": MS, "limit": N, "total": T}. Waits
    // until any job has an event after its SEQ or has ended; answers {"jobs": {"ID": {"events": [...], "next": SEQ,
    // "state": S}}, "missing": [IDs this worker does not have]} with only the jobs that have news. A console watching
    // a thousand jobs holds one request, not a thousand. "limit" caps one job's events in a reply; "total" (optional)
    // is the reply's budget, shared among the jobs with news (each gets at least one), so that a few busy jobs among
    // many quiet ones get the whole reply between them (a per-job cap sized for a thousand jobs would hold them to a
    // trickle).
    s.Post(R"(/v1/events/watch)", [this](const httplib::Request& req, httplib::Response& res) {
        const json request = json::parse(req.body, nullptr, false);
        if (!request.is_object() || !request.contains("after") || !request["after"].is_object())
            return error_reply(res, 400, "the body must be {\"after\": {\"JOB_ID\": SEQ, ...}, \"wait_ms\": MS, \"limit\": N}");
        for (const auto& [key, value] : request.items())
            if (key != "after" && key != "wait_ms" && key != "limit" && key != "total")
                return error_reply(res, 400, "unknown field \"" + key + "\" (known: after, wait_ms, limit, total)");
        const auto positive = [&request](const char* key) {
            return !request.contains(key) || (request[key].is_number_unsigned() && request[key].get<uint64_t>() > 0);
        };
        if ((request.contains("wait_ms") && !request["wait_ms"].is_number_unsigned()) || !positive("limit") ||
            !positive("total"))
            return error_reply(res, 400,
                               "wait_ms, limit and total must be non-negative integers (limit and total above 0)");
        if (request["after"].size() > 10000)
            return error_reply(res, 413, "watch at most 10000 jobs in one request");
        std::map<int64_t, int64_t> after;
        for (const auto& [key, value] : request["after"].items()) {
            int64_t id = 0;
            if (!parse_int(key, id) || id <= 0 || !value.is_number_unsigned() ||
                value.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
                return error_reply(res, 400, "\"after\" maps job ids to the last seq seen (non-negative integers)");
            after[id] = value.get<int64_t>();
        }
        const auto limit = static_cast<int64_t>(std::min<uint64_t>(request.value("limit", uint64_t(1000)), 50000));
        const uint64_t total = std::min<uint64_t>(request.value("total", uint64_t(0)), 1000000);
        const int wait_ms = static_cast<int>(std::min<uint64_t>(request.value("wait_ms", uint64_t(0)), 60000));
        Database& db = reader(supervisor_.database_path());
        Statement state = db.prepare("SELECT state, next_seq FROM jobs WHERE id=?");
        // Each ready job with how many events it has after its SEQ. The event board answers for the jobs that have
        // published since the worker started, their rows for the others (and say which jobs are missing).
        std::vector<std::pair<int64_t, int64_t>> ready;
        std::vector<int64_t> missing;
        const auto news = [&] {
            ready.clear();
            missing.clear();
            const auto known = board_.known(after);
            size_t index = 0;
            for (const auto& [id, seq] : after) {
                const auto& entry = known[index++];
                int64_t last = 0;
                bool finished = false;
                if (entry) {
                    last = entry->first;
                    finished = entry->second;
                } else {
                    state.reset();
                    state.bind(1, id);
                    if (!state.step()) {
                        missing.push_back(id);
                        continue;
                    }
                    last = state.integer(1) - 1;
                    finished = is_finished(state.text_view(0));
                }
                if (last > seq || finished)
                    ready.emplace_back(id, std::max<int64_t>(last - seq, 0));
            }
            // A statement left on a row keeps its read snapshot past COMMIT, and so across the wait: the woken watch
            // would read the database as it was before (tests/worker: AWatchThatWaitedAnswersWithTheNewsThatWokeIt).
            state.reset();
        };
        std::optional<ReadSnapshot> snapshot(std::in_place, db);
        news();
        if (ready.empty() && wait_ms > 0) {
            // No snapshot held while waiting: checkpoints go on, and the next read sees what was committed meanwhile.
            snapshot.reset();
            if (!board_.wait_any(after, wait_ms).empty()) {
                snapshot.emplace(db);
                news();
            }
        }
        if (!snapshot)
            snapshot.emplace(db);
        const std::vector<int64_t> grants = total > 0 ? share_reply(ready, static_cast<int64_t>(total), limit)
                                                      : std::vector<int64_t>(ready.size(), limit);
        std::string body = "{\"jobs\":{";
        bool first = true;
        for (size_t i = 0; i < ready.size(); ++i) {
            const int64_t id = ready[i].first;
            state.reset();
            state.bind(1, id);
            // The board still knows a job deleted since it published: its row is gone.
            if (!state.step()) {
                missing.push_back(id);
                continue;
            }
            const std::string job_state = state.text(0);
            state.reset();
            body += (first ? "\"" : ",\"") + std::to_string(id) + "\":{";
            first = false;
            const int64_t last = append_events(db, id, after[id], grants[i], body);
            body += ",\"next\":" + std::to_string(last) + ",\"state\":\"" + job_state + "\"}";
        }
        body += "},\"missing\":" + json(missing).dump() + "}";
        res.status = 200;
        res.set_content(body, "application/json");
    });
}

// The content-addressed dataset store: say the manifest (or, the older way, ask which chunks are missing), send the
// chunks the worker lacks, then put the manifest, which completes and verifies the version. Every step can be repeated,
// so an interrupted upload resumes by asking again.
void WorkerServer::dataset_routes() {
    Routes& s = *routes_;
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
        // Counted only where checked: a code snapshot's chunks are never checked again after this.
        reply(res, 200, {{"missing", store.missing_chunks(hashes, true)}});
    });
    // An upload that says its manifest first: the version's files are made, and each chunk sent is written
    // straight into its places there (once, not into a chunk file and then copied).
    s.Post(R"(/v1/uploads/([0-9a-f]{64}))", [&store](const httplib::Request& req, httplib::Response& res) {
        dataset::Manifest manifest;
        if (!manifest_of(req, res, "dataset", manifest))
            return;
        std::string error;
        std::vector<std::string> missing;
        if (const int status = store.begin_upload(manifest, missing, error); status >= 300)
            return error_reply(res, status, error);
        reply(res, 200, {{"missing", missing}});
    });
    // Through httplib's read of the body: a TLS connection's chunks, and the fuzz target's. A plain connection's
    // chunks take bind()'s route, which reads the body in large pieces (bodyreader.h) and ends here too.
    s.Put(R"(/v1/chunks/([0-9a-f]{64}))", [&store](const httplib::Request& req, httplib::Response& res) {
        store_chunk(store, req.matches[1], AlignedBytes(req.body), res);
    });
    s.Put(R"(/v1/datasets/([0-9a-f]{64}))", [&store](const httplib::Request& req, httplib::Response& res) {
        dataset::Manifest manifest;
        if (!manifest_of(req, res, "dataset", manifest))
            return;
        std::string error;
        std::vector<std::string> missing;
        const int status = store.materialize(manifest, missing, error);
        if (status == 409)
            return reply(res, 409, {{"error", error}, {"missing", missing}});
        if (status >= 300)
            return error_reply(res, status, error);
        reply(res, status, {{"version", manifest.version()}, {"files", manifest.files.size()}, {"bytes", manifest.bytes()}});
    });
    // A chunk's bytes: how a console moves a run's code snapshot to another worker (Reproduce there).
    s.Get(R"(/v1/chunks/([0-9a-f]{64}))", [&store](const httplib::Request& req, httplib::Response& res) {
        std::string bytes;
        if (!store.read_chunk(req.matches[1], bytes))
            return error_reply(res, 404, "chunk " + std::string(req.matches[1]) + " is not on this worker");
        res.status = 200;
        res.body = std::move(bytes);
        res.set_header("Content-Type", "application/octet-stream");
    });
    // Code snapshots (capture.h): their manifests, kept without a folder until a job reproduces one.
    s.Get(R"(/v1/code/([0-9a-f]{64}))", [&store](const httplib::Request& req, httplib::Response& res) {
        dataset::Manifest manifest;
        std::string error;
        if (!store.stored_manifest(req.matches[1], manifest, error))
            return error_reply(res, 404, error);
        reply(res, 200, manifest.to_json());
    });
    s.Put(R"(/v1/code/([0-9a-f]{64}))", [&store](const httplib::Request& req, httplib::Response& res) {
        dataset::Manifest manifest;
        if (!manifest_of(req, res, "snapshot", manifest))
            return;
        if (const std::vector<std::string> missing = store.missing_chunks(manifest.chunk_hashes(), true);
            !missing.empty())
            return reply(res, 409,
                         {{"error", std::to_string(missing.size()) +
                                        " chunk(s) of this snapshot are not on the worker yet; upload them first"},
                          {"missing", missing}});
        if (const int saved = store.put_manifest(manifest); saved != 0)
            return error_reply(res, saved == ENOSPC ? 507 : 500,
                               std::string("cannot store the manifest: ") + std::strerror(saved));
        reply(res, 201, {{"code", manifest.version()}, {"files", manifest.files.size()}, {"bytes", manifest.bytes()}});
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
