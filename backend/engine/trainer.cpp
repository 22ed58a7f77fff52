#include "trainer.h"

#include "augment.h"
#include "base64.h"
#include "checkpoint.h"
#include "cpumodel.h"
#include "dataset.h"
#include "gemm.h"
#include "gpumodel.h"
#include "imagefolder.h"
#include "layers.h"
#include "metricswriter.h"
#include "model.h"
#include "network.h"
#include "optimizer.h"
#include "parallel.h"
#include "rng.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <numeric>
#include <thread>

#include <unistd.h>

namespace traindeck::engine {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Independent generator streams from one seed: initialisation, data order and dropout never share draws.
uint64_t stream_seed(uint64_t seed, uint64_t stream) { return seed * 0x9e3779b97f4a7c15ULL + stream; }

} // namespace

Expected<TrainingData> load_training_data(const DataSpec& spec, uint64_t seed, bool regression) {
    TrainingData data;
    if (spec.format == "idx") {
        auto train = load_idx(spec.train_images, spec.train_labels);
        if (!train)
            return Error{train.error()};
        data.train = std::move(*train);
        if (!spec.test_images.empty()) {
            auto test = load_idx(spec.test_images, spec.test_labels);
            if (!test)
                return Error{test.error()};
            if (test->features() != data.train.features())
                return Error{spec.test_images + ": test images are not the size of the training images"};
            data.test = std::move(*test);
        }
    } else if (spec.format == "image_folder") {
        ImageFolderOptions options{spec.image_height, spec.image_width,     spec.channels,
                                   spec.resize,       spec.skip_bad_images, {}};
        ImageFolderReport train_report, test_report;
        auto train = load_image_folder(spec.train_dir, options, {}, train_report);
        if (!train)
            return Error{train.error()};
        data.train = std::move(*train);
        if (!spec.test_dir.empty()) {
            auto test = load_image_folder(spec.test_dir, options, data.train.class_names, test_report);
            if (!test)
                return Error{test.error()};
            data.test = std::move(*test);
        }
        // The first 100 unreadable images by name, and how many there were (an event line stays small).
        auto describe = [](const ImageFolderReport& r) {
            const std::vector<std::string> first(r.skipped.begin(),
                                                 r.skipped.begin() + std::min<size_t>(r.skipped.size(), 100));
            return json{{"images", r.images},
                        {"skipped", first},
                        {"skipped_count", r.skipped.size()},
                        {"ignored_files", r.ignored_files},
                        {"ignored_folders", r.ignored_folders},
                        {"from_cache", r.from_cache},
                        {"cache", r.cache_path},
                        {"cache_note", r.cache_note}};
        };
        data.report = {{"image_size", {options.height, options.width}},
                       {"channels", options.channels},
                       {"classes", data.train.class_names},
                       {"train", describe(train_report)}};
        if (!spec.test_dir.empty())
            data.report["test"] = describe(test_report);
    } else {
        // The training file's encoding (numeric or one-hot columns, fill values) is the test file's too.
        CsvEncoding encoding;
        CsvReport train_report, test_report;
        auto train = load_csv(
            spec.train_csv, spec.label_column, {},
            {.missing = spec.missing, .regression = regression, .learned = &encoding, .report = &train_report});
        if (!train)
            return Error{train.error()};
        data.train = std::move(*train);
        json categorical = json::object();
        for (size_t f = 0; f < encoding.columns.size(); ++f)
            if (!encoding.categories[f].empty())
                categorical[encoding.columns[f]] = encoding.categories[f];
        auto describe = [](const CsvReport& r) {
            return json{
                {"rows_dropped", r.rows_dropped}, {"cells_filled", r.cells_filled}, {"unseen_values", r.unseen_values}};
        };
        if (!spec.test_csv.empty()) {
            auto test = load_csv(
                spec.test_csv, spec.label_column, data.train.class_names,
                {.missing = spec.missing, .regression = regression, .encoding = &encoding, .report = &test_report});
            if (!test)
                return Error{test.error()};
            if (test->features() != data.train.features())
                return Error{spec.test_csv + ": has a different number of columns than the training file"};
            data.test = std::move(*test);
        }
        data.report = {{"csv",
                        {{"features", data.train.feature_names},
                         {"categorical", categorical},
                         {"missing", spec.missing},
                         {"train", describe(train_report)}}}};
        if (!spec.test_csv.empty())
            data.report["csv"]["test"] = describe(test_report);
    }
    if (spec.limit > 0 && static_cast<size_t>(spec.limit) < data.train.size()) {
        // IDX and CSV: the first N samples, as they are stored. An image folder is stored class by class, so its
        // first N would be its first classes: a shuffled N (from the seed) instead, in their stored order.
        std::vector<size_t> kept(data.train.size());
        std::iota(kept.begin(), kept.end(), 0);
        if (spec.format == "image_folder") {
            Rng rng(seed ^ 0x11a17ULL);
            for (size_t i = kept.size(); i > 1; --i)
                std::swap(kept[i - 1], kept[rng.below(i)]);
            kept.resize(spec.limit);
            std::sort(kept.begin(), kept.end());
        }
        kept.resize(spec.limit);
        data.train = data.train.subset(kept);
    }
    data.test.classes = std::max(data.test.classes, data.train.classes);
    data.train.classes = data.test.classes;
    data.val = split_validation(data.train, spec.val_fraction, seed, spec.format == "image_folder");
    if (data.train.size() == 0)
        return Error{"no training samples left after the validation split"};
    // A regression's targets are standardised whatever "normalize" says of the inputs: raw prices of 1e5 would
    // train into an infinite loss.
    data.target_scale = fit_target_scale(data.train);
    if (spec.normalize) {
        data.normalization = fit_normalization(data.train);
        apply_normalization(data.train, data.normalization);
        apply_normalization(data.val, data.normalization);
        apply_normalization(data.test, data.normalization);
    }
    return data;
}

namespace {

// A sample the Results tab's gallery may show: where it is in its split, its true and predicted class, and the
// probability the model gave the predicted one.
struct Example {
    size_t index = 0;
    int truth = 0, predicted = 0;
    float confidence = 0.0f;
};

struct Evaluation {
    double loss = 0.0; // classification: mean cross-entropy; regression: mean squared error, in the target's units
    double accuracy = 0.0;
    std::vector<std::vector<long>> confusion; // [true class][predicted class]
    // An image classification's candidates for the gallery: the kExamplesPerCell most confident samples of each
    // confusion cell (key: truth * classes + predicted), most confident first.
    std::map<int, std::vector<Example>> examples;
    // A regression's: root mean squared and mean absolute error, R² (1 − SSE / the split's own total sum of squares),
    // and (true, predicted) for the first kMaxRegressionPairs samples, for the Results view's scatter.
    bool regression = false;
    double rmse = 0.0, mae = 0.0, r2 = 0.0;
    std::vector<std::pair<float, float>> pairs;
    size_t samples = 0;
};

constexpr size_t kMaxRegressionPairs = 2000; // a metrics line stays under about 40 KB

Evaluation evaluate_regression(Model& model, int max_batch, const Dataset& data, TargetScale scale) {
    Evaluation result;
    result.regression = true;
    result.samples = data.size();
    std::vector<float> buffer, predicted;
    predicted.reserve(data.size());
    for (size_t start = 0; start < data.size(); start += max_batch) {
        const int batch = static_cast<int>(std::min<size_t>(max_batch, data.size() - start));
        const float* outputs = model.logits(data.batch(start, batch, buffer), batch);
        for (int b = 0; b < batch; ++b) {
            predicted.push_back(outputs[b] * scale.scale + scale.mean);
            if (result.pairs.size() < kMaxRegressionPairs)
                result.pairs.emplace_back(data.target[start + b], predicted.back());
        }
    }
    const RegressionErrors errors = regression_errors(data.target, predicted);
    result.loss = errors.mse;
    result.rmse = std::sqrt(errors.mse);
    result.mae = errors.mae;
    result.r2 = errors.r2;
    return result;
}

constexpr size_t kMaxConfusionClasses = 256; // the catalog keeps no larger matrix either
constexpr size_t kExamplesPerCell = 3;
// A gallery thumbnail's longest side, in pixels: 32, or 16 when 32 would not fit one example of every cell into
// kExampleBytes, the record's thumbnails with their base64 (a metrics line is cut at 1 MiB).
constexpr int kThumbnailSide = 32;
constexpr int kSmallThumbnailSide = 16;
constexpr size_t kExampleBytes = 384 << 10;
constexpr size_t kMaxExamples = 400;
constexpr size_t kExampleOverhead = 48; // an item's JSON besides its pixels: classes, confidence, index

Evaluation evaluate(Model& model, int classes, int max_batch, const Dataset& data) {
    Evaluation result;
    const bool keep_examples = data.is_image() && static_cast<size_t>(classes) <= kMaxConfusionClasses;
    result.confusion.assign(classes, std::vector<long>(classes, 0));
    std::vector<float> probs(static_cast<size_t>(max_batch) * classes);
    std::vector<float> buffer;
    long correct = 0;
    for (size_t start = 0; start < data.size(); start += max_batch) {
        const int batch = static_cast<int>(std::min<size_t>(max_batch, data.size() - start));
        const float* logits = model.logits(data.batch(start, batch, buffer), batch);
        result.loss += softmax_cross_entropy_forward(probs.data(), logits, data.y.data() + start, batch, classes);
        for (int b = 0; b < batch; ++b) {
            const float* row = probs.data() + static_cast<size_t>(b) * classes;
            const int predicted = static_cast<int>(std::max_element(row, row + classes) - row);
            const int truth = data.y[start + b];
            correct += predicted == truth;
            result.confusion[truth][predicted] += 1;
            if (!keep_examples)
                continue;
            std::vector<Example>& cell = result.examples[truth * classes + predicted];
            const Example example{start + b, truth, predicted, row[predicted]};
            const auto at = std::find_if(cell.begin(), cell.end(),
                                         [&](const Example& e) { return e.confidence < example.confidence; });
            if (cell.size() < kExamplesPerCell || at != cell.end()) {
                cell.insert(at, example);
                if (cell.size() > kExamplesPerCell)
                    cell.pop_back();
            }
        }
    }
    if (data.size() > 0) {
        result.loss /= static_cast<double>(data.size());
        result.accuracy = static_cast<double>(correct) / static_cast<double>(data.size());
    }
    return result;
}

// A thumbnail of at most `side` pixels a side: the whole factor a sample is box-averaged down by, and the size it
// comes to.
struct ThumbnailSize {
    int factor = 1, height = 1, width = 1;
};
ThumbnailSize thumbnail_size(const Dataset& data, int side) {
    const int factor = std::max(1, (std::max(data.height, data.width) + side - 1) / side);
    return {factor, std::max(1, data.height / factor), std::max(1, data.width / factor)};
}

// A sample's pixels as such a thumbnail, HWC bytes: its features with the normalisation undone.
std::vector<uint8_t> thumbnail(const Dataset& data, size_t index, const Normalization& norm, ThumbnailSize size) {
    std::vector<float> row(data.features());
    data.copy_row(index, row.data());
    const int c = data.channels;
    const int factor = size.factor, height = size.height, width = size.width;
    std::vector<uint8_t> out(static_cast<size_t>(height) * width * c);
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x)
            for (int k = 0; k < c; ++k) {
                double sum = 0.0;
                int count = 0;
                for (int dy = 0; dy < factor && y * factor + dy < data.height; ++dy)
                    for (int dx = 0; dx < factor && x * factor + dx < data.width; ++dx) {
                        const size_t at =
                            static_cast<size_t>(y * factor + dy) * data.width + static_cast<size_t>(x * factor + dx);
                        float v = row[at * c + k];
                        if (!norm.empty())
                            v = v / norm.inverse_std[k % norm.mean.size()] + norm.mean[k % norm.mean.size()];
                        sum += v;
                        ++count;
                    }
                const double value = std::round(sum / std::max(count, 1) * 255.0);
                out[(static_cast<size_t>(y) * width + x) * c + k] = static_cast<uint8_t>(std::clamp(value, 0.0, 255.0));
            }
    return out;
}

// The gallery's examples for the record: first the most confident sample of every confusion cell (so that a click
// on any cell has one), then the other kept ones; in each round the mistakes first, most confident first; as many as
// fit kExampleBytes and kMaxExamples. Each item: [true, predicted, confidence, its pixels in base64, its index in
// the split].
json examples_json(const Evaluation& e, const Dataset& data, const Normalization& norm) {
    std::vector<Example> first, rest;
    for (const auto& entry : e.examples)
        for (size_t i = 0; i < entry.second.size(); ++i)
            (i == 0 ? first : rest).push_back(entry.second[i]);
    auto order = [](const Example& a, const Example& b) {
        if ((a.truth != a.predicted) != (b.truth != b.predicted))
            return a.truth != a.predicted;
        if (a.confidence != b.confidence)
            return a.confidence > b.confidence;
        return a.index < b.index;
    };
    std::sort(first.begin(), first.end(), order);
    std::sort(rest.begin(), rest.end(), order);
    first.insert(first.end(), rest.begin(), rest.end());
    // Thumbnails small enough for one example of every cell, if 32 px would not leave room for them.
    const auto encoded_size = [&](ThumbnailSize size) {
        const size_t pixels = static_cast<size_t>(size.height) * size.width * data.channels;
        return (pixels + 2) / 3 * 4 + kExampleOverhead;
    };
    const ThumbnailSize large = thumbnail_size(data, kThumbnailSide);
    const ThumbnailSize size =
        e.examples.size() * encoded_size(large) <= kExampleBytes ? large : thumbnail_size(data, kSmallThumbnailSide);
    json items = json::array();
    size_t bytes = 0;
    for (const Example& example : first) {
        std::vector<uint8_t> pixels = thumbnail(data, example.index, norm, size);
        std::string encoded = base64_encode(pixels.data(), pixels.size());
        if (items.size() >= kMaxExamples || bytes + encoded.size() + kExampleOverhead > kExampleBytes)
            break;
        bytes += encoded.size() + kExampleOverhead;
        items.push_back({example.truth, example.predicted, example.confidence, std::move(encoded), example.index});
    }
    return {{"height", size.height},
            {"width", size.width},
            {"channels", data.channels},
            {"items", items},
            {"candidates", first.size()}};
}

// The examples into the record, unless the record would then pass 0.9 of a metrics line (1 MiB, where the worker
// would cut it and lose the matrix too): then the record says why it has none.
void attach_examples(json& record, const Evaluation& e, const Dataset& data, const Normalization& norm) {
    constexpr size_t kMaxRecord = 900 << 10;
    json examples = examples_json(e, data, norm);
    const size_t without = record.dump().size();
    if (without + examples.dump().size() > kMaxRecord) {
        record["examples_note"] = "no example images: with them the record would pass " +
                                  std::to_string(kMaxRecord >> 10) + " KB (its matrix alone is " +
                                  std::to_string(without >> 10) + " KB)";
        return;
    }
    record["examples"] = std::move(examples);
}

json evaluation_json(const char* split, const Evaluation& e, long step, long epoch,
                     const std::vector<std::string>& class_names) {
    if (e.regression) {
        json pairs = json::array();
        for (const auto& [truth, predicted] : e.pairs)
            pairs.push_back({truth, predicted});
        return {{"type", "eval"}, {"split", split}, {"step", step}, {"epoch", epoch}, {"loss", e.loss},
                {"rmse", e.rmse}, {"mae", e.mae},   {"r2", e.r2},   {"pairs", pairs}, {"samples", e.samples}};
    }
    json record = {{"type", "eval"}, {"split", split}, {"step", step},
                   {"epoch", epoch}, {"loss", e.loss}, {"accuracy", e.accuracy}};
    // The matrix up to kMaxConfusionClasses classes (beyond, a record would outgrow a metrics line: 1,000 classes
    // are a million counts); the run says so once, in its status record.
    if (e.confusion.size() <= kMaxConfusionClasses) {
        record["confusion"] = e.confusion;
        if (class_names.size() == e.confusion.size())
            record["class_names"] = class_names;
    }
    return record;
}

// The device, chosen once: the GPU path when asked for (or "auto") and the model runs there; otherwise the CPU
// engine, which says why when a GPU was asked for. Data parallel runs on the GPU path only: then nullptr + error.
std::unique_ptr<Model> make_model(Network& net, const JobSpec& spec, const TrainOptions& options,
                                  MetricsWriter& metrics, std::string& error) {
    if (options.device == "cpu")
        return std::make_unique<CpuModel>(net, spec.optimizer, spec.label_smoothing);
    std::string reason;
    auto gpu = create_gpu_model(
        net, spec.optimizer, spec.batch_size,
        GpuOptions{options.bf16, options.world_size, options.rank, options.nccl_id, spec.label_smoothing}, reason);
    if (gpu) {
        metrics.write({{"type", "event"}, {"event", "device"}, {"message", "training on " + gpu->describe()}});
        metrics.log("training on " + gpu->describe());
        return gpu;
    }
    if (options.world_size > 1) {
        error = "data-parallel training needs the GPU path, which cannot run here: " + reason;
        return nullptr;
    }
    metrics.write({{"type", "event"},
                   {"event", "device"},
                   {"message", "training on CPU: " + reason},
                   {"convolutions", net.convolution_kernels()}});
    if (options.device == "cuda")
        metrics.log("training on CPU: " + reason);
    return std::make_unique<CpuModel>(net, spec.optimizer, spec.label_smoothing);
}

// Each layer's share of this process's training time on the CPU (all zero when a GPU trained), with what it computes
// a sample, so that a reader can put each layer type's GFLOP/s against the machine's ceiling.
json layer_profile(const Network& net, long samples) {
    json layers = json::array();
    bool after_first = false; // the first layer that computes anything passes no gradient back to the input
    for (size_t i = 0; i < net.layers().size(); ++i) {
        const Layer& layer = net.layers()[i];
        if (layer.spec.type == LayerType::flatten)
            continue; // moves nothing
        layers.push_back({{"index", i},
                          {"type", to_string(layer.spec.type)},
                          {"samples", samples},
                          {"forward_seconds", net.layer_times()[i].forward},
                          {"backward_seconds", net.layer_times()[i].backward},
                          {"forward_flops_per_sample", net.forward_flops_per_sample(i)},
                          {"input_gradient", after_first}});
        after_first = true;
    }
    return layers;
}

} // namespace

std::vector<std::string> known_class_names(const DataSpec& spec, const Dataset& train) {
    // Fashion-MNIST's classes, in its label order (the dataset's documentation).
    static const std::vector<std::string> fashion_mnist = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                           "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
    if (!train.class_names.empty())
        return train.class_names;
    if (spec.format == "idx" && spec.train_images.rfind(std::string(kFashionMnistDir) + "/", 0) == 0 &&
        train.classes == 10)
        return fashion_mnist;
    return {};
}

bool parse_holds(const std::string& text, std::vector<std::pair<long, std::string>>& holds, std::string& error) {
    size_t start = 0;
    while (start <= text.size()) {
        const size_t comma = text.find(',', start);
        const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        const size_t colon = item.find(':');
        char* end = nullptr;
        const long step = colon == std::string::npos ? -1 : std::strtol(item.c_str(), &end, 10);
        if (colon == std::string::npos || end != item.c_str() + colon || step < 0 || colon + 1 >= item.size()) {
            error = "hold \"" + item + "\" is not STEP:FILE (a step number, a colon, a file that releases the hold)";
            return false;
        }
        holds.emplace_back(step, item.substr(colon + 1));
        if (comma == std::string::npos)
            break;
        start = comma + 1;
    }
    return true;
}

TrainResult train(const JobSpec& spec, const TrainOptions& options, MetricsWriter& metrics) {
    auto stop_requested = [&] { return options.stop_requested && options.stop_requested->load(); };
    auto fail = [&](int code, const std::string& message) {
        metrics.write({{"type", "error"}, {"exit_code", code}, {"message", message}});
        return TrainResult{code, message};
    };

    const bool regression = spec.task == "regression";
    auto loaded = load_training_data(spec.data, spec.seed, regression);
    if (!loaded)
        return fail(kExitBadData, loaded.error());
    TrainingData& data = *loaded;
    if (data.report.contains("csv")) {
        const json& csv = data.report["csv"];
        std::string message = "CSV: " + std::to_string(data.train.size()) + " rows, " +
                              std::to_string(data.train.features()) + " features";
        if (!csv["categorical"].empty())
            message += " (" + std::to_string(csv["categorical"].size()) + " categorical columns one-hot)";
        for (const char* split : {"train", "test"}) {
            if (!csv.contains(split))
                continue;
            const json& r = csv[split];
            if (r["rows_dropped"].get<size_t>() > 0)
                message += "; " + std::string(split) + ": " + std::to_string(r["rows_dropped"].get<size_t>()) +
                           " rows with missing values dropped";
            if (r["cells_filled"].get<size_t>() > 0)
                message += "; " + std::string(split) + ": " + std::to_string(r["cells_filled"].get<size_t>()) +
                           " missing cells filled";
            if (r["unseen_values"].get<size_t>() > 0)
                message += "; " + std::string(split) + ": " + std::to_string(r["unseen_values"].get<size_t>()) +
                           " category values the training file does not have (encoded as none)";
        }
        metrics.write({{"type", "event"}, {"event", "data"}, {"message", message}, {"data", data.report}});
        metrics.log(message);
    } else if (!data.report.is_null()) {
        const json& train_report = data.report["train"];
        std::string message = "image folder: " + std::to_string(train_report["images"].get<size_t>()) + " images, " +
                              std::to_string(data.train.classes) + " classes, " + std::to_string(data.train.height) +
                              "x" + std::to_string(data.train.width) + "x" + std::to_string(data.train.channels) +
                              (train_report["from_cache"].get<bool>() ? ", from the cache" : ", decoded");
        if (train_report["skipped_count"].get<size_t>() > 0)
            message +=
                "; " + std::to_string(train_report["skipped_count"].get<size_t>()) + " unreadable images left out";
        if (train_report["ignored_folders"].get<size_t>() > 0)
            message += "; " + std::to_string(train_report["ignored_folders"].get<size_t>()) +
                       " folders inside class folders not read (images are read one level down)";
        if (!train_report["cache_note"].get<std::string>().empty())
            message += "; " + train_report["cache_note"].get<std::string>();
        metrics.write({{"type", "event"}, {"event", "data"}, {"message", message}, {"data", data.report}});
        metrics.log(message);
    }
    const SampleShape shape{data.train.height, data.train.width, data.train.channels};
    auto built = Network::build(spec.layers, shape, data.train.classes, spec.batch_size);
    if (!built)
        return fail(kExitUsage, "model: " + built.error());
    Network& net = *built;
    Rng init_rng(stream_seed(spec.seed, 1));
    net.initialize(init_rng);
    // The weights start in net (initialised, or the checkpoint's); the optimiser's state at zero, or the checkpoint's.
    std::vector<std::vector<float>> optimizer_state(Optimizer::state_buffers(spec.optimizer),
                                                    std::vector<float>(net.params().size(), 0.0f));

    TrainingState state;
    state.spec_hash = spec.hash;
    state.epoch_rng = Rng(stream_seed(spec.seed, 2)).state();
    state.dropout_rng = Rng(stream_seed(spec.seed, 3)).state();
    if (options.resume) {
        auto found = find_latest_checkpoint(options.checkpoint_dir);
        if (!found)
            return fail(kExitIoError, found.error());
        for (const auto& skipped : found->skipped)
            metrics.write({{"type", "event"}, {"event", "checkpoint_skipped"}, {"message", skipped}});
        if (!found->path.empty()) {
            Checkpoint& c = found->checkpoint;
            if (c.state.spec_hash != spec.hash)
                return fail(kExitUsage, found->path + " was written by a run with a different spec (model, data, optimiser "
                                        "or seed changed); use another --checkpoint-dir or remove it to start over");
            if (c.params.size() != net.params().size() || c.optimizer != spec.optimizer.type ||
                c.optimizer_state.size() != optimizer_state.size())
                return fail(kExitUsage, found->path + " does not match this model's parameters or optimiser");
            state = c.state;
            net.params() = std::move(c.params);
            optimizer_state = std::move(c.optimizer_state);
            metrics.log("resumed from " + found->path + " at step " + std::to_string(state.step));
        }
    }

    // Class names for the eval records' confusion matrices: the folders', the CSV's, or Fashion-MNIST's.
    const std::vector<std::string> class_names = known_class_names(spec.data, data.train);
    const size_t train_count = data.train.size();
    const size_t features = data.train.features();
    const int classes = net.classes();
    const long batches_per_epoch = static_cast<long>((train_count + spec.batch_size - 1) / spec.batch_size);
    const long steps_per_epoch = (batches_per_epoch + spec.grad_accum - 1) / spec.grad_accum;
    const long total_steps = steps_per_epoch * spec.epochs;

    // The run's configuration, every default filled in: what the runs table shows, queries and compares. Not its
    // name: that is the run's own column, and as a key it would differ between every two runs (each "only what
    // differs" would list it, and the default grouping would put each run in a group of its own).
    json config = job_spec_to_json(spec);
    config.erase("name");
    if (spec.data.format == "image_folder") { // the size and channels as chosen, when the spec left them out
        config["data"]["image_size"] = {data.train.height, data.train.width};
        config["data"]["channels"] = data.train.channels;
    }
    metrics.write({{"type", "config"}, {"config", config}});
    json running = {{"type", "status"},
                    {"state", "running"},
                    {"name", spec.name},
                    {"model", net.describe()},
                    {"parameters", net.params().size()},
                    {"train_samples", train_count},
                    {"val_samples", data.val.size()},
                    {"test_samples", data.test.size()},
                    {"classes", classes},
                    {"task", spec.task},
                    {"total_steps", total_steps},
                    {"resumed_from_step", state.step},
                    {"threads", compute_threads()}};
    if (options.device == "cpu") // else the device event says where they run, once the device is chosen
        running["convolutions"] = net.convolution_kernels();
    metrics.write(running);
    metrics.log("model " + net.describe());
    if (static_cast<size_t>(classes) > kMaxConfusionClasses)
        metrics.log("confusion matrices are not reported: " + std::to_string(classes) + " classes (at most " +
                    std::to_string(kMaxConfusionClasses) + ")");

    std::string device_error;
    const std::unique_ptr<Model> model = make_model(net, spec, options, metrics, device_error);
    if (!model)
        return fail(kExitUsage, device_error);
    model->write_parameters(net.params(), optimizer_state);
    optimizer_state = {}; // the model holds it now

    auto save = [&](const char* reason) -> Expected<std::string> {
        if (options.rank != 0)
            return std::string("(checkpoints are written by rank 0)");
        Checkpoint c{state, spec.optimizer.type, {}, {}};
        model->read_parameters(c.params, c.optimizer_state);
        auto path = write_checkpoint(options.checkpoint_dir, c, spec.keep_checkpoints);
        if (path)
            metrics.write({{"type", "checkpoint"}, {"step", state.step}, {"epoch", state.epoch}, {"path", *path},
                           {"reason", reason}});
        return path;
    };

    const bool augment = spec.data.augment.any() && data.train.is_image();
    std::vector<float> batch_x(static_cast<size_t>(spec.batch_size) * features);
    std::vector<int32_t> batch_y(spec.batch_size);
    // A regression trains on standardised targets; its losses are reported in the target's units (× scale²).
    std::vector<float> batch_targets(regression ? spec.batch_size : 0);
    const TargetScale target_scale = data.target_scale;
    const double loss_units = regression ? static_cast<double>(target_scale.scale) * target_scale.scale : 1.0;
    std::vector<size_t> order(train_count);
    Rng dropout_rng;
    dropout_rng.set_state(state.dropout_rng);

    auto hold_if_asked = [&](long step) {
        for (const auto& [at, file] : options.holds) {
            if (at != step || ::access(file.c_str(), F_OK) == 0)
                continue;
            metrics.write({{"type", "event"}, {"event", "held"}, {"step", step}, {"until", file}});
            while (::access(file.c_str(), F_OK) != 0 && !stop_requested())
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    };

    long samples_since_log = 0;
    long samples_this_process = 0; // what the layers' times cover (a resumed run's earlier steps are not among them)
    double seconds_since_log = 0.0;
    // Early stopping: patience used up (also after a resume of a run that had already stopped).
    const EarlyStoppingSpec& early = spec.early_stopping;
    auto patience_used_up = [&] { return early.enabled && early.patience > 0 && state.stale_epochs >= early.patience; };
    auto save_best = [&]() -> Expected<std::string> {
        if (options.rank != 0)
            return std::string("(checkpoints are written by rank 0)");
        Checkpoint c{state, spec.optimizer.type, {}, {}};
        model->read_parameters(c.params, c.optimizer_state);
        return write_best_checkpoint(options.checkpoint_dir, c);
    };

    bool stopped_early = patience_used_up(); // a resumed run that had already stopped (the same on every rank)
    while (state.epoch < spec.epochs && !stopped_early) {
        // The epoch's order comes from the generator as it stood at the epoch's start, so a resumed
        // run rebuilds exactly the same order and picks up at batch_in_epoch.
        Rng epoch_rng;
        epoch_rng.set_state(state.epoch_rng);
        std::iota(order.begin(), order.end(), 0);
        for (size_t i = train_count - 1; i > 0; --i)
            std::swap(order[i], order[epoch_rng.below(i + 1)]);
        const Rng::State next_epoch_rng = epoch_rng.state();
        // Each sample's augmentation draws from a generator of its own, seeded by the seed, the epoch and its place
        // in the epoch: a resumed run augments exactly as the unbroken run did, whichever thread fills which sample.
        const uint64_t epoch_seed = Rng::mix(stream_seed(spec.seed, 4) ^ Rng::mix(static_cast<uint64_t>(state.epoch)));
        double epoch_seconds = 0.0;
        long epoch_samples = 0;

        while (state.batch_in_epoch < batches_per_epoch) {
            hold_if_asked(state.step);
            if (model->any_rank(stop_requested())) {
                auto path = save("preempted");
                if (!path)
                    return fail(kExitIoError, path.error());
                metrics.write({{"type", "status"}, {"state", "preempted"}, {"step", state.step}, {"checkpoint", *path}});
                return {kExitPreempted, "stopped on request at step " + std::to_string(state.step) +
                                            "; checkpoint written, continue with --resume"};
            }
            const auto step_start = Clock::now();
            const long window_batches = std::min<long>(spec.grad_accum, batches_per_epoch - state.batch_in_epoch);
            const size_t window_first = static_cast<size_t>(state.batch_in_epoch) * spec.batch_size;
            const size_t window_samples =
                std::min(train_count, window_first + static_cast<size_t>(window_batches) * spec.batch_size) - window_first;
            const float scale = 1.0f / static_cast<float>(window_samples);
            model->zero_grads();
            for (long micro = 0; micro < window_batches; ++micro) {
                const size_t first = window_first + static_cast<size_t>(micro) * spec.batch_size;
                const int batch = static_cast<int>(std::min<size_t>(spec.batch_size, train_count - first));
                parallel_for(
                    batch,
                    [&](size_t begin, size_t end) {
                        thread_local std::vector<float> scratch;
                        for (size_t b = begin; b < end; ++b) {
                            const size_t sample = order[first + b];
                            float* row = batch_x.data() + b * features;
                            data.train.copy_row(sample, row);
                            batch_y[b] = data.train.y[sample];
                            if (regression)
                                batch_targets[b] = (data.train.target[sample] - target_scale.mean) / target_scale.scale;
                            if (augment) {
                                Rng rng(Rng::mix(epoch_seed ^ Rng::mix(first + b + 1)));
                                augment_sample(row, data.train.height, data.train.width, data.train.channels,
                                               spec.data.augment, data.normalization, rng, scratch);
                            }
                        }
                    },
                    augment ? 8 : 64);
                model->forward_backward(batch_x.data(), batch_y.data(), regression ? batch_targets.data() : nullptr,
                                        batch, scale, dropout_rng);
            }
            // The update comes before the loss check; a non-finite loss still keeps NaN out of every checkpoint,
            // since nothing is saved after it.
            const float lr = learning_rate(spec.optimizer, spec.schedule, state.step + 1, total_steps);
            double window_loss = 0.0;
            long window_correct = 0;
            model->step(lr, state.step + 1, window_loss, window_correct);
            const double loss = window_loss / static_cast<double>(window_samples) * loss_units;
            if (!std::isfinite(loss)) {
                metrics.write({{"type", "event"}, {"event", "nan_loss"}, {"step", state.step + 1}, {"loss", loss}});
                return fail(kExitNonFinite, "loss became " + std::string(std::isnan(loss) ? "NaN" : "infinite") +
                                                " at step " + std::to_string(state.step + 1) +
                                                "; lower the learning rate or check the data (no checkpoint written)");
            }
            ++state.step;
            state.batch_in_epoch += window_batches;
            state.samples_seen += static_cast<long>(window_samples);
            state.dropout_rng = dropout_rng.state();
            const double step_seconds = seconds_since(step_start);
            state.train_seconds += step_seconds;
            epoch_seconds += step_seconds;
            epoch_samples += static_cast<long>(window_samples);
            samples_since_log += static_cast<long>(window_samples);
            samples_this_process += static_cast<long>(window_samples);
            seconds_since_log += step_seconds;

            if (state.step % spec.log_every == 0 || state.batch_in_epoch == batches_per_epoch) {
                json record = {{"type", "metric"},
                               {"step", state.step},
                               {"epoch", state.epoch + 1},
                               {"progress", static_cast<double>(state.step) / total_steps},
                               {"loss", loss},
                               {"accuracy", static_cast<double>(window_correct) / window_samples},
                               {"lr", lr},
                               {"samples_per_s", seconds_since_log > 0 ? samples_since_log / seconds_since_log : 0.0},
                               {"train_seconds", state.train_seconds}};
                if (regression) // no accuracy to report: the loss is the mean squared error
                    record.erase("accuracy");
                metrics.write(record);
                samples_since_log = 0;
                seconds_since_log = 0.0;
            }
            const bool epoch_done = state.batch_in_epoch == batches_per_epoch;
            if (spec.checkpoint_every > 0 && state.step % spec.checkpoint_every == 0 && !epoch_done) {
                if (auto path = save("interval"); !path)
                    return fail(kExitIoError, path.error());
            }
            if (spec.max_steps > 0 && state.step >= spec.max_steps && !epoch_done) {
                auto path = save("max_steps");
                if (!path)
                    return fail(kExitIoError, path.error());
                metrics.write({{"type", "status"}, {"state", "stopped"}, {"reason", "max_steps"}, {"step", state.step}});
                return {kExitDone, {}};
            }
        }

        const Evaluation val = regression ? evaluate_regression(*model, spec.batch_size, data.val, target_scale)
                                          : evaluate(*model, classes, spec.batch_size, data.val);
        const double epoch_rate = epoch_seconds > 0 ? epoch_samples / epoch_seconds : 0.0;
        char line[200];
        if (regression)
            std::snprintf(line, sizeof(line),
                          "epoch %ld/%d  step %ld  val MSE %.6g  RMSE %.6g  MAE %.6g  R² %.4f  %.0f samples/s",
                          state.epoch + 1, spec.epochs, state.step, val.loss, val.rmse, val.mae, val.r2, epoch_rate);
        else
            std::snprintf(line, sizeof(line),
                          "epoch %ld/%d  step %ld  val loss %.4f  val accuracy %.2f%%  %.0f samples/s", state.epoch + 1,
                          spec.epochs, state.step, val.loss, 100.0 * val.accuracy, epoch_rate);
        bool improved = false;
        if (early.enabled && data.val.size() > 0) {
            const bool lower_is_better = early.metric == "val_loss";
            const double value = lower_is_better ? val.loss : val.accuracy;
            improved = state.best_epoch == 0 || (lower_is_better ? value < state.best_value - early.min_delta
                                                                 : value > state.best_value + early.min_delta);
            if (improved) {
                state.best_value = value;
                state.best_epoch = state.epoch + 1;
                state.stale_epochs = 0;
            } else {
                ++state.stale_epochs;
            }
        }
        // Every rank stops at the same epoch (data parallel: the ranks' validation numbers may differ by rounding).
        stopped_early = model->any_rank(patience_used_up());
        // The val record, then the epoch's, once early stopping has counted this epoch: a run without a test set
        // shows its gallery from its last epoch's validation, which only then is known to be the last.
        if (data.val.size() > 0) {
            json record = evaluation_json("val", val, state.step, state.epoch + 1, class_names);
            const bool last_epoch =
                state.epoch + 1 == spec.epochs || stopped_early || (spec.max_steps > 0 && state.step >= spec.max_steps);
            if (options.rank == 0 && data.test.size() == 0 && last_epoch && !val.examples.empty())
                attach_examples(record, val, data.val, data.normalization);
            metrics.write(record);
        }
        metrics.write({{"type", "epoch"},
                       {"epoch", state.epoch + 1},
                       {"step", state.step},
                       {"samples", epoch_samples},
                       {"seconds", epoch_seconds},
                       {"samples_per_s", epoch_rate}});
        metrics.log(line);
        state.epoch_rng = next_epoch_rng;
        state.batch_in_epoch = 0;
        ++state.epoch;
        // best.tdck before the epoch's checkpoint: a crash between the two leaves a checkpoint that does not yet count
        // this epoch as the best, never one that does beside an older best.tdck.
        if (improved) {
            auto best = save_best();
            if (!best)
                return fail(kExitIoError, best.error());
            metrics.write({{"type", "event"},
                           {"event", "best_epoch"},
                           {"epoch", state.epoch},
                           {"step", state.step},
                           {"metric", early.metric},
                           {"value", state.best_value},
                           {"path", *best}});
        }
        auto path = save("epoch");
        if (!path)
            return fail(kExitIoError, path.error());
        if (stopped_early) {
            char message[200];
            std::snprintf(message, sizeof(message),
                          "early stopping after epoch %ld: %s has not improved for %ld epochs (best %.4f at epoch %ld)",
                          state.epoch, early.metric.c_str(), state.stale_epochs, state.best_value, state.best_epoch);
            metrics.write({{"type", "event"},
                           {"event", "early_stopped"},
                           {"epoch", state.epoch},
                           {"step", state.step},
                           {"metric", early.metric},
                           {"best_epoch", state.best_epoch},
                           {"best_value", state.best_value},
                           {"message", message}});
            metrics.log(message);
        }
        if (spec.max_steps > 0 && state.step >= spec.max_steps) {
            metrics.write({{"type", "status"}, {"state", "stopped"}, {"reason", "max_steps"}, {"step", state.step}});
            return {kExitDone, {}};
        }
    }

    // Restore best: the test set (and the export) sees the best epoch's weights, read back from best.tdck.
    long test_epoch = state.epoch;
    long test_step = state.step;
    if (early.enabled && early.restore_best && state.best_epoch > 0 && state.best_epoch != state.epoch) {
        auto best = read_checkpoint(best_checkpoint_path(options.checkpoint_dir));
        if (!best)
            return fail(kExitIoError, "cannot restore the best epoch: " + best.error());
        if (best->params.size() != net.params().size() || best->state.spec_hash != spec.hash ||
            best->state.epoch != state.best_epoch)
            return fail(kExitIoError, best_checkpoint_path(options.checkpoint_dir) +
                                          " is not this run's best checkpoint; remove it and resume");
        model->write_parameters(best->params, best->optimizer_state);
        test_epoch = state.best_epoch;
        test_step = best->state.step;
        metrics.write({{"type", "event"},
                       {"event", "restored_best"},
                       {"epoch", test_epoch},
                       {"step", test_step},
                       {"message", "test metrics are those of the best epoch, " + std::to_string(test_epoch)}});
        metrics.log("restored the best epoch (" + std::to_string(test_epoch) + ") for the test set");
    }
    if (data.test.size() > 0) {
        const Evaluation test = regression ? evaluate_regression(*model, spec.batch_size, data.test, target_scale)
                                           : evaluate(*model, classes, spec.batch_size, data.test);
        json record = evaluation_json("test", test, test_step, test_epoch, class_names);
        if (test_epoch != state.epoch)
            record["restored_best"] = true;
        if (options.rank == 0 && !test.examples.empty())
            attach_examples(record, test, data.test, data.normalization);
        metrics.write(record);
        char line[160];
        if (regression)
            std::snprintf(line, sizeof(line), "test MSE %.6g  RMSE %.6g  MAE %.6g  R² %.4f", test.loss, test.rmse,
                          test.mae, test.r2);
        else
            std::snprintf(line, sizeof(line), "test loss %.4f  test accuracy %.2f%%", test.loss, 100.0 * test.accuracy);
        metrics.log(line);
    }
    metrics.write({{"type", "status"},
                   {"state", "finished"},
                   {"step", state.step},
                   {"train_seconds", state.train_seconds},
                   {"samples_per_s", state.train_seconds > 0 ? state.samples_seen / state.train_seconds : 0.0},
                   {"forward_flops_per_sample", net.forward_flops_per_sample()},
                   {"layers", layer_profile(net, samples_this_process)}});
    return {kExitDone, {}};
}

} // namespace traindeck::engine
