// Datasets sent to a real worker over loopback HTTP: only missing chunks travel, interrupted uploads resume,
// damaged or hostile input is refused, and a job reads its dataset version read-only.
#include "contentstore.h"
#include "datasetupload.h"
#include "manifest.h"
#include "randombytes.h"
#include "requireall.h"
#include "workerprocess.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>
#include <tuple>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace traindeck;
using namespace traindeck::test;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

struct Folder {
    Folder() {
        std::string pattern = (fs::temp_directory_path() / "traindeck-upload-XXXXXX").string();
        path = ::mkdtemp(pattern.data());
    }
    ~Folder() { fs::remove_all(path); }
    std::string file(const std::string& name) const { return path + "/" + name; }
    std::string path;
};

void write_random(const std::string& path, size_t size, unsigned seed) {
    fs::create_directories(fs::path(path).parent_path());
    std::mt19937 rng(seed);
    std::string bytes(size, '\0');
    for (char& c : bytes)
        c = static_cast<char>(rng());
    std::ofstream(path, std::ios::binary) << bytes;
}

dataset::Manifest scan(const std::string& root) {
    dataset::Manifest manifest;
    std::string error;
    EXPECT_TRUE(dataset::scan_manifest(root, manifest, error)) << error;
    return manifest;
}

client::UploadProgress upload(WorkerProcess& worker, const dataset::Manifest& manifest, const std::string& root,
                              const client::UploadOptions& options = {}) {
    client::UploadProgress progress;
    std::string error;
    EXPECT_TRUE(client::upload_dataset(worker.client(), manifest, root, progress, error, options)) << error;
    return progress;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Compared by hash: a failing comparison of megabytes would print them.
std::string file_hash(const std::string& path) {
    const std::string bytes = read_file(path);
    return dataset::sha256_hex(bytes.data(), bytes.size()) + " (" + std::to_string(bytes.size()) + " bytes)";
}

} // namespace

TEST(DataStore, UploadSendsOnlyWhatTheWorkerLacksAndBuildsAReadOnlyCopy) {
    WorkerProcess worker;
    Folder data;
    for (int i = 0; i < 10; ++i)
        write_random(data.file("part/" + std::to_string(i) + ".bin"), 200000 + i, i);
    write_random(data.file("big.bin"), dataset::kChunkBytes * 2 + 777, 42);
    const dataset::Manifest first = scan(data.path);
    const client::UploadProgress sent = upload(worker, first, data.path);
    EXPECT_EQ(sent.bytes_sent, first.bytes());
    EXPECT_EQ(sent.chunks_sent, 13);

    // The worker's copy: byte-identical, read-only, under the version's name.
    const std::string copy = worker.state_dir() + "/store/datasets/" + first.version();
    for (const auto& file : first.files) {
        EXPECT_EQ(file_hash(copy + "/" + file.path), file_hash(data.file(file.path))) << file.path;
        struct stat info {};
        ::stat((copy + "/" + file.path).c_str(), &info);
        EXPECT_EQ(info.st_mode & 0777, 0444u) << file.path;
    }
    struct stat info {};
    ::stat(copy.c_str(), &info);
    EXPECT_EQ(info.st_mode & 0777, 0555u);
    EXPECT_EQ(worker.client().get("/v1/datasets/" + first.version()).status, 200);
    // Each byte was stored once, in the version's files: no chunk file was written on the way.
    size_t chunk_files = 0;
    for (const auto& entry : fs::recursive_directory_iterator(worker.state_dir() + "/store/chunks"))
        chunk_files += entry.is_regular_file() ? 1 : 0;
    EXPECT_EQ(chunk_files, 0u);

    // Again: nothing to send.
    EXPECT_EQ(upload(worker, first, data.path).bytes_sent, 0);

    // One file of ten changed (and one chunk of the big file): only those chunks travel.
    write_random(data.file("part/3.bin"), 200003, 1003);
    {
        std::fstream big(data.file("big.bin"), std::ios::in | std::ios::out | std::ios::binary);
        big.seekp(dataset::kChunkBytes + 5);
        big.write("changed", 7);
    }
    const dataset::Manifest second = scan(data.path);
    ASSERT_NE(second.version(), first.version());
    const client::UploadProgress delta = upload(worker, second, data.path);
    EXPECT_EQ(delta.chunks_sent, 2);
    EXPECT_EQ(delta.bytes_sent, 200003 + dataset::kChunkBytes);
    EXPECT_EQ(file_hash(worker.state_dir() + "/store/datasets/" + second.version() + "/big.bin"), file_hash(data.file("big.bin")));
    const json listed = worker.client().get("/v1/datasets").json();
    EXPECT_EQ(listed["datasets"].size(), 2u);
}

// A worker from before POST /v1/uploads (it answers 404 there): the client falls back to asking which chunks are
// missing, the chunks become chunk files, and the version is built from them, whole.
TEST(DataStore, AClientFallsBackToTheOlderProtocolOnAnOlderWorker) {
    WorkerProcess worker;
    ASSERT_TRUE(worker.running());
    // The older worker: the real one behind a proxy that knows no /v1/uploads.
    httplib::Server proxy;
    std::atomic<int> refused{0};
    proxy.Post(R"(/v1/uploads/.*)", [&](const httplib::Request&, httplib::Response& res) {
        ++refused;
        res.status = 404;
        res.set_content(R"({"error":"no such endpoint"})", "application/json");
    });
    auto forward = [&](const httplib::Request& req, httplib::Response& res) {
        httplib::Client to(worker.url());
        to.set_read_timeout(60, 0);
        const httplib::Headers headers = {{"Authorization", req.get_header_value("Authorization")}};
        const std::string type = req.get_header_value("Content-Type");
        const httplib::Result answer = req.method == "GET"    ? to.Get(req.path, headers)
                                       : req.method == "POST" ? to.Post(req.path, headers, req.body, type)
                                                              : to.Put(req.path, headers, req.body, type);
        res.status = answer ? answer->status : 502;
        if (answer)
            res.set_content(answer->body, "application/json");
    };
    proxy.Get(".*", forward);
    proxy.Post(".*", forward);
    proxy.Put(".*", forward);
    const int port = proxy.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port, 0);
    std::thread serving([&] { proxy.listen_after_bind(); });

    Folder data;
    write_random(data.file("big.bin"), dataset::kChunkBytes + 321, 51);
    write_random(data.file("small.bin"), 7000, 52);
    const dataset::Manifest manifest = scan(data.path);
    client::WorkerClient older("http://127.0.0.1:" + std::to_string(port), worker.token());
    client::UploadProgress sent;
    std::string error;
    EXPECT_TRUE(client::upload_dataset(older, manifest, data.path, sent, error)) << error;
    proxy.stop();
    serving.join();
    EXPECT_GE(refused.load(), 1);
    EXPECT_EQ(sent.chunks_sent, 3);
    // The older way's chunk files, and the version copied from them.
    size_t chunk_files = 0;
    for (const auto& entry : fs::recursive_directory_iterator(worker.state_dir() + "/store/chunks"))
        chunk_files += entry.is_regular_file() ? 1 : 0;
    EXPECT_EQ(chunk_files, 3u);
    const std::string copy = worker.state_dir() + "/store/datasets/" + manifest.version();
    EXPECT_EQ(file_hash(copy + "/big.bin"), file_hash(data.file("big.bin")));
    EXPECT_EQ(file_hash(copy + "/small.bin"), file_hash(data.file("small.bin")));
}

TEST(DataStore, InterruptedUploadResumesAndShowsNothingHalfDone) {
    WorkerProcess worker;
    Folder data;
    for (int i = 0; i < 8; ++i)
        write_random(data.file(std::to_string(i) + ".bin"), dataset::kChunkBytes, 100 + i);
    const dataset::Manifest manifest = scan(data.path);
    client::UploadOptions stop_early;
    stop_early.connections = 1;
    stop_early.stop_after_bytes = 3 * dataset::kChunkBytes;
    client::UploadProgress partial;
    std::string error;
    EXPECT_FALSE(client::upload_dataset(worker.client(), manifest, data.path, partial, error, stop_early));
    EXPECT_FALSE(error.empty());
    EXPECT_EQ(partial.chunks_sent, 3);
    EXPECT_EQ(worker.client().get("/v1/datasets/" + manifest.version()).status, 404);
    // A job may not use a version that is not complete.
    const json request = {{"argv", {"/bin/true"}}, {"dataset", manifest.version()}};
    EXPECT_EQ(worker.client().post("/v1/jobs", request).status, 409);

    // The worker restarts in between: the chunks it has survive; the rest is sent.
    worker.kill_hard();
    ASSERT_TRUE(worker.restart());
    const client::UploadProgress rest = upload(worker, manifest, data.path);
    EXPECT_EQ(rest.chunks_sent, 5);
    EXPECT_EQ(rest.bytes_sent, 5 * dataset::kChunkBytes);
    EXPECT_EQ(worker.client().get("/v1/datasets/" + manifest.version()).status, 200);
}

// An upload left unfinished keeps its chunks for a resume, but not for ever: one nothing was written into for a
// week is removed when the worker next starts; a younger one stays.
TEST(DataStore, AnUploadAbandonedForAWeekIsRemovedAtTheNextStart) {
    WorkerProcess worker;
    Folder data;
    write_random(data.file("old/a.bin"), 1000, 31);
    write_random(data.file("young/b.bin"), 1000, 32);
    const dataset::Manifest old_one = scan(data.path + "/old"), young = scan(data.path + "/young");
    for (const auto& manifest : {old_one, young})
        ASSERT_EQ(worker.client().post("/v1/uploads/" + manifest.version(), manifest.to_json().dump()).status, 200);
    const std::string uploads = worker.state_dir() + "/store/uploads/";
    ASSERT_TRUE(fs::exists(uploads + old_one.version() + "/a.bin"));
    worker.kill_hard();
    auto age = [](const std::string& root, int days) {
        const auto when = fs::file_time_type::clock::now() - std::chrono::hours(24 * days);
        for (const auto& entry : fs::recursive_directory_iterator(root))
            fs::last_write_time(entry.path(), when);
        fs::last_write_time(root, when);
    };
    age(uploads + old_one.version(), dataset::kAbandonedUploadDays + 1);
    age(uploads + young.version(), dataset::kAbandonedUploadDays - 1);
    ASSERT_TRUE(worker.restart());
    EXPECT_FALSE(fs::exists(uploads + old_one.version()));
    EXPECT_TRUE(fs::exists(uploads + young.version() + "/b.bin"));
}

TEST(DataStore, DamagedAndHostileInputIsRefused) {
    WorkerProcess worker;
    client::WorkerClient& http = worker.client();
    const std::string bytes = "some chunk bytes";
    const std::string hash = dataset::sha256_hex(bytes.data(), bytes.size());
    // Bytes that do not hash to their name.
    auto damaged = http.put("/v1/chunks/" + hash, bytes + "!", "application/octet-stream");
    EXPECT_EQ(damaged.status, 400);
    EXPECT_NE(damaged.message().find("do not hash"), std::string::npos) << damaged.message();
    EXPECT_EQ(http.put("/v1/chunks/" + hash, bytes, "application/octet-stream").status, 201);
    EXPECT_EQ(http.put("/v1/chunks/" + hash, bytes, "application/octet-stream").status, 200);
    EXPECT_EQ(http.put("/v1/chunks/NOTAHASH", bytes, "application/octet-stream").status, 404);

    auto manifest_for = [&](const std::string& path) {
        return json{{"format", 1},
                    {"files", {{{"path", path}, {"size", bytes.size()}, {"sha256", hash}, {"chunks", {hash}}}}}};
    };
    // A path that leaves the dataset folder.
    dataset::Manifest good;
    std::string error;
    ASSERT_TRUE(dataset::Manifest::from_json(manifest_for("ok.txt"), good, error));
    auto escape = http.put("/v1/datasets/" + good.version(), manifest_for("../../escape.txt").dump(), "application/json");
    EXPECT_EQ(escape.status, 400);
    EXPECT_NE(escape.message().find("leaves the dataset folder"), std::string::npos) << escape.message();
    EXPECT_FALSE(fs::exists(worker.state_dir() + "/store/escape.txt"));
    // A version that is not the manifest's.
    EXPECT_EQ(http.put("/v1/datasets/" + std::string(64, 'b'), manifest_for("ok.txt").dump(), "application/json").status, 400);
    EXPECT_EQ(http.put("/v1/datasets/" + good.version(), std::string("{not json"), "application/json").status, 400);
    // A manifest whose chunks are not there yet: 409 lists them.
    const std::string other = "other bytes";
    const std::string other_hash = dataset::sha256_hex(other.data(), other.size());
    const json missing_manifest = {{"format", 1},
                                   {"files", {{{"path", "x"}, {"size", other.size()}, {"sha256", other_hash}, {"chunks", {other_hash}}}}}};
    dataset::Manifest missing;
    ASSERT_TRUE(dataset::Manifest::from_json(missing_manifest, missing, error));
    auto early = http.put("/v1/datasets/" + missing.version(), missing_manifest.dump(), "application/json");
    EXPECT_EQ(early.status, 409);
    EXPECT_EQ(early.json()["missing"], json::array({other_hash}));
    EXPECT_EQ(http.put("/v1/datasets/" + good.version(), manifest_for("ok.txt").dump(), "application/json").status, 201);
    // Chunk uploads need the token like everything else.
    client::WorkerClient stranger(worker.url(), "wrong-token");
    EXPECT_EQ(stranger.put("/v1/chunks/" + other_hash, other, "application/octet-stream").status, 401);
    EXPECT_FALSE(fs::exists(worker.state_dir() + "/store/chunks/" + other_hash.substr(0, 2) + "/" + other_hash));
}

// A client that says a file hashes to other bytes than its chunks: every chunk arrives whole and right, and the
// version is still refused. Then a chunk the store holds only in a file a job changed behind the seal's back is
// found damaged when it is copied into a new version, and asked for again.
TEST(DataStore, AFileThatDoesNotHashToItsManifestIsRefusedAndACopiedChunkIsHashChecked) {
    WorkerProcess worker;
    client::WorkerClient& http = worker.client();
    Folder data;
    write_random(data.file("big.bin"), dataset::kChunkBytes + 999, 7);
    write_random(data.file("small.bin"), 5000, 8);
    const dataset::Manifest manifest = scan(data.path);
    json lying = manifest.to_json();
    lying["files"][0]["sha256"] = manifest.files[1].sha256; // big.bin's hash said to be small.bin's
    dataset::Manifest liar;
    std::string error;
    ASSERT_TRUE(dataset::Manifest::from_json(lying, liar, error)) << error;
    auto begun = http.post("/v1/uploads/" + liar.version(), lying.dump());
    ASSERT_EQ(begun.status, 200) << begun.message();
    EXPECT_EQ(begun.json()["missing"].size(), 3u);
    const std::string big = read_file(data.file("big.bin"));
    const std::vector<std::string> pieces = {big.substr(0, dataset::kChunkBytes), big.substr(dataset::kChunkBytes),
                                             read_file(data.file("small.bin"))};
    for (const std::string& piece : pieces)
        EXPECT_EQ(
            http.put("/v1/chunks/" + dataset::sha256_hex(piece.data(), piece.size()), piece, "application/octet-stream")
                .status,
            201);
    auto refused = http.put("/v1/datasets/" + liar.version(), lying.dump(), "application/json");
    EXPECT_EQ(refused.status, 422);
    EXPECT_NE(refused.message().find("big.bin: its chunks do not hash to the manifest's"), std::string::npos)
        << refused.message();
    EXPECT_EQ(http.get("/v1/datasets/" + liar.version()).status, 404);

    // The honest manifest, with one more file: big.bin's chunks were forgotten with the lie and travel again;
    // small.bin's is copied from the refused upload's file.
    write_random(data.file("solo.bin"), 3000, 10);
    const dataset::Manifest honest = scan(data.path);
    const client::UploadProgress sent = upload(worker, honest, data.path);
    EXPECT_EQ(sent.chunks_sent, 3);
    EXPECT_EQ(sent.bytes_sent, dataset::kChunkBytes + 999 + 3000);
    const std::string copy = worker.state_dir() + "/store/datasets/" + honest.version();
    for (const char* name : {"big.bin", "small.bin", "solo.bin"})
        EXPECT_EQ(file_hash(copy + "/" + name), file_hash(data.file(name))) << name;

    // Rot in the published copy of solo.bin (no job ran, so no seal check saw it), the store's only copy of its
    // chunk. A second version holds the same solo.bin and one new file: the worker believes it holds the chunk,
    // finds it damaged when it copies it, and asks for it.
    fs::permissions(copy + "/solo.bin", fs::perms::owner_write, fs::perm_options::add);
    {
        std::fstream rot(copy + "/solo.bin", std::ios::in | std::ios::out | std::ios::binary);
        rot.seekp(10);
        rot.write("ROT", 3);
    }
    write_random(data.file("new.bin"), 1234, 9);
    const dataset::Manifest second = scan(data.path);
    const client::UploadProgress delta = upload(worker, second, data.path);
    EXPECT_EQ(delta.chunks_sent, 2); // new.bin, then solo.bin once its copy was refused
    EXPECT_EQ(delta.bytes_sent, 1234 + 3000);
    EXPECT_EQ(file_hash(worker.state_dir() + "/store/datasets/" + second.version() + "/solo.bin"),
              file_hash(data.file("solo.bin")));
}

// A file of several chunks is hashed whole as its chunks arrive, in whatever order they come; a chunk of one that
// arrives damaged is taken (it is not hashed alone) and the file is refused at the end, its chunks asked for again.
TEST(DataStore, ALargeFileIsVerifiedWholeWhateverOrderItsChunksComeIn) {
    WorkerProcess worker;
    client::WorkerClient& http = worker.client();
    Folder data;
    write_random(data.file("three.bin"), 2 * dataset::kChunkBytes + 100, 21);
    const dataset::Manifest manifest = scan(data.path);
    const std::string bytes = read_file(data.file("three.bin"));
    auto piece = [&](size_t c) { return bytes.substr(c * dataset::kChunkBytes, dataset::kChunkBytes); };
    auto put = [&](const std::string& chunk_bytes, const std::string& name) {
        return http.put("/v1/chunks/" + name, chunk_bytes, "application/octet-stream").status;
    };
    ASSERT_EQ(http.post("/v1/uploads/" + manifest.version(), manifest.to_json().dump()).status, 200);
    for (size_t c : {2u, 0u, 1u})
        EXPECT_EQ(put(piece(c), manifest.files[0].chunks[c]), 201) << c;
    EXPECT_EQ(http.put("/v1/datasets/" + manifest.version(), manifest.to_json().dump(), "application/json").status,
              201);
    EXPECT_EQ(file_hash(worker.state_dir() + "/store/datasets/" + manifest.version() + "/three.bin"),
              file_hash(data.file("three.bin")));

    // Another version: a two-chunk file whose first chunk arrives with a byte flipped.
    write_random(data.file("two.bin"), dataset::kChunkBytes + 5, 22);
    fs::remove(data.file("three.bin"));
    const dataset::Manifest second = scan(data.path);
    const std::string two = read_file(data.file("two.bin"));
    std::string damaged = two.substr(0, dataset::kChunkBytes);
    damaged[12345] ^= 0x20;
    auto begun = http.post("/v1/uploads/" + second.version(), second.to_json().dump());
    ASSERT_EQ(begun.status, 200);
    EXPECT_EQ(begun.json()["missing"].size(), 2u);
    EXPECT_EQ(put(damaged, second.files[0].chunks[0]), 201);
    EXPECT_EQ(put(two.substr(dataset::kChunkBytes), second.files[0].chunks[1]), 201);
    auto refused = http.put("/v1/datasets/" + second.version(), second.to_json().dump(), "application/json");
    EXPECT_EQ(refused.status, 422);
    EXPECT_NE(refused.message().find("two.bin: its chunks do not hash"), std::string::npos) << refused.message();
    EXPECT_EQ(http.get("/v1/datasets/" + second.version()).status, 404);
    // Both of its chunks are asked for again; sent right, the version is built.
    begun = http.post("/v1/uploads/" + second.version(), second.to_json().dump());
    EXPECT_EQ(begun.json()["missing"], json(second.files[0].chunks));
    EXPECT_EQ(put(two.substr(0, dataset::kChunkBytes), second.files[0].chunks[0]), 201);
    EXPECT_EQ(put(two.substr(dataset::kChunkBytes), second.files[0].chunks[1]), 201);
    EXPECT_EQ(http.put("/v1/datasets/" + second.version(), second.to_json().dump(), "application/json").status, 201);
    EXPECT_EQ(file_hash(worker.state_dir() + "/store/datasets/" + second.version() + "/two.bin"),
              file_hash(data.file("two.bin")));
}

// A chunk written into an upload's file of several chunks is checked only with its whole file, when the upload
// completes. A code snapshot, which nothing checks later, does not count it as held: its chunk is asked for and kept
// in a place of its own, and survives the upload's failing check.
TEST(DataStore, AChunkOnlyInAnUploadNotYetCheckedIsNotHeldForACodeSnapshot) {
    WorkerProcess worker;
    client::WorkerClient& http = worker.client();
    Folder data;
    write_random(data.file("two.bin"), dataset::kChunkBytes + 5, 23);
    const dataset::Manifest version = scan(data.path);
    const std::string two = read_file(data.file("two.bin"));
    const std::string first = two.substr(0, dataset::kChunkBytes), hash = version.files[0].chunks[0];
    std::string damaged = first;
    damaged[777] ^= 0x01;
    ASSERT_EQ(http.post("/v1/uploads/" + version.version(), version.to_json().dump()).status, 200);
    EXPECT_EQ(http.put("/v1/chunks/" + hash, damaged, "application/octet-stream").status, 201);

    // A snapshot of a file whose bytes are that chunk.
    Folder code;
    std::ofstream(code.file("piece.bin"), std::ios::binary) << first;
    const dataset::Manifest snapshot = scan(code.path);
    ASSERT_EQ(snapshot.files.at(0).chunks, std::vector<std::string>{hash});
    const auto asked = http.post("/v1/chunks/missing", json{{"chunks", {hash}}}.dump());
    ASSERT_EQ(asked.status, 200);
    EXPECT_EQ(asked.json()["missing"], json::array({hash}));
    EXPECT_EQ(http.put("/v1/code/" + snapshot.version(), snapshot.to_json().dump(), "application/json").status, 409);
    EXPECT_EQ(http.put("/v1/chunks/" + hash, first, "application/octet-stream").status, 201); // a place of its own
    EXPECT_EQ(http.put("/v1/code/" + snapshot.version(), snapshot.to_json().dump(), "application/json").status, 201);

    // The upload fails its check and forgets the chunk; the snapshot's copy is whole.
    EXPECT_EQ(http.put("/v1/chunks/" + version.files[0].chunks[1], two.substr(dataset::kChunkBytes),
                       "application/octet-stream")
                  .status,
              201);
    EXPECT_EQ(http.put("/v1/datasets/" + version.version(), version.to_json().dump(), "application/json").status, 422);
    EXPECT_EQ(file_hash(worker.state_dir() + "/store/chunks/" + hash.substr(0, 2) + "/" + hash),
              hash + " (" + std::to_string(first.size()) + " bytes)");
}

// A connection to the worker of our own: requests written byte for byte, answers read as they come.
class RawConnection {
public:
    explicit RawConnection(const std::string& url) {
        fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        address.sin_port = htons(static_cast<uint16_t>(std::stoi(url.substr(url.rfind(':') + 1))));
        connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
        // A worker that never answers fails the test instead of hanging it (the answers come within its 5 s read
        // timeout and a poll of as long).
        const timeval limit{60, 0};
        ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
    }
    ~RawConnection() { ::close(fd_); }
    bool connected() const { return connected_; }
    bool send(const std::string& bytes) const {
        for (size_t sent = 0; sent < bytes.size();) {
            const ssize_t wrote = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
            if (wrote <= 0)
                return false;
            sent += static_cast<size_t>(wrote);
        }
        return true;
    }
    void stop_sending() const { ::shutdown(fd_, SHUT_WR); }
    // One answer's status and body (a Content-Length body); 0 when the connection ended first.
    std::pair<int, std::string> answer() {
        size_t end;
        while ((end = pending_.find("\r\n\r\n")) == std::string::npos)
            if (!more())
                return {0, ""};
        std::string head = pending_.substr(0, end);
        for (char& c : head)
            c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        const size_t length_at = head.find("content-length:");
        const size_t length = length_at == std::string::npos ? 0 : std::stoul(head.substr(length_at + 15));
        while (pending_.size() < end + 4 + length)
            if (!more())
                return {0, ""};
        const int status = std::stoi(pending_.substr(9, 3));
        std::string body = pending_.substr(end + 4, length);
        pending_.erase(0, end + 4 + length);
        return {status, body};
    }
    // True when the worker closed the connection (and sent nothing more).
    bool closed_by_peer() { return pending_.empty() && !more(); }

private:
    bool more() {
        char buffer[65536];
        const ssize_t got = ::recv(fd_, buffer, sizeof(buffer), 0);
        if (got <= 0)
            return false;
        pending_.append(buffer, static_cast<size_t>(got));
        return true;
    }
    int fd_ = -1;
    bool connected_ = false;
    std::string pending_;
};

std::string chunk_put(const std::string& hash, const std::string& token, size_t length, const std::string& extra = {}) {
    return "PUT /v1/chunks/" + hash + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + token +
           "\r\nContent-Length: " + std::to_string(length) + "\r\n" + extra + "\r\n";
}

// The worker reads a chunk's body from the socket itself, past httplib (workerserver's bodyreader): it must take
// exactly the body, on a kept-alive connection, whichever way the bytes come, and a sender that stops or lies about
// the length must neither store a chunk nor leave the connection reading the rest of a body as its next request.
TEST(DataStore, ChunkBodiesReadPastHttplibKeepTheConnectionInStepAndRefuseSendersThatStop) {
    WorkerProcess worker;
    ASSERT_TRUE(worker.running());
    auto stored = [&](const std::string& hash) {
        return fs::exists(worker.state_dir() + "/store/chunks/" + hash.substr(0, 2) + "/" + hash);
    };
    const std::string whole = random_bytes(static_cast<size_t>(dataset::kChunkBytes), 1);
    const std::string pieces = random_bytes(3 << 20, 2);
    const std::string small = random_bytes(100, 3);
    const std::string whole_hash = dataset::sha256_hex(whole.data(), whole.size());
    const std::string pieces_hash = dataset::sha256_hex(pieces.data(), pieces.size());
    const std::string small_hash = dataset::sha256_hex(small.data(), small.size());
    {
        RawConnection connection(worker.url());
        ASSERT_TRUE(connection.connected());
        // Head and body in one write: part of the body arrives in httplib's buffer with the head.
        ASSERT_TRUE(connection.send(chunk_put(whole_hash, worker.token(), whole.size()) + whole));
        auto [status, body] = connection.answer();
        EXPECT_EQ(status, 201) << body;
        // The head alone, then the body in three writes, the second answer on the same connection.
        ASSERT_TRUE(connection.send(chunk_put(pieces_hash, worker.token(), pieces.size())));
        for (size_t at = 0; at < pieces.size(); at += 1 << 20)
            ASSERT_TRUE(connection.send(pieces.substr(at, 1 << 20)));
        std::tie(status, body) = connection.answer();
        EXPECT_EQ(status, 201) << body;
        // A body smaller than httplib's first read, then a request with no body. (Not in one write: httplib 0.11
        // drops what it read past a request, so no client pipelines requests to it.)
        ASSERT_TRUE(connection.send(chunk_put(small_hash, worker.token(), small.size()) + small));
        std::tie(status, body) = connection.answer();
        EXPECT_EQ(status, 201) << body;
        ASSERT_TRUE(connection.send("GET /v1/health HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + worker.token() +
                                    "\r\n\r\n"));
        std::tie(status, body) = connection.answer();
        EXPECT_EQ(status, 200) << body;
        // Damaged on the way: refused by its hash, and the connection still answers.
        std::string damaged = whole;
        damaged[12345] ^= 1;
        ASSERT_TRUE(connection.send(chunk_put(whole_hash, worker.token(), damaged.size()) + damaged));
        std::tie(status, body) = connection.answer();
        EXPECT_EQ(status, 400);
        EXPECT_NE(body.find("do not hash"), std::string::npos) << body;
    }
    EXPECT_TRUE(stored(whole_hash));
    EXPECT_TRUE(stored(pieces_hash));
    EXPECT_TRUE(stored(small_hash));

    const std::string other = random_bytes(2 << 20, 4);
    const std::string other_hash = dataset::sha256_hex(other.data(), other.size());
    {
        // A sender that stops half way and waits: after the worker's read timeout, 408, and the connection ends
        // (what it would send next is the rest of that body, not a request).
        RawConnection connection(worker.url());
        ASSERT_TRUE(connection.send(chunk_put(other_hash, worker.token(), other.size()) + other.substr(0, 1 << 20)));
        auto [status, body] = connection.answer();
        EXPECT_EQ(status, 408) << body;
        EXPECT_NE(body.find("stopped sending"), std::string::npos) << body;
        EXPECT_TRUE(connection.closed_by_peer());
    }
    EXPECT_FALSE(stored(other_hash));
    {
        // A sender that says more than it sends and closes its side: 400, nothing stored, the connection ended.
        RawConnection connection(worker.url());
        ASSERT_TRUE(connection.send(chunk_put(other_hash, worker.token(), other.size()) + other.substr(0, 1 << 20)));
        connection.stop_sending();
        auto [status, body] = connection.answer();
        EXPECT_EQ(status, 400) << body;
        EXPECT_NE(body.find("did not arrive whole"), std::string::npos) << body;
        EXPECT_TRUE(connection.closed_by_peer());
    }
    EXPECT_FALSE(stored(other_hash));
    {
        // A multipart form (curl -F) is not a chunk's bytes: refused, and read to its end, so the connection still
        // answers its next request; one with no boundary, which httplib will not read, is answered and closed.
        RawConnection connection(worker.url());
        const std::string form =
            "--XYZ\r\nContent-Disposition: form-data; name=\"f\"; filename=\"a\"\r\n\r\n" + other + "\r\n--XYZ--\r\n";
        ASSERT_TRUE(connection.send(
            chunk_put(other_hash, worker.token(), form.size(), "Content-Type: multipart/form-data; boundary=XYZ\r\n") +
            form));
        auto [status, body] = connection.answer();
        EXPECT_EQ(status, 400) << body;
        EXPECT_NE(body.find("not a multipart form"), std::string::npos) << body;
        ASSERT_TRUE(connection.send("GET /v1/health HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + worker.token() +
                                    "\r\n\r\n"));
        EXPECT_EQ(connection.answer().first, 200);
        // A short body, sent with its head in one write: the worker answers and closes without reading a body, and
        // a long one still being sent would meet a reset (the send failing, the answer lost; seen once in a suite).
        const std::string short_body = "0123456789abcdef";
        ASSERT_TRUE(connection.send(
            chunk_put(other_hash, worker.token(), short_body.size(), "Content-Type: multipart/form-data\r\n") +
            short_body));
        std::tie(status, body) = connection.answer();
        EXPECT_EQ(status, 400) << body;
        EXPECT_TRUE(connection.closed_by_peer());
    }
    EXPECT_FALSE(stored(other_hash));
    {
        // Longer than a chunk may be: read whole through httplib and refused; the connection still answers.
        const std::string large = random_bytes(static_cast<size_t>(dataset::kChunkBytes) + 1, 5);
        const std::string large_hash = dataset::sha256_hex(large.data(), large.size());
        RawConnection connection(worker.url());
        ASSERT_TRUE(connection.send(chunk_put(large_hash, worker.token(), large.size()) + large));
        auto [status, body] = connection.answer();
        EXPECT_EQ(status, 413) << body;
        EXPECT_NE(body.find("larger than"), std::string::npos) << body;
        EXPECT_FALSE(stored(large_hash));
        // A chunked transfer (no Content-Length) goes through httplib too, and is stored.
        std::ostringstream chunked;
        chunked << "PUT /v1/chunks/" << other_hash << " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " << worker.token()
                << "\r\nTransfer-Encoding: chunked\r\n\r\n"
                << std::hex << other.size() << "\r\n"
                << other << "\r\n0\r\n\r\n";
        ASSERT_TRUE(connection.send(chunked.str()));
        std::tie(status, body) = connection.answer();
        EXPECT_EQ(status, 201) << body;
    }
    EXPECT_TRUE(stored(other_hash));
    // No token: refused before any body is read, as every endpoint.
    {
        RawConnection connection(worker.url());
        ASSERT_TRUE(connection.send(chunk_put(small_hash, "wrong", small.size()) + small));
        EXPECT_EQ(connection.answer().first, 401);
    }
}

TEST(DataStore, FileChangedSinceRegistrationFailsTheUploadWithAMessage) {
    WorkerProcess worker;
    Folder data;
    write_random(data.file("a.bin"), 5000, 1);
    write_random(data.file("b.bin"), 5000, 2);
    const dataset::Manifest manifest = scan(data.path);
    write_random(data.file("b.bin"), 5000, 3);
    client::UploadProgress progress;
    std::string error;
    EXPECT_FALSE(client::upload_dataset(worker.client(), manifest, data.path, progress, error));
    EXPECT_NE(error.find("b.bin"), std::string::npos) << error;
    EXPECT_NE(error.find("changed since"), std::string::npos) << error;
    EXPECT_EQ(worker.client().get("/v1/datasets/" + manifest.version()).status, 404);
}

TEST(DataStore, JobTrainsOnItsDatasetVersionReadOnly) {
    const std::string fashion = "/usr/share/datasets/fashion-mnist";
    if (!fs::exists(fashion + "/t10k-images-idx3-ubyte.gz")) {
        TRAINDECK_SKIP("dataset-fashion-mnist is not installed (installer/install-deps.sh installs it)");
    }
    WorkerProcess worker;
    Folder data;
    fs::copy_file(fashion + "/t10k-images-idx3-ubyte.gz", data.file("images.gz"));
    fs::copy_file(fashion + "/t10k-labels-idx1-ubyte.gz", data.file("labels.gz"));
    const dataset::Manifest manifest = scan(data.path);
    upload(worker, manifest, data.path);
    // Paths in the spec are relative to the dataset's folder.
    const json spec = {{"model", "mlp"}, {"hidden", {32}}, {"batch_size", 64}, {"epochs", 1}, {"seed", 1},
                       {"data", {{"format", "idx"}, {"train_images", "images.gz"}, {"train_labels", "labels.gz"}, {"limit", 2000}}}};
    const int64_t job = worker.submit({{"builtin", spec}, {"dataset", manifest.version()}});
    ASSERT_GT(job, 0) << worker.last_error;
    const json done = worker.wait_for_state(job, {"succeeded", "failed"}, 120);
    EXPECT_EQ(done["state"], "succeeded") << done.dump();

    // A command job sees the folder, and an ordinary user cannot write into it.
    const std::string probe = "test -s \"$TRAINDECK_DATASET_DIR/images.gz\" && echo \"$TRAINDECK_DATASET_DIR\" > " +
                              worker.state_dir() + "/seen";
    const int64_t command = worker.submit({{"argv", {probe}}, {"shell", true}, {"dataset", manifest.version()}});
    ASSERT_GT(command, 0) << worker.last_error;
    EXPECT_EQ(worker.wait_for_state(command, {"succeeded", "failed"}, 60)["state"], "succeeded");
    std::string seen = read_file(worker.state_dir() + "/seen");
    seen.erase(seen.find_last_not_of('\n') + 1);
    EXPECT_EQ(seen, worker.state_dir() + "/store/datasets/" + manifest.version());
    const pid_t child = ::fork();
    if (child == 0) {
        if (::getuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0))
            ::_exit(3);
        const bool wrote = std::ofstream(seen + "/new.txt").good() || std::ofstream(seen + "/images.gz", std::ios::app).good();
        ::_exit(wrote ? 1 : 0);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the dataset folder was writable";
}

// The store keeps each uploaded byte once, in the version's own files: what a job destroys there is rebuilt from
// every chunk that still hashes right, and the rest is asked of the next upload, which sends only that.
TEST(DataStore, AJobThatWritesIntoItsDatasetCannotChangeItForLaterJobs) {
    WorkerProcess worker;
    Folder data;
    write_random(data.file("train.bin"), 300000, 5);                        // one chunk
    write_random(data.file("deep/big.bin"), dataset::kChunkBytes + 4242, 6); // two chunks
    const dataset::Manifest manifest = scan(data.path);
    upload(worker, manifest, data.path);
    const std::string original = file_hash(data.file("train.bin")), original_big = file_hash(data.file("deep/big.bin"));
    const std::string copy = worker.state_dir() + "/store/datasets/" + manifest.version();
    auto warning_of = [](const std::vector<json>& events) {
        for (const auto& e : events)
            if (e["type"] == "warning" && e["data"].value("alert", "") == "dataset_changed")
                return e["data"]["message"].get<std::string>();
        return std::string();
    };

    // A job that only adds a file and touches another: every chunk still hashes right, and the version is rebuilt.
    const std::string toucher =
        "chmod -R u+w \"$TRAINDECK_DATASET_DIR\" && touch \"$TRAINDECK_DATASET_DIR/train.bin\" && "
        "echo extra > \"$TRAINDECK_DATASET_DIR/added.txt\"";
    const int64_t touched = worker.submit({{"argv", {toucher}}, {"shell", true}, {"dataset", manifest.version()}});
    ASSERT_GT(touched, 0) << worker.last_error;
    const std::string rebuilt = warning_of(worker.drain(touched));
    EXPECT_NE(rebuilt.find("this job changed its read-only dataset"), std::string::npos) << rebuilt;
    EXPECT_NE(rebuilt.find("rebuilt from its verified chunks"), std::string::npos) << rebuilt;
    EXPECT_FALSE(fs::exists(copy + "/added.txt"));
    EXPECT_EQ(file_hash(copy + "/train.bin"), original);

    // The job runs as the worker's user (root here): it can make the files writable and change them in place.
    // It changes the one-chunk file and the second chunk of the other: the first chunk of big.bin survives.
    const std::string vandal =
        "chmod -R u+w \"$TRAINDECK_DATASET_DIR\" && printf 'XXXX' | dd of=\"$TRAINDECK_DATASET_DIR/train.bin\" "
        "bs=1 seek=100 conv=notrunc 2>/dev/null && printf 'YYYY' | dd of=\"$TRAINDECK_DATASET_DIR/deep/big.bin\" "
        "bs=1 seek=" +
        std::to_string(dataset::kChunkBytes + 10) +
        " conv=notrunc 2>/dev/null && echo extra > \"$TRAINDECK_DATASET_DIR/added.txt\"";
    const int64_t bad = worker.submit({{"argv", {vandal}}, {"shell", true}, {"dataset", manifest.version()}});
    ASSERT_GT(bad, 0) << worker.last_error;
    const std::string warned = warning_of(worker.drain(bad));
    EXPECT_EQ(worker.job(bad)["state"], "succeeded");
    EXPECT_NE(warned.find("this job changed its read-only dataset"), std::string::npos) << warned;
    EXPECT_NE(warned.find("2 chunk(s) were destroyed"), std::string::npos) << warned;
    EXPECT_NE(warned.find("upload the version again"), std::string::npos) << warned;

    // No job reads the damaged version: it is not on the worker until it is uploaded again.
    EXPECT_EQ(worker.client().get("/v1/datasets/" + manifest.version()).status, 404);
    EXPECT_EQ(worker.client().post("/v1/jobs", json{{"argv", {"/bin/true"}}, {"dataset", manifest.version()}}).status,
              409);
    const client::UploadProgress again = upload(worker, manifest, data.path);
    EXPECT_EQ(again.chunks_sent, 2);
    EXPECT_EQ(again.bytes_sent, 300000 + 4242);

    // The next job on the version reads exactly what was uploaded, and the extra file is gone.
    const std::string report = worker.state_dir() + "/report";
    const std::string reader = "sha256sum \"$TRAINDECK_DATASET_DIR/train.bin\" \"$TRAINDECK_DATASET_DIR/deep/big.bin\" > " +
                               report + "; ls \"$TRAINDECK_DATASET_DIR\" >> " + report;
    const int64_t good = worker.submit({{"argv", {reader}}, {"shell", true}, {"dataset", manifest.version()}});
    ASSERT_GT(good, 0) << worker.last_error;
    EXPECT_EQ(worker.wait_for_state(good, {"succeeded", "failed"})["state"], "succeeded");
    EXPECT_EQ(file_hash(copy + "/train.bin"), original);
    EXPECT_EQ(file_hash(copy + "/deep/big.bin"), original_big);
    const std::string listed = read_file(report);
    EXPECT_NE(listed.find(manifest.files[0].sha256), std::string::npos) << listed;
    EXPECT_NE(listed.find(manifest.files[1].sha256), std::string::npos) << listed;
    EXPECT_EQ(listed.find("added.txt"), std::string::npos) << listed;

    // A job that puts a FIFO where a file was: the worker does not wait on it (it would hang every dataset call),
    // and the file's chunk is asked for again.
    const std::string fifo =
        "rm -f \"$TRAINDECK_DATASET_DIR/train.bin\" && mkfifo \"$TRAINDECK_DATASET_DIR/train.bin\"";
    const int64_t piped = worker.submit({{"argv", {fifo}}, {"shell", true}, {"dataset", manifest.version()}});
    ASSERT_GT(piped, 0) << worker.last_error;
    const std::string said = warning_of(worker.drain(piped));
    EXPECT_NE(said.find("1 chunk(s) were destroyed"), std::string::npos) << said;
    EXPECT_EQ(worker.client().get("/v1/health").status, 200);
    const client::UploadProgress healed = upload(worker, manifest, data.path);
    EXPECT_EQ(healed.chunks_sent, 1);
    EXPECT_EQ(healed.bytes_sent, 300000);
    EXPECT_EQ(file_hash(copy + "/train.bin"), original);
}
