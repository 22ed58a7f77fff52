// traindeck-cuda-check: runs every CUDA kernel of the engine and its CPU twin on the same random data and
// prints the largest relative error of each (SGD and AdamW included); times cuBLAS sgemm; runs an NCCL all-reduce
// on one rank; trains small models on the GPU path and on the CPU engine and compares weights and losses; and,
// where two GPUs are visible, trains on two ranks against the CPU and checks that a rank that dies ends the other
// rank's wait (it fails, it does not hang).
// Exit 0: all within tolerance; 1: a mismatch or a failed CUDA/cuBLAS/cuDNN/NCCL call (every part still runs, so
// one run gives all figures); 77: no NVIDIA device node here (/dev/nvidiactl, /dev/nvidiaN), which ctest reports as
// a skip. Device nodes without a usable device (a broken driver) are a failure, not a skip.
//
// Internally it also runs as one rank of the two-rank checks: traindeck-cuda-check --rank R --nccl-id HEX --out FILE
// [--die-after STEPS] (started by itself through spawn_process, posix_spawn, since a process that has used CUDA
// cannot fork).
#include "cudakernels.h"
#include "cudastatus.h"
#include "devicecheck.h"
#include "gemm.h"
#include "gpumodel.h"
#include "jobspec.h"
#include "layers.h"
#include "network.h"
#include "optimizer.h"
#include "process.h"
#include "rng.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

using namespace traindeck::engine;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

struct DeviceBuffer {
    float* data = nullptr;
    size_t n = 0;
    explicit DeviceBuffer(size_t count) : n(count) { TRAINDECK_CHECK(cudaMalloc(&data, count * sizeof(float))); }
    DeviceBuffer(const std::vector<float>& host) : DeviceBuffer(host.size()) { upload(host); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    ~DeviceBuffer() { cudaFree(data); }
    void upload(const std::vector<float>& host) {
        TRAINDECK_CHECK(cudaMemcpy(data, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    }
    std::vector<float> download() const {
        std::vector<float> host(n);
        // A synchronous copy: it also reports a fault of the kernel that wrote the buffer.
        TRAINDECK_CHECK(cudaMemcpy(host.data(), data, n * sizeof(float), cudaMemcpyDeviceToHost));
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
    if (gpu.size() != cpu.size())
        return INFINITY;
    double worst = 0.0;
    for (size_t i = 0; i < cpu.size(); ++i) {
        const double error = std::abs(double(gpu[i]) - cpu[i]) / std::max(1.0, std::abs(double(cpu[i])));
        if (!(error <= worst)) // NaN counts as the worst
            worst = std::isnan(error) ? INFINITY : error;
    }
    return worst;
}

double max_relative_error(const std::vector<double>& gpu, const std::vector<double>& cpu) {
    if (gpu.size() != cpu.size())
        return INFINITY;
    double worst = 0.0;
    for (size_t i = 0; i < cpu.size(); ++i) {
        const double error = std::abs(gpu[i] - cpu[i]) / std::max(1.0, std::abs(cpu[i]));
        if (!(error <= worst))
            worst = std::isnan(error) ? INFINITY : error;
    }
    return worst;
}

int failures = 0;

void report(const std::string& what, double error, double tolerance) {
    const bool ok = error <= tolerance;
    failures += !ok;
    std::printf("%-36s max relative error %.3g (tolerance %.1g)  %s\n", what.c_str(), error, tolerance,
                ok ? "ok" : "MISMATCH");
}

void report_failure(const char* what, const std::string& why) {
    ++failures;
    std::printf("%-36s FAILED: %s\n", what, why.c_str());
}

// One part of the check: a failed CUDA call ends that part only, so one run still prints every other figure.
void part(const char* name, const std::function<void()>& body) {
    try {
        body();
    } catch (const GpuError& error) {
        report_failure(name, error.what());
    }
    std::fflush(stdout);
}

// A small training problem, the same on every rank and in every process (seeded): random samples and labels, a
// network initialised from its own seed.
struct Problem {
    std::vector<LayerSpec> layers;
    SampleShape shape;
    int classes = 10, batch = 128, steps = 100;
    OptimizerSpec optimizer{.type = "sgd", .lr = 0.05f, .momentum = 0.9f};
    std::vector<float> x;
    std::vector<int32_t> y;
    std::vector<float> targets; // a regression (classes 1): one value a sample, trained with the squared error
};

Problem make_problem(std::vector<LayerSpec> layers, SampleShape shape, int classes, int batch, int steps,
                     OptimizerSpec optimizer) {
    Problem p{std::move(layers), shape, classes, batch, steps, std::move(optimizer), {}, {}, {}};
    Rng rng(7);
    const size_t samples = size_t(batch) * steps;
    p.x.resize(samples * shape.size());
    p.y.resize(samples);
    for (auto& v : p.x)
        v = rng.uniform(-1.0f, 1.0f);
    for (auto& label : p.y)
        label = static_cast<int32_t>(rng.below(classes));
    return p;
}

Network build_network(const Problem& p) {
    auto built = Network::build(p.layers, p.shape, p.classes, p.batch);
    if (!built) {
        std::printf("check model does not build: %s\n", built.error().c_str());
        std::exit(1);
    }
    Rng init(3);
    built->initialize(init);
    return std::move(*built);
}

struct Run {
    std::vector<float> weights;
    std::vector<double> losses; // per step, summed over the batch (and over the ranks)
    double samples_per_s = 0;
    bool votes_ok = true; // data parallel: any_rank() agreed on every rank
};

Run train_cpu(const Problem& p) {
    Network net = build_network(p);
    Optimizer optimizer(p.optimizer, net.params().size());
    const size_t features = p.shape.size();
    std::vector<float> probs(size_t(p.batch) * p.classes), dlogits(probs.size());
    Rng unused;
    Run run;
    const auto start = Clock::now();
    for (int s = 0; s < p.steps; ++s) {
        std::fill(net.grads().begin(), net.grads().end(), 0.0f);
        const float* bx = p.x.data() + size_t(s) * p.batch * features;
        const int32_t* by = p.y.data() + size_t(s) * p.batch;
        const float* logits = net.forward(bx, p.batch, true, unused);
        if (!p.targets.empty()) {
            run.losses.push_back(
                squared_error(logits, p.targets.data() + size_t(s) * p.batch, p.batch, dlogits.data(), 1.0f / p.batch));
        } else {
            run.losses.push_back(softmax_cross_entropy_forward(probs.data(), logits, by, p.batch, p.classes));
            softmax_cross_entropy_backward(dlogits.data(), probs.data(), by, p.batch, p.classes, 1.0f / p.batch);
        }
        net.backward(bx, dlogits.data(), p.batch);
        optimizer.step(net.params(), net.grads(), net.tensors(), p.optimizer.lr, s + 1);
    }
    run.samples_per_s = double(p.batch) * p.steps / seconds_since(start);
    run.weights = net.params();
    return run;
}

// The GPU path as the trainer drives it. die_after >= 0: this process ends abruptly after that many steps, as a
// crashed rank would (no destructor, no NCCL teardown).
Run train_gpu(const Problem& p, const GpuOptions& options, int die_after = -1) {
    Network net = build_network(p);
    std::string reason;
    auto gpu = create_gpu_model(net, p.optimizer, p.batch, options, reason);
    if (!gpu)
        throw GpuError("the GPU path did not take the check model: " + reason);
    std::vector<std::vector<float>> state(p.optimizer.type == "adamw" ? 2 : 1,
                                          std::vector<float>(net.params().size(), 0.0f));
    gpu->write_parameters(net.params(), state);
    const size_t features = p.shape.size();
    Run run;
    Rng unused;
    TRAINDECK_CHECK(cudaDeviceSynchronize());
    const auto start = Clock::now();
    for (int s = 0; s < p.steps; ++s) {
        if (s == die_after)
            std::_Exit(3);
        if (options.world_size > 1)
            run.votes_ok &= !gpu->any_rank(false);
        gpu->zero_grads();
        gpu->forward_backward(p.x.data() + size_t(s) * p.batch * features, p.y.data() + size_t(s) * p.batch,
                              p.targets.empty() ? nullptr : p.targets.data() + size_t(s) * p.batch, p.batch,
                              1.0f / p.batch, unused);
        double loss = 0;
        long correct = 0;
        gpu->step(p.optimizer.lr, s + 1, loss, correct);
        run.losses.push_back(loss);
    }
    run.samples_per_s = double(p.batch) * p.steps / seconds_since(start);
    // The last rank votes to stop: every rank must hear it.
    if (options.world_size > 1)
        run.votes_ok &= gpu->any_rank(options.rank == options.world_size - 1);
    gpu->read_parameters(run.weights, state);
    return run;
}

void compare(const char* what, const Run& gpu, const Run& cpu, double weight_tolerance, double loss_tolerance) {
    char name[96];
    std::snprintf(name, sizeof(name), "%s: weights", what);
    report(name, max_relative_error(gpu.weights, cpu.weights), weight_tolerance);
    if (loss_tolerance > 0) {
        std::snprintf(name, sizeof(name), "%s: losses", what);
        report(name, max_relative_error(gpu.losses, cpu.losses), loss_tolerance);
    }
}

const std::vector<LayerSpec> kMlp = {
    {.type = LayerType::linear, .out = 256}, {.type = LayerType::relu}, {.type = LayerType::linear, .out = 128}, {.type = LayerType::relu}};
const SampleShape kFlat{1, 784, 1};

// --- the two-rank checks -------------------------------------------------------------------------------------

Problem two_rank_problem() {
    return make_problem(kMlp, kFlat, 10, 128, 100, {.type = "sgd", .lr = 0.05f, .momentum = 0.9f});
}

bool write_run(const std::string& path, const Run& run) {
    std::FILE* file = std::fopen(path.c_str(), "wb");
    if (!file)
        return false;
    const uint64_t weights = run.weights.size(), losses = run.losses.size();
    const uint8_t votes = run.votes_ok;
    bool ok = std::fwrite(&weights, sizeof(weights), 1, file) == 1 &&
              std::fwrite(run.weights.data(), sizeof(float), weights, file) == weights &&
              std::fwrite(&losses, sizeof(losses), 1, file) == 1 &&
              std::fwrite(run.losses.data(), sizeof(double), losses, file) == losses &&
              std::fwrite(&votes, 1, 1, file) == 1;
    ok &= std::fclose(file) == 0;
    return ok;
}

bool read_run(const std::string& path, Run& run) {
    std::FILE* file = std::fopen(path.c_str(), "rb");
    if (!file)
        return false;
    uint64_t weights = 0, losses = 0;
    uint8_t votes = 0;
    bool ok = std::fread(&weights, sizeof(weights), 1, file) == 1 && weights < (uint64_t(1) << 32);
    if (ok) {
        run.weights.resize(weights);
        ok = std::fread(run.weights.data(), sizeof(float), weights, file) == weights &&
             std::fread(&losses, sizeof(losses), 1, file) == 1 && losses < (uint64_t(1) << 32);
    }
    if (ok) {
        run.losses.resize(losses);
        ok = std::fread(run.losses.data(), sizeof(double), losses, file) == losses &&
             std::fread(&votes, 1, 1, file) == 1;
    }
    run.votes_ok = votes != 0;
    std::fclose(file);
    return ok;
}

// One rank of a two-rank check (the process started by spawn_rank). Exit 0, or kExitGpuFailed with the error on
// stderr, as traindeck-train would.
int run_rank(int rank, const std::string& nccl_id, const std::string& out, int die_after) {
    double timeout = 60.0;
    if (const char* text = std::getenv("TRAINDECK_NCCL_TIMEOUT_S"); text && *text)
        timeout = std::atof(text);
    set_data_parallel_watch(timeout, {});
    try {
        const Run run = train_gpu(two_rank_problem(), GpuOptions{false, 2, rank, nccl_id}, die_after);
        if (rank == 0 && !write_run(out, run)) {
            std::fprintf(stderr, "rank 0: cannot write %s\n", out.c_str());
            return 1;
        }
        return 0;
    } catch (const GpuError& error) {
        std::fprintf(stderr, "rank %d: %s\n", rank, error.what());
        return kExitGpuFailed;
    }
}

pid_t spawn_rank(int rank, const std::string& nccl_id, const std::string& out, int die_after, double timeout_seconds) {
    traindeck::SpawnOptions spawn;
    spawn.argv = {
        "/proc/self/exe",         "--rank", std::to_string(rank), "--nccl-id", nccl_id, "--out", out, "--die-after",
        std::to_string(die_after)};
    spawn.environment = traindeck::Environment::current();
    spawn.environment->erase("TRAINDECK_NCCL_TIMEOUT_S");
    spawn.environment->set("TRAINDECK_NCCL_TIMEOUT_S", std::to_string(timeout_seconds));
    int error_number = 0;
    return traindeck::spawn_process(spawn, error_number);
}

struct Finished {
    bool exited = false; // false: still running at the deadline, then killed
    int status = 0;
    double seconds = 0;
};

Finished wait_until(pid_t pid, Clock::time_point start, double limit_seconds) {
    Finished result;
    for (;;) {
        if (::waitpid(pid, &result.status, WNOHANG) == pid) {
            result.exited = true;
            break;
        }
        if (seconds_since(start) > limit_seconds) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &result.status, 0);
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    result.seconds = seconds_since(start);
    return result;
}

std::string describe_exit(const Finished& f) {
    if (!f.exited)
        return "still running after " + std::to_string(static_cast<int>(f.seconds)) + " s (killed)";
    if (WIFSIGNALED(f.status))
        return "killed by signal " + std::to_string(WTERMSIG(f.status));
    return "exit code " + std::to_string(WEXITSTATUS(f.status));
}

bool exited_with(const Finished& f, int code) {
    return f.exited && WIFEXITED(f.status) && WEXITSTATUS(f.status) == code;
}

void two_rank_checks(const Run& cpu) {
    const std::string out = "/tmp/traindeck-cuda-check-" + std::to_string(::getpid()) + ".rank0";
    part("2 ranks: training", [&] {
        const std::string id = cuda::nccl_unique_id_hex();
        const auto start = Clock::now();
        const pid_t rank0 = spawn_rank(0, id, out, -1, 60), rank1 = spawn_rank(1, id, out, -1, 60);
        if (rank0 < 0 || rank1 < 0)
            throw GpuError("cannot start the rank processes (posix_spawn of /proc/self/exe)");
        const Finished first = wait_until(rank0, start, 180), second = wait_until(rank1, start, 180);
        if (!exited_with(first, 0) || !exited_with(second, 0)) {
            report_failure("2 ranks: training", "rank 0 " + describe_exit(first) + ", rank 1 " + describe_exit(second) +
                                                    " (their messages are above)");
            return;
        }
        Run run;
        if (!read_run(out, run)) {
            report_failure("2 ranks: training", "rank 0 wrote no readable result to " + out);
            return;
        }
        compare("2 ranks MLP fp32 vs CPU", run, cpu, 1e-3, 1e-4);
        report("2 ranks: stop votes agree", run.votes_ok ? 0.0 : 1.0, 0.0);
        std::printf("2 ranks MLP 784-256-128-10, batch 128 split over 2 GPUs: %.0f samples/s\n", run.samples_per_s);
    });
    std::remove(out.c_str());
    // Rank 1 ends without a word after 5 steps; rank 0, waiting in the next all-reduce, must fail (exit 6) within its
    // 20 s timeout, not wait forever.
    part("2 ranks: a dead rank ends the wait", [&] {
        const std::string id = cuda::nccl_unique_id_hex();
        const auto start = Clock::now();
        const pid_t rank0 = spawn_rank(0, id, out, -1, 20), rank1 = spawn_rank(1, id, out, 5, 20);
        if (rank0 < 0 || rank1 < 0)
            throw GpuError("cannot start the rank processes (posix_spawn of /proc/self/exe)");
        const Finished dead = wait_until(rank1, start, 120), survivor = wait_until(rank0, start, 120);
        const bool ok = exited_with(survivor, kExitGpuFailed);
        failures += !ok;
        std::printf("%-36s rank 1 %s; rank 0 %s after %.1f s (expected exit code %d within the 20 s timeout)  %s\n",
                    "2 ranks: a dead rank ends the wait", describe_exit(dead).c_str(), describe_exit(survivor).c_str(),
                    survivor.seconds, kExitGpuFailed, ok ? "ok" : "MISMATCH");
    });
    std::remove(out.c_str());
}

int rank_main(int argc, char** argv) {
    int rank = -1, die_after = -1;
    std::string id, out;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string arg = argv[i], value = argv[i + 1];
        if (arg == "--rank")
            rank = std::atoi(value.c_str());
        else if (arg == "--nccl-id")
            id = value;
        else if (arg == "--out")
            out = value;
        else if (arg == "--die-after")
            die_after = std::atoi(value.c_str());
    }
    if (rank < 0 || id.empty() || out.empty()) {
        std::fprintf(stderr, "traindeck-cuda-check: --rank, --nccl-id and --out are for its own rank processes; run it "
                             "without arguments\n");
        return 2;
    }
    return run_rank(rank, id, out, die_after);
}

} // namespace

int main(int argc, char** argv) {
    if (argc > 1)
        return rank_main(argc, argv);
    const CudaProbe probe = probe_cuda();
    std::printf("%s\n", probe.message.c_str());
    if (!probe.available) {
        if (!probe.device_node) {
            std::printf("no NVIDIA device node (/dev/nvidiactl, /dev/nvidiaN) on this machine: skipped\n");
            return 77;
        }
        std::printf("FAILED: this machine has NVIDIA device nodes, so a GPU should be usable, but CUDA cannot use it "
                    "(above); fix the driver (nvidia-smi must list the GPU) or give the container GPU access\n");
        return 1;
    }
    Rng rng(1);
    const size_t n = 1 << 20;

    part("element-wise kernels", [&] {
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
    });

    part("batchnorm", [&] {
        const size_t rows = 4096; // 64 samples of 8x8 positions
        const int c = 24;
        const auto x = random_vector(rows * c, rng, 3.0f), dy = random_vector(rows * c, rng);
        const auto gamma = random_vector(c, rng), beta = random_vector(c, rng);
        std::vector<float> mean0(c, 0.0f), var0(c, 1.0f);
        DeviceBuffer dx_in(x), ddy(dy), dgamma_param(gamma), dbeta_param(beta), dy_out(rows * c), dxhat(rows * c),
            dmean(c), dinv(c), drunning_mean(mean0), drunning_var(var0), dgrad_x(rows * c),
            dgrad_gamma(std::vector<float>(c, 0.0f)), dgrad_beta(std::vector<float>(c, 0.0f)),
            dscratch(2 * static_cast<std::size_t>(c));
        cuda::batchnorm_forward_training(dy_out.data, dxhat.data, dmean.data, dinv.data, drunning_mean.data,
                                         drunning_var.data, dx_in.data, dgamma_param.data, dbeta_param.data, rows, c,
                                         0.1f, 1e-5f, nullptr);
        std::vector<float> y(rows * c), xhat(rows * c), inv(c), running_mean = mean0, running_var = var0;
        batchnorm_forward_training(y.data(), xhat.data(), inv.data(), running_mean.data(), running_var.data(), x.data(),
                                   gamma.data(), beta.data(), rows, c, 0.1f, 1e-5f);
        report("batchnorm forward (training)", max_relative_error(dy_out.download(), y), 1e-5);
        report("batchnorm running statistics",
               std::max(max_relative_error(drunning_mean.download(), running_mean),
                        max_relative_error(drunning_var.download(), running_var)),
               1e-5);
        cuda::batchnorm_backward(dgrad_x.data, dgrad_gamma.data, dgrad_beta.data, dscratch.data, ddy.data, dxhat.data,
                                 dinv.data, dgamma_param.data, rows, c, nullptr);
        std::vector<float> dx(rows * c), dgamma(c, 0.0f), dbeta(c, 0.0f);
        batchnorm_backward(dx.data(), dgamma.data(), dbeta.data(), dy.data(), xhat.data(), inv.data(), gamma.data(),
                           rows, c);
        report("batchnorm backward dx", max_relative_error(dgrad_x.download(), dx), 1e-4);
        report("batchnorm backward dgamma, dbeta",
               std::max(max_relative_error(dgrad_gamma.download(), dgamma),
                        max_relative_error(dgrad_beta.download(), dbeta)),
               1e-5);
        cuda::batchnorm_forward_inference(dy_out.data, dx_in.data, dgamma_param.data, dbeta_param.data,
                                          drunning_mean.data, drunning_var.data, rows, c, 1e-5f, nullptr);
        batchnorm_forward_inference(y.data(), x.data(), gamma.data(), beta.data(), running_mean.data(),
                                    running_var.data(), rows, c, 1e-5f);
        report("batchnorm forward (inference)", max_relative_error(dy_out.download(), y), 1e-5);
    });

    part("pooling and residual add", [&] {
        const int batch = 16, h = 9, w = 7, c = 12, size = 3, stride = 2;
        const int oh = (h - size) / stride + 1, ow = (w - size) / stride + 1;
        const auto x = random_vector(size_t(batch) * h * w * c, rng),
                   dy = random_vector(size_t(batch) * oh * ow * c, rng);
        DeviceBuffer dx_in(x), ddy(dy), dout(dy.size()), dgrad(x.size());
        std::vector<float> y(dy.size()), dx(x.size());
        cuda::avgpool_forward(dout.data, dx_in.data, batch, h, w, c, size, stride, nullptr);
        avgpool_forward(y.data(), x.data(), batch, h, w, c, size, stride);
        report("avgpool forward", max_relative_error(dout.download(), y), 1e-6);
        cuda::avgpool_backward(dgrad.data, ddy.data, batch, h, w, c, size, stride, nullptr);
        avgpool_backward(dx.data(), dy.data(), batch, h, w, c, size, stride);
        report("avgpool backward", max_relative_error(dgrad.download(), dx), 1e-6);
        const auto gdy = random_vector(size_t(batch) * c, rng);
        DeviceBuffer dgdy(gdy), dgout(gdy.size());
        std::vector<float> gy(gdy.size());
        cuda::global_avgpool_forward(dgout.data, dx_in.data, batch, h * w, c, nullptr);
        global_avgpool_forward(gy.data(), x.data(), batch, h * w, c);
        report("global avgpool forward", max_relative_error(dgout.download(), gy), 1e-6);
        cuda::global_avgpool_backward(dgrad.data, dgdy.data, batch, h * w, c, nullptr);
        global_avgpool_backward(dx.data(), gdy.data(), batch, h * w, c);
        report("global avgpool backward", max_relative_error(dgrad.download(), dx), 0.0);
        const auto other = random_vector(x.size(), rng);
        DeviceBuffer dother(other);
        cuda::add(dgrad.data, dx_in.data, dother.data, x.size(), nullptr);
        add_forward(dx.data(), x.data(), other.data(), x.size());
        report("residual add", max_relative_error(dgrad.download(), dx), 0.0);
    });

    part("softmax cross-entropy", [&] {
        const int batch = 512, classes = 10;
        const auto logits = random_vector(size_t(batch) * classes, rng, 6.0f);
        std::vector<int32_t> labels(batch);
        for (auto& label : labels)
            label = static_cast<int32_t>(rng.below(classes));
        DeviceBuffer dlogits(logits), dprobs(logits.size()), dloss(batch), dgrad_logits(logits.size());
        int32_t* dlabels = nullptr;
        TRAINDECK_CHECK(cudaMalloc(&dlabels, batch * sizeof(int32_t)));
        TRAINDECK_CHECK(cudaMemcpy(dlabels, labels.data(), batch * sizeof(int32_t), cudaMemcpyHostToDevice));
        for (const float smoothing : {0.0f, 0.1f}) {
            const std::string with = smoothing > 0.0f ? " (label smoothing 0.1)" : "";
            cuda::softmax_cross_entropy_forward(dprobs.data, dloss.data, dlogits.data, dlabels, batch, classes,
                                                smoothing, nullptr);
            std::vector<float> probs(logits.size()), grad_logits(logits.size());
            const double cpu_loss =
                softmax_cross_entropy_forward(probs.data(), logits.data(), labels.data(), batch, classes, smoothing);
            double gpu_loss = 0.0;
            for (float v : dloss.download())
                gpu_loss += v;
            report("softmax-xent probs" + with, max_relative_error(dprobs.download(), probs), 1e-6);
            report("softmax-xent loss" + with, std::abs(gpu_loss - cpu_loss) / std::max(1.0, cpu_loss), 1e-5);
            cuda::softmax_cross_entropy_backward(dgrad_logits.data, dprobs.data, dlabels, batch, classes, 1.0f / batch,
                                                 smoothing, nullptr);
            softmax_cross_entropy_backward(grad_logits.data(), probs.data(), labels.data(), batch, classes,
                                           1.0f / batch, smoothing);
            report("softmax-xent backward" + with, max_relative_error(dgrad_logits.download(), grad_logits), 1e-6);
        }
        TRAINDECK_CHECK(cudaFree(dlabels));
    });

    part("sgd step", [&] {
        auto params = random_vector(n, rng), grads = random_vector(n, rng), momentum = random_vector(n, rng);
        DeviceBuffer dparams(params), dgrads(grads), dmomentum(momentum);
        cuda::sgd_step(dparams.data, dgrads.data, dmomentum.data, n, 0.05f, 0.9f, 1e-4f, nullptr);
        OptimizerSpec sgd{.type = "sgd", .lr = 0.05f, .momentum = 0.9f, .weight_decay = 1e-4f};
        Optimizer optimizer(sgd, n);
        optimizer.state()[0] = momentum;
        optimizer.step(params, grads, {{"all", 0, n, true}}, 0.05f, 1);
        report("sgd step", max_relative_error(dparams.download(), params), 1e-6);
    });

    // AdamW over three steps (the bias corrections change with the step), with decay on the first half of the
    // parameters only (biases have none), against Optimizer::step. A large lr makes every update count.
    part("adamw step", [&] {
        auto params = random_vector(n, rng);
        const auto m = random_vector(n, rng, 0.5f);
        std::vector<float> v = random_vector(n, rng, 1.0f);
        for (auto& value : v)
            value = std::abs(value);
        const OptimizerSpec adamw{.type = "adamw", .lr = 0.1f, .weight_decay = 0.05f};
        Optimizer optimizer(adamw, n);
        optimizer.state()[0] = m;
        optimizer.state()[1] = v;
        const std::vector<ParameterTensor> tensors = {{"weights", 0, n / 2, true}, {"biases", n / 2, n - n / 2, false}};
        DeviceBuffer dparams(params), dm(m), dv(v), dgrads(n);
        for (long step = 1; step <= 3; ++step) {
            const auto grads = random_vector(n, rng);
            dgrads.upload(grads);
            for (const ParameterTensor& t : tensors)
                cuda::adamw_step(dparams.data + t.offset, dgrads.data + t.offset, dm.data + t.offset,
                                 dv.data + t.offset, t.count, adamw.lr, adamw.beta1, adamw.beta2, adamw.eps,
                                 t.decay ? adamw.weight_decay : 0.0f, step, nullptr);
            optimizer.step(params, grads, tensors, adamw.lr, step);
        }
        report("adamw step (3 steps): params", max_relative_error(dparams.download(), params), 1e-5);
        report("adamw step (3 steps): m", max_relative_error(dm.download(), optimizer.state()[0]), 1e-6);
        report("adamw step (3 steps): v", max_relative_error(dv.download(), optimizer.state()[1]), 1e-6);
    });

    part("cublas gemm", [&] {
        cublasHandle_t handle = nullptr;
        TRAINDECK_CHECK(cublasCreate(&handle));
        // Plain fp32, as the fp32 training path sets it (TF32 would not meet these tolerances).
        TRAINDECK_CHECK(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
        try {
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
                std::snprintf(name, sizeof(name), "cublas gemm fp32 (%c%c)", ta ? 'T' : 'N', tb ? 'T' : 'N');
                report(name, max_relative_error(dc.download(), c), 1e-4);
            }
            const int size = 4096;
            DeviceBuffer a(size_t(size) * size), b(size_t(size) * size), c(size_t(size) * size);
            TRAINDECK_CHECK(cudaMemset(a.data, 0, a.n * sizeof(float)));
            TRAINDECK_CHECK(cudaMemset(b.data, 0, b.n * sizeof(float)));
            for (const auto& [mode, label] :
                 {std::pair{CUBLAS_DEFAULT_MATH, "fp32"}, std::pair{CUBLAS_TF32_TENSOR_OP_MATH, "tf32"}}) {
                TRAINDECK_CHECK(cublasSetMathMode(handle, mode));
                cuda::gemm(handle, false, false, size, size, size, 1.0f, a.data, size, b.data, size, 0.0f, c.data,
                           size);
                TRAINDECK_CHECK(cudaDeviceSynchronize());
                const auto start = Clock::now();
                for (int i = 0; i < 10; ++i)
                    cuda::gemm(handle, false, false, size, size, size, 1.0f, a.data, size, b.data, size, 0.0f, c.data,
                               size);
                TRAINDECK_CHECK(cudaDeviceSynchronize());
                const double seconds = seconds_since(start) / 10;
                std::printf("cublas sgemm 4096^3 (%s): %.1f TFLOP/s\n", label,
                            2.0 * size * size * size / seconds / 1e12);
            }
        } catch (...) {
            cublasDestroy(handle);
            throw;
        }
        cublasDestroy(handle);
    });

    part("nccl all-reduce (1 rank)", [&] {
        cudaStream_t stream = nullptr;
        TRAINDECK_CHECK(cudaStreamCreate(&stream));
        cuda::NcclComm* comm = nullptr;
        try {
            comm = cuda::nccl_init(cuda::nccl_unique_id_hex(), 1, 0, 60.0, {});
            std::vector<float> ones(n, 1.0f);
            DeviceBuffer buffer(ones);
            cuda::nccl_all_reduce_sum(comm, buffer.data, n, stream, {});
            cuda::nccl_wait(comm, stream, "the check's all-reduce", {});
            report("nccl all-reduce (1 rank)", max_relative_error(buffer.download(), ones), 0.0);
        } catch (...) {
            cuda::nccl_destroy(comm);
            cudaStreamDestroy(stream);
            throw;
        }
        cuda::nccl_destroy(comm);
        TRAINDECK_CHECK(cudaStreamDestroy(stream));
    });

    // The GPU training path against the CPU engine: the Fashion-MNIST MLP's shape (784-256-128-10, batch 128, SGD),
    // then with GELU, with AdamW (weight decay on weights, not biases), then bf16 autocast (looser: bf16 keeps 8 bits
    // of mantissa), then convolutions.
    set_compute_threads(0);
    const OptimizerSpec sgd{.type = "sgd", .lr = 0.05f, .momentum = 0.9f};
    const Problem mlp = make_problem(kMlp, kFlat, 10, 128, 200, sgd);
    const Run mlp_cpu = train_cpu(mlp);
    Run mlp_fp32, mlp_bf16, fashion_cnn_cpu, fashion_cnn_gpu;
    part("MLP training fp32", [&] {
        mlp_fp32 = train_gpu(mlp, GpuOptions{false, 1, 0, {}});
        compare("MLP training fp32", mlp_fp32, mlp_cpu, 1e-3, 1e-4);
    });
    part("MLP training fp32 GELU", [&] {
        const std::vector<LayerSpec> gelu_mlp = {
            {.type = LayerType::linear, .out = 256}, {.type = LayerType::gelu}, {.type = LayerType::linear, .out = 128}, {.type = LayerType::gelu}};
        const Problem p = make_problem(gelu_mlp, kFlat, 10, 128, 50, sgd);
        compare("MLP training fp32 GELU", train_gpu(p, GpuOptions{false, 1, 0, {}}), train_cpu(p), 1e-3, 0);
    });
    part("MLP regression fp32", [&] {
        // One output a sample, squared error against a smooth function of the inputs (the GPU's loss kernel).
        const std::vector<LayerSpec> regression_mlp = {
            {.type = LayerType::linear, .out = 64}, {.type = LayerType::relu}, {.type = LayerType::linear, .out = 1}};
        Problem p = make_problem(regression_mlp, kFlat, 1, 128, 100, {.type = "sgd", .lr = 0.01f, .momentum = 0.9f});
        p.y.assign(p.y.size(), 0);
        p.targets.resize(p.y.size());
        for (size_t i = 0; i < p.targets.size(); ++i)
            p.targets[i] = p.x[i * kFlat.size()] - 0.5f * p.x[i * kFlat.size() + 1];
        compare("MLP regression fp32", train_gpu(p, GpuOptions{false, 1, 0, {}}), train_cpu(p), 1e-3, 1e-4);
    });
    part("MLP training fp32 AdamW", [&] {
        const Problem p =
            make_problem(kMlp, kFlat, 10, 128, 100, {.type = "adamw", .lr = 1e-3f, .weight_decay = 0.01f});
        compare("MLP training fp32 AdamW", train_gpu(p, GpuOptions{false, 1, 0, {}}), train_cpu(p), 1e-3, 1e-4);
    });
    part("MLP training bf16", [&] {
        mlp_bf16 = train_gpu(mlp, GpuOptions{true, 1, 0, {}});
        report("MLP training bf16: losses", max_relative_error(mlp_bf16.losses, mlp_cpu.losses), 5e-2);
    });
    // cuDNN convolutions (padding, stride, several channels) and max-pool against the engine's CPU path (oneDNN); then
    // the same under autocast, where the convolutions run TF32 (looser).
    const std::vector<LayerSpec> cnn = {{.type = LayerType::conv2d, .out = 8, .kernel = 3, .padding = 1},
                                        {.type = LayerType::relu},
                                        {.type = LayerType::maxpool, .stride = 2, .size = 2},
                                        {.type = LayerType::conv2d, .out = 16, .kernel = 3, .stride = 2},
                                        {.type = LayerType::gelu},
                                        {.type = LayerType::flatten},
                                        {.type = LayerType::linear, .out = 32},
                                        {.type = LayerType::relu}};
    const Problem cnn_problem = make_problem(cnn, SampleShape{12, 12, 3}, 10, 64, 50, sgd);
    const Run cnn_cpu = train_cpu(cnn_problem);
    part("CNN training fp32", [&] {
        compare("CNN training fp32", train_gpu(cnn_problem, GpuOptions{false, 1, 0, {}}), cnn_cpu, 1e-3, 1e-4);
    });
    part("CNN training bf16", [&] {
        const Run run = train_gpu(cnn_problem, GpuOptions{true, 1, 0, {}});
        report("CNN training bf16 (TF32 conv): losses", max_relative_error(run.losses, cnn_cpu.losses), 5e-2);
    });
    // The resnet preset's layers (batchnorm, residual adds, global average pooling) against the CPU engine. Batch
    // statistics amplify float rounding a little: looser than the CNN.
    part("ResNet training fp32", [&] {
        const auto spec = parse_job_spec(nlohmann::json{{"model", "resnet"}, {"width", 8}, {"stages", 2}});
        const Problem p = make_problem(spec->layers, SampleShape{16, 16, 3}, 10, 64, 30, sgd);
        compare("ResNet training fp32", train_gpu(p, GpuOptions{false, 1, 0, {}}), train_cpu(p), 1e-2, 1e-3);
    });
    part("CNN conv32-conv64-fc128 speed", [&] {
        const Problem p = make_problem({{.type = LayerType::conv2d, .out = 32, .kernel = 3},
                                        {.type = LayerType::relu},
                                        {.type = LayerType::maxpool, .stride = 2, .size = 2},
                                        {.type = LayerType::conv2d, .out = 64, .kernel = 3},
                                        {.type = LayerType::relu},
                                        {.type = LayerType::maxpool, .stride = 2, .size = 2},
                                        {.type = LayerType::flatten},
                                        {.type = LayerType::linear, .out = 128},
                                        {.type = LayerType::relu}},
                                       SampleShape{28, 28, 1}, 10, 128, 40, sgd);
        fashion_cnn_cpu = train_cpu(p);
        fashion_cnn_gpu = train_gpu(p, GpuOptions{false, 1, 0, {}});
        std::printf("CNN conv32-conv64-fc128, batch 128: CPU engine %.0f samples/s, GPU fp32 %.0f (%.1fx)\n",
                    fashion_cnn_cpu.samples_per_s, fashion_cnn_gpu.samples_per_s,
                    fashion_cnn_gpu.samples_per_s / fashion_cnn_cpu.samples_per_s);
    });
    std::printf(
        "MLP 784-256-128-10, batch 128: CPU engine %.0f samples/s, GPU fp32 %.0f (%.1fx), GPU bf16 %.0f (%.1fx)\n",
        mlp_cpu.samples_per_s, mlp_fp32.samples_per_s, mlp_fp32.samples_per_s / mlp_cpu.samples_per_s,
        mlp_bf16.samples_per_s, mlp_bf16.samples_per_s / mlp_cpu.samples_per_s);

    if (probe.devices >= 2) {
        set_compute_threads(0);
        two_rank_checks(train_cpu(two_rank_problem()));
    } else {
        std::printf("%-36s skipped: %d CUDA device visible, NCCL needs one per rank\n", "2 ranks", probe.devices);
    }
    std::printf("%s\n", failures ? "FAILED" : "all CUDA kernels and the GPU training path match their CPU twins");
    return failures ? 1 : 0;
}
