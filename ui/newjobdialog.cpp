// NewJobDialog (newjobdialog.h): the widgets, and a JobForm copied from them and back.
#include "newjobdialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QTabWidget>
#include <QVBoxLayout>

#include <algorithm>

namespace traindeck {

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
    dataset_->addItem(tr("Image folder (one folder of PNG/JPEG images per class)"), "images");
    train_file_ = new QLineEdit;
    train_file_->setPlaceholderText(tr("/path/to/train.csv"));
    test_file_ = new QLineEdit;
    test_file_->setPlaceholderText(tr("optional /path/to/test.csv"));
    image_size_ = new QSpinBox;
    image_size_->setRange(0, 4096);
    image_size_->setSuffix(tr(" px"));
    image_size_->setSpecialValueText(tr("the first image's size"));
    image_size_->setToolTip(tr("Every image is brought to this square size (its aspect kept)"));
    channels_ = new QComboBox;
    channels_->addItem(tr("from the images"), 0);
    channels_->addItem(tr("grayscale"), 1);
    channels_->addItem(tr("RGB"), 3);
    resize_ = new QComboBox;
    resize_->addItem(tr("pad (the whole image, on black)"), "pad");
    resize_->addItem(tr("centre crop"), "crop");

    augment_ = new QGroupBox(tr("Augmentation (images; training samples only, reproducible from the seed)"));
    auto* augment_form = new QFormLayout(augment_);
    crop_padding_ = new QSpinBox;
    crop_padding_->setRange(0, 64);
    crop_padding_->setSuffix(tr(" px"));
    crop_padding_->setSpecialValueText(tr("off"));
    crop_padding_->setToolTip(tr("Random crop of the image padded by this many pixels on each side"));
    hflip_ = new QCheckBox(tr("mirror left-right at random"));
    rotate_ = new QDoubleSpinBox;
    rotate_->setRange(0, 180);
    rotate_->setSuffix(tr("°"));
    rotate_->setSpecialValueText(tr("off"));
    rotate_->setToolTip(tr("Rotation by up to ± this many degrees"));
    jitter_ = new QDoubleSpinBox;
    jitter_->setRange(0, 0.9);
    jitter_->setSingleStep(0.05);
    jitter_->setSpecialValueText(tr("off"));
    jitter_->setToolTip(tr("Brightness and contrast scaled by a factor in [1 - x, 1 + x]"));
    augment_form->addRow(tr("Random crop, padding"), crop_padding_);
    augment_form->addRow(tr("Flip"), hflip_);
    augment_form->addRow(tr("Rotation"), rotate_);
    augment_form->addRow(tr("Brightness/contrast"), jitter_);
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
    builtin_form->addRow(tr("Training data"), train_file_);
    builtin_form->addRow(tr("Test data"), test_file_);
    builtin_form->addRow(tr("Image size"), image_size_);
    builtin_form->addRow(tr("Channels"), channels_);
    builtin_form->addRow(tr("Other shapes"), resize_);
    builtin_form->addRow(augment_);
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
    connect(dataset_, &QComboBox::currentIndexChanged, this, &NewJobDialog::updateDataFields);
    connect(optimizer_, &QComboBox::currentTextChanged, this, [this](const QString& type) {
        lr_->setValue(type == "adamw" ? 0.001 : 0.05);
    });
    updateDataFields();
}

void NewJobDialog::updateDataFields() {
    const QString data = dataset_->currentData().toString();
    const bool files = data != "fashion-mnist", images = data == "images";
    train_file_->setEnabled(files);
    test_file_->setEnabled(files);
    train_file_->setPlaceholderText(images ? tr("/path/to/photos/train (one folder per class; with a dataset "
                                                "version: inside it, empty for all of it)")
                                           : tr("/path/to/train.csv"));
    test_file_->setPlaceholderText(images ? tr("optional /path/to/photos/test") : tr("optional /path/to/test.csv"));
    for (QWidget* field :
         {static_cast<QWidget*>(image_size_), static_cast<QWidget*>(channels_), static_cast<QWidget*>(resize_)})
        field->setEnabled(images);
    augment_->setEnabled(data != "csv");
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

void NewJobDialog::validate() {
    const QString why = problem();
    problem_->setText(why);
    if (submit_)
        submit_->setEnabled(why.isEmpty());
}

JobForm NewJobDialog::form() const {
    JobForm form;
    form.kind = kind_->currentIndex() == 1 ? JobForm::Kind::command : JobForm::Kind::builtin;
    form.name = name_->text();
    form.model = model_->currentData().toString();
    form.data = dataset_->currentData().toString();
    if (form.data == "images") {
        form.train_folder = train_file_->text();
        form.test_folder = test_file_->text();
    } else {
        form.train_csv = train_file_->text();
        form.test_csv = test_file_->text();
    }
    form.image_size = image_size_->value();
    form.channels = channels_->currentData().toInt();
    form.resize = resize_->currentData().toString();
    form.crop_padding = crop_padding_->value();
    form.hflip = hflip_->isChecked();
    form.rotate = rotate_->value();
    form.jitter = jitter_->value();
    form.epochs = epochs_->value();
    form.batch_size = batch_->value();
    form.optimizer = optimizer_->currentText();
    form.learning_rate = lr_->value();
    form.cosine = cosine_->isChecked();
    form.seed = seed_->value();
    form.command_line = argv_->text();
    form.shell = shell_->isChecked();
    form.working_folder = cwd_->text();
    form.environment = env_->toPlainText();
    form.dataset_version = dataset_version_->currentData().toString();
    form.cpus = cpus_->value();
    form.gpus = gpus_->value();
    form.memory_mb = memory_->value();
    form.priority = priority_->value();
    form.budget = budget_->value();
    form.max_restarts = restarts_->value();
    form.migrate = migrate_->isChecked();
    form.loaded = loaded_;
    return form;
}

void NewJobDialog::setForm(const JobForm& form) {
    loaded_ = form.loaded;
    name_->setText(form.name);
    cpus_->setValue(form.cpus);
    gpus_->setValue(form.gpus);
    memory_->setValue(form.memory_mb);
    priority_->setValue(form.priority);
    budget_->setValue(form.budget);
    restarts_->setValue(form.max_restarts);
    migrate_->setChecked(form.migrate);
    kind_->setCurrentIndex(form.kind == JobForm::Kind::command ? 1 : 0);
    argv_->setText(form.command_line);
    cwd_->setText(form.working_folder);
    shell_->setChecked(form.shell);
    if (env_->toPlainText() != form.environment)
        env_->setPlainText(form.environment);
    model_->setCurrentIndex(std::max(0, model_->findData(form.model)));
    // A version the list does not hold yet is chosen by setDatasets(), which looks at the loaded request.
    if (const int index = dataset_version_->findData(form.dataset_version); index >= 0)
        dataset_version_->setCurrentIndex(index);
    dataset_->setCurrentIndex(std::max(0, dataset_->findData(form.data)));
    train_file_->setText(form.data == "images" ? form.train_folder : form.train_csv);
    test_file_->setText(form.data == "images" ? form.test_folder : form.test_csv);
    image_size_->setValue(form.image_size);
    channels_->setCurrentIndex(std::max(0, channels_->findData(form.channels)));
    resize_->setCurrentIndex(std::max(0, resize_->findData(form.resize)));
    crop_padding_->setValue(form.crop_padding);
    hflip_->setChecked(form.hflip);
    rotate_->setValue(form.rotate);
    jitter_->setValue(form.jitter);
    epochs_->setValue(form.epochs);
    batch_->setValue(form.batch_size);
    // Before the learning rate: choosing an optimizer sets its usual rate.
    optimizer_->setCurrentText(form.optimizer);
    lr_->setValue(form.learning_rate);
    cosine_->setChecked(form.cosine);
    seed_->setValue(form.seed);
}

void NewJobDialog::load(const QJsonObject& request) { setForm(job_form_from_request(request, form())); }

} // namespace traindeck
