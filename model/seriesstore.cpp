#include "seriesstore.h"

#include "chunkcoding.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <tuple>

namespace traindeck {
namespace {

using namespace chunk_coding;

constexpr uint8_t kCodedChunk = 1; // a coded chunk's first byte (the format's number)

std::vector<MetricPoint> decode(std::string_view blob) { return SeriesStore::decode_chunk(blob); }

// Replaces the point at p.step, or inserts it in step order.
void put(std::vector<MetricPoint>& points, const MetricPoint& p) {
    auto it = std::lower_bound(points.begin(), points.end(), p.step,
                               [](const MetricPoint& q, int64_t step) { return q.step < step; });
    if (it != points.end() && it->step == p.step)
        it->value = p.value;
    else
        points.insert(it, p);
}

void merge(Bucket& bucket, const MetricPoint& p) {
    if (bucket.count == 0) {
        bucket.first_step = p.step;
        bucket.min = bucket.max = p.value;
    }
    bucket.min = std::min(bucket.min, p.value);
    bucket.max = std::max(bucket.max, p.value);
    bucket.last_step = p.step;
    bucket.last = p.value;
    ++bucket.count;
}

} // namespace

std::string& SeriesStore::encode_chunk(std::span<const MetricPoint> points, std::string& out) {
    // At most 10 bytes a step, 1 a value's head and 8 its bytes; 8 more at the end, where the last value's bytes are
    // written whole and only the significant ones kept.
    out.resize(1 + 10 + points.size() * 19 + 8);
    char* at = out.data();
    *at++ = static_cast<char>(kCodedChunk);
    at = put_varint(at, points.size());
    uint64_t step = 0, bits = 0;
    for (const MetricPoint& p : points) {
        // Differences in unsigned arithmetic: steps at int64's ends wrap there and back instead of overflowing.
        at = put_varint(at, zigzag(static_cast<int64_t>(static_cast<uint64_t>(p.step) - step)));
        step = static_cast<uint64_t>(p.step);
        uint64_t value = 0;
        std::memcpy(&value, &p.value, 8);
        const uint64_t change = value ^ bits;
        bits = value;
        if (change == 0) {
            *at++ = 0;
            continue;
        }
        const int low = __builtin_ctzll(change) / 8, high = __builtin_clzll(change) / 8, kept = 8 - low - high;
        *at++ = static_cast<char>(kept << 4 | low);
        const uint64_t significant = change >> (8 * low);
        std::memcpy(at, &significant, 8); // little-endian (static_assert below): the kept bytes come first
        at += kept;
    }
    size_t size = static_cast<size_t>(at - out.data());
    if (size % sizeof(MetricPoint) == 0)
        out[size++] = 0; // never a multiple of 16: that is a packed chunk
    out.resize(size);
    return out;
}

std::vector<MetricPoint> SeriesStore::decode_chunk(std::string_view blob, bool* damaged) {
    static_assert(std::endian::native == std::endian::little, "chunks are little-endian in memory and on disk");
    if (damaged)
        *damaged = false;
    if (blob.size() % sizeof(MetricPoint) == 0) { // packed (format 0)
        std::vector<MetricPoint> points(blob.size() / sizeof(MetricPoint));
        std::memcpy(points.data(), blob.data(), points.size() * sizeof(MetricPoint));
        return points;
    }
    std::vector<MetricPoint> points;
    ChunkReader in{blob.data(), blob.data() + blob.size()};
    const uint8_t format = in.byte();
    const uint64_t count = in.varint();
    // Each point takes at least two bytes: a count past that is damage, not a size to reserve.
    bool ok = in.ok && format == kCodedChunk && count <= blob.size() / 2;
    if (ok)
        points.reserve(count);
    uint64_t step = 0, bits = 0;
    for (uint64_t i = 0; ok && i < count; ++i) {
        step += static_cast<uint64_t>(unzigzag(in.varint()));
        const uint8_t head = in.byte();
        const int kept = head >> 4, low = head & 15;
        if (!in.ok || kept + low > 8 || (kept == 0 && low != 0) || in.end - in.at < kept) {
            ok = false;
            break;
        }
        uint64_t significant = 0;
        std::memcpy(&significant, in.at, static_cast<size_t>(kept));
        in.at += kept;
        bits ^= kept == 0 ? 0 : significant << (8 * low);
        MetricPoint& p = points.emplace_back();
        p.step = static_cast<int64_t>(step);
        std::memcpy(&p.value, &bits, 8);
    }
    // What follows the points: nothing, or the one zero byte that keeps the size off a multiple of 16.
    if (ok && !(in.at == in.end || (in.end - in.at == 1 && *in.at == 0)))
        ok = false;
    if (damaged)
        *damaged = !ok;
    return points;
}

SeriesStore::Chunk& SeriesStore::open_chunk(int64_t series) {
    auto it = open_.find(series);
    if (it != open_.end())
        return it->second;
    Chunk& chunk = open_[series];
    Statement last = db_.prepare("SELECT chunk, data FROM metric_chunk_data WHERE series=? ORDER BY chunk DESC LIMIT 1");
    last.bind(1, series);
    if (last.step()) {
        chunk.index = last.integer(0);
        chunk.points = decode(last.text_view(1));
    } else {
        chunk.index = 0;
    }
    return chunk;
}

void SeriesStore::store(int64_t series, const Chunk& chunk) {
    if (chunk.points.empty())
        return;
    double min = std::numeric_limits<double>::infinity(), max = -min;
    for (const auto& p : chunk.points) {
        min = std::min(min, p.value);
        max = std::max(max, p.value);
    }
    if (!upsert_.prepared()) {
        upsert_ = db_.prepare("INSERT OR REPLACE INTO metric_chunks(series, chunk, first_step, last_step, count, min, max, "
                              "last) VALUES(?, ?, ?, ?, ?, ?, ?, ?)");
        upsert_data_ = db_.prepare("INSERT OR REPLACE INTO metric_chunk_data(series, chunk, data) VALUES(?, ?, ?)");
    }
    Statement& upsert = upsert_;
    Statement& upsert_data = upsert_data_;
    upsert.reset();
    upsert.bind(1, series).bind(2, chunk.index).bind(3, chunk.points.front().step).bind(4, chunk.points.back().step);
    upsert.bind(5, static_cast<int64_t>(chunk.points.size())).bind(6, min).bind(7, max).bind(8, chunk.points.back().value);
    upsert.step();
    upsert_data.reset();
    upsert_data.bind(1, series).bind(2, chunk.index);
    encode_chunk(chunk.points, coded_);
    upsert_data.bind_blob_static(3, coded_.data(), coded_.size());
    upsert_data.step();
}

bool SeriesStore::replace_in_sealed(int64_t series, const MetricPoint& point, int64_t open_index) {
    Statement select = db_.prepare(
        "SELECT c.chunk, d.data FROM metric_chunks c JOIN metric_chunk_data d ON d.series=c.series AND d.chunk=c.chunk "
        "WHERE c.series=? AND c.first_step<=? ORDER BY c.chunk DESC LIMIT 1");
    select.bind(1, series).bind(2, point.step);
    if (!select.step()) {
        // Older than every stored step (a run that logged step 100 before step 50): the first chunk takes it. It was
        // once dropped here, without a word.
        select = db_.prepare("SELECT c.chunk, d.data FROM metric_chunks c JOIN metric_chunk_data d ON "
                             "d.series=c.series AND d.chunk=c.chunk WHERE c.series=? ORDER BY c.chunk LIMIT 1");
        select.bind(1, series);
        if (!select.step())
            return false;
    }
    if (select.integer(0) == open_index)
        return false;
    Chunk chunk{select.integer(0), decode(select.text_view(1))};
    put(chunk.points, point);
    select = Statement();
    store(series, chunk); // the catalog's trigger counts it in series.rewrites (readers' summaries are read again)
    return true;
}

void SeriesStore::append(int64_t series, std::span<const MetricPoint> points) {
    Chunk& chunk = open_chunk(series);
    bool dirty = false;
    for (const MetricPoint& p : points) {
        if (!chunk.points.empty() && p.step <= chunk.points.back().step) {
            if (p.step >= chunk.points.front().step) {
                put(chunk.points, p);
                dirty = true;
            } else {
                if (dirty)
                    store(series, chunk);
                dirty = false;
                if (!replace_in_sealed(series, p, chunk.index)) {
                    put(chunk.points, p);
                    dirty = true;
                }
            }
            continue;
        }
        // At or past its size (points a resumed run filled in between its steps can take it past): sealed.
        if (static_cast<int>(chunk.points.size()) >= kChunkPoints) {
            store(series, chunk);
            chunk.points.clear();
            ++chunk.index;
        }
        chunk.points.push_back(p);
        dirty = true;
    }
    if (dirty)
        store(series, chunk);
}

namespace {

// The chunks that may hold steps of [from_step, to_step], as [first, end) of their numbers: found by a binary search
// over the chunks' numbers (point reads of the primary key), since chunks follow each other in step order. Reading
// every chunk of the series to test the range cost 3 ms on a 10 M-point series, whatever the zoom.
std::pair<int64_t, int64_t> chunks_between(Database& db, int64_t series, int64_t from_step, int64_t to_step) {
    // Two statements: SQLite reads MIN or MAX alone from the primary key's ends, but both in one scan every row.
    Statement lowest_chunk = db.prepare("SELECT MIN(chunk) FROM metric_chunks WHERE series=?");
    Statement highest_chunk = db.prepare("SELECT MAX(chunk) FROM metric_chunks WHERE series=?");
    lowest_chunk.bind(1, series);
    highest_chunk.bind(1, series);
    if (!lowest_chunk.step() || lowest_chunk.is_null(0) || !highest_chunk.step())
        return {0, 0};
    const int64_t lowest = lowest_chunk.integer(0), highest = highest_chunk.integer(0);
    Statement at = db.prepare(
        "SELECT chunk, first_step, last_step FROM metric_chunks WHERE series=? AND chunk>=? ORDER BY chunk LIMIT 1");
    // The first chunk at or after number n for which `past` holds (every later one holds it too); highest + 1 if none.
    const auto first_where = [&](const auto& past) {
        int64_t low = lowest, high = highest + 1;
        while (low < high) {
            const int64_t middle = low + (high - low) / 2;
            at.reset();
            at.bind(1, series).bind(2, middle);
            if (!at.step() || past(at.integer(1), at.integer(2)))
                high = middle;
            else
                low = at.integer(0) + 1;
        }
        return low;
    };
    const int64_t first = first_where([&](int64_t, int64_t last) { return last >= from_step; });
    const int64_t end = first_where([&](int64_t first_step, int64_t) { return first_step > to_step; });
    return {first, std::max(first, end)};
}

} // namespace

namespace {

// SeriesStore::summaries' cache: per catalog (its path and identity) and series, the summaries as last read and the
// series' rewrite count then. Entries are replaced whole (shared_ptr), so a reader keeps a consistent vector while
// another thread brings the entry up to date. At most kMaxCachedSeries series and kMaxCachedChunks summaries (56 MB:
// 50 series of 10 M points); past either the cache starts again.
struct CachedSeries {
    int64_t rewrites = -1;
    std::shared_ptr<const std::vector<ChunkSummary>> chunks;
};
using SummaryKey = std::tuple<std::string, std::string, int64_t>;
constexpr size_t kMaxCachedSeries = 512;
constexpr size_t kMaxCachedChunks = 1 << 20;
// Never destroyed: a pool thread may still be reading a chart as the process exits.
std::mutex& summary_mutex() {
    static auto* mutex = new std::mutex;
    return *mutex;
}
size_t cached_chunks = 0; // the summaries the cache holds (under summary_mutex())
std::map<SummaryKey, CachedSeries>& summary_cache() {
    static auto* cache = new std::map<SummaryKey, CachedSeries>;
    return *cache;
}

ChunkSummary summary_at(const Statement& row) {
    return {row.integer(0), row.integer(1), row.integer(2), row.integer(3), row.real(4), row.real(5), row.real(6)};
}

// Decoded points of sealed chunks, for queries whose buckets are narrower than a chunk (a run of up to a few hundred
// thousand points, drawn whole): keyed by the series' sealed version (summaries()) and the chunk number, which
// name their contents for good. At most kMaxDecodedPoints points (64 MB); past that it starts again.
constexpr size_t kMaxDecodedPoints = size_t{4} << 20;
size_t decoded_points = 0; // under summary_mutex()
std::map<std::pair<std::string, int64_t>, std::shared_ptr<const std::vector<MetricPoint>>>& decoded_cache() {
    static auto* cache = new std::map<std::pair<std::string, int64_t>, std::shared_ptr<const std::vector<MetricPoint>>>;
    return *cache;
}

constexpr const char* kSummaryColumns =
    "SELECT chunk, first_step, last_step, count, min, max, last FROM metric_chunks ";

} // namespace

std::shared_ptr<const std::vector<ChunkSummary>> SeriesStore::summaries(Database& db, int64_t series, bool read_unknown,
                                                                        std::string* sealed_version) {
    // The statements below stay stepped to their rows until the end: in autocommit mode that holds one read snapshot
    // for all of them, so the summaries stored belong to the rewrite count stored with them.
    Statement version = db.prepare("PRAGMA user_version");
    if (!version.step() || version.integer(0) < 12)
        return nullptr;
    const char* file = sqlite3_db_filename(db.handle(), "main");
    Statement identity = db.prepare("SELECT value FROM catalog_identity WHERE id=1");
    if (!file || !*file || !identity.step())
        return nullptr;
    Statement rewrites_now = db.prepare("SELECT rewrites FROM series WHERE id=?");
    rewrites_now.bind(1, series);
    if (!rewrites_now.step())
        return std::make_shared<const std::vector<ChunkSummary>>(); // no such series
    const int64_t rewrites = rewrites_now.integer(0);
    const SummaryKey key{file, identity.text(0), series};
    if (sealed_version)
        *sealed_version = std::string(file) + '\n' + identity.text(0) + '\n' + std::to_string(series) + '\n' +
                          std::to_string(rewrites);
    CachedSeries known;
    {
        const std::lock_guard lock(summary_mutex());
        if (const auto it = summary_cache().find(key); it != summary_cache().end())
            known = it->second;
    }
    if (!known.chunks && !read_unknown)
        return nullptr;
    auto fresh = std::make_shared<std::vector<ChunkSummary>>();
    bool tail_only = known.chunks && !known.chunks->empty() && known.rewrites == rewrites;
    if (tail_only) {
        // The first chunk as known (else another series took the id, or the file was made again): then the chunks
        // from the newest one known, which must still be there as the first of them.
        Statement first = db.prepare(std::string(kSummaryColumns) + "WHERE series=? ORDER BY chunk LIMIT 1");
        first.bind(1, series);
        const ChunkSummary& known_first = known.chunks->front();
        tail_only = first.step() && (known.chunks->size() == 1 ? summary_at(first).chunk == known_first.chunk
                                                               : summary_at(first) == known_first);
    }
    if (tail_only) {
        Statement tail = db.prepare(std::string(kSummaryColumns) + "WHERE series=? AND chunk>=? ORDER BY chunk");
        tail.bind(1, series).bind(2, known.chunks->back().chunk);
        std::vector<ChunkSummary> newest;
        while (tail.step())
            newest.push_back(summary_at(tail));
        tail_only = !newest.empty() && newest.front().chunk == known.chunks->back().chunk;
        // Nothing new: the known vector itself (a copy of 20,000 summaries is a megabyte of fresh pages).
        if (tail_only && newest.size() == 1 && newest.front() == known.chunks->back())
            return known.chunks;
        if (tail_only) {
            fresh->reserve(known.chunks->size() - 1 + newest.size());
            fresh->assign(known.chunks->begin(), known.chunks->end() - 1);
            fresh->insert(fresh->end(), newest.begin(), newest.end());
        }
    }
    if (!tail_only) {
        fresh->clear();
        Statement all = db.prepare(std::string(kSummaryColumns) + "WHERE series=? ORDER BY chunk");
        all.bind(1, series);
        while (all.step())
            fresh->push_back(summary_at(all));
    }
    std::shared_ptr<const std::vector<ChunkSummary>> result = std::move(fresh);
    if (result->size() > kMaxCachedChunks)
        return result; // too big to keep: read whole each time
    {
        const std::lock_guard lock(summary_mutex());
        auto& cache = summary_cache();
        if (const auto it = cache.find(key); it != cache.end()) {
            cached_chunks -= it->second.chunks->size();
            cache.erase(it);
        }
        if (cache.size() >= kMaxCachedSeries || cached_chunks + result->size() > kMaxCachedChunks) {
            cache.clear();
            cached_chunks = 0;
        }
        cache[key] = {rewrites, result};
        cached_chunks += result->size();
    }
    return result;
}

void SeriesStore::forget_summaries() {
    const std::lock_guard lock(summary_mutex());
    summary_cache().clear();
    cached_chunks = 0;
    decoded_cache().clear();
    decoded_points = 0;
}

std::vector<MetricPoint> SeriesStore::points(Database& db, int64_t series, int64_t from_step, int64_t to_step) {
    std::vector<MetricPoint> out;
    const auto [first_chunk, end_chunk] = chunks_between(db, series, from_step, to_step);
    Statement select = db.prepare(
        "SELECT d.data FROM metric_chunks c JOIN metric_chunk_data d ON d.series=c.series AND d.chunk=c.chunk "
        "WHERE c.series=? AND c.chunk>=? AND c.chunk<? AND c.last_step>=? AND c.first_step<=? ORDER BY c.chunk");
    select.bind(1, series).bind(2, first_chunk).bind(3, end_chunk).bind(4, from_step).bind(5, to_step);
    while (select.step())
        for (const MetricPoint& p : decode(select.text_view(0)))
            if (p.step >= from_step && p.step <= to_step)
                out.push_back(p);
    return out;
}

std::optional<std::pair<int64_t, int64_t>> SeriesStore::extent(Database& db, int64_t series) {
    // The first chunk's first step and the last one's last (chunks follow each other in step order): two reads at the
    // primary key's ends, not a scan of the series.
    Statement first = db.prepare("SELECT first_step FROM metric_chunks WHERE series=? ORDER BY chunk LIMIT 1");
    Statement last = db.prepare("SELECT last_step FROM metric_chunks WHERE series=? ORDER BY chunk DESC LIMIT 1");
    first.bind(1, series);
    last.bind(1, series);
    if (!first.step() || !last.step())
        return std::nullopt;
    return std::pair(first.integer(0), last.integer(0));
}

std::vector<Bucket> SeriesStore::query(Database& db, int64_t series, int64_t from_step, int64_t to_step, int buckets) {
    std::vector<Bucket> out;
    if (buckets <= 0 || to_step < from_step)
        return out;
    using Summary = ChunkSummary;
    // The chunks that hold steps of the range: a part of the shared summaries (not copied), or read here.
    std::vector<Summary> read;
    std::span<const Summary> chunks;
    int64_t total = 0;
    // A narrow range (a zoom) of a series not known yet reads only its own chunks; a wider one reads them all into
    // the shared summaries, which the next queries (the next redraw, the next zoom) take from.
    bool narrow = false;
    if (const auto whole = extent(db, series)) // in doubles: steps may be anywhere in int64's range
        narrow = 4.0 * (static_cast<double>(std::min(to_step, whole->second)) -
                        static_cast<double>(std::max(from_step, whole->first))) <
                 static_cast<double>(whole->second) - static_cast<double>(whole->first);
    std::string sealed_version;
    const auto all = summaries(db, series, !narrow, &sealed_version);
    if (all) {
        // From the first ending at or after from_step, while they start at or before to_step (chunks follow each
        // other in step order).
        const auto begin = std::lower_bound(all->begin(), all->end(), from_step,
                                            [](const Summary& c, int64_t step) { return c.last < step; });
        auto end = begin;
        for (; end != all->end() && end->first <= to_step; ++end)
            total += end->count;
        chunks = std::span<const Summary>(begin, end);
    } else {
        const auto [first_chunk, end_chunk] = chunks_between(db, series, from_step, to_step);
        Statement select = db.prepare(std::string(kSummaryColumns) +
                                      "WHERE series=? AND chunk>=? AND chunk<? AND last_step>=? AND first_step<=? "
                                      "ORDER BY chunk");
        select.bind(1, series).bind(2, first_chunk).bind(3, end_chunk).bind(4, from_step).bind(5, to_step);
        while (select.step()) {
            read.push_back(summary_at(select));
            total += read.back().count;
        }
        chunks = read;
    }
    const double width = static_cast<double>(to_step - from_step + 1) / buckets;
    auto bucket_of = [&](int64_t step) { return std::min<int64_t>(buckets - 1, static_cast<int64_t>((step - from_step) / width)); };
    std::vector<Bucket> grid(buckets);
    auto collect = [&] {
        for (const Bucket& b : grid)
            if (b.count > 0)
                out.push_back(b);
        return out;
    };
    // Few points (the chunks' counts include some outside the range): decode them all.
    if (total <= 8LL * buckets) {
        const std::vector<MetricPoint> inside = points(db, series, from_step, to_step);
        if (inside.size() <= 2u * static_cast<size_t>(buckets)) {
            for (const MetricPoint& p : inside)
                out.push_back({p.step, p.step, p.value, p.value, p.value, 1});
            return out;
        }
        for (const MetricPoint& p : inside)
            merge(grid[bucket_of(p.step)], p);
        return collect();
    }
    Statement blob = db.prepare("SELECT data FROM metric_chunk_data WHERE series=? AND chunk=?");
    // A whole chunk into a bucket: its summary is exact.
    const auto add_chunk = [](Bucket& b, const Summary& c) {
        if (b.count == 0) {
            b.first_step = c.first;
            b.min = c.min;
            b.max = c.max;
        }
        b.min = std::min(b.min, c.min);
        b.max = std::max(b.max, c.max);
        b.last_step = c.last;
        b.last = c.last_value;
        b.count += c.count;
    };
    // A chunk the range cuts: its points inside the range, decoded.
    // A chunk's points: a sealed one's from the decoded cache when the summaries are the shared ones.
    const int64_t open_chunk = all && !all->empty() ? all->back().chunk : std::numeric_limits<int64_t>::max();
    const auto points_of = [&](const Summary& c) -> std::shared_ptr<const std::vector<MetricPoint>> {
        const bool sealed = all && c.chunk < open_chunk;
        const std::pair<std::string, int64_t> key{sealed_version, c.chunk};
        if (sealed) {
            const std::lock_guard lock(summary_mutex());
            if (const auto it = decoded_cache().find(key); it != decoded_cache().end())
                return it->second;
        }
        blob.reset();
        blob.bind(1, series).bind(2, c.chunk);
        if (!blob.step())
            return nullptr;
        auto decoded = std::make_shared<const std::vector<MetricPoint>>(decode(blob.text_view(0)));
        if (sealed) {
            const std::lock_guard lock(summary_mutex());
            if (decoded_points + decoded->size() > kMaxDecodedPoints) {
                decoded_cache().clear();
                decoded_points = 0;
            }
            if (decoded_cache().emplace(key, decoded).second)
                decoded_points += decoded->size();
        }
        return decoded;
    };
    const auto add_points = [&](const Summary& c, const auto& add) {
        const auto decoded = points_of(c);
        if (!decoded)
            return;
        for (const MetricPoint& p : *decoded)
            if (p.step >= from_step && p.step <= to_step)
                add(p);
    };
    const double average_span = static_cast<double>(chunks.back().last - chunks.front().first + 1) / chunks.size();
    const bool whole_chunks = width >= 4.0 * average_span;
    // (Three buckets at least: the two cut chunks have one each, and the whole ones need room between them.)
    if (!whole_chunks && 4.0 * width >= average_span && buckets >= 3) {
        // Buckets about as wide as a chunk (from a quarter of one to four: a zoom into a long run). Splitting chunks
        // at fixed edges would decode nearly every one (27 ms for a tenth of 10 M points); instead the buckets are
        // whole chunks, as many together as keep them within `buckets`, each exact from the chunks' summaries, and
        // only the two chunks the range cuts are decoded (a bucket each). The edges fall between chunks, not at
        // fixed steps: each bucket still says exactly which steps it holds and how many points.
        std::vector<const Summary*> whole;
        Bucket before, after;
        for (const Summary& c : chunks) {
            if (c.first >= from_step && c.last <= to_step)
                whole.push_back(&c);
            else
                add_points(c, [&](const MetricPoint& p) { merge(c.first < from_step ? before : after, p); });
        }
        const size_t room = std::max<size_t>(1, static_cast<size_t>(buckets) - (before.count > 0) - (after.count > 0));
        const size_t together = (whole.size() + room - 1) / room;
        if (before.count > 0)
            out.push_back(before);
        for (size_t i = 0; i < whole.size(); i += together) {
            Bucket b;
            for (size_t j = i; j < std::min(whole.size(), i + together); ++j)
                add_chunk(b, *whole[j]);
            out.push_back(b);
        }
        if (after.count > 0)
            out.push_back(after);
        return out;
    }
    // Wide buckets (several chunks each): a chunk goes whole into the bucket its first step falls in, so no chunk
    // is decoded but the two clipped at the range's ends. Narrow buckets: chunks are decoded and split exactly.
    for (const Summary& c : chunks) {
        const bool inside = c.first >= from_step && c.last <= to_step;
        if (inside && (whole_chunks || bucket_of(c.first) == bucket_of(c.last)))
            add_chunk(grid[bucket_of(c.first)], c);
        else
            add_points(c, [&](const MetricPoint& p) { merge(grid[bucket_of(p.step)], p); });
    }
    return collect();
}

} // namespace traindeck
