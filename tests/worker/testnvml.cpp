// A test double of NVML for machines without an NVIDIA GPU, built as libnvidia-ml.so.1 in a folder of its own:
// a worker started with that folder on LD_LIBRARY_PATH sees TRAINDECK_TEST_GPUS (default 1) GPUs, so the tests can
// check how jobs are placed on GPUs (sharing, CUDA_VISIBLE_DEVICES) where none exists. Only the entry points
// backend/worker/telemetry.cpp loads, with their C signatures; every device reports the same idle figures.
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

struct Device {
    unsigned index;
};

Device devices[16] = {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}, {9}, {10}, {11}, {12}, {13}, {14}, {15}};

unsigned device_count() {
    const char* text = std::getenv("TRAINDECK_TEST_GPUS");
    const long count = text ? std::strtol(text, nullptr, 10) : 1;
    return count < 0 ? 0 : count > 16 ? 16 : static_cast<unsigned>(count);
}

} // namespace

extern "C" {

struct TestNvmlUtilization {
    unsigned gpu, memory;
};
struct TestNvmlMemory {
    unsigned long long total, free, used;
};

int nvmlInit_v2() { return 0; }
int nvmlShutdown() { return 0; }
int nvmlDeviceGetCount_v2(unsigned* count) {
    *count = device_count();
    return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned index, void** device) {
    if (index >= device_count())
        return 2; // NVML_ERROR_INVALID_ARGUMENT
    *device = &devices[index];
    return 0;
}
int nvmlDeviceGetName(void* device, char* name, unsigned length) {
    std::snprintf(name, length, "TrainDeck test GPU %u", static_cast<Device*>(device)->index);
    return 0;
}
int nvmlDeviceGetUtilizationRates(void*, TestNvmlUtilization* rates) {
    *rates = {0, 0};
    return 0;
}
int nvmlDeviceGetMemoryInfo(void*, TestNvmlMemory* memory) {
    const unsigned long long total = 16ULL << 30;
    *memory = {total, total, 0};
    return 0;
}
int nvmlDeviceGetPowerUsage(void*, unsigned* milliwatts) {
    *milliwatts = 0;
    return 0;
}
int nvmlDeviceGetTemperature(void*, int, unsigned* celsius) {
    *celsius = 30;
    return 0;
}
}
