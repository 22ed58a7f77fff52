#include "telemetry.h"

#include "clock.h"

#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

#include <dlfcn.h>
#include <unistd.h>

namespace traindeck::worker {

// The few NVML entry points we use, by their C signatures (nvml.h is not needed to build).
struct Telemetry::Nvml {
    void* library = nullptr;
    struct Utilization {
        unsigned gpu, memory;
    };
    struct Memory {
        unsigned long long total, free, used;
    };
    int (*init)() = nullptr;
    int (*shutdown)() = nullptr;
    int (*device_count)(unsigned*) = nullptr;
    int (*handle_by_index)(unsigned, void**) = nullptr;
    int (*name)(void*, char*, unsigned) = nullptr;
    int (*utilization)(void*, Utilization*) = nullptr;
    int (*memory)(void*, Memory*) = nullptr;
    int (*power)(void*, unsigned*) = nullptr;
    int (*temperature)(void*, int, unsigned*) = nullptr;
};

namespace {

template <typename F>
bool load(void* library, const char* symbol, F& out) {
    out = reinterpret_cast<F>(::dlsym(library, symbol));
    return out != nullptr;
}

} // namespace

Telemetry::Telemetry() {
    void* library = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        gpu_status_ = "no NVIDIA GPU (libnvidia-ml.so.1 not found: no driver installed)";
        return;
    }
    auto* nvml = new Nvml;
    nvml->library = library;
    const bool complete = load(library, "nvmlInit_v2", nvml->init) && load(library, "nvmlShutdown", nvml->shutdown) &&
                          load(library, "nvmlDeviceGetCount_v2", nvml->device_count) &&
                          load(library, "nvmlDeviceGetHandleByIndex_v2", nvml->handle_by_index) &&
                          load(library, "nvmlDeviceGetName", nvml->name) &&
                          load(library, "nvmlDeviceGetUtilizationRates", nvml->utilization) &&
                          load(library, "nvmlDeviceGetMemoryInfo", nvml->memory) &&
                          load(library, "nvmlDeviceGetPowerUsage", nvml->power) &&
                          load(library, "nvmlDeviceGetTemperature", nvml->temperature);
    unsigned count = 0;
    if (!complete || nvml->init() != 0 || nvml->device_count(&count) != 0) {
        gpu_status_ = "no NVIDIA GPU (NVML present but did not initialise)";
        ::dlclose(library);
        delete nvml;
        return;
    }
    nvml_ = nvml;
    for (unsigned i = 0; i < count; ++i) {
        void* device = nullptr;
        if (nvml->handle_by_index(i, &device) == 0)
            devices_.push_back(device);
    }
    if (devices_.empty())
        gpu_status_ = "no NVIDIA GPU (NVML found none)";
}

Telemetry::~Telemetry() {
    if (nvml_) {
        nvml_->shutdown();
        ::dlclose(nvml_->library);
        delete nvml_;
    }
}

std::vector<GpuSample> Telemetry::sample_gpus() {
    std::vector<GpuSample> samples;
    for (size_t i = 0; i < devices_.size(); ++i) {
        GpuSample s;
        s.index = static_cast<int>(i);
        char name[96] = {};
        if (nvml_->name(devices_[i], name, sizeof(name)) == 0)
            s.name = name;
        Nvml::Utilization utilization{};
        if (nvml_->utilization(devices_[i], &utilization) == 0)
            s.utilization = utilization.gpu;
        Nvml::Memory memory{};
        if (nvml_->memory(devices_[i], &memory) == 0) {
            s.memory_used_mb = memory.used / 1048576.0;
            s.memory_total_mb = memory.total / 1048576.0;
        }
        unsigned milliwatts = 0, celsius = 0;
        if (nvml_->power(devices_[i], &milliwatts) == 0)
            s.power_w = milliwatts / 1000.0;
        if (nvml_->temperature(devices_[i], 0 /* NVML_TEMPERATURE_GPU */, &celsius) == 0)
            s.temperature_c = celsius;
        samples.push_back(s);
    }
    return samples;
}

HostSample Telemetry::sample_host() {
    HostSample s;
    s.cpu_count = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
    std::ifstream stat("/proc/stat");
    std::string cpu;
    uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
    const uint64_t busy = user + nice + system + irq + softirq + steal;
    const uint64_t total = busy + idle + iowait;
    if (last_host_total_ && total > last_host_total_)
        s.cpu_percent = 100.0 * double(busy - last_host_busy_) / double(total - last_host_total_);
    last_host_busy_ = busy;
    last_host_total_ = total;
    std::ifstream meminfo("/proc/meminfo");
    std::string key;
    uint64_t value = 0, available = 0;
    std::string unit;
    while (meminfo >> key >> value >> unit) {
        if (key == "MemTotal:")
            s.memory_total_mb = value / 1024.0;
        else if (key == "MemAvailable:")
            available = value;
    }
    s.memory_used_mb = s.memory_total_mb - available / 1024.0;
    return s;
}

ProcessSample Telemetry::sample_process(pid_t pid) {
    ProcessSample s;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line))
        return s;
    // Field 2 (comm) may hold spaces; the fields we need come after its closing parenthesis.
    const size_t close = line.rfind(')');
    if (close == std::string::npos)
        return s;
    std::istringstream fields(line.substr(close + 2));
    std::string field;
    uint64_t utime = 0, stime = 0;
    long rss_pages = 0;
    for (int index = 3; fields >> field; ++index) {
        if (index == 14)
            utime = std::stoull(field);
        else if (index == 15)
            stime = std::stoull(field);
        else if (index == 24) {
            rss_pages = std::stol(field);
            break;
        }
    }
    s.alive = true;
    s.rss_mb = rss_pages * double(::sysconf(_SC_PAGESIZE)) / 1048576.0;
    const uint64_t ticks = utime + stime;
    const double at = monotonic_seconds();
    for (auto& last : last_process_) {
        if (last.pid == pid) {
            if (at > last.at)
                s.cpu_percent = 100.0 * double(ticks - last.ticks) / double(::sysconf(_SC_CLK_TCK)) / (at - last.at);
            last = {pid, ticks, at};
            return s;
        }
    }
    last_process_.push_back({pid, ticks, at});
    return s;
}

} // namespace traindeck::worker

namespace traindeck::worker {

void Telemetry::forget_process(pid_t pid) {
    std::erase_if(last_process_, [pid](const ProcessTimes& t) { return t.pid == pid; });
}

} // namespace traindeck::worker
