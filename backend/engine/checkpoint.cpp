#include "checkpoint.h"

#include "atomicfile.h"
#include "fnv1a.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fcntl.h>
#include <unistd.h>

namespace traindeck::engine {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr char kMagic[8] = {'T', 'D', 'C', 'K', 'P', 'T', 0x00, 0x01};
constexpr const char* kPrefix = "ckpt-";
constexpr const char* kSuffix = ".tdck";

// The checkpoint's atomic file, hashing what it writes (the trailer is the hash of everything before it).
class HashingWriter {
public:
    explicit HashingWriter(AtomicFile& file) : file_(file) {}
    bool write(const void* data, size_t size) {
        hash_.add(data, size);
        return file_.write(data, size);
    }
    uint64_t hash() const { return hash_.hash; }

private:
    AtomicFile& file_;
    Fnv1a hash_;
};

json rng_json(const Rng::State& state) { return json::array({state[0], state[1], state[2], state[3]}); }

// An integer of the header. write_checkpoint writes only non-negative integers, which parse as unsigned; get<>()
// would also take a float and cast it (undefined behaviour for a corrupt 1e23), get_ref throws on any other type.
uint64_t header_integer(const json& value) { return value.get_ref<const json::number_unsigned_t&>(); }

Rng::State rng_from_json(const json& value) {
    Rng::State state{};
    for (size_t i = 0; i < 4; ++i)
        state[i] = header_integer(value.at(i));
    return state;
}

long step_of(const fs::path& path) {
    const std::string name = path.filename().string();
    if (name.rfind(kPrefix, 0) != 0 || name.size() <= std::strlen(kPrefix) + std::strlen(kSuffix) ||
        name.substr(name.size() - std::strlen(kSuffix)) != kSuffix)
        return -1;
    try {
        return std::stol(name.substr(std::strlen(kPrefix)));
    } catch (...) {
        return -1;
    }
}

std::vector<std::pair<long, fs::path>> list_checkpoints(const std::string& dir) {
    std::vector<std::pair<long, fs::path>> found;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        const long step = step_of(entry.path());
        if (step >= 0 && entry.is_regular_file())
            found.emplace_back(step, entry.path());
    }
    std::sort(found.begin(), found.end());
    return found;
}

} // namespace

std::string checkpoint_file_name(long step) {
    char name[64];
    std::snprintf(name, sizeof(name), "%s%010ld%s", kPrefix, step, kSuffix);
    return name;
}

namespace {

Expected<std::string> write_checkpoint_file(const std::string& dir, const std::string& name,
                                            const Checkpoint& checkpoint) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec)
        return Error{dir + ": cannot create the checkpoint folder: " + ec.message()};
    const TrainingState& s = checkpoint.state;
    json header = {{"spec_hash", s.spec_hash},
                   {"step", s.step},
                   {"epoch", s.epoch},
                   {"batch_in_epoch", s.batch_in_epoch},
                   {"samples_seen", s.samples_seen},
                   {"train_seconds", s.train_seconds},
                   {"epoch_rng", rng_json(s.epoch_rng)},
                   {"dropout_rng", rng_json(s.dropout_rng)},
                   {"optimizer", checkpoint.optimizer},
                   {"parameters", checkpoint.params.size()},
                   {"state_buffers", checkpoint.optimizer_state.size()},
                   {"best_value", s.best_value},
                   {"best_epoch", s.best_epoch},
                   {"stale_epochs", s.stale_epochs}};
    const std::string header_text = header.dump();
    const std::string final_path = (fs::path(dir) / name).string();
    AtomicFile file(final_path, 0600);
    if (!file.ok())
        return Error{dir + ": cannot create a checkpoint file: " + std::strerror(file.error_number())};
    HashingWriter out(file);
    const uint32_t header_size = static_cast<uint32_t>(header_text.size());
    bool ok = out.write(kMagic, sizeof(kMagic)) && out.write(&header_size, sizeof(header_size)) &&
              out.write(header_text.data(), header_text.size()) &&
              out.write(checkpoint.params.data(), sizeof(float) * checkpoint.params.size());
    for (const auto& buffer : checkpoint.optimizer_state)
        ok = ok && out.write(buffer.data(), sizeof(float) * buffer.size());
    const uint64_t hash = out.hash();
    ok = ok && out.write(&hash, sizeof(hash));
    if (const int error_number = file.commit(); !ok || error_number != 0)
        return Error{final_path + ": cannot write the checkpoint: " + std::strerror(error_number) +
                     " (is the disk full?)"};
    return final_path;
}

} // namespace

Expected<std::string> write_checkpoint(const std::string& dir, const Checkpoint& checkpoint, int keep) {
    auto final_path = write_checkpoint_file(dir, checkpoint_file_name(checkpoint.state.step), checkpoint);
    if (!final_path)
        return final_path;
    std::error_code ec;
    auto all = list_checkpoints(dir);
    for (size_t i = 0; i + static_cast<size_t>(keep) < all.size(); ++i)
        fs::remove(all[i].second, ec);
    return final_path;
}

std::string best_checkpoint_path(const std::string& dir) { return (fs::path(dir) / "best.tdck").string(); }

Expected<std::string> write_best_checkpoint(const std::string& dir, const Checkpoint& checkpoint) {
    return write_checkpoint_file(dir, "best.tdck", checkpoint);
}

Expected<Checkpoint> read_checkpoint(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return Error{path + ": cannot open the checkpoint"};
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t minimum = sizeof(kMagic) + sizeof(uint32_t) + sizeof(uint64_t);
    if (bytes.size() < minimum || std::memcmp(bytes.data(), kMagic, 6) != 0)
        return Error{path + ": not a TrainDeck checkpoint"};
    if (bytes[7] != kMagic[7])
        return Error{path + ": checkpoint format version " + std::to_string(int(bytes[7])) + " is not supported"};
    Fnv1a hash;
    hash.add(bytes.data(), bytes.size() - sizeof(uint64_t));
    uint64_t stored = 0;
    std::memcpy(&stored, bytes.data() + bytes.size() - sizeof(uint64_t), sizeof(stored));
    if (stored != hash.hash)
        return Error{path + ": checkpoint is corrupt (checksum mismatch; torn write or damaged disk)"};
    uint32_t header_size = 0;
    std::memcpy(&header_size, bytes.data() + sizeof(kMagic), sizeof(header_size));
    const size_t header_at = sizeof(kMagic) + sizeof(header_size);
    if (header_at + header_size > bytes.size() - sizeof(uint64_t))
        return Error{path + ": checkpoint header runs past the end of the file"};
    Checkpoint checkpoint;
    try {
        const json header = json::parse(bytes.begin() + header_at, bytes.begin() + header_at + header_size);
        TrainingState& s = checkpoint.state;
        s.spec_hash = header_integer(header.at("spec_hash"));
        s.step = static_cast<long>(header_integer(header.at("step")));
        s.epoch = static_cast<long>(header_integer(header.at("epoch")));
        s.batch_in_epoch = static_cast<long>(header_integer(header.at("batch_in_epoch")));
        s.samples_seen = static_cast<long>(header_integer(header.at("samples_seen")));
        s.train_seconds = header.at("train_seconds").get<double>();
        s.epoch_rng = rng_from_json(header.at("epoch_rng"));
        s.dropout_rng = rng_from_json(header.at("dropout_rng"));
        if (header.contains("best_epoch")) {
            s.best_value = header.at("best_value").get<double>();
            s.best_epoch = static_cast<long>(header_integer(header.at("best_epoch")));
            s.stale_epochs = static_cast<long>(header_integer(header.at("stale_epochs")));
        }
        checkpoint.optimizer = header.at("optimizer").get<std::string>();
        const size_t parameters = header_integer(header.at("parameters"));
        const size_t buffers = header_integer(header.at("state_buffers"));
        // parameters × (1 + buffers) floats, compared by dividing: the product wraps around for a corrupt header,
        // then "matches" the file's size and asks for more memory than exists. Every network has parameters.
        const size_t payload = bytes.size() - sizeof(uint64_t) - header_at - header_size;
        if (parameters == 0 || parameters > payload / sizeof(float) || payload % (sizeof(float) * parameters) != 0 ||
            payload / (sizeof(float) * parameters) != 1 + buffers)
            return Error{path + ": checkpoint size does not match its header"};
        const char* p = bytes.data() + header_at + header_size;
        checkpoint.params.resize(parameters);
        std::memcpy(checkpoint.params.data(), p, sizeof(float) * parameters);
        p += sizeof(float) * parameters;
        checkpoint.optimizer_state.assign(buffers, std::vector<float>(parameters));
        for (auto& buffer : checkpoint.optimizer_state) {
            std::memcpy(buffer.data(), p, sizeof(float) * parameters);
            p += sizeof(float) * parameters;
        }
    } catch (const json::exception& e) {
        return Error{path + ": checkpoint header is malformed: " + e.what()};
    }
    return checkpoint;
}

Expected<FoundCheckpoint> find_latest_checkpoint(const std::string& dir) {
    FoundCheckpoint found;
    auto all = list_checkpoints(dir);
    for (auto it = all.rbegin(); it != all.rend(); ++it) {
        auto checkpoint = read_checkpoint(it->second.string());
        if (checkpoint) {
            found.path = it->second.string();
            found.checkpoint = std::move(*checkpoint);
            return found;
        }
        found.skipped.push_back(checkpoint.error());
    }
    return found;
}

} // namespace traindeck::engine
