#include "sourcefollower.h"

#include <filesystem>
#include <optional>
#include <set>
#include <system_error>

namespace traindeck::importers {

namespace {

// What the files under path hold together (for bytes_read of a format read whole).
uint64_t bytes_under(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::is_directory(path, ec)) {
        const uintmax_t size = fs::file_size(path, ec);
        return ec ? 0 : size;
    }
    uint64_t total = 0;
    for (fs::recursive_directory_iterator it(path, fs::directory_options::skip_permission_denied, ec), end;
         !ec && it != end; it.increment(ec)) {
        std::error_code type_error;
        if (it->is_regular_file(type_error)) {
            const uintmax_t size = it->file_size(type_error);
            total += type_error ? 0 : size;
        }
    }
    return total;
}

} // namespace

SourceFollower::SourceFollower(std::string path, ReadRunsOptions options)
    : path_(std::move(path)), options_(std::move(options)) {}

bool SourceFollower::changed() const { return fingerprint_ == 0 || source_fingerprint(path_) != fingerprint_; }

void SourceFollower::forget(const std::string& source) { tails_.erase(source); }

Expected<ReadRuns> SourceFollower::pass(const std::function<bool(ImportedRun&&)>& on_run) {
    // Taken before reading: a write during the pass is seen at the next look. A pass that fails is tried again when
    // something changes (not at every look: its error would be said at every look).
    fingerprint_ = source_fingerprint(path_);
    // What the path holds is asked at every pass, as a whole read asks it: a folder may hold a metrics table before
    // its first event file.
    std::string format = options_.format;
    if (format.empty()) {
        auto detected = detect_format(path_);
        if (!detected)
            return Error{detected.error()};
        format = *detected;
    }
    if (format != format_)
        tails_.clear();
    format_ = format;
    if (format_ != "tensorboard") {
        bool stopped = false;
        auto read = read_runs_each(path_, {format_, options_.include_deleted},
                                   [&](ImportedRun&& run) { return !(stopped = !on_run(std::move(run))); });
        bytes_read_ += bytes_under(path_);
        if (stopped)
            fingerprint_ = 0; // the runs not read are read at the next look
        return read;
    }
    auto listed = list_tensorboard_runs(path_);
    if (!listed)
        return Error{listed.error()};
    bool stopped = false;
    std::set<std::string> folders;
    for (const TensorBoardRunFiles& files : *listed) {
        folders.insert(files.folder);
        if (stopped)
            continue;
        std::optional<ImportedRun> run = read_event_files_on(files, tails_[files.folder], buffer_, &bytes_read_);
        if (!run)
            continue; // its files are as the last pass left them
        if (!on_run(std::move(*run))) {
            tails_.erase(files.folder); // handed out, not written: read whole next time
            stopped = true;
        }
    }
    // Runs whose folders went: their tails go too (a folder that comes back is read whole).
    std::erase_if(tails_, [&](const auto& entry) { return !folders.count(entry.first); });
    if (stopped)
        fingerprint_ = 0; // the runs not read are read at the next look
    ReadRuns read;
    read.format = format_;
    return read;
}

} // namespace traindeck::importers
