#include "parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include <immintrin.h>

namespace traindeck::engine {
namespace {

// A loop started from inside a pool thread runs inline: the pool cannot wait on itself.
thread_local bool t_inside_pool = false;

// Workers spin briefly after each loop (a training step starts the next loop within microseconds), then
// sleep on a condition variable, so an idle trainer costs no CPU. Waking a sleeping thread costs a futex
// call, which under this sandbox is tens of microseconds: too much to pay twenty times per step.
constexpr auto kSpinTime = std::chrono::microseconds(200);

class Pool {
public:
    ~Pool() { resize(1); }

    void resize(int threads) {
        {
            std::lock_guard lock(mutex_);
            stop_ = true;
            generation_.fetch_add(1);
        }
        wake_.notify_all();
        for (auto& worker : workers_)
            worker.join();
        workers_.clear();
        stop_ = false;
        threads_ = std::max(1, threads);
        // Workers start from the generation as it is now: one that starts late must still see a later change
        // (a stop right after start-up) as a change, not as its starting point.
        const uint64_t start_generation = generation_.load();
        for (int index = 1; index < threads_; ++index)
            workers_.emplace_back([this, index, start_generation] { run(index, start_generation); });
    }

    int threads() const { return threads_; }

    void run_all(size_t count, const std::function<void(size_t, size_t)>& body) {
        body_ = &body;
        count_ = count;
        pending_.store(threads_ - 1);
        {
            std::lock_guard lock(mutex_);
            generation_.fetch_add(1, std::memory_order_release);
        }
        wake_.notify_all();
        run_share(0, count, body);
        while (pending_.load(std::memory_order_acquire) != 0)
            _mm_pause();
        body_ = nullptr;
    }

private:
    void run_share(int index, size_t count, const std::function<void(size_t, size_t)>& body) const {
        const size_t begin = count * index / threads_, end = count * (index + 1) / threads_;
        if (begin < end)
            body(begin, end);
    }

    void run(int index, uint64_t seen) {
        t_inside_pool = true;
        for (;;) {
            const auto spin_until = std::chrono::steady_clock::now() + kSpinTime;
            while (generation_.load(std::memory_order_acquire) == seen && std::chrono::steady_clock::now() < spin_until)
                for (int i = 0; i < 64; ++i)
                    _mm_pause();
            if (generation_.load(std::memory_order_acquire) == seen) {
                std::unique_lock lock(mutex_);
                wake_.wait(lock, [&] { return generation_.load() != seen; });
            }
            seen = generation_.load(std::memory_order_acquire);
            if (stop_)
                return;
            run_share(index, count_, *body_);
            pending_.fetch_sub(1, std::memory_order_acq_rel);
        }
    }

    std::mutex mutex_;
    std::condition_variable wake_;
    std::vector<std::thread> workers_;
    const std::function<void(size_t, size_t)>* body_ = nullptr;
    size_t count_ = 0;
    std::atomic<int> pending_{0};
    std::atomic<uint64_t> generation_{0};
    int threads_ = 1;
    std::atomic<bool> stop_{false};
};

Pool& pool() {
    static Pool instance;
    return instance;
}

} // namespace

void set_parallel_threads(int threads) { pool().resize(threads); }

int parallel_threads() { return pool().threads(); }

void parallel_for(size_t count, const std::function<void(size_t, size_t)>& body, size_t min_per_thread) {
    if (t_inside_pool || pool().threads() == 1 || count < 2 * std::max<size_t>(1, min_per_thread)) {
        if (count > 0)
            body(0, count);
        return;
    }
    pool().run_all(count, body);
}

} // namespace traindeck::engine
