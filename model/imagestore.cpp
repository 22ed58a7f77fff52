#include "imagestore.h"

#include "chunkcoding.h"

#include <cstring>
#include <limits>
#include <stdexcept>

namespace traindeck {

using chunk_coding::append_varint;
using chunk_coding::unzigzag;
using chunk_coding::zigzag;

void ImageStore::encode(std::span<const Coded> images, std::string& out) {
    out.clear();
    out.push_back(1);
    append_varint(out, images.size());
    int64_t step = 0, offset = 0;
    for (const Coded& image : images) {
        append_varint(out,
                      zigzag(static_cast<int64_t>(static_cast<uint64_t>(image.step) - static_cast<uint64_t>(step))));
        step = image.step;
        out.append(reinterpret_cast<const char*>(&image.time), 8);
        append_varint(out, static_cast<uint64_t>(image.width));
        append_varint(out, static_cast<uint64_t>(image.height));
        append_varint(out, static_cast<uint64_t>(image.bytes));
        append_varint(out, static_cast<uint64_t>(image.file));
        append_varint(out, zigzag(image.record_offset - offset));
        offset = image.record_offset;
        append_varint(out, static_cast<uint64_t>(image.item));
    }
}

bool ImageStore::decode(std::string_view bytes, std::vector<Coded>& out) {
    chunk_coding::ChunkReader in{bytes.data(), bytes.data() + bytes.size()};
    if (bytes.empty() || bytes[0] != 1)
        return false;
    ++in.at;
    const uint64_t count = in.varint();
    if (!in.ok || count > static_cast<uint64_t>(kChunkImages))
        return false;
    const size_t first = out.size();
    int64_t step = 0, offset = 0;
    for (uint64_t i = 0; i < count && in.ok; ++i) {
        Coded image;
        step = image.step =
            static_cast<int64_t>(static_cast<uint64_t>(step) + static_cast<uint64_t>(unzigzag(in.varint())));
        image.time = in.real();
        image.width = static_cast<int64_t>(in.varint());
        image.height = static_cast<int64_t>(in.varint());
        image.bytes = static_cast<int64_t>(in.varint());
        image.file = static_cast<int64_t>(in.varint());
        offset = image.record_offset =
            static_cast<int64_t>(static_cast<uint64_t>(offset) + static_cast<uint64_t>(unzigzag(in.varint())));
        const uint64_t item = in.varint();
        image.item = static_cast<int64_t>(item);
        if (item > static_cast<uint64_t>(std::numeric_limits<int>::max()) || image.record_offset < 0)
            in.ok = false; // no image is there: a damaged chunk
        out.push_back(image);
    }
    if (!in.ok || in.at != in.end) {
        out.resize(first);
        return false;
    }
    return true;
}

int64_t ImageStore::file_id(const std::string& path) {
    if (const auto it = files_.find(path); it != files_.end())
        return it->second;
    if (!find_file_.prepared()) {
        find_file_ = db_.prepare("SELECT id FROM image_files WHERE path=?");
        add_file_ = db_.prepare("INSERT INTO image_files(path) VALUES(?)");
    }
    find_file_.reset();
    find_file_.bind(1, path);
    int64_t id = 0;
    if (find_file_.step()) {
        id = find_file_.integer(0);
    } else {
        add_file_.reset();
        add_file_.bind(1, path);
        add_file_.step();
        id = db_.last_insert_id();
    }
    find_file_.reset();
    files_.emplace(path, id);
    return id;
}

void ImageStore::store_chunk(int64_t job, const std::string& tag, int64_t chunk, std::span<const Coded> images) {
    encode(images, buffer_);
    if (!upsert_.prepared())
        upsert_ = db_.prepare("INSERT OR REPLACE INTO images(job, tag, chunk, count, data) VALUES(?, ?, ?, ?, ?)");
    upsert_.reset();
    upsert_.bind(1, job).bind(2, tag).bind(3, chunk).bind(4, static_cast<int64_t>(images.size()));
    upsert_.bind_blob_static(5, buffer_.data(), buffer_.size());
    upsert_.step();
}

void ImageStore::append(int64_t job, const std::string& tag, int64_t first_seq, std::span<const ImageRef> images) {
    if (images.empty())
        return;
    std::vector<Coded> coded;
    int64_t chunk = first_seq / kChunkImages;
    if (const int64_t kept = first_seq % kChunkImages; kept > 0) {
        // The chunk first_seq falls in holds earlier images: they are stored again with the new ones after them.
        Statement select = db_.prepare("SELECT data FROM images WHERE job=? AND tag=? AND chunk=?");
        select.bind(1, job).bind(2, tag).bind(3, chunk);
        if (select.step() && !decode(select.text_view(0), coded))
            throw std::runtime_error("image chunk " + std::to_string(chunk) + " of " + tag + " of run " +
                                     std::to_string(job) + " does not decode");
        coded.resize(std::min(coded.size(), static_cast<size_t>(kept)));
    }
    for (const ImageRef& image : images)
        coded.push_back({image.step, image.time, image.width, image.height, image.bytes, file_id(image.file),
                         image.record_offset, image.item});
    for (size_t at = 0; at < coded.size(); at += kChunkImages, ++chunk)
        store_chunk(job, tag, chunk,
                    std::span<const Coded>(coded).subspan(at, std::min<size_t>(kChunkImages, coded.size() - at)));
}

std::vector<std::string> ImageStore::tags(Database& db, int64_t job) {
    std::vector<std::string> out;
    Statement select = db.prepare("SELECT DISTINCT tag FROM images WHERE job=? ORDER BY tag");
    select.bind(1, job);
    while (select.step())
        out.push_back(select.text(0));
    return out;
}

std::vector<ImageRef> ImageStore::list(Database& db, int64_t job, const std::string& tag, int64_t* damaged) {
    std::vector<std::pair<int64_t, Coded>> coded; // seq, image
    std::vector<Coded> chunk_images;
    Statement select = db.prepare("SELECT chunk, data FROM images WHERE job=? AND tag=? ORDER BY chunk");
    select.bind(1, job).bind(2, tag);
    while (select.step()) {
        chunk_images.clear();
        if (!decode(select.text_view(1), chunk_images)) {
            if (damaged)
                ++*damaged;
            continue;
        }
        for (size_t i = 0; i < chunk_images.size(); ++i)
            coded.emplace_back(select.integer(0) * kChunkImages + static_cast<int64_t>(i), chunk_images[i]);
    }
    // The files' paths, each looked up once.
    std::map<int64_t, std::string> paths;
    Statement path_of = db.prepare("SELECT path FROM image_files WHERE id=?");
    for (const auto& [seq, c] : coded)
        if (!paths.contains(c.file)) {
            path_of.reset();
            path_of.bind(1, c.file);
            paths[c.file] = path_of.step() ? path_of.text(0) : std::string();
        }
    std::vector<ImageRef> out;
    out.reserve(coded.size());
    for (const auto& [seq, c] : coded)
        out.push_back({seq, c.step, c.time, c.width, c.height, c.bytes, paths[c.file], c.record_offset,
                       static_cast<int>(c.item)});
    return out;
}

int64_t ImageStore::count(Database& db, int64_t job, const std::string& tag) {
    Statement select = db.prepare("SELECT COALESCE(SUM(count), 0) FROM images WHERE job=? AND tag=?");
    select.bind(1, job).bind(2, tag);
    return select.step() ? select.integer(0) : 0;
}

} // namespace traindeck
