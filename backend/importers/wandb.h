#pragma once
// W&B offline runs (run-<id>.wandb, the transaction log the wandb SDK writes beside a run, offline or not) read into
// ImportedRuns: config, history rows, summary, tags, notes, how it exited.
// The file: a 7-byte header (":W&B", 0xBEE1 little-endian, version 0), then LevelDB's log framing over 32 KiB blocks
// counted from the file's start: chunks of crc32 (4 bytes, little-endian; zlib's CRC-32 of the type byte and the
// payload, unmasked: W&B's own choice, unlike LevelDB's masked CRC-32C), length (2), type (1: FULL, 2: FIRST,
// 3: MIDDLE, 4: LAST); fewer than 7 bytes left in a block are padding. Each record is a wandb_internal.Record message
// (field numbers in wandb.cpp's first comment).
// Damage: a chunk whose CRC fails is reported with its offset and skipped; the reader then tries the chunk its length
// points to, and keeps going if that one's CRC holds (a bad length would land on bytes whose CRC fails); otherwise it
// skips to the next block, as LevelDB recovers. A file cut inside a chunk is reported and read up to there.
#include "expected.h"
#include "importedrun.h"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace traindeck::importers {

// Calls on_record(offset of its first chunk, record bytes) for every whole record, in order; a Damage per problem.
// Returns the number of records.
int64_t scan_wandb_log(std::string_view bytes, const std::string& file,
                       const std::function<void(uint64_t offset, std::string_view record)>& on_record,
                       std::vector<Damage>& damage);

// Decodes one Record into run. False, with why, when the bytes are not a Record; nothing of it is kept then.
bool decode_wandb_record(std::string_view record, ImportedRun& run, std::string& why);

// One .wandb file.
ImportedRun read_wandb_file(const std::string& path);

// A .wandb file, a run folder, or a wandb/ folder of runs: one run per run-*.wandb file, in path order.
Expected<std::vector<ImportedRun>> read_wandb(const std::string& path);

} // namespace traindeck::importers
