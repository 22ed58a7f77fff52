#pragma once
// Sends a dataset version to a worker's content-addressed store: asks which chunks the worker lacks, sends only
// those (several at a time, each verified by hash on arrival), then puts the manifest, which makes the worker
// build the version and verify every file. Stopping at any point loses nothing: the next upload asks again and
// sends only what is still missing.
#include "manifest.h"
#include "workerclient.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

namespace traindeck::client {

struct UploadProgress {
    int64_t bytes_sent = 0, bytes_to_send = 0; // of the missing chunks
    int64_t chunks_sent = 0, chunks_to_send = 0;
    int64_t chunks_total = 0, bytes_total = 0; // of the whole version
    double seconds = 0;
};

struct UploadOptions {
    int connections = 4;
    std::function<void(const UploadProgress&)> progress; // from the sending threads
    const std::atomic<bool>* cancel = nullptr;
    int64_t stop_after_bytes = 0; // tests: simulate an interruption after this many bytes (0 = never)
};

// root: the folder (or single file) the manifest was made from. Returns false + error (nothing half-registered
// on the worker: a version appears only once complete).
bool upload_dataset(const WorkerClient& client, const dataset::Manifest& manifest, const std::string& root,
                    UploadProgress& result, std::string& error, const UploadOptions& options = {});

} // namespace traindeck::client
