#pragma once
// A catalog run in the importers' neutral form (backend/importers/importedrun.h), for the exporters: CSV and JSONL
// (importers/metricexport.h) and TensorBoard event files (importers/tfevents.h). Every curve's points as the catalog
// keeps them (one value a step), each with the wall time the catalog has for its step (the records' times), the
// run's config as its flattened keys, its name, state and times, all as of one commit (a read transaction of its own
// unless the caller is in one). Reads only; call it on a connection of its own or inside the writer's closure.
#include "catalog.h"
#include "expected.h"
#include "importedrun.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace traindeck {

Expected<importers::ImportedRun> run_from_catalog(Catalog& catalog, int64_t job);

// Export back, as traindeck-cli export and the console's Export runs… write it: one run's curves as a CSV or JSONL
// file, or as a TensorBoard run folder (one event file).
enum class RunExportFormat { csv, jsonl, tensorboard };

struct RunExportResult {
    int64_t job = 0;
    std::string path; // the file written (for TensorBoard, the event file in the run's folder)
    int64_t points = 0;
    std::map<std::string, std::string> renamed; // JSONL: tags written under another name (jsonl_renamed_tags)
};

// `path` is the file for CSV and JSONL, the run's folder for TensorBoard. A folder that holds event files already is
// refused with nothing written: TensorBoard reads a folder's event files as one run, so every point would show twice.
Expected<RunExportResult> export_run(Catalog& catalog, int64_t job, RunExportFormat format, const std::string& path);

// Where each of a selection of runs goes under `folder`: its name with only letters, digits, "-", "_" and "." (any
// other byte below 0x80, and any byte of invalid UTF-8, "_"; UTF-8 letters kept), at most 120 bytes of it (cut at a
// character's start), "run-ID" before it when it is empty or would be a hidden name, and "-ID" after it when another
// run of the selection comes to the same name (letter case aside: some file systems ignore it); ".csv" or ".jsonl"
// after that, nothing for a TensorBoard run folder. A name never leaves `folder`. jobs: (id, name) in the
// selection's order.
std::vector<std::string> export_paths(const std::string& folder,
                                      const std::vector<std::pair<int64_t, std::string>>& jobs, RunExportFormat format);
// Those of `paths` an export would write over: a file for CSV and JSONL, a run folder holding event files for
// TensorBoard.
// A selection's export refuses them, naming them, before it writes anything.
std::vector<std::string> existing_exports(const std::vector<std::string>& paths, RunExportFormat format);

} // namespace traindeck
