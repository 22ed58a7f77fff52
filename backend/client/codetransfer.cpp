#include "codetransfer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <memory>

namespace traindeck::client {

using nlohmann::json;

bool fetch_code_manifest(const WorkerClient& from, const std::string& version, dataset::Manifest& manifest,
                         std::string& error) {
    if (!dataset::is_sha256_hex(version)) {
        error = "a code snapshot is named by 64 lower-case hex digits";
        return false;
    }
    std::unique_ptr<WorkerClient> source = from.fork();
    source->set_max_response_bytes(size_t(64) << 20); // a manifest of the largest snapshot is far smaller
    const HttpResponse listed = source->get("/v1/code/" + version);
    if (!listed.ok()) {
        error = "the run's worker cannot give its code snapshot: " + listed.message();
        return false;
    }
    if (const json body = listed.json();
        !dataset::Manifest::from_json(body, manifest, error) || manifest.version() != version) {
        error = "the run's worker sent a snapshot manifest that is not version " + version.substr(0, 12) + "…" +
                (error.empty() ? "" : ": " + error);
        return false;
    }
    return true;
}

bool fetch_chunk(const WorkerClient& from, const std::string& hash, std::string& bytes, std::string& error) {
    if (!dataset::is_sha256_hex(hash)) {
        error = "a chunk is named by 64 lower-case hex digits";
        return false;
    }
    std::unique_ptr<WorkerClient> source = from.fork();
    source->set_max_response_bytes(static_cast<size_t>(dataset::kChunkBytes)); // a chunk is never larger
    HttpResponse got = source->get("/v1/chunks/" + hash, 60000);
    if (!got.ok()) {
        error = "the run's worker cannot give chunk " + hash.substr(0, 12) + "…: " + got.message();
        return false;
    }
    if (dataset::sha256_hex(got.body.data(), got.body.size()) != hash) {
        error = "the run's worker sent other bytes for chunk " + hash.substr(0, 12) +
                "… (its store is damaged?); nothing of them was sent on";
        return false;
    }
    bytes = std::move(got.body);
    return true;
}

bool store_code_snapshot(const WorkerClient& to, const dataset::Manifest& manifest, const ChunkSource& source,
                         CodeTransfer& result, std::string& error) {
    result = {};
    result.files = static_cast<int64_t>(manifest.files.size());
    result.bytes = manifest.bytes();
    std::unique_ptr<WorkerClient> target = to.fork();
    const std::vector<std::string> chunks = manifest.chunk_hashes();
    const HttpResponse asked = target->post("/v1/chunks/missing", json{{"chunks", chunks}});
    const json missing = asked.json();
    if (!asked.ok() || !missing.contains("missing") || !missing["missing"].is_array()) {
        error = "the target worker did not say which chunks it lacks: " + asked.message();
        return false;
    }
    for (const json& hash : missing["missing"]) {
        if (!hash.is_string() || std::find(chunks.begin(), chunks.end(), hash.get<std::string>()) == chunks.end()) {
            error = "the target worker asked for a chunk that is not the snapshot's";
            return false;
        }
        const std::string name = hash;
        std::string bytes;
        if (!source(name, bytes, error))
            return false;
        if (dataset::sha256_hex(bytes.data(), bytes.size()) != name) {
            error = "the run's backend sent other bytes for chunk " + name.substr(0, 12) +
                    "… (its store is damaged?); nothing of them was sent on";
            return false;
        }
        const HttpResponse put = target->put("/v1/chunks/" + name, bytes, "application/octet-stream");
        if (!put.ok()) {
            error = "the target worker did not take chunk " + name.substr(0, 12) + "…: " + put.message();
            return false;
        }
        ++result.chunks_sent;
        result.bytes_sent += static_cast<int64_t>(bytes.size());
    }
    const HttpResponse stored =
        target->put("/v1/code/" + manifest.version(), manifest.to_json().dump(), "application/json");
    if (!stored.ok()) {
        error = "the target worker did not take the snapshot: " + stored.message();
        return false;
    }
    return true;
}

bool copy_code_snapshot(const WorkerClient& from, const WorkerClient& to, const std::string& version,
                        CodeTransfer& result, std::string& error) {
    dataset::Manifest manifest;
    if (!fetch_code_manifest(from, version, manifest, error))
        return false;
    return store_code_snapshot(
        to, manifest,
        [&from](const std::string& hash, std::string& bytes, std::string& why) {
            return fetch_chunk(from, hash, bytes, why);
        },
        result, error);
}

} // namespace traindeck::client
