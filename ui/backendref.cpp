// BackendRef (backendref.h). The registry of states is touched on the GUI thread only; each state's own mutex is
// what pool threads take.
#include "backendref.h"

#include <QCoreApplication>
#include <QHash>

namespace traindeck {

namespace {

QHash<Backend*, std::shared_ptr<void>>& registry() {
    static QHash<Backend*, std::shared_ptr<void>> states;
    return states;
}

} // namespace

BackendRef BackendRef::of(Backend* backend) {
    BackendRef ref;
    if (!backend)
        return ref;
    auto& states = registry();
    if (auto it = states.find(backend); it != states.end()) {
        ref.state_ = std::static_pointer_cast<State>(it.value());
        return ref;
    }
    ref.state_ = std::make_shared<State>();
    ref.state_->backend = backend;
    states.insert(backend, ref.state_);
    // A backend deleted without retire() (a caller that forgot) at least gives no new uses from then on.
    QObject::connect(backend, &QObject::destroyed, [backend] {
        if (auto it = registry().find(backend); it != registry().end()) {
            auto state = std::static_pointer_cast<State>(it.value());
            std::lock_guard lock(state->mutex);
            state->backend = nullptr;
            registry().erase(it);
        }
    });
    // Quitting retires every backend, whoever owns it: none is called after the event loop ends.
    static const bool hooked = [] {
        if (QCoreApplication::instance())
            QObject::connect(QCoreApplication::instance(), &QCoreApplication::aboutToQuit, [] {
                for (Backend* known : registry().keys())
                    retire(known);
            });
        return true;
    }();
    Q_UNUSED(hooked);
    return ref;
}

void BackendRef::retire(Backend* backend) {
    auto it = registry().find(backend);
    if (it == registry().end())
        return; // never handed to a task
    // The entry stays (emptied) until the backend is destroyed: a task made after this gets no use either.
    auto state = std::static_pointer_cast<State>(it.value());
    {
        std::lock_guard lock(state->mutex);
        if (!state->backend)
            return; // retired already
        state->backend = nullptr; // no new uses
    }
    // Requests under way end now (a backend whose shutdown() does nothing lets them run to their own timeouts).
    backend->shutdown();
    std::unique_lock lock(state->mutex);
    state->released.wait(lock, [&] { return state->users == 0; });
}

BackendRef::Use::Use(std::shared_ptr<State> state) : state_(std::move(state)) {
    if (!state_)
        return;
    std::lock_guard lock(state_->mutex);
    backend_ = state_->backend;
    if (backend_)
        ++state_->users;
}

BackendRef::Use::~Use() {
    if (!backend_)
        return;
    {
        std::lock_guard lock(state_->mutex);
        --state_->users;
    }
    state_->released.notify_all();
}

} // namespace traindeck
