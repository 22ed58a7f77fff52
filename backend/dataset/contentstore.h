#pragma once
// The worker's content-addressed dataset store:
//   <dir>/uploads/<version>/...    a version being uploaded: its files at their full size, each chunk written into
//                                  its places as it arrives (hash checked, on disk before it is acknowledged)
//   <dir>/datasets/<version>/...   a complete version's files, verified file by file, then made read-only; jobs
//                                  get this folder as TRAINDECK_DATASET_DIR
//   <dir>/chunks/<aa>/<sha256>     chunk files: a code snapshot's, and a dataset's sent by a client that did not
//                                  say its manifest first (the older protocol); read-only
//   <dir>/manifests/<version>.json the manifest a version was built from
//   <dir>/manifests/<version>.seal what each file's inode, size and times were when the version was published
// An upload that names its manifest first (begin_upload) writes each byte once, into the version's own files: a
// chunk already in the store (in a chunk file or in a published version's file) is copied into place, its hash
// checked, when the version is built. A version folder appears under datasets/ only once complete (its upload
// folder renamed), so an interrupted upload leaves written chunks to reuse (found again by their hashes after a
// restart) and nothing half-visible. A job may write into its dataset folder (it may run as the worker's user,
// even as root): the seal shows what it changed, and the version is rebuilt from every chunk that still hashes
// right, here or in another version; a chunk the job destroyed and the store holds nowhere else must be uploaded
// again (the version leaves datasets/, and the next upload sends only the lost chunks).
#include "alignedbytes.h"
#include "manifest.h"

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace traindeck::dataset {

// An upload nothing was written into for this long is removed when the store is next opened.
constexpr int kAbandonedUploadDays = 7;

class ContentStore {
public:
    bool open(const std::string& dir, std::string& error);
    // The store another process opened (a job's shim storing a code snapshot): no clean-up of tmp/, whose files
    // may be that process's writes in progress.
    void attach(const std::string& dir) { dir_ = dir; }
    const std::string& dir() const { return dir_; }

    // Whether the store holds the chunk anywhere: a chunk file, a published version's file, an upload's place.
    // checked_only: only where its bytes were checked against the hash (not a place in an upload's file of several
    // chunks, which is checked whole when the upload completes): what nothing checks later (a code snapshot) needs.
    bool has_chunk(const std::string& hash, bool checked_only = false) const;
    std::vector<std::string> missing_chunks(const std::vector<std::string>& hashes, bool checked_only = false) const;
    // Starts (or resumes) the upload of a version: its files are made at their full size under uploads/, and
    // `missing` lists the chunks to send, once each (those the store holds nowhere). status: 200, 400 a manifest
    // whose files cannot all be made (a path that is also a folder), 507 out of space.
    int begin_upload(const Manifest& manifest, std::vector<std::string>& missing, std::string& error);
    // Stores bytes under their hash: into every place an upload in progress wants them (each file written to is
    // on disk before this returns), else as a chunk file. status: 201 stored, 200 already there, 400 bad hash or
    // bytes that do not hash to it, 413 more than a chunk, 507 out of space.
    int put_chunk(const std::string& hash, AlignedBytes bytes, std::string& error);
    // Many chunks whose hashes the caller computed (a code snapshot: hundreds of small files): each written to
    // tmp/, one syncfs for all, then each renamed to its name; far cheaper than an fsync per chunk. 0 or errno.
    int put_chunks(const std::vector<std::pair<std::string, std::string_view>>& chunks);
    // A chunk's bytes: its chunk file's, else a piece of a version's file that hashes right; false when it has none.
    bool read_chunk(const std::string& hash, std::string& bytes) const;
    // A manifest kept without its folder (a code snapshot, built only when a job reproduces it). 0 or errno.
    int put_manifest(const Manifest& manifest);
    // A manifest the store keeps (a dataset version's or a snapshot's); false and why when it has none or it is
    // damaged.
    bool stored_manifest(const std::string& version, Manifest& manifest, std::string& error) const;

    // Completes the version's folder (its upload's, or a new one) from the chunks in the store, verifies every
    // file and publishes it. status: 201 built, 200 already there, 409 chunks missing (listed in `missing`), 422 a
    // file that does not hash to the manifest (its chunks are forgotten, so the next upload sends them again), 507
    // out of space.
    int materialize(const Manifest& manifest, std::vector<std::string>& missing, std::string& error);
    // The folder of a complete version; "" when this store does not hold it.
    std::string dataset_path(const std::string& version) const;
    std::vector<std::string> versions() const;

    // "" when the version's folder is exactly as published (by its seal: every file's inode, size, mtime and
    // ctime, and no file added or removed); else what changed, naming the file.
    std::string check(const std::string& version);
    // Replaces a changed version's folder with one rebuilt from the chunks that still hash right (in the changed
    // folder itself, in chunk files and in other versions) and verified against its manifest. Statuses as
    // materialize(); 409 when chunks were destroyed (the version must be uploaded again: it is no longer listed).
    int rebuild(const std::string& version, std::string& error);

    // Where a chunk's bytes lie in a file: a chunk file (offset 0), a version's file, an upload's file.
    struct Piece {
        std::string path;
        int64_t offset = 0, size = 0;
    };

private:
    struct Upload;
    std::string chunk_path(const std::string& hash) const;
    // The version's upload in progress, made (its folder and files, or found after a restart with the chunks
    // already in place) when there is none; null with status 200 when the version is published. index_mutex_ not
    // held.
    std::shared_ptr<Upload> upload_for(const Manifest& manifest, int& status, std::string& error);
    // Every chunk the upload lacks, copied into place from the store (hash checked), else listed in missing; then
    // every file verified and the folder published. build_mutex_ held.
    int complete(const std::shared_ptr<Upload>& upload, std::vector<std::string>& missing, std::string& error);
    // Every piece of a published version or of an upload (but `except`) said to hold the chunk. index_mutex_ held.
    std::vector<Piece> copies_of(const std::string& hash, const Upload* except) const;
    // A source found damaged or gone: no longer offered (a chunk file read whole that does not hash to its name,
    // `wrong`, is removed).
    void forget(const std::string& hash, const Piece& piece, bool wrong);
    bool write_seal(const std::string& version, const std::string& folder, std::string& error);
    void index_version(const Manifest& manifest, const std::string& folder); // index_mutex_ held

    std::string dir_;
    std::mutex build_mutex_;  // one build at a time
    std::mutex making_mutex_; // one upload made (its files, or checked after a restart) at a time
    mutable std::mutex index_mutex_;
    std::condition_variable received_;    // a chunk finished being written into an upload (index_mutex_)
    std::atomic<int64_t> early_bytes_{0}; // chunks waiting in memory for their file's hasher
    std::map<std::string, std::shared_ptr<Upload>> uploads_; // by version
    std::multimap<std::string, Piece> published_;            // a chunk's bytes in each published version holding it
};

} // namespace traindeck::dataset
