#pragma once
// Metric series in the catalog, stored as chunks of up to 512 points (step, value) in one BLOB each, with the
// chunk's min/max/last beside it. Appends touch one row per series per batch; a chart query reads the chunk
// summaries and decodes only the chunks that straddle a bucket edge, so every bucket's min, max and last are
// exact at any zoom — nothing is silently dropped, and a 10 M-point series answers in milliseconds.
#include "sqlitedb.h"

#include <cstdint>
#include <map>
#include <span>
#include <vector>

namespace traindeck {

struct MetricPoint {
    int64_t step = 0;
    double value = 0;
};

struct Bucket {
    int64_t first_step = 0, last_step = 0;
    double min = 0, max = 0, last = 0; // last = the value at last_step
    int64_t count = 0;
};

class SeriesStore {
public:
    static constexpr int kChunkPoints = 512;

    explicit SeriesStore(Database& db) : db_(db) {}

    // Adds points in step order. A step already stored is replaced by the newer value (a resumed job repeats the
    // steps after its checkpoint), never duplicated. Call inside the caller's transaction.
    void append(int64_t series, std::span<const MetricPoint> points);

    // Up to `buckets` buckets covering [from_step, to_step]; when the range holds no more than 2 points per bucket
    // the points themselves come back (one bucket each). Reads only what was committed.
    static std::vector<Bucket> query(Database& db, int64_t series, int64_t from_step, int64_t to_step, int buckets);
    static std::vector<MetricPoint> points(Database& db, int64_t series, int64_t from_step, int64_t to_step);

private:
    struct Chunk {
        int64_t index = -1;
        std::vector<MetricPoint> points;
    };
    Chunk& open_chunk(int64_t series);
    void store(int64_t series, const Chunk& chunk);
    void replace_in_sealed(int64_t series, const MetricPoint& point);

    Database& db_;
    std::map<int64_t, Chunk> open_; // the last chunk of each series, as stored
};

} // namespace traindeck
