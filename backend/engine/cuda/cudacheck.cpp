// traindeck-cuda-check: runs every CUDA kernel of the engine and its CPU twin on the same random data and
// prints the largest relative error of each; then times cuBLAS sgemm and an NCCL all-reduce on one rank.
// Exit 0: all within tolerance; 1: a mismatch; 77: no CUDA device here (ctest reports a skip).
#include "cudakernels.h"
#include "devicecheck.h"
#include "layers.h"
#include "gemm.h"
#include "gpumodel.h"
#include "network.h"
#include "optimizer.h"
#include "rng.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>

using namespace traindeck::engine;

namespace {

struct DeviceBuffer {
    float* data = nullptr;
    size_t n = 0;
    explicit DeviceBuffer(size_t count) : n(count) { cudaMalloc(&data, count * sizeof(float)); }
    DeviceBuffer(const std::vector<float>& host) : DeviceBuffer(host.size()) { upload(host); }
    ~DeviceBuffer() { cudaFree(data); }
    void upload(const std::vector<float>& host) { cudaMemcpy(data, host.data(), n * sizeof(float), cudaMemcpyHostToDevice); }
    std::vector<float> download() const {
        std::vector<float> host(n);
        cudaMemcpy(host.data(), data, n * sizeof(float), cudaMemcpyDeviceToHost);
        return host;
    }
};

std::vector<float> random_vector(size_t n, Rng& rng, float scale = 2.0f) {
    std::vector<float> v(n);
    for (auto& x : v)
        x = rng.uniform(-scale, scale);
    return v;
}

double max_relative_error(const std::vector<float>& gpu, const std::vector<float>& cpu) {
    double worst = 0.0;
    for (size_t i = 0; i < cpu.size(); ++i)
        worst = std::max(worst, std::abs(double(gpu[i]) - cpu[i]) / std::max(1.0, std::abs(double(cpu[i]))));
    return worst;
}

int failures = 0;

void report(const char* what, double error, double tolerance) {
    const bool ok = error <= tolerance;
    failures += !ok;
    std::printf("%-32s max relative error %.3g (tolerance %.1g)  %s\n", what, error, tolerance, ok ? "ok" : "MISMATCH");
}

// Trains the same MLP for `steps` SGD steps on the CPU (the engine's Network + Optimizer) and on the GPU path
// (GpuModel): returns the largest relative difference of the final weights and of the per-step losses.
struct TrainingComparison {
    double weights = 0, loss = 0;
    double cpu_samples_per_s = 0, gpu_samples_per_s = 0;
};

TrainingComparison compare_training(const std::vector<LayerSpec>& layers, SampleShape shape, int classes, int batch, int steps,
                                    bool bf16) {
    const int features = static_cast<int>(shape.size());
    TrainingComparison result;
    Rng rng(7);
    const int samples = batch * steps;
    std::vector<float> x(size_t(samples) * features);
    std::vector<int32_t> y(samples);
    for (auto& v : x)
        v = rng.uniform(-1.0f, 1.0f);
    for (auto& label : y)
        label = static_cast<int32_t>(rng.below(classes));
    auto built = Network::build(layers, shape, classes, batch);
    Network& net = *built;
    Rng init(3);
    net.initialize(init);
    const std::vector<float> start = net.params();
    OptimizerSpec sgd{.type = "sgd", .lr = 0.05f, .momentum = 0.9f};

    // CPU
    Optimizer optimizer(sgd, net.params().size());
    std::vector<float> probs(size_t(batch) * classes), dlogits(probs.size());
    std::vector<double> cpu_losses;
    Rng unused;
    auto t0 = std::chrono::steady_clock::now();
    for (int s = 0; s < steps; ++s) {
        std::fill(net.grads().begin(), net.grads().end(), 0.0f);
        const float* bx = x.data() + size_t(s) * batch * features;
        const int32_t* by = y.data() + size_t(s) * batch;
        const float* logits = net.forward(bx, batch, true, unused);
        cpu_losses.push_back(softmax_cross_entropy_forward(probs.data(), logits, by, batch, classes));
        softmax_cross_entropy_backward(dlogits.data(), probs.data(), by, batch, classes, 1.0f / batch);
        net.backward(bx, dlogits.data(), batch);
        optimizer.step(net.params(), net.grads(), net.tensors(), 0.05f, s + 1);
    }
    result.cpu_samples_per_s = samples / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::vector<float> cpu_final = net.params();

    // GPU
    std::string reason;
    auto gpu = GpuModel::create(net, sgd, batch, GpuOptions{bf16, 1, 0, {}}, reason);
    if (!gpu) {
        std::printf("GPU model: %s\n", reason.c_str());
        result.weights = result.loss = 1.0;
        return result;
    }
    std::vector<std::vector<float>> state = {std::vector<float>(start.size(), 0.0f)};
    gpu->upload(start, state);
    std::vector<double> gpu_losses;
    std::string error;
    cudaDeviceSynchronize();
    t0 = std::chrono::steady_clock::now();
    for (int s = 0; s < steps; ++s) {
        gpu->zero_grads();
        gpu->forward_backward(x.data() + size_t(s) * batch * features, y.data() + size_t(s) * batch, batch, 1.0f / batch);
        double loss = 0;
        long correct = 0;
        if (!gpu->step(0.05f, s + 1, loss, correct, error))
            std::printf("GPU step: %s\n", error.c_str());
        gpu_losses.push_back(loss);
    }
    result.gpu_samples_per_s = samples / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::vector<float> gpu_final(start.size());
    gpu->download(gpu_final, state);
    result.weights = max_relative_error(gpu_final, cpu_final);
    for (int s = 0; s < steps; ++s)
        result.loss = std::max(result.loss, std::abs(gpu_losses[s] - cpu_losses[s]) / std::max(1.0, std::abs(cpu_losses[s])));
    return result;
}

} // namespace

int main() {
    const CudaProbe probe = probe_cuda();
    std::printf("%s\n", probe.message.c_str());
    if (!probe.available)
        return 77;
    Rng rng(1);
    const size_t n = 1 << 20;
    const auto x = random_vector(n, rng), dy = random_vector(n, rng);
    DeviceBuffer dx_in(x), ddy(dy), dout(n), dgrad(n);
    std::vector<float> cpu(n), cpu_grad(n);

    cuda::relu_forward(dout.data, dx_in.data, n, nullptr);
    relu_forward(cpu.data(), x.data(), n);
    report("relu forward", max_relative_error(dout.download(), cpu), 0.0);
    cuda::relu_backward(dgrad.data, ddy.data, dout.data, n, nullptr);
    relu_backward(cpu_grad.data(), dy.data(), cpu.data(), n);
    report("relu backward", max_relative_error(dgrad.download(), cpu_grad), 0.0);
    cuda::gelu_forward(dout.data, dx_in.data, n, nullptr);
    gelu_forward(cpu.data(), x.data(), n);
    report("gelu forward", max_relative_error(dout.download(), cpu), 1e-5);
    cuda::gelu_backward(dgrad.data, ddy.data, dx_in.data, n, nullptr);
    gelu_backward(cpu_grad.data(), dy.data(), x.data(), n);
    report("gelu backward", max_relative_error(dgrad.download(), cpu_grad), 1e-5);

    const int batch = 512, classes = 10;
    const auto logits = random_vector(size_t(batch) * classes, rng, 6.0f);
    std::vector<int32_t> labels(batch);
    for (auto& label : labels)
        label = static_cast<int32_t>(rng.below(classes));
    DeviceBuffer dlogits(logits), dprobs(logits.size()), dloss(batch), dgrad_logits(logits.size());
    int32_t* dlabels = nullptr;
    cudaMalloc(&dlabels, batch * sizeof(int32_t));
    cudaMemcpy(dlabels, labels.data(), batch * sizeof(int32_t), cudaMemcpyHostToDevice);
    cuda::softmax_cross_entropy_forward(dprobs.data, dloss.data, dlogits.data, dlabels, batch, classes, nullptr);
    std::vector<float> probs(logits.size()), grad_logits(logits.size());
    const double cpu_loss = softmax_cross_entropy_forward(probs.data(), logits.data(), labels.data(), batch, classes);
    double gpu_loss = 0.0;
    for (float v : dloss.download())
        gpu_loss += v;
    report("softmax-xent probs", max_relative_error(dprobs.download(), probs), 1e-6);
    report("softmax-xent loss", std::abs(gpu_loss - cpu_loss) / std::max(1.0, cpu_loss), 1e-5);
    cuda::softmax_cross_entropy_backward(dgrad_logits.data, dprobs.data, dlabels, batch, classes, 1.0f / batch, nullptr);
    softmax_cross_entropy_backward(grad_logits.data(), probs.data(), labels.data(), batch, classes, 1.0f / batch);
    report("softmax-xent backward", max_relative_error(dgrad_logits.download(), grad_logits), 1e-6);
    cudaFree(dlabels);

    auto params = random_vector(n, rng), grads = random_vector(n, rng), momentum = random_vector(n, rng);
    DeviceBuffer dparams(params), dgrads(grads), dmomentum(momentum);
    cuda::sgd_step(dparams.data, dgrads.data, dmomentum.data, n, 0.05f, 0.9f, 1e-4f, nullptr);
    OptimizerSpec sgd{.type = "sgd", .lr = 0.05f, .momentum = 0.9f, .weight_decay = 1e-4f};
    Optimizer optimizer(sgd, n);
    optimizer.state()[0] = momentum;
    optimizer.step(params, grads, {{"all", 0, n, true}}, 0.05f, 1);
    report("sgd step", max_relative_error(dparams.download(), params), 1e-6);

    cublasHandle_t handle;
    cublasCreate(&handle);
    for (const auto& [ta, tb] : {std::pair{false, true}, std::pair{true, false}, std::pair{false, false}}) {
        const int m = 300, nn = 200, k = 150;
        const auto a = random_vector(size_t(m) * k, rng), b = random_vector(size_t(k) * nn, rng);
        const int lda = ta ? m : k, ldb = tb ? k : nn;
        std::vector<float> c(size_t(m) * nn, 0.0f);
        DeviceBuffer da(a), db(b), dc(c);
        cuda::gemm(handle, ta, tb, m, nn, k, 1.0f, da.data, lda, db.data, ldb, 0.0f, dc.data, nn);
        set_compute_threads(1);
        traindeck::engine::gemm(ta, tb, m, nn, k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c.data(), nn);
        char name[64];
        std::snprintf(name, sizeof(name), "cublas gemm (%c%c)", ta ? 'T' : 'N', tb ? 'T' : 'N');
        // TF32 may be on by default on Ampere+; allow its 10-bit mantissa.
        report(name, max_relative_error(dc.download(), c), 5e-3);
    }
    {
        const int size = 4096;
        DeviceBuffer a(size_t(size) * size), b(size_t(size) * size), c(size_t(size) * size);
        cuda::gemm(handle, false, false, size, size, size, 1.0f, a.data, size, b.data, size, 0.0f, c.data, size);
        cudaDeviceSynchronize();
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < 10; ++i)
            cuda::gemm(handle, false, false, size, size, size, 1.0f, a.data, size, b.data, size, 0.0f, c.data, size);
        cudaDeviceSynchronize();
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 10;
        std::printf("cublas sgemm 4096^3: %.1f TFLOP/s\n", 2.0 * size * size * size / seconds / 1e12);
    }
    cublasDestroy(handle);

    std::string error;
    const std::string id = cuda::nccl_unique_id_hex();
    cuda::NcclComm* comm = cuda::nccl_init(id, 1, 0, error);
    if (!comm) {
        std::printf("nccl: %s\n", error.c_str());
        ++failures;
    } else {
        std::vector<float> ones(n, 1.0f);
        DeviceBuffer buffer(ones);
        const bool ok = cuda::nccl_all_reduce_sum(comm, buffer.data, n, nullptr, error);
        cudaDeviceSynchronize();
        report("nccl all-reduce (1 rank)", ok ? max_relative_error(buffer.download(), ones) : 1.0, 0.0);
        cuda::nccl_destroy(comm);
    }
    // The GPU training path against the CPU engine: the Fashion-MNIST MLP's shape (784-256-128-10, batch 128, SGD),
    // then with GELU, then bf16 autocast (looser: bf16 keeps 8 bits of mantissa).
    set_compute_threads(0);
    const std::vector<LayerSpec> mlp = {{.type = "linear", .out = 256}, {.type = "relu"}, {.type = "linear", .out = 128}, {.type = "relu"}};
    const std::vector<LayerSpec> gelu_mlp = {{.type = "linear", .out = 256}, {.type = "gelu"}, {.type = "linear", .out = 128}, {.type = "gelu"}};
    const SampleShape flat{1, 784, 1};
    const TrainingComparison fp32 = compare_training(mlp, flat, 10, 128, 200, false);
    report("MLP training fp32: weights", fp32.weights, 1e-3);
    report("MLP training fp32: losses", fp32.loss, 1e-4);
    const TrainingComparison gelu = compare_training(gelu_mlp, flat, 10, 128, 50, false);
    report("MLP training fp32 GELU: weights", gelu.weights, 1e-3);
    const TrainingComparison bf16 = compare_training(mlp, flat, 10, 128, 200, true);
    report("MLP training bf16: losses", bf16.loss, 5e-2);
    // cuDNN convolutions (padding, stride, several channels) and max-pool against the engine's im2col path.
    const std::vector<LayerSpec> cnn = {{.type = "conv2d", .out = 8, .kernel = 3, .padding = 1}, {.type = "relu"},
                                        {.type = "maxpool", .stride = 2, .size = 2}, {.type = "conv2d", .out = 16, .kernel = 3, .stride = 2},
                                        {.type = "gelu"}, {.type = "flatten"}, {.type = "linear", .out = 32}, {.type = "relu"}};
    const TrainingComparison conv = compare_training(cnn, SampleShape{12, 12, 3}, 10, 64, 50, false);
    report("CNN training fp32: weights", conv.weights, 1e-3);
    report("CNN training fp32: losses", conv.loss, 1e-4);
    const TrainingComparison fashion_cnn = compare_training(
        {{.type = "conv2d", .out = 32, .kernel = 3}, {.type = "relu"}, {.type = "maxpool", .stride = 2, .size = 2},
         {.type = "conv2d", .out = 64, .kernel = 3}, {.type = "relu"}, {.type = "maxpool", .stride = 2, .size = 2},
         {.type = "flatten"}, {.type = "linear", .out = 128}, {.type = "relu"}},
        SampleShape{28, 28, 1}, 10, 128, 40, false);
    std::printf("CNN conv32-conv64-fc128, batch 128: CPU engine %.0f samples/s, GPU fp32 %.0f (%.1fx)\n",
                fashion_cnn.cpu_samples_per_s, fashion_cnn.gpu_samples_per_s,
                fashion_cnn.gpu_samples_per_s / fashion_cnn.cpu_samples_per_s);
    std::printf("MLP 784-256-128-10, batch 128: CPU engine %.0f samples/s, GPU fp32 %.0f (%.1fx), GPU bf16 %.0f (%.1fx)\n",
                fp32.cpu_samples_per_s, fp32.gpu_samples_per_s, fp32.gpu_samples_per_s / fp32.cpu_samples_per_s,
                bf16.gpu_samples_per_s, bf16.gpu_samples_per_s / bf16.cpu_samples_per_s);
    std::printf("%s\n", failures ? "FAILED" : "all CUDA kernels and the GPU training path match their CPU twins");
    return failures ? 1 : 0;
}
