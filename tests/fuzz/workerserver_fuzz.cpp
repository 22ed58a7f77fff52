// Fuzz target: the worker's HTTP API (WorkerServer::handle: the token check, the routes, the error replies) over a
// real Supervisor on a temp state folder, so that a request reaches the same database, store and job queue it
// reaches in traindeck-worker. No job ever runs: the job shim is a path that does not exist, so a scheduled job
// fails to start (posix_spawn answers ENOENT) instead of running the argv a fuzzer wrote.
//
// Input: up to 8 requests separated by a line "%%". Each is a request line "METHOD /path?k=v&k2=v2", header lines
// "Name: value", an empty line, and the body (the rest). The path is taken as httplib hands it over (decoded); the
// token is "fuzz-token" (the corpus sends it; without it the reply is 401). Long polls are cut to 20 ms (wait_ms in
// the query of /v1/jobs/N/events and in the body of /v1/events/watch): waiting is not parsing, and a minute's wait
// would be a libFuzzer timeout.
// Properties: every reply has a status from 200 to 599, never 500 (an exception out of an endpoint: input the
// endpoint should have refused with a message), and a JSON reply is valid JSON.
#include "fuzzsupport.h"
#include "workerserver.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdlib>
#include <memory>

using traindeck::fuzz::TempFolder;
using namespace traindeck::worker;

namespace {

struct Worker {
    TempFolder state{"traindeck-fuzz-worker"};
    EventBoard board;
    std::unique_ptr<Supervisor> supervisor;
    std::unique_ptr<WorkerServer> server;

    Worker() {
        WorkerConfig config;
        config.state_dir = state.path();
        config.self_binary = config.train_binary = "/nonexistent/traindeck-fuzz-runs-no-jobs";
        config.cpu_slots = 2;
        config.memory_mb = 4096;
        supervisor = std::make_unique<Supervisor>(config, board);
        const std::string error = supervisor->start();
        FUZZ_CHECK(error.empty(), "the supervisor does not start on a temp state folder");
        server = std::make_unique<WorkerServer>(*supervisor, board, "fuzz-token");
    }
    ~Worker() {
        server.reset();
        supervisor.reset(); // stops its threads before the state folder goes
    }
};

std::string_view next_line(std::string_view& text) {
    const size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    return line;
}

void send(const Worker& worker, std::string_view request) {
    const std::string_view request_line = next_line(request);
    const size_t space = request_line.find(' ');
    if (space == std::string_view::npos)
        return;
    const std::string method(request_line.substr(0, space));
    std::string_view target = request_line.substr(space + 1);
    WorkerServer::Fields params, headers;
    if (const size_t question = target.find('?'); question != std::string_view::npos) {
        std::string_view query = target.substr(question + 1);
        target = target.substr(0, question);
        while (!query.empty()) {
            const size_t amp = query.find('&');
            const std::string_view pair = query.substr(0, amp);
            query.remove_prefix(amp == std::string_view::npos ? query.size() : amp + 1);
            const size_t eq = pair.find('=');
            std::string key(pair.substr(0, eq)), value(eq == std::string_view::npos ? "" : pair.substr(eq + 1));
            // A long poll (see the top): kept, but short.
            if (key == "wait_ms" && std::atoll(value.c_str()) > 20)
                value = "20";
            params.emplace(std::move(key), std::move(value));
        }
    }
    for (std::string_view line; !(line = next_line(request)).empty();) {
        const size_t colon = line.find(':');
        std::string_view value = colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
        while (!value.empty() && value.front() == ' ')
            value.remove_prefix(1);
        headers.emplace(std::string(line.substr(0, colon)), std::string(value));
    }
    std::string body(request);
    // The same wait, asked for in the body of a many-job long poll.
    if (target == "/v1/events/watch") {
        nlohmann::json watch = nlohmann::json::parse(body, nullptr, false);
        if (watch.is_object() && watch.contains("wait_ms") && watch["wait_ms"].is_number_unsigned() &&
            watch["wait_ms"].get<uint64_t>() > 20) {
            watch["wait_ms"] = 20;
            body = watch.dump();
        }
    }
    const WorkerServer::Reply reply = worker.server->handle(method, std::string(target), params, headers, std::move(body));
    FUZZ_CHECK(reply.status >= 200 && reply.status <= 599, "a reply status outside 200..599");
    if (reply.status == 500)
        std::fprintf(stderr, "500 for %s %.*s: %s\n", method.c_str(), int(target.size()), target.data(), reply.body.c_str());
    FUZZ_CHECK(reply.status != 500, "an endpoint threw (500) on input it should have refused with a message");
    if (reply.content_type == "application/json")
        FUZZ_CHECK(nlohmann::json::accept(reply.body), "a JSON reply that is not valid JSON");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static Worker worker;
    std::string_view input(reinterpret_cast<const char*>(data), size);
    constexpr std::string_view kSeparator = "\n%%\n";
    for (int sent = 0; sent < 8 && !input.empty(); ++sent) {
        const size_t end = input.find(kSeparator);
        send(worker, input.substr(0, end));
        input.remove_prefix(end == std::string_view::npos ? input.size() : end + kSeparator.size());
    }
    return 0;
}
