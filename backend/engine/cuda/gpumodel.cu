// The CUDA implementation of the GPU path (gpumodel.h), a Model (model.h) as the CPU engine is: the trainer's network
// as cuBLAS gemms, cuDNN convolutions and pooling, and the kernels of cudakernels.cu, one stream per model, NCCL across
// ranks. Every CUDA, cuBLAS and cuDNN status goes through TRAINDECK_CHECK / TRAINDECK_LAUNCH (cudastatus.h); a public
// method that throws first marks the model failed and aborts its communicator, so the other ranks' waits end too.
#include "gpumodel.h"

#include "cudakernels.h"
#include "cudastatus.h"

#include <optional>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <set>
#include <utility>

namespace traindeck::engine {
namespace {

constexpr int kThreads = 256;
constexpr float kGeluScale = 0.7978845608028654f;
unsigned blocks_for(size_t n) {
    return static_cast<unsigned>((n + kThreads - 1) / kThreads);
}

// activation: 0 none, 1 relu, 2 gelu. pre = z + bias (kept for gelu's backward), post = act(pre).
__global__ void bias_activation_kernel(float* pre, float* post, const float* bias, size_t rows, int columns,
                                       int activation) {
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

// A regression's micro-batch: its losses only (no correct predictions).
__global__ void loss_total_kernel(double* totals, const float* loss_per_row, int batch) {
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < batch)
        atomicAdd(&totals[0], static_cast<double>(loss_per_row[row]));
}

// set_data_parallel_watch(): read by each model when it is created (traindeck-train sets it once, before train()).
struct DataParallelWatch {
    double timeout_seconds = 300.0;
    std::function<std::string()> peer_gone;
};
DataParallelWatch& data_parallel_watch() {
    static DataParallelWatch watch;
    return watch;
}

template <typename T> struct Device {
    T* data = nullptr;
    size_t n = 0;
    Device() = default;
    Device(Device&& other) noexcept : data(std::exchange(other.data, nullptr)), n(std::exchange(other.n, 0)) {}
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;
    void allocate(size_t count) {
        if (count == 0)
            return;
        const std::string call = "cudaMalloc of " + std::to_string((count * sizeof(T) + (1 << 20) - 1) >> 20) + " MiB";
        cuda::check_status(cudaMalloc(&data, count * sizeof(T)), call.c_str(), __FILE__, __LINE__);
        n = count;
    }
    void release() {
        if (data)
            cudaFree(data); // a failed free leaves nothing to compute with; the next checked call reports the device
        data = nullptr;
        n = 0;
    }
    ~Device() { release(); }
};

struct GpuLayer {
    const Layer* layer;
    int activation = 0;      // a linear layer's fused activation (the next layer, then skipped)
    bool fused_away = false; // an activation folded into the linear before it
};

class CudaModel final : public Model {
public:
    // false + reason: this model or setup does not run on the GPU path. A CUDA failure throws GpuError.
    bool init(const Network& net, const OptimizerSpec& optimizer, int max_batch, const GpuOptions& options,
              std::string& reason) {
        return guarded([&] { return init_resources(net, optimizer, max_batch, options, reason); });
    }

private:
    bool init_resources(const Network& net, const OptimizerSpec& optimizer, int max_batch, const GpuOptions& options,
                        std::string& reason) {
        net_ = &net;
        optimizer_ = optimizer;
        options_ = options;
        max_batch_ = max_batch;
        classes_ = net.classes();
        const auto& layers = net.layers();
        for (size_t i = 0; i < layers.size(); ++i) {
            const LayerType type = layers[i].spec.type;
            if (type == LayerType::dropout && layers[i].spec.p > 0.0f) {
                reason =
                    "dropout with p > 0 is not on the GPU path yet (its masks must match the CPU's random stream); "
                    "this model stays on the CPU";
                return false;
            }
            GpuLayer g{&layers[i]};
            const std::optional<LayerType> previous =
                plan_.empty() ? std::nullopt : std::optional<LayerType>(plan_.back().layer->spec.type);
            // An add that reads an activation's input (the pre-activation values) keeps that activation apart: fused,
            // its input would be the activated output.
            const bool read_by_add = std::any_of(layers.begin(), layers.end(), [&](const Layer& other) {
                return other.spec.type == LayerType::add && other.spec.from == static_cast<int>(i);
            });
            if ((type == LayerType::relu || type == LayerType::gelu) &&
                (previous == LayerType::linear || previous == LayerType::conv2d) && plan_.back().activation == 0 &&
                !read_by_add) {
                plan_.back().activation = type == LayerType::relu ? 1 : 2;
                g.fused_away = true;
            }
            plan_.push_back(g);
        }
        skips_.assign(layers.size(), {});
        for (size_t i = 0; i < layers.size(); ++i)
            if (layers[i].spec.type == LayerType::add)
                skips_[layers[i].spec.from].push_back(i);
        if (options.world_size > 1 && max_batch < options.world_size) {
            // A rank with an empty slice of every batch would only wait in the all-reduce.
            const std::string world = std::to_string(options.world_size);
            reason = "batch_size " + std::to_string(max_batch) + " is smaller than WORLD_SIZE " + world +
                     ": every rank needs at least one sample of each batch; raise batch_size to at least " + world +
                     " or use fewer GPUs";
            return false;
        }
        int devices = 0;
        TRAINDECK_CHECK(cudaGetDeviceCount(&devices));
        if (devices == 0) {
            reason = "no CUDA device";
            return false;
        }
        if (options.world_size > devices) {
            // NCCL does not take two ranks on one device.
            reason = "WORLD_SIZE " + std::to_string(options.world_size) + " needs one GPU per rank, but only " +
                     std::to_string(devices) + " CUDA device(s) are visible (CUDA_VISIBLE_DEVICES); ask for " +
                     std::to_string(devices) + " GPUs or make more visible";
            return false;
        }
        const int device = options.rank % devices;
        TRAINDECK_CHECK(cudaSetDevice(device));
        TRAINDECK_CHECK(cudaStreamCreate(&stream_));
        TRAINDECK_CHECK(cublasCreate(&cublas_));
        TRAINDECK_CHECK(cublasSetStream(cublas_, stream_));
        // fp32 gemms are plain fp32 (comparable with the CPU); under autocast an fp32 gemm may use TF32 tensor cores,
        // as the convolutions do. The bf16 gemms (cublasGemmEx) use tensor cores either way.
        TRAINDECK_CHECK(cublasSetMathMode(cublas_, options.bf16 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
        TRAINDECK_CHECK(cudnnCreate(&cudnn_));
        TRAINDECK_CHECK(cudnnSetStream(cudnn_, stream_));
        TRAINDECK_CHECK(cudnnCreateTensorDescriptor(&x_desc_));
        TRAINDECK_CHECK(cudnnCreateTensorDescriptor(&y_desc_));
        TRAINDECK_CHECK(cudnnCreateTensorDescriptor(&bias_desc_));
        TRAINDECK_CHECK(cudnnCreateFilterDescriptor(&filter_desc_));
        TRAINDECK_CHECK(cudnnCreateConvolutionDescriptor(&conv_desc_));
        TRAINDECK_CHECK(cudnnCreatePoolingDescriptor(&pool_desc_));
        TRAINDECK_CHECK(cudaMallocHost(&host_totals_, 3 * sizeof(double)));
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
        // batchnorm: x̂ for backward, then per channel the mean, 1/σ and backward's two means.
        for (size_t i = 0; i < layers.size(); ++i)
            if (layers[i].spec.type == LayerType::batchnorm)
                pre_[i].allocate(std::max<size_t>(1, local) * layers[i].out.size() +
                                 4 * size_t(layers[i].out.channels));
        if (options.bf16) {
            bf16_a_.allocate(std::max<size_t>(1, local) * widest * 2 + count);
            bf16_b_.allocate(std::max<size_t>(1, local) * widest * 2 + count);
        }
        labels_.allocate(std::max<size_t>(1, local));
        targets_.allocate(std::max<size_t>(1, local));
        probs_.allocate(std::max<size_t>(1, local) * classes_);
        dlogits_.allocate(std::max<size_t>(1, local) * classes_);
        loss_rows_.allocate(std::max<size_t>(1, local));
        totals_.allocate(3); // loss, correct, and a stop vote
        host_logits_.resize(static_cast<size_t>(max_batch) * classes_);
        if (options.world_size > 1) {
            const DataParallelWatch& watch = data_parallel_watch();
            peer_gone_ = watch.peer_gone;
            comm_ =
                cuda::nccl_init(options.nccl_id, options.world_size, options.rank, watch.timeout_seconds, peer_gone_);
        }
        cudaDeviceProp properties{};
        TRAINDECK_CHECK(cudaGetDeviceProperties(&properties, device));
        description_ = std::string(properties.name) + (options.bf16 ? ", bf16 autocast" : ", fp32") +
                       (options.world_size > 1
                            ? ", rank " + std::to_string(options.rank) + " of " + std::to_string(options.world_size)
                            : "");
        TRAINDECK_CHECK(cudaStreamSynchronize(stream_));
        return true;
    }

public:
    ~CudaModel() override {
        if (failed_)
            cuda::nccl_abort(comm_);
        cuda::nccl_destroy(comm_);
        // Teardown after a failure may see more failures; there is nothing left to protect, so they are not checked.
        if (x_desc_)
            cudnnDestroyTensorDescriptor(x_desc_);
        if (y_desc_)
            cudnnDestroyTensorDescriptor(y_desc_);
        if (bias_desc_)
            cudnnDestroyTensorDescriptor(bias_desc_);
        if (filter_desc_)
            cudnnDestroyFilterDescriptor(filter_desc_);
        if (conv_desc_)
            cudnnDestroyConvolutionDescriptor(conv_desc_);
        if (pool_desc_)
            cudnnDestroyPoolingDescriptor(pool_desc_);
        if (cudnn_)
            cudnnDestroy(cudnn_);
        if (cublas_)
            cublasDestroy(cublas_);
        if (host_totals_)
            cudaFreeHost(host_totals_);
        if (stream_)
            cudaStreamDestroy(stream_);
    }

    void write_parameters(const std::vector<float>& params, const std::vector<std::vector<float>>& state) override {
        guarded([&] {
            expect_size("parameters", params.size(), params_.n);
            TRAINDECK_CHECK(cudaMemcpyAsync(params_.data, params.data(), params.size() * sizeof(float),
                                            cudaMemcpyHostToDevice, stream_));
            for (size_t s = 0; s < state.size() && s < 2; ++s)
                if (state_[s].data) {
                    expect_size("optimiser state", state[s].size(), state_[s].n);
                    TRAINDECK_CHECK(cudaMemcpyAsync(state_[s].data, state[s].data(), state[s].size() * sizeof(float),
                                                    cudaMemcpyHostToDevice, stream_));
                }
            TRAINDECK_CHECK(cudaStreamSynchronize(stream_));
        });
    }

    void read_parameters(std::vector<float>& params, std::vector<std::vector<float>>& state) override {
        guarded([&] {
            params.resize(params_.n);
            state.resize(state_[1].data ? 2 : 1);
            for (auto& buffer : state)
                buffer.resize(params_.n);
            expect_size("parameters", params.size(), params_.n);
            TRAINDECK_CHECK(cudaMemcpyAsync(params.data(), params_.data, params.size() * sizeof(float),
                                            cudaMemcpyDeviceToHost, stream_));
            for (size_t s = 0; s < state.size() && s < 2; ++s)
                if (state_[s].data) {
                    expect_size("optimiser state", state[s].size(), state_[s].n);
                    TRAINDECK_CHECK(cudaMemcpyAsync(state[s].data(), state_[s].data, state[s].size() * sizeof(float),
                                                    cudaMemcpyDeviceToHost, stream_));
                }
            TRAINDECK_CHECK(cudaStreamSynchronize(stream_));
        });
    }

    void zero_grads() override {
        guarded([&] {
            TRAINDECK_CHECK(cudaMemsetAsync(grads_.data, 0, grads_.n * sizeof(float), stream_));
            TRAINDECK_CHECK(cudaMemsetAsync(totals_.data, 0, 2 * sizeof(double), stream_));
        });
    }

    // Dropout with p > 0 never reaches this path (init refuses it), so `dropout` is not drawn from.
    void forward_backward(const float* x, const int32_t* y, const float* targets, int batch, float scale,
                          Rng&) override {
        guarded([&] {
            expect_batch(batch);
            const auto [first, count] = slice(batch);
            if (count == 0)
                return; // an epoch's short last batch: this rank adds nothing, the all-reduce still counts it
            const size_t features = net_->layers().front().in.size();
            TRAINDECK_CHECK(cudaMemcpyAsync(input_.data, x + static_cast<size_t>(first) * features,
                                            count * features * sizeof(float), cudaMemcpyHostToDevice, stream_));
            if (targets) {
                TRAINDECK_CHECK(cudaMemcpyAsync(targets_.data, targets + first, count * sizeof(float),
                                                cudaMemcpyHostToDevice, stream_));
                const float* out = forward(count, true);
                cuda::squared_error(dlogits_.data, loss_rows_.data, out, targets_.data, count, scale, stream_);
                TRAINDECK_LAUNCH(loss_total_kernel, blocks_for(count), kThreads, stream_, totals_.data, loss_rows_.data,
                                 count);
                backward(count);
                return;
            }
            TRAINDECK_CHECK(
                cudaMemcpyAsync(labels_.data, y + first, count * sizeof(int32_t), cudaMemcpyHostToDevice, stream_));
            const float* out = forward(count, true);
            cuda::softmax_cross_entropy_forward(probs_.data, loss_rows_.data, out, labels_.data, count, classes_,
                                                options_.label_smoothing, stream_);
            TRAINDECK_LAUNCH(score_kernel, blocks_for(count), kThreads, stream_, totals_.data, loss_rows_.data,
                             probs_.data, labels_.data, count, classes_);
            cuda::softmax_cross_entropy_backward(dlogits_.data, probs_.data, labels_.data, count, classes_, scale,
                                                 options_.label_smoothing, stream_);
            backward(count);
        });
    }

    void step(float lr, long step, double& loss_sum, long& correct) override {
        guarded([&] {
            if (comm_) {
                cuda::nccl_all_reduce_sum(comm_, grads_.data, grads_.n, stream_, peer_gone_);
                cuda::nccl_all_reduce_sum_double(comm_, totals_.data, 2, stream_, peer_gone_);
            }
            for (const ParameterTensor& t : net_->tensors()) {
                if (!t.trainable)
                    continue;
                float* p = params_.data + t.offset;
                const float* g = grads_.data + t.offset;
                const float decay = t.decay ? optimizer_.weight_decay : 0.0f;
                if (optimizer_.type == "sgd")
                    cuda::sgd_step(p, g, state_[0].data + t.offset, t.count, lr, optimizer_.momentum, decay, stream_);
                else
                    cuda::adamw_step(p, g, state_[0].data + t.offset, state_[1].data + t.offset, t.count, lr,
                                     optimizer_.beta1, optimizer_.beta2, optimizer_.eps, decay, step, stream_);
            }
            // Pinned host memory: a copy to pageable memory would block right here, behind the all-reduce, where
            // no timeout could end the wait.
            TRAINDECK_CHECK(
                cudaMemcpyAsync(host_totals_, totals_.data, 2 * sizeof(double), cudaMemcpyDeviceToHost, stream_));
            wait("the step's gradient all-reduce");
            loss_sum = host_totals_[0];
            correct = static_cast<long>(host_totals_[1]);
        });
    }

    bool any_rank(bool flag) override {
        if (!comm_)
            return flag;
        return guarded([&] {
            host_totals_[2] = flag ? 1.0 : 0.0;
            TRAINDECK_CHECK(
                cudaMemcpyAsync(totals_.data + 2, host_totals_ + 2, sizeof(double), cudaMemcpyHostToDevice, stream_));
            cuda::nccl_all_reduce_sum_double(comm_, totals_.data + 2, 1, stream_, peer_gone_);
            TRAINDECK_CHECK(
                cudaMemcpyAsync(host_totals_ + 2, totals_.data + 2, sizeof(double), cudaMemcpyDeviceToHost, stream_));
            wait("the stop vote's all-reduce");
            return host_totals_[2] > 0.0;
        });
    }

    const float* logits(const float* x, int batch) override {
        return guarded([&] {
            // Inference runs every sample on this rank (evaluation is cheap next to training).
            expect_batch(batch);
            const size_t features = net_->layers().front().in.size();
            const int local = slice(max_batch_).second;
            for (int start = 0; start < batch; start += local) {
                const int n = std::min(local, batch - start);
                TRAINDECK_CHECK(cudaMemcpyAsync(input_.data, x + static_cast<size_t>(start) * features,
                                                n * features * sizeof(float), cudaMemcpyHostToDevice, stream_));
                const float* out = forward(n, false);
                TRAINDECK_CHECK(cudaMemcpyAsync(host_logits_.data() + static_cast<size_t>(start) * classes_, out,
                                                n * classes_ * sizeof(float), cudaMemcpyDeviceToHost, stream_));
            }
            TRAINDECK_CHECK(cudaStreamSynchronize(stream_));
            return static_cast<const float*>(host_logits_.data());
        });
    }

    std::string describe() const override { return description_; }

private:
    // Runs a public method's body; a GpuError marks the model failed and aborts the communicator before it goes
    // on to the trainer's caller, so that no rank is left in an all-reduce this one will never join.
    template <typename Body> auto guarded(Body&& body) -> decltype(body()) {
        try {
            return body();
        } catch (const GpuError&) {
            failed_ = true;
            cuda::nccl_abort(comm_);
            throw;
        }
    }

    // Waits for everything on the stream: NCCL work is waited on by polling (bounded, see cudakernels.h).
    void wait(const char* what) {
        if (comm_)
            cuda::nccl_wait(comm_, stream_, what, peer_gone_);
        else
            TRAINDECK_CHECK(cudaStreamSynchronize(stream_));
    }

    // The trainer and the GPU path disagreeing on sizes is a bug here, not a user's error; said before memory is
    // overrun.
    static void expect_size(const char* what, size_t got, size_t expected) {
        if (got != expected)
            throw GpuError(std::string("GPU model: ") + what + " of " + std::to_string(got) +
                           " values where the model has " + std::to_string(expected) +
                           " (a bug in the GPU path; train with --device cpu meanwhile)");
    }
    void expect_batch(int batch) const {
        if (batch < 0 || batch > max_batch_ || (batch > 0 && slice(max_batch_).second == 0))
            throw GpuError("GPU model: a batch of " + std::to_string(batch) +
                           " samples where it was made for at most " + std::to_string(max_batch_) +
                           " (a bug in the GPU path; train with --device cpu meanwhile)");
    }

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
        if (a_count > bf16_a_.n || b_count > bf16_b_.n)
            throw GpuError("GPU model: a gemm operand is larger than its bf16 staging buffer (a bug in the GPU path; "
                           "train with --precision fp32 meanwhile)");
        TRAINDECK_LAUNCH(to_bf16_kernel, blocks_for(a_count), kThreads, stream_, bf16_a_.data, a, a_count);
        TRAINDECK_LAUNCH(to_bf16_kernel, blocks_for(b_count), kThreads, stream_, bf16_b_.data, b, b_count);
        TRAINDECK_CHECK(cublasGemmEx(cublas_, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k,
                                     &alpha, bf16_b_.data, CUDA_R_16BF, ldb, bf16_a_.data, CUDA_R_16BF, lda, &beta, c,
                                     CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }

    // Descriptors for one layer at one batch size (host-side calls, cheap); x_desc_/y_desc_ are its input/output.
    void describe_conv(const Layer& l, int batch) {
        TRAINDECK_CHECK(cudnnSetTensor4dDescriptor(x_desc_, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, batch, l.in.channels,
                                                   l.in.height, l.in.width));
        TRAINDECK_CHECK(cudnnSetTensor4dDescriptor(y_desc_, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, batch, l.spec.out,
                                                   l.out.height, l.out.width));
        TRAINDECK_CHECK(
            cudnnSetTensor4dDescriptor(bias_desc_, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 1, l.spec.out, 1, 1));
        TRAINDECK_CHECK(cudnnSetFilter4dDescriptor(filter_desc_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, l.spec.out,
                                                   l.in.channels, l.spec.kernel, l.spec.kernel));
        TRAINDECK_CHECK(cudnnSetConvolution2dDescriptor(conv_desc_, l.spec.padding, l.spec.padding, l.spec.stride,
                                                        l.spec.stride, 1, 1, CUDNN_CROSS_CORRELATION,
                                                        CUDNN_DATA_FLOAT));
    }
    // What cuDNN's heuristics may propose, asked before each query (the previous direction's choice is still on the
    // descriptor): fp32 runs plain FMA (comparable with the CPU); autocast lets cuDNN use TF32 tensor cores
    // (CUDNN_TENSOR_OP_MATH on float data). choose() then sets the math type of the proposal it takes.
    void request_math() {
        TRAINDECK_CHECK(cudnnSetConvolutionMathType(conv_desc_, options_.bf16 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH));
    }
    void describe_pool(const Layer& l, int batch) {
        TRAINDECK_CHECK(cudnnSetTensor4dDescriptor(x_desc_, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, batch, l.in.channels,
                                                   l.in.height, l.in.width));
        TRAINDECK_CHECK(cudnnSetTensor4dDescriptor(y_desc_, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, batch, l.out.channels,
                                                   l.out.height, l.out.width));
        TRAINDECK_CHECK(cudnnSetPooling2dDescriptor(pool_desc_, CUDNN_POOLING_MAX_DETERMINISTIC,
                                                    CUDNN_NOT_PROPAGATE_NAN, l.spec.size, l.spec.size, 0, 0,
                                                    l.spec.stride, l.spec.stride));
    }
    void reserve_workspace(size_t bytes) {
        if (bytes <= workspace_.n)
            return;
        TRAINDECK_CHECK(cudaStreamSynchronize(stream_)); // the old workspace may still be in use by queued work
        workspace_.release();
        workspace_.allocate(bytes);
    }
    // The fastest of cuDNN's ranked proposals (perf, found) for the described layer whose workspace fits in 256 MB
    // and whose math keeps the documented precision: FMA only for fp32; under autocast whatever the proposal says,
    // TF32 tensor cores included, but never CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION (that is fp16 down-conversion).
    // The proposal's math type goes on the convolution descriptor, as cuDNN asks, and the workspace grows to its
    // size, both before the convolution is called. Without a fitting proposal: `fallback` in FMA math, with the
    // workspace `fallback_bytes(fallback)` says. The three directions differ only in their types and queries.
    template <typename Perf, typename Algo, typename WorkspaceQuery>
    Algo choose(const char* direction, const Perf* perf, int found, Algo fallback, WorkspaceQuery fallback_bytes) {
        for (int a = 0; a < found; ++a) {
            const bool math_ok = options_.bf16 ? perf[a].mathType != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION
                                               : perf[a].mathType == CUDNN_FMA_MATH;
            if (perf[a].status == CUDNN_STATUS_SUCCESS && perf[a].memory <= kWorkspaceLimit && math_ok) {
                TRAINDECK_CHECK(cudnnSetConvolutionMathType(conv_desc_, perf[a].mathType));
                reserve_workspace(perf[a].memory);
                return perf[a].algo;
            }
        }
        // Correct but maybe slow: said once per direction, so that a GPU run's figures can be read for what they are.
        if (noted_fallbacks_.insert(direction).second)
            std::fprintf(stderr,
                         "traindeck-train: note: cuDNN proposed no %s convolution algorithm within 256 MB of "
                         "workspace %s; using its algorithm 0 in FMA math, which may be slow\n",
                         direction, options_.bf16 ? "without fp16 down-conversion" : "in FMA math");
        TRAINDECK_CHECK(cudnnSetConvolutionMathType(conv_desc_, CUDNN_FMA_MATH));
        reserve_workspace(fallback_bytes(fallback));
        return fallback;
    }
    cudnnConvolutionFwdAlgo_t forward_algorithm() {
        cudnnConvolutionFwdAlgoPerf_t perf[8];
        int found = 0;
        request_math();
        TRAINDECK_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(cudnn_, x_desc_, filter_desc_, conv_desc_, y_desc_, 8,
                                                               &found, perf));
        return choose("forward", perf, found, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                      [&](cudnnConvolutionFwdAlgo_t algo) {
                          size_t bytes = 0;
                          TRAINDECK_CHECK(cudnnGetConvolutionForwardWorkspaceSize(cudnn_, x_desc_, filter_desc_,
                                                                                  conv_desc_, y_desc_, algo, &bytes));
                          return bytes;
                      });
    }
    cudnnConvolutionBwdFilterAlgo_t filter_algorithm() {
        cudnnConvolutionBwdFilterAlgoPerf_t perf[8];
        int found = 0;
        request_math();
        TRAINDECK_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(cudnn_, x_desc_, y_desc_, conv_desc_,
                                                                      filter_desc_, 8, &found, perf));
        return choose("filter-gradient", perf, found, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0,
                      [&](cudnnConvolutionBwdFilterAlgo_t algo) {
                          size_t bytes = 0;
                          TRAINDECK_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(
                              cudnn_, x_desc_, y_desc_, conv_desc_, filter_desc_, algo, &bytes));
                          return bytes;
                      });
    }
    cudnnConvolutionBwdDataAlgo_t data_algorithm() {
        cudnnConvolutionBwdDataAlgoPerf_t perf[8];
        int found = 0;
        request_math();
        TRAINDECK_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnn_, filter_desc_, y_desc_, conv_desc_, x_desc_,
                                                                    8, &found, perf));
        return choose("input-gradient", perf, found, CUDNN_CONVOLUTION_BWD_DATA_ALGO_0,
                      [&](cudnnConvolutionBwdDataAlgo_t algo) {
                          size_t bytes = 0;
                          TRAINDECK_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(
                              cudnn_, filter_desc_, y_desc_, conv_desc_, x_desc_, algo, &bytes));
                          return bytes;
                      });
    }

    // Flatten, dropout (p = 0) and activations fused into their linear layer own no buffer: a layer reads the
    // output of the nearest earlier layer that does (or the input).
    bool is_alias(size_t i) const {
        const LayerType type = plan_[i].layer->spec.type;
        return type == LayerType::flatten || type == LayerType::dropout || plan_[i].fused_away;
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

    // A failure inside a layer says which layer it was: the call alone (a cuDNN convolution) may be in several.
    [[noreturn]] void rethrow_in_layer(size_t i, const char* pass, const GpuError& error) const {
        throw GpuError(std::string(pass) + " of layer " + std::to_string(i) + " (" + to_string(plan_[i].layer->spec.type) +
                       "): " + error.what());
    }

    // training: batchnorm normalises with the batch's statistics (and moves the running ones); else the running ones.
    const float* forward(int batch, bool training) {
        const float* last = input_.data;
        for (size_t i = 0; i < plan_.size(); ++i) {
            if (is_alias(i))
                continue;
            try {
                last = forward_layer(i, batch, training);
            } catch (const GpuError& error) {
                rethrow_in_layer(i, "forward", error);
            }
        }
        return last;
    }

    const float* forward_layer(size_t i, int batch, bool training) {
        const GpuLayer& g = plan_[i];
        const Layer& l = *g.layer;
        const LayerType type = l.spec.type;
        const float* in = input_of(i);
        float* out = outputs_[i].data;
        const size_t n = static_cast<size_t>(batch) * l.out.size();
        if (type == LayerType::linear) {
            const int I = static_cast<int>(l.in.size()), O = l.spec.out;
            float* target = g.activation ? pre_[i].data : out;
            matmul(false, true, batch, O, I, in, I, static_cast<size_t>(batch) * I, params_.data + l.weight, I,
                   static_cast<size_t>(O) * I, 0.0f, target, O);
            TRAINDECK_LAUNCH(bias_activation_kernel, blocks_for(n), kThreads, stream_, target, out,
                             params_.data + l.bias, static_cast<size_t>(batch), O, g.activation);
        } else if (type == LayerType::conv2d) {
            // cuDNN in NHWC; our weights [O, K, K, C] are its KRSC filter layout. Bias and a following
            // activation run fused over the output's [positions, channels] rows.
            describe_conv(l, batch);
            float* target = g.activation ? pre_[i].data : out;
            const float one = 1.0f, zero = 0.0f;
            const cudnnConvolutionFwdAlgo_t algo = forward_algorithm(); // sets the math type, grows the workspace
            TRAINDECK_CHECK(cudnnConvolutionForward(cudnn_, &one, x_desc_, in, filter_desc_, params_.data + l.weight,
                                                    conv_desc_, algo, workspace_.data, workspace_.n, &zero, y_desc_,
                                                    target));
            const size_t positions = static_cast<size_t>(batch) * l.out.height * l.out.width;
            TRAINDECK_LAUNCH(bias_activation_kernel, blocks_for(n), kThreads, stream_, target, out,
                             params_.data + l.bias, positions, l.spec.out, g.activation);
        } else if (type == LayerType::maxpool) {
            describe_pool(l, batch);
            const float one = 1.0f, zero = 0.0f;
            TRAINDECK_CHECK(cudnnPoolingForward(cudnn_, pool_desc_, &one, x_desc_, in, &zero, y_desc_, out));
        } else if (type == LayerType::avgpool) {
            cuda::avgpool_forward(out, in, batch, l.in.height, l.in.width, l.in.channels, l.spec.size, l.spec.stride,
                                  stream_);
        } else if (type == LayerType::global_avgpool) {
            cuda::global_avgpool_forward(out, in, batch, l.in.height * l.in.width, l.in.channels, stream_);
        } else if (type == LayerType::batchnorm) {
            const int c = l.in.channels;
            const size_t rows = n / c;
            float* running = params_.data + l.running;
            float* stats = pre_[i].data + n; // the mean, then 1/σ
            if (training)
                cuda::batchnorm_forward_training(out, pre_[i].data, stats, stats + c, running, running + c, in,
                                                 params_.data + l.weight, params_.data + l.bias, rows, c,
                                                 l.spec.momentum, l.spec.eps, stream_);
            else
                cuda::batchnorm_forward_inference(out, in, params_.data + l.weight, params_.data + l.bias, running,
                                                  running + c, rows, c, l.spec.eps, stream_);
        } else if (type == LayerType::add) {
            cuda::add(out, in, input_of(static_cast<size_t>(l.spec.from)), n, stream_);
        } else if (type == LayerType::relu) {
            cuda::relu_forward(out, in, n, stream_);
        } else if (type == LayerType::gelu) {
            cuda::gelu_forward(out, in, n, stream_);
        }
        return out;
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
            float* dx = dinput_of(i);
            if (!is_alias(i)) { // an alias's input gradient is its output's: the buffer dy already is
                try {
                    backward_layer(i, batch, dy, dx);
                } catch (const GpuError& error) {
                    rethrow_in_layer(i, "backward", error);
                }
            }
            if (!dx)
                break;
            // This layer's input also fed the adds that name it: their output gradients join here, after this
            // layer's own share and before the layer before reads it (as Network::backward does).
            for (size_t add : skips_[i])
                cuda::add(dx, dx, douts_[add].data, static_cast<size_t>(batch) * plan_[i].layer->in.size(), stream_);
            dy = dx;
        }
    }

    // dy: the gradient at this layer's output; dx: where the gradient at its input goes (null for the first layer).
    void backward_layer(size_t i, int batch, const float* dy, float* dx) {
        const GpuLayer& g = plan_[i];
        const Layer& l = *g.layer;
        const LayerType type = l.spec.type;
        const float* in = input_of(i);
        const size_t n = static_cast<size_t>(batch) * l.out.size();
        if (type == LayerType::linear) {
            const int I = static_cast<int>(l.in.size()), O = l.spec.out;
            const float* dz = through_activation(i, dy, n);
            // dW[O,I] += dz^T · x ; db += Σ dz ; dx = dz · W
            matmul(true, false, O, I, batch, dz, O, n, in, I, static_cast<size_t>(batch) * I, 1.0f,
                   grads_.data + l.weight, I);
            TRAINDECK_LAUNCH(bias_grad_kernel, blocks_for(O), kThreads, stream_, grads_.data + l.bias, dz, batch, O);
            if (dx)
                matmul(false, false, batch, I, O, dz, O, n, params_.data + l.weight, I, static_cast<size_t>(O) * I,
                       0.0f, dx, I);
        } else if (type == LayerType::conv2d) {
            const float* dz = through_activation(i, dy, n);
            describe_conv(l, batch);
            const float one = 1.0f, zero = 0.0f;
            TRAINDECK_CHECK(
                cudnnConvolutionBackwardBias(cudnn_, &one, y_desc_, dz, &one, bias_desc_, grads_.data + l.bias));
            // The algorithm is chosen (and the workspace grown) before the call that uses workspace_: as arguments of
            // one call, their order of evaluation would be unspecified.
            const cudnnConvolutionBwdFilterAlgo_t filter_algo = filter_algorithm();
            TRAINDECK_CHECK(cudnnConvolutionBackwardFilter(cudnn_, &one, x_desc_, in, y_desc_, dz, conv_desc_,
                                                           filter_algo, workspace_.data, workspace_.n, &one,
                                                           filter_desc_, grads_.data + l.weight));
            if (dx) {
                const cudnnConvolutionBwdDataAlgo_t data_algo = data_algorithm();
                TRAINDECK_CHECK(cudnnConvolutionBackwardData(cudnn_, &one, filter_desc_, params_.data + l.weight,
                                                             y_desc_, dz, conv_desc_, data_algo, workspace_.data,
                                                             workspace_.n, &zero, x_desc_, dx));
            }
        } else if (type == LayerType::maxpool) {
            if (dx) {
                describe_pool(l, batch);
                const float one = 1.0f, zero = 0.0f;
                TRAINDECK_CHECK(cudnnPoolingBackward(cudnn_, pool_desc_, &one, y_desc_, outputs_[i].data, y_desc_, dy,
                                                     x_desc_, in, &zero, x_desc_, dx));
            }
        } else if (type == LayerType::avgpool) {
            if (dx)
                cuda::avgpool_backward(dx, dy, batch, l.in.height, l.in.width, l.in.channels, l.spec.size,
                                       l.spec.stride, stream_);
        } else if (type == LayerType::global_avgpool) {
            if (dx)
                cuda::global_avgpool_backward(dx, dy, batch, l.in.height * l.in.width, l.in.channels, stream_);
        } else if (type == LayerType::batchnorm) {
            const int c = l.in.channels;
            const float* stats = pre_[i].data + n;
            cuda::batchnorm_backward(dx, grads_.data + l.weight, grads_.data + l.bias, pre_[i].data + n + 2 * c, dy,
                                     pre_[i].data, stats + c, params_.data + l.weight, n / c, c, stream_);
        } else if (type == LayerType::add) {
            // The other input's share is added where that input was made (backward's skips).
            if (dx)
                TRAINDECK_CHECK(cudaMemcpyAsync(dx, dy, n * sizeof(float), cudaMemcpyDeviceToDevice, stream_));
        } else if (type == LayerType::relu) {
            if (dx)
                cuda::relu_backward(dx, dy, outputs_[i].data, n, stream_);
        } else if (type == LayerType::gelu) {
            if (dx)
                cuda::gelu_backward(dx, dy, in, n, stream_);
        }
    }

    const Network* net_ = nullptr;
    OptimizerSpec optimizer_;
    GpuOptions options_;
    int max_batch_ = 0, classes_ = 0;
    std::vector<GpuLayer> plan_;
    std::vector<std::vector<size_t>> skips_; // per layer: the add layers that read its input
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
    cuda::PeerWatch peer_gone_;
    bool failed_ = false;
    std::set<std::string> noted_fallbacks_;
    double* host_totals_ = nullptr; // pinned: loss, correct, stop vote
    Device<float> params_, grads_, state_[2], input_, probs_, dlogits_, loss_rows_;
    std::vector<Device<float>> outputs_, douts_, pre_;
    Device<__nv_bfloat16> bf16_a_, bf16_b_;
    Device<int32_t> labels_;
    Device<float> targets_; // a regression's standardised targets
    Device<double> totals_;
    std::vector<float> host_logits_;
    std::string description_;
};

} // namespace

std::unique_ptr<Model> create_gpu_model(const Network& net, const OptimizerSpec& optimizer, int max_batch,
                                        const GpuOptions& options, std::string& reason) {
    auto model = std::make_unique<CudaModel>();
    if (!model->init(net, optimizer, max_batch, options, reason))
        return nullptr;
    return model;
}

bool gpu_nccl_unique_id(std::string& id_hex, std::string& error) {
    try {
        id_hex = cuda::nccl_unique_id_hex();
        return true;
    } catch (const GpuError& failure) {
        error = failure.what();
        return false;
    }
}

void set_data_parallel_watch(double timeout_seconds, std::function<std::string()> peer_gone) {
    data_parallel_watch() = {timeout_seconds, std::move(peer_gone)};
}

} // namespace traindeck::engine
