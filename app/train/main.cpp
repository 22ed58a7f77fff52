// traindeck-train: the built-in trainer. Reads a JSON job spec, trains, speaks the metrics protocol.
#include "devicecheck.h"
#include "export.h"
#include "gemm.h"
#include "gpumodel.h"
#include "jobspec.h"
#include "metricswriter.h"
#include "trainer.h"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

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
        "  --device cpu|cuda|auto  where to train (default auto: CUDA when a GPU is present and built in)\n"
        "  --precision fp32|bf16 GPU gemm inputs (bf16 autocast keeps fp32 accumulation and master weights)\n"
        "  data parallel: with WORLD_SIZE=N (the worker sets it for a job with N GPUs) this process is rank 0 and\n"
        "  starts ranks 1..N-1 itself, one per GPU, sharing an NCCL id (TRAINDECK_NCCL_ID); gradients are summed\n"
        "  --set KEY=VALUE       override a spec field; KEY may be dotted (optimizer.lr=0.01); VALUE is JSON or text\n"
        "  --hold-at STEP:FILE   after step STEP, report a \"held\" event and wait until FILE exists (pacing for\n"
        "                        tests; also TRAINDECK_HOLD_AT=STEP:FILE[,STEP:FILE...]); SIGTERM still stops it\n"
        "  --help                this text\n"
        "\n"
        "       traindeck-train export SPEC.json --checkpoint FILE|DIR --out DIR [export options]\n"
        "\n"
        "Exports the trained model: NAME.onnx (fp32), NAME.int8.onnx (QDQ int8, calibrated on training samples) and\n"
        "NAME.safetensors; prints a JSON report with the validation/test accuracy before and after quantisation.\n"
        "  --name NAME           file stem (default: model)\n"
        "  --no-int8, --no-onnx, --no-safetensors   skip a format\n"
        "  --calibration N       training samples for the int8 activation ranges (default 1000)\n"
        "  --max-drop PERCENT    warn when int8 loses more validation accuracy than this (default 1)\n"
        "  --threads N           compute threads\n"
        "\n"
        "exit codes: 0 done, 2 bad arguments or spec, 3 bad data, 4 loss became NaN/inf,\n"
        "            5 checkpoint could not be written, 75 stopped by SIGTERM/SIGINT after a checkpoint\n");
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
        else if (arg == "--calibration") options.calibration_samples = std::atoi(value().c_str());
        else if (arg == "--max-drop") options.max_accuracy_drop = std::atof(value().c_str()) / 100.0;
        else if (arg == "--dump-eval") options.dump_dir = value();
        else if (arg == "--threads") threads = std::atoi(value().c_str());
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

} // namespace

int main(int argc, char** argv) {
    using namespace traindeck::engine;
    if (argc > 1 && std::strcmp(argv[1], "export") == 0)
        return run_export(argc - 1, argv + 1);
    std::string spec_path, device = "auto", checkpoint_dir;
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
        } else if (arg == "--checkpoint-dir") {
            checkpoint_dir = value();
        } else if (arg == "--resume") {
            options.resume = true;
        } else if (arg == "--threads") {
            threads = std::atoi(value().c_str());
        } else if (arg == "--device") {
            device = value();
        } else if (arg == "--precision") {
            const std::string precision = value();
            if (precision != "fp32" && precision != "bf16") {
                std::fprintf(stderr, "traindeck-train: --precision is fp32 or bf16, not \"%s\"\n", precision.c_str());
                return kExitUsage;
            }
            options.bf16 = precision == "bf16";
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
    if (device != "auto" && device != "cpu" && device != "cuda") {
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

    MetricsWriter metrics;
    options.device = "cpu";
    if (device != "cpu") {
        const CudaProbe probe = probe_cuda();
        if (probe.available)
            options.device = device;
        if (device == "cuda" || probe.available)
            metrics.write({{"type", "event"}, {"event", "device"}, {"message", probe.message}});
        if (device == "cuda" || probe.available)
            std::fprintf(stderr, "traindeck-train: %s\n", probe.message.c_str());
    }
    set_compute_threads(threads);

    // Data parallel: ranks from WORLD_SIZE/LOCAL_RANK. Rank 0 (no TRAINDECK_NCCL_ID yet) makes the NCCL id and
    // starts the other ranks as copies of itself; their metrics go nowhere (rank 0 reports for all).
    std::vector<pid_t> ranks;
    const int world = std::max(1, std::atoi(std::getenv("WORLD_SIZE") ? std::getenv("WORLD_SIZE") : "1"));
    if (world > 1 && options.device != "cpu") {
        const char* local_rank = std::getenv("LOCAL_RANK");
        const char* nccl_id = std::getenv("TRAINDECK_NCCL_ID");
        options.world_size = world;
        options.rank = local_rank ? std::atoi(local_rank) : 0;
        if (nccl_id && *nccl_id) {
            options.nccl_id = nccl_id;
        } else if (options.rank == 0) {
            options.nccl_id = gpu_nccl_unique_id();
            if (options.nccl_id.empty()) {
                std::fprintf(stderr, "traindeck-train: WORLD_SIZE=%d needs NCCL on a GPU, which this machine or build lacks\n", world);
                return kExitUsage;
            }
            ::setenv("TRAINDECK_NCCL_ID", options.nccl_id.c_str(), 1);
            for (int rank = 1; rank < world; ++rank) {
                const pid_t child = ::fork();
                if (child == 0) {
                    ::setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
                    ::setenv("RANK", std::to_string(rank).c_str(), 1);
                    const int quiet = ::open("/dev/null", O_WRONLY);
                    ::setenv("TRAINDECK_METRICS_FD", std::to_string(quiet).c_str(), 1);
                    ::execv("/proc/self/exe", argv);
                    ::_exit(kExitUsage);
                }
                ranks.push_back(child);
            }
        }
    }

    struct sigaction action {};
    action.sa_handler = request_stop;
    sigemptyset(&action.sa_mask);
    sigaction(SIGTERM, &action, nullptr);
    sigaction(SIGINT, &action, nullptr);
    options.stop_requested = &g_stop;

    TrainResult result = train(*spec, options, metrics);
    for (pid_t rank : ranks) {
        int status = 0;
        ::waitpid(rank, &status, 0);
        if (result.exit_code == kExitDone && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
            result = {WIFEXITED(status) ? WEXITSTATUS(status) : kExitIoError, "a data-parallel rank failed; see its output"};
    }
    if (result.exit_code != kExitDone)
        std::fprintf(stderr, "traindeck-train: %s\n", result.message.c_str());
    return result.exit_code;
}
