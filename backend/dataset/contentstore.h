#pragma once
// The worker's content-addressed dataset store:
//   <dir>/chunks/<aa>/<sha256>     chunk bytes, named by their hash, verified on arrival, read-only
//   <dir>/datasets/<version>/...   a dataset version's files, built from its chunks and verified file by file,
//                                  then made read-only; jobs get this folder as TRAINDECK_DATASET_DIR
//   <dir>/manifests/<version>.json the manifest it was built from
//   <dir>/manifests/<version>.seal what each file's inode, size and times were when the version was published
// A version folder appears under its name only once complete (built in a temporary folder, then renamed), so
// an interrupted upload leaves chunks to reuse and nothing half-visible. Version files are copies, never hard
// links to chunks: a job that writes into its dataset folder (it may run as the worker's user, even as root)
// cannot damage a chunk, and the seal shows what it changed so the version is rebuilt before the next job.
#include "manifest.h"

#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace traindeck::dataset {

class ContentStore {
public:
    bool open(const std::string& dir, std::string& error);
    // The store another process opened (a job's shim storing a code snapshot): no clean-up of tmp/, whose files
    // may be that process's writes in progress.
    void attach(const std::string& dir) { dir_ = dir; }
    const std::string& dir() const { return dir_; }

    bool has_chunk(const std::string& hash) const;
    std::vector<std::string> missing_chunks(const std::vector<std::string>& hashes) const;
    // Stores bytes under their hash. status: 201 stored, 200 already there, 400 bad hash or bytes that do not
    // hash to it, 413 more than a chunk, 507 out of space.
    int put_chunk(const std::string& hash, const std::string& bytes, std::string& error);
    // Many chunks whose hashes the caller computed (a code snapshot: hundreds of small files): each written to
    // tmp/, one syncfs for all, then each renamed to its name; far cheaper than an fsync per chunk. 0 or errno.
    int put_chunks(const std::vector<std::pair<std::string, std::string_view>>& chunks);
    // A chunk's bytes, false when the store does not hold it.
    bool read_chunk(const std::string& hash, std::string& bytes) const;
    // A manifest kept without its folder (a code snapshot, built only when a job reproduces it). 0 or errno.
    int put_manifest(const Manifest& manifest);
    // A manifest the store keeps (a dataset version's or a snapshot's); false and why when it has none or it is
    // damaged.
    bool stored_manifest(const std::string& version, Manifest& manifest, std::string& error) const;

    // Builds the version's folder from stored chunks. status: 201 built, 200 already there, 409 chunks missing
    // (listed in `missing`), 422 a file that does not hash to the manifest (its chunks are dropped so the next
    // upload sends them again), 507 out of space.
    int materialize(const Manifest& manifest, std::vector<std::string>& missing, std::string& error);
    // The folder of a complete version; "" when this store does not hold it.
    std::string dataset_path(const std::string& version) const;
    std::vector<std::string> versions() const;

    // "" when the version's folder is exactly as published (by its seal: every file's inode, size, mtime and
    // ctime, and no file added or removed); else what changed, naming the file.
    std::string check(const std::string& version);
    // Replaces a changed version's folder with one rebuilt from its chunks and verified against its manifest.
    // Statuses as materialize(); 422 when a chunk itself was damaged (then the version must be uploaded again).
    int rebuild(const std::string& version, std::string& error);

private:
    std::string chunk_path(const std::string& hash) const;
    int build(const Manifest& manifest, std::vector<std::string>& missing, std::string& error); // build_mutex_ held
    bool write_seal(const std::string& version, const std::string& folder, std::string& error);

    std::string dir_;
    std::mutex build_mutex_; // one build at a time; chunk writes need no lock (each is its own temp + rename)
};

} // namespace traindeck::dataset
