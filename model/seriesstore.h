#pragma once
// Metric series in the catalog, stored as chunks of up to 512 points (step, value) in one BLOB each
// (metric_chunk_data, coded by encode_chunk: about 6 bytes a point), with each chunk's min/max/last in a small table of
// its own (metric_chunks) so that scanning summaries never touches the blobs. Appends touch one row pair per series per
// batch. A chart query over many points groups whole chunks into buckets (bucket edges fall on chunk edges, and every
// bucket says which steps it covers); zoomed in, it decodes the chunks and buckets points exactly. Either way each
// bucket's min, max and last are exact for the steps it reports — nothing is silently dropped.
#include "sqlitedb.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
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

// A stored chunk as metric_chunks summarises it: its number, steps, point count, min, max and last value.
struct ChunkSummary {
    int64_t chunk = 0, first = 0, last = 0, count = 0;
    double min = 0, max = 0, last_value = 0;
    bool operator==(const ChunkSummary&) const = default;
};

class SeriesStore {
public:
    static constexpr int kChunkPoints = 512;

    explicit SeriesStore(Database& db) : db_(db) {}

    // Adds points in step order. A step already stored is replaced by the newer value (a resumed job repeats the
    // steps after its checkpoint), never duplicated. Call inside the caller's transaction.
    void append(int64_t series, std::span<const MetricPoint> points);

    // Up to `buckets` buckets covering [from_step, to_step], in step order, each exact (its steps, count, min, max and
    // last); when the range holds no more than 2 points per bucket the points themselves come back (one bucket each).
    // The buckets split the range at equal steps, except where a bucket would be about as wide as a stored chunk
    // (a quarter of one to four): then they are whole chunks (fewer buckets when the chunks are wider), so that a zoom
    // decodes only the two chunks it cuts. Reads only what was committed.
    static std::vector<Bucket> query(Database& db, int64_t series, int64_t from_step, int64_t to_step, int buckets);
    static std::vector<MetricPoint> points(Database& db, int64_t series, int64_t from_step, int64_t to_step);
    // The first and last step the series holds; nullopt when it holds none. A whole-run view asks query() for this
    // range: the buckets divide the range asked, so a range wider than the data would put it all in a few of them.
    static std::optional<std::pair<int64_t, int64_t>> extent(Database& db, int64_t series);
    // Every chunk summary of the series, in chunk order, from a cache every connection of this process to the same
    // catalog shares (key: its path, its identity, made once with it, and the series): after the first read of a series
    // only its chunks from the newest one known are read again (the open chunk grows, new ones follow), unless a
    // sealed chunk was written again since (series.rewrites, which a trigger counts, moved; a new series in the id
    // of a purged one starts at another, random count) or its first chunk is not the one known: then all of them. A
    // live chart of a 10 M-point run reads a few rows a redraw instead of 20,000. nullptr for a catalog older than
    // schema 12 (nothing to tell a rewrite by) or one that is not a file; query() then reads the summaries itself.
    // read_unknown false: nullptr for a series the cache does not hold yet (a narrow query reads its own chunks).
    // sealed_version (when given) is set to what names the contents of the series' sealed chunks as read: its
    // catalog, identity, id and rewrite count (query() keeps their decoded points under it).
    static std::shared_ptr<const std::vector<ChunkSummary>>
    summaries(Database& db, int64_t series, bool read_unknown = true, std::string* sealed_version = nullptr);
    // Empties that cache (benches time a first read with it).
    static void forget_summaries();

    // A chunk's bytes (format 1, schema 13): a byte 1, the point count (varint), then each point's step (zigzag
    // varint of its difference from the step before; the first from 0) and value: its bits XOR the value before's
    // (0 for the first) as a head byte kept << 4 | low, where low is how many zero bytes the change has below its
    // kept significant bytes, then those kept bytes, least significant first (head 0: the same value). A double made
    // from a float32 has 29 zero bits at the bottom: about 6 bytes a point where packed points take 16. The size is
    // never a multiple of 16 (a zero byte is added when it would be): that is format 0, schema 12's packed points,
    // which the catalog still holds for chunks not written since; decode_chunk reads both. Returns out.
    static std::string& encode_chunk(std::span<const MetricPoint> points, std::string& out);
    // The chunk's points; a damaged chunk (a catalog file changed outside SQLite) gives the points before the damage
    // and sets *damaged, never reads past the blob.
    static std::vector<MetricPoint> decode_chunk(std::string_view blob, bool* damaged = nullptr);

private:
    struct Chunk {
        int64_t index = -1;
        std::vector<MetricPoint> points;
    };
    Chunk& open_chunk(int64_t series);
    void store(int64_t series, const Chunk& chunk);
    // Puts a point older than the open chunk's first into the sealed chunk it belongs to (the last one starting at
    // or before it; the first chunk for a step older than every stored one). False when that chunk is the open one
    // (there is no other): the caller puts it there.
    bool replace_in_sealed(int64_t series, const MetricPoint& point, int64_t open_index);

    Database& db_;
    std::map<int64_t, Chunk> open_; // the last chunk of each series, as stored
    Statement upsert_, upsert_data_; // prepared on first use, finalized with the store
    std::string coded_;              // the chunk store() writes, coded
};

} // namespace traindeck
