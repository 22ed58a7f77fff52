#include "elasticthreadpool.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace traindeck::worker {

namespace {
// How long a thread beyond the minimum waits for work before it ends.
constexpr auto kIdleLifetime = std::chrono::seconds(30);
} // namespace

ElasticThreadPool::ElasticThreadPool(size_t min_threads, size_t max_threads)
    : min_threads_(min_threads), max_threads_(std::max(min_threads, max_threads)) {
    std::lock_guard lock(mutex_);
    for (size_t i = 0; i < min_threads_; ++i)
        start_thread();
}

ElasticThreadPool::~ElasticThreadPool() { shutdown(); }

void ElasticThreadPool::start_thread() {
    ++threads_;
    // Detached: a thread that ends on its own has nobody to join it; shutdown() waits on the count instead.
    std::thread([this] { work(); }).detach();
}

void ElasticThreadPool::enqueue(std::function<void()> task) {
    {
        std::lock_guard lock(mutex_);
        tasks_.push_back(std::move(task));
        // Every queued task needs an idle thread; past max_threads tasks wait for one (the last line of defence).
        if (idle_ < tasks_.size() && threads_ < max_threads_)
            start_thread();
    }
    task_ready_.notify_one();
}

void ElasticThreadPool::work() {
    std::unique_lock lock(mutex_);
    for (;;) {
        ++idle_;
        const bool woken = task_ready_.wait_for(lock, kIdleLifetime, [&] { return shutting_down_ || !tasks_.empty(); });
        --idle_;
        if (tasks_.empty() && (shutting_down_ || (!woken && threads_ > min_threads_)))
            break;
        if (tasks_.empty())
            continue;
        auto task = std::move(tasks_.front());
        tasks_.pop_front();
        lock.unlock();
        task();
        lock.lock();
    }
    --threads_;
    thread_ended_.notify_all();
}

void ElasticThreadPool::shutdown() {
    std::unique_lock lock(mutex_);
    shutting_down_ = true;
    task_ready_.notify_all();
    thread_ended_.wait(lock, [&] { return threads_ == 0; });
}

size_t ElasticThreadPool::threads() const {
    std::lock_guard lock(mutex_);
    return threads_;
}

} // namespace traindeck::worker
