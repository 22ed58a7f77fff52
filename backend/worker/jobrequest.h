#pragma once
// What a client submits to POST /v1/jobs, validated. Either a built-in trainer spec ("builtin") or a
// command ("argv", run without a shell unless "shell": true).
#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace traindeck::worker {

// A whole GPU in the scheduler's units: a job with gpu_share N takes 1/N of each of its GPUs (N = 1..8 divide it).
inline constexpr int gpu_units = 840;
inline constexpr int max_gpu_share = 8;

struct Resources {
    int gpus = 0;
    int gpu_share = 1; // N small jobs share each GPU (CUDA_VISIBLE_DEVICES names the same one); 1 = a whole GPU
    int cpus = 1;
    int64_t memory_mb = 0;
    int time_minutes = 0; // wall-time limit (Slurm --time); 0 = none

    int units_per_gpu() const { return gpu_units / gpu_share; }
    double gpu_fraction() const { return static_cast<double>(gpus) / gpu_share; } // GPUs' worth it holds (billing)
};

struct JobRequest {
    std::string name;
    nlohmann::json builtin;        // the traindeck-train spec, or null for a command job
    std::vector<std::string> argv; // command jobs
    bool shell = false;            // run argv[0] through /bin/sh -c (only when the user asks)
    std::string cwd;
    std::map<std::string, std::string> env;
    Resources resources;
    int priority = 0;
    double budget = 0.0; // money units; 0 = no cap
    int max_restarts = 0;
    std::string dataset; // a dataset version (64 hex) in the worker's store; its folder is TRAINDECK_DATASET_DIR
    // A version in the store holding checkpoint files (ckpt-*.tdck): copied into the job's checkpoint folder before
    // its first start, so it resumes from there (a job moved from a lost worker).
    std::string checkpoint_from;
    // A code snapshot in the store (what a run's capture stored): the job runs in a writable copy of it, in the
    // snapshot's folder code_cwd. How "Reproduce" gives a run the exact code of another.
    std::string code;
    std::string code_cwd;
    bool capture = true; // capture the job's code and environment as it starts (capture.h)

    nlohmann::json to_json() const;
};

// Parses and checks a request; on failure returns false and sets error to a message naming the field.
bool parse_job_request(const nlohmann::json& body, JobRequest& request, std::string& error);

} // namespace traindeck::worker
