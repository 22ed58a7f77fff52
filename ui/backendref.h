#pragma once
// How a task on a pool thread holds the backend it calls, so that the GUI thread can let go of a backend (close a
// worker, quit) while calls are under way without any task calling a deleted object:
//
//     const BackendRef ref = BackendRef::of(backend);                  // GUI thread, when the task is made
//     run_in_background(this, [ref] {                                  // background.h
//         QString error;
//         const BackendRef::Use backend = ref.use();                   // empty once the backend is retired
//         return backend ? backend->resources(&error) : QJsonObject();
//     }, [this](const QJsonObject& resources) { show(resources); });
//
// BackendRef::retire(backend) — GUI thread, before the backend is deleted (and for every backend when the
// application quits) — stops new uses, asks the backend to end its requests under way (Backend::shutdown(); a
// WorkerBackend's end within 50 ms), and waits for the uses still held, which therefore end at once. Then deleting it
// is safe.
#include "backend.h"

#include <condition_variable>
#include <memory>
#include <mutex>

namespace traindeck {

class BackendRef {
    struct State;

public:
    BackendRef() = default;
    static BackendRef of(Backend* backend);
    static void retire(Backend* backend);

    class Use {
    public:
        Use() = default;
        explicit Use(std::shared_ptr<State> state);
        ~Use();
        Use(Use&& other) noexcept : state_(std::move(other.state_)), backend_(std::exchange(other.backend_, nullptr)) {}
        Use(const Use&) = delete;
        Use& operator=(const Use&) = delete;
        Use& operator=(Use&&) = delete;
        explicit operator bool() const { return backend_ != nullptr; }
        Backend* operator->() const { return backend_; }
        Backend& operator*() const { return *backend_; }

    private:
        std::shared_ptr<State> state_;
        Backend* backend_ = nullptr;
    };
    // Any thread: the backend for the length of one piece of work, or an empty Use when it is retired.
    Use use() const { return Use(state_); }

private:
    struct State {
        std::mutex mutex;
        std::condition_variable released;
        Backend* backend = nullptr;
        int users = 0;
    };
    std::shared_ptr<State> state_;
};

} // namespace traindeck
