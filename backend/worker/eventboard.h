#pragma once
// Where committed event sequence numbers are announced to long-polling readers: the supervisor publishes after
// each commit, HTTP threads wait here instead of polling the database.
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace traindeck::worker {

class EventBoard {
public:
    void publish(int64_t job, int64_t last_seq, bool finished);
    // Waits until job has an event after `after`, the job is finished, or the timeout; returns the last seq.
    int64_t wait(int64_t job, int64_t after, int timeout_ms);
    // The same for many jobs at once (one watcher, one request, one thread): waits until any of them has an event
    // after its `after` or is finished; returns the jobs that do.
    std::vector<int64_t> wait_any(const std::map<int64_t, int64_t>& after, int timeout_ms);

    // What the board knows of each job in `after`, in its order: (last seq, finished), or nothing for a job that has
    // published nothing since the worker started (its row says). One lock for all of them: a watch of 1,000 jobs
    // asked the database for each job's row at every request.
    std::vector<std::optional<std::pair<int64_t, bool>>> known(const std::map<int64_t, int64_t>& after);

private:
    std::mutex mutex_;
    std::condition_variable changed_;
    std::map<int64_t, std::pair<int64_t, bool>> jobs_;
};

} // namespace traindeck::worker
