#pragma once
// A small fork-join pool for the loops BLAS does not run (im2col, pooling, activations).
// Its threads sleep on a condition variable between loops: OpenBLAS already spins its own threads
// after every gemm, and a second spinning pool (OpenMP's default) fights it for the same cores.
#include <cstddef>
#include <functional>

namespace traindeck::engine {

// Splits [0, count) into one contiguous range per thread (a fixed split, so results never depend on timing)
// and runs body(begin, end) on each; the calling thread takes the first range. Small loops run inline.
void parallel_for(size_t count, const std::function<void(size_t begin, size_t end)>& body, size_t min_per_thread = 1);

// Threads parallel_for uses (the caller included); set from set_compute_threads().
void set_parallel_threads(int threads);
int parallel_threads();

} // namespace traindeck::engine
