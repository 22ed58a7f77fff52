#pragma once
// A source read again and again while its writer writes it (traindeck-cli import --follow, the console's Import runs…
// with "Keep following"): each pass reads only what changed since the pass before, so following one live run costs
// what that run wrote, not what the whole tree holds.
//   TensorBoard: a run folder whose files are as the last pass left them is not read at all; an event file that grew
//     is read from the end of its last whole record (read_event_files_on), and the run handed out holds only the
//     scalars and histograms new since, counted in points_before (import_run adds them). A run whose files changed
//     otherwise (rewritten, replaced, truncated) is read whole, as a first pass reads it.
//   The other formats (an MLflow store, W&B runs, metric tables) are read whole at each pass that finds a change; the
//     catalog adds only what they gained (model/runimport.h).
// The tails kept are small: per run its config, damage, image places and a count and last point per series.
// Plain C++, no Qt.
#include "expected.h"
#include "readruns.h"
#include "tfevents.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>

namespace traindeck::importers {

class SourceFollower {
public:
    SourceFollower(std::string path, ReadRunsOptions options);

    // Whether anything at the path changed since the last pass began (a stat of each file; nothing read). True before
    // the first pass, and after a pass that was stopped.
    bool changed() const;

    // One pass: each run that changed goes to on_run as soon as it is read (all of them at the first pass); on_run
    // returns false to stop there (a cancel: that run, and the ones not read, are read at the next pass). The result
    // has the format and the notes, and no runs; an error when the path cannot be read (tried again when something
    // at it changes).
    Expected<ReadRuns> pass(const std::function<bool(ImportedRun&& run)>& on_run);

    // The run from `source` (ImportedRun::source) that a pass gave was not written (its import failed, or said
    // read_whole_again): the next pass, when something at the path changes, reads it whole.
    void forget(const std::string& source);

    // Bytes of source files read by the passes so far (what following costs).
    uint64_t bytes_read() const { return bytes_read_; }

private:
    std::string path_;
    ReadRunsOptions options_;
    uint64_t fingerprint_ = 0; // source_fingerprint when the last pass began; 0: read at the next pass
    std::string format_;       // what the last pass read the path as
    std::map<std::string, EventFilesTail> tails_; // TensorBoard runs, by folder
    SourceBuffer buffer_;
    uint64_t bytes_read_ = 0;
};

} // namespace traindeck::importers
