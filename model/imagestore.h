#pragma once
// Images a run logged (TensorBoard's, imported): each one's tag, its order in the source (seq), step, time, size,
// and where its encoded bytes are: the source file, the offset of the TFRecord that holds it and which image of that
// event. The pixels stay in the source, as the import found them; importers::read_tensorboard_image reads them when
// a view shows one (and says so when the source changed since).
// Stored as HistogramStore stores histograms: chunks of up to 64 images of one tag in one BLOB each (images,
// migration 8; a row an image cost the import 3 µs each, more than reading its bytes), a file's path once
// (image_files). Seq is implicit: chunk * kChunkImages + position.
// The chunk format: u8 format (1) · varint count · per image: varint zigzag(step - previous step) · the time's 8
// bytes · varint width · varint height · varint bytes · varint file (image_files.id) · varint zigzag(record_offset -
// previous record_offset) · varint item.
#include "sqlitedb.h"

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace traindeck {

struct ImageRef {
    int64_t seq = 0, step = 0;
    double time = 0;
    int64_t width = 0, height = 0, bytes = 0;
    std::string file;
    int64_t record_offset = 0;
    int item = 0;
};

class ImageStore {
public:
    static constexpr int kChunkImages = 64;

    explicit ImageStore(Database& db) : db_(db) {}

    // Stores images as seq first_seq, first_seq + 1, ... of (job, tag) (their own seq is not read), replacing any
    // stored at those seqs; the ones before first_seq stay. Inside the caller's transaction.
    void append(int64_t job, const std::string& tag, int64_t first_seq, std::span<const ImageRef> images);

    static std::vector<std::string> tags(Database& db, int64_t job);
    // The images of (job, tag) in seq order; a chunk that does not decode is left out and counted in *damaged.
    static std::vector<ImageRef> list(Database& db, int64_t job, const std::string& tag, int64_t* damaged = nullptr);
    static int64_t count(Database& db, int64_t job, const std::string& tag);

private:
    struct Coded {
        int64_t step = 0;
        double time = 0;
        int64_t width = 0, height = 0, bytes = 0, file = 0, record_offset = 0, item = 0;
    };
    static void encode(std::span<const Coded> images, std::string& out);
    static bool decode(std::string_view bytes, std::vector<Coded>& out);
    int64_t file_id(const std::string& path);
    void store_chunk(int64_t job, const std::string& tag, int64_t chunk, std::span<const Coded> images);

    Database& db_;
    Statement upsert_, find_file_, add_file_;           // prepared on first use
    std::map<std::string, int64_t, std::less<>> files_; // path → image_files.id, as found or added
    std::string buffer_;
};

} // namespace traindeck
