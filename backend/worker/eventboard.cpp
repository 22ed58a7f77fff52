// The event board: one map of last committed seqs under one mutex, one condition variable for every waiter.
#include "eventboard.h"

#include <chrono>

namespace traindeck::worker {

void EventBoard::publish(int64_t job, int64_t last_seq, bool finished) {
    {
        std::lock_guard lock(mutex_);
        jobs_[job] = {last_seq, finished};
    }
    changed_.notify_all();
}

int64_t EventBoard::wait(int64_t job, int64_t after, int timeout_ms) {
    std::unique_lock lock(mutex_);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    changed_.wait_until(lock, deadline, [&] {
        const auto it = jobs_.find(job);
        return it != jobs_.end() && (it->second.first > after || it->second.second);
    });
    const auto it = jobs_.find(job);
    return it == jobs_.end() ? 0 : it->second.first;
}

std::vector<int64_t> EventBoard::wait_any(const std::map<int64_t, int64_t>& after, int timeout_ms) {
    std::vector<int64_t> ready;
    const auto collect = [&] {
        ready.clear();
        for (const auto& [job, seq] : after)
            if (const auto it = jobs_.find(job); it != jobs_.end() && (it->second.first > seq || it->second.second))
                ready.push_back(job);
        return !ready.empty();
    };
    std::unique_lock lock(mutex_);
    changed_.wait_until(lock, std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms), collect);
    return ready;
}

std::vector<std::optional<std::pair<int64_t, bool>>> EventBoard::known(const std::map<int64_t, int64_t>& after) {
    std::vector<std::optional<std::pair<int64_t, bool>>> entries;
    entries.reserve(after.size());
    std::lock_guard lock(mutex_);
    for (const auto& [job, seq] : after)
        if (const auto it = jobs_.find(job); it != jobs_.end())
            entries.emplace_back(it->second);
        else
            entries.emplace_back();
    return entries;
}

} // namespace traindeck::worker
