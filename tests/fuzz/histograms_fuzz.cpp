// Fuzz target: the catalog's histogram chunks (model/histogramstore.h), read back from a catalog file that may be
// damaged (a bad disk, a copy cut short, another program's writes). Input: the bytes of one chunk BLOB.
// Properties: decode never reads outside the bytes and either refuses them (out as it was) or gives histograms with
// as many counts as limits; what it gives encodes and decodes again to the same histograms, bit for bit (NaN payloads
// and -0 included): the coder is lossless on whatever it accepted.
#include "fuzzsupport.h"
#include "histogramstore.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

using namespace traindeck;

namespace {

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    std::vector<Histogram> out;
    if (!HistogramStore::decode(bytes, out)) {
        FUZZ_CHECK(out.empty(), "a refused chunk left histograms behind");
        return 0;
    }
    std::vector<HistogramView> views;
    views.reserve(out.size());
    for (const Histogram& h : out) {
        FUZZ_CHECK(h.limits.size() == h.counts.size(), "a histogram with limits and counts unpaired");
        views.push_back({h.step, h.time, h.min, h.max, h.num, h.sum, h.sum_squares, h.limits, h.counts});
    }
    std::string buffer;
    const size_t written = HistogramStore::encode(views, buffer);
    std::vector<Histogram> again;
    FUZZ_CHECK(HistogramStore::decode(std::string_view(buffer.data(), written), again), "its own encoding refused");
    FUZZ_CHECK(again.size() == out.size(), "a different number of histograms after a round trip");
    for (size_t i = 0; i < out.size(); ++i) {
        const Histogram &a = out[i], &b = again[i];
        FUZZ_CHECK(a.step == b.step && same_bits(a.time, b.time) && same_bits(a.min, b.min) &&
                       same_bits(a.max, b.max) && same_bits(a.num, b.num) && same_bits(a.sum, b.sum) &&
                       same_bits(a.sum_squares, b.sum_squares),
                   "a histogram's fields changed in a round trip");
        FUZZ_CHECK(same_bits(a.limits, b.limits) && same_bits(a.counts, b.counts),
                   "a histogram's buckets changed in a round trip");
    }
    return 0;
}
