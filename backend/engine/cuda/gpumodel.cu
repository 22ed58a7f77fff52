#include "gpumodel.h"

#include "cudakernels.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

namespace traindeck::engine {
namespace {

constexpr int kThreads = 256;
constexpr float kGeluScale = 0.7978845608028654f;
unsigned blocks_for(size_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

// activation: 0 none, 1 relu, 2 gelu. pre = z + bias (kept for gelu's backward), post = act(pre).
__global__ void bias_activation_kernel(float* pre, float* post, const float* bias, size_t rows, int columns, int activation) {
    const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (i >= rows * columns)
        return;
    const float v = pre[i] + bias[i % columns];
    pre[i] = v;
    if (activation == 1)
        post[i] = v > 0.0f ? v : 0.0f;
    else if (activation == 2)
        post[i] = 0.5f * v * (1.0f + tanhf(kGeluScale * (v + 0.044715f * v * v * v)));
}

// db[o] += Σ_b dy[b, o]
__global__ void bias_grad_kernel(float* dbias, const float* dy, int rows, int columns) {
    const int o = blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= columns)
        return;
    float sum = 0.0f;
    for (int b = 0; b < rows; ++b)
        sum += dy[static_cast<size_t>(b) * columns + o];
    dbias[o] += sum;
}

__global__ void to_bf16_kernel(__nv_bfloat16* out, const float* in, size_t n) {
    const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    if (i < n)
        out[i] = __float2bfloat16(in[i]);
}

// Adds the micro-batch's loss and correct predictions to the step's accumulators.
__global__ void score_kernel(double* totals, const float* loss_per_row, const float* probs, const int32_t* labels,
                             int batch, int classes) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= batch)
        return;
    const float* p = probs + static_cast<size_t>(row) * classes;
    int best = 0;
    for (int c = 1; c < classes; ++c)
        if (p[c] > p[best])
            best = c;
    atomicAdd(&totals[0], static_cast<double>(loss_per_row[row]));
    if (best == labels[row])
        atomicAdd(&totals[1], 1.0);
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

template <typename T>
struct Device {
    T* data = nullptr;
    size_t n = 0;
    Device() = default;
    Device(Device&& other) noexcept : data(std::exchange(other.data, nullptr)), n(other.n) {}
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;
    void allocate(size_t count) {
        n = count;
        if (count)
            cudaMalloc(&data, count * sizeof(T));
    }
    ~Device() { cudaFree(data); }
};

struct GpuLayer {
    const Layer* layer;
    int activation = 0;       // a linear layer's fused activation (the next layer, then skipped)
    bool fused_away = false;  // an activation folded into the linear before it
};

class CudaModel final : public GpuModel {
public:
    bool init(const Network& net, const OptimizerSpec& optimizer, int max_batch, const GpuOptions& options, std::string& reason) {
        net_ = &net;
        optimizer_ = optimizer;
        options_ = options;
        max_batch_ = max_batch;
        classes_ = net.classes();
        const auto& layers = net.layers();
        for (size_t i = 0; i < layers.size(); ++i) {
            const std::string& type = layers[i].spec.type;
            if (type == "dropout" && layers[i].spec.p > 0.0f) {
                reason = "dropout with p > 0 is not on the GPU path yet (its masks must match the CPU's random stream); "
                         "this model stays on the CPU";
                return false;
            }
            GpuLayer g{&layers[i]};
            const std::string& previous = plan_.empty() ? std::string() : plan_.back().layer->spec.type;
            if ((type == "relu" || type == "gelu") && (previous == "linear" || previous == "conv2d") &&
                plan_.back().activation == 0) {
                plan_.back().activation = type == "relu" ? 1 : 2;
                g.fused_away = true;
            }
            plan_.push_back(g);
        }
        int devices = 0;
        if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
            reason = "no CUDA device";
            return false;
        }
        if (cudaSetDevice(options.rank % devices) != cudaSuccess) {
            reason = "cannot select GPU " + std::to_string(options.rank % devices);
            return false;
        }
        cudaStreamCreate(&stream_);
        if (cublasCreate(&cublas_) != CUBLAS_STATUS_SUCCESS) {
            reason = "cuBLAS could not be initialised";
            return false;
        }
        cublasSetStream(cublas_, stream_);
        if (cudnnCreate(&cudnn_) != CUDNN_STATUS_SUCCESS) {
            reason = "cuDNN could not be initialised";
            return false;
        }
        cudnnSetStream(cudnn_, stream_);
        cudnnCreateTensorDescriptor(&x_desc_);
        cudnnCreateTensorDescriptor(&y_desc_);
        cudnnCreateTensorDescriptor(&bias_desc_);
        cudnnCreateFilterDescriptor(&filter_desc_);
        cudnnCreateConvolutionDescriptor(&conv_desc_);
        cudnnCreatePoolingDescriptor(&pool_desc_);
        const size_t count = net.params().size();
        params_.allocate(count);
        grads_.allocate(count);
        state_[0].allocate(count);
        if (optimizer.type == "adamw")
            state_[1].allocate(count);
        size_t widest = net.layers().front().in.size();
        for (const Layer& l : layers)
            widest = std::max(widest, l.out.size());
        const size_t local = static_cast<size_t>(slice(max_batch).second);
        input_.allocate(std::max<size_t>(1, local) * net.layers().front().in.size());
        outputs_.resize(layers.size());
        douts_.resize(layers.size());
        for (size_t i = 0; i < layers.size(); ++i) {
            outputs_[i].allocate(std::max<size_t>(1, local) * layers[i].out.size());
            douts_[i].allocate(std::max<size_t>(1, local) * layers[i].out.size());
        }
        pre_.resize(layers.size());
        for (size_t i = 0; i < plan_.size(); ++i)
            if (plan_[i].activation)
                pre_[i].allocate(std::max<size_t>(1, local) * layers[i].out.size());
        if (options.bf16) {
            bf16_a_.allocate(std::max<size_t>(1, local) * widest * 2 + count);
            bf16_b_.allocate(std::max<size_t>(1, local) * widest * 2 + count);
        }
        labels_.allocate(std::max<size_t>(1, local));
        probs_.allocate(std::max<size_t>(1, local) * classes_);
        dlogits_.allocate(std::max<size_t>(1, local) * classes_);
        loss_rows_.allocate(std::max<size_t>(1, local));
        totals_.allocate(3); // loss, correct, and a stop vote
        host_logits_.resize(static_cast<size_t>(max_batch) * classes_);
        if (options.world_size > 1) {
            std::string error;
            comm_ = cuda::nccl_init(options.nccl_id, options.world_size, options.rank, error);
            if (!comm_) {
                reason = error;
                return false;
            }
        }
        cudaDeviceProp properties{};
        cudaGetDeviceProperties(&properties, options.rank % devices);
        description_ = std::string(properties.name) + (options.bf16 ? ", bf16 autocast" : ", fp32") +
                       (options.world_size > 1 ? ", rank " + std::to_string(options.rank) + " of " + std::to_string(options.world_size) : "");
        return cudaGetLastError() == cudaSuccess;
    }

    ~CudaModel() override {
        cuda::nccl_destroy(comm_);
        if (cudnn_) {
            cudnnDestroyTensorDescriptor(x_desc_);
            cudnnDestroyTensorDescriptor(y_desc_);
            cudnnDestroyTensorDescriptor(bias_desc_);
            cudnnDestroyFilterDescriptor(filter_desc_);
            cudnnDestroyConvolutionDescriptor(conv_desc_);
            cudnnDestroyPoolingDescriptor(pool_desc_);
            cudnnDestroy(cudnn_);
        }
        if (cublas_)
            cublasDestroy(cublas_);
        if (stream_)
            cudaStreamDestroy(stream_);
    }

    void upload(const std::vector<float>& params, const std::vector<std::vector<float>>& state) override {
        cudaMemcpyAsync(params_.data, params.data(), params.size() * sizeof(float), cudaMemcpyHostToDevice, stream_);
        for (size_t s = 0; s < state.size() && s < 2; ++s)
            if (state_[s].data)
                cudaMemcpyAsync(state_[s].data, state[s].data(), state[s].size() * sizeof(float), cudaMemcpyHostToDevice, stream_);
        cudaStreamSynchronize(stream_);
    }

    void download(std::vector<float>& params, std::vector<std::vector<float>>& state) override {
        cudaMemcpyAsync(params.data(), params_.data, params.size() * sizeof(float), cudaMemcpyDeviceToHost, stream_);
        for (size_t s = 0; s < state.size() && s < 2; ++s)
            if (state_[s].data)
                cudaMemcpyAsync(state[s].data(), state_[s].data, state[s].size() * sizeof(float), cudaMemcpyDeviceToHost, stream_);
        cudaStreamSynchronize(stream_);
    }

    void zero_grads() override {
        cudaMemsetAsync(grads_.data, 0, grads_.n * sizeof(float), stream_);
        cudaMemsetAsync(totals_.data, 0, 2 * sizeof(double), stream_);
    }

    void forward_backward(const float* x, const int32_t* y, int batch, float scale) override {
        const auto [first, count] = slice(batch);
        if (count == 0)
            return;
        const size_t features = net_->layers().front().in.size();
        cudaMemcpyAsync(input_.data, x + static_cast<size_t>(first) * features, count * features * sizeof(float),
                        cudaMemcpyHostToDevice, stream_);
        cudaMemcpyAsync(labels_.data, y + first, count * sizeof(int32_t), cudaMemcpyHostToDevice, stream_);
        const float* out = forward(count);
        cuda::softmax_cross_entropy_forward(probs_.data, loss_rows_.data, out, labels_.data, count, classes_, stream_);
        score_kernel<<<blocks_for(count), kThreads, 0, stream_>>>(totals_.data, loss_rows_.data, probs_.data, labels_.data, count, classes_);
        cuda::softmax_cross_entropy_backward(dlogits_.data, probs_.data, labels_.data, count, classes_, scale, stream_);
        backward(count);
    }

    bool step(float lr, long step, double& loss_sum, long& correct, std::string& error) override {
        if (comm_) {
            if (!cuda::nccl_all_reduce_sum(comm_, grads_.data, grads_.n, stream_, error))
                return false;
            if (!cuda::nccl_all_reduce_sum_double(comm_, totals_.data, 2, stream_, error))
                return false;
        }
        for (const ParameterTensor& t : net_->tensors()) {
            float* p = params_.data + t.offset;
            const float* g = grads_.data + t.offset;
            if (optimizer_.type == "sgd") {
                cuda::sgd_step(p, g, state_[0].data + t.offset, t.count, lr, optimizer_.momentum,
                               t.decay ? optimizer_.weight_decay : 0.0f, stream_);
            } else {
                const float correction1 = 1.0f - std::pow(optimizer_.beta1, static_cast<float>(step));
                const float correction2 = 1.0f - std::pow(optimizer_.beta2, static_cast<float>(step));
                adamw_kernel<<<blocks_for(t.count), kThreads, 0, stream_>>>(
                    p, g, state_[0].data + t.offset, state_[1].data + t.offset, t.count, optimizer_.beta1, optimizer_.beta2,
                    lr / correction1, 1.0f / std::sqrt(correction2), optimizer_.eps,
                    t.decay ? 1.0f - lr * optimizer_.weight_decay : 1.0f);
            }
        }
        double totals[2] = {0, 0};
        cudaMemcpyAsync(totals, totals_.data, sizeof(totals), cudaMemcpyDeviceToHost, stream_);
        const cudaError_t status = cudaStreamSynchronize(stream_);
        if (status != cudaSuccess) {
            error = std::string("CUDA: ") + cudaGetErrorString(status);
            return false;
        }
        loss_sum = totals[0];
        correct = static_cast<long>(totals[1]);
        return true;
    }

    bool any_rank(bool flag) override {
        if (!comm_)
            return flag;
        double value = flag ? 1.0 : 0.0;
        std::string error;
        cudaMemcpyAsync(totals_.data + 2, &value, sizeof(double), cudaMemcpyHostToDevice, stream_);
        cuda::nccl_all_reduce_sum_double(comm_, totals_.data + 2, 1, stream_, error);
        cudaMemcpyAsync(&value, totals_.data + 2, sizeof(double), cudaMemcpyDeviceToHost, stream_);
        cudaStreamSynchronize(stream_);
        return value > 0.0;
    }

    const float* logits(const float* x, int batch) override {
        // Inference runs every sample on this rank (evaluation is cheap next to training).
        const size_t features = net_->layers().front().in.size();
        const int local = slice(max_batch_).second;
        for (int start = 0; start < batch; start += local) {
            const int n = std::min(local, batch - start);
            cudaMemcpyAsync(input_.data, x + static_cast<size_t>(start) * features, n * features * sizeof(float),
                            cudaMemcpyHostToDevice, stream_);
            const float* out = forward(n);
            cudaMemcpyAsync(host_logits_.data() + static_cast<size_t>(start) * classes_, out, n * classes_ * sizeof(float),
                            cudaMemcpyDeviceToHost, stream_);
        }
        cudaStreamSynchronize(stream_);
        return host_logits_.data();
    }

    std::string describe() const override { return description_; }

private:
    // This rank's part of a micro-batch: [first, first + count).
    std::pair<int, int> slice(int batch) const {
        const int w = options_.world_size, r = options_.rank;
        const int base = batch / w, extra = batch % w;
        const int first = r * base + std::min(r, extra);
        return {first, base + (r < extra ? 1 : 0)};
    }

    // Row-major C[m,n] = op(A) op(B) (+ beta C); bf16 inputs with fp32 accumulation under autocast.
    void matmul(bool ta, bool tb, int m, int n, int k, const float* a, int lda, size_t a_count, const float* b, int ldb,
                size_t b_count, float beta, float* c, int ldc) {
        const float alpha = 1.0f;
        if (!options_.bf16) {
            cuda::gemm(cublas_, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
            return;
        }
        to_bf16_kernel<<<blocks_for(a_count), kThreads, 0, stream_>>>(bf16_a_.data, a, a_count);
        to_bf16_kernel<<<blocks_for(b_count), kThreads, 0, stream_>>>(bf16_b_.data, b, b_count);
        cublasGemmEx(cublas_, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, bf16_b_.data,
                     CUDA_R_16BF, ldb, bf16_a_.data, CUDA_R_16BF, lda, &beta, c, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F,
                     CUBLAS_GEMM_DEFAULT);
    }

    // Descriptors for one layer at one batch size (host-side calls, cheap); x_desc_/y_desc_ are its input/output.
    void describe_conv(const Layer& l, int batch) {
        cudnnSetTensor4dDescriptor(x_desc_, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, batch, l.in.channels, l.in.height, l.in.width);
        cudnnSetTensor4dDescriptor(y_desc_, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, batch, l.spec.out, l.out.height, l.out.width);
        cudnnSetTensor4dDescriptor(bias_desc_, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 1, l.spec.out, 1, 1);
        cudnnSetFilter4dDescriptor(filter_desc_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, l.spec.out, l.in.channels, l.spec.kernel,
                                   l.spec.kernel);
        cudnnSetConvolution2dDescriptor(conv_desc_, l.spec.padding, l.spec.padding, l.spec.stride, l.spec.stride, 1, 1,
                                        CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
        // fp32 runs plain FMA (comparable with the CPU); autocast lets cuDNN use TF32 tensor cores for convolutions.
        cudnnSetConvolutionMathType(conv_desc_, options_.bf16 ? CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION : CUDNN_FMA_MATH);
    }
    void describe_pool(const Layer& l, int batch) {
        cudnnSetTensor4dDescriptor(x_desc_, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, batch, l.in.channels, l.in.height, l.in.width);
        cudnnSetTensor4dDescriptor(y_desc_, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, batch, l.out.channels, l.out.height, l.out.width);
        cudnnSetPooling2dDescriptor(pool_desc_, CUDNN_POOLING_MAX_DETERMINISTIC, CUDNN_NOT_PROPAGATE_NAN, l.spec.size, l.spec.size,
                                    0, 0, l.spec.stride, l.spec.stride);
    }
    void reserve_workspace(size_t bytes) {
        if (bytes <= workspace_.n)
            return;
        cudaStreamSynchronize(stream_);
        cudaFree(workspace_.data);
        workspace_.data = nullptr;
        workspace_.allocate(bytes);
    }
    // The fastest of cuDNN's ranked proposals (perf, found) whose workspace fits in 256 MB, for the described layer;
    // the three convolution directions differ only in their perf types and the query that fills them.
    template <typename Perf, typename Algo>
    Algo first_fitting(const Perf* perf, int found, Algo fallback) {
        for (int a = 0; a < found; ++a)
            if (perf[a].status == CUDNN_STATUS_SUCCESS && perf[a].memory <= kWorkspaceLimit) {
                reserve_workspace(perf[a].memory);
                return perf[a].algo;
            }
        return fallback;
    }
    cudnnConvolutionFwdAlgo_t forward_algorithm() {
        cudnnConvolutionFwdAlgoPerf_t perf[8];
        int found = 0;
        cudnnGetConvolutionForwardAlgorithm_v7(cudnn_, x_desc_, filter_desc_, conv_desc_, y_desc_, 8, &found, perf);
        return first_fitting(perf, found, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM);
    }
    cudnnConvolutionBwdFilterAlgo_t filter_algorithm() {
        cudnnConvolutionBwdFilterAlgoPerf_t perf[8];
        int found = 0;
        cudnnGetConvolutionBackwardFilterAlgorithm_v7(cudnn_, x_desc_, y_desc_, conv_desc_, filter_desc_, 8, &found, perf);
        return first_fitting(perf, found, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0);
    }
    cudnnConvolutionBwdDataAlgo_t data_algorithm() {
        cudnnConvolutionBwdDataAlgoPerf_t perf[8];
        int found = 0;
        cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnn_, filter_desc_, y_desc_, conv_desc_, x_desc_, 8, &found, perf);
        return first_fitting(perf, found, CUDNN_CONVOLUTION_BWD_DATA_ALGO_0);
    }

    // Flatten, dropout (p = 0) and activations fused into their linear layer own no buffer: a layer reads the
    // output of the nearest earlier layer that does (or the input).
    bool is_alias(size_t i) const {
        const std::string& type = plan_[i].layer->spec.type;
        return type == "flatten" || type == "dropout" || plan_[i].fused_away;
    }
    const float* input_of(size_t i) const {
        for (size_t j = i; j-- > 0;)
            if (!is_alias(j))
                return outputs_[j].data;
        return input_.data;
    }
    float* dinput_of(size_t i) {
        for (size_t j = i; j-- > 0;)
            if (!is_alias(j))
                return douts_[j].data;
        return nullptr;
    }

    const float* forward(int batch) {
        const float* last = input_.data;
        for (size_t i = 0; i < plan_.size(); ++i) {
            const GpuLayer& g = plan_[i];
            const Layer& l = *g.layer;
            const std::string& type = l.spec.type;
            if (is_alias(i))
                continue;
            const float* in = input_of(i);
            float* out = outputs_[i].data;
            const size_t n = static_cast<size_t>(batch) * l.out.size();
            if (type == "linear") {
                const int I = static_cast<int>(l.in.size()), O = l.spec.out;
                float* target = g.activation ? pre_[i].data : out;
                matmul(false, true, batch, O, I, in, I, static_cast<size_t>(batch) * I, params_.data + l.weight, I,
                       static_cast<size_t>(O) * I, 0.0f, target, O);
                bias_activation_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(target, out, params_.data + l.bias, batch, O,
                                                                                g.activation);
            } else if (type == "conv2d") {
                // cuDNN in NHWC; our weights [O, K, K, C] are its KRSC filter layout. Bias and a following
                // activation run fused over the output's [positions, channels] rows.
                describe_conv(l, batch);
                float* target = g.activation ? pre_[i].data : out;
                const float one = 1.0f, zero = 0.0f;
                cudnnConvolutionFwdAlgo_t algo = forward_algorithm();
                cudnnConvolutionForward(cudnn_, &one, x_desc_, in, filter_desc_, params_.data + l.weight, conv_desc_, algo,
                                        workspace_.data, workspace_.n, &zero, y_desc_, target);
                const size_t positions = static_cast<size_t>(batch) * l.out.height * l.out.width;
                bias_activation_kernel<<<blocks_for(n), kThreads, 0, stream_>>>(target, out, params_.data + l.bias, positions,
                                                                                l.spec.out, g.activation);
            } else if (type == "maxpool") {
                describe_pool(l, batch);
                const float one = 1.0f, zero = 0.0f;
                cudnnPoolingForward(cudnn_, pool_desc_, &one, x_desc_, in, &zero, y_desc_, out);
            } else if (type == "relu") {
                cuda::relu_forward(out, in, n, stream_);
            } else if (type == "gelu") {
                cuda::gelu_forward(out, in, n, stream_);
            }
            last = out;
        }
        return last;
    }

    // A linear or convolution layer's gradient through the activation fused after it: dz = dy · act'(pre), in place
    // in this layer's gradient buffer (which is where the next layer wrote dy). Without one, dy itself.
    const float* through_activation(size_t i, const float* dy, size_t n) {
        const int activation = plan_[i].activation;
        if (!activation)
            return dy;
        float* dz = douts_[i].data;
        if (activation == 1)
            cuda::relu_backward(dz, dy, outputs_[i].data, n, stream_);
        else
            cuda::gelu_backward(dz, dy, pre_[i].data, n, stream_);
        return dz;
    }

    void backward(int batch) {
        const float* dy = dlogits_.data;
        for (size_t i = plan_.size(); i-- > 0;) {
            const GpuLayer& g = plan_[i];
            const Layer& l = *g.layer;
            const std::string& type = l.spec.type;
            if (is_alias(i))
                continue;
            float* dx = dinput_of(i);
            const float* in = input_of(i);
            const size_t n = static_cast<size_t>(batch) * l.out.size();
            if (type == "linear") {
                const int I = static_cast<int>(l.in.size()), O = l.spec.out;
                const float* dz = through_activation(i, dy, n);
                // dW[O,I] += dz^T · x ; db += Σ dz ; dx = dz · W
                matmul(true, false, O, I, batch, dz, O, n, in, I, static_cast<size_t>(batch) * I, 1.0f, grads_.data + l.weight, I);
                bias_grad_kernel<<<blocks_for(O), kThreads, 0, stream_>>>(grads_.data + l.bias, dz, batch, O);
                if (dx)
                    matmul(false, false, batch, I, O, dz, O, n, params_.data + l.weight, I, static_cast<size_t>(O) * I, 0.0f, dx, I);
            } else if (type == "conv2d") {
                const float* dz = through_activation(i, dy, n);
                describe_conv(l, batch);
                const float one = 1.0f, zero = 0.0f;
                cudnnConvolutionBackwardBias(cudnn_, &one, y_desc_, dz, &one, bias_desc_, grads_.data + l.bias);
                cudnnConvolutionBackwardFilter(cudnn_, &one, x_desc_, in, y_desc_, dz, conv_desc_, filter_algorithm(),
                                               workspace_.data, workspace_.n, &one, filter_desc_, grads_.data + l.weight);
                if (dx)
                    cudnnConvolutionBackwardData(cudnn_, &one, filter_desc_, params_.data + l.weight, y_desc_, dz, conv_desc_,
                                                 data_algorithm(), workspace_.data, workspace_.n, &zero, x_desc_, dx);
            } else if (type == "maxpool") {
                if (dx) {
                    describe_pool(l, batch);
                    const float one = 1.0f, zero = 0.0f;
                    cudnnPoolingBackward(cudnn_, pool_desc_, &one, y_desc_, outputs_[i].data, y_desc_, dy, x_desc_, in, &zero,
                                         x_desc_, dx);
                }
            } else if (type == "relu") {
                if (dx)
                    cuda::relu_backward(dx, dy, outputs_[i].data, n, stream_);
            } else if (type == "gelu") {
                if (dx)
                    cuda::gelu_backward(dx, dy, in, n, stream_);
            }
            if (!dx)
                break;
            dy = dx;
        }
    }

    const Network* net_ = nullptr;
    OptimizerSpec optimizer_;
    GpuOptions options_;
    int max_batch_ = 0, classes_ = 0;
    std::vector<GpuLayer> plan_;
    static constexpr size_t kWorkspaceLimit = size_t(256) << 20;
    cudaStream_t stream_ = nullptr;
    cublasHandle_t cublas_ = nullptr;
    cudnnHandle_t cudnn_ = nullptr;
    cudnnTensorDescriptor_t x_desc_ = nullptr, y_desc_ = nullptr, bias_desc_ = nullptr;
    cudnnFilterDescriptor_t filter_desc_ = nullptr;
    cudnnConvolutionDescriptor_t conv_desc_ = nullptr;
    cudnnPoolingDescriptor_t pool_desc_ = nullptr;
    Device<char> workspace_;
    cuda::NcclComm* comm_ = nullptr;
    Device<float> params_, grads_, state_[2], input_, probs_, dlogits_, loss_rows_;
    std::vector<Device<float>> outputs_, douts_, pre_;
    Device<__nv_bfloat16> bf16_a_, bf16_b_;
    Device<int32_t> labels_;
    Device<double> totals_;
    std::vector<float> host_logits_;
    std::string description_;
};

} // namespace

std::unique_ptr<GpuModel> GpuModel::create(const Network& net, const OptimizerSpec& optimizer, int max_batch,
                                           const GpuOptions& options, std::string& reason) {
    auto model = std::make_unique<CudaModel>();
    if (!model->init(net, optimizer, max_batch, options, reason))
        return nullptr;
    return model;
}

std::string gpu_nccl_unique_id() { return cuda::nccl_unique_id_hex(); }

} // namespace traindeck::engine
