#pragma once
// Histograms in the catalog (TensorBoard's: bucket i counts the values in (limits[i-1], limits[i]]), stored as
// chunks of up to 64 histograms of one series in one BLOB each (histogram_chunks), the way SeriesStore keeps
// points: a histogram a row spilled each ~1.8 KB row into an overflow page of its own and wrote the catalog 2.6
// times the histograms' bytes. A chunk row also says its steps' range, so a heatmap over some steps decodes only
// the chunks it shows. Histogram seq (the source's order) is implicit: chunk * kChunkHistograms + position.
//
// The chunk format, lossless (every double comes back bit for bit, NaN payloads and -0 included):
//   u8 format (1) · varint count · then per histogram:
//     varint zigzag(step - previous step) · time, min, max, num, sum, sum_squares, each coded against the previous
//     histogram's · varint buckets · when buckets > 0: u8 1 = the limits are the previous histogram's (the usual
//     fixed bucket set), 0 = each limit coded against 2 * limit[i-1] - limit[i-2] (exact for evenly spaced limits,
//     close for geometric ones) · each count coded against the previous histogram's count of that bucket (same
//     bucket count) or else the previous bucket's.
//   A value coded against a prediction: d = zigzag(bits - predicted bits) as 64-bit integers (no floating-point
//   arithmetic, so every machine decodes what any other encoded); one byte (trailing zero bytes of d << 4 | bytes
//   left), then those bytes little-endian. An exact prediction costs one byte, a value near it two or three.
#include "sqlitedb.h"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace traindeck {

struct Histogram {
    int64_t step = 0;
    double time = 0, min = 0, max = 0, num = 0, sum = 0, sum_squares = 0;
    std::vector<double> limits, counts; // as many of each
};

// A histogram to store, over buckets its writer keeps (no copy of them).
struct HistogramView {
    int64_t step = 0;
    double time = 0, min = 0, max = 0, num = 0, sum = 0, sum_squares = 0;
    std::span<const double> limits, counts;
};

class HistogramStore {
public:
    static constexpr int kChunkHistograms = 64;

    explicit HistogramStore(Database& db) : db_(db) {}

    // Stores histograms as seq first_seq, first_seq + 1, ... of (job, name), replacing any stored at those seqs; the
    // ones before first_seq stay. Call inside the caller's transaction.
    void append(int64_t job, const std::string& name, int64_t first_seq, std::span<const HistogramView> histograms);

    // The histograms of (job, name) whose steps fall in [from_step, to_step], in seq order. Reads only what was
    // committed; a chunk that does not decode is left out and counted in *damaged.
    static std::vector<Histogram> read(Database& db, int64_t job, const std::string& name, int64_t from_step,
                                       int64_t to_step, int64_t* damaged = nullptr);
    static std::vector<std::string> names(Database& db, int64_t job);
    static int64_t count(Database& db, int64_t job, const std::string& name);

    // The chunk format above. encode writes at buffer's start and returns how many bytes (buffer only grows, so a
    // reused one is not cleared again); decode appends to out, false (out as it was) when the bytes are not a chunk.
    static size_t encode(std::span<const HistogramView> histograms, std::string& buffer);
    static bool decode(std::string_view bytes, std::vector<Histogram>& out);

    // Migration 7: packs the rows of the old per-histogram table (schema 6) into chunks. Inside the migration's
    // transaction.
    static void pack_rows_of_schema_6(Database& db);

private:
    void store_chunk(int64_t job, const std::string& name, int64_t chunk, std::span<const HistogramView> histograms);

    Database& db_;
    Statement upsert_;   // prepared on first use, finalized with the store
    std::string buffer_; // the chunk being encoded, reused
};

} // namespace traindeck
