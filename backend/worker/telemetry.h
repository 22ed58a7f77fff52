#pragma once
// Telemetry: GPUs through NVML opened with dlopen (as nvtop does: the build needs no driver, and a machine
// without one simply has no GPUs), processes and the host through /proc.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include <sys/types.h>

namespace traindeck::worker {

struct GpuSample {
    int index = 0;
    std::string name;
    double utilization = 0;    // percent
    double memory_used_mb = 0;
    double memory_total_mb = 0;
    double power_w = 0;
    double temperature_c = 0;
};

struct HostSample {
    double cpu_percent = 0; // of all cores, since the previous sample
    int cpu_count = 0;
    double memory_used_mb = 0, memory_total_mb = 0;
};

struct ProcessSample {
    bool alive = false;
    double cpu_percent = 0; // of one core, since the previous sample of this pid
    double rss_mb = 0;
};

class Telemetry {
public:
    Telemetry();
    ~Telemetry();
    Telemetry(const Telemetry&) = delete;
    Telemetry& operator=(const Telemetry&) = delete;

    // "" when NVML loaded; else why not (e.g. "no NVIDIA GPU (libnvidia-ml.so.1 not found)").
    const std::string& gpu_status() const { return gpu_status_; }
    int gpu_count() const { return static_cast<int>(devices_.size()); }
    std::vector<GpuSample> sample_gpus();
    HostSample sample_host();
    // CPU% is measured between two calls for the same pid.
    ProcessSample sample_process(pid_t pid);
    void forget_process(pid_t pid);

private:
    struct Nvml;
    Nvml* nvml_ = nullptr;
    std::vector<void*> devices_;
    std::string gpu_status_;
    uint64_t last_host_busy_ = 0, last_host_total_ = 0;
    struct ProcessTimes {
        pid_t pid;
        uint64_t ticks;
        double at;
    };
    std::vector<ProcessTimes> last_process_;
};

} // namespace traindeck::worker
