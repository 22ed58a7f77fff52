#include "datasetupload.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

namespace traindeck::client {

namespace {

struct ChunkSource {
    std::string hash, path, relative;
    int64_t offset = 0, size = 0;
};

} // namespace

bool upload_dataset(const WorkerClient& client, const dataset::Manifest& manifest, const std::string& root,
                    UploadProgress& result, std::string& error, const UploadOptions& options) {
    const auto start = std::chrono::steady_clock::now();
    result = {};
    const bool single_file = std::filesystem::is_regular_file(root);
    // Every distinct chunk once, with where its bytes are.
    std::map<std::string, ChunkSource> sources;
    std::vector<std::string> hashes;
    for (const dataset::ManifestFile& file : manifest.files) {
        const std::string path = single_file ? root : root + "/" + file.path;
        for (size_t c = 0; c < file.chunks.size(); ++c) {
            const int64_t offset = static_cast<int64_t>(c) * dataset::kChunkBytes;
            if (sources.emplace(file.chunks[c], ChunkSource{file.chunks[c], path, file.path, offset,
                                                            std::min(dataset::kChunkBytes, file.size - offset)})
                    .second) {
                hashes.push_back(file.chunks[c]);
                result.bytes_total += std::min(dataset::kChunkBytes, file.size - offset);
            }
        }
    }
    result.chunks_total = static_cast<int64_t>(hashes.size());
    auto control = client.fork();
    const std::string version = manifest.version();
    const std::string manifest_text = manifest.to_json().dump();
    // Two rounds at most: a chunk the worker dropped as damaged during the build is asked for again.
    for (int round = 0; round < 2; ++round) {
        // The manifest first: the worker writes each chunk straight into the version's files. A worker from before
        // that endpoint (404) is asked which chunks it lacks, and copies its chunk files into the version at the end.
        HttpResponse asked = control->post("/v1/uploads/" + version, manifest_text, 600000);
        if (asked.status == 404)
            asked = control->post("/v1/chunks/missing", nlohmann::json{{"chunks", hashes}}.dump(), 60000);
        const nlohmann::json reply = asked.json();
        if (!asked.ok() || !reply.contains("missing") || !reply["missing"].is_array()) {
            error = "asking the worker which chunks it lacks failed: " + asked.message();
            return false;
        }
        std::vector<ChunkSource> work;
        // Only hashes of our own manifest are sent (a name the worker made up selects nothing).
        for (const auto& hash : reply["missing"])
            if (auto it = hash.is_string() ? sources.find(hash.get_ref<const std::string&>()) : sources.end(); it != sources.end())
                work.push_back(it->second);
        std::mutex mutex;
        result.chunks_to_send += static_cast<int64_t>(work.size());
        for (const ChunkSource& chunk : work)
            result.bytes_to_send += chunk.size;
        std::atomic<size_t> next{0};
        std::atomic<bool> failed{false};
        auto send = [&] {
            auto connection = client.fork();
            for (size_t i; !failed.load() && (i = next.fetch_add(1)) < work.size();) {
                std::string chunk_error;
                bool ok = !(options.cancel && options.cancel->load());
                if (!ok)
                    chunk_error = "cancelled; upload again to continue where it stopped";
                if (ok && options.stop_after_bytes > 0) {
                    std::lock_guard lock(mutex);
                    if (result.bytes_sent >= options.stop_after_bytes)
                        ok = false, chunk_error = "interrupted (test)";
                }
                // Read from the file as it is sent (into libcurl's buffer): no copy of the chunk in memory.
                const int fd = ok ? ::open(work[i].path.c_str(), O_RDONLY | O_CLOEXEC) : -1;
                if (ok && fd < 0)
                    ok = false, chunk_error = work[i].path + ": cannot read (" + std::strerror(errno) + ")";
                for (int attempt = 0; ok && attempt < 3; ++attempt) {
                    HttpResponse sent = connection->put_file("/v1/chunks/" + work[i].hash, fd, work[i].offset,
                                                             work[i].size, "application/octet-stream");
                    if (sent.ok())
                        break;
                    if (sent.status == 0 && sent.error.find("shorter than") != std::string::npos) {
                        ok = false;
                        chunk_error =
                            work[i].path + ": shorter than when it was registered; register the dataset again";
                    } else if (sent.status == 400) {
                        // The bytes on disk no longer hash to what was registered.
                        ok = false;
                        chunk_error = work[i].path + ": changed since the dataset was registered (" + sent.message() +
                                      "); register it again to make a new version";
                    } else if (attempt == 2 || sent.status == 507 || sent.status == 401) {
                        ok = false;
                        chunk_error = "sending a chunk of " + work[i].relative + " failed: " + sent.message();
                    }
                }
                if (fd >= 0)
                    ::close(fd);
                std::lock_guard lock(mutex);
                if (!ok) {
                    if (!failed.exchange(true))
                        error = chunk_error;
                    return;
                }
                result.bytes_sent += work[i].size;
                ++result.chunks_sent;
                result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
                if (options.progress)
                    options.progress(result);
            }
        };
        std::vector<std::thread> pool;
        for (int t = 1; t < std::max(1, options.connections); ++t)
            pool.emplace_back(send);
        send();
        for (std::thread& thread : pool)
            thread.join();
        if (failed.load())
            return false;
        HttpResponse built = control->put("/v1/datasets/" + version, manifest_text, "application/json", 600000);
        result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (built.ok())
            return true;
        if (built.status != 409 && built.status != 422) {
            error = "the worker could not build the version: " + built.message();
            return false;
        }
        error = "the worker could not build the version: " + built.message();
    }
    return false;
}

} // namespace traindeck::client
