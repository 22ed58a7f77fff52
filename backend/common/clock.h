#pragma once
// The two clocks, as seconds in a double: the wall clock for what is stored and shown (events, metering, the catalog)
// and the monotonic clock for durations and timeouts (a wall clock set back must not stretch a wait).
#include <chrono>

namespace traindeck {

inline double wall_seconds() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

inline double monotonic_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

} // namespace traindeck
