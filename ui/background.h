#pragma once
// The one way the console does slow work (as hotspot's JobTracker): work() runs on a pool thread — the network
// pool unless told otherwise, since backend calls mostly wait — and then done(result) runs on the GUI thread, but
// only while `context` still exists. A window that closed, or a controller that was deleted, is never called back.
//
//     run_in_background(this, [ref] { return fetch(ref); }, [this](const Fetched& fetched) { show(fetched); });
//
// The answer is posted to the application object, which outlives every window, and `context` is checked there,
// on the thread that deletes it: a pool thread never touches a QObject that may be going away.
#include "networkpool.h"

#include <QCoreApplication>
#include <QPointer>
#include <QThreadPool>
#include <QtConcurrent>

#include <type_traits>
#include <utility>

namespace traindeck {

template <typename Work, typename Done>
void run_in_background(QObject* context, Work work, Done done, QThreadPool* pool = networkPool()) {
    using Result = std::invoke_result_t<Work&>;
    QPointer<QObject> guard(context);
    (void)QtConcurrent::run(pool, [guard, work = std::move(work), done = std::move(done)]() mutable {
        if constexpr (std::is_void_v<Result>) {
            work();
            QMetaObject::invokeMethod(QCoreApplication::instance(), [guard, done = std::move(done)]() mutable {
                if (guard)
                    done();
            }, Qt::QueuedConnection);
        } else {
            Result result = work();
            QMetaObject::invokeMethod(QCoreApplication::instance(), [guard, done = std::move(done), result = std::move(result)]() mutable {
                if (guard)
                    done(std::move(result));
            }, Qt::QueuedConnection);
        }
    });
}

} // namespace traindeck
