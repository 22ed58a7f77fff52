#include "cudakernels.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>

namespace traindeck::engine::cuda {
namespace {

constexpr int kThreads = 256;
constexpr float kGeluScale = 0.7978845608028654f;

unsigned blocks_for(size_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

__global__ void relu_forward_kernel(float* y, const float* x, size_t n) {
    const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (i < n)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

__global__ void relu_backward_kernel(float* dx, const float* dy, const float* y, size_t n) {
    const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (i < n)
        dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

__global__ void gelu_forward_kernel(float* y, const float* x, size_t n) {
    const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (i < n) {
        const float v = x[i];
        y[i] = 0.5f * v * (1.0f + tanhf(kGeluScale * (v + 0.044715f * v * v * v)));
    }
}

__global__ void gelu_backward_kernel(float* dx, const float* dy, const float* x, size_t n) {
    const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (i < n) {
        const float v = x[i];
        const float t = tanhf(kGeluScale * (v + 0.044715f * v * v * v));
        const float local = 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * kGeluScale * (1.0f + 3.0f * 0.044715f * v * v);
        dx[i] = dy[i] * local;
    }
}

// One block per row: classes are few (tens), so a simple loop per thread-0 is enough and exact.
__global__ void softmax_xent_forward_kernel(float* probs, float* loss, const float* logits, const int32_t* labels,
                                            int classes) {
    const int row = blockIdx.x;
    if (threadIdx.x != 0)
        return;
    const float* z = logits + static_cast<size_t>(row) * classes;
    float* p = probs + static_cast<size_t>(row) * classes;
    float max_logit = z[0];
    for (int c = 1; c < classes; ++c)
        max_logit = fmaxf(max_logit, z[c]);
    double sum = 0.0;
    for (int c = 0; c < classes; ++c) {
        p[c] = expf(z[c] - max_logit);
        sum += p[c];
    }
    const float inv = static_cast<float>(1.0 / sum);
    for (int c = 0; c < classes; ++c)
        p[c] *= inv;
    loss[row] = static_cast<float>(log(sum) + max_logit - z[labels[row]]);
}

__global__ void softmax_xent_backward_kernel(float* dlogits, const float* probs, const int32_t* labels, int batch,
                                             int classes, float scale) {
    const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (i >= static_cast<size_t>(batch) * classes)
        return;
    const int row = static_cast<int>(i / classes), c = static_cast<int>(i % classes);
    dlogits[i] = probs[i] * scale - (c == labels[row] ? scale : 0.0f);
}

__global__ void sgd_kernel(float* params, const float* grads, float* momentum, size_t n, float lr, float factor,
                           float weight_decay) {
    const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (i < n) {
        const float g = grads[i] + weight_decay * params[i];
        momentum[i] = factor * momentum[i] + g;
        params[i] -= lr * momentum[i];
    }
}

} // namespace

void relu_forward(float* y, const float* x, size_t n, cudaStream_t stream) {
    relu_forward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(y, x, n);
}
void relu_backward(float* dx, const float* dy, const float* y, size_t n, cudaStream_t stream) {
    relu_backward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dx, dy, y, n);
}
void gelu_forward(float* y, const float* x, size_t n, cudaStream_t stream) {
    gelu_forward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(y, x, n);
}
void gelu_backward(float* dx, const float* dy, const float* x, size_t n, cudaStream_t stream) {
    gelu_backward_kernel<<<blocks_for(n), kThreads, 0, stream>>>(dx, dy, x, n);
}
void softmax_cross_entropy_forward(float* probs, float* loss_per_row, const float* logits, const int32_t* labels,
                                   int batch, int classes, cudaStream_t stream) {
    softmax_xent_forward_kernel<<<batch, 32, 0, stream>>>(probs, loss_per_row, logits, labels, classes);
}
void softmax_cross_entropy_backward(float* dlogits, const float* probs, const int32_t* labels, int batch, int classes,
                                    float scale, cudaStream_t stream) {
    softmax_xent_backward_kernel<<<blocks_for(size_t(batch) * classes), kThreads, 0, stream>>>(dlogits, probs, labels,
                                                                                               batch, classes, scale);
}
void sgd_step(float* params, const float* grads, float* momentum, size_t n, float lr, float momentum_factor,
              float weight_decay, cudaStream_t stream) {
    sgd_kernel<<<blocks_for(n), kThreads, 0, stream>>>(params, grads, momentum, n, lr, momentum_factor, weight_decay);
}

bool gemm(cublasHandle_t handle, bool transpose_a, bool transpose_b, int m, int n, int k, float alpha, const float* a,
          int lda, const float* b, int ldb, float beta, float* c, int ldc) {
    // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands, keep the flags.
    return cublasSgemm(handle, transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N, transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k,
                       &alpha, b, ldb, a, lda, &beta, c, ldc) == CUBLAS_STATUS_SUCCESS;
}

struct NcclComm {
    ncclComm_t comm = nullptr;
};

std::string nccl_unique_id_hex() {
    ncclUniqueId id;
    if (ncclGetUniqueId(&id) != ncclSuccess)
        return {};
    std::string hex;
    char byte[3];
    for (unsigned char c : id.internal) {
        std::snprintf(byte, sizeof(byte), "%02x", c);
        hex += byte;
    }
    return hex;
}

NcclComm* nccl_init(const std::string& unique_id_hex, int world_size, int rank, std::string& error) {
    ncclUniqueId id;
    if (unique_id_hex.size() != 2 * sizeof(id.internal)) {
        error = "NCCL unique id must be " + std::to_string(2 * sizeof(id.internal)) + " hex digits";
        return nullptr;
    }
    for (size_t i = 0; i < sizeof(id.internal); ++i)
        id.internal[i] = static_cast<char>(std::stoi(unique_id_hex.substr(2 * i, 2), nullptr, 16));
    auto* comm = new NcclComm;
    const ncclResult_t result = ncclCommInitRank(&comm->comm, world_size, id, rank);
    if (result != ncclSuccess) {
        error = std::string("ncclCommInitRank: ") + ncclGetErrorString(result);
        delete comm;
        return nullptr;
    }
    return comm;
}

bool nccl_all_reduce_sum(NcclComm* comm, float* buffer, size_t n, cudaStream_t stream, std::string& error) {
    const ncclResult_t result = ncclAllReduce(buffer, buffer, n, ncclFloat, ncclSum, comm->comm, stream);
    if (result != ncclSuccess)
        error = std::string("ncclAllReduce: ") + ncclGetErrorString(result);
    return result == ncclSuccess;
}

bool nccl_all_reduce_sum_double(NcclComm* comm, double* buffer, size_t n, cudaStream_t stream, std::string& error) {
    const ncclResult_t result = ncclAllReduce(buffer, buffer, n, ncclDouble, ncclSum, comm->comm, stream);
    if (result != ncclSuccess)
        error = std::string("ncclAllReduce: ") + ncclGetErrorString(result);
    return result == ncclSuccess;
}

void nccl_destroy(NcclComm* comm) {
    if (comm) {
        ncclCommDestroy(comm->comm);
        delete comm;
    }
}

} // namespace traindeck::engine::cuda
