// Benchmark: traindeck-train against PyTorch (Debian python3-torch) on the same models, data and
// recipe, side by side in one run. Prints the median samples/s of each, their ratio, test accuracy
// after the same number of epochs, and the engine's achieved GFLOP/s against a plain OpenBLAS sgemm.
//
//   engine_vs_pytorch [--threads 2] [--rounds 3] [--mlp-epochs 5] [--cnn-epochs 1]
//
// Each round trains every side once, the sides alternating; a model's verdict is on the median of its rounds'
// ratios (these machines are noisy: PyTorch's speed swings by a third between runs). The CNN also runs with
// TRAINDECK_ONEDNN=0, the engine's own im2col + gemm convolutions from before oneDNN, as a before/after in the same
// run. The engine's profile gives each layer type's GFLOP/s against the sgemm ceiling.
//
// Targets (issue 15): MLP >= 4x PyTorch and >= 75 % of the ceiling; CNN >= 2.5x and >= 60 %; both at equal test
// accuracy (MLP >= 88 % after 5 epochs). Exit 1 when one is missed, 2 when a side cannot run.
//
// When OPENBLAS_CORETYPE is set (these machines pin OpenBLAS to its Haswell kernels for old numpy builds), the
// whole comparison runs a second time without it and OPENBLAS_L2_SIZE, as a user of this CPU normally runs:
// both sides always share one environment, and the table says which kernels it used.
//
// Medians within a run, not single times: MLP over its epochs, CNN over 10-step windows.
#include "benchsupport.h"

#include <cblas.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

using nlohmann::json;
using traindeck::bench::median;
using traindeck::bench::run_json_lines;

namespace {

double sgemm_gflops(int threads) {
    openblas_set_num_threads(threads);
    const int n = 1024;
    const size_t elements = static_cast<size_t>(n) * n;
    std::vector<float> a(elements, 0.5f), b(elements, 0.25f), c(elements);
    std::vector<double> rates;
    for (int rep = 0; rep < 9; ++rep) {
        const auto start = std::chrono::steady_clock::now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (rep > 0) // the first call pays for thread start-up
            rates.push_back(2.0 * n * n * n / seconds / 1e9);
    }
    return median(rates);
}

struct Side {
    double samples_per_s = 0.0; // median over epochs (MLP) or windows (CNN)
    double test_accuracy = -1.0; // -1: the run never said
    double flops_per_sample = 0.0;
    json layers = json::array();       // traindeck: the trainer's per-layer profile
    json convolutions = json::array(); // traindeck: where each convolution ran
};

Side run_traindeck(const std::string& binary, const std::string& spec_path, const std::string& model, int epochs,
                   int threads, const std::string& work_dir, bool onednn) {
    const std::string checkpoints = work_dir + "/ck-" + model + (onednn ? "" : "-im2col");
    std::filesystem::remove_all(checkpoints); // every round trains from the start
    const std::string command = std::string(onednn ? "env -u TRAINDECK_ONEDNN " : "TRAINDECK_ONEDNN=0 ") + binary +
                                " " + spec_path + " --threads " + std::to_string(threads) + " --checkpoint-dir " +
                                checkpoints + " --set epochs=" + std::to_string(epochs) + " --set log_every=10 2>&1";
    Side side;
    std::vector<double> epoch_rates, window_rates;
    for (const json& r : run_json_lines(command, "@traindeck ")) {
        const std::string type = r.value("type", "");
        if (type == "epoch")
            epoch_rates.push_back(r["samples_per_s"].get<double>());
        else if (type == "metric" && r["step"].get<long>() % 10 == 0)
            window_rates.push_back(r["samples_per_s"].get<double>());
        else if (type == "eval" && r["split"] == "test")
            side.test_accuracy = r["accuracy"].get<double>();
        else if ((type == "status" && r["state"] == "running") || (type == "event" && r.value("event", "") == "device"))
            side.convolutions = r.value("convolutions", side.convolutions);
        else if (type == "status" && r["state"] == "finished")
            side.layers = r.value("layers", json::array());
    }
    // Forward and backward: a layer with weights computes twice its forward's FLOPs backward (the input's and the
    // weights' gradients), the first layer once (no input gradient).
    for (const json& layer : side.layers)
        side.flops_per_sample +=
            layer["forward_flops_per_sample"].get<double>() * (layer["input_gradient"].get<bool>() ? 3.0 : 2.0);
    // Each side must have run where it says: oneDNN's convolutions, or the engine's own.
    if (model == "cnn" && side.convolutions.empty()) {
        std::fprintf(stderr, "cnn: the run did not say where its convolutions ran\n");
        std::exit(2);
    }
    for (const json& where : side.convolutions)
        if (where.get<std::string>().rfind(onednn ? "oneDNN" : "im2col", 0) != 0) {
            std::fprintf(stderr, "%s: the %s side's convolutions ran in %s\n", model.c_str(),
                         onednn ? "oneDNN" : "im2col", side.convolutions.dump().c_str());
            std::exit(2);
        }
    side.samples_per_s = epochs > 1 ? median(epoch_rates) : median(window_rates);
    return side;
}

Side run_pytorch(const std::string& script, const std::string& model, int epochs, int threads) {
    const std::string command = "OPENBLAS_NUM_THREADS=" + std::to_string(threads) + " /usr/bin/python3 " + script +
                                " --model " + model + " --epochs " + std::to_string(epochs) + " --threads " +
                                std::to_string(threads);
    Side side;
    std::vector<double> epoch_rates, window_rates;
    for (const json& r : run_json_lines(command, "")) {
        const std::string type = r.value("type", "");
        if (type == "epoch")
            epoch_rates.push_back(r["samples_per_s"].get<double>());
        else if (type == "window")
            window_rates.push_back(r["samples_per_s"].get<double>());
        else if (type == "result")
            side.test_accuracy = r["test_accuracy"].get<double>();
    }
    side.samples_per_s = epochs > 1 ? median(epoch_rates) : median(window_rates);
    return side;
}

// Each layer type's time and GFLOP/s over a run's training steps, from the engine's profile: linear and conv2d
// layers compute 2x their forward's multiply-adds backward (input and weight gradients; the first layer only the
// weights'), other layers only move data (their time is shown, with no GFLOP/s).
void print_layer_profile(const json& layers, double peak) {
    struct Total {
        double forward_s = 0, backward_s = 0, forward_flops = 0, backward_flops = 0;
    };
    std::map<std::string, Total> by_type;
    double all_seconds = 0;
    for (const json& l : layers) {
        Total& t = by_type[l["type"].get<std::string>()];
        const double flops = l["forward_flops_per_sample"].get<double>() * l["samples"].get<double>();
        t.forward_s += l["forward_seconds"].get<double>();
        t.backward_s += l["backward_seconds"].get<double>();
        t.forward_flops += flops;
        t.backward_flops += flops * (l["input_gradient"].get<bool>() ? 2.0 : 1.0);
        all_seconds += l["forward_seconds"].get<double>() + l["backward_seconds"].get<double>();
    }
    std::printf("      %-8s %8s %8s %7s %12s %12s %12s\n", "layer", "fwd s", "bwd s", "share", "fwd GFLOP/s",
                "bwd GFLOP/s", "of ceiling");
    for (const auto& [type, t] : by_type) {
        const double seconds = t.forward_s + t.backward_s;
        if (t.forward_flops > 0 && t.forward_s > 0 && t.backward_s > 0) {
            const double rate = (t.forward_flops + t.backward_flops) / seconds / 1e9;
            std::printf("      %-8s %8.3f %8.3f %6.1f%% %12.1f %12.1f %11.0f%%\n", type.c_str(), t.forward_s,
                        t.backward_s, 100 * seconds / all_seconds, t.forward_flops / t.forward_s / 1e9,
                        t.backward_flops / t.backward_s / 1e9, 100 * rate / peak);
        } else {
            std::printf("      %-8s %8.3f %8.3f %6.1f%% %12s %12s %12s\n", type.c_str(), t.forward_s, t.backward_s,
                        100 * seconds / all_seconds, "-", "-", "-");
        }
    }
}

} // namespace

int main(int argc, char** argv) {
    int threads = 2, rounds = 3, mlp_epochs = 5, cnn_epochs = 1;
    bool second_pass = false;
    for (int i = 1; i < argc; ++i)
        second_pass |= std::string(argv[i]) == "--second-pass";
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string arg = argv[i];
        const int value = std::atoi(argv[i + 1]);
        if (arg == "--threads")
            threads = value;
        else if (arg == "--rounds")
            rounds = std::max(1, value);
        else if (arg == "--mlp-epochs")
            mlp_epochs = value;
        else if (arg == "--cnn-epochs")
            cnn_epochs = value;
    }
    const std::string work_dir = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/traindeck-bench";
    std::filesystem::remove_all(work_dir);
    std::filesystem::create_directories(work_dir);

    std::printf("engine_vs_pytorch: %d threads each, %d rounds; OpenBLAS %s\n", threads, rounds, openblas_get_config());
    const double peak = sgemm_gflops(threads);
    std::printf("plain OpenBLAS sgemm 1024^3: %.1f GFLOP/s (median of 8): the ceiling\n\n", peak);

    bool all_met = true;
    struct Case {
        const char* model;
        int epochs;
        double ratio_target, ceiling_target;
    };
    for (const Case c : {Case{"mlp", mlp_epochs, 4.0, 0.75}, Case{"cnn", cnn_epochs, 2.5, 0.60}}) {
        const bool cnn = std::string(c.model) == "cnn";
        const std::string spec = std::string(TRAINDECK_SOURCE_DIR) + "/resources/examples/fashion-" + c.model + ".json";
        const std::string peer = std::string(TRAINDECK_SOURCE_DIR) + "/tests/bench/pytorch_peer.py";
        std::printf("%s, %d epoch(s):\n", c.model, c.epochs);
        std::printf("  %5s %16s %16s %7s %9s %9s %14s", "round", "traindeck smp/s", "pytorch smp/s", "ratio", "td acc",
                    "torch acc", "td GFLOP/s");
        if (cnn)
            std::printf(" %16s %9s", "im2col smp/s", "speed-up");
        std::printf("\n");
        std::vector<double> ratios, gflops, speedups;
        bool accuracy_ok = true;
        Side last;
        for (int round = 1; round <= rounds; ++round) {
            // Alternate which side goes first, so neither always meets the machine in the same state.
            Side td, torch, before;
            auto ours = [&] {
                td = run_traindeck(TRAINDECK_TRAIN_BINARY, spec, c.model, c.epochs, threads, work_dir, true);
            };
            auto theirs = [&] { torch = run_pytorch(peer, c.model, c.epochs, threads); };
            if (round % 2) {
                ours();
                theirs();
            } else {
                theirs();
                ours();
            }
            if (cnn)
                before = run_traindeck(TRAINDECK_TRAIN_BINARY, spec, c.model, c.epochs, threads, work_dir, false);
            if (td.samples_per_s <= 0 || torch.samples_per_s <= 0 || td.test_accuracy < 0 || torch.test_accuracy < 0 ||
                (cnn && before.samples_per_s <= 0)) {
                std::fprintf(
                    stderr,
                    "%s: a side reported no throughput or accuracy (traindeck %.0f, %.4f; pytorch %.0f, %.4f)\n",
                    c.model, td.samples_per_s, td.test_accuracy, torch.samples_per_s, torch.test_accuracy);
                return 2;
            }
            const double ratio = td.samples_per_s / torch.samples_per_s;
            const double rate = td.samples_per_s * td.flops_per_sample / 1e9;
            ratios.push_back(ratio);
            gflops.push_back(rate);
            accuracy_ok = accuracy_ok && td.test_accuracy >= torch.test_accuracy - 0.01 &&
                          (cnn || c.epochs < 5 || td.test_accuracy >= 0.88);
            std::printf("  %5d %16.0f %16.0f %6.2fx %8.2f%% %8.2f%% %7.1f (%2.0f%%)", round, td.samples_per_s,
                        torch.samples_per_s, ratio, 100 * td.test_accuracy, 100 * torch.test_accuracy, rate,
                        100 * rate / peak);
            if (cnn) {
                speedups.push_back(td.samples_per_s / before.samples_per_s);
                std::printf(" %16.0f %8.2fx", before.samples_per_s, speedups.back());
            }
            std::printf("\n");
            std::fflush(stdout);
            last = td;
        }
        const double ratio = median(ratios), share = median(gflops) / peak;
        const bool met = ratio >= c.ratio_target && share >= c.ceiling_target && accuracy_ok;
        all_met = all_met && met;
        std::printf("  median ratio %.2fx (target >= %.1fx), %.0f%% of the sgemm ceiling (target >= %.0f%%), accuracy "
                    "%s -> %s\n",
                    ratio, c.ratio_target, 100 * share, 100 * c.ceiling_target, accuracy_ok ? "equal" : "NOT equal",
                    met ? "met" : "MISSED");
        if (cnn)
            std::printf("  oneDNN convolutions against the engine's own im2col ones: median %.2fx the samples/s\n",
                        median(speedups));
        if (!last.convolutions.empty())
            std::printf("  convolutions: %s\n", last.convolutions.dump().c_str());
        std::printf("  traindeck's layers (last round):\n");
        print_layer_profile(last.layers, peak);
        std::printf("\n");
    }
    std::printf("GFLOP/s counts each weighted layer's forward FLOPs 3x (forward, input and weight gradients), the "
                "first layer's 2x (it has no input gradient).\n");
    if (!second_pass && std::getenv("OPENBLAS_CORETYPE")) {
        std::printf("\n--- again without OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE (OpenBLAS picks its kernels for this CPU) ---\n");
        std::fflush(stdout);
        std::string command = "env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /proc/" + std::to_string(::getpid()) + "/exe";
        for (int i = 1; i < argc; ++i)
            command += std::string(" ") + argv[i];
        command += " --second-pass"; // last, so the option pairs before it still parse
        const int status = std::system(command.c_str());
        if (WIFEXITED(status) && WEXITSTATUS(status) == 2)
            return 2; // could not run, not a missed target
        all_met = all_met && status == 0;
    }
    return all_met ? 0 : 1;
}
