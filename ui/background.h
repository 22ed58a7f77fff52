#pragma once
// The one way the console does slow work (as hotspot's JobTracker): work() runs on a pool thread — the network
// pool unless told otherwise, since backend calls mostly wait — and then done(result) runs on the GUI thread, but
// only while `context` still exists. A window that closed, or a controller that was deleted, is never called back.
//
//     run_in_background(this, [ref] { return fetch(ref); }, [this](const Fetched& fetched) { show(fetched); });
//
// The answer is posted to the application object, which outlives every window, and `context` is checked there,
// on the thread that deletes it: a pool thread never touches a QObject that may be going away.
//
// Two variants of the same thing:
// - with `dropped(result)` after done: it runs on the GUI thread instead of done when the context is gone, for a
//   result that owns something someone must let go of (a probe backend made for a dialog that closed meanwhile);
// - run_in_background_reporting(context, work(report), progress, done): work may call report(args...) as often as
//   it likes; each call runs progress(args...) on the GUI thread while the context lives, in order and before done
//   (hashing and upload progress).
#include "networkpool.h"

#include <QCoreApplication>
#include <QPointer>
#include <QThreadPool>
#include <QtConcurrent>

#include <concepts>
#include <memory>
#include <type_traits>
#include <utility>

namespace traindeck {

// What may be given as `dropped` for a work whose result is Result (nothing for a work that returns nothing).
template <typename Hook, typename Result>
concept DropHook = (std::is_void_v<Result> && std::invocable<Hook&>) ||
                   (!std::is_void_v<Result> && std::invocable<Hook&, Result&&>);

template <typename Work, typename Done, typename Dropped>
requires DropHook<Dropped, std::invoke_result_t<Work&>>
void run_in_background(QObject* context, Work work, Done done, Dropped dropped, QThreadPool* pool = networkPool()) {
    using Result = std::invoke_result_t<Work&>;
    QPointer<QObject> guard(context);
    (void)QtConcurrent::run(pool, [guard, work = std::move(work), done = std::move(done),
                                   dropped = std::move(dropped)]() mutable {
        if constexpr (std::is_void_v<Result>) {
            work();
            QMetaObject::invokeMethod(
                QCoreApplication::instance(),
                [guard, done = std::move(done), dropped = std::move(dropped)]() mutable {
                    if (guard)
                        done();
                    else
                        dropped();
                },
                Qt::QueuedConnection);
        } else {
            Result result = work();
            QMetaObject::invokeMethod(
                QCoreApplication::instance(),
                [guard, done = std::move(done), dropped = std::move(dropped), result = std::move(result)]() mutable {
                    if (guard)
                        done(std::move(result));
                    else
                        dropped(std::move(result));
                },
                Qt::QueuedConnection);
        }
    });
}

template <typename Work, typename Done>
void run_in_background(QObject* context, Work work, Done done, QThreadPool* pool = networkPool()) {
    run_in_background(
        context, std::move(work), std::move(done), [](auto&&...) {}, pool);
}

// What work() of run_in_background_reporting() is handed: report(args...) from any thread runs progress(args...)
// on the GUI thread while the context lives (the arguments are copied).
template <typename Progress>
class BackgroundReport {
public:
    BackgroundReport(QPointer<QObject> guard, Progress progress)
        : guard_(std::move(guard)), progress_(std::make_shared<Progress>(std::move(progress))) {}

    template <typename... Args>
    void operator()(Args&&... args) const {
        QMetaObject::invokeMethod(
            QCoreApplication::instance(),
            [guard = guard_, progress = progress_, ... args = std::decay_t<Args>(std::forward<Args>(args))]() {
                if (guard)
                    (*progress)(args...);
            },
            Qt::QueuedConnection);
    }

private:
    QPointer<QObject> guard_;
    std::shared_ptr<Progress> progress_; // shared by the copies of this report: one progress, made on the GUI thread
};

template <typename Work, typename Progress, typename Done>
void run_in_background_reporting(QObject* context, Work work, Progress progress, Done done,
                                 QThreadPool* pool = networkPool()) {
    BackgroundReport<Progress> report(QPointer<QObject>(context), std::move(progress));
    run_in_background(
        context, [work = std::move(work), report]() mutable { return work(std::as_const(report)); }, std::move(done),
        pool);
}

} // namespace traindeck
