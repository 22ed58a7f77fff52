// Fuzz target: a worker's watch reply (backend/client/watchreply.h), read the fast way (simdjson, each job's events
// cut out of the text) and the old way (nlohmann). Properties, not just "does not crash":
//  - what the fast way accepts, nlohmann reads as a reply with a "jobs" object;
//  - both find the same jobs, with the same next seq, state and count of events, and each job's events text, read by
//    nlohmann, is the array nlohmann read in the whole reply (so the catalog ingests the same events either way);
//  - the fast way's events text is a slice of the reply, starting at "[" and ending at "]" (or "[]" when the job
//    had no "events").
#include "fuzzsupport.h"
#include "watchreply.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>

using traindeck::client::WatchedJob;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string body(reinterpret_cast<const char*>(data), size);
    const auto fast = traindeck::client::read_watch_reply(body);
    if (!fast)
        return 0;
    const nlohmann::json reply = nlohmann::json::parse(body, nullptr, false);
    FUZZ_CHECK(!reply.is_discarded() && reply.is_object() && reply.contains("jobs") && reply["jobs"].is_object(),
               "the fast reader took a reply nlohmann does not read as {\"jobs\": {...}}");
    FUZZ_CHECK(!reply.contains("missing") || (reply["missing"].is_array() && reply["missing"].empty()),
               "the fast reader took a reply with missing jobs (their warning comes from nlohmann's reading)");
    const std::vector<WatchedJob> slow = traindeck::client::watched_jobs_of(reply["jobs"]);
    FUZZ_CHECK(slow.size() == fast->size(), "the two readers found different numbers of jobs");
    std::map<std::string, const WatchedJob*> by_id;
    for (const WatchedJob& job : slow)
        by_id[job.id] = &job;
    for (const WatchedJob& job : *fast) {
        const auto it = by_id.find(job.id);
        FUZZ_CHECK(it != by_id.end(), "the fast reader found a job nlohmann did not");
        const WatchedJob& other = *it->second;
        FUZZ_CHECK(job.next == other.next, "the readers disagree on a job's next seq");
        FUZZ_CHECK(job.state == other.state, "the readers disagree on a job's state");
        FUZZ_CHECK(job.count == other.count, "the readers disagree on how many events a job has");
        // (A job without "events" has "[]", its own.)
        FUZZ_CHECK(job.events.size() >= 2 && job.events.front() == '[' && job.events.back() == ']' &&
                       (job.events == "[]" || body.find(job.events) != std::string::npos),
                   "a job's events are not a bracketed slice of the reply");
        const nlohmann::json events = nlohmann::json::parse(job.events, nullptr, false);
        FUZZ_CHECK(!events.is_discarded() && events == nlohmann::json::parse(other.events, nullptr, false),
                   "a job's events text does not read as the events nlohmann found");
    }
    return 0;
}
