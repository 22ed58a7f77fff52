#pragma once
// xoshiro256** — small, fast, and its whole state is four words, so a checkpoint can store it
// and a resumed run draws exactly the numbers the uninterrupted run would have drawn.
#include <array>
#include <cstdint>
#include <cmath>

namespace traindeck::engine {

class Rng {
public:
    using State = std::array<uint64_t, 4>;

    explicit Rng(uint64_t seed = 1) { reseed(seed); }

    void reseed(uint64_t seed) {
        // splitmix64 spreads one seed over the four state words, as the xoshiro authors advise.
        for (auto& word : state_) {
            seed += 0x9e3779b97f4a7c15ULL;
            word = mix(seed);
        }
    }

    // splitmix64's finaliser: a 64-bit value's bits spread over all 64 (seeds made of several numbers mix through it).
    static uint64_t mix(uint64_t z) {
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }

    uint64_t next() {
        const uint64_t result = rotl(state_[1] * 5, 7) * 9;
        const uint64_t t = state_[1] << 17;
        state_[2] ^= state_[0];
        state_[3] ^= state_[1];
        state_[1] ^= state_[2];
        state_[0] ^= state_[3];
        state_[2] ^= t;
        state_[3] = rotl(state_[3], 45);
        return result;
    }

    // Uniform in [0, 1) with 24 random bits, exactly representable as float.
    float uniform() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }
    float uniform(float low, float high) { return low + (high - low) * uniform(); }
    // Uniform integer in [0, bound) without modulo bias worth caring about for bound < 2^32.
    uint64_t below(uint64_t bound) { return static_cast<uint64_t>((static_cast<unsigned __int128>(next()) * bound) >> 64); }

    const State& state() const { return state_; }
    void set_state(const State& state) { state_ = state; }

private:
    static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    State state_{};
};

} // namespace traindeck::engine
