#pragma once
// TensorBoard event files (events.out.tfevents.*) read into ImportedRuns, and scalars written back as such files.
// Reader: TFRecord framing (tfrecord.h), then each record as an Event message decoded by hand (protowire.h).
// A logdir becomes one run per folder that holds event files, as TensorBoard's own logdir does; the files of one
// folder are read in file-name order into the same run (a resumed or restarted writer starts a new file there).
// Kept: scalars (simple_value, and TF2 tensor summaries of one float/double/int/half value), histograms (the legacy
// HistogramProto and the TF2 histograms plugin's [k,3] tensor), images (legacy Image and the TF2 images plugin's
// string tensor; their place and size, the pixels read again when shown), the hparams plugin's session_start_info as
// the run's config and its session_end_info as how the run ended; everything else (graph_def, run metadata, text,
// custom_scalars, ...) is counted in other_records. The writer writes scalars and a flat config (as hparams
// session_start_info) that this reader and TensorBoard both read back.
#include "expected.h"
#include "importedrun.h"
#include "sourcefile.h"

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace traindeck::importers {

// What TensorBoard treats as an event file: a name containing "tfevents".
bool is_event_file_name(std::string_view file_name);

// The plugin of each tag, carried across the events of one run: a writer puts a tag's SummaryMetadata on its first
// value only, and the later values of that tag are read by it.
using TagPlugins = std::map<std::string, std::string, std::less<>>;

// Decodes one Event record into run (scalars, histograms, images, config, counts). False, with why, when the bytes
// are not a well-formed Event; nothing of a refused record is kept.
// record_offset and file_index are where the record is (run.files' index), kept with each image.
bool decode_event(std::string_view record, ImportedRun& run, TagPlugins& plugins, std::string& why,
                  uint64_t record_offset = 0, size_t file_index = 0);

// The encoded bytes (PNG, JPEG, GIF as the writer chose) of one image an import listed: the record at record_offset
// of file is read again, both its CRCs checked, and it must still be an event at `step` holding image `item` of
// `tag`. An error says what differs (a file rewritten, truncated or gone since the import).
Expected<std::string> read_tensorboard_image(const std::string& file, uint64_t record_offset, const std::string& tag,
                                             int item, int64_t step);

// Reads the event files of one run (the folder's files, in the order given) into one run; with a buffer kept
// from one call to the next when there are many.
ImportedRun read_event_files(const std::string& folder, const std::vector<std::string>& files);
ImportedRun read_event_files(const std::string& folder, const std::vector<std::string>& files, SourceBuffer& buffer);

// A logdir's runs before any is read: each folder holding event files, its files in name order and the run's name
// (as TensorBoard names it: the folder relative to the logdir). For readers that take one run at a time (reading
// the next while the last is written, holding two runs in memory rather than the logdir).
struct TensorBoardRunFiles {
    std::string folder, name;
    std::vector<std::string> files;
};
Expected<std::vector<TensorBoardRunFiles>> list_tensorboard_runs(const std::string& path);
ImportedRun read_tensorboard_run(const TensorBoardRunFiles& run, SourceBuffer& buffer);

// A run folder followed while its writer appends (sourcefollower.h): where each file was read to, and what was read
// of the run but the scalars and histograms already handed out (counted in run.points_before). A fresh one reads the
// run whole.
struct EventFilesTail {
    struct File {
        std::string path;
        SourceFileStat seen;     // at the last read
        uint64_t read_to = 0;    // just past the last whole record: where the next read starts
        std::string last_footer; // the 4 bytes before read_to (that record's data CRC): a file rewritten in place, not
                                 // appended to, has others there
        bool readable = true;    // false: the file could not be read (the run is read whole next time)
    };
    std::vector<File> files;
    TagPlugins plugins;
    ImportedRun run;
    bool started = false;
};

// The run as a whole read of listed's files gives it, but read only where they grew since the tail was left: the
// scalars and histograms read before are counted in points_before, not repeated. The whole run is read again (the
// tail started afresh) when the files changed otherwise than by growing at their end: a file shrank, was replaced or
// went away, its last record read is no longer there, a file before the last one grew, or a new file sorts before
// the last one (a whole read would order their points otherwise). Nothing (nullopt, nothing read: a stat of each
// file) when the files are as the tail left them. *bytes_read: how many bytes were read.
std::optional<ImportedRun> read_event_files_on(const TensorBoardRunFiles& listed, EventFilesTail& tail,
                                               SourceBuffer& buffer, uint64_t* bytes_read = nullptr);

// A logdir (or one event file, or a run folder): one run per folder holding event files, in path order. Only a path
// that cannot be read at all, or a tree with no event file, is an error (list_tensorboard_runs' errors); damage
// inside files is in each run.
Expected<std::vector<ImportedRun>> read_tensorboard_logdir(const std::string& path);

// The exporter: one event file in `folder` (created if need be) named events.out.tfevents.<time>.<host>.<pid>.<n>
// with a file_version event, the run's config as hparams session_start_info when it is a flat object, and every
// scalar point as its own event (points of all tags ordered by step, each tag's points keeping their order; each
// value as simple_value, with its exact bits beside it where a float does not hold them: encode_exact_scalar_event,
// so every value reads back bit for bit). Returns the file's path. Written atomically: a reader never sees half a file.
Expected<std::string> write_tensorboard_scalars(const std::string& folder, const ImportedRun& run);

// Single framed records, for writers that append (the exporter, tests that grow a file).
std::string encode_file_version_event(double wall_time);
std::string encode_scalar_event(const std::string& tag, int64_t step, float value, double wall_time);
// A value a float does not hold bit for bit: simple_value is its nearest float (what TensorBoard shows: its scalars
// are floats, and its data server reads no DT_DOUBLE tensor), and a field of TrainDeck's own in the same
// Summary.Value holds its exact bits; other readers skip that field, the importer prefers it.
std::string encode_exact_scalar_event(const std::string& tag, int64_t step, double value, double wall_time);
// The byte-matched path of decode_event for the common scalar event (for the tests: which events it takes).
bool decode_plain_scalar(std::string_view record, ImportedRun& run, const TagPlugins& plugins);

} // namespace traindeck::importers
