#pragma once
// Moves a run's code snapshot (backend/worker/capture.h) from one worker's store to another's, for "Reproduce" on
// another backend: the source's manifest (checked: it must be the version asked for), then only the chunks the
// target lacks, each hashed here before it is sent on (a source that sends other bytes is refused, whatever it
// says), then the manifest, which the target accepts only once it holds every chunk.
#include "workerclient.h"

#include <cstdint>
#include <string>

namespace traindeck::client {

struct CodeTransfer {
    int64_t files = 0, bytes = 0;            // the snapshot's
    int64_t chunks_sent = 0, bytes_sent = 0; // what the target lacked
};

bool copy_code_snapshot(const WorkerClient& from, const WorkerClient& to, const std::string& version,
                        CodeTransfer& result, std::string& error);

} // namespace traindeck::client
