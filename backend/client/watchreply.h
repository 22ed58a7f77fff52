#pragma once
// A worker's answer to POST /v1/events/watch ({"jobs": {"<id>": {"events": [...], "next": N, "state": "..."}},
// "missing": [...]}) as the console's watch loop takes it: per job, its events as JSON text for the catalog's writer
// to read (Catalog::ingest_text), the seq to ask after next time, and its state. Plain C++ (simdjson, nlohmann).
//
// read_watch_reply is the fast way: simdjson checks the whole reply, then each job's events array is cut out of it
// as the worker wrote it; no event is parsed into objects here, nor written out again (the console read each event
// twice before: tests/bench/console_ingest). A reply in any other shape is read with nlohmann::json as before
// (watched_jobs_of), so the two never differ on what a reply says: tests/fuzz/watchreply_fuzz.cpp checks that.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace traindeck::client {

struct WatchedJob {
    std::string id;
    std::string events = "[]"; // the job's "events" array: as the worker wrote it, or as nlohmann writes it
    size_t count = 0;          // the events it holds
    // "next", or (when the worker gave none) the largest integer seq among the events; nullopt when neither. The
    // caller asks after the larger of this and what it had asked after.
    std::optional<int64_t> next;
    std::string state; // "" when the worker gave none
};

// The jobs of a reply in the plain shape: an object with "jobs" (an object of objects, each id once, each with an
// integer "next", an "events" array if any and a string "state" if any, each key once) and at most an empty
// "missing". nullopt for anything else, including text simdjson refuses (1e999, a lone surrogate escape): read those
// with nlohmann and watched_jobs_of.
std::optional<std::vector<WatchedJob>> read_watch_reply(const std::string& body);

// The same from the "jobs" object of a reply nlohmann read, in any shape: a part that is not an object, or events
// that are not an array, have no events; a "state" that is not a string is "".
std::vector<WatchedJob> watched_jobs_of(const nlohmann::json& jobs);

} // namespace traindeck::client
