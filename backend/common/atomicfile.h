#pragma once
// Files that are whole or absent: written to a temp file beside the target, fsynced, renamed over it, and the folder
// fsynced so the rename itself survives a power cut. A reader (or a restarted process) never sees half a file; a
// failed write (full disk, killed process) leaves the previous file as it was and no temp file behind.
// The one writer of the engine's checkpoints and exports, the dataset store and the worker's job files.
#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace traindeck {

class AtomicFile {
public:
    // Creates the temp file (a unique name beside path, so two writers never share one) with the given mode.
    // temp_folder (on the same file system) holds it instead where a folder's readers must never see one, even
    // after a kill -9 (the dataset store's chunk folders; its tmp/ is emptied at start).
    explicit AtomicFile(std::string path, mode_t mode = 0644, const std::string& temp_folder = {});
    ~AtomicFile(); // not committed: the temp file is removed and path is untouched
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;

    // False once anything failed; error_number() says what.
    bool ok() const { return error_number_ == 0; }
    int error_number() const { return error_number_; }
    const std::string& path() const { return path_; }

    bool write(const void* data, size_t size); // all of it, across short writes and EINTR
    bool write(std::string_view bytes) { return write(bytes.data(), bytes.size()); }
    // fsync, rename over path, fsync the folder. 0, or the errno of the first thing that failed (then path is as it
    // was before).
    int commit();

private:
    std::string path_;
    std::string temp_;
    int fd_ = -1;
    int error_number_ = 0;
    bool committed_ = false;
};

// The whole file in one call. 0, or the errno of what failed (ENOSPC, EDQUOT, EACCES, ...).
int write_file_atomically(const std::string& path, std::string_view bytes, mode_t mode = 0644);

// The same with the message a caller shows ("<path>: cannot write: No space left on device (is the disk full?)").
bool write_file_atomically(const std::string& path, std::string_view bytes, mode_t mode, std::string& error);

// fsync of a folder, after a rename or unlink in it. Best effort: some file systems do not support it.
void fsync_folder(const std::string& folder);

// The other way: at most `limit` bytes of a file into `bytes` (only what the file holds is allocated). False when it
// cannot be opened or read. follow_links false: a symbolic link is not followed (a file of a user's tree that may
// point anywhere).
bool read_file_upto(const std::string& path, size_t limit, std::string& bytes, bool follow_links = true);

} // namespace traindeck
