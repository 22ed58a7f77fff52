// Benchmark: can the worker's API be starved? Measures /v1/health and job submission (POST /v1/jobs, each on a new
// connection) while (a) nothing else happens and (b) an unauthenticated client holds 500 connections — half idle,
// half slowloris (a header byte every 500 ms, reconnecting whenever the worker drops one) — and a console watches
// 1,000 jobs through one multiplexed long poll (POST /v1/events/watch). The two sides alternate over several rounds;
// prints each side's p50/p99 and their ratio, and exits non-zero when p99 under attack is 200 ms or more.
//
//   worker_connections [--rounds 3] [--requests 150] [--hostile 500] [--jobs 1000]
#include "workerprocess.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace traindeck::test;
using nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;

double percentile(std::vector<double> values, double p) {
    if (values.empty())
        return 0;
    std::sort(values.begin(), values.end());
    return values[std::min(values.size() - 1, static_cast<size_t>(p * values.size()))];
}

int connect_to(int port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0)
        return fd;
    if (fd >= 0)
        ::close(fd);
    return -1;
}

// The hostile client: holds `count` connections without a token; odd ones dribble a never-ending header.
class Hostile {
public:
    Hostile(int port, int count) : port_(port), fds_(count, -1) {
        thread_ = std::thread([this] { run(); });
    }
    ~Hostile() {
        stop_ = true;
        thread_.join();
        for (int fd : fds_)
            if (fd >= 0)
                ::close(fd);
    }
    long reconnects() const { return reconnects_; }
    int open() const { return open_; }

private:
    void run() {
        constexpr const char* kHead = "GET /v1/health HTTP/1.1\r\nX-Slow: ";
        for (long tick = 0; !stop_; ++tick) {
            int open = 0;
            for (size_t i = 0; i < fds_.size(); ++i) {
                const bool slow = i % 2 == 1;
                if (fds_[i] >= 0 && slow && ::send(fds_[i], "a", 1, MSG_NOSIGNAL) < 0) {
                    ::close(fds_[i]);
                    fds_[i] = -1;
                }
                if (fds_[i] < 0) {
                    fds_[i] = connect_to(port_);
                    if (tick > 0)
                        ++reconnects_;
                    if (fds_[i] >= 0 && slow)
                        ::send(fds_[i], kHead, std::strlen(kHead), MSG_NOSIGNAL);
                }
                open += fds_[i] >= 0;
            }
            open_ = open;
            for (int i = 0; i < 50 && !stop_; ++i)
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    }
    int port_;
    std::vector<int> fds_;
    std::atomic<bool> stop_{false};
    std::atomic<long> reconnects_{0};
    std::atomic<int> open_{0};
    std::thread thread_;
};

// The console: one long poll for all its jobs at once, again and again.
class Watcher {
public:
    Watcher(const WorkerProcess& worker, const std::vector<int64_t>& jobs) : client_(worker.url(), worker.token()) {
        for (int64_t id : jobs)
            after_[std::to_string(id)] = 0;
        thread_ = std::thread([this] {
            while (!stop_) {
                const auto reply = client_.post("/v1/events/watch", json{{"after", after_}, {"wait_ms", 2000}, {"limit", 100}}, 10000);
                const json body = reply.json();
                if (reply.status != 200 || !body.is_object()) {
                    ++errors_;
                    std::this_thread::sleep_for(std::chrono::milliseconds(50));
                    continue;
                }
                for (const auto& [id, answer] : body["jobs"].items())
                    after_[id] = answer["next"];
                ++polls_;
            }
        });
    }
    ~Watcher() {
        stop_ = true;
        thread_.join();
    }
    long polls() const { return polls_; }
    long errors() const { return errors_; }

private:
    traindeck::client::WorkerClient client_;
    json after_ = json::object();
    std::atomic<bool> stop_{false};
    std::atomic<long> polls_{0}, errors_{0};
    std::thread thread_;
};

struct Side {
    std::vector<double> health, submit; // milliseconds
};

void measure(WorkerProcess& worker, int requests, Side& side) {
    traindeck::client::WorkerClient client(worker.url(), worker.token());
    for (int i = 0; i < requests; ++i) {
        const auto start = Clock::now();
        const auto reply = client.get("/v1/health", 5000);
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
        side.health.push_back(reply.status == 200 ? ms : 5000.0);
        if (i % 5 == 0) {
            traindeck::client::WorkerClient fresh(worker.url(), worker.token()); // a new connection each time
            const auto begun = Clock::now();
            const auto submitted = fresh.post("/v1/jobs", json{{"argv", {"/bin/true"}}, {"name", "probe"}}, 5000);
            const double took = std::chrono::duration<double, std::milli>(Clock::now() - begun).count();
            side.submit.push_back(submitted.status == 201 ? took : 5000.0);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

} // namespace

int main(int argc, char** argv) {
    int rounds = 3, requests = 150, hostile = 500, jobs = 1000;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string arg = argv[i];
        if (arg == "--rounds")
            rounds = std::atoi(argv[i + 1]);
        else if (arg == "--requests")
            requests = std::atoi(argv[i + 1]);
        else if (arg == "--hostile")
            hostile = std::atoi(argv[i + 1]);
        else if (arg == "--jobs")
            jobs = std::atoi(argv[i + 1]);
    }
    WorkerProcess worker({"--cpus", "1"});
    if (!worker.running()) {
        std::fprintf(stderr, "worker did not start\n");
        return 1;
    }
    // The watched jobs: one holds the only CPU slot, the rest wait in the queue (their streams stay open).
    std::vector<int64_t> ids;
    for (int i = 0; i < jobs; ++i) {
        const int64_t id = worker.submit({{"argv", {"/bin/sleep", "3600"}}, {"name", "watched"}});
        if (id <= 0) {
            std::fprintf(stderr, "submit %d failed: %s\n", i, worker.last_error.c_str());
            return 1;
        }
        ids.push_back(id);
    }
    const int port = std::atoi(worker.url().substr(worker.url().rfind(':') + 1).c_str());
    std::printf("worker_connections: %d rounds; each side %d health requests on one connection and %d submissions on "
                "new connections; attack = %d unauthenticated connections (half idle, half slowloris) + one watcher "
                "of %d jobs\n", rounds, requests, requests / 5, hostile, jobs);
    Side quiet, attacked;
    long polls = 0, watch_errors = 0, reconnects = 0;
    int held = 0;
    for (int round = 0; round < rounds; ++round) {
        Side q, a;
        measure(worker, requests, q);
        {
            Hostile attack(port, hostile);
            Watcher watcher(worker, ids);
            // The attack is in place before anything is measured: every hostile connection is open.
            for (int i = 0; i < 3000 && attack.open() < hostile; ++i)
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            held = std::max(held, attack.open());
            measure(worker, requests, a);
            polls += watcher.polls();
            watch_errors += watcher.errors();
            reconnects += attack.reconnects();
        }
        std::printf("  round %d: health p99 quiet %.1f ms, attacked %.1f ms; submit p99 quiet %.1f ms, attacked %.1f ms\n",
                    round + 1, percentile(q.health, 0.99), percentile(a.health, 0.99), percentile(q.submit, 0.99),
                    percentile(a.submit, 0.99));
        quiet.health.insert(quiet.health.end(), q.health.begin(), q.health.end());
        quiet.submit.insert(quiet.submit.end(), q.submit.begin(), q.submit.end());
        attacked.health.insert(attacked.health.end(), a.health.begin(), a.health.end());
        attacked.submit.insert(attacked.submit.end(), a.submit.begin(), a.submit.end());
    }
    const double health_p99 = percentile(attacked.health, 0.99), submit_p99 = percentile(attacked.submit, 0.99);
    std::printf("health: quiet p50 %.1f p99 %.1f ms | attacked p50 %.1f p99 %.1f ms | ratio p99 %.2fx\n",
                percentile(quiet.health, 0.5), percentile(quiet.health, 0.99), percentile(attacked.health, 0.5), health_p99,
                health_p99 / std::max(0.001, percentile(quiet.health, 0.99)));
    std::printf("submit: quiet p50 %.1f p99 %.1f ms | attacked p50 %.1f p99 %.1f ms | ratio p99 %.2fx\n",
                percentile(quiet.submit, 0.5), percentile(quiet.submit, 0.99), percentile(attacked.submit, 0.5), submit_p99,
                submit_p99 / std::max(0.001, percentile(quiet.submit, 0.99)));
    std::printf("attack: up to %d connections held at once, %ld reconnects after the worker dropped one; watcher: %ld "
                "polls, %ld errors\n", held, reconnects, polls, watch_errors);
    const bool ok = health_p99 < 200 && submit_p99 < 200 && watch_errors == 0;
    std::printf("target p99 < 200 ms under attack (health and submit), watcher without errors: %s\n", ok ? "met" : "MISSED");
    return ok ? 0 : 1;
}
