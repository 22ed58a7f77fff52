// JobForm (jobform.h): the form's meaning, from a request and back to one.
#include "jobform.h"

#include "jobspec.h"
#include "jsonbridge.h"
#include "layerplan.h"

#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QObject>

namespace traindeck {

namespace {

bool is_command(const JobForm& form) { return form.kind == JobForm::Kind::command; }

// The data choice as the default job name says it.
QString data_title(const JobForm& form) {
    if (form.data == "images")
        return QFileInfo(form.train_folder).fileName().isEmpty() ? QStringLiteral("images")
                                                                 : QFileInfo(form.train_folder).fileName();
    return form.data == "csv" ? QStringLiteral("CSV") : QStringLiteral("Fashion-MNIST");
}

QStringList environment_lines(const JobForm& form) { return form.environment.split('\n', Qt::SkipEmptyParts); }

double default_weight_decay(const QString& optimizer) { return optimizer == "adamw" ? 0.01 : 0.0; }

// Sets key to value, unless value is the trainer's default and the request did not say it: a new request says only
// what was chosen, a loaded one keeps what it said.
template <typename T>
void set_or_default(QJsonObject& object, const char* key, const T& value, const T& fallback) {
    if (value != fallback || object.contains(key))
        object[key] = value;
}

} // namespace

bool split_command_line(const QString& line, QStringList& words) {
    words.clear();
    QString word;
    bool in_word = false;
    QChar quote;
    for (int i = 0; i < line.size(); ++i) {
        const QChar c = line[i];
        if (!quote.isNull()) {
            if (c == quote)
                quote = QChar();
            else if (c == '\\' && quote == '"' && i + 1 < line.size())
                word += line[++i];
            else
                word += c;
        } else if (c == '"' || c == '\'') {
            quote = c;
            in_word = true;
        } else if (c == '\\' && i + 1 < line.size()) {
            word += line[++i];
            in_word = true;
        } else if (c.isSpace()) {
            if (in_word)
                words << word;
            word.clear();
            in_word = false;
        } else {
            word += c;
            in_word = true;
        }
    }
    if (!quote.isNull())
        return false;
    if (in_word)
        words << word;
    return true;
}

QString join_command_line(const QStringList& words) {
    QStringList quoted;
    for (QString word : words)
        quoted << (word.contains(' ') || word.isEmpty() ? '"' + word.replace('"', "\\\"") + '"' : word);
    return quoted.join(' ');
}

JobForm job_form_from_request(const QJsonObject& request, JobForm form) {
    form.loaded = request;
    form.name = request.value("name").toString();
    const QJsonObject resources = request.value("resources").toObject();
    form.cpus = resources.value("cpus").toInt(2);
    form.gpus = resources.value("gpus").toInt(0);
    form.memory_mb = resources.value("memory_mb").toInt(0);
    form.priority = request.value("priority").toInt();
    form.budget = request.value("budget").toDouble();
    form.max_restarts = request.value("max_restarts").toInt(2);
    form.migrate = request.value("console").toObject().value("migrate").toBool();
    if (request.contains("argv")) {
        form.kind = JobForm::Kind::command;
        QStringList words;
        for (const auto& word : request.value("argv").toArray())
            words << word.toString();
        form.command_line = join_command_line(words);
        form.working_folder = request.value("cwd").toString();
        form.shell = request.value("shell").toBool();
        QStringList env;
        const QJsonObject e = request.value("env").toObject();
        for (auto it = e.begin(); it != e.end(); ++it)
            env << it.key() + "=" + it.value().toString();
        form.environment = env.join('\n');
        return form;
    }
    form.kind = JobForm::Kind::builtin;
    const QJsonObject spec = request.value("builtin").toObject();
    const QString model = spec.value("model").toString();
    form.model = model == "cnn" || model == "resnet" ? model : QStringLiteral("mlp");
    form.layers = spec.value("layers").toArray();
    form.dataset_version = request.value("dataset").toString();
    const QJsonObject data = spec.value("data").toObject();
    if (data.value("format").toString() == "csv") {
        form.data = "csv";
        form.train_csv = data.value("train_csv").toString();
        form.test_csv = data.value("test_csv").toString();
        form.missing = data.value("missing").toString("error");
        form.regression = spec.value("task").toString() == "regression";
    } else if (data.value("format").toString() == "image_folder") {
        form.data = "images";
        form.train_folder = data.value("train_dir").toString();
        if (form.train_folder == ".")
            form.train_folder.clear();
        form.test_folder = data.value("test_dir").toString();
        const QJsonValue size = data.value("image_size");
        form.image_size = size.isArray() ? size.toArray().at(0).toInt() : size.toInt(0);
        form.channels = data.value("channels").toInt(0);
        form.resize = data.value("resize").toString("pad");
    } else {
        form.data = "fashion-mnist";
    }
    const QJsonObject augment = data.value("augment").toObject();
    form.crop_padding = augment.value("crop_padding").toInt(0);
    form.hflip = augment.value("hflip").toBool(false);
    form.rotate = augment.value("rotate").toDouble(0);
    form.jitter = augment.value("brightness").toDouble(augment.value("contrast").toDouble(0));
    form.epochs = spec.value("epochs").toInt(5);
    form.batch_size = spec.value("batch_size").toInt(128);
    form.grad_accum = spec.value("grad_accum").toInt(1);
    const QJsonObject optimizer = spec.value("optimizer").toObject();
    if (const QString type = optimizer.value("type").toString("sgd"); type == "sgd" || type == "adamw")
        form.optimizer = type;
    form.learning_rate = optimizer.value("lr").toDouble(0.05);
    form.weight_decay = optimizer.value("weight_decay").toDouble(-1);
    const QJsonObject schedule = spec.value("schedule").toObject();
    form.cosine = schedule.value("decay").toString() == "cosine";
    form.warmup_steps = schedule.value("warmup_steps").toInt(0);
    form.label_smoothing = spec.value("label_smoothing").toDouble(0);
    form.seed = spec.value("seed").toInt(42);
    form.device = spec.value("device").toString("auto");
    form.precision = spec.value("precision").toString("fp32");
    form.checkpoint_every = spec.value("checkpoint_every").toInt(0);
    form.keep_checkpoints = spec.value("keep_checkpoints").toInt(3);
    const QJsonObject early = spec.value("early_stopping").toObject();
    form.early_stopping = spec.contains("early_stopping");
    form.early_stopping_metric = early.value("metric").toString("val_loss");
    form.patience = early.value("patience").toInt(3);
    return form;
}

QString job_form_name(const JobForm& form) {
    if (!form.name.trimmed().isEmpty())
        return form.name.trimmed();
    if (is_command(form))
        return form.command_line.section(' ', 0, 0);
    const QString model = !form.layers.isEmpty()   ? QStringLiteral("Custom model")
                          : form.model == "resnet" ? QStringLiteral("ResNet")
                                                   : form.model.toUpper();
    return QStringLiteral("%1 on %2").arg(model, data_title(form));
}

QString job_form_problem(const JobForm& form) {
    if (is_command(form)) {
        QStringList words;
        if (!split_command_line(form.command_line, words))
            return QObject::tr("The command has an unterminated quote.");
        if (words.isEmpty())
            return QObject::tr("Give the command to run.");
        if (!form.working_folder.isEmpty() && !QFileInfo(form.working_folder).isDir())
            return QObject::tr("The working folder %1 does not exist.").arg(form.working_folder);
        for (const QString& line : environment_lines(form))
            if (!line.contains('=') || line.startsWith('='))
                return QObject::tr("Environment line “%1” is not KEY=VALUE.").arg(line);
    } else if (form.data == "csv") {
        if (!QFileInfo(form.train_csv).isFile())
            return QObject::tr("Choose a training CSV file that exists.");
        if (!form.test_csv.isEmpty() && !QFileInfo(form.test_csv).isFile())
            return QObject::tr("The test file %1 does not exist.").arg(form.test_csv);
    } else if (form.data == "images" && form.dataset_version.isEmpty()) {
        // With a dataset version the folders are inside it, on the worker: nothing here to look at.
        if (!QFileInfo(form.train_folder).isDir())
            return QObject::tr("Choose a training folder that exists (one folder of images per class).");
        if (!form.test_folder.isEmpty() && !QFileInfo(form.test_folder).isDir())
            return QObject::tr("The test folder %1 does not exist.").arg(form.test_folder);
    }
    if (!is_command(form) && form.model == "custom" && form.layers.isEmpty())
        return QObject::tr("Add at least one layer to the model, or choose a preset.");
    if (!is_command(form)) {
        // The trainer's own reading of the spec: a layer the builder made impossible, a value out of range.
        const auto spec =
            traindeck::engine::parse_job_spec(to_nlohmann(job_form_request(form).value("builtin").toObject()));
        if (!spec)
            return QObject::tr("The trainer would refuse this: %1").arg(QString::fromStdString(spec.error()));
        if (form.data == "fashion-mnist") {
            const auto plan = traindeck::engine::plan_layers(spec->layers, {28, 28, 1}, 10);
            if (!plan.ok())
                return QObject::tr("The model does not fit the data: %1").arg(QString::fromStdString(plan.error));
        }
    }
    return {};
}

QJsonObject job_form_request(const JobForm& form) {
    QJsonObject request = form.loaded;
    const QString name = job_form_name(form);
    request["name"] = name;
    request["resources"] = QJsonObject{{"cpus", form.cpus}, {"gpus", form.gpus}, {"memory_mb", form.memory_mb}};
    request["priority"] = form.priority;
    request["budget"] = form.budget;
    request["max_restarts"] = form.max_restarts;
    QJsonObject console = request.value("console").toObject();
    console["migrate"] = form.migrate;
    request["console"] = console;
    if (form.dataset_version.isEmpty())
        request.remove("dataset");
    else
        request["dataset"] = form.dataset_version;
    if (is_command(form)) {
        request.remove("builtin");
        QStringList words;
        split_command_line(form.command_line, words);
        if (form.shell)
            words = QStringList{form.command_line};
        request["argv"] = QJsonArray::fromStringList(words);
        request["shell"] = form.shell;
        if (!form.working_folder.isEmpty())
            request["cwd"] = form.working_folder;
        QJsonObject env;
        for (const QString& line : environment_lines(form))
            env[line.section('=', 0, 0).trimmed()] = line.section('=', 1);
        request["env"] = env;
        return request;
    }
    request.remove("argv");
    request.remove("shell");
    request.remove("cwd");
    // A built-in job's env (a loaded request's, which the form does not show) goes with it, as every other field
    // the form does not show does on clone-and-edit.
    QJsonObject spec = form.loaded.value("builtin").toObject();
    QJsonObject data = spec.value("data").toObject();
    if (form.data == "csv") {
        for (const char* key :
             {"dataset", "train_dir", "test_dir", "image_size", "channels", "resize", "skip_bad_images"})
            data.remove(key);
        data["format"] = "csv";
        data["train_csv"] = form.train_csv;
        if (!form.test_csv.isEmpty())
            data["test_csv"] = form.test_csv;
        else
            data.remove("test_csv");
        set_or_default(data, "missing", form.missing, QStringLiteral("error"));
    } else if (form.data == "images") {
        for (const char* key : {"dataset", "train_csv", "test_csv", "label_column", "missing", "train_images",
                                "train_labels", "test_images", "test_labels"})
            data.remove(key);
        data["format"] = "image_folder";
        data["train_dir"] =
            form.train_folder.isEmpty() && !form.dataset_version.isEmpty() ? QStringLiteral(".") : form.train_folder;
        if (!form.test_folder.isEmpty())
            data["test_dir"] = form.test_folder;
        else
            data.remove("test_dir");
        // One number in the form; a loaded [height, width] stays as it was while its height is unchanged.
        const QJsonArray loaded_size = data.value("image_size").toArray();
        if (form.image_size > 0 && !(loaded_size.size() == 2 && loaded_size.at(0).toInt() == form.image_size))
            data["image_size"] = form.image_size;
        else if (form.image_size <= 0)
            data.remove("image_size");
        if (form.channels > 0)
            data["channels"] = form.channels;
        else
            data.remove("channels");
        data["resize"] = form.resize;
    } else {
        for (const char* key : {"format", "train_csv", "test_csv", "label_column", "missing", "train_images",
                                "train_labels", "test_images", "test_labels", "dataset", "train_dir", "test_dir",
                                "image_size", "channels", "resize", "skip_bad_images"})
            data.remove(key);
        if (form.dataset_version.isEmpty()) {
            data["dataset"] = "fashion-mnist";
        } else {
            // The version's folder holds the files under Debian's names; paths are relative to it.
            data["format"] = "idx";
            data["train_images"] = "train-images-idx3-ubyte.gz";
            data["train_labels"] = "train-labels-idx1-ubyte.gz";
            data["test_images"] = "t10k-images-idx3-ubyte.gz";
            data["test_labels"] = "t10k-labels-idx1-ubyte.gz";
        }
    }
    // Augmentation: images only, each transform the form turns on (a loaded request's other keys kept).
    QJsonObject augment = data.value("augment").toObject();
    const bool images = form.data != "csv";
    // Brightness and contrast share one field: a loaded pair stays as it was while the field is unchanged.
    const double loaded_jitter = augment.value("brightness").toDouble(augment.value("contrast").toDouble(0));
    const bool jitter_as_loaded = form.jitter == loaded_jitter;
    auto set = [&](const char* key, double value, bool on) {
        if (on && images)
            augment[key] = value;
        else
            augment.remove(key);
    };
    set("crop_padding", form.crop_padding, form.crop_padding > 0);
    if (form.hflip && images)
        augment["hflip"] = true;
    else
        augment.remove("hflip");
    set("rotate", form.rotate, form.rotate > 0);
    if (!jitter_as_loaded || !images) {
        set("brightness", form.jitter, form.jitter > 0);
        set("contrast", form.jitter, form.jitter > 0);
    }
    if (!images)
        augment = {}; // a CSV table has no images: no transform of the loaded request may go with it
    if (augment.isEmpty())
        data.remove("augment");
    else
        data["augment"] = augment;
    // The builder's layers replace the preset (and its keys); a preset other than the one loaded drops the old
    // preset's keys and any layer list.
    if (!form.layers.isEmpty()) {
        spec.remove("model");
        for (const char* key : engine::kPresetKeys)
            spec.remove(key);
        spec["layers"] = form.layers;
    } else {
        if (spec.value("model").toString() != form.model)
            for (const char* key : engine::kPresetKeys)
                spec.remove(key);
        spec.remove("layers");
        spec["model"] = form.model;
    }
    QJsonObject optimizer = spec.value("optimizer").toObject();
    optimizer["type"] = form.optimizer;
    optimizer["lr"] = form.learning_rate;
    if (form.weight_decay >= 0)
        set_or_default(optimizer, "weight_decay", form.weight_decay, default_weight_decay(form.optimizer));
    else
        optimizer.remove("weight_decay");
    QJsonObject schedule = spec.value("schedule").toObject();
    schedule["decay"] = form.cosine ? "cosine" : "constant";
    set_or_default(schedule, "warmup_steps", form.warmup_steps, 0);
    spec["name"] = name;
    spec["data"] = data;
    spec["epochs"] = form.epochs;
    spec["batch_size"] = form.batch_size;
    set_or_default(spec, "grad_accum", form.grad_accum, 1);
    spec["seed"] = form.seed;
    spec["optimizer"] = optimizer;
    spec["schedule"] = schedule;
    set_or_default(spec, "label_smoothing", form.label_smoothing, 0.0);
    if (form.data == "csv" && form.regression)
        spec["task"] = "regression";
    else
        spec.remove("task"); // classification, the trainer's default
    set_or_default(spec, "device", form.device, QStringLiteral("auto"));
    set_or_default(spec, "precision", form.precision, QStringLiteral("fp32"));
    set_or_default(spec, "checkpoint_every", form.checkpoint_every, 0);
    set_or_default(spec, "keep_checkpoints", form.keep_checkpoints, 3);
    if (form.early_stopping) {
        QJsonObject early = spec.value("early_stopping").toObject(); // min_delta, restore_best: kept as loaded
        early["metric"] = form.early_stopping_metric;
        early["patience"] = form.patience;
        spec["early_stopping"] = early;
    } else {
        spec.remove("early_stopping");
    }
    request["builtin"] = spec;
    return request;
}

QString job_form_spec_text(const JobForm& form) {
    return QString::fromUtf8(
        QJsonDocument(job_form_request(form).value("builtin").toObject()).toJson(QJsonDocument::Indented));
}

bool job_form_from_spec_text(const QString& text, const JobForm& form, JobForm* out, QString* problem) {
    QJsonParseError error;
    const QJsonDocument document = QJsonDocument::fromJson(text.toUtf8(), &error);
    QString why;
    if (error.error != QJsonParseError::NoError)
        why = QObject::tr("Not JSON at character %1: %2").arg(error.offset).arg(error.errorString());
    else if (!document.isObject())
        why = QObject::tr("The spec must be a JSON object.");
    else if (const auto spec = traindeck::engine::parse_job_spec(to_nlohmann(document.object())); !spec)
        why = QObject::tr("The trainer would refuse this: %1").arg(QString::fromStdString(spec.error()));
    if (problem)
        *problem = why;
    if (!why.isEmpty())
        return false;
    QJsonObject request = job_form_request(form);
    request["builtin"] = document.object();
    request.remove("name"); // the spec's name (or the one made from it) names the job
    JobForm loaded = job_form_from_request(request, form);
    // A name the JSON did not change stays as the form had it (empty: made from the model and data as they change).
    const QString spec_name = document.object().value("name").toString();
    loaded.name = spec_name.isEmpty() || spec_name == job_form_name(form) ? form.name : spec_name;
    if (out)
        *out = loaded;
    return true;
}

bool job_request(const JobForm& form, QJsonObject* request, QString* problem) {
    const QString why = job_form_problem(form);
    if (problem)
        *problem = why;
    if (!why.isEmpty())
        return false;
    if (request)
        *request = job_form_request(form);
    return true;
}

} // namespace traindeck
