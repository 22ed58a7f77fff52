// probe_cuda() for builds without TRAINDECK_CUDA: never a GPU, whatever the machine has.
#include "devicecheck.h"

namespace traindeck::engine {

CudaProbe probe_cuda() {
    CudaProbe probe;
    probe.device_node = nvidia_device_node_present();
    probe.message = "this build has no CUDA support (configure with -DTRAINDECK_CUDA=ON where the CUDA toolkit is "
                    "installed); training on CPU";
    return probe;
}

} // namespace traindeck::engine
