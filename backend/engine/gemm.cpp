#include "gemm.h"

#include "parallel.h"

#include <algorithm>
#include <thread>

// OpenBLAS's cblas.h (found through pkg-config) also declares its thread and config controls.
#include <cblas.h>

namespace traindeck::engine {

// OpenBLAS runs single-threaded and our own pool splits each product into one block of C per thread.
// OpenBLAS's threads spin (sched_yield) after every call; on two cores that spin fought the pool that runs
// im2col, pooling and activations and cost a third of the CNN's time. One pool for everything avoids it,
// and a fixed split keeps results independent of timing.
void gemm(bool transpose_a, bool transpose_b, int m, int n, int k, float alpha, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc) {
    const auto ta = transpose_a ? CblasTrans : CblasNoTrans;
    const auto tb = transpose_b ? CblasTrans : CblasNoTrans;
    const int threads = parallel_threads();
    // Too small to be worth splitting: a block per thread must still fill the kernel's registers.
    if (threads == 1 || static_cast<double>(m) * n * k < 2e5) {
        cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    if (m >= n) {
        // Rows of C: rows of op(A). op(A) row i starts at a + i*lda, or at column i (a + i) when transposed.
        parallel_for(threads, [&](size_t first, size_t last) {
            for (size_t part = first; part < last; ++part) {
                const int row0 = static_cast<int>(m * part / threads), row1 = static_cast<int>(m * (part + 1) / threads);
                if (row1 <= row0)
                    continue;
                const float* a_block = transpose_a ? a + row0 : a + static_cast<size_t>(row0) * lda;
                cblas_sgemm(CblasRowMajor, ta, tb, row1 - row0, n, k, alpha, a_block, lda, b, ldb, beta,
                            c + static_cast<size_t>(row0) * ldc, ldc);
            }
        });
    } else {
        // Columns of C: columns of op(B). op(B) column j is b + j, or row j (b + j*ldb) when transposed.
        parallel_for(threads, [&](size_t first, size_t last) {
            for (size_t part = first; part < last; ++part) {
                const int col0 = static_cast<int>(n * part / threads), col1 = static_cast<int>(n * (part + 1) / threads);
                if (col1 <= col0)
                    continue;
                const float* b_block = transpose_b ? b + static_cast<size_t>(col0) * ldb : b + col0;
                cblas_sgemm(CblasRowMajor, ta, tb, m, col1 - col0, k, alpha, a, lda, b_block, ldb, beta, c + col0, ldc);
            }
        });
    }
}

void set_compute_threads(int threads) {
    if (threads <= 0)
        threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    openblas_set_num_threads(1);
    set_parallel_threads(threads);
}

int compute_threads() { return parallel_threads(); }

const char* blas_description() { return openblas_get_config(); }

} // namespace traindeck::engine
