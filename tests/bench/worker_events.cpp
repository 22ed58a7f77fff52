// Benchmark: end-to-end event delivery of traindeck-worker. N concurrent jobs each write R metric lines per
// second; one client thread per job long-polls its event stream, as the console does. Prints events/s
// delivered and the latency from the job's write to the client's read (p50, p99), against the targets.
//
//   worker_events [--jobs 50] [--rate 2000] [--seconds 10]
#include "workerprocess.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace traindeck::test;
using nlohmann::json;

namespace {
double wall() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

double percentile(std::vector<double>& values, double p) {
    if (values.empty())
        return 0;
    const size_t index = std::min(values.size() - 1, static_cast<size_t>(p * values.size()));
    std::nth_element(values.begin(), values.begin() + index, values.end());
    return values[index];
}
} // namespace

int main(int argc, char** argv) {
    int jobs = 50;
    double rate = 2000, seconds = 10;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string arg = argv[i];
        if (arg == "--jobs")
            jobs = std::atoi(argv[i + 1]);
        else if (arg == "--rate")
            rate = std::atof(argv[i + 1]);
        else if (arg == "--seconds")
            seconds = std::atof(argv[i + 1]);
    }
    WorkerProcess worker({"--cpus", std::to_string(jobs)});
    if (!worker.running()) {
        std::fprintf(stderr, "worker did not start\n");
        return 1;
    }
    const long expected_per_job = static_cast<long>(rate * seconds);
    std::mutex merge;
    std::vector<double> latencies;
    std::vector<std::pair<double, double>> timeline; // (read time, latency), to show when delays happen
    std::atomic<long> delivered{0}, gaps{0};
    double first_read = 1e300, last_read = 0;
    double all_running = 0, first_done = 1e300; // the window in which every job is streaming
    std::vector<std::thread> readers;
    // Each job's reader starts as soon as the job is submitted, as a console watching it would.
    for (int j = 0; j < jobs; ++j) {
        const int64_t id = worker.submit({{"argv", {TRAINDECK_EMITTER_BINARY, std::to_string(rate), std::to_string(seconds)}},
                                          {"resources", {{"cpus", 1}}}});
        if (!id) {
            std::fprintf(stderr, "submit failed: %s\n", worker.last_error.c_str());
            return 1;
        }
        readers.emplace_back([&, id] {
            traindeck::client::WorkerClient client(worker.url(), worker.token());
            std::vector<double> mine;
            std::vector<std::pair<double, double>> my_timeline;
            int64_t after = 0;
            long metrics = 0, last_step = 0;
            double first = 1e300, last = 0;
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds + 60);
            while (metrics < expected_per_job && std::chrono::steady_clock::now() < deadline) {
                const auto response = client.get("/v1/jobs/" + std::to_string(id) + "/events?limit=20000&wait_ms=1000&after=" +
                                                 std::to_string(after), 15000);
                const double now = wall();
                if (response.status != 200)
                    continue;
                // The harness scans for the two numbers it needs instead of building a JSON tree of every reply:
                // on two shared cores a full parse here would measure this client, not the worker.
                const std::string& body = response.body;
                for (size_t at = body.find("\"step\":"); at != std::string::npos; at = body.find("\"step\":", at)) {
                    at += 7;
                    const long step = std::strtol(body.c_str() + at, nullptr, 10);
                    const size_t written = body.find("\"written_us\":", at);
                    if (written == std::string::npos)
                        break;
                    const double written_s = std::strtod(body.c_str() + written + 13, nullptr) * 1e-6;
                    if (step != last_step + 1)
                        ++gaps;
                    last_step = step;
                    mine.push_back(now - written_s);
                    my_timeline.emplace_back(now, now - written_s);
                    ++metrics;
                    first = std::min(first, now);
                    last = now;
                }
                const size_t next = body.rfind("\"next\":");
                if (next != std::string::npos)
                    after = std::strtoll(body.c_str() + next + 7, nullptr, 10);
            }
            delivered += metrics;
            std::lock_guard lock(merge);
            latencies.insert(latencies.end(), mine.begin(), mine.end());
            timeline.insert(timeline.end(), my_timeline.begin(), my_timeline.end());
            first_read = std::min(first_read, first);
            last_read = std::max(last_read, last);
            all_running = std::max(all_running, first);
            first_done = std::min(first_done, last);
        });
    }
    for (auto& reader : readers)
        reader.join();
    const double span = last_read - first_read;
    // Throughput is counted while all jobs stream at once (submitting 50 jobs takes a few seconds, so the
    // first and last seconds of the run carry fewer than the full load).
    long in_window = 0;
    for (const auto& [at, latency] : timeline)
        in_window += at >= all_running && at <= first_done;
    const double window = first_done - all_running;
    const double events_per_s = window > 1.0 ? in_window / window : 0;
    const double p50 = percentile(latencies, 0.50) * 1000, p99 = percentile(latencies, 0.99) * 1000;
    std::printf("worker_events: %d jobs x %.0f lines/s for %.0f s (%ld expected)\n", jobs, rate, seconds,
                expected_per_job * jobs);
    std::printf("delivered %ld metric events (%ld out of order or missing) in %.2f s\n", delivered.load(), gaps.load(), span);
    std::printf("with all %d jobs streaming (%.1f s window): %.0f events/s delivered\n", jobs, window, events_per_s);
    std::printf("latency write->read: p50 %.1f ms, p99 %.1f ms\n", p50, p99);
    std::printf("worst latency per second of the run (ms):");
    for (int second = 0; first_read + second < last_read; ++second) {
        double worst = 0;
        for (const auto& [at, latency] : timeline)
            if (at >= first_read + second && at < first_read + second + 1)
                worst = std::max(worst, latency);
        std::printf(" %.0f", worst * 1000);
    }
    std::printf("\n");
    std::printf("target events/s >= 100000: ratio %.2f -> %s\n", events_per_s / 100000.0,
                events_per_s >= 100000 ? "met" : "MISSED");
    std::printf("target p99 < 250 ms: ratio %.2f -> %s\n", p99 / 250.0, p99 < 250 ? "met" : "MISSED");
    std::printf("note: the offered load is %.0f events/s; delivered cannot exceed it.\n", jobs * rate);
    return delivered == expected_per_job * jobs && gaps == 0 ? 0 : 1;
}
