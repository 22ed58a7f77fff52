#pragma once
// The CUDA twins of the engine's element-wise layers, its gemm seam and the NCCL all-reduce.
// Pointers are device pointers; every call is asynchronous on the given stream. Each kernel computes
// exactly what its CPU twin in layers.cpp / optimizer.cpp computes (checked by traindeck-cuda-check).
#include <cstddef>
#include <cstdint>
#include <string>

typedef struct CUstream_st* cudaStream_t;
typedef struct cublasContext* cublasHandle_t;

namespace traindeck::engine::cuda {

void relu_forward(float* y, const float* x, size_t n, cudaStream_t stream);
void relu_backward(float* dx, const float* dy, const float* y, size_t n, cudaStream_t stream);
void gelu_forward(float* y, const float* x, size_t n, cudaStream_t stream);
void gelu_backward(float* dx, const float* dy, const float* x, size_t n, cudaStream_t stream);
// Per-row softmax and cross-entropy; loss_per_row[b] is the row's loss (summed on the host).
void softmax_cross_entropy_forward(float* probs, float* loss_per_row, const float* logits, const int32_t* labels,
                                   int batch, int classes, cudaStream_t stream);
void softmax_cross_entropy_backward(float* dlogits, const float* probs, const int32_t* labels, int batch, int classes,
                                    float scale, cudaStream_t stream);
void sgd_step(float* params, const float* grads, float* momentum, size_t n, float lr, float momentum_factor,
              float weight_decay, cudaStream_t stream);

// Row-major C[M,N] = alpha op(A) op(B) + beta C through cuBLAS (which is column-major: we compute C^T = B^T A^T).
bool gemm(cublasHandle_t handle, bool transpose_a, bool transpose_b, int m, int n, int k, float alpha, const float* a,
          int lda, const float* b, int ldb, float beta, float* c, int ldc);

// Data-parallel gradient sum across ranks. The unique id is 128 bytes that rank 0 creates and the worker
// hands to every rank (TRAINDECK_NCCL_ID, hex); ranks come from WORLD_SIZE and LOCAL_RANK.
struct NcclComm;
std::string nccl_unique_id_hex();
NcclComm* nccl_init(const std::string& unique_id_hex, int world_size, int rank, std::string& error);
bool nccl_all_reduce_sum(NcclComm* comm, float* buffer, size_t n, cudaStream_t stream, std::string& error);
bool nccl_all_reduce_sum_double(NcclComm* comm, double* buffer, size_t n, cudaStream_t stream, std::string& error);
void nccl_destroy(NcclComm* comm);

} // namespace traindeck::engine::cuda
