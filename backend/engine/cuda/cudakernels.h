#pragma once
// The CUDA twins of the engine's element-wise layers and optimisers, its gemm seam and the NCCL all-reduce.
// Pointers are device pointers; every call is asynchronous on the given stream. Each kernel computes
// exactly what its CPU twin in layers.cpp / optimizer.cpp computes (checked by traindeck-cuda-check).
// Every call checks its launch or library status and throws GpuError (gpumodel.h) on a failure.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

typedef struct CUstream_st* cudaStream_t;
typedef struct cublasContext* cublasHandle_t;

namespace traindeck::engine::cuda {

void relu_forward(float* y, const float* x, size_t n, cudaStream_t stream);
void relu_backward(float* dx, const float* dy, const float* y, size_t n, cudaStream_t stream);
void gelu_forward(float* y, const float* x, size_t n, cudaStream_t stream);
void gelu_backward(float* dx, const float* dy, const float* x, size_t n, cudaStream_t stream);
// Per-row softmax and cross-entropy with label smoothing ε (0: plain); loss_per_row[b] is the row's loss (summed on
// the host).
void softmax_cross_entropy_forward(float* probs, float* loss_per_row, const float* logits, const int32_t* labels,
                                   int batch, int classes, float smoothing, cudaStream_t stream);
void softmax_cross_entropy_backward(float* dlogits, const float* probs, const int32_t* labels, int batch, int classes,
                                    float scale, float smoothing, cudaStream_t stream);
// A regression (one output a row): loss_per_row[b] = (outputs[b] − targets[b])², doutputs[b] = 2·(outputs[b] −
// targets[b])·scale, as the CPU's squared_error (layers.h).
void squared_error(float* doutputs, float* loss_per_row, const float* outputs, const float* targets, int batch,
                   float scale, cudaStream_t stream);
void sgd_step(float* params, const float* grads, float* momentum, size_t n, float lr, float momentum_factor,
              float weight_decay, cudaStream_t stream);
// One AdamW step over n parameters of one tensor, as Optimizer::step does for AdamW: `step` counts from 1 (bias
// correction); weight_decay is 0 for tensors without decay (biases).
void adamw_step(float* params, const float* grads, float* m, float* v, size_t n, float lr, float beta1, float beta2,
                float eps, float weight_decay, long step, cudaStream_t stream);

// Batch normalisation over the channel axis of x[rows, C], layers.h's twins: one block a channel sums in double
// (two passes: the mean, then the squared deviations from the float mean, as the CPU does). mean and inv_std are
// [C] outputs kept for backward; the running statistics move by momentum (variance unbiased).
void batchnorm_forward_training(float* y, float* xhat, float* mean, float* inv_std, float* running_mean,
                                float* running_var, const float* x, const float* gamma, const float* beta, size_t rows,
                                int c, float momentum, float eps, cudaStream_t stream);
void batchnorm_forward_inference(float* y, const float* x, const float* gamma, const float* beta,
                                 const float* running_mean, const float* running_var, size_t rows, int c, float eps,
                                 cudaStream_t stream);
// dγ, dβ accumulate; dx (may be null) is overwritten. scratch: 2·C floats.
void batchnorm_backward(float* dx, float* dgamma, float* dbeta, float* scratch, const float* dy, const float* xhat,
                        const float* inv_std, const float* gamma, size_t rows, int c, cudaStream_t stream);
// Average pooling (no padding) and global average pooling, NHWC; backward overwrites dx, one thread an input value
// summing the windows that cover it (no atomics: the same answer every run).
void avgpool_forward(float* y, const float* x, int batch, int h, int w, int c, int size, int stride,
                     cudaStream_t stream);
void avgpool_backward(float* dx, const float* dy, int batch, int h, int w, int c, int size, int stride,
                      cudaStream_t stream);
void global_avgpool_forward(float* y, const float* x, int batch, int positions, int c, cudaStream_t stream);
void global_avgpool_backward(float* dx, const float* dy, int batch, int positions, int c, cudaStream_t stream);
// y = a + b (y may be a: a residual's gradient joining its source's).
void add(float* y, const float* a, const float* b, size_t n, cudaStream_t stream);

// Row-major C[M,N] = alpha op(A) op(B) + beta C through cuBLAS (which is column-major: we compute C^T = B^T A^T).
// fp32 inputs; whether TF32 tensor cores may be used is the handle's math mode (cublasSetMathMode).
void gemm(cublasHandle_t handle, bool transpose_a, bool transpose_b, int m, int n, int k, float alpha, const float* a,
          int lda, const float* b, int ldb, float beta, float* c, int ldc);

// Data-parallel gradient sum across ranks. The unique id is 128 bytes that rank 0 creates and the worker
// hands to every rank (TRAINDECK_NCCL_ID, hex); ranks come from WORLD_SIZE and LOCAL_RANK.
//
// The communicator is non-blocking: no NCCL call and no wait on a stream with NCCL work in it can block for
// good. Each wait polls the communicator's asynchronous error, `peer_gone` (a non-empty answer is a peer that
// has gone) and the timeout; any of them aborts the communicator and throws GpuError with the reason. After a
// throw the communicator is aborted and only nccl_destroy may be called on it.
struct NcclComm;
using PeerWatch = std::function<std::string()>;
std::string nccl_unique_id_hex(); // throws GpuError when NCCL cannot make one
NcclComm* nccl_init(const std::string& unique_id_hex, int world_size, int rank, double timeout_seconds,
                    const PeerWatch& peer_gone);
// Enqueue an in-place sum on `stream`; call nccl_wait before reading the result on the host.
void nccl_all_reduce_sum(NcclComm* comm, float* buffer, size_t n, cudaStream_t stream, const PeerWatch& peer_gone);
void nccl_all_reduce_sum_double(NcclComm* comm, double* buffer, size_t n, cudaStream_t stream,
                                const PeerWatch& peer_gone);
// Waits until everything enqueued on `stream` is done; `what` names the wait in messages ("the gradient all-reduce").
void nccl_wait(NcclComm* comm, cudaStream_t stream, const char* what, const PeerWatch& peer_gone);
// Aborts the communicator's outstanding work at once (the peers' next wait fails instead of hanging).
void nccl_abort(NcclComm* comm);
// Finalises and frees a healthy communicator (bounded by its timeout), aborts one that failed; never throws.
void nccl_destroy(NcclComm* comm);

} // namespace traindeck::engine::cuda
