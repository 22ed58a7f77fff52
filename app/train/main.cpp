// traindeck-train: the built-in trainer. Reads a JSON job spec, trains, speaks the metrics protocol.
#include "devicecheck.h"
#include "export.h"
#include "gemm.h"
#include "gpumodel.h"
#include "jobspec.h"
#include "metricswriter.h"
#include "onednn.h"
#include "process.h"
#include "sweepcommand.h"
#include "trainer.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using traindeck::engine::kExitDone;
using traindeck::engine::kExitGpuFailed;
using traindeck::engine::kExitPreempted;
using traindeck::engine::TrainResult;

std::atomic<bool> g_stop{false};

void request_stop(int) { g_stop.store(true); }

void print_usage() {
    std::printf(
        "usage: traindeck-train SPEC.json [options]\n"
        "\n"
        "Trains the model a JSON job spec describes and reports metrics as JSON lines\n"
        "(to the fd in TRAINDECK_METRICS_FD, else stdout lines starting \"@traindeck \").\n"
        "\n"
        "options:\n"
        "  --checkpoint-dir DIR  where checkpoints go (default: $TRAINDECK_CHECKPOINT_DIR, else ./checkpoints)\n"
        "  --resume              continue from the newest intact checkpoint in that folder, if there is one\n"
        "  --threads N           compute threads (default: all cores)\n"
        "  --device cpu|cuda|auto  where to train (default: the spec's \"device\", else auto: CUDA when a GPU is\n"
        "                        present and built in)\n"
        "  --precision fp32|bf16 GPU gemm inputs (bf16 autocast keeps fp32 accumulation and master weights; default:\n"
        "                        the spec's \"precision\", else fp32)\n"
        "  data parallel: with WORLD_SIZE=N (the worker sets it for a job with N GPUs) this process is rank 0 and\n"
        "  starts ranks 1..N-1 itself, one per GPU, sharing an NCCL id (TRAINDECK_NCCL_ID); gradients are summed\n"
        "  with NCCL. A rank that exits or stops answering ends the others: rank 0 watches the ranks it started,\n"
        "  and every wait for the other ranks gives up after TRAINDECK_NCCL_TIMEOUT_S seconds (default 300)\n"
        "  --set KEY=VALUE       override a spec field; KEY may be dotted (optimizer.lr=0.01); VALUE is JSON or text\n"
        "  --hold-at STEP:FILE   after step STEP, report a \"held\" event and wait until FILE exists (pacing for\n"
        "                        tests; also TRAINDECK_HOLD_AT=STEP:FILE[,STEP:FILE...]); SIGTERM still stops it\n"
        "  --help                this text; --version: the version\n"
        "\n"
        "       traindeck-train sweep SPEC.json --worker URL [--token-file FILE] [--watch]   (see sweep --help)\n"
        "\n"
        "       traindeck-train export SPEC.json --checkpoint FILE|DIR --out DIR [export options]\n"
        "\n"
        "Exports the trained model: NAME.onnx (fp32), NAME.int8.onnx (QDQ int8, calibrated on training samples) and\n"
        "NAME.safetensors; prints a JSON report with the validation/test accuracy before and after quantisation.\n"
        "  --name NAME           file stem (default: model)\n"
        "  --no-int8, --no-onnx, --no-safetensors   skip a format\n"
        "  --latest              export the newest checkpoint even when early stopping kept a better one (best.tdck)\n"
        "  --calibration N       training samples for the int8 activation ranges (default 1000)\n"
        "  --max-drop PERCENT    warn when int8 loses more validation accuracy than this (default 1; a\n"
        "                        regression: R² × 100)\n"
        "  --threads N           compute threads\n"
        "  --provenance JSON     who made it (run, backend, dataset, code): kept in every file's metadata\n"
        "\n"
        "exit codes: 0 done, 2 bad arguments or spec, 3 bad data, 4 loss became NaN/inf,\n"
        "            5 checkpoint could not be written, 6 the GPU path failed (a CUDA/cuBLAS/cuDNN/NCCL call, a\n"
        "            data-parallel rank that died or timed out), 75 stopped by SIGTERM/SIGINT after a checkpoint\n");
}

bool apply_override(nlohmann::json& root, const std::string& assignment, std::string& error) {
    const size_t equals = assignment.find('=');
    if (equals == std::string::npos || equals == 0) {
        error = "--set expects KEY=VALUE, got \"" + assignment + "\"";
        return false;
    }
    const std::string key = assignment.substr(0, equals), text = assignment.substr(equals + 1);
    nlohmann::json value = nlohmann::json::parse(text, nullptr, false);
    if (value.is_discarded())
        value = text;
    nlohmann::json* node = &root;
    size_t start = 0;
    for (;;) {
        const size_t dot = key.find('.', start);
        const std::string part = key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        if (dot == std::string::npos) {
            (*node)[part] = value;
            return true;
        }
        if (!(*node)[part].is_object())
            (*node)[part] = nlohmann::json::object();
        node = &(*node)[part];
        start = dot + 1;
    }
}

nlohmann::json read_spec(const std::string& path, std::string& error) {
    std::FILE* file = std::fopen(path.c_str(), "rb");
    if (!file) {
        error = path + ": cannot open the job spec: " + std::strerror(errno);
        return {};
    }
    std::string text;
    char buffer[4096];
    for (size_t got; (got = std::fread(buffer, 1, sizeof(buffer), file)) > 0;)
        text.append(buffer, got);
    std::fclose(file);
    nlohmann::json root = nlohmann::json::parse(text, nullptr, false);
    if (root.is_discarded())
        error = path + ": not valid JSON";
    return root;
}

int run_export(int argc, char** argv) {
    using namespace traindeck::engine;
    std::string spec_path, checkpoint;
    ExportOptions options;
    int threads = 0;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "traindeck-train export: %s needs a value (see --help)\n", arg.c_str());
                std::exit(kExitUsage);
            }
            return argv[++i];
        };
        if (arg == "--checkpoint") checkpoint = value();
        else if (arg == "--out") options.out_dir = value();
        else if (arg == "--name") options.name = value();
        else if (arg == "--no-int8") options.int8 = false;
        else if (arg == "--no-onnx") options.onnx = false;
        else if (arg == "--no-safetensors") options.safetensors = false;
        else if (arg == "--latest")
            options.prefer_best = false;
        else if (arg == "--calibration") options.calibration_samples = std::atoi(value().c_str());
        else if (arg == "--max-drop") options.max_accuracy_drop = std::atof(value().c_str()) / 100.0;
        else if (arg == "--dump-eval") options.dump_dir = value();
        else if (arg == "--provenance") {
            options.provenance = nlohmann::json::parse(value(), nullptr, false);
            if (!options.provenance.is_object()) {
                std::fprintf(stderr, "traindeck-train export: --provenance takes a JSON object\n");
                return kExitUsage;
            }
        } else if (arg == "--threads")
            threads = std::atoi(value().c_str());
        else if (arg == "--help" || arg == "-h") {
            print_usage();
            return kExitDone;
        } else if (!arg.empty() && arg[0] != '-' && spec_path.empty()) spec_path = arg;
        else {
            std::fprintf(stderr, "traindeck-train export: unexpected argument %s (see --help)\n", arg.c_str());
            return kExitUsage;
        }
    }
    if (spec_path.empty() || checkpoint.empty() || options.out_dir.empty()) {
        std::fprintf(stderr, "traindeck-train export: needs SPEC.json, --checkpoint and --out (see --help)\n");
        return kExitUsage;
    }
    if (options.name.empty() || options.name.find('/') != std::string::npos) {
        std::fprintf(stderr, "traindeck-train export: --name must be a plain file stem\n");
        return kExitUsage;
    }
    std::string error;
    const nlohmann::json spec = read_spec(spec_path, error);
    if (!error.empty()) {
        std::fprintf(stderr, "traindeck-train export: %s\n", error.c_str());
        return kExitUsage;
    }
    set_compute_threads(threads);
    auto report = export_model(spec, checkpoint, options);
    if (!report) {
        std::fprintf(stderr, "traindeck-train export: %s\n", report.error().c_str());
        return kExitBadData;
    }
    std::printf("%s\n", report->to_json().dump().c_str());
    return kExitDone;
}

// --- data parallel: the rank processes rank 0 starts, and how their ends are noticed ---------------------------

struct RankProcess {
    int rank = 0;
    pid_t pid = -1;
    bool exited = false; // reaped; status is its wait status
    int status = 0;
};

std::string describe_exit(int status) {
    if (WIFSIGNALED(status))
        return std::string("was killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
               strsignal(WTERMSIG(status)) + ")";
    return "exited with code " + std::to_string(WEXITSTATUS(status));
}

bool exited_cleanly(int status) {
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// Reaps a rank that has ended, without waiting; true when it has.
bool reap(RankProcess& process) {
    if (!process.exited && ::waitpid(process.pid, &process.status, WNOHANG) == process.pid)
        process.exited = true;
    return process.exited;
}

// Starts ranks 1..world-1 as copies of this process (the same arguments), each told its rank, the NCCL id (already
// in this environment) and rank 0's pid; their metrics go nowhere (rank 0 reports for all), their stderr stays the
// job's. Everything a child needs is built before fork(): between fork and exec only async-signal-safe calls may
// run, since CUDA's and NCCL's threads may hold the allocator's lock at the moment of the fork.
bool start_ranks(int world, char** argv, std::vector<RankProcess>& ranks, std::string& error) {
    const int quiet = ::open("/dev/null", O_WRONLY);
    if (quiet < 0) {
        error = std::string("cannot open /dev/null for the other ranks' metrics: ") + std::strerror(errno);
        return false;
    }
    const std::string parent = std::to_string(::getpid());
    static const char exec_failed[] = "traindeck-train: a data-parallel rank could not start (execve of /proc/self/exe "
                                      "failed); rank 0 stops the others\n";
    bool started = true;
    for (int rank = 1; rank < world && started; ++rank) {
        // Erased first (every copy of a key), then set: the rank's own values, after everything it inherits.
        traindeck::Environment environment = traindeck::Environment::current();
        for (const char* key : {"LOCAL_RANK", "RANK", "TRAINDECK_METRICS_FD", "TRAINDECK_RANK0_PID"})
            environment.erase(key);
        environment.set("LOCAL_RANK", std::to_string(rank));
        environment.set("RANK", std::to_string(rank));
        environment.set("TRAINDECK_METRICS_FD", std::to_string(quiet));
        environment.set("TRAINDECK_RANK0_PID", parent);
        const traindeck::CStringArray envp(environment.entries());
        const pid_t child = ::fork();
        if (child == 0) {
            ::execve("/proc/self/exe", argv, envp.data());
            const ssize_t ignored = ::write(STDERR_FILENO, exec_failed, sizeof(exec_failed) - 1);
            (void)ignored;
            ::_exit(kExitGpuFailed);
        }
        if (child < 0) {
            error = "cannot start data-parallel rank " + std::to_string(rank) + " (fork: " + std::strerror(errno) + ")";
            started = false;
        } else {
            ranks.push_back({rank, child});
        }
    }
    ::close(quiet);
    return started;
}

// After train(): every rank rank 0 started is reaped. When rank 0 failed, the others would only wait for it in
// their next all-reduce until their timeout: after a short grace (to let them say why, if they failed first) they
// are killed. When rank 0 finished, they finish too; one that does not within the timeout is killed. A rank that
// failed while rank 0 finished makes the run fail.
TrainResult finish_ranks(std::vector<RankProcess>& ranks, TrainResult result, double timeout_seconds) {
    using Clock = std::chrono::steady_clock;
    const bool rank0_failed = result.exit_code != kExitDone && result.exit_code != kExitPreempted;
    const auto deadline = Clock::now() + std::chrono::duration<double>(rank0_failed ? 5.0 : timeout_seconds + 30.0);
    for (RankProcess& process : ranks) {
        while (!reap(process) && Clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        bool killed = false;
        if (!process.exited) {
            ::kill(process.pid, SIGKILL);
            ::waitpid(process.pid, &process.status, 0);
            process.exited = killed = true;
        }
        if (result.exit_code != kExitDone || exited_cleanly(process.status))
            continue;
        const std::string rank =
            "data-parallel rank " + std::to_string(process.rank) + " (pid " + std::to_string(process.pid) + ")";
        if (killed)
            result = {kExitGpuFailed, rank + " had not finished " +
                                          std::to_string(static_cast<long>(timeout_seconds) + 30) +
                                          " s after rank 0 did and was killed; its output above may say why"};
        else
            result = {WIFEXITED(process.status) ? WEXITSTATUS(process.status) : kExitGpuFailed,
                      rank + " " + describe_exit(process.status) +
                          " although rank 0 finished; its own message is above"};
    }
    return result;
}

// "…; training on CPU" is the probe's ending for a run that can fall back; a data-parallel run cannot.
std::string without_fallback(std::string message) {
    const std::string suffix = "; training on CPU";
    if (message.size() >= suffix.size() && message.compare(message.size() - suffix.size(), suffix.size(), suffix) == 0)
        message.resize(message.size() - suffix.size());
    return message;
}

// A whole positive number from the environment; `fallback` when unset; false when set to anything else.
bool positive_from_environment(const char* name, double fallback, double& value) {
    const char* text = std::getenv(name);
    value = fallback;
    if (!text || !*text)
        return true;
    char* end = nullptr;
    value = std::strtod(text, &end);
    return *end == '\0' && value > 0 && std::isfinite(value);
}

} // namespace

int main(int argc, char** argv) {
    using namespace traindeck::engine;
    if (argc > 1 && std::strcmp(argv[1], "export") == 0)
        return run_export(argc - 1, argv + 1);
    if (argc > 1 && std::strcmp(argv[1], "sweep") == 0)
        return traindeck::app::run_sweep(argc - 1, argv + 1);
    std::string spec_path, device, precision, checkpoint_dir; // empty device/precision: the spec's
    std::vector<std::string> overrides;
    TrainOptions options;
    int threads = 0;
    if (const char* dir = std::getenv("TRAINDECK_CHECKPOINT_DIR"); dir && *dir)
        checkpoint_dir = dir;
    if (const char* holds = std::getenv("TRAINDECK_HOLD_AT"); holds && *holds) {
        if (std::string error; !parse_holds(holds, options.holds, error)) {
            std::fprintf(stderr, "traindeck-train: TRAINDECK_HOLD_AT: %s\n", error.c_str());
            return kExitUsage;
        }
    }
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "traindeck-train: %s needs a value (see --help)\n", arg.c_str());
                std::exit(kExitUsage);
            }
            return argv[++i];
        };
        if (arg == "--help" || arg == "-h") {
            print_usage();
            return kExitDone;
        } else if (arg == "--version") {
            // The capture reads the whole BLAS line as the engine's maths: oneDNN's kernels run the convolutions.
            std::printf("traindeck-train %s\nBLAS: %s; %s\nGPU: %s\n", TRAINDECK_VERSION, blas_description(),
                        onednn::description().c_str(), TRAINDECK_CUDA_BUILD);
            return kExitDone;
        } else if (arg == "--checkpoint-dir") {
            checkpoint_dir = value();
        } else if (arg == "--resume") {
            options.resume = true;
        } else if (arg == "--threads") {
            threads = std::atoi(value().c_str());
        } else if (arg == "--device") {
            device = value();
        } else if (arg == "--precision") {
            precision = value();
            if (precision != "fp32" && precision != "bf16") {
                std::fprintf(stderr, "traindeck-train: --precision is fp32 or bf16, not \"%s\"\n", precision.c_str());
                return kExitUsage;
            }
        } else if (arg == "--set") {
            overrides.push_back(value());
        } else if (arg == "--hold-at") {
            if (std::string error; !parse_holds(value(), options.holds, error)) {
                std::fprintf(stderr, "traindeck-train: --hold-at: %s\n", error.c_str());
                return kExitUsage;
            }
        } else if (!arg.empty() && arg[0] == '-') {
            std::fprintf(stderr, "traindeck-train: unknown option %s (see --help)\n", arg.c_str());
            return kExitUsage;
        } else if (spec_path.empty()) {
            spec_path = arg;
        } else {
            std::fprintf(stderr, "traindeck-train: more than one spec given (%s and %s)\n", spec_path.c_str(), arg.c_str());
            return kExitUsage;
        }
    }
    if (spec_path.empty()) {
        print_usage();
        return kExitUsage;
    }
    if (!device.empty() && device != "auto" && device != "cpu" && device != "cuda") {
        std::fprintf(stderr, "traindeck-train: --device must be cpu, cuda or auto, not \"%s\"\n", device.c_str());
        return kExitUsage;
    }
    if (!checkpoint_dir.empty())
        options.checkpoint_dir = checkpoint_dir;

    // Read the spec as JSON first so that --set can change it before validation.
    nlohmann::json root;
    {
        std::FILE* file = std::fopen(spec_path.c_str(), "rb");
        if (!file) {
            std::fprintf(stderr, "traindeck-train: %s: cannot open the job spec: %s\n", spec_path.c_str(), std::strerror(errno));
            return kExitUsage;
        }
        std::string text;
        char buffer[4096];
        for (size_t got; (got = std::fread(buffer, 1, sizeof(buffer), file)) > 0;)
            text.append(buffer, got);
        std::fclose(file);
        try {
            root = nlohmann::json::parse(text);
        } catch (const nlohmann::json::parse_error& e) {
            std::fprintf(stderr, "traindeck-train: %s: not valid JSON (%s)\n", spec_path.c_str(), e.what());
            return kExitUsage;
        }
    }
    for (const auto& assignment : overrides) {
        std::string error;
        if (!root.is_object() || !apply_override(root, assignment, error)) {
            std::fprintf(stderr, "traindeck-train: %s\n", error.empty() ? "spec is not a JSON object" : error.c_str());
            return kExitUsage;
        }
    }
    auto spec = parse_job_spec(root);
    if (!spec) {
        std::fprintf(stderr, "traindeck-train: %s: %s\n", spec_path.c_str(), spec.error().c_str());
        return kExitUsage;
    }
    if (device.empty())
        device = spec->device;
    options.bf16 = (precision.empty() ? spec->precision : precision) == "bf16";

    MetricsWriter metrics;
    // Data parallel: ranks from WORLD_SIZE/LOCAL_RANK (the worker sets WORLD_SIZE=N for a job with N GPUs).
    double world_value = 1, nccl_timeout = 300;
    if (!positive_from_environment("WORLD_SIZE", 1, world_value) || world_value != std::floor(world_value)) {
        std::fprintf(stderr, "traindeck-train: WORLD_SIZE must be a whole number of ranks (1 or more), not \"%s\"\n",
                     std::getenv("WORLD_SIZE"));
        return kExitUsage;
    }
    if (!positive_from_environment("TRAINDECK_NCCL_TIMEOUT_S", 300, nccl_timeout)) {
        std::fprintf(stderr,
                     "traindeck-train: TRAINDECK_NCCL_TIMEOUT_S must be a number of seconds above 0, not \"%s\"\n",
                     std::getenv("TRAINDECK_NCCL_TIMEOUT_S"));
        return kExitUsage;
    }
    const int world = static_cast<int>(std::min(world_value, 4096.0));
    int rank = 0;
    if (const char* local_rank = std::getenv("LOCAL_RANK"); world > 1 && local_rank && *local_rank) {
        char* end = nullptr;
        const long value = std::strtol(local_rank, &end, 10);
        if (*end != '\0' || value < 0 || value >= world) {
            std::fprintf(stderr, "traindeck-train: LOCAL_RANK must be a rank from 0 to WORLD_SIZE-1 (%d), not \"%s\"\n",
                         world - 1, local_rank);
            return kExitUsage;
        }
        rank = static_cast<int>(value);
    }
    // With several ranks every line says whose it is; the others' stderr is the job's too.
    const std::string who = world > 1 && device != "cpu"
                                ? "traindeck-train (rank " + std::to_string(rank) + " of " + std::to_string(world) + ")"
                                : "traindeck-train";
    // A failure before training: one stderr line, an `error` record, the exit code.
    auto fail_early = [&](int code, const std::string& message) {
        metrics.write({{"type", "error"}, {"exit_code", code}, {"message", message}});
        std::fprintf(stderr, "%s: %s\n", who.c_str(), message.c_str());
        return code;
    };

    options.device = "cpu";
    CudaProbe probe;
    if (device != "cpu") {
        probe = probe_cuda();
        if (probe.available)
            options.device = device;
        // Said whenever it matters: a GPU was asked for, one is here, or the machine has one that CUDA cannot use.
        if (device == "cuda" || probe.available || probe.device_node || world > 1) {
            metrics.write({{"type", "event"}, {"event", "device"}, {"message", probe.message}});
            std::fprintf(stderr, "%s: %s\n", who.c_str(), probe.message.c_str());
        }
    }
    set_compute_threads(threads);

    std::vector<RankProcess> ranks;
    if (world > 1) {
        const std::string asked = "WORLD_SIZE=" + std::to_string(world) + " asks for data-parallel training on " +
                                  std::to_string(world) + " GPUs";
        if (device == "cpu") {
            // Asked for explicitly: one CPU process, said plainly (data parallel runs on GPUs only).
            const std::string message = asked + ", but --device cpu was given: this is one CPU process, WORLD_SIZE is "
                                                "ignored (unset it, or drop --device cpu to use the GPUs)";
            metrics.write({{"type", "event"}, {"event", "device"}, {"message", message}});
            std::fprintf(stderr, "%s: %s\n", who.c_str(), message.c_str());
        } else if (!probe.available) {
            return fail_early(kExitGpuFailed,
                              asked + ", but CUDA cannot be used here: " + without_fallback(probe.message) +
                                  "; fix the GPUs (nvidia-smi must list them) or run with WORLD_SIZE=1 to "
                                  "train on the CPU");
        } else if (probe.devices < world) {
            return fail_early(kExitUsage,
                              asked + ", but only " + std::to_string(probe.devices) +
                                  " CUDA device(s) are visible (CUDA_VISIBLE_DEVICES) and NCCL needs one per "
                                  "rank; ask for " +
                                  std::to_string(probe.devices) + " GPUs or make more visible");
        } else if (spec->batch_size < world) {
            return fail_early(kExitUsage, "batch_size " + std::to_string(spec->batch_size) +
                                              " is smaller than WORLD_SIZE " + std::to_string(world) +
                                              ": every rank needs at least one sample of each "
                                              "batch; raise batch_size to at least " +
                                              std::to_string(world) + " or use fewer GPUs");
        } else {
            options.world_size = world;
            options.rank = rank;
            const char* nccl_id = std::getenv("TRAINDECK_NCCL_ID");
            if (nccl_id && *nccl_id) {
                options.nccl_id = nccl_id;
            } else if (rank != 0) {
                return fail_early(kExitUsage,
                                  "LOCAL_RANK=" + std::to_string(rank) +
                                      " without TRAINDECK_NCCL_ID: the "
                                      "other ranks get the NCCL id from rank 0, which starts them; start only "
                                      "rank 0 (LOCAL_RANK=0)");
            } else {
                // Rank 0 makes the NCCL id and starts the other ranks as copies of itself.
                std::string error;
                if (!gpu_nccl_unique_id(options.nccl_id, error))
                    return fail_early(kExitGpuFailed, asked + ", but NCCL cannot make its id: " + error);
                ::setenv("TRAINDECK_NCCL_ID", options.nccl_id.c_str(), 1);
                if (!start_ranks(world, argv, ranks, error)) {
                    for (RankProcess& process : ranks)
                        ::kill(process.pid, SIGKILL);
                    finish_ranks(ranks, {kExitGpuFailed, error}, nccl_timeout);
                    return fail_early(kExitGpuFailed, error);
                }
            }
            // Rank 0 notices a rank it started that ended badly; a rank rank 0 started notices that rank 0 is gone
            // (it is then someone else's child). Either ends the wait at once instead of after the timeout.
            if (!ranks.empty()) {
                set_data_parallel_watch(nccl_timeout, [&ranks]() -> std::string {
                    for (RankProcess& process : ranks)
                        if (reap(process) && !exited_cleanly(process.status))
                            return "data-parallel rank " + std::to_string(process.rank) + " (pid " +
                                   std::to_string(process.pid) + ") " + describe_exit(process.status);
                    return {};
                });
            } else if (const char* rank0 = std::getenv("TRAINDECK_RANK0_PID"); rank0 && *rank0) {
                const pid_t rank0_pid = static_cast<pid_t>(std::atol(rank0));
                set_data_parallel_watch(nccl_timeout, [rank0_pid]() -> std::string {
                    if (::getppid() == rank0_pid)
                        return {};
                    return "rank 0 (pid " + std::to_string(rank0_pid) + "), which started this rank, has exited";
                });
            } else {
                set_data_parallel_watch(nccl_timeout, {});
            }
        }
    }

    struct sigaction action {};
    action.sa_handler = request_stop;
    sigemptyset(&action.sa_mask);
    sigaction(SIGTERM, &action, nullptr);
    sigaction(SIGINT, &action, nullptr);
    options.stop_requested = &g_stop;

    // The GPU path throws GpuError for a failed CUDA/cuBLAS/cuDNN/NCCL call (on this thread, the only one that
    // drives it); the CPU path throws only when oneDNN fails or memory runs out (the engine's threads hand their
    // exceptions to this one); every other failure comes back as a TrainResult value.
    TrainResult result;
    try {
        result = train(*spec, options, metrics);
    } catch (const GpuError& error) {
        result = {kExitGpuFailed, std::string("GPU: ") + error.what()};
        metrics.write({{"type", "error"}, {"exit_code", kExitGpuFailed}, {"message", result.message}});
    } catch (const std::exception& error) {
        // oneDNN's errors (dnnl::error) and running out of memory on the CPU path.
        result = {kExitCpuFailed, std::string("CPU: ") + error.what()};
        metrics.write({{"type", "error"}, {"exit_code", kExitCpuFailed}, {"message", result.message}});
    }
    if (!ranks.empty()) {
        const int before = result.exit_code;
        result = finish_ranks(ranks, result, nccl_timeout);
        if (result.exit_code != before)
            metrics.write({{"type", "error"}, {"exit_code", result.exit_code}, {"message", result.message}});
    }
    if (result.exit_code != kExitDone)
        std::fprintf(stderr, "%s: %s\n", who.c_str(), result.message.c_str());
    return result.exit_code;
}
