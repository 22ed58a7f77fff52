// The New job form without its dialog: what request each preset and command makes, what clone-and-edit keeps, and
// what the form refuses and why. Real files in a temp folder where the form checks that a file exists.
#include "jobform.h"

#include <gtest/gtest.h>

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTemporaryDir>

#include <ostream>

QT_BEGIN_NAMESPACE
// Readable failures: the text, not a byte dump.
inline void PrintTo(const QString& text, std::ostream* out) { *out << '"' << text.toStdString() << '"'; }
inline void PrintTo(const QJsonObject& object, std::ostream* out) {
    *out << QJsonDocument(object).toJson(QJsonDocument::Compact).toStdString();
}
inline void PrintTo(const QJsonArray& array, std::ostream* out) {
    *out << QJsonDocument(array).toJson(QJsonDocument::Compact).toStdString();
}
QT_END_NAMESPACE

using namespace traindeck;

namespace {

JobForm command(const QString& line) {
    JobForm form;
    form.kind = JobForm::Kind::command;
    form.command_line = line;
    return form;
}

QString touch(const QTemporaryDir& dir, const QString& name) {
    QString path = dir.filePath(name);
    QFile file(path);
    EXPECT_TRUE(file.open(QIODevice::WriteOnly)) << path.toStdString();
    file.write("a,b,label\n1,2,0\n");
    return path;
}

} // namespace

TEST(JobForm, TheDefaultPresetIsAnMlpOnFashionMnist) {
    const JobForm form;
    EXPECT_EQ(job_form_problem(form), QString());
    EXPECT_EQ(job_form_name(form), "MLP on Fashion-MNIST");
    const QJsonObject request = job_form_request(form);
    EXPECT_EQ(request.value("name").toString(), "MLP on Fashion-MNIST");
    EXPECT_EQ(request.value("resources").toObject(), (QJsonObject{{"cpus", 2}, {"gpus", 0}, {"memory_mb", 0}}));
    EXPECT_EQ(request.value("priority").toInt(), 0);
    EXPECT_EQ(request.value("budget").toDouble(), 0.0);
    EXPECT_EQ(request.value("max_restarts").toInt(), 2);
    EXPECT_EQ(request.value("console").toObject(), (QJsonObject{{"migrate", false}}));
    EXPECT_FALSE(request.contains("argv"));
    EXPECT_FALSE(request.contains("dataset"));
    const QJsonObject spec = request.value("builtin").toObject();
    EXPECT_EQ(spec, (QJsonObject{{"name", "MLP on Fashion-MNIST"},
                                 {"model", "mlp"},
                                 {"data", QJsonObject{{"dataset", "fashion-mnist"}}},
                                 {"epochs", 5},
                                 {"batch_size", 128},
                                 {"seed", 42},
                                 {"optimizer", QJsonObject{{"type", "sgd"}, {"lr", 0.05}}},
                                 {"schedule", QJsonObject{{"decay", "cosine"}}}}));
}

TEST(JobForm, TheCnnPresetWithAdamWAndAConstantRate) {
    JobForm form;
    form.model = "cnn";
    form.optimizer = "adamw";
    form.learning_rate = 0.001;
    form.cosine = false;
    form.epochs = 3;
    form.batch_size = 64;
    form.seed = 7;
    form.name = "  my cnn  ";
    EXPECT_EQ(job_form_name(form), "my cnn"); // trimmed
    const QJsonObject spec = job_form_request(form).value("builtin").toObject();
    EXPECT_EQ(spec.value("name").toString(), "my cnn");
    EXPECT_EQ(spec.value("model").toString(), "cnn");
    EXPECT_EQ(spec.value("optimizer").toObject(), (QJsonObject{{"type", "adamw"}, {"lr", 0.001}}));
    EXPECT_EQ(spec.value("schedule").toObject(), (QJsonObject{{"decay", "constant"}}));
    EXPECT_EQ(spec.value("epochs").toInt(), 3);
    EXPECT_EQ(spec.value("batch_size").toInt(), 64);
    EXPECT_EQ(spec.value("seed").toInt(), 7);
}

TEST(JobForm, ACsvPresetNamesItsFilesAndNeedsTheTrainingFile) {
    QTemporaryDir dir;
    ASSERT_TRUE(dir.isValid());
    JobForm form;
    form.data = "csv";
    form.train_csv = dir.filePath("train.csv");
    EXPECT_EQ(job_form_problem(form), "Choose a training CSV file that exists.");
    QJsonObject request;
    QString problem;
    EXPECT_FALSE(job_request(form, &request, &problem));
    EXPECT_EQ(problem, "Choose a training CSV file that exists.");
    EXPECT_TRUE(request.isEmpty());

    touch(dir, "train.csv");
    form.test_csv = dir.filePath("test.csv");
    EXPECT_EQ(job_form_problem(form), QString("The test file %1 does not exist.").arg(form.test_csv));
    touch(dir, "test.csv");
    ASSERT_TRUE(job_request(form, &request, &problem)) << problem.toStdString();
    EXPECT_EQ(problem, QString());
    EXPECT_EQ(job_form_name(form), "MLP on CSV");
    EXPECT_EQ(request.value("builtin").toObject().value("data").toObject(),
              (QJsonObject{{"format", "csv"}, {"train_csv", form.train_csv}, {"test_csv", form.test_csv}}));
    // Without a test file the data has none (the trainer splits the training file).
    form.test_csv.clear();
    EXPECT_EQ(job_form_request(form).value("builtin").toObject().value("data").toObject(),
              (QJsonObject{{"format", "csv"}, {"train_csv", form.train_csv}}));
}

TEST(JobForm, ADatasetVersionGoesWithTheJobAndHoldsTheIdxFiles) {
    JobForm form;
    form.dataset_version = "3f2a9c";
    const QJsonObject request = job_form_request(form);
    EXPECT_EQ(request.value("dataset").toString(), "3f2a9c");
    EXPECT_EQ(request.value("builtin").toObject().value("data").toObject(),
              (QJsonObject{{"format", "idx"},
                           {"train_images", "train-images-idx3-ubyte.gz"},
                           {"train_labels", "train-labels-idx1-ubyte.gz"},
                           {"test_images", "t10k-images-idx3-ubyte.gz"},
                           {"test_labels", "t10k-labels-idx1-ubyte.gz"}}));
    // Choosing "none" again drops it from a loaded request.
    form = job_form_from_request(request);
    EXPECT_EQ(form.dataset_version, "3f2a9c");
    form.dataset_version.clear();
    const QJsonObject again = job_form_request(form);
    EXPECT_FALSE(again.contains("dataset"));
    EXPECT_EQ(again.value("builtin").toObject().value("data").toObject(), (QJsonObject{{"dataset", "fashion-mnist"}}));
}

TEST(JobForm, ACommandIsSplitIntoArgvWithItsFolderAndEnvironment) {
    QTemporaryDir dir;
    ASSERT_TRUE(dir.isValid());
    JobForm form = command(R"(/usr/bin/python3 "my train.py" --tag 'a b' x\ y)");
    form.working_folder = dir.path();
    form.environment = "SEED=7\n\nPATH_EXTRA = /opt/bin=x\n";
    form.dataset_version = "ab12";
    ASSERT_EQ(job_form_problem(form), QString());
    EXPECT_EQ(job_form_name(form), "/usr/bin/python3");
    const QJsonObject request = job_form_request(form);
    EXPECT_EQ(request.value("argv").toArray(), (QJsonArray{"/usr/bin/python3", "my train.py", "--tag", "a b", "x y"}));
    EXPECT_EQ(request.value("shell").toBool(), false);
    EXPECT_EQ(request.value("cwd").toString(), dir.path());
    // The key is trimmed, the value kept as typed after the first "=".
    EXPECT_EQ(request.value("env").toObject(), (QJsonObject{{"SEED", "7"}, {"PATH_EXTRA", " /opt/bin=x"}}));
    EXPECT_EQ(request.value("dataset").toString(), "ab12");
    EXPECT_FALSE(request.contains("builtin"));
    // No folder given: none is sent (the job's own folder).
    EXPECT_FALSE(job_form_request(command("true")).contains("cwd"));
}

TEST(JobForm, TheShellFlagSendsTheWholeLineToShMinusC) {
    JobForm form = command("ls *.csv | wc -l > count.txt");
    form.shell = true;
    const QJsonObject request = job_form_request(form);
    EXPECT_EQ(request.value("argv").toArray(), (QJsonArray{"ls *.csv | wc -l > count.txt"}));
    EXPECT_EQ(request.value("shell").toBool(), true);
    EXPECT_EQ(job_form_name(form), "ls");
}

TEST(JobForm, ResourcesPriorityBudgetRestartsAndMigrationAreSent) {
    JobForm form = command("train");
    form.cpus = 8;
    form.gpus = 2;
    form.memory_mb = 4096;
    form.priority = -5;
    form.budget = 12.5;
    form.max_restarts = 0;
    form.migrate = true;
    const QJsonObject request = job_form_request(form);
    EXPECT_EQ(request.value("resources").toObject(), (QJsonObject{{"cpus", 8}, {"gpus", 2}, {"memory_mb", 4096}}));
    EXPECT_EQ(request.value("priority").toInt(), -5);
    EXPECT_EQ(request.value("budget").toDouble(), 12.5);
    EXPECT_EQ(request.value("max_restarts").toInt(), 0);
    EXPECT_EQ(request.value("console").toObject().value("migrate").toBool(), true);
}

TEST(JobForm, ACommandFormIsRefusedWithWhatToFix) {
    EXPECT_EQ(job_form_problem(command("echo \"unterminated")), "The command has an unterminated quote.");
    EXPECT_EQ(job_form_problem(command("   ")), "Give the command to run.");
    JobForm form = command("true");
    form.working_folder = "/no/such/folder";
    EXPECT_EQ(job_form_problem(form), "The working folder /no/such/folder does not exist.");
    form.working_folder.clear();
    form.environment = "GOOD=1\nNOEQUALS";
    EXPECT_EQ(job_form_problem(form), "Environment line “NOEQUALS” is not KEY=VALUE.");
    form.environment = "=value";
    EXPECT_EQ(job_form_problem(form), "Environment line “=value” is not KEY=VALUE.");
    QJsonObject request{{"untouched", true}};
    QString problem;
    EXPECT_FALSE(job_request(form, &request, &problem));
    EXPECT_EQ(problem, "Environment line “=value” is not KEY=VALUE.");
    EXPECT_EQ(request, (QJsonObject{{"untouched", true}})); // nothing written on refusal
    // A built-in form does not look at the command fields.
    form.kind = JobForm::Kind::builtin;
    EXPECT_EQ(job_form_problem(form), QString());
}

TEST(JobForm, ACommandRequestRoundTrips) {
    const QJsonObject loaded{{"name", "script"},
                             {"argv", QJsonArray{"/usr/bin/python3", "my train.py", "--epochs", "3", ""}},
                             {"env", QJsonObject{{"SEED", "7"}, {"MODE", "a=b"}}},
                             {"cwd", "/tmp"},
                             {"resources", QJsonObject{{"cpus", 3}, {"gpus", 1}, {"memory_mb", 2048}}},
                             {"priority", 5},
                             {"budget", 12.5},
                             {"max_restarts", 1},
                             {"console", QJsonObject{{"migrate", true}}},
                             {"labels", QJsonArray{"kept"}}};
    const JobForm form = job_form_from_request(loaded);
    EXPECT_EQ(form.kind, JobForm::Kind::command);
    EXPECT_EQ(form.command_line, R"(/usr/bin/python3 "my train.py" --epochs 3 "")");
    EXPECT_EQ(form.environment, "MODE=a=b\nSEED=7");
    QJsonObject expected = loaded;
    expected["shell"] = false;
    EXPECT_EQ(job_form_request(form), expected);
}

TEST(JobForm, CloneAndEditKeepsWhatTheFormDoesNotShow) {
    const QJsonObject spec{{"model", "cnn"},
                           {"conv", QJsonArray{8, 16}},
                           {"data", QJsonObject{{"dataset", "fashion-mnist"}, {"limit", 3000}}},
                           {"checkpoint_every", 25},
                           {"epochs", 2},
                           {"batch_size", 64},
                           {"seed", 9},
                           {"optimizer", QJsonObject{{"type", "adamw"}, {"lr", 0.002}, {"weight_decay", 0.01}}},
                           {"schedule", QJsonObject{{"decay", "cosine"}, {"warmup", 100}}}};
    const QJsonObject loaded{{"name", "cnn run"}, {"builtin", spec}, {"env", QJsonObject{{"OMP_NUM_THREADS", "1"}}}};
    JobForm form = job_form_from_request(loaded);
    EXPECT_EQ(form.kind, JobForm::Kind::builtin);
    EXPECT_EQ(form.model, "cnn");
    EXPECT_EQ(form.optimizer, "adamw");
    EXPECT_EQ(form.learning_rate, 0.002);
    EXPECT_TRUE(form.cosine);
    EXPECT_EQ(form.epochs, 2);
    QJsonObject out = job_form_request(form);
    EXPECT_EQ(out.value("env").toObject(), (QJsonObject{{"OMP_NUM_THREADS", "1"}}));
    QJsonObject built = out.value("builtin").toObject();
    EXPECT_EQ(built.value("conv").toArray(), (QJsonArray{8, 16}));
    EXPECT_EQ(built.value("data").toObject(), (QJsonObject{{"dataset", "fashion-mnist"}, {"limit", 3000}}));
    EXPECT_EQ(built.value("checkpoint_every").toInt(), 25);
    EXPECT_EQ(built.value("optimizer").toObject().value("weight_decay").toDouble(), 0.01);
    EXPECT_EQ(built.value("schedule").toObject().value("warmup").toInt(), 100);

    // Another model drops the old model's own keys.
    form.model = "mlp";
    built = job_form_request(form).value("builtin").toObject();
    EXPECT_FALSE(built.contains("conv"));
    EXPECT_EQ(built.value("model").toString(), "mlp");
}

TEST(JobForm, LoadingKeepsTheFieldsOfTheOtherKind) {
    JobForm before = command("python3 old.py");
    before.working_folder = "/srv";
    before.epochs = 11;
    const JobForm builtin = job_form_from_request(QJsonObject{{"builtin", QJsonObject{{"model", "nonsense"}}}}, before);
    EXPECT_EQ(builtin.kind, JobForm::Kind::builtin);
    EXPECT_EQ(builtin.command_line, "python3 old.py"); // left as it was
    EXPECT_EQ(builtin.working_folder, "/srv");
    EXPECT_EQ(builtin.model, "mlp"); // unknown model: the MLP
    EXPECT_EQ(builtin.epochs, 5);    // missing: the form's default
    EXPECT_EQ(builtin.learning_rate, 0.05);
    EXPECT_FALSE(builtin.cosine); // no schedule: constant
    EXPECT_EQ(builtin.cpus, 2);
    EXPECT_EQ(builtin.max_restarts, 2);

    JobForm unknown_optimizer = before;
    unknown_optimizer.optimizer = "adamw";
    EXPECT_EQ(job_form_from_request(QJsonObject{{"builtin", QJsonObject{{"optimizer", QJsonObject{{"type", "lion"}}}}}},
                                    unknown_optimizer)
                  .optimizer,
              "adamw");

    JobForm csv;
    csv.data = "csv";
    csv.train_csv = "/data/train.csv";
    const JobForm command_loaded = job_form_from_request(QJsonObject{{"argv", QJsonArray{"true"}}}, csv);
    EXPECT_EQ(command_loaded.kind, JobForm::Kind::command);
    EXPECT_EQ(command_loaded.train_csv, "/data/train.csv");
    EXPECT_EQ(command_loaded.command_line, "true");
}

TEST(JobForm, SwitchingACommandToTheTrainerDropsTheCommandKeys) {
    JobForm form = job_form_from_request(QJsonObject{{"argv", QJsonArray{"run"}}, {"shell", true}, {"cwd", "/srv"}});
    form.kind = JobForm::Kind::builtin;
    const QJsonObject request = job_form_request(form);
    EXPECT_FALSE(request.contains("argv"));
    EXPECT_FALSE(request.contains("shell"));
    EXPECT_FALSE(request.contains("cwd"));
    EXPECT_TRUE(request.contains("builtin"));
}

TEST(CommandLine, SplitsAsAShellWouldWithoutRunningOne) {
    QStringList words;
    EXPECT_TRUE(split_command_line(R"(/usr/bin/python3 "my train.py" --tag 'a b' x\ y)", words));
    EXPECT_EQ(words, QStringList({"/usr/bin/python3", "my train.py", "--tag", "a b", "x y"}));
    EXPECT_TRUE(split_command_line(R"(say "she said \"hi\"" 'no \escape' "")", words));
    EXPECT_EQ(words, QStringList({"say", R"(she said "hi")", R"(no \escape)", ""}));
    EXPECT_TRUE(split_command_line("  \t ", words));
    EXPECT_TRUE(words.isEmpty());
    EXPECT_FALSE(split_command_line("echo \"unterminated", words));
    EXPECT_FALSE(split_command_line("echo 'unterminated", words));
}

TEST(CommandLine, JoinedWordsSplitBack) {
    const QStringList words{"/usr/bin/python3", "my train.py", "", R"(say "hi" there)"};
    const QString line = join_command_line(words);
    EXPECT_EQ(line, R"(/usr/bin/python3 "my train.py" "" "say \"hi\" there")");
    QStringList back;
    EXPECT_TRUE(split_command_line(line, back));
    EXPECT_EQ(back, words);
}

TEST(JobForm, AnImageFolderWithAugmentationMakesTheTrainersSpecAndRoundTrips) {
    QTemporaryDir dir;
    ASSERT_TRUE(dir.isValid());
    JobForm form;
    form.model = "cnn";
    form.data = "images";
    form.train_folder = dir.filePath("photos/train");
    EXPECT_EQ(job_form_problem(form), "Choose a training folder that exists (one folder of images per class).");
    ASSERT_TRUE(QDir().mkpath(dir.filePath("photos/train/cats")));
    form.test_folder = dir.filePath("photos/test");
    EXPECT_EQ(job_form_problem(form), QString("The test folder %1 does not exist.").arg(form.test_folder));
    ASSERT_TRUE(QDir().mkpath(form.test_folder));
    EXPECT_EQ(job_form_problem(form), QString());
    form.image_size = 64;
    form.channels = 3;
    form.resize = "crop";
    form.crop_padding = 4;
    form.hflip = true;
    form.rotate = 10;
    form.jitter = 0.2;
    EXPECT_EQ(job_form_name(form), "CNN on train");
    const QJsonObject data = job_form_request(form).value("builtin").toObject().value("data").toObject();
    EXPECT_EQ(data, (QJsonObject{{"format", "image_folder"},
                                 {"train_dir", form.train_folder},
                                 {"test_dir", form.test_folder},
                                 {"image_size", 64},
                                 {"channels", 3},
                                 {"resize", "crop"},
                                 {"augment", QJsonObject{{"crop_padding", 4},
                                                         {"hflip", true},
                                                         {"rotate", 10},
                                                         {"brightness", 0.2},
                                                         {"contrast", 0.2}}}}));

    // Loaded back (clone and edit), the form is the same; the request made from it too.
    const JobForm again = job_form_from_request(job_form_request(form));
    EXPECT_EQ(again.data, "images");
    EXPECT_EQ(again.train_folder, form.train_folder);
    EXPECT_EQ(again.test_folder, form.test_folder);
    EXPECT_EQ(again.image_size, 64);
    EXPECT_EQ(again.channels, 3);
    EXPECT_EQ(again.resize, "crop");
    EXPECT_EQ(again.crop_padding, 4);
    EXPECT_TRUE(again.hflip);
    EXPECT_EQ(again.rotate, 10);
    EXPECT_DOUBLE_EQ(again.jitter, 0.2);
    EXPECT_EQ(job_form_request(again), job_form_request(form));

    // Inside a dataset version the folders are relative to it; no folder: the version's folder itself. Nothing is
    // looked for on this machine.
    JobForm versioned;
    versioned.data = "images";
    versioned.dataset_version = "9c1e";
    EXPECT_EQ(job_form_problem(versioned), QString());
    EXPECT_EQ(job_form_request(versioned).value("builtin").toObject().value("data").toObject().value("train_dir"), ".");
    EXPECT_EQ(job_form_from_request(job_form_request(versioned)).train_folder, QString());

    // Back to Fashion-MNIST: the folder's keys go, the augmentation stays (Fashion-MNIST is images); to CSV: it goes.
    form.data = "fashion-mnist";
    const QJsonObject fashion = job_form_request(form).value("builtin").toObject().value("data").toObject();
    EXPECT_EQ(fashion.value("dataset"), "fashion-mnist");
    EXPECT_FALSE(fashion.contains("train_dir"));
    EXPECT_FALSE(fashion.contains("image_size"));
    EXPECT_TRUE(fashion.value("augment").toObject().value("hflip").toBool());
    form.data = "csv";
    form.train_csv = dir.filePath("t.csv");
    EXPECT_FALSE(job_form_request(form).value("builtin").toObject().value("data").toObject().contains("augment"));

    // What the form shows in one field stays as loaded while the field is not changed: a [height, width] size,
    // brightness and contrast of their own, a transform the form does not show (translate).
    const QJsonObject loaded_data{{"format", "image_folder"},
                                  {"train_dir", dir.filePath("photos/train")},
                                  {"image_size", QJsonArray{48, 64}},
                                  {"resize", "pad"},
                                  {"augment", QJsonObject{{"brightness", 0.2}, {"contrast", 0.4}, {"translate", 0.1}}}};
    const QJsonObject loaded{{"builtin", QJsonObject{{"model", "cnn"}, {"data", loaded_data}}}};
    JobForm edited = job_form_from_request(loaded);
    EXPECT_EQ(job_form_request(edited).value("builtin").toObject().value("data").toObject(), loaded_data);
    edited.image_size = 32;
    edited.jitter = 0.3;
    const QJsonObject changed = job_form_request(edited).value("builtin").toObject().value("data").toObject();
    EXPECT_EQ(changed.value("image_size"), 32);
    EXPECT_EQ(changed.value("augment").toObject(),
              (QJsonObject{{"brightness", 0.3}, {"contrast", 0.3}, {"translate", 0.1}}));
    // Switched to CSV, a loaded request's transforms all go (the trainer refuses augmenting a table).
    edited.data = "csv";
    edited.train_csv = dir.filePath("t.csv");
    EXPECT_FALSE(job_form_request(edited).value("builtin").toObject().value("data").toObject().contains("augment"));
}

TEST(JobForm, TheModelBuilderAndEveryTrainingOptionGoIntoTheSpecAndRoundTrip) {
    JobForm form;
    form.layers = QJsonArray{QJsonObject{{"type", "conv2d"}, {"out", 8}, {"kernel", 3}, {"padding", 1}},
                             QJsonObject{{"type", "batchnorm"}},
                             QJsonObject{{"type", "relu"}},
                             QJsonObject{{"type", "conv2d"}, {"out", 8}, {"kernel", 3}, {"padding", 1}},
                             QJsonObject{{"type", "add"}, {"from", 3}},
                             QJsonObject{{"type", "global_avgpool"}},
                             QJsonObject{{"type", "flatten"}}};
    form.optimizer = "adamw";
    form.learning_rate = 0.002;
    form.weight_decay = 0.05;
    form.warmup_steps = 100;
    form.grad_accum = 4;
    form.label_smoothing = 0.1;
    form.device = "cpu";
    form.precision = "bf16";
    form.checkpoint_every = 50;
    form.keep_checkpoints = 5;
    form.early_stopping = true;
    form.early_stopping_metric = "val_accuracy";
    form.patience = 2;
    EXPECT_EQ(job_form_problem(form), QString());
    EXPECT_EQ(job_form_name(form), "Custom model on Fashion-MNIST");
    const QJsonObject request = job_form_request(form);
    const QJsonObject spec = request.value("builtin").toObject();
    EXPECT_FALSE(spec.contains("model")) << "the builder's layers replace the preset";
    EXPECT_EQ(spec.value("layers").toArray(), form.layers);
    EXPECT_EQ(spec.value("optimizer").toObject(),
              (QJsonObject{{"type", "adamw"}, {"lr", 0.002}, {"weight_decay", 0.05}}));
    EXPECT_EQ(spec.value("schedule").toObject(), (QJsonObject{{"decay", "cosine"}, {"warmup_steps", 100}}));
    EXPECT_EQ(spec.value("grad_accum").toInt(), 4);
    EXPECT_EQ(spec.value("label_smoothing").toDouble(), 0.1);
    EXPECT_EQ(spec.value("device").toString(), "cpu");
    EXPECT_EQ(spec.value("precision").toString(), "bf16");
    EXPECT_EQ(spec.value("checkpoint_every").toInt(), 50);
    EXPECT_EQ(spec.value("keep_checkpoints").toInt(), 5);
    EXPECT_EQ(spec.value("early_stopping").toObject(), (QJsonObject{{"metric", "val_accuracy"}, {"patience", 2}}));

    // Loaded back (clone and edit), the form is the same form: the same request again.
    const JobForm again = job_form_from_request(request);
    EXPECT_EQ(again.layers, form.layers);
    EXPECT_EQ(again.patience, 2);
    EXPECT_EQ(again.weight_decay, 0.05);
    EXPECT_EQ(job_form_request(again), request);

    // Back to a preset: the layers go, the preset comes.
    JobForm preset = again;
    preset.name.clear(); // loaded, the name is the request's; cleared, it is made from the model again
    preset.layers = {};
    preset.model = "resnet";
    const QJsonObject resnet = job_form_request(preset).value("builtin").toObject();
    EXPECT_FALSE(resnet.contains("layers"));
    EXPECT_EQ(resnet.value("model").toString(), "resnet");
    EXPECT_EQ(job_form_name(preset), "ResNet on Fashion-MNIST");
}

TEST(JobForm, DefaultsAreNotWrittenButALoadedValueIsKept) {
    JobForm form;
    form.optimizer = "adamw"; // the optimiser's own weight decay, not the form's idea of it
    const QJsonObject spec = job_form_request(form).value("builtin").toObject();
    for (const char* key : {"grad_accum", "label_smoothing", "device", "precision", "checkpoint_every",
                            "keep_checkpoints", "early_stopping", "layers"})
        EXPECT_FALSE(spec.contains(key)) << key;
    EXPECT_FALSE(spec.value("optimizer").toObject().contains("weight_decay"));
    EXPECT_FALSE(spec.value("schedule").toObject().contains("warmup_steps"));

    // A loaded request that says a default keeps saying it (its hash, and what its author wrote, stay as they were).
    QJsonObject loaded_spec = spec;
    loaded_spec["label_smoothing"] = 0;
    loaded_spec["keep_checkpoints"] = 3;
    loaded_spec["device"] = "auto";
    const QJsonObject again =
        job_form_request(job_form_from_request(QJsonObject{{"builtin", loaded_spec}})).value("builtin").toObject();
    EXPECT_EQ(again.value("label_smoothing"), QJsonValue(0.0));
    EXPECT_EQ(again.value("keep_checkpoints"), QJsonValue(3));
    EXPECT_EQ(again.value("device"), QJsonValue("auto"));

    // The builder emptied: not a preset, and said.
    JobForm empty;
    empty.model = "custom";
    EXPECT_EQ(job_form_problem(empty), "Add at least one layer to the model, or choose a preset.");
}

TEST(JobForm, ACsvSaysWhatToDoWithMissingCells) {
    QTemporaryDir dir;
    JobForm form;
    form.data = "csv";
    form.train_csv = touch(dir, "train.csv");
    EXPECT_FALSE(job_form_request(form).value("builtin").toObject().value("data").toObject().contains("missing"));
    form.missing = "fill";
    const QJsonObject request = job_form_request(form);
    EXPECT_EQ(request.value("builtin").toObject().value("data").toObject().value("missing").toString(), "fill");
    EXPECT_EQ(job_form_from_request(request).missing, "fill");
    form.data = "fashion-mnist"; // not a table: the key goes
    EXPECT_FALSE(job_form_request(form).value("builtin").toObject().value("data").toObject().contains("missing"));
}

TEST(JobForm, AnImpossibleLayerListIsRefusedNamingTheLayer) {
    JobForm form;
    form.layers = QJsonArray{QJsonObject{{"type", "flatten"}}, QJsonObject{{"type", "conv2d"}, {"out", 4}}};
    EXPECT_TRUE(job_form_problem(form).contains("layers[1] (conv2d): convolution needs image input"))
        << job_form_problem(form).toStdString();
    form.layers = QJsonArray{QJsonObject{{"type", "add"}}};
    EXPECT_TRUE(job_form_problem(form).contains("needs \"from\"")) << job_form_problem(form).toStdString();
}

TEST(JobForm, TheJsonViewRoundTripsAndSaysWhatIsWrong) {
    JobForm form;
    form.model = "cnn";
    form.label_smoothing = 0.2;
    form.early_stopping = true;
    const QString text = job_form_spec_text(form);
    EXPECT_TRUE(text.contains("\"label_smoothing\": 0.2")) << text.toStdString();
    JobForm back;
    QString problem;
    ASSERT_TRUE(job_form_from_spec_text(text, form, &back, &problem)) << problem.toStdString();
    EXPECT_EQ(job_form_request(back), job_form_request(form)) << "unchanged JSON is the same form";

    // An edit in the JSON reaches the form's fields; a key the form has no field for is kept.
    QJsonObject edited = QJsonDocument::fromJson(text.toUtf8()).object();
    edited["epochs"] = 12;
    edited["log_every"] = 7;
    QJsonObject early = edited.value("early_stopping").toObject();
    early["min_delta"] = 0.01;
    edited["early_stopping"] = early;
    ASSERT_TRUE(job_form_from_spec_text(QString::fromUtf8(QJsonDocument(edited).toJson()), form, &back, &problem))
        << problem.toStdString();
    EXPECT_EQ(back.epochs, 12);
    const QJsonObject spec = job_form_request(back).value("builtin").toObject();
    EXPECT_EQ(spec.value("log_every").toInt(), 7);
    EXPECT_EQ(spec.value("early_stopping").toObject().value("min_delta").toDouble(), 0.01);

    EXPECT_FALSE(job_form_from_spec_text("{\"epochs\": ", form, &back, &problem));
    EXPECT_TRUE(problem.startsWith("Not JSON at character")) << problem.toStdString();
    EXPECT_FALSE(job_form_from_spec_text("[1]", form, &back, &problem));
    EXPECT_EQ(problem, "The spec must be a JSON object.");
    EXPECT_FALSE(job_form_from_spec_text("{\"epochs\": 0}", form, &back, &problem));
    EXPECT_TRUE(problem.contains("\"epochs\" must be positive")) << problem.toStdString();
}
