#include "parallel.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace traindeck::engine {
namespace {

// A loop started from inside a pool thread runs inline: the pool cannot wait on itself.
thread_local bool t_inside_pool = false;

class Pool {
public:
    ~Pool() { resize(1); }

    void resize(int threads) {
        std::unique_lock lock(mutex_);
        stop_ = true;
        ++generation_;
        wake_.notify_all();
        lock.unlock();
        for (auto& worker : workers_)
            worker.join();
        workers_.clear();
        lock.lock();
        stop_ = false;
        threads_ = std::max(1, threads);
        for (int index = 1; index < threads_; ++index)
            workers_.emplace_back([this, index] { run(index); });
    }

    int threads() const { return threads_; }

    void run_all(size_t count, const std::function<void(size_t, size_t)>& body) {
        std::unique_lock lock(mutex_);
        body_ = &body;
        count_ = count;
        pending_ = threads_ - 1;
        ++generation_;
        wake_.notify_all();
        lock.unlock();
        run_share(0, count, body);
        lock.lock();
        done_.wait(lock, [this] { return pending_ == 0; });
        body_ = nullptr;
    }

private:
    void run_share(int index, size_t count, const std::function<void(size_t, size_t)>& body) const {
        const size_t begin = count * index / threads_, end = count * (index + 1) / threads_;
        if (begin < end)
            body(begin, end);
    }

    void run(int index) {
        t_inside_pool = true;
        uint64_t seen = 0;
        std::unique_lock lock(mutex_);
        seen = generation_;
        for (;;) {
            wake_.wait(lock, [&] { return generation_ != seen; });
            seen = generation_;
            if (stop_)
                return;
            const auto* body = body_;
            const size_t count = count_;
            lock.unlock();
            run_share(index, count, *body);
            lock.lock();
            if (--pending_ == 0)
                done_.notify_one();
        }
    }

    std::mutex mutex_;
    std::condition_variable wake_, done_;
    std::vector<std::thread> workers_;
    const std::function<void(size_t, size_t)>* body_ = nullptr;
    size_t count_ = 0;
    int pending_ = 0;
    int threads_ = 1;
    uint64_t generation_ = 0;
    bool stop_ = false;
};

Pool& pool() {
    static Pool instance;
    return instance;
}

} // namespace

void set_parallel_threads(int threads) {
    pool().resize(threads);
}

int parallel_threads() {
    return pool().threads();
}

void parallel_for(size_t count, const std::function<void(size_t, size_t)>& body, size_t min_per_thread) {
    if (t_inside_pool || pool().threads() == 1 || count < 2 * std::max<size_t>(1, min_per_thread)) {
        if (count > 0)
            body(0, count);
        return;
    }
    pool().run_all(count, body);
}

} // namespace traindeck::engine
