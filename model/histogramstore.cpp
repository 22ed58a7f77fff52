#include "histogramstore.h"

#include "chunkcoding.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace traindeck {
namespace {

using chunk_coding::put_varint;
using chunk_coding::unzigzag;
using chunk_coding::zigzag;

uint64_t bits_of(double value) {
    uint64_t bits = 0;
    std::memcpy(&bits, &value, 8);
    return bits;
}

double double_of(uint64_t bits) {
    double value = 0;
    std::memcpy(&value, &bits, 8);
    return value;
}

// A value against its prediction (the header's coding). Writes 8 bytes and keeps those it needs: the buffer has 8
// bytes of room past its worst case.
char* put_coded(char* out, uint64_t bits, uint64_t predicted) {
    uint64_t delta = zigzag(static_cast<int64_t>(bits - predicted));
    if (delta == 0) {
        *out++ = 0;
        return out;
    }
    const int zero_bytes = __builtin_ctzll(delta) >> 3;
    delta >>= 8 * zero_bytes;
    const int bytes = (64 - __builtin_clzll(delta) + 7) >> 3;
    *out++ = static_cast<char>(zero_bytes << 4 | bytes);
    std::memcpy(out, &delta, 8); // little-endian (x86-64, aarch64): the low bytes first
    return out + bytes;
}

// The most one histogram of `buckets` buckets takes: step and bucket count as varints, six values, the limits' mode
// byte, two coded values a bucket.
size_t worst_size(size_t buckets) { return 10 + 6 * 9 + 10 + 1 + 18 * buckets; }

struct Reader : chunk_coding::ChunkReader {
    uint64_t coded(uint64_t predicted) {
        const uint8_t header = byte();
        if (header == 0)
            return predicted;
        const int bytes = header & 15, zero_bytes = header >> 4;
        if (bytes > 8 || zero_bytes > 7 || bytes + zero_bytes > 8 || end - at < bytes) {
            ok = false;
            return 0;
        }
        uint64_t delta = 0;
        std::memcpy(&delta, at, static_cast<size_t>(bytes));
        at += bytes;
        return predicted + static_cast<uint64_t>(unzigzag(delta << (8 * zero_bytes)));
    }
};

} // namespace

size_t HistogramStore::encode(std::span<const HistogramView> histograms, std::string& buffer) {
    size_t worst = 1 + 10 + 8;
    for (const HistogramView& h : histograms)
        worst += worst_size(std::min(h.limits.size(), h.counts.size()));
    if (buffer.size() < worst)
        buffer.resize(worst); // grows only: a reused buffer is not cleared again
    char* out = buffer.data();
    *out++ = 1;
    out = put_varint(out, histograms.size());
    const HistogramView none;
    const HistogramView* previous = &none;
    for (const HistogramView& h : histograms) {
        const size_t buckets = std::min(h.limits.size(), h.counts.size());
        const size_t previous_buckets = std::min(previous->limits.size(), previous->counts.size());
        out = put_varint(
            out, zigzag(static_cast<int64_t>(static_cast<uint64_t>(h.step) - static_cast<uint64_t>(previous->step))));
        out = put_coded(out, bits_of(h.time), bits_of(previous->time));
        out = put_coded(out, bits_of(h.min), bits_of(previous->min));
        out = put_coded(out, bits_of(h.max), bits_of(previous->max));
        out = put_coded(out, bits_of(h.num), bits_of(previous->num));
        out = put_coded(out, bits_of(h.sum), bits_of(previous->sum));
        out = put_coded(out, bits_of(h.sum_squares), bits_of(previous->sum_squares));
        out = put_varint(out, buckets);
        if (buckets > 0) {
            const double* limits = h.limits.data();
            const bool same_limits =
                previous_buckets == buckets && std::memcmp(previous->limits.data(), limits, buckets * 8) == 0;
            *out++ = same_limits ? 1 : 0;
            if (!same_limits) {
                uint64_t before = previous_buckets == 0 ? 0 : bits_of(previous->limits[0]), last = 0;
                for (size_t i = 0; i < buckets; ++i) {
                    const uint64_t bits = bits_of(limits[i]);
                    const uint64_t predicted = i >= 2 ? 2 * last - before : i == 1 ? last : before;
                    out = put_coded(out, bits, predicted);
                    before = i == 0 ? bits : last;
                    last = bits;
                }
            }
            const double* counts = h.counts.data();
            const bool same_buckets = previous_buckets == buckets;
            for (size_t i = 0; i < buckets; ++i) {
                const uint64_t predicted = same_buckets ? bits_of(previous->counts[i])
                                           : i > 0      ? bits_of(counts[i - 1])
                                                        : 0;
                out = put_coded(out, bits_of(counts[i]), predicted);
            }
        }
        previous = &h;
    }
    return static_cast<size_t>(out - buffer.data());
}

bool HistogramStore::decode(std::string_view bytes, std::vector<Histogram>& out) {
    Reader in{{bytes.data(), bytes.data() + bytes.size()}};
    if (in.byte() != 1)
        return false;
    const uint64_t count = in.varint();
    // Each histogram takes at least 8 bytes: a bound on what a damaged count may make us allocate.
    if (!in.ok || count > bytes.size() / 8)
        return false;
    const size_t first = out.size();
    out.reserve(first + count);
    Histogram none;
    for (uint64_t n = 0; n < count && in.ok; ++n) {
        const Histogram& previous = out.size() > first ? out.back() : none;
        Histogram h;
        h.step =
            static_cast<int64_t>(static_cast<uint64_t>(previous.step) + static_cast<uint64_t>(unzigzag(in.varint())));
        h.time = double_of(in.coded(bits_of(previous.time)));
        h.min = double_of(in.coded(bits_of(previous.min)));
        h.max = double_of(in.coded(bits_of(previous.max)));
        h.num = double_of(in.coded(bits_of(previous.num)));
        h.sum = double_of(in.coded(bits_of(previous.sum)));
        h.sum_squares = double_of(in.coded(bits_of(previous.sum_squares)));
        const uint64_t buckets = in.varint();
        if (!in.ok || buckets > static_cast<uint64_t>(in.end - in.at))
            break;
        if (buckets > 0) {
            const bool same_limits = in.byte() == 1;
            if (same_limits) {
                if (previous.limits.size() != buckets) {
                    in.ok = false;
                    break;
                }
                h.limits = previous.limits;
            } else {
                h.limits.resize(buckets);
                uint64_t before = previous.limits.empty() ? 0 : bits_of(previous.limits[0]), last = 0;
                for (size_t i = 0; i < buckets; ++i) {
                    const uint64_t predicted = i >= 2 ? 2 * last - before : i == 1 ? last : before;
                    const uint64_t bits = in.coded(predicted);
                    h.limits[i] = double_of(bits);
                    before = i == 0 ? bits : last;
                    last = bits;
                }
            }
            h.counts.resize(buckets);
            const bool same_buckets = previous.counts.size() == buckets;
            for (size_t i = 0; i < buckets; ++i) {
                const uint64_t predicted = same_buckets ? bits_of(previous.counts[i])
                                           : i > 0      ? bits_of(h.counts[i - 1])
                                                        : 0;
                h.counts[i] = double_of(in.coded(predicted));
            }
        }
        if (in.ok)
            out.push_back(std::move(h));
    }
    if (!in.ok || out.size() - first != count || in.at != in.end) {
        out.resize(first);
        return false;
    }
    return true;
}

void HistogramStore::store_chunk(int64_t job, const std::string& name, int64_t chunk,
                                 std::span<const HistogramView> histograms) {
    int64_t min_step = std::numeric_limits<int64_t>::max(), max_step = std::numeric_limits<int64_t>::min();
    for (const HistogramView& h : histograms) {
        min_step = std::min(min_step, h.step);
        max_step = std::max(max_step, h.step);
    }
    const size_t size = encode(histograms, buffer_);
    if (!upsert_.prepared())
        upsert_ = db_.prepare("INSERT OR REPLACE INTO histogram_chunks(job, name, chunk, count, min_step, max_step, "
                              "data) VALUES(?, ?, ?, ?, ?, ?, ?)");
    upsert_.reset();
    upsert_.bind(1, job).bind(2, name).bind(3, chunk).bind(4, static_cast<int64_t>(histograms.size()));
    upsert_.bind(5, min_step).bind(6, max_step).bind_blob_static(7, buffer_.data(), size);
    upsert_.step();
}

void HistogramStore::append(int64_t job, const std::string& name, int64_t first_seq,
                            std::span<const HistogramView> histograms) {
    size_t at = 0;
    int64_t chunk = first_seq / kChunkHistograms;
    if (const int64_t kept = first_seq % kChunkHistograms; kept > 0 && !histograms.empty()) {
        // The chunk first_seq falls in holds earlier histograms: they are stored again with the new ones after them.
        std::vector<Histogram> stored;
        Statement select = db_.prepare("SELECT data FROM histogram_chunks WHERE job=? AND name=? AND chunk=?");
        select.bind(1, job).bind(2, name).bind(3, chunk);
        if (select.step() && !decode(select.text_view(0), stored))
            throw std::runtime_error("histogram chunk " + std::to_string(chunk) + " of " + name +
                                     " does not decode; delete the run and import it again");
        stored.resize(std::min<size_t>(stored.size(), static_cast<size_t>(kept)));
        std::vector<HistogramView> views;
        views.reserve(kChunkHistograms);
        for (const Histogram& h : stored)
            views.push_back({h.step, h.time, h.min, h.max, h.num, h.sum, h.sum_squares, h.limits, h.counts});
        for (; at < histograms.size() && views.size() < static_cast<size_t>(kChunkHistograms); ++at)
            views.push_back(histograms[at]);
        store_chunk(job, name, chunk++, views);
    }
    for (; at < histograms.size(); at += kChunkHistograms)
        store_chunk(job, name, chunk++,
                    histograms.subspan(at, std::min<size_t>(kChunkHistograms, histograms.size() - at)));
}

std::vector<Histogram> HistogramStore::read(Database& db, int64_t job, const std::string& name, int64_t from_step,
                                            int64_t to_step, int64_t* damaged) {
    std::vector<Histogram> out;
    Statement select = db.prepare("SELECT data FROM histogram_chunks WHERE job=? AND name=? AND max_step>=? AND "
                                  "min_step<=? ORDER BY chunk");
    select.bind(1, job).bind(2, name).bind(3, from_step).bind(4, to_step);
    std::vector<Histogram> chunk;
    while (select.step()) {
        chunk.clear();
        if (!decode(select.text_view(0), chunk)) {
            if (damaged)
                ++*damaged;
            continue;
        }
        for (Histogram& h : chunk)
            if (h.step >= from_step && h.step <= to_step)
                out.push_back(std::move(h));
    }
    return out;
}

std::vector<std::string> HistogramStore::names(Database& db, int64_t job) {
    std::vector<std::string> out;
    Statement select = db.prepare("SELECT DISTINCT name FROM histogram_chunks WHERE job=? ORDER BY name");
    select.bind(1, job);
    while (select.step())
        out.push_back(select.text(0));
    return out;
}

int64_t HistogramStore::count(Database& db, int64_t job, const std::string& name) {
    Statement select = db.prepare("SELECT COALESCE(SUM(count), 0) FROM histogram_chunks WHERE job=? AND name=?");
    select.bind(1, job).bind(2, name);
    return select.step() ? select.integer(0) : 0;
}

void HistogramStore::pack_rows_of_schema_6(Database& db) {
    {
        Statement exists = db.prepare("SELECT 1 FROM sqlite_master WHERE type='table' AND name='histograms'");
        if (!exists.step())
            return;
    }
    HistogramStore store(db);
    Statement select = db.prepare("SELECT job, name, step, time, min, max, num, sum, sum_squares, limits, counts FROM "
                                  "histograms ORDER BY job, name, seq");
    int64_t job = 0;
    std::string name;
    std::vector<Histogram> pending;
    int64_t next_seq = 0;
    auto flush = [&] {
        std::vector<HistogramView> views;
        views.reserve(pending.size());
        for (const Histogram& h : pending)
            views.push_back({h.step, h.time, h.min, h.max, h.num, h.sum, h.sum_squares, h.limits, h.counts});
        store.append(job, name, next_seq, views);
        next_seq += static_cast<int64_t>(pending.size());
        pending.clear();
    };
    auto doubles = [](std::string_view blob) {
        std::vector<double> values(blob.size() / 8);
        std::memcpy(values.data(), blob.data(), values.size() * 8);
        return values;
    };
    while (select.step()) {
        if (select.integer(0) != job || select.text_view(1) != name) {
            if (!pending.empty())
                flush();
            job = select.integer(0);
            name = select.text(1);
            next_seq = 0;
        }
        Histogram h;
        h.step = select.integer(2);
        h.time = select.real(3);
        h.min = select.real(4);
        h.max = select.real(5);
        h.num = select.real(6);
        h.sum = select.real(7);
        h.sum_squares = select.real(8);
        h.limits = doubles(select.text_view(9));
        h.counts = doubles(select.text_view(10));
        const size_t buckets = std::min(h.limits.size(), h.counts.size());
        h.limits.resize(buckets);
        h.counts.resize(buckets);
        pending.push_back(std::move(h));
        if (pending.size() == static_cast<size_t>(kChunkHistograms))
            flush();
    }
    if (!pending.empty())
        flush();
}

} // namespace traindeck
