// JobObserver (jobobserver.h): GET /v1/jobs/ID/events?after=SEQ&wait_ms=..., one request at a time on the test's
// thread.
#include "jobobserver.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace traindeck::test {

using nlohmann::json;

void JobObserver::connect(const std::string& url, const std::string& token) {
    client_ = std::make_unique<client::WorkerClient>(url, token);
}

bool JobObserver::finished() const {
    return state_ == "succeeded" || state_ == "failed" || state_ == "cancelled" || state_ == "stopped";
}

void JobObserver::take(const json& event) {
    events_.push_back(event);
    const int64_t seq = event.value("seq", int64_t(-1));
    if (seq != after_ + 1)
        ++out_of_order_;
    after_ = std::max(after_, seq);
    const std::string type = event.value("type", "");
    if (!event.contains("data") || !event["data"].is_object())
        return;
    const json& data = event["data"];
    if (type == "record" && data.value("type", "") == "metric")
        max_step_ = std::max(max_step_, data.value("step", 0L));
    if (type == "state") {
        state_ = data.value("state", "");
        const std::string reason = data.value("reason", "");
        if (state_ == "queued" && reason.find("retry") != std::string::npos)
            ++requeues_;
        if (state_ == "queued" && reason.find("killed by signal 9; retry") != std::string::npos)
            ++kill9_retries_;
    }
    if (type == "warning" && data.value("message", "") == "worker restarted; job re-adopted")
        ++readoptions_;
}

bool JobObserver::wait_until(const std::function<bool()>& done, double timeout_s, std::string* why) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (!done()) {
        if (std::chrono::steady_clock::now() >= deadline) {
            if (why)
                *why = "after " + std::to_string(after_) + " events (max step " + std::to_string(max_step_) +
                       ", state \"" + state_ + "\")" + (last_problem_.empty() ? "" : "; last error: " + last_problem_);
            return false;
        }
        if (!client_) {
            last_problem_ = "not connected to a worker";
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            continue;
        }
        const auto response = client_->get("/v1/jobs/" + std::to_string(job_) +
                                               "/events?limit=5000&wait_ms=500&after=" + std::to_string(after_),
                                           10000);
        const json reply = response.json();
        if (!response.ok() || !reply.is_object() || !reply.contains("events") || !reply["events"].is_array()) {
            last_problem_ = response.message() + " " + response.body.substr(0, 200);
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            continue;
        }
        for (const json& event : reply["events"])
            take(event);
        if (reply["events"].empty() && reply.contains("state") && reply["state"].is_string())
            state_ = reply["state"].get<std::string>();
    }
    return true;
}

} // namespace traindeck::test
