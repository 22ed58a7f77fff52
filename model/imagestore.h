#pragma once
// Images a run logged (TensorBoard's, imported), one row each in `images` (migration 8): the tag, its order in the
// source (seq), step, time, size, and where its encoded bytes are: the source file, the offset of the TFRecord that
// holds it and which image of that event. The pixels stay in the source, as the import found them;
// importers::read_tensorboard_image reads them when a view shows one (and says so when the source changed since).
#include "sqlitedb.h"

#include <cstdint>
#include <string>
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
    explicit ImageStore(Database& db) : db_(db) {}

    // Stores one image as seq of (job, tag), replacing one stored there. Inside the caller's transaction.
    void put(int64_t job, const std::string& tag, const ImageRef& image);
    static std::vector<std::string> tags(Database& db, int64_t job);
    // The images of (job, tag) in seq order.
    static std::vector<ImageRef> list(Database& db, int64_t job, const std::string& tag);
    static int64_t count(Database& db, int64_t job, const std::string& tag);

private:
    Database& db_;
    Statement upsert_; // prepared on first use
};

} // namespace traindeck
