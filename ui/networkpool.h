#pragma once
// The thread pool every call to a backend runs on (run_in_background's default, background.h). Such calls mostly wait
// on the network; on Qt's global pool (one thread per core) two calls to a worker that answers after 10 s would
// hold up every preview, hash and thumbnail queued behind them. The GUI thread never makes these calls itself.
#include <QThreadPool>

namespace traindeck {

QThreadPool* networkPool();

} // namespace traindeck
