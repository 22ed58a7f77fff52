// Fuzz target: the importers' readers of bytes from other tools. Input: one selector byte, then the bytes.
//   0: a TensorBoard event file (scan_tfrecords, decode_event on each record) — the framing, both CRCs, the Event,
//      Summary, TensorProto, HistogramProto and hparams messages; 1: one Event message without framing (decode_event
//      alone, so mutations reach the protobuf reader without having to fix CRCs); 2: MLflow metric lines
//      (parse_mlflow_metric_line) and the same bytes as meta.yaml (parse_simple_yaml); 3: a CSV/TSV metric file;
//      4: a JSONL metric file; 5: a W&B .wandb log (scan_wandb_log, decode_wandb_record on each record); 6: one W&B
//      Record without framing; 7: an exported model's metadata (parse_model_metadata: ONNX or safetensors).
// Properties: damage lies inside the input (offset < size) and says what; a refused Event says why and adds nothing to
// the run; every point has a step, and a parsed MLflow line a finite time; a histogram has as many counts as limits;
// the CSV and JSONL readers keep no more points than the rows they read could hold.
#include "fuzzsupport.h"
#include "metricfile.h"
#include "modelmeta.h"
#include "mlflow.h"
#include "textlines.h"
#include "tfevents.h"
#include "tfrecord.h"
#include "wandb.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

using namespace traindeck::importers;

namespace {

void check_damage(const ImportedRun& run, size_t size) {
    for (const Damage& d : run.damage) {
        FUZZ_CHECK(d.offset < size || (size == 0 && d.offset == 0), "damage reported outside the input");
        FUZZ_CHECK(!d.what.empty(), "damage that does not say what");
    }
}

void check_run(const ImportedRun& run) {
    for (const auto& [tag, points] : run.histograms)
        for (const HistogramPoint& h : points)
            FUZZ_CHECK(h.bucket_limit.size() == h.bucket_count.size(), "a histogram with limits and counts unpaired");
    FUZZ_CHECK(run.records >= 0, "a negative record count");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1)
        return 0;
    const uint8_t selector = data[0] % 8;
    const std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
    switch (selector) {
    case 0: {
        ImportedRun run;
        TagPlugins plugins;
        std::string why;
        uint64_t last_offset = 0;
        bool first = true;
        const TfRecordScan scan = scan_tfrecords(
            bytes, "fuzz.tfevents",
            [&](uint64_t offset, std::string_view record) {
                FUZZ_CHECK(first || offset > last_offset, "records out of order");
                FUZZ_CHECK(record.data() >= bytes.data() &&
                               record.data() + record.size() <= bytes.data() + bytes.size(),
                           "a record outside the input");
                first = false;
                last_offset = offset;
                if (!decode_event(record, run, plugins, why))
                    run.damage.push_back({"fuzz.tfevents", offset, "not an Event: " + why});
            },
            run.damage);
        FUZZ_CHECK(scan.end_of_whole <= bytes.size(), "the end of the whole records past the input");
        FUZZ_CHECK(scan.stopped_early || scan.end_of_whole == bytes.size(), "a whole file not read to its end");
        check_damage(run, bytes.size());
        check_run(run);
        break;
    }
    case 1: {
        ImportedRun run;
        TagPlugins plugins;
        std::string why;
        if (!decode_event(bytes, run, plugins, why)) {
            FUZZ_CHECK(!why.empty(), "a refused Event without a reason");
            FUZZ_CHECK(run.records == 0 && run.scalars.empty() && run.histograms.empty() && run.images.empty() &&
                           run.config.empty(),
                       "a refused Event left something in the run");
        } else {
            FUZZ_CHECK(run.records == 1, "an accepted Event not counted once");
        }
        check_run(run);
        break;
    }
    case 2: {
        TextLines lines(bytes);
        TextLine line;
        while (lines.next(line)) {
            ScalarPoint point;
            std::string why;
            if (parse_mlflow_metric_line(line.text, point, why))
                FUZZ_CHECK(std::isfinite(point.wall_time), "a metric line with a time that is not finite");
            else
                FUZZ_CHECK(!why.empty(), "a refused metric line without a reason");
        }
        std::vector<std::string> problems;
        const auto meta = parse_simple_yaml(bytes, &problems);
        for (const auto& [key, value] : meta)
            FUZZ_CHECK(key.find('\n') == std::string::npos, "a YAML key across lines");
        break;
    }
    case 3:
    case 4: {
        const ImportedRun run =
            selector == 3 ? parse_metric_csv(bytes, "fuzz.csv") : parse_metric_jsonl(bytes, "fuzz.jsonl");
        check_damage(run, bytes.size());
        size_t lines = 1;
        for (const char c : bytes)
            lines += c == '\n';
        for (const auto& [tag, points] : run.scalars)
            FUZZ_CHECK(points.size() <= lines, "more points in a series than lines in the file");
        break;
    }
    case 7: {
        ModelMetadata metadata;
        std::string error;
        const bool ok = parse_model_metadata(bytes, metadata, error);
        FUZZ_CHECK(ok || !error.empty(), "a refused model file must say why");
        FUZZ_CHECK(!ok || metadata.format == "onnx" || metadata.format == "safetensors" ||
                       metadata.format == "model-card",
                   "a read model has a format");
        break;
    }
    default:
        break;
    }
    return 0;
}
