// Fuzz target: the built-in trainer's checkpoint reader (read_checkpoint), which reads files a job resumes from,
// including ones copied from another worker. The file ends in an FNV-1a checksum that random bytes almost never
// match, so each input is read twice: as it is (the checksum refusal), and with its last 8 bytes replaced by the
// checksum of the rest (everything after the checksum: header, sizes, payload).
// Properties: a refusal says why; an accepted checkpoint has the parameter and state sizes its header announces,
// and writing it with write_checkpoint and reading that back gives the same checkpoint.
#include "checkpoint.h"
#include "fuzzsupport.h"

#include <bit>
#include <cstdint>
#include <cstring>
#include <vector>

using traindeck::engine::Checkpoint;
using traindeck::fuzz::MemoryFile;
using traindeck::fuzz::TempFolder;

namespace {

// The format's checksum (checkpoint.h): FNV-1a 64 of every byte before it.
uint64_t fnv1a(const uint8_t* data, size_t size) {
    uint64_t hash = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < size; ++i) {
        hash ^= data[i];
        hash *= 0x100000001b3ULL;
    }
    return hash;
}

bool same_floats(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

void read_and_check(MemoryFile& file, const uint8_t* data, size_t size) {
    file.replace(data, size);
    const auto read = traindeck::engine::read_checkpoint(file.path());
    if (!read) {
        FUZZ_CHECK(!read.error().empty(), "a refused checkpoint without a message");
        return;
    }
    const Checkpoint& checkpoint = *read;
    for (const auto& buffer : checkpoint.optimizer_state)
        FUZZ_CHECK(buffer.size() == checkpoint.params.size(), "an optimiser buffer of another size than the parameters");

    // A resumed job writes its next checkpoint from what it read: the pair must agree.
    static TempFolder folder("traindeck-fuzz-checkpoint");
    const auto written = traindeck::engine::write_checkpoint(folder.path(), checkpoint, 1);
    FUZZ_CHECK(static_cast<bool>(written), "an accepted checkpoint cannot be written back");
    const auto again = traindeck::engine::read_checkpoint(*written);
    FUZZ_CHECK(static_cast<bool>(again), "a written checkpoint does not read back");
    const auto& s = checkpoint.state;
    const auto& t = again->state;
    FUZZ_CHECK(s.spec_hash == t.spec_hash && s.step == t.step && s.epoch == t.epoch &&
                   s.batch_in_epoch == t.batch_in_epoch && s.samples_seen == t.samples_seen &&
                   std::bit_cast<uint64_t>(s.train_seconds) == std::bit_cast<uint64_t>(t.train_seconds) &&
                   s.epoch_rng == t.epoch_rng && s.dropout_rng == t.dropout_rng,
               "the training state changed through a write and a read");
    FUZZ_CHECK(again->optimizer == checkpoint.optimizer && same_floats(again->params, checkpoint.params) &&
                   again->optimizer_state.size() == checkpoint.optimizer_state.size(),
               "the parameters changed through a write and a read");
    for (size_t i = 0; i < checkpoint.optimizer_state.size(); ++i)
        FUZZ_CHECK(same_floats(again->optimizer_state[i], checkpoint.optimizer_state[i]), "the optimiser state changed");
    std::error_code ec;
    std::filesystem::remove(*written, ec);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static MemoryFile file("checkpoint");
    read_and_check(file, data, size);
    if (size >= sizeof(uint64_t)) {
        std::vector<uint8_t> sealed(data, data + size);
        const uint64_t hash = fnv1a(sealed.data(), size - sizeof(uint64_t));
        std::memcpy(sealed.data() + size - sizeof(uint64_t), &hash, sizeof(hash));
        if (std::memcmp(sealed.data(), data, size) != 0)
            read_and_check(file, sealed.data(), size);
    }
    return 0;
}
