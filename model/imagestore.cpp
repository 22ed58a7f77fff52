#include "imagestore.h"

namespace traindeck {

void ImageStore::put(int64_t job, const std::string& tag, const ImageRef& image) {
    if (!upsert_.prepared())
        upsert_ = db_.prepare("INSERT OR REPLACE INTO images(job, tag, seq, step, time, width, height, bytes, file, "
                              "record_offset, item) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    Statement& upsert = upsert_;
    upsert.reset();
    upsert.bind(1, job).bind(2, tag).bind(3, image.seq).bind(4, image.step).bind(5, image.time);
    upsert.bind(6, image.width).bind(7, image.height).bind(8, image.bytes).bind(9, image.file);
    upsert.bind(10, image.record_offset).bind(11, static_cast<int64_t>(image.item));
    upsert.step();
}

std::vector<std::string> ImageStore::tags(Database& db, int64_t job) {
    std::vector<std::string> out;
    Statement select = db.prepare("SELECT DISTINCT tag FROM images WHERE job=? ORDER BY tag");
    select.bind(1, job);
    while (select.step())
        out.push_back(select.text(0));
    return out;
}

std::vector<ImageRef> ImageStore::list(Database& db, int64_t job, const std::string& tag) {
    std::vector<ImageRef> out;
    Statement select = db.prepare("SELECT seq, step, time, width, height, bytes, file, record_offset, item FROM images "
                                  "WHERE job=? AND tag=? ORDER BY seq");
    select.bind(1, job).bind(2, tag);
    while (select.step())
        out.push_back({select.integer(0), select.integer(1), select.real(2), select.integer(3), select.integer(4),
                       select.integer(5), select.text(6), select.integer(7), static_cast<int>(select.integer(8))});
    return out;
}

int64_t ImageStore::count(Database& db, int64_t job, const std::string& tag) {
    Statement select = db.prepare("SELECT COUNT(*) FROM images WHERE job=? AND tag=?");
    select.bind(1, job).bind(2, tag);
    return select.step() ? select.integer(0) : 0;
}

} // namespace traindeck
