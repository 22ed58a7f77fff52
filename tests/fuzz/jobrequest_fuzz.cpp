// Fuzz target: the body of POST /v1/jobs, as the worker reads it (nlohmann's parse without exceptions, then
// parse_job_request). Properties: a refusal says why; an accepted request keeps the rules parse_job_request states
// (nothing negative, exactly one of builtin/argv), and what the worker stores of it (to_json, dumped as
// submit() does) reads back as the same request.
#include "fuzzsupport.h"
#include "jobrequest.h"

#include <nlohmann/json.hpp>

#include <cstdint>

using nlohmann::json;
using traindeck::worker::JobRequest;
using traindeck::worker::parse_job_request;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const json body = json::parse(data, data + size, nullptr, false);
    if (body.is_discarded())
        return 0; // the handler answers 400 before parse_job_request
    JobRequest request;
    std::string error;
    if (!parse_job_request(body, request, error)) {
        FUZZ_CHECK(!error.empty(), "a refused request without a message");
        return 0;
    }
    FUZZ_CHECK(error.empty(), "an accepted request with an error message");
    FUZZ_CHECK(request.builtin.is_null() != request.argv.empty(), "accepted without exactly one of builtin and argv");
    FUZZ_CHECK(request.builtin.is_null() || request.builtin.is_object(), "accepted a builtin that is not an object");
    FUZZ_CHECK(!request.shell || request.argv.size() == 1, "accepted shell with more than one command line");
    FUZZ_CHECK(request.resources.gpus >= 0 && request.resources.cpus >= 0 && request.resources.memory_mb >= 0 &&
                   request.resources.time_minutes >= 0 && request.max_restarts >= 0 && request.budget >= 0,
               "accepted a negative resource, budget or restart count");

    // What submit() writes into the jobs table, and what a restarted worker parses back from it.
    const std::string stored = request.to_json().dump();
    JobRequest again;
    std::string again_error;
    FUZZ_CHECK(parse_job_request(json::parse(stored), again, again_error), "a stored request does not parse back");
    FUZZ_CHECK(again.to_json() == request.to_json(), "a stored request parses back as a different request");
    return 0;
}
