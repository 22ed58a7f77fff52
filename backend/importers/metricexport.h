#pragma once
// Runs exported back as metric tables, so no one is locked in (the TensorBoard exporter is tfevents.h's):
//   CSV: a header "step,time,<tag>,..." (tags in name order, quoted where they hold a comma or a quote), one row a
//     step in step order; a tag without a point at that step has an empty cell; time is the wall time of any point at
//     that step (Unix seconds), empty when none says.
//   JSONL: TrainDeck's own protocol without the "@traindeck " prefix: a {"type":"config"} line when the run has a
//     config, then one {"type":"metric","step":..,"time":..,<tag>:<value>,...} line a step.
// Both read back through metricfile.h into the same points (values print in their shortest round-trip form). Where
// a tag has several points at one step, the later one is written (the one the catalog shows). Plain C++, no Qt.
#include "expected.h"
#include "importedrun.h"

#include <map>
#include <string>

namespace traindeck::importers {

std::string encode_metric_csv(const ImportedRun& run);
std::string encode_metric_jsonl(const ImportedRun& run);
// A JSONL line's own keys ("step", "time", "type", "v", and the reader's other time keys "timestamp", "wall_time",
// "_timestamp") as tags would overwrite them or be taken for them (a tag "step" moved every point to its value's
// step): such a tag is written under its name and "_" (as many as make it no other tag's name). Tag ->
// the name written, for those. CSV needs none: its reader takes the first "step" and "time" columns as its own and
// any later one as a tag.
std::map<std::string, std::string> jsonl_renamed_tags(const ImportedRun& run);

// Written atomically (a reader never sees half a file): CSV when csv, else JSONL.
Status write_metric_file(const std::string& path, const ImportedRun& run, bool csv);

} // namespace traindeck::importers
