// Benchmark (issue 19): what capturing a run's code costs, on a 1,000-file git repository with uncommitted changes.
//   1. capture_code (git status, ls-files, diff, the snapshot into a content store; unchanged files neither read nor
//      stored again) against its peer, `git status` + `git diff` run by hand on the same tree, alternating, over
//      --rounds rounds: the median of each and their ratio;
//   2. what it adds to a job's start on a real worker: submit to the first metric record of a tiny job in that
//      tree, with capture on and off, alternating; the difference of the medians. Target: < 200 ms.
// Also printed: the first (cold) capture, which stores every file, and a capture after one file changed.
//
//   capture [--files 1000] [--rounds 9] [--dir /tmp]
#include "capture.h"
#include "workerprocess.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

using namespace traindeck;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values.empty() ? 0 : values[values.size() / 2];
}

bool shell(const std::string& command) { return std::system(command.c_str()) == 0; }

void write(const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << text;
}

// A project as people have them: packages of Python modules of a few KB, configs, a few larger files.
void make_repository(const std::string& root, int files) {
    std::mt19937 rng(19);
    for (int i = 0; i < files; ++i) {
        const int size = i % 50 == 0 ? 40000 + static_cast<int>(rng() % 40000) : 1000 + static_cast<int>(rng() % 6000);
        std::string text;
        while (static_cast<int>(text.size()) < size)
            text +=
                "def f" + std::to_string(rng() % 100000) + "(x):\n    return x * " + std::to_string(rng() % 97) + "\n";
        write(fs::path(root) / ("pkg" + std::to_string(i % 20)) / ("module" + std::to_string(i) + ".py"), text);
    }
    write(fs::path(root) / ".gitignore", "data/\n*.ckpt\n");
    shell("cd '" + root +
          "' && git init -q -b main . && git config user.email b@example.com && git config user.name bench && "
          "git add -A && git commit -qm base");
    // Mid-experiment: ten files edited, five new ones, and data the .gitignore keeps out.
    for (int i = 0; i < 10; ++i)
        std::ofstream(fs::path(root) / ("pkg" + std::to_string(i % 20)) / ("module" + std::to_string(i) + ".py"),
                      std::ios::app)
            << "# tuned " << i << "\n";
    for (int i = 0; i < 5; ++i)
        write(fs::path(root) / "experiments" / ("try" + std::to_string(i) + ".py"),
              "LR = 0.0" + std::to_string(i + 1) + "\n");
    write(fs::path(root) / "data" / "big.bin", std::string(8 << 20, 'd'));
}

double peer_seconds(const std::string& root) {
    const double start = now();
    for (const char* command : {"status", "diff"}) {
        SpawnOptions git;
        git.argv = {"git", "-C", root, command};
        git.search_path = true;
        if (!run_program(git).ok()) {
            std::fprintf(stderr, "capture: git %s failed\n", command);
            std::exit(2);
        }
    }
    return now() - start;
}

// From the submit to the job's first metric record, through a real worker.
double start_seconds(test::WorkerProcess& worker, const std::string& root, bool capture) {
    const json request = {{"argv", {"/bin/sh", "-c", "echo '{\"type\":\"metric\",\"step\":1,\"loss\":1}' >&3"}},
                          {"cwd", root},
                          {"capture", capture}};
    const double start = now();
    const int64_t id = worker.submit(request);
    if (id <= 0) {
        std::fprintf(stderr, "capture: submit failed: %s\n", worker.last_error.c_str());
        std::exit(2);
    }
    for (int64_t after = 0;;) {
        const auto reply =
            worker.client()
                .get("/v1/jobs/" + std::to_string(id) + "/events?after=" + std::to_string(after) + "&wait_ms=5000",
                     10000)
                .json();
        if (!reply.is_object() || !reply.contains("events")) {
            std::fprintf(stderr, "capture: the worker did not answer\n");
            std::exit(2);
        }
        for (const json& event : reply["events"])
            if (event["type"] == "record")
                return now() - start;
        after = reply.value("next", after);
        if (now() - start > 60) {
            std::fprintf(stderr, "capture: job %lld sent no metric within 60 s\n", static_cast<long long>(id));
            std::exit(2);
        }
    }
}

} // namespace

int main(int argc, char** argv) {
    int files = 1000, rounds = 9;
    std::string base = "/tmp";
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string arg = argv[i];
        if (arg == "--files")
            files = std::atoi(argv[i + 1]);
        else if (arg == "--rounds")
            rounds = std::atoi(argv[i + 1]);
        else if (arg == "--dir")
            base = argv[i + 1];
    }
    std::string pattern = base + "/traindeck-capture-bench-XXXXXX";
    const std::string dir = ::mkdtemp(pattern.data());
    const std::string root = dir + "/repo";
    make_repository(root, files);
    dataset::ContentStore store;
    std::string error;
    if (!store.open(dir + "/store", error)) {
        std::fprintf(stderr, "capture: %s\n", error.c_str());
        return 2;
    }

    double start = now();
    const json cold = worker::capture_code(root, store, {});
    const double cold_seconds = now() - start;
    std::printf("capture: %d files; first capture %.0f ms (stored %lld of %lld bytes, %lld files)\n", files,
                cold_seconds * 1000, static_cast<long long>(cold["stored_bytes"].get<int64_t>()),
                static_cast<long long>(cold["bytes"].get<int64_t>()),
                static_cast<long long>(cold["files"].get<int64_t>()));
    if (cold["files"].get<int64_t>() != files + 6 || !cold["problems"].empty()) {
        std::fprintf(stderr, "capture: the snapshot is not the tree's: %s\n", cold.dump().substr(0, 400).c_str());
        return 1;
    }
    std::vector<double> ours, peer;
    for (int round = 0; round < rounds; ++round) {
        const bool ours_first = round % 2 == 0;
        for (int side = 0; side < 2; ++side) {
            if ((side == 0) == ours_first) {
                start = now();
                const json again = worker::capture_code(root, store, {});
                ours.push_back(now() - start);
                if (again["snapshot"] != cold["snapshot"] || again["stored_bytes"] != 0) {
                    std::fprintf(stderr, "capture: an unchanged tree gave another snapshot or stored bytes\n");
                    return 1;
                }
            } else {
                peer.push_back(peer_seconds(root));
            }
        }
    }
    std::ofstream(fs::path(root) / "pkg3" / "module3.py", std::ios::app) << "# one more change\n";
    start = now();
    const json changed = worker::capture_code(root, store, {});
    const double changed_seconds = now() - start;

    test::WorkerProcess process;
    std::vector<double> with, without;
    start_seconds(process, root, true); // the worker's first job warms its paths
    for (int round = 0; round < rounds; ++round) {
        if (round % 2 == 0) {
            with.push_back(start_seconds(process, root, true));
            without.push_back(start_seconds(process, root, false));
        } else {
            without.push_back(start_seconds(process, root, false));
            with.push_back(start_seconds(process, root, true));
        }
    }
    const double added = median(with) - median(without);
    std::printf(
        "capture: unchanged tree: capture_code median %.1f ms, git status + git diff median %.1f ms, ratio %.2f "
        "(%d rounds, alternating)\n",
        median(ours) * 1000, median(peer) * 1000, median(ours) / median(peer), rounds);
    std::printf("capture: one file changed: %.1f ms, %lld bytes stored\n", changed_seconds * 1000,
                static_cast<long long>(changed["stored_bytes"].get<int64_t>()));
    std::printf(
        "capture: job start (submit to first metric) median %.1f ms with capture, %.1f ms without: adds %.1f ms "
        "(target < 200 ms)\n",
        median(with) * 1000, median(without) * 1000, added * 1000);
    fs::remove_all(dir);
    if (added >= 0.2 || median(ours) >= 0.2) {
        std::printf("capture: TARGET MISSED\n");
        return 1;
    }
    std::printf("capture: target met\n");
    return 0;
}
