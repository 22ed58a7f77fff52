#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace traindeck::worker {

struct WorkerConfig {
    std::string state_dir;     // database, token, job folders
    std::string train_binary;  // traindeck-train, for built-in jobs
    std::string self_binary;   // traindeck-worker, started as each job's shim
    std::string listen_host = "127.0.0.1";
    int listen_port = 7878;    // 0 = any free port (printed and written to state_dir/port)
    std::string tls_cert, tls_key;
    int cpu_slots = 0;         // 0 = the machine's cores
    int64_t memory_mb = 0;     // 0 = the machine's memory
    // Prices in money units per hour: a job's rate is base + gpu × its GPUs + cpu × its CPUs.
    double price_base = 0.0, price_gpu = 0.0, price_cpu = 0.0;
    std::string currency = "USD";
    // Idle policy: a job whose GPUs (CPU-only jobs: its CPUs) stay under idle_percent for idle_seconds is reported,
    // and stopped (checkpoint first) when idle_stop is set.
    double idle_percent = 5.0;
    double idle_seconds = 600.0;
    bool idle_stop = false;
    // A job's budget: a warning once its spend reaches this percent of it (a stop at 100 %).
    double budget_warn_percent = 80.0;
    double stop_grace_seconds = 60.0; // SIGTERM, then SIGKILL after this long
    int64_t max_body_bytes = 1 << 20;
    // "local": jobs are processes here. "slurm": jobs are Slurm batch jobs (the state folder must be on a
    // filesystem the cluster's nodes share); Slurm schedules them, this worker watches and ingests.
    std::string executor = "local";
    std::string version;                      // TrainDeck's, recorded in each run's capture
    std::vector<std::string> capture_exclude; // never-captured patterns besides the built-in secrets (capture.h)
    std::string slurm_rest, slurm_user, slurm_token_file, slurm_partition, slurm_conf;
};

} // namespace traindeck::worker
