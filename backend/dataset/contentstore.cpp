#include "contentstore.h"

#include "atomicfile.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace traindeck::dataset {

namespace fs = std::filesystem;

namespace {

std::string unique_suffix() {
    static std::atomic<uint64_t> counter{0};
    return std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
}

bool write_all(int fd, const char* data, size_t size, int& saved_errno) {
    while (size > 0) {
        const ssize_t wrote = ::write(fd, data, size);
        if (wrote < 0 && errno == EINTR)
            continue;
        if (wrote <= 0) {
            saved_errno = wrote < 0 ? errno : ENOSPC;
            return false;
        }
        data += wrote;
        size -= static_cast<size_t>(wrote);
    }
    return true;
}

// Every dirty page of the store's file system on disk: one call for many files written at once. Returns 0, or
// the errno of a write-back that failed (EIO, ENOSPC): what was written is then not known to be on disk.
int sync_file_system(const std::string& dir) {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    const int saved = ::syncfs(fd) == 0 ? 0 : errno;
    ::close(fd);
    return saved;
}

int space_status(int error_number) { return error_number == ENOSPC || error_number == EDQUOT ? 507 : 500; }

void make_read_only(const fs::path& root) {
    std::error_code ec;
    for (fs::recursive_directory_iterator it(root, ec), end; it != end; it.increment(ec))
        ::chmod(it->path().c_str(), it->is_directory(ec) ? 0555 : 0444);
    ::chmod(root.c_str(), 0555);
}

void make_writable(const fs::path& root) {
    std::error_code ec;
    ::chmod(root.c_str(), 0755);
    for (fs::recursive_directory_iterator it(root, ec), end; it != end; it.increment(ec))
        ::chmod(it->path().c_str(), it->is_directory(ec) ? 0755 : 0644);
}

void remove_tree(const fs::path& root) {
    // Read-only folders cannot lose their entries: give write back first.
    make_writable(root);
    std::error_code ec;
    fs::remove_all(root, ec);
}

// Writes bytes at offset into an existing file; with `sync`, on disk before it returns. 0 or errno. A synced piece
// received into aligned memory (AlignedBytes, as every chunk is) goes past the page cache (O_DIRECT|O_DSYNC) in whole
// blocks: the disk takes it by DMA, and the kernel neither allocates nor copies a page for it; the unaligned tail,
// if any, is written through the cache.
int write_piece(const ContentStore::Piece& piece, const char* data, bool sync) {
    constexpr int64_t kBlock = 4096;
    const int fd = ::open(piece.path.c_str(), O_WRONLY | O_CLOEXEC);
    int saved = fd < 0 ? errno : 0;
    auto write_at = [&saved](int to, const char* from, int64_t size, int64_t offset) {
        for (int64_t done = 0; saved == 0 && done < size;) {
            const ssize_t wrote = ::pwrite(to, from + done, static_cast<size_t>(size - done), offset + done);
            if (wrote < 0 && errno == EINTR)
                continue;
            if (wrote <= 0)
                saved = wrote < 0 ? errno : ENOSPC;
            else
                done += wrote;
        }
    };
    int64_t direct_bytes = sync && piece.offset % kBlock == 0 && reinterpret_cast<uintptr_t>(data) % kBlock == 0
                               ? piece.size / kBlock * kBlock
                               : 0;
    const int direct =
        direct_bytes > 0 && saved == 0 ? ::open(piece.path.c_str(), O_WRONLY | O_CLOEXEC | O_DIRECT | O_DSYNC) : -1;
    if (direct >= 0) {
        write_at(direct, data, direct_bytes, piece.offset);
        // A file system that takes O_DIRECT opens but refuses the write (EINVAL): the page cache, as everywhere.
        if (saved == EINVAL)
            saved = 0, direct_bytes = 0;
        ::close(direct);
    } else {
        direct_bytes = 0;
    }
    write_at(fd, data + direct_bytes, piece.size - direct_bytes, piece.offset + direct_bytes);
    if (saved == 0 && sync && direct_bytes < piece.size && ::fdatasync(fd) != 0)
        saved = errno;
    if (fd >= 0)
        ::close(fd);
    return saved;
}

// Where a file's chunk c lies in it, the file being under folder.
ContentStore::Piece piece_of(const std::string& folder, const ManifestFile& file, size_t c) {
    const int64_t offset = static_cast<int64_t>(c) * kChunkBytes;
    return {folder + "/" + file.path, offset, std::min(kChunkBytes, file.size - offset)};
}

enum class PieceRead { good, unreadable, wrong };

// A piece's bytes, if it can be read whole from a regular file (a job may have put a FIFO in its place: never
// waited on) and they hash to `hash`.
PieceRead read_piece(const ContentStore::Piece& piece, const std::string& hash, std::string& bytes) {
    if (piece.size < 0 || piece.size > kChunkBytes)
        return PieceRead::unreadable;
    bytes.resize(static_cast<size_t>(piece.size));
    const int fd = ::open(piece.path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return PieceRead::unreadable;
    struct stat info {};
    int64_t done = 0;
    while (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && done < piece.size) {
        const ssize_t got =
            ::pread(fd, bytes.data() + done, static_cast<size_t>(piece.size - done), piece.offset + done);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        done += got;
    }
    ::close(fd);
    if (done != piece.size)
        return PieceRead::unreadable;
    return sha256_hex(bytes.data(), bytes.size()) == hash ? PieceRead::good : PieceRead::wrong;
}

} // namespace

constexpr size_t kEarlyChunks = 16;                 // chunks of a file that may wait for their turn (64 MB)
constexpr int64_t kEarlyBytes = int64_t(256) << 20; // and all files' waiting chunks together

// A file of several chunks, hashed front to back as its chunks arrive, so that it is verified without being read
// back: a chunk that comes before its turn waits in memory (a bounded amount) for the thread that hashes the one
// before it. Given up (the file is read back when the version is completed) when too much waits, or when chunks
// were written before this upload's hashers existed (a worker restart).
struct FileHash {
    explicit FileHash(std::atomic<int64_t>& early) : early_bytes(early) {}
    std::atomic<int64_t>& early_bytes; // the store's: bytes waiting in every file's hasher
    std::mutex mutex;
    std::condition_variable idle;
    std::unique_ptr<Sha256> hash = std::make_unique<Sha256>();
    size_t next = 0; // chunks hashed
    // Chunks written, by index, not yet hashed: their bytes, and what keeps them alive.
    std::map<size_t, std::pair<std::shared_ptr<const void>, std::string_view>> waiting;
    bool busy = false; // a thread is hashing (outside the lock)
    bool given_up = false;
    void drop_waiting() {
        for (const auto& [index, held] : waiting)
            early_bytes -= static_cast<int64_t>(held.second.size());
        waiting.clear();
    }
    void reset() {
        hash = std::make_unique<Sha256>();
        next = 0;
        drop_waiting();
        given_up = false;
    }
    // Takes a written chunk; the thread that finds nobody hashing hashes every chunk whose turn has come, the
    // others return at once (their connections go on): a file is hashed by one thread at a time, in order.
    void add(size_t index, std::shared_ptr<const void> owner, std::string_view bytes) {
        std::unique_lock lock(mutex);
        if (given_up || index < next || waiting.count(index) != 0)
            return;
        // A chunk whose turn has come is always taken; one ahead of its turn only within the bounds, else the file
        // is read back at the end (its chunks may never come in order: a sender of another order, or chunks the
        // store already held, copied in only when the version is completed).
        if (index > next &&
            (waiting.size() >= kEarlyChunks || early_bytes.load() + static_cast<int64_t>(bytes.size()) > kEarlyBytes)) {
            given_up = true;
            drop_waiting();
            return;
        }
        waiting.emplace(index, std::make_pair(std::move(owner), bytes));
        early_bytes += static_cast<int64_t>(bytes.size());
        if (busy)
            return;
        busy = true;
        while (!given_up && !waiting.empty() && waiting.begin()->first == next) {
            const auto turn = std::move(waiting.begin()->second);
            waiting.erase(waiting.begin());
            early_bytes -= static_cast<int64_t>(turn.second.size());
            Sha256* into = hash.get();
            lock.unlock();
            into->update(turn.second.data(), turn.second.size());
            lock.lock();
            ++next;
        }
        busy = false;
        idle.notify_all();
    }
    void restart() {
        std::unique_lock lock(mutex);
        idle.wait(lock, [this] { return !busy; });
        reset();
    }
    // The whole file's hash if every chunk was hashed here, else "" (it is read back); ends this hash.
    std::string finish(size_t chunks) {
        std::unique_lock lock(mutex);
        idle.wait(lock, [this] { return !busy; });
        std::string digest = !given_up && next == chunks ? hash->hex() : std::string();
        reset();
        given_up = true; // hex() ends a hash: a second try reads the file back
        return digest;
    }
};

struct ContentStore::Upload {
    struct Place : Piece {
        size_t file = 0, index = 0; // which file of the manifest, which of its chunks
    };
    Manifest manifest;
    std::string version, folder;
    std::map<std::string, std::vector<Place>> places; // each chunk's places in the upload's files; fixed once made
    std::vector<std::unique_ptr<FileHash>> hashes;    // by file: null for a file of one chunk (its chunk's hash)
    std::set<std::string> written;                    // chunks in all their places, on disk (index_mutex_)
    // Of those, the ones whose bytes were checked against their hash as they were written (a chunk of a file of
    // several chunks is checked when its whole file is, at completion): what has_chunk(hash, true) counts.
    std::set<std::string> checked;
    std::set<std::string> receiving;                  // chunks being written into place now (index_mutex_)
    std::shared_mutex writing; // shared while a chunk is written into place; exclusive to complete the version
    bool done = false;         // published (under `writing`): a chunk on its way finds another home
};

bool ContentStore::open(const std::string& dir, std::string& error) {
    dir_ = dir;
    std::error_code ec;
    for (const char* sub : {"chunks", "datasets", "manifests", "tmp", "uploads"}) {
        fs::create_directories(dir + "/" + sub, ec);
        if (ec) {
            error = "cannot create " + dir + "/" + sub + ": " + ec.message();
            return false;
        }
    }
    // Leftovers of builds and chunk writes a crash interrupted. An upload's folder stays, its chunks found again
    // when the upload resumes, unless nothing was written into it for kAbandonedUploadDays: then it is given up.
    for (const auto& entry : fs::directory_iterator(dir + "/tmp", ec))
        remove_tree(entry.path());
    const auto abandoned = fs::file_time_type::clock::now() - std::chrono::hours(24 * kAbandonedUploadDays);
    for (const auto& entry : fs::directory_iterator(dir + "/uploads", ec)) {
        bool recent = entry.last_write_time(ec) > abandoned;
        for (fs::recursive_directory_iterator it(entry.path(), ec), end; !recent && it != end; it.increment(ec))
            recent = it->last_write_time(ec) > abandoned;
        if (!recent)
            remove_tree(entry.path());
    }
    std::lock_guard lock(index_mutex_);
    for (const std::string& version : versions()) {
        Manifest manifest;
        std::string damaged;
        if (stored_manifest(version, manifest, damaged))
            index_version(manifest, dir_ + "/datasets/" + version);
    }
    return true;
}

void ContentStore::index_version(const Manifest& manifest, const std::string& folder) {
    std::set<std::string> seen;
    for (const ManifestFile& file : manifest.files)
        for (size_t c = 0; c < file.chunks.size(); ++c)
            if (seen.insert(file.chunks[c]).second)
                published_.emplace(file.chunks[c], piece_of(folder, file, c));
}

std::string ContentStore::chunk_path(const std::string& hash) const { return dir_ + "/chunks/" + hash.substr(0, 2) + "/" + hash; }

bool ContentStore::has_chunk(const std::string& hash, bool checked_only) const {
    if (!is_sha256_hex(hash))
        return false;
    {
        std::lock_guard lock(index_mutex_);
        if (published_.count(hash) != 0)
            return true;
        for (const auto& [version, upload] : uploads_)
            if ((checked_only ? upload->checked : upload->written).count(hash) != 0)
                return true;
    }
    struct stat info {};
    return ::stat(chunk_path(hash).c_str(), &info) == 0;
}

std::vector<std::string> ContentStore::missing_chunks(const std::vector<std::string>& hashes, bool checked_only) const {
    std::vector<std::string> missing;
    std::set<std::string> seen;
    for (const std::string& hash : hashes)
        if (seen.insert(hash).second && !has_chunk(hash, checked_only))
            missing.push_back(hash);
    return missing;
}

std::shared_ptr<ContentStore::Upload> ContentStore::upload_for(const Manifest& manifest, int& status,
                                                               std::string& error) {
    const std::string version = manifest.version();
    // One upload made at a time (two requests for the same version must not make its files twice), outside the
    // index's lock: chunk writes for other uploads go on meanwhile.
    std::lock_guard making(making_mutex_);
    {
        std::lock_guard lock(index_mutex_);
        if (auto found = uploads_.find(version); found != uploads_.end())
            return found->second;
    }
    if (!dataset_path(version).empty()) {
        status = 200; // published meanwhile: nothing to upload
        return nullptr;
    }
    auto upload = std::make_shared<Upload>();
    upload->manifest = manifest;
    upload->version = version;
    upload->folder = dir_ + "/uploads/" + version;
    for (size_t f = 0; f < manifest.files.size(); ++f) {
        const ManifestFile& file = manifest.files[f];
        upload->hashes.push_back(file.chunks.size() > 1 ? std::make_unique<FileHash>(early_bytes_) : nullptr);
        for (size_t c = 0; c < file.chunks.size(); ++c) {
            std::vector<Upload::Place>& places = upload->places[file.chunks[c]];
            places.push_back({piece_of(upload->folder, file, c), f, c});
            if (places.back().size != places.front().size) {
                status = 400;
                error = "the manifest gives chunk " + file.chunks[c].substr(0, 12) + "… two sizes";
                return nullptr;
            }
        }
    }
    // After a restart (or for a rebuild) the folder is there with what was written before: writable again, anything
    // the manifest does not name removed, and each chunk counted as written when every one of its places hashes
    // right. Never removed whole: what it holds may be the only copy of those bytes.
    std::error_code ec;
    const bool resumed = fs::is_directory(upload->folder, ec);
    if (resumed) {
        make_writable(upload->folder);
        std::set<std::string> named;
        for (const ManifestFile& file : manifest.files)
            for (fs::path part = file.path; !part.empty(); part = part.parent_path())
                named.insert(part.string());
        std::vector<fs::path> strays;
        for (fs::recursive_directory_iterator it(upload->folder, ec), end; it != end; it.increment(ec))
            if (named.count(it->path().lexically_relative(upload->folder).string()) == 0)
                strays.push_back(it->path()), it.disable_recursion_pending();
        for (const fs::path& stray : strays)
            fs::remove_all(stray, ec);
    }
    for (const ManifestFile& file : manifest.files) {
        const std::string path = upload->folder + "/" + file.path;
        fs::create_directories(fs::path(path).parent_path(), ec);
        struct stat info {};
        // A job may have put a folder, a link or a FIFO where a file was: it goes (O_NONBLOCK: a FIFO is not waited
        // on).
        if (::lstat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode))
            fs::remove_all(path, ec);
        const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
        int saved = fd < 0 ? errno : 0;
        if (fd >= 0 && (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)))
            saved = EISDIR;
        // Sparse until written: a large version takes its space as its chunks arrive.
        if (saved == 0 && info.st_size != file.size && ::ftruncate(fd, file.size) != 0)
            saved = errno;
        if (fd >= 0)
            ::close(fd);
        if (saved != 0) {
            status = saved == ENOSPC || saved == EDQUOT ? 507 : saved == EISDIR || saved == ENOTDIR ? 400 : 500;
            error = "cannot make " + file.path + " (" + std::strerror(saved) + ")";
            if (!resumed)
                remove_tree(upload->folder);
            return nullptr;
        }
    }
    if (resumed) {
        std::string bytes;
        for (const auto& entry : upload->places)
            if (std::all_of(entry.second.begin(), entry.second.end(), [&](const Piece& place) {
                    return read_piece(place, entry.first, bytes) == PieceRead::good;
                })) {
                upload->written.insert(entry.first);
                upload->checked.insert(entry.first);
            }
        for (const auto& file : upload->hashes)
            if (file)
                file->given_up = true;
    }
    // The files' names on disk before any chunk written into them is acknowledged.
    if (const int saved = sync_file_system(dir_); saved != 0) {
        status = space_status(saved);
        error = std::string("cannot make the version's files (") + std::strerror(saved) + ")";
        if (!resumed)
            remove_tree(upload->folder);
        return nullptr;
    }
    std::lock_guard lock(index_mutex_);
    uploads_[version] = upload;
    return upload;
}

int ContentStore::begin_upload(const Manifest& manifest, std::vector<std::string>& missing, std::string& error) {
    missing.clear();
    if (!dataset_path(manifest.version()).empty())
        return 200;
    int status = 200;
    if (!upload_for(manifest, status, error))
        return status;
    // In the order of the manifest: a sender that sends them in this order writes each file front to back.
    missing = missing_chunks(manifest.chunk_hashes());
    return 200;
}

int ContentStore::put_chunk(const std::string& hash, AlignedBytes received, std::string& error) {
    // Shared with the hashers of the files it goes into (no copy): they may hash it after this returns.
    const auto shared = std::make_shared<const AlignedBytes>(std::move(received));
    const std::string_view bytes = shared->view();
    if (!is_sha256_hex(hash)) {
        error = "a chunk is named by the SHA-256 of its bytes (64 lower-case hex digits)";
        return 400;
    }
    if (static_cast<int64_t>(bytes.size()) > kChunkBytes) {
        error = "a chunk holds at most " + std::to_string(kChunkBytes) + " bytes";
        return 413;
    }
    std::vector<std::shared_ptr<Upload>> wanting;
    bool hash_it = false;
    {
        // The same chunk arriving twice at once (a retry after a timeout, a second client): the second waits for
        // the first, so that the bytes on disk are the bytes each file's hasher took.
        std::unique_lock lock(index_mutex_);
        for (bool busy = true; busy;) {
            busy = false;
            wanting.clear();
            hash_it = false;
            for (const auto& [version, upload] : uploads_)
                if (auto found = upload->places.find(hash);
                    found != upload->places.end() && upload->written.count(hash) == 0) {
                    busy = busy || upload->receiving.count(hash) != 0;
                    wanting.push_back(upload);
                    for (const Upload::Place& place : found->second)
                        hash_it = hash_it || !upload->hashes[place.file];
                }
            if (busy)
                received_.wait(lock);
        }
        for (const std::shared_ptr<Upload>& upload : wanting)
            upload->receiving.insert(hash);
    }
    // Whatever happens below, the chunk is no longer being received by this request when it returns.
    struct Receiving {
        ContentStore& store;
        const std::string& hash;
        const std::vector<std::shared_ptr<Upload>>& uploads;
        ~Receiving() {
            std::lock_guard lock(store.index_mutex_);
            for (const std::shared_ptr<Upload>& upload : uploads)
                upload->receiving.erase(hash);
            store.received_.notify_all();
        }
    } receiving{*this, hash, wanting};
    // Checked against its name unless every place it goes to is in a file of several chunks, which is hashed whole
    // as its chunks arrive (and refused, with its chunks forgotten, if it does not hash to the manifest): each byte
    // is hashed once.
    if ((wanting.empty() || hash_it) && sha256_hex(bytes.data(), bytes.size()) != hash) {
        error = "the chunk's bytes do not hash to " + hash + " (damaged in transit); send it again";
        return 400;
    }
    // Into the places of every upload that wants it: the version's own files, each on disk before the chunk is
    // acknowledged (a chunk the client was told is stored survives a power cut). An upload whose manifest gives it
    // another size is skipped (its completion will ask for the chunk again).
    int status = 0;
    for (const std::shared_ptr<Upload>& upload : wanting) {
        std::shared_lock writing(upload->writing);
        if (upload->done)
            continue;
        const std::vector<Upload::Place>& places = upload->places.at(hash);
        if (places.front().size != static_cast<int64_t>(bytes.size())) {
            error = "the chunk is " + std::to_string(bytes.size()) + " bytes; its version's manifest says " +
                    std::to_string(places.front().size);
            status = status == 0 ? 400 : status;
            continue;
        }
        for (const Piece& place : places)
            if (const int saved = write_piece(place, bytes.data(), true); saved != 0) {
                error = "cannot store the chunk (" + std::string(std::strerror(saved)) + ")";
                return space_status(saved);
            }
        for (const Upload::Place& place : places)
            if (FileHash* file = upload->hashes[place.file].get())
                file->add(place.index, shared, bytes);
        std::lock_guard lock(index_mutex_);
        upload->written.insert(hash);
        if (wanting.empty() || hash_it)
            upload->checked.insert(hash);
        // Taken by at least one upload: stored.
        status = 201;
    }
    if (status != 0)
        return status;
    // Already held where its bytes were checked. Not a place of an upload not yet verified (a chunk of a file of
    // several chunks, checked only with its file): a code snapshot's chunk counted there would be lost with it.
    if (has_chunk(hash, true))
        return 200;
    // Nobody said which version it belongs to (a code snapshot's chunk, or a client of the older protocol): a chunk
    // file of its own.
    const std::string final_path = chunk_path(hash);
    std::error_code ec;
    fs::create_directories(fs::path(final_path).parent_path(), ec);
    AtomicFile file(final_path, 0444, dir_ + "/tmp");
    file.write(bytes.data(), bytes.size());
    if (const int saved = file.commit(); saved != 0) {
        error = "cannot store the chunk (" + std::string(std::strerror(saved)) + ")";
        return space_status(saved);
    }
    return 201;
}

int ContentStore::put_chunks(const std::vector<std::pair<std::string, std::string_view>>& chunks) {
    std::vector<std::pair<std::string, std::string>> written; // temp, final
    auto drop = [&] {
        for (const auto& [temp, final_path] : written)
            ::unlink(temp.c_str());
    };
    for (const auto& [hash, bytes] : chunks) {
        if (!is_sha256_hex(hash) || has_chunk(hash, true))
            continue;
        const std::string temp = dir_ + "/tmp/chunk-" + hash.substr(0, 16) + "." + unique_suffix();
        const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
        int saved = fd < 0 ? errno : 0;
        if (fd >= 0) {
            write_all(fd, bytes.data(), bytes.size(), saved);
            ::close(fd);
        }
        written.emplace_back(temp, chunk_path(hash));
        if (saved != 0) {
            drop();
            return saved;
        }
    }
    if (written.empty())
        return 0;
    // Every chunk's bytes are on disk before any has its name.
    if (const int saved = sync_file_system(dir_); saved != 0) {
        drop();
        return saved;
    }
    std::error_code ec;
    for (const auto& [temp, final_path] : written) {
        fs::create_directories(fs::path(final_path).parent_path(), ec);
        if (::rename(temp.c_str(), final_path.c_str()) != 0) {
            const int saved = errno;
            drop();
            return saved;
        }
    }
    // And the names: a failure is said (the sender is not told the chunks are safe), though the names stay, since
    // another upload may have been acknowledged for the same chunk meanwhile.
    return sync_file_system(dir_);
}

bool ContentStore::read_chunk(const std::string& hash, std::string& bytes) const {
    if (!is_sha256_hex(hash))
        return false;
    std::vector<Piece> sources;
    {
        std::lock_guard lock(index_mutex_);
        sources = copies_of(hash, nullptr);
    }
    // A chunk file as it is (one byte more than a chunk may hold: a larger file under a chunk's name is no chunk):
    // its receiver checks the hash. A piece of a version's file only if it hashes right: a job may have changed it.
    if (read_file_upto(chunk_path(hash), static_cast<size_t>(kChunkBytes) + 1, bytes) &&
        static_cast<int64_t>(bytes.size()) <= kChunkBytes)
        return true;
    return std::any_of(sources.begin(), sources.end(),
                       [&](const Piece& piece) { return read_piece(piece, hash, bytes) == PieceRead::good; });
}

int ContentStore::put_manifest(const Manifest& manifest) {
    return write_file_atomically(dir_ + "/manifests/" + manifest.version() + ".json", manifest.to_json().dump());
}

bool ContentStore::stored_manifest(const std::string& version, Manifest& manifest, std::string& error) const {
    if (!is_sha256_hex(version)) {
        error = "a version is 64 lower-case hex digits";
        return false;
    }
    std::string text;
    if (!read_file_upto(dir_ + "/manifests/" + version + ".json", size_t(256) << 20, text)) {
        error = "version " + version.substr(0, 12) + "… is not on this worker";
        return false;
    }
    const nlohmann::json parsed = nlohmann::json::parse(text, nullptr, false);
    if (parsed.is_discarded() || !Manifest::from_json(parsed, manifest, error) || manifest.version() != version) {
        error =
            "the stored manifest of " + version.substr(0, 12) + "… is damaged" + (error.empty() ? "" : ": " + error);
        return false;
    }
    return true;
}

std::string ContentStore::dataset_path(const std::string& version) const {
    if (!is_sha256_hex(version))
        return {};
    const std::string path = dir_ + "/datasets/" + version;
    std::error_code ec;
    return fs::is_directory(path, ec) ? path : std::string();
}

std::vector<std::string> ContentStore::versions() const {
    std::vector<std::string> list;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir_ + "/datasets", ec))
        if (is_sha256_hex(entry.path().filename().string()))
            list.push_back(entry.path().filename().string());
    std::sort(list.begin(), list.end());
    return list;
}

int ContentStore::materialize(const Manifest& manifest, std::vector<std::string>& missing, std::string& error) {
    std::lock_guard lock(build_mutex_);
    if (!dataset_path(manifest.version()).empty())
        return 200;
    int status = 0;
    const std::shared_ptr<Upload> upload = upload_for(manifest, status, error);
    if (!upload)
        return status;
    return complete(upload, missing, error);
}

std::vector<ContentStore::Piece> ContentStore::copies_of(const std::string& hash, const Upload* except) const {
    std::vector<Piece> copies;
    for (auto [at, end] = published_.equal_range(hash); at != end; ++at)
        copies.push_back(at->second);
    for (const auto& [version, upload] : uploads_)
        if (upload.get() != except && upload->written.count(hash) != 0)
            copies.push_back(upload->places.at(hash).front());
    return copies;
}

void ContentStore::forget(const std::string& hash, const Piece& piece, bool wrong) {
    std::lock_guard lock(index_mutex_);
    if (piece.path == chunk_path(hash)) {
        // Content-addressed bytes read whole that do not hash to their name (rot, or a hand that changed them) are
        // of no use; a chunk file that could not be read (too many open files, a read error) stays.
        if (wrong)
            ::unlink(piece.path.c_str());
        return;
    }
    for (auto [at, end] = published_.equal_range(hash); at != end;)
        at = at->second.path == piece.path && at->second.offset == piece.offset ? published_.erase(at) : std::next(at);
    for (const auto& [version, upload] : uploads_)
        if (upload->written.count(hash) != 0 && upload->places.at(hash).front().path == piece.path) {
            upload->written.erase(hash);
            upload->checked.erase(hash);
        }
}

int ContentStore::complete(const std::shared_ptr<Upload>& upload, std::vector<std::string>& missing,
                           std::string& error) {
    std::unique_lock writing(upload->writing); // no chunk is being written into place meanwhile
    const Manifest& manifest = upload->manifest;
    const std::string& version = upload->version;
    // Every chunk not yet in place: copied from wherever the store holds bytes that hash to it. Not
    // synced one by one: the whole version is, before it is published.
    missing.clear();
    // In the manifest's order, each file front to back: its hasher takes each copied chunk in turn.
    std::set<std::string> seen;
    auto chunk = std::make_shared<std::string>();
    for (const std::string& hash : manifest.chunk_hashes()) {
        if (!seen.insert(hash).second)
            continue;
        const std::vector<Upload::Place>& places = upload->places.at(hash);
        std::vector<Piece> sources;
        {
            std::lock_guard lock(index_mutex_);
            if (upload->written.count(hash) != 0)
                continue;
            sources.push_back({chunk_path(hash), 0, places.front().size});
            const std::vector<Piece> copies = copies_of(hash, upload.get());
            sources.insert(sources.end(), copies.begin(), copies.end());
        }
        if (chunk.use_count() > 1)
            chunk = std::make_shared<std::string>(); // the last one waits in a hasher
        bool found = false;
        for (const Piece& source : sources) {
            const PieceRead read =
                source.size == places.front().size ? read_piece(source, hash, *chunk) : PieceRead::unreadable;
            if ((found = read == PieceRead::good))
                break;
            forget(hash, source, read == PieceRead::wrong);
        }
        if (!found) {
            missing.push_back(hash);
            continue;
        }
        for (const Piece& place : places)
            if (const int saved = write_piece(place, chunk->data(), false); saved != 0) {
                error = "cannot copy a chunk into " + place.path.substr(upload->folder.size() + 1) + " (" +
                        std::strerror(saved) + ")";
                return space_status(saved);
            }
        for (const Upload::Place& place : places)
            if (FileHash* file = upload->hashes[place.file].get())
                file->add(place.index, chunk, *chunk);
        std::lock_guard lock(index_mutex_);
        upload->written.insert(hash);
        upload->checked.insert(hash); // copied from a source whose bytes hashed right
    }
    if (!missing.empty()) {
        error = std::to_string(missing.size()) + " chunk(s) of this version are not on the worker yet; upload them first";
        return 409;
    }
    // Every file against its hash. A file of one chunk is that chunk, whose hash was checked as it was put in
    // place; a longer one was hashed as its chunks arrived, or else is read back and hashed now, on two threads, a
    // file at a time each.
    std::atomic<size_t> next{0};
    std::atomic<bool> stop{false};
    std::mutex failure_mutex;
    int failed_status = 0, refused = 0;
    std::string failure;
    auto verify = [&] {
        std::vector<char> buffer(kChunkBytes);
        for (size_t i; !stop.load() && (i = next.fetch_add(1)) < manifest.files.size();) {
            const ManifestFile& file = manifest.files[i];
            FileHash* hashed = upload->hashes[i].get();
            if (!hashed)
                continue;
            std::string digest;
            int64_t total = file.size;
            int saved = 0;
            if ((digest = hashed->finish(file.chunks.size())).empty()) {
                const int in = ::open((upload->folder + "/" + file.path).c_str(), O_RDONLY | O_CLOEXEC);
                saved = in < 0 ? errno : 0;
                Sha256 whole;
                total = 0;
                for (ssize_t got; in >= 0 && (got = ::read(in, buffer.data(), buffer.size())) != 0;) {
                    if (got < 0) {
                        saved = errno;
                        break;
                    }
                    whole.update(buffer.data(), static_cast<size_t>(got));
                    total += got;
                }
                if (in >= 0)
                    ::close(in);
                digest = whole.hex();
            }
            std::lock_guard lock(failure_mutex);
            if (saved != 0) {
                if (!stop.exchange(true)) {
                    failed_status = space_status(saved);
                    failure = "cannot read back " + file.path + " (" + std::strerror(saved) + ")";
                }
            } else if (total != file.size || digest != file.sha256) {
                // Every such file, not only the first: the next round sends all their chunks at once.
                std::lock_guard index(index_mutex_);
                for (const std::string& chunk : file.chunks) {
                    upload->written.erase(chunk);
                    upload->checked.erase(chunk);
                }
                hashed->restart(); // its chunks come again, front to back
                if (++refused == 1)
                    failure = file.path + ": its chunks do not hash to the manifest's " + file.sha256.substr(0, 12) +
                              "… (the file changed while it was sent, a manifest whose file and chunk hashes "
                              "disagree, or damage on the worker's disk); its chunks were forgotten, upload again";
            }
        }
    };
    std::thread helper(verify);
    verify();
    helper.join();
    if (stop.load()) {
        error = failure;
        return failed_status;
    }
    if (refused > 0) {
        error = refused == 1 ? failure : failure + " (and " + std::to_string(refused - 1) + " more file(s) like it)";
        return 422;
    }
    if (const int saved = write_file_atomically(dir_ + "/manifests/" + version + ".json", manifest.to_json().dump());
        saved != 0) {
        error = "cannot write the manifest (" + std::string(std::strerror(saved)) + ")";
        return space_status(saved);
    }
    make_read_only(upload->folder);
    if (!write_seal(version, upload->folder, error)) {
        make_writable(upload->folder);
        return 500;
    }
    // The version's bytes are on disk before its name says it is complete.
    if (const int saved = sync_file_system(dir_); saved != 0) {
        make_writable(upload->folder);
        error = "cannot write the version to disk (" + std::string(std::strerror(saved)) + ")";
        return space_status(saved);
    }
    const std::string published = dir_ + "/datasets/" + version;
    if (::rename(upload->folder.c_str(), published.c_str()) != 0) {
        const int saved = errno;
        make_writable(upload->folder);
        error = "cannot publish the version (" + std::string(std::strerror(saved)) + ")";
        return space_status(saved);
    }
    fsync_folder(dir_ + "/datasets");
    upload->done = true;
    std::lock_guard lock(index_mutex_);
    uploads_.erase(version);
    index_version(manifest, published);
    return 201;
}

namespace {

// Each regular file under root as "path inode size mtime_ns ctime_ns", sorted; false if the tree cannot be read
// or holds something other than folders and regular files.
bool seal_lines(const fs::path& root, std::vector<std::string>& lines, std::string& problem) {
    std::error_code ec;
    for (fs::recursive_directory_iterator it(root, ec), end; it != end; it.increment(ec)) {
        struct stat info {};
        if (::lstat(it->path().c_str(), &info) != 0) {
            problem = "cannot read " + it->path().string();
            return false;
        }
        if (S_ISDIR(info.st_mode))
            continue;
        const std::string relative = it->path().lexically_relative(root).string();
        if (!S_ISREG(info.st_mode)) {
            problem = relative + " is not a regular file";
            return false;
        }
        lines.push_back(relative + " " + std::to_string(info.st_ino) + " " + std::to_string(info.st_size) + " " +
                        std::to_string(info.st_mtim.tv_sec * 1000000000LL + info.st_mtim.tv_nsec) + " " +
                        std::to_string(info.st_ctim.tv_sec * 1000000000LL + info.st_ctim.tv_nsec));
    }
    if (ec) {
        problem = "cannot list " + root.string() + ": " + ec.message();
        return false;
    }
    std::sort(lines.begin(), lines.end());
    return true;
}

bool read_text(const std::string& path, std::string& text) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    text.clear();
    char buffer[65536];
    for (ssize_t got; (got = ::read(fd, buffer, sizeof(buffer))) > 0;)
        text.append(buffer, static_cast<size_t>(got));
    ::close(fd);
    return true;
}

} // namespace

bool ContentStore::write_seal(const std::string& version, const std::string& folder, std::string& error) {
    std::vector<std::string> lines;
    if (!seal_lines(folder, lines, error))
        return false;
    std::string text;
    for (const auto& line : lines)
        text += line + "\n";
    if (const int saved = write_file_atomically(dir_ + "/manifests/" + version + ".seal", text); saved != 0) {
        error = "cannot write the version's seal (" + std::string(std::strerror(saved)) + ")";
        return false;
    }
    return true;
}

std::string ContentStore::check(const std::string& version) {
    const std::string folder = dataset_path(version);
    if (folder.empty())
        return "version " + version.substr(0, 12) + "… is not in the store";
    std::string sealed;
    if (!read_text(dir_ + "/manifests/" + version + ".seal", sealed)) {
        // Published before seals existed: verify every byte once, then seal what was verified.
        std::string text, error;
        Manifest manifest;
        if (!read_text(dir_ + "/manifests/" + version + ".json", text) ||
            !Manifest::from_json(nlohmann::json::parse(text, nullptr, false), manifest, error))
            return "its manifest is missing or unreadable";
        for (const ManifestFile& file : manifest.files)
            if (sha256_file(folder + "/" + file.path) != file.sha256)
                return file.path + " does not hash to the manifest";
        std::lock_guard lock(build_mutex_);
        return write_seal(version, folder, error) ? std::string() : error;
    }
    std::vector<std::string> now;
    std::string problem;
    if (!seal_lines(folder, now, problem))
        return problem;
    std::vector<std::string> then;
    for (size_t start = 0, end; start < sealed.size(); start = end + 1) {
        end = sealed.find('\n', start);
        if (end == std::string::npos)
            end = sealed.size();
        if (end > start)
            then.push_back(sealed.substr(start, end - start));
    }
    const auto path_of = [](const std::string& line) { // the path before the four numbers (it may hold spaces)
        size_t cut = line.size();
        for (int field = 0; field < 4 && cut > 0 && cut != std::string::npos; ++field)
            cut = line.rfind(' ', cut - 1);
        return line.substr(0, cut);
    };
    for (size_t i = 0, j = 0; i < then.size() || j < now.size();) {
        if (i < then.size() && j < now.size() && then[i] == now[j]) {
            ++i, ++j;
            continue;
        }
        const std::string was = i < then.size() ? path_of(then[i]) : std::string();
        const std::string is = j < now.size() ? path_of(now[j]) : std::string();
        if (was == is)
            return was + " was changed";
        if (j >= now.size() || (i < then.size() && was < is))
            return was + " was removed";
        return is + " was added";
    }
    return {};
}

int ContentStore::rebuild(const std::string& version, std::string& error) {
    Manifest manifest;
    if (!stored_manifest(version, manifest, error)) {
        error = "the manifest of version " + version.substr(0, 12) + "… is missing or damaged; upload the version again";
        return 422;
    }
    std::lock_guard lock(build_mutex_);
    // Rebuilt in place: the changed folder becomes the version's upload (what it holds may be the only copy of
    // those bytes, so it is never deleted, not even when the rebuild fails or the worker stops half way), and the
    // upload's resume keeps every chunk that still hashes right, removes what the manifest does not name, and
    // completes the rest from the store.
    const std::string folder = dir_ + "/datasets/" + version;
    const std::string upload_folder = dir_ + "/uploads/" + version;
    {
        std::lock_guard index(index_mutex_);
        if (uploads_.count(version) != 0) {
            error = "an upload of this version is under way";
            return 409;
        }
        for (auto at = published_.begin(); at != published_.end();)
            at = at->second.path.rfind(folder + "/", 0) == 0 ? published_.erase(at) : std::next(at);
    }
    std::error_code ec;
    if (fs::exists(upload_folder, ec))
        remove_tree(upload_folder); // a stale one: the published folder has every byte it could have
    if (::rename(folder.c_str(), upload_folder.c_str()) != 0 && errno != ENOENT) {
        error = "cannot take the changed version back (" + std::string(std::strerror(errno)) + ")";
        return 500;
    }
    fsync_folder(dir_ + "/datasets");
    int status = 0;
    const std::shared_ptr<Upload> upload = upload_for(manifest, status, error);
    if (!upload)
        return status >= 300 ? status : 500;
    std::vector<std::string> missing;
    status = complete(upload, missing, error);
    if (status == 409)
        error = std::to_string(missing.size()) +
                " chunk(s) were destroyed and the store holds them nowhere else; upload the version again (only those "
                "chunks travel)";
    return status;
}

} // namespace traindeck::dataset
