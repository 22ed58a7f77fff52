// See networkpool.h. Threads are cheap here: they wait on sockets. The pool is never destroyed, so leaving the
// console never waits for it; a backend being destroyed ends its own requests within 50 ms (WorkerBackend).
#include "networkpool.h"

namespace traindeck {

QThreadPool* networkPool() {
    static QThreadPool* pool = [] {
        auto* p = new QThreadPool;
        p->setMaxThreadCount(32);
        p->setObjectName(QStringLiteral("traindeck-network"));
        return p;
    }();
    return pool;
}

} // namespace traindeck
