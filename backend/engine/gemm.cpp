#include "gemm.h"

#include "parallel.h"

// OpenBLAS's cblas.h (found through pkg-config) also declares its thread and config controls.
#include <cblas.h>

namespace traindeck::engine {

void gemm(bool transpose_a, bool transpose_b, int m, int n, int k, float alpha, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc) {
    cblas_sgemm(CblasRowMajor, transpose_a ? CblasTrans : CblasNoTrans, transpose_b ? CblasTrans : CblasNoTrans,
                m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void set_compute_threads(int threads) {
    if (threads <= 0)
        threads = openblas_get_num_threads();
    openblas_set_num_threads(threads);
    set_parallel_threads(threads);
}

int compute_threads() { return openblas_get_num_threads(); }

const char* blas_description() { return openblas_get_config(); }

} // namespace traindeck::engine
