#include "jobspec.h"

#include "fnv1a.h"
#include "nametable.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

namespace traindeck::engine {
namespace {

using nlohmann::json;

// Reads known keys out of one JSON object and remembers which keys it saw, so that what is left
// over can be reported as unknown (a typo like "learnig_rate" must not be silently ignored).
class Reader {
public:
    Reader(const json& object, std::string where) : object_(object), where_(std::move(where)) {}

    bool ok() const { return error_.empty(); }
    const std::string& error() const { return error_; }

    template <typename T>
    void read(const char* key, T& out) {
        seen_.insert(key);
        if (!ok() || !object_.contains(key))
            return;
        try {
            out = object_.at(key).get<T>();
        } catch (const json::exception&) {
            fail(std::string("\"") + key + "\" has the wrong type (" + object_.at(key).dump() + ")");
        }
    }

    const json* child(const char* key) {
        seen_.insert(key);
        return object_.contains(key) ? &object_.at(key) : nullptr;
    }

    void fail(const std::string& message) {
        if (ok())
            error_ = where_ + ": " + message;
    }

    void require(bool condition, const std::string& message) {
        if (!condition)
            fail(message);
    }

    void reject_unknown() {
        for (const auto& [key, value] : object_.items()) {
            if (!seen_.count(key)) {
                std::string message = "unknown key \"" + key + "\" (known: ";
                for (const auto& k : seen_) {
                    message += k;
                    message += ", ";
                }
                if (!seen_.empty())
                    message.resize(message.size() - 2); // the last ", "
                message += ")";
                fail(message);
                return;
            }
        }
    }

private:
    const json& object_;
    std::string where_;
    std::set<std::string> seen_;
    std::string error_;
};

constexpr auto kLayerNames = name_table<LayerType>({{LayerType::linear, "linear"},
                                                    {LayerType::conv2d, "conv2d"},
                                                    {LayerType::maxpool, "maxpool"},
                                                    {LayerType::avgpool, "avgpool"},
                                                    {LayerType::global_avgpool, "global_avgpool"},
                                                    {LayerType::batchnorm, "batchnorm"},
                                                    {LayerType::add, "add"},
                                                    {LayerType::relu, "relu"},
                                                    {LayerType::gelu, "gelu"},
                                                    {LayerType::dropout, "dropout"},
                                                    {LayerType::flatten, "flatten"}});

Expected<LayerSpec> parse_layer(const json& object, size_t index) {
    const std::string where = "layers[" + std::to_string(index) + "]";
    if (!object.is_object())
        return Error{where + ": expected an object like {\"type\":\"linear\",\"out\":128}"};
    Reader r(object, where);
    LayerSpec layer;
    std::string type;
    r.read("type", type);
    const std::optional<LayerType> known = layer_type_from(type);
    r.require(known.has_value(), "unknown layer type \"" + type + "\" (known: " + layer_type_names() + ")");
    layer.type = known.value_or(LayerType::linear);
    r.read("out", layer.out);
    r.read("kernel", layer.kernel);
    r.read("stride", layer.stride);
    r.read("padding", layer.padding);
    r.read("size", layer.size);
    r.read("p", layer.p);
    r.read("from", layer.from);
    r.read("momentum", layer.momentum);
    r.read("eps", layer.eps);
    const bool pool = layer.type == LayerType::maxpool || layer.type == LayerType::avgpool;
    if (r.ok() && object.contains("size") && !object.contains("stride"))
        layer.stride = layer.size;
    if (pool && !object.contains("size") && !object.contains("stride"))
        layer.stride = layer.size;
    if (layer.type == LayerType::add)
        r.require(layer.from >= 0 && static_cast<size_t>(layer.from) < index,
                  "an add layer needs \"from\": the index of an earlier layer whose input it adds (0 to " +
                      std::to_string(static_cast<long>(index) - 1) + ")");
    if (layer.type == LayerType::batchnorm)
        r.require(layer.momentum >= 0.0f && layer.momentum <= 1.0f && layer.eps > 0.0f,
                  "batchnorm \"momentum\" must be in [0, 1] and \"eps\" positive");
    if (layer.type == LayerType::linear || layer.type == LayerType::conv2d)
        r.require(layer.out > 0, "\"out\" must be a positive number of " +
                                     std::string(layer.type == LayerType::linear ? "features" : "channels"));
    r.require(layer.kernel > 0 && layer.stride > 0 && layer.padding >= 0 && layer.size > 0,
              "kernel, stride and size must be positive and padding non-negative");
    r.require(layer.p >= 0.0f && layer.p < 1.0f, "dropout \"p\" must be in [0, 1)");
    r.reject_unknown();
    if (!r.ok())
        return Error{r.error()};
    return layer;
}

// Presets: the MLP and the small CNN of the product's demo and benchmark.
Expected<std::vector<LayerSpec>> expand_preset(const std::string& model, Reader& r) {
    std::vector<LayerSpec> layers;
    std::string activation = "relu";
    float dropout = 0.0f;
    r.read("activation", activation);
    r.read("dropout", dropout);
    if (activation != "relu" && activation != "gelu")
        return Error{"\"activation\" must be \"relu\" or \"gelu\", not \"" + activation + "\""};
    if (dropout < 0.0f || dropout >= 1.0f)
        return Error{"\"dropout\" must be in [0, 1)"};
    auto add_activation = [&] {
        layers.push_back({.type = *layer_type_from(activation)});
        if (dropout > 0.0f)
            layers.push_back({.type = LayerType::dropout, .p = dropout});
    };
    if (model == "mlp") {
        std::vector<int> hidden = {256, 128};
        r.read("hidden", hidden);
        layers.push_back({.type = LayerType::flatten});
        for (int width : hidden) {
            if (width <= 0)
                return Error{"\"hidden\" widths must be positive"};
            layers.push_back({.type = LayerType::linear, .out = width});
            add_activation();
        }
    } else if (model == "cnn") {
        std::vector<int> conv = {32, 64};
        std::vector<int> fc = {128};
        int kernel = 3;
        r.read("conv", conv);
        r.read("fc", fc);
        r.read("kernel", kernel);
        for (int channels : conv) {
            if (channels <= 0 || kernel <= 0)
                return Error{"\"conv\" channels and \"kernel\" must be positive"};
            layers.push_back({.type = LayerType::conv2d, .out = channels, .kernel = kernel});
            layers.push_back({.type = *layer_type_from(activation)});
            layers.push_back({.type = LayerType::maxpool, .stride = 2, .size = 2});
        }
        layers.push_back({.type = LayerType::flatten});
        for (int width : fc) {
            if (width <= 0)
                return Error{"\"fc\" widths must be positive"};
            layers.push_back({.type = LayerType::linear, .out = width});
            add_activation();
        }
    } else if (model == "resnet") {
        // A small residual network for 32–64 px images, after the ResNet-9 of DAWNBench: a stem, then per stage a
        // 3x3 convolution (doubling the channels and halving the size from the second stage on) and `blocks`
        // residual blocks (conv-bn-relu-conv-bn, add the block's input, relu); global average pooling and the head.
        int width = 16, stages = 3, blocks = 1;
        r.read("width", width);
        r.read("stages", stages);
        r.read("blocks", blocks);
        if (width <= 0 || stages <= 0 || stages > 6 || blocks < 0)
            return Error{"resnet: \"width\" must be positive, \"stages\" 1 to 6 and \"blocks\" not negative"};
        auto conv_bn_relu = [&](int channels, bool relu) {
            layers.push_back({.type = LayerType::conv2d, .out = channels, .kernel = 3, .padding = 1});
            layers.push_back({.type = LayerType::batchnorm});
            if (relu)
                layers.push_back({.type = *layer_type_from(activation)});
        };
        conv_bn_relu(width, true);
        for (int stage = 0; stage < stages; ++stage) {
            const int channels = width << stage;
            if (stage > 0) {
                conv_bn_relu(channels, true);
                layers.push_back({.type = LayerType::maxpool, .stride = 2, .size = 2});
            }
            for (int block = 0; block < blocks; ++block) {
                const int start = static_cast<int>(layers.size());
                conv_bn_relu(channels, true);
                conv_bn_relu(channels, false);
                layers.push_back({.type = LayerType::add, .from = start});
                layers.push_back({.type = *layer_type_from(activation)});
            }
        }
        layers.push_back({.type = LayerType::global_avgpool});
        layers.push_back({.type = LayerType::flatten});
        if (dropout > 0.0f)
            layers.push_back({.type = LayerType::dropout, .p = dropout});
    } else {
        return Error{"unknown model \"" + model + "\" (known: mlp, cnn, resnet; or give \"layers\")"};
    }
    return layers;
}

std::string resolve_data_path(const std::string& path) {
    if (path.empty() || path.front() == '/')
        return path;
    if (const char* dir = std::getenv("TRAINDECK_DATASET_DIR"); dir && *dir)
        return std::string(dir) + "/" + path;
    return path;
}

Expected<DataSpec> parse_data(const json* object) {
    DataSpec data;
    std::string dataset = "fashion-mnist";
    if (object) {
        if (!object->is_object())
            return Error{"\"data\" must be an object"};
        Reader r(*object, "data");
        r.read("dataset", dataset);
        r.read("format", data.format);
        r.read("train_images", data.train_images);
        r.read("train_labels", data.train_labels);
        r.read("test_images", data.test_images);
        r.read("test_labels", data.test_labels);
        r.read("train_csv", data.train_csv);
        r.read("test_csv", data.test_csv);
        r.read("label_column", data.label_column);
        r.read("missing", data.missing);
        r.require(data.missing == "error" || data.missing == "drop" || data.missing == "fill",
                  "\"missing\" must be \"error\", \"drop\" or \"fill\"");
        r.read("train_dir", data.train_dir);
        r.read("test_dir", data.test_dir);
        if (const json* size = r.child("image_size")) {
            if (size->is_number_integer()) {
                data.image_height = data.image_width = size->get<int>();
            } else if (size->is_array() && size->size() == 2 && (*size)[0].is_number_integer() &&
                       (*size)[1].is_number_integer()) {
                data.image_height = (*size)[0].get<int>();
                data.image_width = (*size)[1].get<int>();
            } else {
                r.fail("\"image_size\" must be a number or [height, width]");
            }
            r.require(data.image_height > 0 && data.image_width > 0 && data.image_height <= 4096 &&
                          data.image_width <= 4096,
                      "\"image_size\" must be between 1 and 4096 pixels");
        }
        r.read("channels", data.channels);
        r.read("resize", data.resize);
        r.read("skip_bad_images", data.skip_bad_images);
        r.read("val_fraction", data.val_fraction);
        r.read("normalize", data.normalize);
        r.read("limit", data.limit);
        if (const json* augment = r.child("augment")) {
            if (!augment->is_object()) {
                r.fail("\"augment\" must be an object");
            } else {
                Reader a(*augment, "data.augment");
                AugmentSpec& spec = data.augment;
                a.read("crop_padding", spec.crop_padding);
                a.read("hflip", spec.hflip);
                a.read("rotate", spec.rotate);
                a.read("translate", spec.translate);
                a.read("brightness", spec.brightness);
                a.read("contrast", spec.contrast);
                a.require(spec.crop_padding >= 0 && spec.crop_padding <= 64,
                          "\"crop_padding\" must be in [0, 64] pixels");
                a.require(spec.rotate >= 0.0f && spec.rotate <= 180.0f, "\"rotate\" must be in [0, 180] degrees");
                a.require(spec.translate >= 0.0f && spec.translate <= 0.5f, "\"translate\" must be in [0, 0.5]");
                a.require(spec.brightness >= 0.0f && spec.brightness < 1.0f && spec.contrast >= 0.0f &&
                              spec.contrast < 1.0f,
                          "\"brightness\" and \"contrast\" must be in [0, 1)");
                a.reject_unknown();
                if (!a.ok())
                    return Error{a.error()};
            }
        }
        r.require(data.format == "idx" || data.format == "csv" || data.format == "image_folder",
                  "\"format\" must be \"idx\", \"csv\" or \"image_folder\"");
        r.require(data.channels == 0 || data.channels == 1 || data.channels == 3, "\"channels\" must be 1 or 3");
        r.require(data.resize == "pad" || data.resize == "crop", "\"resize\" must be \"pad\" or \"crop\"");
        r.require(data.val_fraction >= 0.0 && data.val_fraction < 1.0, "\"val_fraction\" must be in [0, 1)");
        r.require(data.limit >= 0, "\"limit\" must not be negative");
        r.reject_unknown();
        if (!r.ok())
            return Error{r.error()};
        if (data.augment.any() && data.format == "csv")
            return Error{"data: \"augment\" transforms images; a CSV table has none"};
        if (object->contains("format") || object->contains("train_images") || object->contains("train_csv") ||
            object->contains("train_dir"))
            dataset.clear();
    }
    if (dataset == "fashion-mnist") {
        const std::string dir = kFashionMnistDir;
        data.format = "idx";
        data.train_images = dir + "/train-images-idx3-ubyte.gz";
        data.train_labels = dir + "/train-labels-idx1-ubyte.gz";
        data.test_images = dir + "/t10k-images-idx3-ubyte.gz";
        data.test_labels = dir + "/t10k-labels-idx1-ubyte.gz";
    } else if (!dataset.empty()) {
        return Error{"data: unknown dataset \"" + dataset + "\" (known: fashion-mnist; or give the files)"};
    }
    if (data.format == "idx" && (data.train_images.empty() || data.train_labels.empty()))
        return Error{"data: IDX data needs \"train_images\" and \"train_labels\""};
    if (data.format == "csv" && data.train_csv.empty())
        return Error{"data: CSV data needs \"train_csv\""};
    if (data.format == "image_folder" && data.train_dir.empty())
        return Error{"data: an image folder needs \"train_dir\" (a folder with one folder of images per class)"};
    for (std::string* path : {&data.train_images, &data.train_labels, &data.test_images, &data.test_labels,
                              &data.train_csv, &data.test_csv, &data.train_dir, &data.test_dir})
        *path = resolve_data_path(*path);
    return data;
}

} // namespace

// The names are literals, so data() ends in a NUL.
const char* to_string(LayerType type) { return kLayerNames.name(type).value_or("unknown").data(); }

std::optional<LayerType> layer_type_from(std::string_view name) { return kLayerNames.value(name); }

std::string layer_type_names() { return kLayerNames.sorted_names(); }

bool has_weights(LayerType type) { return type == LayerType::linear || type == LayerType::conv2d; }

Expected<JobSpec> parse_job_spec(const json& root) {
    if (!root.is_object())
        return Error{"job spec must be a JSON object"};
    JobSpec spec;
    Reader r(root, "spec");
    r.read("name", spec.name);
    std::string model;
    r.read("model", model);
    if (const json* layers = r.child("layers")) {
        if (!model.empty())
            return Error{"spec: give either \"model\" or \"layers\", not both"};
        if (!layers->is_array() || layers->empty())
            return Error{"spec: \"layers\" must be a non-empty array"};
        for (size_t i = 0; i < layers->size(); ++i) {
            auto layer = parse_layer((*layers)[i], i);
            if (!layer)
                return Error{layer.error()};
            spec.layers.push_back(*layer);
        }
    } else {
        auto preset = expand_preset(model.empty() ? "mlp" : model, r);
        if (!preset)
            return Error{"spec: " + preset.error()};
        spec.layers = *preset;
        spec.model = model.empty() ? "mlp" : model;
    }
    auto data = parse_data(r.child("data"));
    if (!data)
        return Error{data.error()};
    spec.data = *data;

    if (const json* optimizer = r.child("optimizer")) {
        if (!optimizer->is_object())
            return Error{"spec: \"optimizer\" must be an object"};
        Reader o(*optimizer, "optimizer");
        o.read("type", spec.optimizer.type);
        if (spec.optimizer.type == "adamw") {
            spec.optimizer.lr = 1e-3f;
            spec.optimizer.weight_decay = 0.01f;
        }
        o.read("lr", spec.optimizer.lr);
        o.read("momentum", spec.optimizer.momentum);
        o.read("weight_decay", spec.optimizer.weight_decay);
        o.read("beta1", spec.optimizer.beta1);
        o.read("beta2", spec.optimizer.beta2);
        o.read("eps", spec.optimizer.eps);
        o.require(spec.optimizer.type == "sgd" || spec.optimizer.type == "adamw",
                  "\"type\" must be \"sgd\" or \"adamw\"");
        o.require(spec.optimizer.lr > 0.0f, "\"lr\" must be positive");
        o.require(spec.optimizer.momentum >= 0.0f && spec.optimizer.momentum < 1.0f, "\"momentum\" must be in [0, 1)");
        o.require(spec.optimizer.weight_decay >= 0.0f, "\"weight_decay\" must not be negative");
        o.reject_unknown();
        if (!o.ok())
            return Error{o.error()};
    }
    if (const json* schedule = r.child("schedule")) {
        if (!schedule->is_object())
            return Error{"spec: \"schedule\" must be an object"};
        Reader s(*schedule, "schedule");
        s.read("warmup_steps", spec.schedule.warmup_steps);
        s.read("decay", spec.schedule.decay);
        s.read("min_lr_ratio", spec.schedule.min_lr_ratio);
        s.require(spec.schedule.decay == "constant" || spec.schedule.decay == "cosine",
                  "\"decay\" must be \"constant\" or \"cosine\"");
        s.require(spec.schedule.warmup_steps >= 0, "\"warmup_steps\" must not be negative");
        s.reject_unknown();
        if (!s.ok())
            return Error{s.error()};
    }
    r.read("batch_size", spec.batch_size);
    r.read("grad_accum", spec.grad_accum);
    r.read("epochs", spec.epochs);
    r.read("seed", spec.seed);
    r.read("checkpoint_every", spec.checkpoint_every);
    r.read("keep_checkpoints", spec.keep_checkpoints);
    r.read("log_every", spec.log_every);
    r.read("max_steps", spec.max_steps);
    r.read("label_smoothing", spec.label_smoothing);
    r.read("task", spec.task);
    r.read("device", spec.device);
    r.read("precision", spec.precision);
    r.require(spec.device == "auto" || spec.device == "cpu" || spec.device == "cuda",
              "\"device\" must be \"auto\", \"cpu\" or \"cuda\"");
    r.require(spec.precision == "fp32" || spec.precision == "bf16", "\"precision\" must be \"fp32\" or \"bf16\"");
    r.require(spec.label_smoothing >= 0.0f && spec.label_smoothing < 1.0f, "\"label_smoothing\" must be in [0, 1)");
    if (const json* early = r.child("early_stopping")) {
        if (!early->is_object())
            return Error{"spec: \"early_stopping\" must be an object like {\"metric\": \"val_loss\", \"patience\": 3}"};
        Reader e(*early, "early_stopping");
        spec.early_stopping.enabled = true;
        e.read("metric", spec.early_stopping.metric);
        e.read("patience", spec.early_stopping.patience);
        e.read("min_delta", spec.early_stopping.min_delta);
        e.read("restore_best", spec.early_stopping.restore_best);
        e.require(spec.early_stopping.metric == "val_loss" || spec.early_stopping.metric == "val_accuracy",
                  "\"metric\" must be \"val_loss\" or \"val_accuracy\"");
        e.require(spec.early_stopping.patience >= 0 && spec.early_stopping.min_delta >= 0.0,
                  "\"patience\" and \"min_delta\" must not be negative");
        e.reject_unknown();
        if (!e.ok())
            return Error{e.error()};
    }
    r.require(spec.task == "classification" || spec.task == "regression",
              "\"task\" must be \"classification\" or \"regression\"");
    if (spec.task == "regression") {
        r.require(spec.data.format == "csv",
                  "\"task\": \"regression\" trains on a CSV table (data.format \"csv\"); images are classified");
        r.require(spec.label_smoothing == 0.0f,
                  "\"label_smoothing\" is for classification; a regression has no classes");
        r.require(
            !spec.early_stopping.enabled || spec.early_stopping.metric == "val_loss",
            "a regression has no accuracy: early_stopping's \"metric\" must be \"val_loss\" (its mean squared error)");
    }
    r.require(!spec.early_stopping.enabled || spec.data.val_fraction > 0.0,
              "\"early_stopping\" watches the validation set: give data.val_fraction above 0");
    r.require(spec.batch_size > 0, "\"batch_size\" must be positive");
    r.require(spec.grad_accum > 0, "\"grad_accum\" must be positive");
    r.require(spec.epochs > 0, "\"epochs\" must be positive");
    r.require(spec.checkpoint_every >= 0 && spec.max_steps >= 0, "\"checkpoint_every\" and \"max_steps\" must not be negative");
    r.require(spec.keep_checkpoints > 0, "\"keep_checkpoints\" must be at least 1");
    r.require(spec.log_every > 0, "\"log_every\" must be positive");
    r.reject_unknown();
    if (!r.ok())
        return Error{r.error()};

    // Fields that only say how a run is observed or cut short do not change its numbers,
    // so a run may be resumed with a different checkpoint interval, log interval or step limit.
    json numeric = root;
    // Early stopping only decides where a run ends (every epoch before it is the same run).
    // Device and precision are where the arithmetic runs; checkpoints resume on either (as the command line allows).
    for (const char* key : {"name", "checkpoint_every", "keep_checkpoints", "log_every", "max_steps", "early_stopping",
                            "device", "precision"})
        numeric.erase(key);
    spec.hash = fnv1a(numeric.dump());
    return spec;
}

namespace {

// A float as the double that prints like it: 0.05f is 0.0500000007450580596923828125 as a double.
double shortest(float value) {
    char text[32];
    const auto end = std::to_chars(text, text + sizeof(text), value).ptr;
    return std::strtod(std::string(text, end).c_str(), nullptr);
}

} // namespace

json layer_spec_to_json(const LayerSpec& layer) {
    json out = {{"type", to_string(layer.type)}};
    switch (layer.type) {
    case LayerType::linear:
        out["out"] = layer.out;
        break;
    case LayerType::conv2d:
        out.update(
            {{"out", layer.out}, {"kernel", layer.kernel}, {"stride", layer.stride}, {"padding", layer.padding}});
        break;
    case LayerType::maxpool:
    case LayerType::avgpool:
        out.update({{"size", layer.size}, {"stride", layer.stride}});
        break;
    case LayerType::batchnorm:
        out.update({{"momentum", shortest(layer.momentum)}, {"eps", shortest(layer.eps)}});
        break;
    case LayerType::add:
        out["from"] = layer.from;
        break;
    case LayerType::dropout:
        out["p"] = shortest(layer.p);
        break;
    case LayerType::global_avgpool:
    case LayerType::relu:
    case LayerType::gelu:
    case LayerType::flatten:
        break;
    }
    return out;
}

json job_spec_to_json(const JobSpec& spec) {
    json layers = json::array();
    for (const LayerSpec& layer : spec.layers)
        layers.push_back(layer_spec_to_json(layer));
    json data = {{"format", spec.data.format},
                 {"val_fraction", spec.data.val_fraction},
                 {"normalize", spec.data.normalize},
                 {"limit", spec.data.limit}};
    if (spec.data.format == "csv")
        data.update({{"train_csv", spec.data.train_csv},
                     {"test_csv", spec.data.test_csv},
                     {"label_column", spec.data.label_column},
                     {"missing", spec.data.missing}});
    else if (spec.data.format == "image_folder")
        data.update({{"train_dir", spec.data.train_dir},
                     {"test_dir", spec.data.test_dir},
                     {"resize", spec.data.resize},
                     {"skip_bad_images", spec.data.skip_bad_images}});
    else
        data.update({{"train_images", spec.data.train_images},
                     {"train_labels", spec.data.train_labels},
                     {"test_images", spec.data.test_images},
                     {"test_labels", spec.data.test_labels}});
    if (spec.data.format == "image_folder" && spec.data.image_height > 0) // 0: from the images (the trainer's
        data["image_size"] = json::array({spec.data.image_height, spec.data.image_width}); // config says which)
    if (spec.data.format == "image_folder" && spec.data.channels > 0)
        data["channels"] = spec.data.channels;
    if (spec.data.augment.any()) {
        const AugmentSpec& a = spec.data.augment;
        data["augment"] = {{"crop_padding", a.crop_padding},       {"hflip", a.hflip},
                           {"rotate", shortest(a.rotate)},         {"translate", shortest(a.translate)},
                           {"brightness", shortest(a.brightness)}, {"contrast", shortest(a.contrast)}};
    }
    json optimizer = {{"type", spec.optimizer.type},
                      {"lr", shortest(spec.optimizer.lr)},
                      {"weight_decay", shortest(spec.optimizer.weight_decay)}};
    if (spec.optimizer.type == "sgd")
        optimizer["momentum"] = shortest(spec.optimizer.momentum);
    else
        optimizer.update({{"beta1", shortest(spec.optimizer.beta1)},
                          {"beta2", shortest(spec.optimizer.beta2)},
                          {"eps", shortest(spec.optimizer.eps)}});
    json out = {{"name", spec.name},
                {"layers", layers},
                {"data", data},
                {"optimizer", optimizer},
                {"schedule",
                 {{"warmup_steps", spec.schedule.warmup_steps},
                  {"decay", spec.schedule.decay},
                  {"min_lr_ratio", shortest(spec.schedule.min_lr_ratio)}}},
                {"batch_size", spec.batch_size},
                {"grad_accum", spec.grad_accum},
                {"epochs", spec.epochs},
                {"seed", spec.seed},
                {"checkpoint_every", spec.checkpoint_every},
                {"keep_checkpoints", spec.keep_checkpoints},
                {"log_every", spec.log_every},
                {"max_steps", spec.max_steps},
                {"label_smoothing", shortest(spec.label_smoothing)},
                {"device", spec.device},
                {"precision", spec.precision}};
    if (spec.early_stopping.enabled)
        out["early_stopping"] = {{"metric", spec.early_stopping.metric},
                                 {"patience", spec.early_stopping.patience},
                                 {"min_delta", spec.early_stopping.min_delta},
                                 {"restore_best", spec.early_stopping.restore_best}};
    if (!spec.model.empty())
        out["model"] = spec.model;
    if (spec.task != "classification") // the default is left out: runs from before "task" compare the same
        out["task"] = spec.task;
    return out;
}

Expected<JobSpec> load_job_spec(const std::string& path) {
    std::ifstream in(path);
    if (!in)
        return Error{path + ": cannot open the job spec (does the file exist and is it readable?)"};
    std::stringstream text;
    text << in.rdbuf();
    json root;
    try {
        root = json::parse(text.str());
    } catch (const json::parse_error& e) {
        return Error{path + ": not valid JSON (" + e.what() + ")"};
    }
    auto spec = parse_job_spec(root);
    if (!spec)
        return Error{path + ": " + spec.error()};
    return spec;
}

} // namespace traindeck::engine
