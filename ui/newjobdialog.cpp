#include "newjobdialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QJsonArray>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QTabWidget>
#include <QVBoxLayout>

namespace traindeck {

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

NewJobDialog::NewJobDialog(QWidget* parent) : QDialog(parent) {
    setWindowTitle(tr("New job"));
    name_ = new QLineEdit;
    name_->setPlaceholderText(tr("shown in the jobs table"));

    auto* builtin = new QWidget;
    auto* builtin_form = new QFormLayout(builtin);
    model_ = new QComboBox;
    model_->addItem(tr("MLP 784-256-128-10"), "mlp");
    model_->addItem(tr("CNN conv32-conv64-fc128"), "cnn");
    dataset_ = new QComboBox;
    dataset_->addItem(tr("Fashion-MNIST (Debian dataset-fashion-mnist)"), "fashion-mnist");
    dataset_->addItem(tr("CSV file (numeric columns + label)"), "csv");
    train_file_ = new QLineEdit;
    train_file_->setPlaceholderText(tr("/path/to/train.csv"));
    test_file_ = new QLineEdit;
    test_file_->setPlaceholderText(tr("optional /path/to/test.csv"));
    epochs_ = new QSpinBox;
    epochs_->setRange(1, 10000);
    epochs_->setValue(5);
    batch_ = new QSpinBox;
    batch_->setRange(1, 65536);
    batch_->setValue(128);
    optimizer_ = new QComboBox;
    optimizer_->addItems({"sgd", "adamw"});
    lr_ = new QDoubleSpinBox;
    lr_->setDecimals(5);
    lr_->setRange(0.00001, 10);
    lr_->setSingleStep(0.01);
    lr_->setValue(0.05);
    cosine_ = new QCheckBox(tr("cosine decay"));
    cosine_->setChecked(true);
    seed_ = new QSpinBox;
    seed_->setRange(0, 1 << 30);
    seed_->setValue(42);
    builtin_form->addRow(tr("Model"), model_);
    builtin_form->addRow(tr("Data"), dataset_);
    builtin_form->addRow(tr("Training file"), train_file_);
    builtin_form->addRow(tr("Test file"), test_file_);
    builtin_form->addRow(tr("Epochs"), epochs_);
    builtin_form->addRow(tr("Batch size"), batch_);
    builtin_form->addRow(tr("Optimizer"), optimizer_);
    builtin_form->addRow(tr("Learning rate"), lr_);
    builtin_form->addRow(QString(), cosine_);
    builtin_form->addRow(tr("Seed"), seed_);

    auto* command = new QWidget;
    auto* command_form = new QFormLayout(command);
    argv_ = new QLineEdit;
    argv_->setPlaceholderText(tr("/usr/bin/python3 train.py --epochs 3"));
    cwd_ = new QLineEdit;
    cwd_->setPlaceholderText(tr("working folder (default: the job's folder)"));
    env_ = new QPlainTextEdit;
    env_->setPlaceholderText(tr("KEY=VALUE, one a line"));
    env_->setMaximumHeight(80);
    shell_ = new QCheckBox(tr("run through /bin/sh -c (only if you need pipes or globbing)"));
    command_form->addRow(tr("Command"), argv_);
    command_form->addRow(tr("Working folder"), cwd_);
    command_form->addRow(tr("Environment"), env_);
    command_form->addRow(QString(), shell_);

    kind_ = new QTabWidget;
    kind_->addTab(builtin, tr("Built-in trainer"));
    kind_->addTab(command, tr("Command"));

    backend_ = new QComboBox;
    backend_->addItem(QStringLiteral("local"));
    dataset_version_ = new QComboBox;
    dataset_version_->addItem(tr("none (paths as given)"), QString());
    auto* policy = new QFormLayout;
    policy->addRow(tr("Run on"), backend_);
    policy->addRow(tr("Dataset version"), dataset_version_);
    migrate_ = new QCheckBox(tr("if its worker is lost, continue on another one from the last checkpoint"));
    cpus_ = new QSpinBox;
    cpus_->setRange(1, 1024);
    cpus_->setValue(2);
    gpus_ = new QSpinBox;
    gpus_->setRange(0, 64);
    memory_ = new QSpinBox;
    memory_->setRange(0, 4 << 20);
    memory_->setSuffix(tr(" MB"));
    memory_->setSpecialValueText(tr("no limit"));
    priority_ = new QSpinBox;
    priority_->setRange(-100, 100);
    budget_ = new QDoubleSpinBox;
    budget_->setRange(0, 1e6);
    budget_->setPrefix("$");
    budget_->setSpecialValueText(tr("no cap"));
    restarts_ = new QSpinBox;
    restarts_->setRange(0, 100);
    restarts_->setValue(2);
    policy->addRow(tr("Name"), name_);
    policy->addRow(tr("CPUs"), cpus_);
    policy->addRow(tr("GPUs"), gpus_);
    policy->addRow(tr("Memory"), memory_);
    policy->addRow(tr("Priority"), priority_);
    policy->addRow(tr("Budget (hard cap)"), budget_);
    policy->addRow(tr("Restarts on failure"), restarts_);
    policy->addRow(tr("Lost worker"), migrate_);

    problem_ = new QLabel;
    problem_->setStyleSheet("color: #b3261e");
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    submit_ = buttons->button(QDialogButtonBox::Ok);
    submit_->setText(tr("Submit"));
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(kind_);
    layout->addLayout(policy);
    layout->addWidget(problem_);
    layout->addWidget(buttons);

    for (QLineEdit* edit : {argv_, train_file_, test_file_, cwd_, name_})
        connect(edit, &QLineEdit::textChanged, this, &NewJobDialog::validate);
    connect(env_, &QPlainTextEdit::textChanged, this, &NewJobDialog::validate);
    connect(kind_, &QTabWidget::currentChanged, this, &NewJobDialog::validate);
    connect(dataset_, &QComboBox::currentIndexChanged, this, [this] {
        const bool csv = dataset_->currentData() == "csv";
        train_file_->setEnabled(csv);
        test_file_->setEnabled(csv);
        validate();
    });
    connect(optimizer_, &QComboBox::currentTextChanged, this, [this](const QString& type) {
        lr_->setValue(type == "adamw" ? 0.001 : 0.05);
    });
    train_file_->setEnabled(false);
    test_file_->setEnabled(false);
    validate();
}

void NewJobDialog::setBackends(const QStringList& names, const QString& current) {
    backend_->clear();
    backend_->addItems(names);
    if (!current.isEmpty() && names.contains(current))
        backend_->setCurrentText(current);
}

QString NewJobDialog::backendName() const { return backend_->currentText(); }

void NewJobDialog::setDatasets(const QList<QPair<QString, QString>>& versions) {
    const QString current = dataset_version_->currentData().toString();
    dataset_version_->clear();
    dataset_version_->addItem(tr("none (paths as given)"), QString());
    for (const auto& [label, version] : versions)
        dataset_version_->addItem(label, version);
    const QString wanted = current.isEmpty() ? loaded_.value("dataset").toString() : current;
    if (const int index = dataset_version_->findData(wanted); index >= 0)
        dataset_version_->setCurrentIndex(index);
}

QString NewJobDialog::jobName() const {
    if (!name_->text().trimmed().isEmpty())
        return name_->text().trimmed();
    if (kind_->currentIndex() == 1)
        return argv_->text().section(' ', 0, 0);
    return QStringLiteral("%1 on %2").arg(model_->currentData().toString().toUpper(), dataset_->currentText().section(' ', 0, 0));
}

QString NewJobDialog::problem() const {
    if (kind_->currentIndex() == 1) {
        QStringList words;
        if (!split_command_line(argv_->text(), words))
            return tr("The command has an unterminated quote.");
        if (words.isEmpty())
            return tr("Give the command to run.");
        if (!cwd_->text().isEmpty() && !QFileInfo(cwd_->text()).isDir())
            return tr("The working folder %1 does not exist.").arg(cwd_->text());
        for (const QString& line : env_->toPlainText().split('\n', Qt::SkipEmptyParts))
            if (!line.contains('=') || line.startsWith('='))
                return tr("Environment line “%1” is not KEY=VALUE.").arg(line);
    } else if (dataset_->currentData() == "csv") {
        if (!QFileInfo(train_file_->text()).isFile())
            return tr("Choose a training CSV file that exists.");
        if (!test_file_->text().isEmpty() && !QFileInfo(test_file_->text()).isFile())
            return tr("The test file %1 does not exist.").arg(test_file_->text());
    }
    return {};
}

void NewJobDialog::validate() {
    const QString why = problem();
    problem_->setText(why);
    if (submit_)
        submit_->setEnabled(why.isEmpty());
}

QJsonObject NewJobDialog::request() const {
    QJsonObject request = loaded_;
    request["name"] = jobName();
    request["resources"] = QJsonObject{{"cpus", cpus_->value()}, {"gpus", gpus_->value()}, {"memory_mb", memory_->value()}};
    request["priority"] = priority_->value();
    request["budget"] = budget_->value();
    request["max_restarts"] = restarts_->value();
    QJsonObject console = request.value("console").toObject();
    console["migrate"] = migrate_->isChecked();
    request["console"] = console;
    const QString version = dataset_version_->currentData().toString();
    if (version.isEmpty())
        request.remove("dataset");
    else
        request["dataset"] = version;
    if (kind_->currentIndex() == 1) {
        request.remove("builtin");
        QStringList words;
        split_command_line(argv_->text(), words);
        if (shell_->isChecked())
            words = QStringList{argv_->text()};
        request["argv"] = QJsonArray::fromStringList(words);
        request["shell"] = shell_->isChecked();
        if (!cwd_->text().isEmpty())
            request["cwd"] = cwd_->text();
        QJsonObject env;
        for (const QString& line : env_->toPlainText().split('\n', Qt::SkipEmptyParts))
            env[line.section('=', 0, 0).trimmed()] = line.section('=', 1);
        request["env"] = env;
        return request;
    }
    request.remove("argv");
    request.remove("shell");
    request.remove("cwd");
    // A built-in job's env (a loaded request's, which the form does not show) goes with it, as every other field
    // the form does not show does on clone-and-edit.
    QJsonObject spec = loaded_.value("builtin").toObject();
    QJsonObject data = spec.value("data").toObject();
    if (dataset_->currentData() == "csv") {
        data.remove("dataset");
        data["format"] = "csv";
        data["train_csv"] = train_file_->text();
        if (!test_file_->text().isEmpty())
            data["test_csv"] = test_file_->text();
        else
            data.remove("test_csv");
    } else {
        for (const char* key : {"format", "train_csv", "test_csv", "label_column", "train_images", "train_labels",
                                "test_images", "test_labels", "dataset"})
            data.remove(key);
        if (version.isEmpty()) {
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
    // A different model than the one loaded drops the old model's own keys.
    if (spec.value("model").toString() != model_->currentData().toString())
        for (const char* key : {"hidden", "conv", "fc", "kernel", "layers"})
            spec.remove(key);
    QJsonObject optimizer = spec.value("optimizer").toObject();
    optimizer["type"] = optimizer_->currentText();
    optimizer["lr"] = lr_->value();
    QJsonObject schedule = spec.value("schedule").toObject();
    schedule["decay"] = cosine_->isChecked() ? "cosine" : "constant";
    spec["name"] = jobName();
    if (!spec.contains("layers"))
        spec["model"] = model_->currentData().toString();
    spec["data"] = data;
    spec["epochs"] = epochs_->value();
    spec["batch_size"] = batch_->value();
    spec["seed"] = seed_->value();
    spec["optimizer"] = optimizer;
    spec["schedule"] = schedule;
    request["builtin"] = spec;
    return request;
}

void NewJobDialog::load(const QJsonObject& request) {
    loaded_ = request;
    name_->setText(request.value("name").toString());
    const QJsonObject resources = request.value("resources").toObject();
    cpus_->setValue(resources.value("cpus").toInt(2));
    gpus_->setValue(resources.value("gpus").toInt(0));
    memory_->setValue(resources.value("memory_mb").toInt(0));
    priority_->setValue(request.value("priority").toInt());
    budget_->setValue(request.value("budget").toDouble());
    restarts_->setValue(request.value("max_restarts").toInt(2));
    migrate_->setChecked(request.value("console").toObject().value("migrate").toBool());
    if (request.contains("argv")) {
        kind_->setCurrentIndex(1);
        QStringList words;
        for (const auto& word : request.value("argv").toArray()) {
            QString w = word.toString();
            words << (w.contains(' ') || w.isEmpty() ? '"' + w.replace('"', "\\\"") + '"' : w);
        }
        argv_->setText(words.join(' '));
        cwd_->setText(request.value("cwd").toString());
        shell_->setChecked(request.value("shell").toBool());
        QStringList env;
        const QJsonObject e = request.value("env").toObject();
        for (auto it = e.begin(); it != e.end(); ++it)
            env << it.key() + "=" + it.value().toString();
        env_->setPlainText(env.join('\n'));
        return;
    }
    kind_->setCurrentIndex(0);
    const QJsonObject spec = request.value("builtin").toObject();
    model_->setCurrentIndex(std::max(0, model_->findData(spec.value("model").toString("mlp"))));
    const QJsonObject data = spec.value("data").toObject();
    if (const int index = dataset_version_->findData(request.value("dataset").toString()); index >= 0)
        dataset_version_->setCurrentIndex(index);
    if (data.value("format").toString() == "csv") {
        dataset_->setCurrentIndex(1);
        train_file_->setText(data.value("train_csv").toString());
        test_file_->setText(data.value("test_csv").toString());
    }
    epochs_->setValue(spec.value("epochs").toInt(5));
    batch_->setValue(spec.value("batch_size").toInt(128));
    const QJsonObject optimizer = spec.value("optimizer").toObject();
    optimizer_->setCurrentText(optimizer.value("type").toString("sgd"));
    lr_->setValue(optimizer.value("lr").toDouble(0.05));
    cosine_->setChecked(spec.value("schedule").toObject().value("decay").toString() == "cosine");
    seed_->setValue(spec.value("seed").toInt(42));
}

} // namespace traindeck
