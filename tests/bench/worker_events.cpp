// Benchmark: end-to-end event delivery of traindeck-worker, through the request the console uses. --jobs jobs each
// write --rate metric lines per second (metrics_emitter); --idle more jobs run and say nothing; one client thread
// watches all of them in one long poll at a time (POST /v1/events/watch, the console's WorkerBackend::watch, with its
// reply budget of 20,000 events shared among the jobs with news), as one console does. Prints events/s delivered while
// every streaming job streams and the latency from the job's write to the client's read (p50, p99). The jobs do not
// capture their code and environment as they start (a capture is a burst of work at a job's start, measured by
// tests/bench/capture, and a thousand of them at once would be what this bench measured).
//
// Targets (issue 15): >= 250,000 events/s with p99 < 100 ms; with 1,000 jobs watched, p99 < 150 ms. The offered load
// must exceed the delivery target (a run that offers less cannot show it: exit 2), and the verdict counts what was
// delivered: every line of every job, in order, and the rate measured from the reads. The worker's WAL (sampled at
// each reply) must stay under 256 MB: written and read at once, it once grew without end (580 MB in 10 s). Exit status:
// 0 every target met, 1 one missed (or a line lost), 2 the bench could not run.
//
//   worker_events [--jobs 50] [--rate 6000] [--seconds 10] [--idle 0] [--total 20000 | --per-job 1]
//   worker_events --idle 950     (1,000 jobs watched)
// --per-job 1 asks as a console does of a worker from before the shared budget: a per-job limit only, of 200,000
// over the jobs watched (200 to 20,000).
#include "telemetry.h"
#include "workerprocess.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

using namespace traindeck::test;
using nlohmann::json;

namespace {
constexpr uintmax_t kWalBound = 256u << 20;
double wall() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

double percentile(std::vector<double>& values, double p) {
    if (values.empty())
        return 0;
    const size_t index = std::min(values.size() - 1, static_cast<size_t>(p * values.size()));
    std::nth_element(values.begin(), values.begin() + index, values.end());
    return values[index];
}

struct Stream {
    long metrics = 0, last_step = 0, gaps = 0;
    double first = 1e300, last = 0;
    bool finished = false;
};

// One watch reply, {"jobs":{"ID":{"events":[...],"next":N,"state":"S"},...},"missing":[...]}, scanned for what the
// bench needs instead of parsed into a JSON tree: on two shared cores a full parse here would measure this client,
// not the worker. The emitter's lines are known ({"type":"metric","step":N,"loss":0.5,"written_us":US}), so the
// markers cannot occur inside an event.
void scan_reply(const std::string& body, double now, std::map<int64_t, int64_t>& after,
                std::map<int64_t, Stream>& streams, std::vector<std::pair<double, double>>& timeline) {
    size_t at = body.find("\"jobs\":{");
    if (at == std::string::npos)
        return;
    at += 8;
    while (at < body.size() && body[at] == '"') {
        const int64_t id = std::strtoll(body.c_str() + at + 1, nullptr, 10);
        const size_t end = body.find("],\"next\":", at);
        if (end == std::string::npos)
            return;
        // An idle job's events (its state) are read and passed over: only the streaming jobs are counted.
        const auto known = streams.find(id);
        Stream ignored;
        Stream& stream = known == streams.end() ? ignored : known->second;
        // Searches end at this job's end: an idle job's search for a step ran on through every job after it (the
        // 1,000-job run's first reply took 594 ms to scan, measured as the worker's latency).
        const std::string_view events(body.data(), end);
        for (size_t step_at = events.find("\"step\":", at); step_at != std::string_view::npos;
             step_at = events.find("\"step\":", step_at)) {
            step_at += 7;
            const long step = std::strtol(body.c_str() + step_at, nullptr, 10);
            const size_t written = events.find("\"written_us\":", step_at);
            if (written == std::string_view::npos)
                break;
            const double written_s = std::strtod(body.c_str() + written + 13, nullptr) * 1e-6;
            stream.gaps += step != stream.last_step + 1;
            stream.last_step = step;
            ++stream.metrics;
            stream.first = std::min(stream.first, now);
            stream.last = now;
            timeline.emplace_back(now, now - written_s);
        }
        after[id] = std::max(after[id], static_cast<int64_t>(std::strtoll(body.c_str() + end + 9, nullptr, 10)));
        const size_t state = body.find("\"state\":\"", end);
        if (state == std::string::npos)
            return;
        // Ended, and nothing more of it in this reply: the job has said everything (a reply can end with a job's
        // final state and still hold only part of its events, the limit a job).
        const std::string name = body.substr(state + 9, body.find('"', state + 9) - state - 9);
        if ((name == "succeeded" || name == "failed" || name == "cancelled" || name == "stopped") &&
            body.compare(end - 10, 10, "\"events\":[") == 0)
            stream.finished = true;
        at = body.find('}', state) + 1;
        if (at < body.size() && body[at] == ',')
            ++at;
    }
}
} // namespace

int main(int argc, char** argv) {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    int jobs = 50, idle = 0;
    bool per_job = false;
    int64_t total = 20000;
    double rate = 6000, seconds = 10;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string arg = argv[i];
        if (arg == "--jobs")
            jobs = std::atoi(argv[i + 1]);
        else if (arg == "--rate")
            rate = std::atof(argv[i + 1]);
        else if (arg == "--seconds")
            seconds = std::atof(argv[i + 1]);
        else if (arg == "--idle")
            idle = std::atoi(argv[i + 1]);
        else if (arg == "--per-job")
            per_job = std::atoi(argv[i + 1]) != 0;
        else if (arg == "--total")
            total = std::atoll(argv[i + 1]);
        else {
            std::fprintf(stderr, "unknown option %s\n", arg.c_str());
            return 2;
        }
    }
    constexpr double kEventsTarget = 250000;
    const double p99_target_ms = jobs + idle >= 1000 ? 150 : 100;
    const double offered = jobs * rate;
    if (offered <= kEventsTarget) {
        std::fprintf(stderr, "the offered load (%.0f events/s) must exceed the target (%.0f events/s) to show it\n",
                     offered, kEventsTarget);
        return 2;
    }
    WorkerProcess worker({"--cpus", std::to_string(jobs + idle)});
    if (!worker.running()) {
        std::fprintf(stderr, "worker did not start\n");
        return 2;
    }
    std::map<int64_t, int64_t> after; // every watched job: the last seq read
    for (int j = 0; j < idle; ++j) {
        const int64_t id =
            worker.submit({{"argv", {"/bin/sleep", "3600"}}, {"resources", {{"cpus", 1}}}, {"capture", false}});
        if (!id) {
            std::fprintf(stderr, "submit failed: %s\n", worker.last_error.c_str());
            return 2;
        }
        after[id] = 0;
    }
    // The streaming jobs start together, once all are submitted and watched: a job that streamed while the others
    // were still being submitted would show its wait for the watch as delivery latency.
    const std::string start_file = worker.state_dir() + "/start-streaming";
    std::map<int64_t, Stream> streams;
    for (int j = 0; j < jobs; ++j) {
        const int64_t id = worker.submit(
            {{"argv", {TRAINDECK_EMITTER_BINARY, std::to_string(rate), std::to_string(seconds), start_file}},
             {"resources", {{"cpus", 1}}},
             {"capture", false}});
        if (!id) {
            std::fprintf(stderr, "submit failed: %s\n", worker.last_error.c_str());
            return 2;
        }
        after[id] = 0;
        streams[id];
    }
    // Every job started (each emitter waits for the start file) before streaming starts: the worker starting a
    // thousand jobs is not delivery, and the lines of the first second would wait behind the starts.
    const double submitted = wall();
    for (;;) {
        const auto queued = worker.client().get("/v1/jobs?state=queued");
        if (queued.status == 200 && queued.json()["jobs"].empty())
            break;
        if (wall() - submitted > 120) {
            std::fprintf(stderr, "the jobs had not all started 120 s after their submission\n");
            return 2;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    std::printf("every job started %.1f s after the last was submitted\n", wall() - submitted);
    // Watched already: what the jobs said before streaming (their start, a second's telemetry each) counts as read,
    // as a console that has been watching them has read it. Otherwise the first replies would carry a thousand jobs'
    // backlog, and the streaming jobs' first lines would wait behind it.
    const auto listed = worker.client().get("/v1/jobs");
    if (listed.status != 200) {
        std::fprintf(stderr, "cannot list the jobs: status %d\n", listed.status);
        return 2;
    }
    for (const json& job : listed.json()["jobs"])
        if (after.count(job["id"].get<int64_t>()))
            after[job["id"].get<int64_t>()] = job["last_seq"].get<int64_t>();
    const long expected_per_job = static_cast<long>(rate * seconds);
    // The console's reply size: 20,000 events in all (--total), shared among the jobs with news; or, as for an older
    // worker, 200 to 20,000 a job.
    const int64_t limit =
        per_job ? std::clamp<int64_t>(200000 / static_cast<int64_t>(after.size()), 200, 20000) : total;
    std::vector<std::pair<double, double>> timeline; // (read time, latency) of every metric event
    traindeck::client::WorkerClient client(worker.url(), worker.token());
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds + 120);
    long requests = 0;
    auto streaming = [&] {
        return std::any_of(streams.begin(), streams.end(), [&](const auto& entry) {
            return entry.second.metrics < expected_per_job && !entry.second.finished;
        });
    };
    std::printf("%zu jobs submitted; streaming starts\n", after.size());
    // The worker's CPU (every thread) over the run, as the worker meters a job's: what watching so many jobs costs.
    traindeck::worker::Telemetry telemetry;
    telemetry.sample_process(worker.pid());
    const double started = wall();
    // The worker's log of writes (SQLite's WAL) while it is written and read at once: it must stay bounded.
    const std::string wal_path = worker.state_dir() + "/worker.db-wal";
    uintmax_t wal_peak = 0;
    std::ofstream(start_file).put('\n');
    while (streaming() && std::chrono::steady_clock::now() < deadline) {
        json watched = json::object();
        for (const auto& [id, seq] : after)
            watched[std::to_string(id)] = seq;
        json request{{"after", watched}, {"wait_ms", 5000}, {"limit", limit}};
        if (!per_job)
            request["total"] = total;
        const auto response = client.post("/v1/events/watch", request, 20000);
        ++requests;
        if (requests <= 3)
            std::printf("reply %ld: status %d, %zu bytes, %.0f ms after streaming started\n", requests, response.status,
                        response.body.size(), (wall() - started) * 1000);
        std::error_code ec;
        const uintmax_t wal = std::filesystem::file_size(wal_path, ec);
        if (!ec)
            wal_peak = std::max<uintmax_t>(wal_peak, wal);
        if (response.status != 200)
            continue;
        scan_reply(response.body, wall(), after, streams, timeline);
    }

    const double worker_cpu = telemetry.sample_process(worker.pid()).cpu_percent / 100;
    long delivered = 0, gaps = 0, short_jobs = 0;
    double all_running = 0, first_done = 1e300, first_read = 1e300, last_read = 0;
    for (const auto& [id, stream] : streams) {
        delivered += stream.metrics;
        gaps += stream.gaps;
        short_jobs += stream.metrics != expected_per_job;
        all_running = std::max(all_running, stream.first);
        first_done = std::min(first_done, stream.last);
        first_read = std::min(first_read, stream.first);
        last_read = std::max(last_read, stream.last);
    }
    // Throughput is counted while every streaming job streams (submitting them takes a while, so the first and last
    // moments of the run carry less than the full load).
    long in_window = 0;
    std::vector<double> latencies;
    latencies.reserve(timeline.size());
    for (const auto& [at, latency] : timeline) {
        in_window += at >= all_running && at <= first_done;
        latencies.push_back(latency);
    }
    const double window = first_done - all_running;
    const double events_per_s = window > 1.0 ? static_cast<double>(in_window) / window : 0;
    const double p50 = percentile(latencies, 0.50) * 1000, p99 = percentile(latencies, 0.99) * 1000;
    std::printf("worker_events: %d jobs x %.0f lines/s for %.0f s (offered %.0f events/s, %ld lines), %d idle jobs; "
                "%zu jobs watched by one client in one long poll at a time (%s %lld events a reply), %ld requests\n",
                jobs, rate, seconds, offered, expected_per_job * jobs, idle, after.size(),
                per_job ? "per job: at most" : "shared by the jobs with news:",
                static_cast<long long>(per_job ? limit : total), requests);
    std::printf("delivered %ld of %ld metric events (%ld out of order or missing; %ld jobs short) in %.2f s\n",
                delivered, expected_per_job * jobs, gaps, short_jobs, last_read - first_read);
    std::printf("with all %d jobs streaming (%.1f s window): %.0f events/s delivered\n", jobs, window, events_per_s);
    std::printf("latency write->read: p50 %.1f ms, p99 %.1f ms; the worker used %.2f cores meanwhile\n", p50, p99,
                worker_cpu);
    std::printf("worst latency per second of the run (ms):");
    for (int second = 0; first_read + second < last_read; ++second) {
        double worst = 0;
        for (const auto& [at, latency] : timeline)
            if (at >= first_read + second && at < first_read + second + 1)
                worst = std::max(worst, latency);
        std::printf(" %.0f", worst * 1000);
    }
    std::printf("\n");
    const bool whole = delivered == expected_per_job * jobs && gaps == 0;
    const bool rate_met = events_per_s >= kEventsTarget, p99_met = p99 < p99_target_ms;
    std::printf("target events/s >= %.0f: ratio %.2f -> %s\n", kEventsTarget, events_per_s / kEventsTarget,
                rate_met ? "met" : "MISSED");
    std::printf("target p99 < %.0f ms (%zu jobs watched): ratio %.2f -> %s\n", p99_target_ms, after.size(),
                p99 / p99_target_ms, p99_met ? "met" : "MISSED");
    std::printf("every line delivered in order: %s\n", whole ? "yes" : "NO");
    const bool wal_bounded = wal_peak > 0 && wal_peak < kWalBound; // 0: never found, which shows nothing
    std::printf("the worker's WAL peaked at %.0f MB (bound %.0f MB): %s\n", static_cast<double>(wal_peak) / 1e6,
                static_cast<double>(kWalBound) / 1e6, wal_bounded ? "met" : "MISSED");
    return whole && rate_met && p99_met && wal_bounded ? 0 : 1;
}
