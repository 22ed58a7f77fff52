#pragma once
// Whether this build can train on a GPU here. Builds without TRAINDECK_CUDA answer "no" without
// touching any CUDA library; CUDA builds ask the runtime, so a machine with no GPU gets a clear message.
#include <string>

namespace traindeck::engine {

struct CudaProbe {
    bool available = false;
    int devices = 0;
    std::string message; // one line for the user, e.g. "no CUDA device (...); training on CPU"
};

CudaProbe probe_cuda();

} // namespace traindeck::engine
