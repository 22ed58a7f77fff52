#pragma once
// What a run is made of, captured by its shim as the run starts, so that any curve or exported model can be traced to
// the code, packages and machine that made it, and rerun from them (issue 19). Three parts, each a JSON object the
// worker passes on as a "capture" event:
//   code         the job's working folder: in a git repository its commit, branch, remote (no credentials), the
//                uncommitted diff and untracked files; and always a snapshot of the files the run starts from,
//                stored in the worker's content store (the dataset store's chunks: unchanged files cost nothing)
//   environment  the machine (OS, kernel, CPU, memory, GPUs, driver, CUDA/cuDNN/NCCL), the job interpreter's
//                Python packages (asked of that interpreter) and the Debian packages that provide them, the engine
//                build of a built-in job
// Secrets are never captured: .env files, keys and anything a pattern names (the folder's .traindeckignore, the
// worker's --capture-exclude) are left out with a note saying which rule left them out, never read.
#include "contentstore.h"
#include "process.h"

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace traindeck::worker {

struct CaptureLimits {
    int64_t max_file_bytes = dataset::kChunkBytes; // larger files are left out, with a note
    int64_t max_total_bytes = int64_t(64) << 20;
    int max_files = 10000;
    size_t max_diff_bytes = 512 << 10; // the diff kept for reading; the snapshot holds the files whatever its size
    std::vector<std::string> exclude;  // more never-captured patterns (.gitignore-style globs)
};

// The rule that makes a path (relative, '/'-separated) a secret never captured, or "" when it is none.
std::string secret_rule(std::string_view path, const std::vector<std::string>& patterns);
// A URL without its user and password ("https://user:token@host/x" -> "https://host/x").
std::string strip_credentials(const std::string& url);
// The job's environment as an object, with values of names that look like secrets (TOKEN, PASSWORD, KEY, ...)
// replaced by "(hidden)".
nlohmann::json redact_environment(const std::vector<std::string>& entries);

// Captures the code under cwd into the store (chunks and the snapshot's manifest). Never fails as a whole: what
// could not be read is said in the answer's "left_out" and "problems". The answer's "snapshot" is the version a job
// can be started from again (JobRequest::code).
nlohmann::json capture_code(const std::string& cwd, dataset::ContentStore& store, const CaptureLimits& limits);
// Checks that folder holds exactly the snapshot's files (a reproduced run's code, before it starts).
nlohmann::json verify_snapshot(const std::string& folder, const dataset::Manifest& manifest, const std::string& cwd);

// The Python interpreter that runs argv (python3 x.py, a script whose #! names python, sh -c "python ..."), as a
// path; "" when the job is not a Python program.
std::string python_interpreter(const std::vector<std::string>& argv, const Environment& env, const std::string& cwd);
// The interpreter's version and installed distributions, asked of it (importlib.metadata) with the job's
// environment and folder; those under /usr/lib/python3 are mapped to the Debian packages that hold them.
// At most `seconds` in all (the interpreter, then dpkg-query).
nlohmann::json capture_python(const std::string& interpreter, const Environment& env, const std::string& cwd,
                              double seconds = 60);
// The machine: OS, kernel, CPU, memory, GPUs and driver (nvidia-smi when present), CUDA/cuDNN/NCCL versions.
nlohmann::json capture_system(double seconds = 20);
// The built-in trainer's build (traindeck-train --version: version, BLAS, GPU path).
nlohmann::json capture_engine(const std::string& train_binary, double seconds = 30);

} // namespace traindeck::worker
