#pragma once
// What several worker test suites (local and Slurm executors) check and submit alike.
#include "workerprocess.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace traindeck::test {

// Events are numbered 1, 2, 3, ... without a gap or a repeat.
inline void expect_gapless(const std::vector<nlohmann::json>& events) {
    ASSERT_FALSE(events.empty());
    for (size_t i = 0; i < events.size(); ++i)
        ASSERT_EQ(events[i]["seq"].get<int64_t>(), static_cast<int64_t>(i + 1)) << "gap or duplicate at index " << i;
}

// A built-in job that pauses after `step` until `release` exists (traindeck-train's TRAINDECK_HOLD_AT): tests
// pace jobs with it and wait for the "held" record instead of guessing how fast the machine trains.
inline nlohmann::json held(nlohmann::json request, long step, const std::string& release) {
    if (!request.contains("env"))
        request["env"] = nlohmann::json::object();
    const std::string holds = request["env"].value("TRAINDECK_HOLD_AT", std::string());
    request["env"]["TRAINDECK_HOLD_AT"] = (holds.empty() ? "" : holds + ",") + std::to_string(step) + ":" + release;
    return request;
}

inline bool is_held_at(const nlohmann::json& event, long step) {
    return event["type"] == "record" && event["data"].value("type", "") == "event" &&
           event["data"].value("event", "") == "held" && event["data"].value("step", -1L) == step;
}

inline void touch(const std::string& path) { std::ofstream(path) << "go\n"; }

// Reads the job's events until one matches; returns it (null after timeout_s, a guard against hangs, not a pace).
inline nlohmann::json wait_for_event(WorkerProcess& worker, int64_t job, const std::function<bool(const nlohmann::json&)>& match,
                                     double timeout_s = 180) {
    int64_t after = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < deadline) {
        const auto reply = worker.client().get("/v1/jobs/" + std::to_string(job) + "/events?wait_ms=1000&after=" +
                                                   std::to_string(after), 10000).json();
        if (!reply.is_object() || !reply.contains("next"))
            continue;
        for (const auto& event : reply["events"])
            if (match(event))
                return event;
        after = reply["next"].get<int64_t>();
    }
    return nullptr;
}

// The first word a job writes to `path`, once it has written it; "" after timeout_s (a guard, not a pace).
inline std::string wait_for_word(const std::string& path, double timeout_s = 60) {
    std::string word;
    for (const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
         word.empty() && std::chrono::steady_clock::now() < deadline;) {
        std::ifstream(path) >> word;
        if (word.empty())
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return word;
}

// The share of GPU `gpu` its jobs hold as /v1/resources says it (a snapshot the worker takes every second), once it
// is `expected`; the last value seen after timeout_s (a guard, not a pace).
inline double wait_for_gpu_share(WorkerProcess& worker, int gpu, double expected, double timeout_s = 30) {
    double seen = -1;
    for (const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
         std::chrono::steady_clock::now() < deadline; std::this_thread::sleep_for(std::chrono::milliseconds(50))) {
        const nlohmann::json resources = worker.client().get("/v1/resources").json();
        if (resources.is_object() && resources["gpus"].size() > static_cast<size_t>(gpu))
            seen = resources["gpus"][gpu].value("share_used", -1.0);
        if (seen == expected)
            break;
    }
    return seen;
}

// Tells a resume from a rerun. The run after the interruption reported resumed_from_step == from_step (> 0, the
// checkpoint it resumed from), and the raw metric records are the distinct steps plus exactly the steps replayed
// after that checkpoint (those the first run had reported beyond it), no more and no fewer.
inline void expect_resumed_from(const std::vector<nlohmann::json>& events, long from_step, long replayed) {
    ASSERT_GT(from_step, 0);
    std::vector<long> resumed_from;
    std::map<long, int> reports;
    long raw = 0;
    for (const auto& e : events) {
        if (e["type"] != "record")
            continue;
        const auto& d = e["data"];
        if (d.value("type", "") == "status" && d.value("state", "") == "running")
            resumed_from.push_back(d.value("resumed_from_step", -1L));
        if (d.value("type", "") == "metric") {
            ++raw;
            ++reports[d["step"].get<long>()];
        }
    }
    ASSERT_EQ(resumed_from.size(), 2u) << "expected one first run and one resumed run";
    EXPECT_EQ(resumed_from[0], 0) << "the first run started from scratch";
    EXPECT_EQ(resumed_from[1], from_step) << "the second run did not resume from the checkpoint (a rerun?)";
    EXPECT_EQ(raw, static_cast<long>(reports.size()) + replayed);
    for (const auto& [step, count] : reports)
        EXPECT_EQ(count, step > from_step && step <= from_step + replayed ? 2 : 1) << "step " << step;
}

// resources/examples/pytorch_fashion.py through Debian's PyTorch: one epoch of 2,560 samples (20 steps of 128).
inline nlohmann::json pytorch_example_job(const std::string& name) {
    return {{"name", name},
            {"argv", {"/usr/bin/python3", source_dir() + "/resources/examples/pytorch_fashion.py", "--epochs", "1", "--limit", "2560"}},
            {"resources", {{"cpus", 1}}}};
}

} // namespace traindeck::test
