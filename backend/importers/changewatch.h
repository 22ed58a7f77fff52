#pragma once
// Being told that something under a followed path changed, as soon as it does (Linux inotify), so that a followed
// import looks at once instead of at its next look (traindeck-cli import --follow, the console's "Keep following").
// Every folder under a followed folder is watched (folders made later too); a followed file, or a path not there yet,
// through its folder alone. A followed folder that goes and comes back is watched again. It only wakes the follower
// sooner: the follower still looks at its interval, since some file systems (NFS, FUSE) tell inotify nothing of
// another machine's writes, and a watch can be refused (fs.inotify.max_user_watches), which take_problem() says.
// Plain C++, no Qt.
#include <chrono>
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

    // Waits up to timeout_ms for a change under any of the paths; true when one came (all that came is taken),
    // false at the timeout or on a signal. A change that comes sooner than min_gap_ms after the last one told is
    // held back until then: a tree written without a pause (a log beside the event files, the catalog itself) would
    // otherwise be read again back to back. Without inotify it just sleeps.
    bool wait(int timeout_ms, int min_gap_ms = 20);

    // What could not be watched since the last call ("" when nothing): no inotify, a folder refused.
    std::string take_problem();

private:
    struct Root {
        std::string path;
        int wd = -1; // a followed folder's own watch; -1 for a file (watched through its folder) or a folder not there
    };
    struct Folder {
        std::string path;
        bool recursive = false; // under a followed folder: folders made in it are watched too
    };
    void watch_root(Root& root);
    int add(const std::string& folder, bool recursive);
    int add_tree(const std::string& folder); // the folder's watch, or -1
    bool drain();                            // takes what came; true when anything did

    int fd_ = -1;
    std::vector<Root> roots_;
    std::unordered_map<int, Folder> folders_; // by watch descriptor
    std::string problem_;
    std::chrono::steady_clock::time_point last_told_;
};

} // namespace traindeck::importers
