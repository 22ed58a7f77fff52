#include "wandb.h"

#include "protowire.h"
#include "sourcefile.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

// The message fields read here, by number (wandb/proto/wandb_internal.proto, google/protobuf/timestamp.proto):
//   Record          1 num · 2 history · 3 summary · 4 output · 5 config · 6 files · 7 stats · 8 artifact · 9 tbrecord ·
//                   10 alert · 11 telemetry · 12 metric · 13 output_raw · 16 control · 17 run · 18 exit · 19 uuid ·
//                   20 final · 21 header · 22 footer · 23 preempting · 24 link_artifact · 25 use_artifact ·
//                   26 environment (newer SDKs) · 100 request
//   RunRecord       1 run_id · 2 entity · 3 project · 4 config (ConfigRecord) · 5 summary (SummaryRecord) · 6 run_group
//   ·
//                   7 job_type · 8 display_name · 9 notes · 10 tags (repeated) · 13 host · 14 starting_step ·
//                   17 start_time (Timestamp)
//   RunExitRecord   1 exit_code · 2 runtime (seconds)
//   HistoryRecord   1 item (repeated HistoryItem) · 2 step (HistoryStep {1 num})
//   HistoryItem, ConfigItem, SummaryItem   1 key · 2 nested_key (repeated: a path, joined here with ".") · 16
//   value_json ConfigRecord, SummaryRecord            1 update (repeated item) · 2 remove (repeated item) Timestamp 1
//   seconds · 2 nanos

namespace traindeck::importers {

using nlohmann::json;

namespace {

constexpr size_t kBlock = 32768, kChunkHeader = 7, kFileHeader = 7;
enum ChunkType : uint8_t { kZero = 0, kFull = 1, kFirst = 2, kMiddle = 3, kLast = 4 };

uint32_t chunk_crc(uint8_t type, std::string_view payload) {
    uLong crc = ::crc32(0L, &type, 1);
    crc = ::crc32(crc, reinterpret_cast<const Bytef*>(payload.data()), static_cast<uInt>(payload.size()));
    return static_cast<uint32_t>(crc);
}

// W&B writes NaN and the infinities as bare words, which JSON has not.
json parse_value_json(std::string_view text) {
    if (text == "NaN" || text == "nan")
        return std::numeric_limits<double>::quiet_NaN();
    if (text == "Infinity" || text == "inf")
        return std::numeric_limits<double>::infinity();
    if (text == "-Infinity" || text == "-inf")
        return -std::numeric_limits<double>::infinity();
    return json::parse(text, nullptr, false);
}

struct Item {
    std::string key;
    json value;
};

bool parse_item(std::string_view bytes, Item& item, std::string& why) {
    ProtoReader reader(bytes);
    ProtoField f;
    std::string_view value;
    std::string path;
    while (reader.next(f)) {
        if (f.type != WireType::bytes)
            continue;
        if (f.number == 1)
            item.key = std::string(f.bytes);
        else if (f.number == 2)
            path += (path.empty() ? "" : ".") + std::string(f.bytes);
        else if (f.number == 16)
            value = f.bytes;
    }
    if (!reader.ok())
        return why = "an item is malformed", false;
    if (item.key.empty())
        item.key = path;
    item.value = parse_value_json(value);
    if (item.value.is_discarded())
        item.value = std::string(value); // kept as the text it was
    return true;
}

bool parse_items(std::string_view bytes, uint32_t field, std::vector<Item>& out, std::string& why) {
    ProtoReader reader(bytes);
    ProtoField f;
    while (reader.next(f)) {
        if (f.number != field || f.type != WireType::bytes)
            continue;
        Item item;
        if (!parse_item(f.bytes, item, why))
            return false;
        out.push_back(std::move(item));
    }
    if (!reader.ok())
        return why = "a list of items is malformed", false;
    return true;
}

// Numbers of a history value: a number itself, or the numeric leaves of an object (not of W&B's media objects,
// which carry "_type").
void numbers_of(const std::string& key, const json& value, std::vector<std::pair<std::string, double>>& out,
                int depth) {
    if (value.is_number()) {
        out.emplace_back(key, value.get<double>());
    } else if (value.is_object() && !value.contains("_type") && depth < 16) {
        for (auto it = value.begin(); it != value.end(); ++it)
            numbers_of(key + "." + it.key(), *it, out, depth + 1);
    }
}

} // namespace

int64_t scan_wandb_log(std::string_view bytes, const std::string& file,
                       const std::function<void(uint64_t, std::string_view)>& on_record, std::vector<Damage>& damage) {
    if (bytes.size() < kFileHeader || bytes.substr(0, 4) != ":W&B" || static_cast<uint8_t>(bytes[4]) != 0xe1 ||
        static_cast<uint8_t>(bytes[5]) != 0xbe) {
        damage.push_back(
            {file, 0,
             bytes.empty() ? "an empty file: no W&B header" : "not a W&B transaction log (no \":W&B\" header)"});
        return 0;
    }
    if (bytes[6] != 0)
        damage.push_back({file, 6,
                          "W&B log version " + std::to_string(static_cast<uint8_t>(bytes[6])) +
                              " (version 0 is what this reader knows): read as version 0"});
    int64_t records = 0;
    size_t at = kFileHeader;
    std::string fragments; // a record split over FIRST, MIDDLE..., LAST chunks
    uint64_t fragments_offset = 0;
    bool in_fragments = false, suspect = false;
    auto drop_fragments = [&](const char* why) {
        if (in_fragments)
            damage.push_back({file, fragments_offset, std::string("a record split over chunks was dropped: ") + why});
        in_fragments = false;
        fragments.clear();
    };
    while (at < bytes.size()) {
        const size_t left_in_block = kBlock - at % kBlock;
        if (left_in_block < kChunkHeader) {
            at += left_in_block; // the block's trailer: padding
            continue;
        }
        if (bytes.size() - at < kChunkHeader) {
            damage.push_back({file, at,
                              "the file ends " + std::to_string(bytes.size() - at) +
                                  " bytes into a chunk header (cut short, or still being written)",
                              true});
            drop_fragments("the file ends before its last chunk");
            break;
        }
        uint32_t crc = 0;
        uint16_t length = 0;
        std::memcpy(&crc, bytes.data() + at, 4);
        std::memcpy(&length, bytes.data() + at + 4, 2);
        const auto type = static_cast<uint8_t>(bytes[at + 6]);
        if (type == kZero && length == 0) {
            at += left_in_block; // preallocated zeros: nothing more in this block
            continue;
        }
        if (kChunkHeader + length > left_in_block) {
            if (bytes.size() < at + kChunkHeader + length && left_in_block >= bytes.size() - at) {
                damage.push_back({file, at,
                                  "the file ends inside a chunk of " + std::to_string(length) + " bytes (" +
                                      std::to_string(bytes.size() - at - kChunkHeader) +
                                      " there; cut short, or still being written)",
                                  true});
                drop_fragments("the file ends inside it");
                break;
            }
            damage.push_back({file, at,
                              "a chunk of " + std::to_string(length) +
                                  " bytes would run past its 32 KiB block: the rest of the block was skipped"});
            drop_fragments("a chunk of it was damaged");
            at += left_in_block;
            continue;
        }
        if (bytes.size() - at - kChunkHeader < length) {
            damage.push_back({file, at,
                              "the file ends inside a chunk of " + std::to_string(length) + " bytes (" +
                                  std::to_string(bytes.size() - at - kChunkHeader) +
                                  " there; cut short, or still being written)",
                              true});
            drop_fragments("the file ends inside it");
            break;
        }
        const std::string_view payload = bytes.substr(at + kChunkHeader, length);
        if (chunk_crc(type, payload) != crc) {
            drop_fragments("a chunk of it failed its CRC");
            if (suspect) {
                // Two in a row: the length that led here was likely damaged too. Resync at the next block.
                damage.push_back({file, at,
                                  "no chunk found where the damaged one's length pointed: the rest of the "
                                  "32 KiB block (" +
                                      std::to_string(left_in_block) + " bytes) was skipped"});
                at += left_in_block;
                suspect = false;
                continue;
            }
            damage.push_back({file, at, "a chunk failed its CRC: that record was skipped"});
            suspect = true;
            at += kChunkHeader + length;
            continue;
        }
        suspect = false;
        switch (type) {
        case kFull:
            drop_fragments("a whole record came before its last chunk");
            ++records;
            on_record(at, payload);
            break;
        case kFirst:
            drop_fragments("a new record began before its last chunk");
            in_fragments = true;
            fragments_offset = at;
            fragments.assign(payload);
            break;
        case kMiddle:
        case kLast:
            if (!in_fragments) {
                damage.push_back({file, at, "a chunk that continues a record whose first chunk is missing: skipped"});
                break;
            }
            fragments.append(payload);
            if (type == kLast) {
                ++records;
                on_record(fragments_offset, fragments);
                in_fragments = false;
                fragments.clear();
            }
            break;
        default:
            damage.push_back({file, at, "a chunk of unknown type " + std::to_string(type) + ": skipped"});
            break;
        }
        at += kChunkHeader + length;
    }
    if (in_fragments)
        damage.push_back({file, fragments_offset,
                          "the file ends inside a record split over chunks (cut short, or still being written)", true});
    return records;
}

bool decode_wandb_record(std::string_view record, ImportedRun& run, std::string& why) {
    ProtoReader reader(record);
    ProtoField f;
    uint32_t kind = 0;
    std::string_view body;
    while (reader.next(f)) {
        if (f.number == 1 || f.number == 16 || f.number == 19 || f.number == 200)
            continue; // num, control, uuid, _info
        if (f.type == WireType::bytes) {
            kind = f.number;
            body = f.bytes;
        }
    }
    if (!reader.ok())
        return why = "not a Record message (malformed at byte " + std::to_string(reader.position()) + ")", false;

    switch (kind) {
    case 2: { // history
        std::vector<Item> items;
        if (!parse_items(body, 1, items, why))
            return false;
        int64_t step = -1;
        ProtoReader history(body);
        while (history.next(f))
            if (f.number == 2 && f.type == WireType::bytes) {
                step = 0; // HistoryStep {num}: an empty one is step 0
                ProtoReader s(f.bytes);
                ProtoField n;
                while (s.next(n))
                    if (n.number == 1 && n.type == WireType::varint)
                        step = n.as_int64();
            }
        double time = 0;
        std::vector<std::pair<std::string, double>> numbers;
        for (const Item& item : items) {
            if (item.key == "_step" && step < 0 && item.value.is_number())
                step = static_cast<int64_t>(item.value.get<double>());
            else if (item.key == "_timestamp" && item.value.is_number())
                time = item.value.get<double>();
            else if (!item.key.empty() && item.key[0] == '_')
                continue; // _step, _runtime and W&B's other own keys
            else if (item.value.is_number() || item.value.is_object())
                numbers_of(item.key, item.value, numbers, 0);
            else
                ++run.other_records["history:not a number"];
        }
        if (step < 0)
            return why = "a history row without a step", false;
        for (const auto& [key, value] : numbers)
            run.scalars[key].push_back({step, value, std::isfinite(time) ? time : 0.0});
        if (time > 0 && std::isfinite(time)) {
            run.started = run.started == 0 ? time : std::min(run.started, time);
            run.finished = std::max(run.finished, time);
        }
        break;
    }
    case 3: { // summary
        std::vector<Item> updates, removes;
        if (!parse_items(body, 1, updates, why) || !parse_items(body, 2, removes, why))
            return false;
        for (Item& item : updates)
            if (!item.key.empty() && item.key[0] != '_')
                run.summary[item.key] = std::move(item.value);
        for (const Item& item : removes)
            run.summary.erase(item.key);
        break;
    }
    case 5: { // config
        std::vector<Item> updates, removes;
        if (!parse_items(body, 1, updates, why) || !parse_items(body, 2, removes, why))
            return false;
        for (Item& item : updates)
            if (item.key != "_wandb") // the SDK's own bookkeeping
                run.config[item.key] = std::move(item.value);
        for (const Item& item : removes)
            run.config.erase(item.key);
        break;
    }
    case 17: { // run
        ProtoReader fields(body);
        std::vector<Item> config;
        while (fields.next(f)) {
            if (f.type == WireType::bytes) {
                const std::string text(f.bytes);
                switch (f.number) {
                case 1:
                    run.source_id = text;
                    break;
                case 3:
                    run.experiment = text;
                    break;
                case 4:
                    if (!parse_items(f.bytes, 1, config, why))
                        return false;
                    break;
                case 8:
                    run.name = text;
                    break;
                case 9:
                    run.note = text;
                    break;
                case 10:
                    run.labels.push_back(text);
                    break;
                case 2:
                    run.tags["wandb.entity"] = text;
                    break;
                case 6:
                    run.tags["wandb.group"] = text;
                    break;
                case 7:
                    run.tags["wandb.job_type"] = text;
                    break;
                case 13:
                    run.tags["wandb.host"] = text;
                    break;
                case 17: {
                    ProtoReader time(f.bytes);
                    ProtoField t;
                    while (time.next(t))
                        if (t.number == 1 && t.type == WireType::varint && t.as_int64() > 0)
                            run.started = static_cast<double>(t.as_int64());
                    break;
                }
                default:
                    break;
                }
            }
        }
        if (!fields.ok())
            return why = "the RunRecord is malformed", false;
        for (Item& item : config)
            if (item.key != "_wandb")
                run.config[item.key] = std::move(item.value);
        break;
    }
    case 18: { // exit
        int64_t code = 0, runtime = 0;
        ProtoReader fields(body);
        while (fields.next(f)) {
            if (f.number == 1 && f.type == WireType::varint)
                code = static_cast<int32_t>(static_cast<uint32_t>(f.value));
            else if (f.number == 2 && f.type == WireType::varint)
                runtime = static_cast<int32_t>(static_cast<uint32_t>(f.value));
        }
        if (!fields.ok())
            return why = "the RunExitRecord is malformed", false;
        run.state = code == 0 ? "succeeded" : "failed";
        run.state_reason = "W&B exit code " + std::to_string(code);
        if (runtime > 0 && run.started > 0)
            run.finished = std::max(run.finished, run.started + static_cast<double>(runtime));
        ++run.other_records["exit"];
        break;
    }
    default: {
        static const std::pair<uint32_t, const char*> kNames[] = {
            {4, "output"},       {6, "files"},      {7, "stats"},       {8, "artifact"},       {9, "tbrecord"},
            {10, "alert"},       {11, "telemetry"}, {12, "metric"},     {13, "output_raw"},    {20, "final"},
            {21, "header"},      {22, "footer"},    {23, "preempting"}, {24, "link_artifact"}, {25, "use_artifact"},
            {26, "environment"}, {100, "request"}};
        std::string name = "record " + std::to_string(kind);
        for (const auto& [number, text] : kNames)
            if (number == kind)
                name = text;
        ++run.other_records[name];
        break;
    }
    }
    ++run.records;
    return true;
}

ImportedRun read_wandb_file(const std::string& path) {
    ImportedRun run;
    run.format = "wandb";
    run.tool = "wandb";
    run.source = path;
    run.files = {path};
    auto bytes = read_source_file(path);
    if (!bytes) {
        run.damage.push_back({path, 0, bytes.error()});
        return run;
    }
    std::string why;
    scan_wandb_log(
        *bytes, path,
        [&](uint64_t offset, std::string_view record) {
            // Decoded into a copy first: a refused record must leave nothing behind. (It knows when the run started,
            // so that an exit record's runtime gives the end.)
            ImportedRun scratch;
            scratch.started = run.started;
            if (!decode_wandb_record(record, scratch, why)) {
                run.damage.push_back({path, offset, "a record that is not a W&B Record was skipped: " + why});
                return;
            }
            // Most records are history rows: merge what the copy gathered.
            run.records += scratch.records;
            for (auto& [key, points] : scratch.scalars) {
                auto& list = run.scalars[key];
                list.insert(list.end(), points.begin(), points.end());
            }
            for (const auto& [key, n] : scratch.other_records)
                run.other_records[key] += n;
            if (!scratch.source_id.empty())
                run.source_id = scratch.source_id;
            if (!scratch.name.empty())
                run.name = scratch.name;
            if (!scratch.experiment.empty())
                run.experiment = scratch.experiment;
            if (!scratch.note.empty())
                run.note = scratch.note;
            run.labels.insert(run.labels.end(), scratch.labels.begin(), scratch.labels.end());
            for (auto& [key, value] : scratch.tags)
                run.tags[key] = value;
            run.config.update(scratch.config);
            run.summary.update(scratch.summary);
            if (!scratch.state.empty()) {
                run.state = scratch.state;
                run.state_reason = scratch.state_reason;
            }
            if (scratch.started > 0)
                run.started = run.started == 0 ? scratch.started : std::min(run.started, scratch.started);
            run.finished = std::max(run.finished, scratch.finished);
        },
        run.damage);
    if (run.state.empty())
        run.state = "running"; // no exit record: still running, or it died without one
    if (run.state == "running")
        run.state_reason = "no exit record (still running, or the process died before writing one)";
    if (run.name.empty())
        run.name = std::filesystem::path(path).stem().string();
    return run;
}

Expected<std::vector<ImportedRun>> read_wandb(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::is_regular_file(path, ec))
        return std::vector<ImportedRun>{read_wandb_file(path)};
    if (!fs::is_directory(path, ec))
        return Error{"cannot read " + path + ": no such file or folder; give a .wandb file or a wandb/ folder"};
    std::vector<std::string> files;
    fs::recursive_directory_iterator it(path, fs::directory_options::skip_permission_denied, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
        std::error_code type_error;
        const std::string name = it->path().filename().string();
        // Not through symlinks (wandb/latest-run points at a run already in the tree).
        if (it->is_symlink(type_error)) {
            it.disable_recursion_pending();
            continue;
        }
        if (it->is_regular_file(type_error) && name.size() > 6 && name.substr(name.size() - 6) == ".wandb")
            files.push_back(it->path().string());
    }
    if (ec)
        return Error{"listing " + path + " failed: " + ec.message()};
    if (files.empty())
        return Error{path + " holds no W&B run (a run-<id>.wandb file)"};
    std::sort(files.begin(), files.end());
    std::vector<ImportedRun> runs;
    runs.reserve(files.size());
    for (const std::string& file : files)
        runs.push_back(read_wandb_file(file));
    return runs;
}

} // namespace traindeck::importers
