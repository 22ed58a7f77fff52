#pragma once
// Whether this build can train on a GPU here. Builds without TRAINDECK_CUDA answer "no" without
// touching any CUDA library; CUDA builds ask the runtime, so a machine with no GPU gets a clear message.
// A machine that has NVIDIA device nodes but whose runtime finds no device is told apart from one without a
// GPU: that is a broken driver (or a container without GPU access), and the checkers fail on it instead of
// skipping.
#include <cctype>
#include <filesystem>
#include <string>

namespace traindeck::engine {

struct CudaProbe {
    bool available = false;
    int devices = 0;
    bool device_node = false; // /dev/nvidiactl or /dev/nvidiaN exists: a GPU and its driver should be usable here
    std::string message;      // one line for the user, e.g. "no CUDA device (...); training on CPU"
};

CudaProbe probe_cuda();

// Whether /dev/nvidiactl or any /dev/nvidiaN exists. No CUDA call, so it also answers where the driver is broken
// (and in builds without CUDA); a container given one GPU may have /dev/nvidia3 and no /dev/nvidia0.
inline bool nvidia_device_node_present() {
    std::error_code error;
    if (std::filesystem::exists("/dev/nvidiactl", error))
        return true;
    for (const auto& entry : std::filesystem::directory_iterator("/dev", error)) {
        const std::string name = entry.path().filename().string();
        if (name.size() > 6 && name.compare(0, 6, "nvidia") == 0 && std::isdigit(static_cast<unsigned char>(name[6])))
            return true;
    }
    return false;
}

} // namespace traindeck::engine
