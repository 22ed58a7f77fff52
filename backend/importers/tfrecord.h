#pragma once
// TFRecord framing, the container of TensorBoard's event files: each record is
//   uint64 length (little-endian) | uint32 masked CRC-32C of those 8 bytes | data[length] | uint32 masked CRC-32C of
//   data
// Both CRCs are checked. A bad data CRC costs only its record: the length was vouched for by its own CRC, so the
// next record starts where it says. A bad length CRC (or a file that ends inside a record) ends the file there: with
// no marker between records there is no way to find the next one again (resync is impossible), so the rest of the
// file is reported as not read, with its offset. A file that ends inside a record is also what a writer still
// appending looks like; the scan says where the last whole record ended, so a later read can tell what is new.
#include "importedrun.h"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace traindeck::importers {

struct TfRecordScan {
    uint64_t records = 0;       // records whose data CRC held (handed to on_record)
    uint64_t end_of_whole = 0;  // the offset just past the last record whose framing was whole
    bool stopped_early = false; // the rest of the file from end_of_whole on was not read (see damage)
    // The bytes end with a whole record whose data CRC does not match, at last_record: damage, or (on a network file
    // system, which may show a file's new size before its bytes) a record still arriving. Its Damage is at_end, and a
    // follower reads it again (tfevents.h, read_event_files_on).
    bool last_record_bad = false;
    uint64_t last_record = 0;
};

// Calls on_record(offset of the record's header, data) for every sound record, in file order; a Damage per problem.
// `base` is where bytes start in the file (a file read on from where an earlier scan stopped): every offset said,
// end_of_whole included, is the file's.
TfRecordScan scan_tfrecords(std::string_view bytes, const std::string& file,
                            const std::function<void(uint64_t offset, std::string_view data)>& on_record,
                            std::vector<Damage>& damage, uint64_t base = 0);

// One record, framed (the writer's side).
std::string tfrecord_frame(std::string_view data);

} // namespace traindeck::importers
