#include "tfrecord.h"

#include "crc32c.h"

#include <cstring>

namespace traindeck::importers {
namespace {

uint32_t read_u32(const char* p) {
    uint32_t v = 0;
    std::memcpy(&v, p, 4); // little-endian on disk and in memory (crc32c.cpp asserts the machine is)
    return v;
}

} // namespace

TfRecordScan scan_tfrecords(std::string_view bytes, const std::string& file,
                            const std::function<void(uint64_t, std::string_view)>& on_record,
                            std::vector<Damage>& damage, uint64_t base) {
    TfRecordScan scan;
    scan.end_of_whole = base;
    constexpr size_t kHeader = 12, kFooter = 4;
    size_t at = 0;
    while (at < bytes.size()) {
        const size_t left = bytes.size() - at;
        if (left < kHeader) {
            damage.push_back({file, base + at,
                              "the file ends " + std::to_string(left) +
                                  " bytes into a record header (cut short, or a writer is still appending)",
                              true});
            scan.stopped_early = true;
            break;
        }
        uint64_t length = 0;
        std::memcpy(&length, bytes.data() + at, 8);
        if (mask_crc32c(crc32c(bytes.data() + at, 8)) != read_u32(bytes.data() + at + 8)) {
            damage.push_back({file, base + at,
                              "the record length's CRC does not match, so where the next record starts is lost "
                              "(TFRecord has no marker to find it again): the last " +
                                  std::to_string(left) + " bytes of the file were not read"});
            scan.stopped_early = true;
            break;
        }
        if (length > left - kHeader || left - kHeader - length < kFooter) {
            damage.push_back({file, base + at,
                              "the file ends inside a record of " + std::to_string(length) + " bytes (" +
                                  std::to_string(left) + " bytes left; cut short, or a writer is still appending)",
                              true});
            scan.stopped_early = true;
            break;
        }
        const std::string_view data = bytes.substr(at + kHeader, static_cast<size_t>(length));
        const size_t next = at + kHeader + static_cast<size_t>(length) + kFooter;
        if (masked_crc32c(data) != read_u32(bytes.data() + at + kHeader + length)) {
            scan.last_record_bad = next == bytes.size();
            scan.last_record = base + at;
            if (scan.last_record_bad)
                damage.push_back({file, base + at,
                                  "the data CRC of the file's last record (" + std::to_string(length) +
                                      " bytes) does not match: that record was skipped (damaged, or still arriving)",
                                  true});
            else
                damage.push_back({file, base + at,
                                  "the data CRC of a " + std::to_string(length) +
                                      "-byte record does not match: that record was skipped, the ones after it read"});
        } else {
            ++scan.records;
            on_record(base + at, data);
        }
        at = next;
        scan.end_of_whole = base + at;
    }
    return scan;
}

std::string tfrecord_frame(std::string_view data) {
    std::string out(12 + data.size() + 4, '\0');
    const uint64_t length = data.size();
    std::memcpy(out.data(), &length, 8);
    const uint32_t length_crc = mask_crc32c(crc32c(out.data(), 8));
    std::memcpy(out.data() + 8, &length_crc, 4);
    std::memcpy(out.data() + 12, data.data(), data.size());
    const uint32_t data_crc = masked_crc32c(data);
    std::memcpy(out.data() + 12 + data.size(), &data_crc, 4);
    return out;
}

} // namespace traindeck::importers
