#pragma once
// What the console's unit tests share: an event loop to wait in (unitmain.cpp makes the QCoreApplication), never
// for a guessed time, only until what the test waits for happened (or a generous limit passed).
#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QThread>

#include <functional>

namespace traindeck::test {

// Runs the GUI thread's events until `done` holds; false when it still does not after `limit_ms`.
inline bool process_until(const std::function<bool()>& done, int limit_ms = 20000) {
    QDeadlineTimer deadline(limit_ms);
    while (!done()) {
        if (deadline.hasExpired())
            return false;
        QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
        QThread::msleep(1);
    }
    return true;
}

// Lets widgets finish what they posted: layouts (a chart lays out its axes and legend in posted events), and Qt
// Charts' deletion of replaced axes (deleteLater, which processEvents alone leaves for the event loop). No waiting:
// what is posted is run, then it is done.
inline void settle() {
    QCoreApplication::processEvents();
    QCoreApplication::sendPostedEvents(nullptr, QEvent::DeferredDelete);
    QCoreApplication::processEvents();
}

} // namespace traindeck::test
