#pragma once
// An imported run (backend/importers/importedrun.h) written into the catalog as a run like any other: a job of the
// backend "import" whose remote id is the format and the source's canonical path, so importing the same source
// again finds the same run. Idempotent: each series remembers how many of the source's points it took
// (import_series), so importing again adds only the points the source gained since (a grown event file, new metric
// lines), and importing an unchanged source changes nothing at all (not even the run's revision). A source that was
// rewritten rather than grown (fewer points than were taken, or a different last point) adds nothing to that series
// and says so. Where it came from (path, format, writer, files) and the damage its reader found are kept in
// import_sources.
// The catalog holds one value a step per series (the rule a resumed run follows): a step the source wrote twice is
// counted twice here and shows its later value, as TensorBoard shows it (it drops the earlier points when a step
// goes back). Non-finite values are not stored, as ingest() does not store them; they are counted in the result.
#include "catalog.h"
#include "expected.h"
#include "importedrun.h"

#include <cstdint>
#include <string>
#include <vector>

namespace traindeck {

struct RunImportResult {
    int64_t job = 0;
    bool created = false;     // a new run; false: the run an earlier import made
    int64_t points_added = 0; // scalar points the source gained since the last import (all of them the first time)
    int64_t points_kept = 0;  // scalar points already imported before
    int64_t not_finite = 0;   // of the added points, NaN or infinite ones, counted but not stored
    int64_t histograms_added = 0;
    int64_t images_added = 0;       // their places in the source (model/imagestore.h)
    bool changed = false;           // anything was written
    // A run read on from where its last read stopped (ImportedRun::points_before) whose earlier points the catalog
    // does not hold (the run was purged since, or an import failed): what it holds was not written; read the source
    // whole and import that (SourceFollower::forget).
    bool read_whole_again = false;
    std::vector<std::string> notes; // series the source rewrote, a run deleted in the catalog, ...
};

// The remote id an imported run gets: "<format>:<canonical source path>[#<source id>]".
std::string import_remote_id(const importers::ImportedRun& run);

// Writes run into catalog, in a transaction of its own (an error then leaves the catalog as it was), or inside the
// caller's when it holds one (CatalogWriter's closures): there a database error is thrown, for the caller to undo.
Expected<RunImportResult> import_run(Catalog& catalog, const importers::ImportedRun& run);

} // namespace traindeck
