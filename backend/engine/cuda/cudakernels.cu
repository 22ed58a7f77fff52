// The CUDA twins of layers.cpp's element-wise layers and optimizer.cpp's SGD and AdamW, the cuBLAS gemm seam,
// and NCCL behind non-blocking communicators whose every wait is bounded (see cudakernels.h).
#include "cudakernels.h"

#include "cudastatus.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <thread>

namespace traindeck::engine::cuda {
namespace {

constexpr int kThreads = 256;
constexpr float kGeluScale = 0.7978845608028654f;

unsigned blocks_for(size_t n) {
    return static_cast<unsigned>((n + kThreads - 1) / kThreads);
}

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
        const float local =
            0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * kGeluScale * (1.0f + 3.0f * 0.044715f * v * v);
        dx[i] = dy[i] * local;
    }
}

// One block per row: classes are few (tens), so a simple loop per thread-0 is enough and exact.
__global__ void softmax_xent_forward_kernel(float* probs, float* loss, const float* logits, const int32_t* labels,
                                            int classes, float smoothing) {
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
    const double log_sum = log(sum) + max_logit;
    if (smoothing == 0.0f) {
        loss[row] = static_cast<float>(log_sum - z[labels[row]]);
        return;
    }
    double logit_sum = 0.0;
    for (int c = 0; c < classes; ++c)
        logit_sum += z[c];
    loss[row] = static_cast<float>((1.0 - smoothing) * (log_sum - z[labels[row]]) +
                                   smoothing * (log_sum - logit_sum / classes));
}

__global__ void softmax_xent_backward_kernel(float* dlogits, const float* probs, const int32_t* labels, int batch,
                                             int classes, float scale, float smoothing) {
    const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (i >= static_cast<size_t>(batch) * classes)
        return;
    const int row = static_cast<int>(i / classes), c = static_cast<int>(i % classes);
    const float spread = smoothing / static_cast<float>(classes) * scale;
    dlogits[i] = probs[i] * scale - spread - (c == labels[row] ? scale - smoothing * scale : 0.0f);
}

// A regression's loss, as layers.cpp squared_error: per row (output − target)², and the gradient 2·error·scale.
__global__ void squared_error_kernel(float* doutputs, float* loss_per_row, const float* outputs, const float* targets,
                                     int batch, float scale) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= batch)
        return;
    const float error = outputs[row] - targets[row];
    loss_per_row[row] = error * error;
    doutputs[row] = 2.0f * error * scale;
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

__global__ void adamw_kernel(float* params, const float* grads, float* m, float* v, size_t n, float b1, float b2,
                             float step_size, float inv_sqrt_c2, float eps, float decay) {
    const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (i < n) {
        const float g = grads[i];
        m[i] = b1 * m[i] + (1.0f - b1) * g;
        v[i] = b2 * v[i] + (1.0f - b2) * g * g;
        params[i] = params[i] * decay - step_size * m[i] / (sqrtf(v[i]) * inv_sqrt_c2 + eps);
    }
}

constexpr int kReduceThreads = 256;

// Sums v over a block's threads in double; thread 0 holds the total (others: garbage). Calls __syncthreads.
__device__ double block_sum(double v, double* shared) {
    shared[threadIdx.x] = v;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half)
            shared[threadIdx.x] += shared[threadIdx.x + half];
        __syncthreads();
    }
    const double total = shared[0];
    __syncthreads();
    return total;
}

// One block a channel k: mean, 1/σ, and the running statistics' update.
__global__ void batchnorm_stats_kernel(float* mean, float* inv_std, float* running_mean, float* running_var,
                                       const float* x, size_t rows, int c, float momentum, float eps) {
    __shared__ double shared[kReduceThreads];
    const int k = blockIdx.x;
    double sum = 0.0;
    for (size_t r = threadIdx.x; r < rows; r += blockDim.x)
        sum += x[r * c + k];
    const float m = static_cast<float>(block_sum(sum, shared) / static_cast<double>(rows));
    double squares = 0.0;
    for (size_t r = threadIdx.x; r < rows; r += blockDim.x) {
        const double d = static_cast<double>(x[r * c + k]) - m;
        squares += d * d;
    }
    squares = block_sum(squares, shared);
    if (threadIdx.x != 0)
        return;
    const double variance = squares / static_cast<double>(rows);
    mean[k] = m;
    inv_std[k] = static_cast<float>(1.0 / sqrt(variance + eps));
    const double unbiased = rows > 1 ? squares / static_cast<double>(rows - 1) : variance;
    running_mean[k] = (1.0f - momentum) * running_mean[k] + momentum * m;
    running_var[k] = (1.0f - momentum) * running_var[k] + momentum * static_cast<float>(unbiased);
}

__global__ void batchnorm_apply_kernel(float* y, float* xhat, const float* x, const float* mean, const float* inv_std,
                                       const float* gamma, const float* beta, size_t n, int c) {
    const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (i >= n)
        return;
    const int k = static_cast<int>(i % c);
    const float normalized = (x[i] - mean[k]) * inv_std[k];
    xhat[i] = normalized;
    y[i] = normalized * gamma[k] + beta[k];
}

__global__ void batchnorm_inference_kernel(float* y, const float* x, const float* gamma, const float* beta,
                                           const float* running_mean, const float* running_var, size_t n, int c,
                                           float eps) {
    const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (i >= n)
        return;
    const int k = static_cast<int>(i % c);
    const float scale = gamma[k] / sqrtf(running_var[k] + eps);
    y[i] = x[i] * scale + (beta[k] - running_mean[k] * scale);
}

// One block a channel: Σdy and Σdy·x̂ into dβ, dγ, and their means for the input gradient.
__global__ void batchnorm_backward_reduce_kernel(float* dgamma, float* dbeta, float* mean_dy, float* mean_dy_xhat,
                                                 const float* dy, const float* xhat, size_t rows, int c) {
    __shared__ double shared[kReduceThreads];
    const int k = blockIdx.x;
    double sum = 0.0, product = 0.0;
    for (size_t r = threadIdx.x; r < rows; r += blockDim.x) {
        sum += dy[r * c + k];
        product += static_cast<double>(dy[r * c + k]) * xhat[r * c + k];
    }
    sum = block_sum(sum, shared);
    product = block_sum(product, shared);
    if (threadIdx.x != 0)
        return;
    dgamma[k] += static_cast<float>(product);
    dbeta[k] += static_cast<float>(sum);
    mean_dy[k] = static_cast<float>(sum / static_cast<double>(rows));
    mean_dy_xhat[k] = static_cast<float>(product / static_cast<double>(rows));
}

__global__ void batchnorm_backward_apply_kernel(float* dx, const float* dy, const float* xhat, const float* inv_std,
                                                const float* gamma, const float* mean_dy, const float* mean_dy_xhat,
                                                size_t n, int c) {
    const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (i >= n)
        return;
    const int k = static_cast<int>(i % c);
    dx[i] = gamma[k] * inv_std[k] * (dy[i] - mean_dy[k] - xhat[i] * mean_dy_xhat[k]);
}

// One thread an output value (b, oh, ow, ch).
__global__ void avgpool_forward_kernel(float* y, const float* x, int batch, int h, int w, int c, int size, int stride,
                                       int oh_count, int ow_count) {
    const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (i >= static_cast<size_t>(batch) * oh_count * ow_count * c)
        return;
    const int ch = static_cast<int>(i % c);
    const size_t position = i / c;
    const int ow = static_cast<int>(position % ow_count), oh = static_cast<int>(position / ow_count % oh_count);
    const size_t b = position / (static_cast<size_t>(ow_count) * oh_count);
    float sum = 0.0f;
    for (int kh = 0; kh < size; ++kh)
        for (int kw = 0; kw < size; ++kw)
            sum += x[((b * h + oh * stride + kh) * w + ow * stride + kw) * c + ch];
    y[i] = sum * (1.0f / static_cast<float>(size * size));
}

// One thread an input value: the sum of dy over the windows that cover it.
__global__ void avgpool_backward_kernel(float* dx, const float* dy, int batch, int h, int w, int c, int size,
                                        int stride, int oh_count, int ow_count) {
    const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (i >= static_cast<size_t>(batch) * h * w * c)
        return;
    const int ch = static_cast<int>(i % c);
    const size_t position = i / c;
    const int iw = static_cast<int>(position % w), ih = static_cast<int>(position / w % h);
    const size_t b = position / (static_cast<size_t>(w) * h);
    float sum = 0.0f;
    for (int oh = 0; oh < oh_count; ++oh) {
        if (ih < oh * stride || ih >= oh * stride + size)
            continue;
        for (int ow = 0; ow < ow_count; ++ow)
            if (iw >= ow * stride && iw < ow * stride + size)
                sum += dy[((b * oh_count + oh) * ow_count + ow) * c + ch] * (1.0f / static_cast<float>(size * size));
    }
    dx[i] = sum;
}

__global__ void global_avgpool_forward_kernel(float* y, const float* x, int batch, int positions, int c) {
    const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (i >= static_cast<size_t>(batch) * c)
        return;
    const size_t b = i / c;
    const int ch = static_cast<int>(i % c);
    float sum = 0.0f;
    for (int p = 0; p < positions; ++p)
        sum += x[(b * positions + p) * c + ch];
    y[i] = sum * (1.0f / static_cast<float>(positions));
}

__global__ void global_avgpool_backward_kernel(float* dx, const float* dy, int batch, int positions, int c) {
    const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (i >= static_cast<size_t>(batch) * positions * c)
        return;
    const int ch = static_cast<int>(i % c);
    const size_t b = i / (static_cast<size_t>(positions) * c);
    dx[i] = dy[b * c + ch] * (1.0f / static_cast<float>(positions));
}

__global__ void add_kernel(float* y, const float* a, const float* b, size_t n) {
    const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (i < n)
        y[i] = a[i] + b[i];
}

} // namespace

void batchnorm_forward_training(float* y, float* xhat, float* mean, float* inv_std, float* running_mean,
                                float* running_var, const float* x, const float* gamma, const float* beta, size_t rows,
                                int c, float momentum, float eps, cudaStream_t stream) {
    TRAINDECK_LAUNCH(batchnorm_stats_kernel, static_cast<unsigned>(c), kReduceThreads, stream, mean, inv_std,
                     running_mean, running_var, x, rows, c, momentum, eps);
    const size_t n = rows * c;
    TRAINDECK_LAUNCH(batchnorm_apply_kernel, blocks_for(n), kThreads, stream, y, xhat, x, mean, inv_std, gamma, beta, n,
                     c);
}
void batchnorm_forward_inference(float* y, const float* x, const float* gamma, const float* beta,
                                 const float* running_mean, const float* running_var, size_t rows, int c, float eps,
                                 cudaStream_t stream) {
    const size_t n = rows * c;
    TRAINDECK_LAUNCH(batchnorm_inference_kernel, blocks_for(n), kThreads, stream, y, x, gamma, beta, running_mean,
                     running_var, n, c, eps);
}
void batchnorm_backward(float* dx, float* dgamma, float* dbeta, float* scratch, const float* dy, const float* xhat,
                        const float* inv_std, const float* gamma, size_t rows, int c, cudaStream_t stream) {
    TRAINDECK_LAUNCH(batchnorm_backward_reduce_kernel, static_cast<unsigned>(c), kReduceThreads, stream, dgamma, dbeta,
                     scratch, scratch + c, dy, xhat, rows, c);
    if (!dx)
        return;
    const size_t n = rows * c;
    TRAINDECK_LAUNCH(batchnorm_backward_apply_kernel, blocks_for(n), kThreads, stream, dx, dy, xhat, inv_std, gamma,
                     scratch, scratch + c, n, c);
}
void avgpool_forward(float* y, const float* x, int batch, int h, int w, int c, int size, int stride,
                     cudaStream_t stream) {
    const int oh = (h - size) / stride + 1, ow = (w - size) / stride + 1;
    TRAINDECK_LAUNCH(avgpool_forward_kernel, blocks_for(size_t(batch) * oh * ow * c), kThreads, stream, y, x, batch, h,
                     w, c, size, stride, oh, ow);
}
void avgpool_backward(float* dx, const float* dy, int batch, int h, int w, int c, int size, int stride,
                      cudaStream_t stream) {
    const int oh = (h - size) / stride + 1, ow = (w - size) / stride + 1;
    TRAINDECK_LAUNCH(avgpool_backward_kernel, blocks_for(size_t(batch) * h * w * c), kThreads, stream, dx, dy, batch, h,
                     w, c, size, stride, oh, ow);
}
void global_avgpool_forward(float* y, const float* x, int batch, int positions, int c, cudaStream_t stream) {
    TRAINDECK_LAUNCH(global_avgpool_forward_kernel, blocks_for(size_t(batch) * c), kThreads, stream, y, x, batch,
                     positions, c);
}
void global_avgpool_backward(float* dx, const float* dy, int batch, int positions, int c, cudaStream_t stream) {
    TRAINDECK_LAUNCH(global_avgpool_backward_kernel, blocks_for(size_t(batch) * positions * c), kThreads, stream, dx,
                     dy, batch, positions, c);
}
void add(float* y, const float* a, const float* b, size_t n, cudaStream_t stream) {
    TRAINDECK_LAUNCH(add_kernel, blocks_for(n), kThreads, stream, y, a, b, n);
}

void relu_forward(float* y, const float* x, size_t n, cudaStream_t stream) {
    TRAINDECK_LAUNCH(relu_forward_kernel, blocks_for(n), kThreads, stream, y, x, n);
}
void relu_backward(float* dx, const float* dy, const float* y, size_t n, cudaStream_t stream) {
    TRAINDECK_LAUNCH(relu_backward_kernel, blocks_for(n), kThreads, stream, dx, dy, y, n);
}
void gelu_forward(float* y, const float* x, size_t n, cudaStream_t stream) {
    TRAINDECK_LAUNCH(gelu_forward_kernel, blocks_for(n), kThreads, stream, y, x, n);
}
void gelu_backward(float* dx, const float* dy, const float* x, size_t n, cudaStream_t stream) {
    TRAINDECK_LAUNCH(gelu_backward_kernel, blocks_for(n), kThreads, stream, dx, dy, x, n);
}
void softmax_cross_entropy_forward(float* probs, float* loss_per_row, const float* logits, const int32_t* labels,
                                   int batch, int classes, float smoothing, cudaStream_t stream) {
    TRAINDECK_LAUNCH(softmax_xent_forward_kernel, static_cast<unsigned>(std::max(batch, 0)), 32, stream, probs,
                     loss_per_row, logits, labels, classes, smoothing);
}
void softmax_cross_entropy_backward(float* dlogits, const float* probs, const int32_t* labels, int batch, int classes,
                                    float scale, float smoothing, cudaStream_t stream) {
    TRAINDECK_LAUNCH(softmax_xent_backward_kernel, blocks_for(size_t(std::max(batch, 0)) * classes), kThreads, stream,
                     dlogits, probs, labels, batch, classes, scale, smoothing);
}
void squared_error(float* doutputs, float* loss_per_row, const float* outputs, const float* targets, int batch,
                   float scale, cudaStream_t stream) {
    TRAINDECK_LAUNCH(squared_error_kernel, blocks_for(size_t(std::max(batch, 0))), kThreads, stream, doutputs,
                     loss_per_row, outputs, targets, batch, scale);
}
void sgd_step(float* params, const float* grads, float* momentum, size_t n, float lr, float momentum_factor,
              float weight_decay, cudaStream_t stream) {
    TRAINDECK_LAUNCH(sgd_kernel, blocks_for(n), kThreads, stream, params, grads, momentum, n, lr, momentum_factor,
                     weight_decay);
}
void adamw_step(float* params, const float* grads, float* m, float* v, size_t n, float lr, float beta1, float beta2,
                float eps, float weight_decay, long step, cudaStream_t stream) {
    // The same float arithmetic as Optimizer::step, on the host, so both sides divide by the same corrections.
    const float correction1 = 1.0f - std::pow(beta1, static_cast<float>(step));
    const float correction2 = 1.0f - std::pow(beta2, static_cast<float>(step));
    TRAINDECK_LAUNCH(adamw_kernel, blocks_for(n), kThreads, stream, params, grads, m, v, n, beta1, beta2,
                     lr / correction1, 1.0f / std::sqrt(correction2), eps, 1.0f - lr * weight_decay);
}

void gemm(cublasHandle_t handle, bool transpose_a, bool transpose_b, int m, int n, int k, float alpha, const float* a,
          int lda, const float* b, int ldb, float beta, float* c, int ldc) {
    // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands, keep the flags.
    TRAINDECK_CHECK(cublasSgemm(handle, transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b, ldb, a, lda, &beta, c,
                                ldc));
}

struct NcclComm {
    ncclComm_t comm = nullptr; // null once aborted (ncclCommAbort frees it)
    int rank = 0, world_size = 1;
    double timeout_seconds = 300.0;
};

namespace {

using Clock = std::chrono::steady_clock;

std::string nccl_words(const NcclComm* comm, ncclResult_t result) {
    std::string words = ncclGetErrorString(result);
    const char* last = ncclGetLastError(comm ? comm->comm : nullptr);
    if (last && *last)
        words += std::string(" (") + last + ")";
    return words;
}

std::string rank_of(const NcclComm* comm) {
    return "rank " + std::to_string(comm->rank) + " of " + std::to_string(comm->world_size);
}

[[noreturn]] void abort_and_throw(NcclComm* comm, const std::string& message) {
    nccl_abort(comm);
    throw GpuError(message);
}

// Polls `done` until it answers true; meanwhile, about every 10 ms, the communicator's asynchronous error, the peer
// watch and the timeout, any of which aborts the communicator and throws. Spins briefly first (an all-reduce of a
// step usually ends within microseconds of the last rank's arrival), then sleeps in short naps.
template <typename Done> void poll_until(NcclComm* comm, const char* what, const PeerWatch& peer_gone, Done done) {
    const auto start = Clock::now();
    auto next_check = start;
    for (long spins = 0; !done(); ++spins) {
        const auto now = Clock::now();
        if (now >= next_check) {
            next_check = now + std::chrono::milliseconds(10);
            ncclResult_t state = ncclSuccess;
            if (const ncclResult_t queried = ncclCommGetAsyncError(comm->comm, &state); queried != ncclSuccess)
                state = queried;
            if (state != ncclSuccess && state != ncclInProgress) {
                const std::string gone = peer_gone ? peer_gone() : std::string();
                abort_and_throw(comm, "NCCL failed in " + std::string(what) + " on " + rank_of(comm) + ": " +
                                          nccl_words(comm, state) + (gone.empty() ? "" : "; " + gone) +
                                          "; the communicator is aborted. NCCL_DEBUG=WARN tells more");
            }
            if (peer_gone) {
                if (const std::string gone = peer_gone(); !gone.empty())
                    abort_and_throw(
                        comm, gone + ", while " + rank_of(comm) + " waited in " + what +
                                  "; the communicator is aborted (that rank's own message, if it left one, says why)");
            }
            const double waited = std::chrono::duration<double>(now - start).count();
            if (waited > comm->timeout_seconds)
                abort_and_throw(comm, rank_of(comm) + " waited " + std::to_string(static_cast<long>(waited)) +
                                          " s in " + what +
                                          " for the other ranks (one is stuck or gone); the communicator is "
                                          "aborted. If a rank may rightly take longer, raise TRAINDECK_NCCL_TIMEOUT_S");
        }
        if (spins < 2000)
            std::this_thread::yield();
        else
            std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
}

// A non-blocking NCCL call may answer ncclInProgress: no other NCCL call and no kernel on its stream may follow
// until the communicator's state leaves it. `file`/`line` are the call's, for the message.
void settle(NcclComm* comm, ncclResult_t result, const char* call, const char* what, const PeerWatch& peer_gone,
            const char* file, int line) {
    auto failed = [&](ncclResult_t state) {
        abort_and_throw(comm, std::string("NCCL call ") + call + " failed at " + call_site(file, line) + " on " +
                                  rank_of(comm) + " in " + what + ": " + nccl_words(comm, state) +
                                  "; NCCL_DEBUG=WARN tells more");
    };
    if (result != ncclSuccess && result != ncclInProgress)
        failed(result);
    if (result == ncclSuccess)
        return;
    ncclResult_t state = ncclInProgress;
    poll_until(comm, what, peer_gone, [&] {
        if (const ncclResult_t queried = ncclCommGetAsyncError(comm->comm, &state); queried != ncclSuccess)
            state = queried;
        return state != ncclInProgress;
    });
    if (state != ncclSuccess)
        failed(state);
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

} // namespace

std::string nccl_unique_id_hex() {
    ncclUniqueId id;
    TRAINDECK_CHECK(ncclGetUniqueId(&id));
    std::string hex;
    char byte[3];
    for (unsigned char c : id.internal) {
        std::snprintf(byte, sizeof(byte), "%02x", c);
        hex += byte;
    }
    return hex;
}

NcclComm* nccl_init(const std::string& unique_id_hex, int world_size, int rank, double timeout_seconds,
                    const PeerWatch& peer_gone) {
    ncclUniqueId id;
    bool hex = unique_id_hex.size() == 2 * sizeof(id.internal);
    for (size_t i = 0; hex && i < sizeof(id.internal); ++i) {
        const int high = hex_digit(unique_id_hex[2 * i]), low = hex_digit(unique_id_hex[2 * i + 1]);
        hex = high >= 0 && low >= 0;
        id.internal[i] = static_cast<char>(high * 16 + low);
    }
    if (!hex)
        throw GpuError("the NCCL unique id (TRAINDECK_NCCL_ID) must be " + std::to_string(2 * sizeof(id.internal)) +
                       " hex digits, got " + std::to_string(unique_id_hex.size()) +
                       " characters; leave it unset and rank 0 makes one for the ranks it starts");
    auto comm = std::make_unique<NcclComm>();
    comm->rank = rank;
    comm->world_size = world_size;
    comm->timeout_seconds = timeout_seconds;
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0; // every call returns; the waits below poll, so a missing rank cannot hang this one
    const ncclResult_t result = ncclCommInitRankConfig(&comm->comm, world_size, id, rank, &config);
    if (result != ncclSuccess && result != ncclInProgress && !comm->comm)
        throw GpuError("NCCL call ncclCommInitRankConfig failed at " + call_site(__FILE__, __LINE__) + " on " +
                       rank_of(comm.get()) + ": " + nccl_words(nullptr, result) + "; NCCL_DEBUG=WARN tells more");
    settle(comm.get(), result, "ncclCommInitRankConfig", "setting up the communicator (all ranks must join)", peer_gone,
           __FILE__, __LINE__);
    return comm.release();
}

void nccl_all_reduce_sum(NcclComm* comm, float* buffer, size_t n, cudaStream_t stream, const PeerWatch& peer_gone) {
    settle(comm, ncclAllReduce(buffer, buffer, n, ncclFloat, ncclSum, comm->comm, stream), "ncclAllReduce",
           "enqueueing an all-reduce", peer_gone, __FILE__, __LINE__);
}

void nccl_all_reduce_sum_double(NcclComm* comm, double* buffer, size_t n, cudaStream_t stream,
                                const PeerWatch& peer_gone) {
    settle(comm, ncclAllReduce(buffer, buffer, n, ncclDouble, ncclSum, comm->comm, stream), "ncclAllReduce",
           "enqueueing an all-reduce", peer_gone, __FILE__, __LINE__);
}

void nccl_wait(NcclComm* comm, cudaStream_t stream, const char* what, const PeerWatch& peer_gone) {
    cudaError_t status = cudaErrorNotReady;
    poll_until(comm, what, peer_gone, [&] {
        status = cudaStreamQuery(stream);
        return status != cudaErrorNotReady;
    });
    if (status != cudaSuccess) {
        nccl_abort(comm);
        check_status(status, "cudaStreamQuery(stream)", __FILE__, __LINE__);
    }
    // A collective that NCCL gave up on (a peer's connection failed) also ends its kernel: the stream is done, but
    // the buffer holds no sum. Only the communicator's state tells.
    ncclResult_t state = ncclSuccess;
    if (const ncclResult_t queried = ncclCommGetAsyncError(comm->comm, &state); queried != ncclSuccess)
        state = queried;
    if (state != ncclSuccess && state != ncclInProgress)
        abort_and_throw(comm, "NCCL failed in " + std::string(what) + " on " + rank_of(comm) + ": " +
                                  nccl_words(comm, state) +
                                  "; the communicator is aborted. NCCL_DEBUG=WARN tells more");
}

void nccl_abort(NcclComm* comm) {
    if (comm && comm->comm) {
        ncclCommAbort(comm->comm); // frees the communicator; a failure here leaves nothing more to do
        comm->comm = nullptr;
    }
}

void nccl_destroy(NcclComm* comm) {
    if (!comm)
        return;
    if (comm->comm) {
        // Finalize flushes outstanding work without blocking; bounded like every other wait, then freed. One that
        // does not finish in time is aborted: the run's results are already out, so this only warns.
        try {
            settle(comm, ncclCommFinalize(comm->comm), "ncclCommFinalize", "closing the communicator", {}, __FILE__,
                   __LINE__);
            // A failed destroy has already released what it could; aborting it as well would free it twice.
            if (const ncclResult_t destroyed = ncclCommDestroy(comm->comm); destroyed != ncclSuccess)
                std::fprintf(stderr, "traindeck-train: warning: ncclCommDestroy failed on %s: %s\n",
                             rank_of(comm).c_str(), ncclGetErrorString(destroyed));
            comm->comm = nullptr;
        } catch (const GpuError& error) {
            std::fprintf(stderr, "traindeck-train: warning: %s\n", error.what());
        }
    }
    delete comm;
}

} // namespace traindeck::engine::cuda
