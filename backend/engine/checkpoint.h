#pragma once
// Checkpoints of the built-in trainer.
//
// File format (little-endian), one file per checkpoint, named ckpt-<step, 10 digits>.tdck (and best.tdck: a copy of
// the best epoch's, kept apart from the newest `keep`, when the spec asks for early stopping):
//   char[8]  magic "TDCKPT" 0x00 0x01 (the last byte is the format version)
//   u32      header length in bytes
//   char[]   header, JSON: {"spec_hash", "step", "epoch", "batch_in_epoch", "samples_seen", "train_seconds",
//                           "epoch_rng":[4 words], "dropout_rng":[4 words], "optimizer", "parameters", "state_buffers",
//                           "best_value", "best_epoch", "stale_epochs" (early stopping; absent in older files: 0)}
//   f32[parameters]                   the network's parameters
//   f32[parameters] × state_buffers   the optimiser's state (SGD: momentum; AdamW: m, v)
//   u64      FNV-1a 64 of every byte above, so a torn or corrupted file is recognised and skipped
//
// Writes are atomic: a temp file in the same folder, fsync, rename, fsync of the folder. A crash at
// any moment leaves either the old set of checkpoints or the new one, never half a file under a real name.
#include "expected.h"
#include "rng.h"

#include <cstdint>
#include <string>
#include <vector>

namespace traindeck::engine {

struct TrainingState {
    uint64_t spec_hash = 0;
    long step = 0;            // optimiser steps done
    long epoch = 0;           // epoch in progress (0-based)
    long batch_in_epoch = 0;  // micro-batches of that epoch already consumed
    long samples_seen = 0;
    double train_seconds = 0; // training wall time summed over every run that led here
    Rng::State epoch_rng{};   // shuffle generator as it was at the start of `epoch`
    Rng::State dropout_rng{};
    // Early stopping: the monitored validation value of the best epoch so far, that epoch (1-based; 0: none yet), and
    // the epochs since it that did not improve on it. Kept here so a resumed run stops where the unbroken one would.
    double best_value = 0;
    long best_epoch = 0;
    long stale_epochs = 0;
};

struct Checkpoint {
    TrainingState state;
    std::string optimizer;
    std::vector<float> params;
    std::vector<std::vector<float>> optimizer_state;
};

std::string checkpoint_file_name(long step);

// Writes atomically into dir (created if missing) and then removes all but the newest `keep` checkpoints.
Expected<std::string> write_checkpoint(const std::string& dir, const Checkpoint& checkpoint, int keep);

// Writes atomically dir/best.tdck (replacing the previous best); pruning never removes it.
Expected<std::string> write_best_checkpoint(const std::string& dir, const Checkpoint& checkpoint);
std::string best_checkpoint_path(const std::string& dir);

Expected<Checkpoint> read_checkpoint(const std::string& path);

// The newest checkpoint in dir that reads back intact; corrupt ones are skipped and reported in `skipped`.
// Returns an empty path when dir holds none.
struct FoundCheckpoint {
    std::string path;
    Checkpoint checkpoint;
    std::vector<std::string> skipped;
};
Expected<FoundCheckpoint> find_latest_checkpoint(const std::string& dir);

} // namespace traindeck::engine
