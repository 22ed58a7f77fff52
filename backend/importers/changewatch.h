#pragma once
// Being told that something under a followed path changed, as soon as it does (Linux inotify), so that a followed
// import looks at once instead of at its next look (traindeck-cli import --follow, the console's "Keep following").
// Every folder under the path is watched (folders made later too); a file is watched through its folder. It only
// wakes the follower sooner: the follower still looks at its interval, since some file systems (NFS, FUSE, a bind
// of another machine's disk) tell inotify nothing of another machine's writes, and a watch can fail (the user's
// fs.inotify.max_user_watches reached), which `problem()` says. Plain C++, no Qt.
#include <string>
#include <unordered_map>
#include <vector>

namespace traindeck::importers {

class ChangeWatch {
public:
    explicit ChangeWatch(const std::vector<std::string>& paths);
    ~ChangeWatch();
    ChangeWatch(const ChangeWatch&) = delete;
    ChangeWatch& operator=(const ChangeWatch&) = delete;

    // Waits up to timeout_ms for a change under any of the paths; true when one came (all that came is taken), false at
    // the timeout or on a signal. Without a watch it just sleeps.
    bool wait(int timeout_ms);

    // Why changes are not told (no inotify, a watch refused); "" when they are.
    const std::string& problem() const { return problem_; }

private:
    void add(const std::string& folder);
    void add_tree(const std::string& folder);

    int fd_ = -1;
    std::unordered_map<int, std::string> folders_; // watch descriptor -> folder
    std::string problem_;
};

} // namespace traindeck::importers
