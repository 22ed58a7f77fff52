#include "changewatch.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <thread>
#include <utility>

#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

namespace traindeck::importers {

namespace {

// What a writer does to a logdir: appends (modify), new files and folders, renames into place, removal; a followed
// folder itself moved away.
constexpr uint32_t kEvents = IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE |
                             IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF;

} // namespace

ChangeWatch::ChangeWatch(const std::vector<std::string>& paths) {
    fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd_ < 0) {
        problem_ = std::string("inotify is not available (") + std::strerror(errno) + ")";
        return;
    }
    for (const std::string& path : paths) {
        std::error_code ec;
        roots_.push_back({std::filesystem::absolute(path, ec).lexically_normal().string()});
        watch_root(roots_.back());
    }
}

ChangeWatch::~ChangeWatch() {
    if (fd_ >= 0)
        ::close(fd_);
}

std::string ChangeWatch::take_problem() { return std::exchange(problem_, std::string()); }

int ChangeWatch::add(const std::string& folder, bool recursive) {
    const int wd = ::inotify_add_watch(fd_, folder.c_str(), kEvents | IN_ONLYDIR);
    if (wd >= 0) {
        Folder& known = folders_[wd];
        known.path = folder;
        known.recursive = known.recursive || recursive;
    } else if (errno != ENOENT && errno != ENOTDIR) {
        problem_ += (problem_.empty() ? "" : "; ") + std::string("cannot watch ") + folder + " (" +
                    std::strerror(errno) + (errno == ENOSPC ? ": fs.inotify.max_user_watches reached" : "") +
                    "): changes there are seen at the next look";
    }
    return wd;
}

int ChangeWatch::add_tree(const std::string& folder) {
    namespace fs = std::filesystem;
    const int wd = add(folder, true);
    std::error_code ec;
    for (fs::recursive_directory_iterator it(folder, fs::directory_options::skip_permission_denied, ec), end;
         !ec && it != end; it.increment(ec)) {
        std::error_code type_error;
        if (it->is_directory(type_error) && !it->is_symlink(type_error))
            add(it->path().string(), true);
    }
    return wd;
}

void ChangeWatch::watch_root(Root& root) {
    std::error_code ec;
    if (std::filesystem::is_directory(root.path, ec)) {
        root.wd = add_tree(root.path);
    } else {
        // A file, or a path not there yet: its folder alone (not the folders beside it); wait() looks again for a
        // folder there.
        add(std::filesystem::path(root.path).parent_path().string(), false);
        root.wd = -1;
    }
}

bool ChangeWatch::drain() {
    alignas(inotify_event) char buffer[16384];
    bool changed = false, overflowed = false;
    for (;;) {
        const ssize_t got = ::read(fd_, buffer, sizeof buffer);
        if (got <= 0)
            break;
        changed = true;
        for (ssize_t at = 0; at < got;) {
            const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
            at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
            if (event->mask & IN_Q_OVERFLOW) {
                overflowed = true; // folders made meanwhile may not be watched: walk the roots again below
                continue;
            }
            const auto folder = folders_.find(event->wd);
            if (folder == folders_.end())
                continue;
            if ((event->mask & IN_ISDIR) && (event->mask & (IN_CREATE | IN_MOVED_TO)) && event->len > 0 &&
                folder->second.recursive) {
                add_tree(folder->second.path + "/" + event->name);
                continue;
            }
            if (event->mask & IN_MOVE_SELF) {
                // A followed folder moved away is not followed where it went (its path is: watched again when a
                // folder is there). A folder under it moved within the tree keeps its watch (the move's IN_MOVED_TO
                // named it anew); one moved out of it wakes the follower for nothing, harmlessly.
                for (Root& root : roots_)
                    if (root.wd == event->wd) {
                        root.wd = -1;
                        ::inotify_rm_watch(fd_, event->wd); // its IN_IGNORED follows
                    }
            }
            if (event->mask & IN_IGNORED) {
                for (Root& root : roots_)
                    if (root.wd == event->wd)
                        root.wd = -1;
                folders_.erase(folder);
            }
        }
    }
    if (overflowed)
        for (Root& root : roots_)
            watch_root(root);
    return changed;
}

bool ChangeWatch::wait(int timeout_ms, int min_gap_ms) {
    if (fd_ < 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
        return false;
    }
    // A followed folder that came (back) is watched (and what it holds now is news).
    bool returned = false;
    for (Root& root : roots_) {
        std::error_code ec;
        if (root.wd >= 0 || !std::filesystem::is_directory(root.path, ec))
            continue;
        watch_root(root);
        returned = returned || root.wd >= 0;
    }
    pollfd waiting{fd_, POLLIN, 0};
    if (!returned && ::poll(&waiting, 1, timeout_ms) <= 0)
        return false;
    if (!drain() && !returned)
        return false;
    const auto gap = std::chrono::steady_clock::now() - last_told_;
    if (gap < std::chrono::milliseconds(min_gap_ms)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(min_gap_ms) - gap);
        drain();
    }
    last_told_ = std::chrono::steady_clock::now();
    return true;
}

} // namespace traindeck::importers
