#include "changewatch.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

namespace traindeck::importers {

namespace {

// What a writer does to a logdir: appends (modify), new files and folders, renames into place, removal.
constexpr uint32_t kEvents =
    IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_ATTRIB | IN_DELETE_SELF;

} // namespace

ChangeWatch::ChangeWatch(const std::vector<std::string>& paths) {
    fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd_ < 0) {
        problem_ = std::string("inotify is not available (") + std::strerror(errno) + ")";
        return;
    }
    for (const std::string& path : paths) {
        std::error_code ec;
        const std::filesystem::path p = std::filesystem::absolute(path, ec);
        if (std::filesystem::is_directory(p, ec))
            add_tree(p.string());
        else
            add(p.parent_path().string()); // a file: its folder alone
    }
}

ChangeWatch::~ChangeWatch() {
    if (fd_ >= 0)
        ::close(fd_);
}

void ChangeWatch::add(const std::string& folder) {
    const int wd = ::inotify_add_watch(fd_, folder.c_str(), kEvents | IN_ONLYDIR);
    if (wd >= 0)
        folders_[wd] = folder;
    else if (problem_.empty() && errno != ENOENT)
        problem_ = "cannot watch " + folder + " (" + std::strerror(errno) +
                   (errno == ENOSPC ? ": fs.inotify.max_user_watches reached" : "") + ")";
}

void ChangeWatch::add_tree(const std::string& folder) {
    namespace fs = std::filesystem;
    add(folder);
    std::error_code ec;
    for (fs::recursive_directory_iterator it(folder, fs::directory_options::skip_permission_denied, ec), end;
         !ec && it != end; it.increment(ec)) {
        std::error_code type_error;
        if (it->is_directory(type_error) && !it->is_symlink(type_error))
            add(it->path().string());
    }
}

bool ChangeWatch::wait(int timeout_ms) {
    if (fd_ < 0 || folders_.empty()) {
        ::usleep(static_cast<useconds_t>(timeout_ms) * 1000);
        return false;
    }
    pollfd waiting{fd_, POLLIN, 0};
    if (::poll(&waiting, 1, timeout_ms) <= 0)
        return false;
    // Take everything that came; a new folder is watched (with what is already in it).
    alignas(inotify_event) char buffer[16384];
    bool changed = false;
    for (;;) {
        const ssize_t got = ::read(fd_, buffer, sizeof buffer);
        if (got <= 0)
            break;
        changed = true;
        for (ssize_t at = 0; at < got;) {
            const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
            if ((event->mask & IN_ISDIR) && (event->mask & (IN_CREATE | IN_MOVED_TO)) && event->len > 0) {
                const auto folder = folders_.find(event->wd);
                if (folder != folders_.end())
                    add_tree(folder->second + "/" + event->name);
            }
            if (event->mask & IN_IGNORED)
                folders_.erase(event->wd);
            at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
        }
    }
    return changed;
}

} // namespace traindeck::importers
