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

namespace traindeck {

Expected<importers::ImportedRun> run_from_catalog(Catalog& catalog, int64_t job);

} // namespace traindeck
