// Benchmark: dataset registration and upload against the plain tools, in one run.
//   1. hash a folder of mixed files (default 2 GB): TrainDeck's manifest scan vs `sha256sum` over the same files
//      (target: ≥ 0.9× sha256sum's MB/s);
//   2. upload it to a loopback traindeck-worker (chunks, hash checks, build and verification of the version) vs
//      one `curl` process PUTting the same files to a plain HTTP sink that stores them (target: ≥ 0.8× its MB/s);
//   3. change 1 % of the files and upload the new version (target: < 2 % of the bytes sent).
// Each figure is the median of --runs runs, the two sides alternating; the page cache is warm for both.
//
//   dataset_hash_upload [--size-mb 2048] [--runs 3] [--dir /tmp]
#include "datasetupload.h"
#include "manifest.h"
#include "workerprocess.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

using namespace traindeck;
namespace fs = std::filesystem;

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values.empty() ? 0 : values[values.size() / 2];
}

// Mixed sizes, as a real dataset folder holds: many small files, some medium, a few large ones.
std::vector<std::pair<std::string, int64_t>> make_folder(const std::string& root, int64_t total_bytes) {
    std::mt19937_64 rng(2026);
    std::vector<std::pair<std::string, int64_t>> files;
    int64_t made = 0;
    std::vector<uint64_t> buffer(1 << 20);
    for (int i = 0; made < total_bytes; ++i) {
        const int kind = static_cast<int>(rng() % 100);
        int64_t size = kind < 70 ? 4096 + static_cast<int64_t>(rng() % (512 << 10))           // 70 %: 4 KB – 0.5 MB
                       : kind < 95 ? (1 << 20) + static_cast<int64_t>(rng() % (15 << 20))     // 25 %: 1 – 16 MB
                                   : (64 << 20) + static_cast<int64_t>(rng() % (64 << 20)); // 5 %: 64 – 128 MB
        size = std::min(size, total_bytes - made);
        const std::string relative = "class" + std::to_string(i % 10) + "/sample" + std::to_string(i) + ".bin";
        const fs::path path = fs::path(root) / relative;
        fs::create_directories(path.parent_path());
        std::ofstream out(path, std::ios::binary);
        for (int64_t left = size; left > 0;) {
            for (auto& word : buffer)
                word = rng();
            const int64_t take = std::min<int64_t>(left, static_cast<int64_t>(buffer.size() * 8));
            out.write(reinterpret_cast<const char*>(buffer.data()), take);
            left -= take;
        }
        files.push_back({relative, size});
        made += size;
    }
    return files;
}

int run(const std::string& command) { return std::system(command.c_str()); }

} // namespace

int main(int argc, char** argv) {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    int64_t size_mb = 2048;
    int runs = 3;
    std::string base = "/tmp";
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string arg = argv[i];
        if (arg == "--size-mb")
            size_mb = std::atoll(argv[i + 1]);
        else if (arg == "--runs")
            runs = std::atoi(argv[i + 1]);
        else if (arg == "--dir")
            base = argv[i + 1];
    }
    std::string pattern = base + "/traindeck-bench-XXXXXX";
    const std::string work = ::mkdtemp(pattern.data());
    const std::string root = work + "/dataset";
    std::printf("making %lld MB of mixed files in %s ...\n", static_cast<long long>(size_mb), root.c_str());
    const auto files = make_folder(root, size_mb << 20);
    const double megabytes = static_cast<double>(size_mb << 20) / 1e6;
    std::printf("%zu files\n", files.size());
    const std::string list = work + "/files.txt";
    {
        std::ofstream out(list);
        for (const auto& [relative, size] : files)
            out << root << "/" << relative << "\n";
    }

    // 1. Hashing. One warm-up read of each side first, so both run from the page cache.
    std::vector<double> ours, peer;
    dataset::Manifest manifest;
    std::string error;
    for (int r = -1; r < runs; ++r) {
        const double t0 = now();
        if (run("xargs -a " + list + " -d '\\n' sha256sum > /dev/null") != 0) {
            std::fprintf(stderr, "sha256sum failed\n");
            return 1;
        }
        const double t1 = now();
        if (!dataset::scan_manifest(root, manifest, error)) {
            std::fprintf(stderr, "scan failed: %s\n", error.c_str());
            return 1;
        }
        const double t2 = now();
        if (r >= 0) {
            peer.push_back(megabytes / (t1 - t0));
            ours.push_back(megabytes / (t2 - t1));
        }
    }
    const double hash_ours = median(ours), hash_peer = median(peer);
    std::printf("\nhash   TrainDeck manifest %8.0f MB/s   sha256sum %8.0f MB/s   ratio %.2fx  (target >= 0.9x: %s)\n",
                hash_ours, hash_peer, hash_ours / hash_peer, hash_ours / hash_peer >= 0.9 ? "met" : "MISSED");

    // 2. Upload. The peer: one curl process PUTting every file over one kept-alive connection to a sink that
    // stores each body as a file, as a plain upload server would.
    httplib::Server sink;
    const std::string sink_dir = work + "/sink";
    fs::create_directories(sink_dir);
    std::atomic<int64_t> sink_bytes{0};
    sink.Put(R"(/(.+))", [&](const httplib::Request& req, httplib::Response& res) {
        std::string name = req.matches[1];
        std::replace(name.begin(), name.end(), '/', '_');
        std::ofstream(sink_dir + "/" + name, std::ios::binary).write(req.body.data(), static_cast<std::streamsize>(req.body.size()));
        sink_bytes += static_cast<int64_t>(req.body.size());
        res.status = 201;
    });
    sink.set_payload_max_length(size_t(1) << 40);
    const int sink_port = sink.bind_to_any_port("127.0.0.1");
    std::thread sink_thread([&] { sink.listen_after_bind(); });
    const std::string curl_config = work + "/curl.conf";
    {
        std::ofstream out(curl_config);
        for (const auto& [relative, size] : files)
            out << "upload-file = \"" << root << "/" << relative << "\"\nurl = \"http://127.0.0.1:" << sink_port << "/"
                << relative << "\"\noutput = /dev/null\n";
    }
    ours.clear();
    peer.clear();
    client::UploadProgress last;
    test::WorkerProcess* worker = nullptr;
    for (int r = 0; r < runs; ++r) {
        fs::remove_all(sink_dir);
        fs::create_directories(sink_dir);
        run("sync");
        const double t0 = now();
        if (run("curl -s -S --config " + curl_config) != 0) {
            std::fprintf(stderr, "curl failed\n");
            return 1;
        }
        const double t1 = now();
        delete worker; // a fresh worker and store each run: everything must travel
        fs::create_directories(work + "/worker" + std::to_string(r));
        worker = new test::WorkerProcess({}, work + "/worker" + std::to_string(r));
        if (r > 0)
            fs::remove_all(work + "/worker" + std::to_string(r - 1));
        run("sync");
        const double t2 = now();
        if (!worker->running() || !client::upload_dataset(worker->client(), manifest, root, last, error)) {
            std::fprintf(stderr, "upload failed: %s\n", worker->running() ? error.c_str() : "the worker did not start");
            std::exit(1);
        }
        const double t3 = now();
        peer.push_back(megabytes / (t1 - t0));
        ours.push_back(megabytes / (t3 - t2));
        std::printf("  run %d: curl PUT %.0f MB/s, TrainDeck upload %.0f MB/s (%lld chunks)\n", r + 1, peer.back(),
                    ours.back(), static_cast<long long>(last.chunks_sent));
    }
    const double up_ours = median(ours), up_peer = median(peer);
    std::printf("upload TrainDeck %8.0f MB/s   curl PUT %8.0f MB/s   ratio %.2fx  (target >= 0.8x: %s)\n", up_ours,
                up_peer, up_ours / up_peer, up_ours / up_peer >= 0.8 ? "met" : "MISSED");

    // 3. Change 1 % of the files (a few bytes each, somewhere inside) and upload the new version.
    std::mt19937 rng(7);
    const size_t changed = std::max<size_t>(1, files.size() / 100);
    std::vector<size_t> order(files.size());
    for (size_t i = 0; i < order.size(); ++i)
        order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t k = 0; k < changed; ++k) {
        const auto& [relative, size] = files[order[k]];
        std::fstream file(fs::path(root) / relative, std::ios::in | std::ios::out | std::ios::binary);
        file.seekp(static_cast<std::streamoff>(rng() % std::max<int64_t>(1, size - 8)));
        file.write("CHANGED!", std::min<int64_t>(8, size));
    }
    dataset::Manifest second;
    if (!dataset::scan_manifest(root, second, error) ||
        !client::upload_dataset(worker->client(), second, root, last, error)) {
        std::fprintf(stderr, "re-upload failed: %s\n", error.c_str());
        return 1;
    }
    const double share = 100.0 * static_cast<double>(last.bytes_sent) / static_cast<double>(second.bytes());
    std::printf("re-upload after changing %zu of %zu files (1 %%): %.1f MB of %.1f MB sent = %.2f %%  (target < 2 %%: %s)\n",
                changed, files.size(), last.bytes_sent / 1e6, second.bytes() / 1e6, share, share < 2.0 ? "met" : "MISSED");

    delete worker;
    sink.stop();
    sink_thread.join();
    fs::remove_all(work);
    return 0;
}
