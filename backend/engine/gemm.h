#pragma once
// The one seam to BLAS: every matrix product in the engine goes through gemm(), row-major.
namespace traindeck::engine {

// C[M,N] = alpha * op(A)[M,K] * op(B)[K,N] + beta * C, all row-major with leading dimensions.
void gemm(bool transpose_a, bool transpose_b, int m, int n, int k, float alpha, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc);

// Threads BLAS may use; 0 leaves the library's default.
void set_compute_threads(int threads);
int compute_threads();
// Which BLAS answers gemm(), e.g. "OpenBLAS 0.3.21 ... Haswell MAX_THREADS=64".
const char* blas_description();

} // namespace traindeck::engine
