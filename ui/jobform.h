#pragma once
// The New job dialog's form as plain values, and the job request it makes (as PlotJuggler keeps a pure parser under
// a thin dialog): the dialog only copies widgets to a JobForm and back; what the form means — the request's JSON,
// the job's default name, what must be fixed before it can be submitted — is decided here, with no widget in sight,
// so that the tests state it without a window. Qt Core only; the one outside thing read is whether the files and
// folders the form names exist.
#include <QJsonArray>
#include <QJsonObject>
#include <QString>
#include <QStringList>

namespace traindeck {

struct JobForm {
    enum class Kind { builtin, command };
    Kind kind = Kind::builtin;
    QString name; // empty: named after the command or the model (job_form_name)

    // The built-in trainer.
    QString model = "mlp";          // a preset: "mlp", "cnn" or "resnet" ("custom" with no layers: nothing yet)...
    QJsonArray layers;              // ...unless this is not empty: the model builder's layers (the spec's "layers")
    QString data = "fashion-mnist"; // "fashion-mnist", "csv" or "images" (a folder with one folder per class)
    QString train_csv, test_csv;    // for "csv"; test_csv may be empty
    QString missing = "error";      // for "csv": a missing cell is an "error", or its row is dropped ("drop"), or
                                    // it is filled ("fill": the column's mean or most frequent value)
    bool regression = false;        // for "csv": the label column is a number to predict ("task": "regression")
    // For "images": the folders (relative to the dataset version's folder when one is chosen; empty train: the
    // version's folder itself), the size (0: the first image's), channels (0: from the images, 1 gray, 3 RGB) and how
    // an image of another shape is fitted ("pad" or "crop").
    QString train_folder, test_folder;
    int image_size = 0, channels = 0;
    QString resize = "pad";
    // Augmentation of image data (Fashion-MNIST or a folder), each 0/false: off.
    int crop_padding = 0;
    bool hflip = false;
    double rotate = 0, jitter = 0; // degrees; brightness and contrast factor range
    int epochs = 5;
    int batch_size = 128;
    int grad_accum = 1;        // micro-batches per optimiser step
    QString optimizer = "sgd"; // "sgd" or "adamw"
    double learning_rate = 0.05;
    double weight_decay = -1; // below 0: the optimiser's default (the trainer's: 0 for SGD, 0.01 for AdamW)
    int warmup_steps = 0;
    bool cosine = true;
    double label_smoothing = 0;
    int seed = 42;
    QString device = "auto";    // "auto", "cpu" or "cuda"
    QString precision = "fp32"; // "fp32" or "bf16" (GPU autocast)
    int checkpoint_every = 0;   // optimiser steps; 0: at epoch ends only
    int keep_checkpoints = 3;
    bool early_stopping = false;
    QString early_stopping_metric = "val_loss"; // or "val_accuracy"
    int patience = 3;

    // Any command.
    QString command_line;   // split into argv words as a shell would (split_command_line), never run by one...
    bool shell = false;     // ...unless this is set: then the whole line goes to /bin/sh -c
    QString working_folder; // empty: the job's folder
    QString environment;    // KEY=VALUE, one a line

    // Where and how it runs.
    QString dataset_version;               // empty: none (paths as given)
    int cpus = 2, gpus = 0, memory_mb = 0; // memory 0: no limit
    int priority = 0;
    double budget = 0; // 0: no cap
    int max_restarts = 2;
    bool migrate = false; // continue on another worker from the last checkpoint if this one is lost

    // The request the form was loaded from: what the form does not show (a layer list, a data limit, checkpoint
    // intervals...) goes out unchanged, so that clone-and-edit changes only what the user changed.
    QJsonObject loaded;
};

// The form `form` becomes when it loads `request` (clone and edit): the request's values where it has them, and
// the form's defaults for a missing one (no schedule reads as constant). A command request leaves the built-in
// fields as they were and a built-in one the command fields, as does a built-in request not on CSV for the
// data choice; an unknown model is the MLP, an unknown optimizer leaves the optimizer as it was.
JobForm job_form_from_request(const QJsonObject& request, JobForm form = {});

// Empty when the form can be submitted; otherwise what to fix, as the dialog shows it.
QString job_form_problem(const JobForm& form);

// The name given, or one made from the command's first word or the model and its data ("MLP on Fashion-MNIST").
QString job_form_name(const JobForm& form);

// The worker's job request the form describes (the console's own settings under "console"), built even from a form
// job_form_problem() refuses (it says what it can).
QJsonObject job_form_request(const JobForm& form);

// The request, or false and what to fix in *problem.
bool job_request(const JobForm& form, QJsonObject* request, QString* problem);

// The built-in trainer's spec as the form's "show JSON" view shows it (indented), and the form that JSON text makes:
// false with the parser's or the trainer's words in *problem when it is not a spec the trainer takes.
QString job_form_spec_text(const JobForm& form);
bool job_form_from_spec_text(const QString& text, const JobForm& form, JobForm* out, QString* problem);

// Splits a command line into argv words the way a user expects from a shell (quotes, backslashes), without
// running one. Returns false on an unterminated quote.
bool split_command_line(const QString& line, QStringList& words);
// The words as one line for the form: a word with a space (or an empty one) in double quotes, its double quotes
// escaped; any other word as it is.
QString join_command_line(const QStringList& words);

} // namespace traindeck
