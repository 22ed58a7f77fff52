#pragma once
// The HTTP server's threads: cpp-httplib gives each connection a thread for as long as it lives, so a fixed pool is
// a fixed number of connections; an idle, slow or hostile client holding that many starves /v1/health and every
// submit behind it. This pool starts a thread whenever every thread is busy (up to max_threads) and lets threads
// beyond min_threads go after a while idle, so a connection that waits never makes another one wait.
#include <httplib.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>

namespace traindeck::worker {

class ElasticThreadPool : public httplib::TaskQueue {
public:
    ElasticThreadPool(size_t min_threads, size_t max_threads);
    ~ElasticThreadPool() override;

    void enqueue(std::function<void()> task) override;
    void shutdown() override; // runs what is queued, then waits for every thread to end

    size_t threads() const;

private:
    void start_thread(); // mutex_ held
    void work();

    const size_t min_threads_, max_threads_;
    mutable std::mutex mutex_;
    std::condition_variable task_ready_, thread_ended_;
    std::deque<std::function<void()>> tasks_;
    size_t threads_ = 0, idle_ = 0;
    bool shutting_down_ = false;
};

} // namespace traindeck::worker
