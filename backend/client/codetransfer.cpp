#include "codetransfer.h"

#include "manifest.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <memory>

namespace traindeck::client {

using nlohmann::json;

bool copy_code_snapshot(const WorkerClient& from, const WorkerClient& to, const std::string& version,
                        CodeTransfer& result, std::string& error) {
    result = {};
    if (!dataset::is_sha256_hex(version)) {
        error = "a code snapshot is named by 64 lower-case hex digits";
        return false;
    }
    std::unique_ptr<WorkerClient> source = from.fork(), target = to.fork();
    const HttpResponse listed = source->get("/v1/code/" + version);
    if (!listed.ok()) {
        error = "the run's worker cannot give its code snapshot: " + listed.message();
        return false;
    }
    dataset::Manifest manifest;
    if (const json body = listed.json();
        !dataset::Manifest::from_json(body, manifest, error) || manifest.version() != version) {
        error = "the run's worker sent a snapshot manifest that is not version " + version.substr(0, 12) + "…" +
                (error.empty() ? "" : ": " + error);
        return false;
    }
    result.files = static_cast<int64_t>(manifest.files.size());
    result.bytes = manifest.bytes();
    std::vector<std::string> chunks;
    for (const dataset::ManifestFile& file : manifest.files)
        chunks.insert(chunks.end(), file.chunks.begin(), file.chunks.end());
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
        const HttpResponse got = source->get("/v1/chunks/" + name, 60000);
        if (!got.ok()) {
            error = "the run's worker cannot give chunk " + name.substr(0, 12) + "…: " + got.message();
            return false;
        }
        if (dataset::sha256_hex(got.body.data(), got.body.size()) != name) {
            error = "the run's worker sent other bytes for chunk " + name.substr(0, 12) +
                    "… (its store is damaged?); nothing of them was sent on";
            return false;
        }
        const HttpResponse put = target->put("/v1/chunks/" + name, got.body, "application/octet-stream");
        if (!put.ok()) {
            error = "the target worker did not take chunk " + name.substr(0, 12) + "…: " + put.message();
            return false;
        }
        ++result.chunks_sent;
        result.bytes_sent += static_cast<int64_t>(got.body.size());
    }
    const HttpResponse stored = target->put("/v1/code/" + version, manifest.to_json().dump(), "application/json");
    if (!stored.ok()) {
        error = "the target worker did not take the snapshot: " + stored.message();
        return false;
    }
    return true;
}

} // namespace traindeck::client
