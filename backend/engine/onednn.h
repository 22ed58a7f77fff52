#pragma once
// Convolutions through oneDNN (Debian's libdnnl): its JIT kernels for this CPU, on the NHWC activations and
// [O, K, K, C] weights the engine keeps, with no im2col copy.
// Each of the engine's threads runs its own share of the batch with oneDNN held to one thread: oneDNN's OpenMP
// threads would spin against the engine's pool. The shares' weight gradients are summed in a fixed order, so a run
// is the same every time for a fixed thread count, and a resumed run goes on exactly as the uninterrupted one.
#include "layers.h"

#include <string>

namespace traindeck::engine::onednn {

// Whether oneDNN runs this convolution (forward, input and weight gradients) with a JIT kernel on this CPU, not with
// its reference code. The answer depends on the shape and the CPU only, never on the batch. TRAINDECK_ONEDNN=0 in
// the environment turns oneDNN off (the engine's im2col path runs instead).
bool runs(const Conv2dShape& s);

// As conv2d_forward and conv2d_backward in layers.h; backward reads the input x instead of forward's im2col rows.
void conv2d_forward(float* y, const float* x, const float* weight, const float* bias, const Conv2dShape& s);
void conv2d_backward(float* dx, float* dweight, float* dbias, const float* dy, const float* x, const float* weight,
                     const Conv2dShape& s);

// oneDNN's name for the kernel that runs the forward pass of the shape's batch (its first share, on one thread:
// "brgconv:avx512_core", ...); "" when oneDNN does not run the shape.
std::string kernel_name(const Conv2dShape& s);

// "oneDNN 2.6.3 (avx512_core_bf16 kernels)", or that it is turned off: part of the engine's build as a run's
// environment records it, since the kernels decide a run's bits.
std::string description();

} // namespace traindeck::engine::onednn
