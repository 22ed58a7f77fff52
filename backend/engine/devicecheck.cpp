#include "devicecheck.h"

namespace traindeck::engine {

CudaProbe probe_cuda() {
    return {false, 0, "this build has no CUDA support (configure with -DTRAINDECK_CUDA=ON where the CUDA toolkit is "
                      "installed); training on CPU"};
}

} // namespace traindeck::engine
