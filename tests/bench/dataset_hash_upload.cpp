// Benchmark: dataset registration and upload against the plain tools, in one run.
//   1. hash a folder of mixed files (default 2 GB): TrainDeck's manifest scan vs `sha256sum` over the same files
//      (target: >= 0.9x sha256sum's MB/s);
//   2. upload it to a loopback traindeck-worker (chunks, hash checks, every chunk fsynced before it is acknowledged,
//      then the version built: copied from the chunks, hashed, synced) vs `curl` PUTting the same files to a plain
//      HTTP sink that stores each body as a file and fsyncs it and its folder before it answers. Targets: TrainDeck
//      (on --connections threads, one connection each: 4, the console's setting) >= 1.0x one curl process (one
//      connection) and >= 0.9x four curl processes at once (four connections, a quarter of the bytes each). The
//      sink reads with 1 MiB reads on a thread per connection, so that the peer's figure is curl's, not the sink's;
//      the same sink without fsync is timed too, for reference (the page cache, which no durable store matches);
//   3. change 1 % of the files and upload the new version (target: < 2 % of the bytes sent).
// Each figure is the median of --runs runs, the sides alternating; the page cache is warm for both. Exit status: 0
// every target met, 1 one missed, 2 the bench could not run.
//
//   dataset_hash_upload [--size-mb 2048] [--runs 3] [--connections 4] [--dir /tmp]
#include "datasetupload.h"
#include "manifest.h"
#include "workerprocess.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
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

// The peer's server: HTTP/1.1 PUTs on kept-alive connections, a thread per connection, each body written to a file
// of the sink folder as it arrives, in reads of up to 1 MiB. It answers "Expect: 100-continue" and nothing else a
// general server would: it is there to take curl's bytes as fast as this machine stores them. A durable sink
// fsyncs each file and the folder before it answers, as the worker does with each chunk.
class Sink {
public:
    Sink(std::string dir, bool durable) : dir_(std::move(dir)), durable_(durable) {
        listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t length = sizeof(address);
        if (listener_ < 0 || ::bind(listener_, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
            ::listen(listener_, 16) != 0 ||
            ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
            std::perror("sink");
            std::exit(2);
        }
        port_ = ntohs(address.sin_port);
        acceptor_ = std::thread([this] {
            for (int connection; (connection = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC)) >= 0;) {
                std::lock_guard lock(mutex_);
                connections_.emplace_back([this, connection] { serve(connection); });
            }
        });
    }
    ~Sink() {
        ::shutdown(listener_, SHUT_RDWR);
        ::close(listener_);
        acceptor_.join();
        std::lock_guard lock(mutex_);
        for (std::thread& connection : connections_)
            connection.join();
    }
    int port() const { return port_; }
    int64_t bytes() const { return bytes_.load(); }

private:
    void serve(int connection) {
        std::vector<char> buffer(size_t(1) << 20);
        std::string head;
        auto fail = [&] { ::close(connection); };
        while (true) {
            size_t end;
            while ((end = head.find("\r\n\r\n")) == std::string::npos) {
                const ssize_t got = ::recv(connection, buffer.data(), buffer.size(), 0);
                if (got <= 0)
                    return fail();
                head.append(buffer.data(), static_cast<size_t>(got));
            }
            std::string rest = head.substr(end + 4);
            head.resize(end + 2);
            std::string lower = head;
            std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
            const size_t length_at = lower.find("\r\ncontent-length:");
            const size_t path_at = head.find(' ') + 2;
            if (head.rfind("PUT /", 0) != 0 || length_at == std::string::npos)
                return fail();
            int64_t left = std::atoll(head.c_str() + length_at + 17);
            std::string name = head.substr(path_at, head.find(' ', path_at) - path_at);
            std::replace(name.begin(), name.end(), '/', '_');
            if (lower.find("\r\nexpect: 100-continue") != std::string::npos &&
                ::send(connection, "HTTP/1.1 100 Continue\r\n\r\n", 25, MSG_NOSIGNAL) != 25)
                return fail();
            const int file = ::open((dir_ + "/" + name).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
            if (file < 0)
                return fail();
            auto store = [&](const char* data, size_t size) {
                const bool wrote = ::write(file, data, size) == static_cast<ssize_t>(size);
                if (wrote)
                    bytes_ += static_cast<int64_t>(size);
                return wrote;
            };
            const size_t early = std::min<size_t>(rest.size(), static_cast<size_t>(left));
            bool ok = store(rest.data(), early);
            left -= static_cast<int64_t>(early);
            head = rest.substr(early);
            while (ok && left > 0) {
                const ssize_t got =
                    ::recv(connection, buffer.data(), std::min<size_t>(buffer.size(), static_cast<size_t>(left)), 0);
                ok = got > 0 && store(buffer.data(), static_cast<size_t>(got));
                left -= got;
            }
            if (durable_) {
                const int folder = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                ok = ok && ::fsync(file) == 0 && folder >= 0 && ::fsync(folder) == 0;
                ::close(folder);
            }
            ::close(file);
            static const char reply[] = "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n";
            if (!ok || ::send(connection, reply, sizeof(reply) - 1, MSG_NOSIGNAL) != sizeof(reply) - 1)
                return fail();
        }
    }

    std::string dir_;
    bool durable_;
    int listener_ = -1, port_ = 0;
    std::atomic<int64_t> bytes_{0};
    std::thread acceptor_;
    std::mutex mutex_;
    std::vector<std::thread> connections_;
};

} // namespace

int main(int argc, char** argv) {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    int64_t size_mb = 2048;
    int runs = 3, connections = client::UploadOptions{}.connections;
    std::string base = "/tmp";
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string arg = argv[i];
        if (arg == "--size-mb")
            size_mb = std::atoll(argv[i + 1]);
        else if (arg == "--runs")
            runs = std::atoi(argv[i + 1]);
        else if (arg == "--connections")
            connections = std::max(1, std::atoi(argv[i + 1]));
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
            return 2;
        }
        const double t1 = now();
        if (!dataset::scan_manifest(root, manifest, error)) {
            std::fprintf(stderr, "scan failed: %s\n", error.c_str());
            return 2;
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

    // 2. Upload. The peers: curl PUTting every file over one kept-alive connection, and four curls at once, each
    // with a quarter of the bytes (files dealt largest first to the lightest share).
    const std::string sink_dir = work + "/sink";
    fs::create_directories(sink_dir);
    auto sink = std::make_unique<Sink>(sink_dir, true), cached = std::make_unique<Sink>(sink_dir, false);
    std::vector<std::string> configs(5);
    {
        std::vector<size_t> order(files.size());
        for (size_t i = 0; i < order.size(); ++i)
            order[i] = i;
        std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return files[x].second > files[y].second; });
        std::vector<std::ofstream> out;
        out.reserve(configs.size());
        std::vector<int64_t> load(4, 0);
        for (int c = 0; c < 5; ++c)
            out.emplace_back(configs[c] = work + "/curl" + std::to_string(c) + ".conf");
        for (size_t i : order) {
            const auto& [relative, size] = files[i];
            const int share = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
            load[share] += size;
            for (int c : {0, 1 + share})
                out[c] << "upload-file = \"" << root << "/" << relative << "\"\nurl = \"http://127.0.0.1:PORT/"
                       << relative << "\"\noutput = /dev/null\n";
        }
    }
    ours.clear();
    peer.clear();
    std::vector<double> peer4, peer_cached;
    client::UploadProgress last;
    client::UploadOptions options;
    options.connections = connections;
    // When the last chunk was acknowledged: the rest of an upload is the version's build (copy, hash, sync).
    std::atomic<double> chunks_done{0};
    options.progress = [&](const client::UploadProgress&) { chunks_done = now(); };
    test::WorkerProcess* worker = nullptr;
    // curl's --config takes the sink's port from each url: the configs name PORT, filled in here.
    auto timed_curl = [&](int first, int count, Sink& to) {
        fs::remove_all(sink_dir);
        fs::create_directories(sink_dir);
        run("sync");
        const int64_t before = to.bytes();
        // Each curl's own exit status: `wait PID` for every one of them.
        std::string command, waits;
        for (int c = first; c < first + count; ++c) {
            command += "sed s/PORT/" + std::to_string(to.port()) + "/ " + configs[c] + " | curl -s -S --config - & p" +
                       std::to_string(c) + "=$!; ";
            waits += (waits.empty() ? "wait $p" : " && wait $p") + std::to_string(c);
        }
        const double t0 = now();
        if (run("{ " + command + waits + "; }") != 0 || to.bytes() - before != (size_mb << 20)) {
            std::fprintf(stderr, "curl failed (the sink took %lld bytes)\n",
                         static_cast<long long>(to.bytes() - before));
            std::exit(2);
        }
        return megabytes / (now() - t0);
    };
    std::printf("\nupload: TrainDeck on %d connections (a thread each) to traindeck-worker, each chunk fsynced before "
                "it is acknowledged; curl to a sink of a thread per connection that fsyncs each file and its folder "
                "before it answers\n",
                connections);
    for (int r = 0; r < runs; ++r) {
        if (r % 2 == 0) {
            peer.push_back(timed_curl(0, 1, *sink));
            peer4.push_back(timed_curl(1, 4, *sink));
            peer_cached.push_back(timed_curl(0, 1, *cached));
        }
        delete worker; // a fresh worker and store each run: everything must travel
        fs::create_directories(work + "/worker" + std::to_string(r));
        worker = new test::WorkerProcess({}, work + "/worker" + std::to_string(r));
        if (r > 0)
            fs::remove_all(work + "/worker" + std::to_string(r - 1));
        run("sync");
        const double t2 = now();
        if (!worker->running() || !client::upload_dataset(worker->client(), manifest, root, last, error, options)) {
            std::fprintf(stderr, "upload failed: %s\n", worker->running() ? error.c_str() : "the worker did not start");
            std::exit(2);
        }
        const double t3 = now();
        ours.push_back(megabytes / (t3 - t2));
        if (r % 2 == 1) {
            peer_cached.push_back(timed_curl(0, 1, *cached));
            peer4.push_back(timed_curl(1, 4, *sink));
            peer.push_back(timed_curl(0, 1, *sink));
        }
        std::printf("  run %d: TrainDeck upload %.0f MB/s (%lld chunks stored in %.2f s, the version built in %.2f s); "
                    "curl x1 %.0f MB/s, curl x4 %.0f MB/s\n",
                    r + 1, ours.back(), static_cast<long long>(last.chunks_sent), chunks_done.load() - t2,
                    t3 - chunks_done.load(), peer.back(), peer4.back());
    }
    sink.reset();
    cached.reset();
    // The ratio of each run to the peers timed next to it (the machine's speed drifts between runs), then the median.
    std::vector<double> to_one, to_four;
    for (size_t r = 0; r < ours.size(); ++r) {
        to_one.push_back(ours[r] / peer[r]);
        to_four.push_back(ours[r] / peer4[r]);
    }
    const double up_ours = median(ours), up_peer = median(peer), up_peer4 = median(peer4);
    const double one = median(to_one), four = median(to_four);
    const bool one_met = one >= 1.0, four_met = four >= 0.9;
    std::printf("upload TrainDeck %8.0f MB/s   curl x1 %8.0f MB/s   median ratio %.2fx  (target >= 1.0x: %s)\n",
                up_ours, up_peer, one, one_met ? "met" : "MISSED");
    std::printf("upload TrainDeck %8.0f MB/s   curl x4 %8.0f MB/s   median ratio %.2fx  (target >= 0.9x: %s)\n",
                up_ours, up_peer4, four, four_met ? "met" : "MISSED");
    std::printf("(for reference: curl x1 to the same sink without fsync, into the page cache: %.0f MB/s)\n",
                median(peer_cached));

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
        return 2;
    }
    const double share = 100.0 * static_cast<double>(last.bytes_sent) / static_cast<double>(second.bytes());
    std::printf("re-upload after changing %zu of %zu files (1 %%): %.1f MB of %.1f MB sent = %.2f %%  (target < 2 %%: %s)\n",
                changed, files.size(), last.bytes_sent / 1e6, second.bytes() / 1e6, share, share < 2.0 ? "met" : "MISSED");

    delete worker;
    fs::remove_all(work);
    return hash_ours / hash_peer >= 0.9 && one_met && four_met && share < 2.0 ? 0 : 1;
}
