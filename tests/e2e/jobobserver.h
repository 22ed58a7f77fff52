#pragma once
// The chaos test's own eyes on one job: it long-polls the worker's events of the job after the last seq it has,
// across worker restarts (connect() again with the new process), keeps every event, and counts what the kills are
// expected to cause. The test decides when to kill from what this has seen, never from a clock.
#include "workerclient.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace traindeck::test {

class JobObserver {
public:
    explicit JobObserver(int64_t job) : job_(job) {}

    void connect(const std::string& url, const std::string& token);
    void disconnect() { client_.reset(); } // the worker is gone; a request to it would only wait

    // Reads events until done() holds (it is asked before the first read and after every batch). False after
    // timeout_s: a guard against a hang, not a pace; *why then says what was last seen.
    bool wait_until(const std::function<bool()>& done, double timeout_s, std::string* why);

    const std::vector<nlohmann::json>& events() const { return events_; }
    int64_t last_seq() const { return after_; }
    long max_step() const { return max_step_; }          // the highest metric step any run reported
    int kill9_retries() const { return kill9_retries_; } // state events "killed by signal 9; retry N of M"
    int requeues() const { return requeues_; }           // every return to the queue, whatever the reason
    int readoptions() const { return readoptions_; }     // "worker restarted; job re-adopted" warnings
    int out_of_order() const { return out_of_order_; }   // events whose seq was not the one after the last
    const std::string& state() const { return state_; }
    bool finished() const;

private:
    void take(const nlohmann::json& event);

    int64_t job_;
    std::unique_ptr<client::WorkerClient> client_;
    std::vector<nlohmann::json> events_;
    int64_t after_ = 0;
    long max_step_ = 0;
    int kill9_retries_ = 0, requeues_ = 0, readoptions_ = 0, out_of_order_ = 0;
    std::string state_, last_problem_;
};

} // namespace traindeck::test
