#pragma once
// Moves a run's code snapshot (backend/worker/capture.h) from one worker's store to another's, for "Reproduce" on
// another backend: the source's manifest (checked: it must be the version asked for), then only the chunks the
// target lacks, each hashed here before it is sent on (a source that sends other bytes is refused, whatever it
// says), then the manifest, which the target accepts only once it holds every chunk.
#include "manifest.h"
#include "workerclient.h"

#include <cstdint>
#include <functional>
#include <string>

namespace traindeck::client {

struct CodeTransfer {
    int64_t files = 0, bytes = 0;            // the snapshot's
    int64_t chunks_sent = 0, bytes_sent = 0; // what the target lacked
};

// A snapshot's manifest as `from` holds it; false and why when it has none, or sends another version's.
bool fetch_code_manifest(const WorkerClient& from, const std::string& version, dataset::Manifest& manifest,
                         std::string& error);
// A chunk's bytes from `from`; false when it cannot give them or they do not hash to `hash`.
bool fetch_chunk(const WorkerClient& from, const std::string& hash, std::string& bytes, std::string& error);

// Where chunks come from: another worker here, or a backend in the console (which may be any kind).
using ChunkSource = std::function<bool(const std::string& hash, std::string& bytes, std::string& error)>;
// Puts the snapshot into `to`'s store: only the chunks it lacks, each from `source` and hashed here first.
bool store_code_snapshot(const WorkerClient& to, const dataset::Manifest& manifest, const ChunkSource& source,
                         CodeTransfer& result, std::string& error);

bool copy_code_snapshot(const WorkerClient& from, const WorkerClient& to, const std::string& version,
                        CodeTransfer& result, std::string& error);

} // namespace traindeck::client
