// NewJobDialog (newjobdialog.h): the widgets, and a JobForm copied from them and back.
#include "newjobdialog.h"

#include "background.h"
#include "layerlistmodel.h"
#include "money.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFontDatabase>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalBlocker>
#include <QMenu>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QStyledItemDelegate>
#include <QTabWidget>
#include <QTableView>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <utility>

namespace traindeck {

namespace {

// The builder's layer column: the layer types in a list, not a name to type.
class LayerTypeDelegate : public QStyledItemDelegate {
public:
    using QStyledItemDelegate::QStyledItemDelegate;
    QWidget* createEditor(QWidget* parent, const QStyleOptionViewItem&, const QModelIndex&) const override {
        auto* box = new QComboBox(parent);
        box->addItems(QString::fromStdString(engine::layer_type_names()).split(", "));
        return box;
    }
    void setEditorData(QWidget* editor, const QModelIndex& index) const override {
        static_cast<QComboBox*>(editor)->setCurrentText(index.data(Qt::EditRole).toString());
    }
    void setModelData(QWidget* editor, QAbstractItemModel* model, const QModelIndex& index) const override {
        model->setData(index, static_cast<QComboBox*>(editor)->currentText(), Qt::EditRole);
    }
};

} // namespace

NewJobDialog::NewJobDialog(QWidget* parent) : QDialog(parent) {
    setWindowTitle(tr("New job"));
    name_ = new QLineEdit;
    name_->setPlaceholderText(tr("shown in the jobs table"));

    builtin_tabs_ = new QTabWidget;
    builtin_tabs_->setObjectName("builtinPages");
    auto* data_page = new QWidget;
    auto* builtin_form = new QFormLayout(data_page);
    model_ = new QComboBox;
    model_->addItem(tr("MLP (hidden 256, 128)"), "mlp");
    model_->addItem(tr("CNN (conv 32, 64; fc 128)"), "cnn");
    model_->addItem(tr("ResNet (residual blocks with batchnorm; 32-64 px images)"), "resnet");
    model_->addItem(tr("Custom layers (edit the list below)"), "custom");
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
    missing_ = new QComboBox;
    missing_->addItem(tr("stop with an error naming the cell"), "error");
    missing_->addItem(tr("drop the row"), "drop");
    missing_->addItem(tr("fill (the column's mean, or its most frequent value)"), "fill");
    missing_->setToolTip(tr("Empty, NA, N/A, NaN, null or ? cells. Text columns are categories, one-hot over the "
                            "training file's values."));

    regression_ = new QCheckBox(tr("predict a number (regression)"));
    regression_->setToolTip(tr("The label column (the last) is a value to predict, not a class: one output, trained "
                               "on mean squared error; the results show R², RMSE, MAE and predicted against true."));

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
    builtin_form->addRow(tr("Data"), dataset_);
    builtin_form->addRow(tr("Training data"), train_file_);
    builtin_form->addRow(tr("Test data"), test_file_);
    builtin_form->addRow(tr("Image size"), image_size_);
    builtin_form->addRow(tr("Channels"), channels_);
    builtin_form->addRow(tr("Other shapes"), resize_);
    builtin_form->addRow(tr("Missing values"), missing_);
    builtin_form->addRow(tr("Label"), regression_);
    builtin_form->addRow(augment_);

    // The model: a preset, or the builder's list, with shapes and parameters as you type.
    auto* model_page = new QWidget;
    auto* model_layout = new QVBoxLayout(model_page);
    auto* preset_row = new QFormLayout;
    preset_row->addRow(tr("Model"), model_);
    model_layout->addLayout(preset_row);
    layers_ = new LayerListModel(this);
    layers_view_ = new QTableView;
    layers_view_->setObjectName("layers");
    layers_view_->setModel(layers_);
    layers_view_->setItemDelegateForColumn(LayerListModel::Type, new LayerTypeDelegate(layers_view_));
    layers_view_->setSelectionBehavior(QAbstractItemView::SelectRows);
    layers_view_->setSelectionMode(QAbstractItemView::SingleSelection);
    layers_view_->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed |
                                  QAbstractItemView::AnyKeyPressed);
    layers_view_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    layers_view_->horizontalHeader()->setStretchLastSection(true);
    layers_view_->verticalHeader()->setDefaultSectionSize(layers_view_->fontMetrics().height() + 8);
    layers_view_->setMinimumHeight(260);
    model_layout->addWidget(layers_view_);
    auto* layer_buttons = new QHBoxLayout;
    add_layer_ = new QToolButton;
    add_layer_->setText(tr("Add layer"));
    add_layer_->setPopupMode(QToolButton::InstantPopup);
    auto* add_menu = new QMenu(add_layer_);
    for (const QString& type : QString::fromStdString(engine::layer_type_names()).split(", "))
        add_menu->addAction(type, this, [this, type] {
            const QModelIndex current = layers_view_->currentIndex();
            const int row =
                current.isValid() ? current.row() + 1 : layers_->rowCount() - (layers_->plan().implied_head ? 1 : 0);
            layers_->insertLayer(row, *engine::layer_type_from(type.toStdString()));
            layers_view_->selectRow(row);
        });
    add_layer_->setMenu(add_menu);
    auto* remove_layer = new QPushButton(tr("Remove"));
    auto* up = new QPushButton(tr("Up"));
    auto* down = new QPushButton(tr("Down"));
    layer_buttons->addWidget(add_layer_);
    layer_buttons->addWidget(remove_layer);
    layer_buttons->addWidget(up);
    layer_buttons->addWidget(down);
    layer_buttons->addStretch();
    model_layout->addLayout(layer_buttons);
    model_summary_ = new QLabel;
    model_summary_->setWordWrap(true);
    model_layout->addWidget(model_summary_);
    auto selected_row = [this] {
        return layers_view_->currentIndex().isValid() ? layers_view_->currentIndex().row() : -1;
    };
    connect(remove_layer, &QPushButton::clicked, this, [this, selected_row] { layers_->removeLayer(selected_row()); });
    connect(up, &QPushButton::clicked, this, [this, selected_row] {
        const int row = selected_row();
        layers_->moveLayer(row, -1);
        layers_view_->selectRow(std::max(0, row - 1));
    });
    connect(down, &QPushButton::clicked, this, [this, selected_row] {
        const int row = selected_row();
        layers_->moveLayer(row, 1);
        layers_view_->selectRow(row + 1);
    });

    // Training: optimiser and schedule, precision and device, checkpoints and early stopping.
    epochs_ = new QSpinBox;
    epochs_->setRange(1, 10000);
    epochs_->setValue(5);
    batch_ = new QSpinBox;
    batch_->setRange(1, 65536);
    batch_->setValue(128);
    grad_accum_ = new QSpinBox;
    grad_accum_->setRange(1, 1024);
    grad_accum_->setToolTip(
        tr("Micro-batches summed into one optimiser step (default 1): a larger batch in the same memory"));
    optimizer_ = new QComboBox;
    optimizer_->addItems({"sgd", "adamw"});
    lr_ = new QDoubleSpinBox;
    lr_->setDecimals(5);
    lr_->setRange(0.00001, 10);
    lr_->setSingleStep(0.01);
    lr_->setValue(0.05);
    weight_decay_ = new QDoubleSpinBox;
    weight_decay_->setDecimals(7);
    weight_decay_->setRange(0, 1);
    weight_decay_->setSingleStep(0.0001);
    weight_decay_->setToolTip(tr("On weights, not on biases or batchnorm (default: 0 for SGD, 0.01 for AdamW)"));
    warmup_ = new QSpinBox;
    warmup_->setRange(0, 1 << 24);
    warmup_->setSuffix(tr(" steps"));
    warmup_->setSpecialValueText(tr("none"));
    cosine_ = new QCheckBox(tr("cosine decay"));
    cosine_->setChecked(true);
    label_smoothing_ = new QDoubleSpinBox;
    label_smoothing_->setDecimals(3);
    label_smoothing_->setRange(0, 0.99);
    label_smoothing_->setSingleStep(0.05);
    label_smoothing_->setSpecialValueText(tr("off"));
    seed_ = new QSpinBox;
    seed_->setRange(0, 1 << 30);
    seed_->setValue(42);
    device_ = new QComboBox;
    device_->addItem(tr("auto (a GPU when there is one)"), "auto");
    device_->addItem(tr("CPU"), "cpu");
    device_->addItem(tr("CUDA GPU"), "cuda");
    precision_ = new QComboBox;
    precision_->addItem(tr("fp32"), "fp32");
    precision_->addItem(tr("bf16 autocast (GPU; fp32 master weights)"), "bf16");
    checkpoint_every_ = new QSpinBox;
    checkpoint_every_->setRange(0, 1 << 24);
    checkpoint_every_->setSuffix(tr(" steps"));
    checkpoint_every_->setSpecialValueText(tr("at epoch ends"));
    keep_checkpoints_ = new QSpinBox;
    keep_checkpoints_->setRange(1, 1000);
    keep_checkpoints_->setValue(3);
    early_stopping_ = new QGroupBox(tr("Early stopping (keeps the best epoch; the test set and the export use it)"));
    early_stopping_->setCheckable(true);
    early_stopping_->setChecked(false);
    early_metric_ = new QComboBox;
    early_metric_->addItem(tr("validation loss"), "val_loss");
    early_metric_->addItem(tr("validation accuracy"), "val_accuracy");
    patience_ = new QSpinBox;
    patience_->setRange(0, 1000);
    patience_->setValue(3);
    patience_->setSuffix(tr(" epochs"));
    patience_->setSpecialValueText(tr("never stop, only keep the best"));
    auto* early_form = new QFormLayout(early_stopping_);
    early_form->addRow(tr("Watch"), early_metric_);
    early_form->addRow(tr("Patience"), patience_);

    auto* training_page = new QWidget;
    auto* training_layout = new QVBoxLayout(training_page);
    auto* schedule_box = new QGroupBox(tr("Optimiser and schedule"));
    auto* schedule_form = new QFormLayout(schedule_box);
    schedule_form->addRow(tr("Epochs"), epochs_);
    schedule_form->addRow(tr("Batch size"), batch_);
    schedule_form->addRow(tr("Gradient accumulation"), grad_accum_);
    schedule_form->addRow(tr("Optimizer"), optimizer_);
    schedule_form->addRow(tr("Learning rate"), lr_);
    schedule_form->addRow(tr("Weight decay"), weight_decay_);
    schedule_form->addRow(tr("Warm-up"), warmup_);
    schedule_form->addRow(QString(), cosine_);
    schedule_form->addRow(tr("Label smoothing"), label_smoothing_);
    schedule_form->addRow(tr("Seed"), seed_);
    auto* device_box = new QGroupBox(tr("Precision and device"));
    auto* device_form = new QFormLayout(device_box);
    device_form->addRow(tr("Device"), device_);
    device_form->addRow(tr("Precision"), precision_);
    auto* checkpoint_box = new QGroupBox(tr("Checkpoints"));
    auto* checkpoint_form = new QFormLayout(checkpoint_box);
    checkpoint_form->addRow(tr("Save every"), checkpoint_every_);
    checkpoint_form->addRow(tr("Keep the newest"), keep_checkpoints_);
    training_layout->addWidget(schedule_box);
    training_layout->addWidget(device_box);
    training_layout->addWidget(checkpoint_box);
    training_layout->addWidget(early_stopping_);
    training_layout->addStretch();

    // The whole spec as JSON: what the trainer gets, editable; it round-trips into the form.
    auto* json_page = new QWidget;
    auto* json_layout = new QVBoxLayout(json_page);
    spec_json_ = new QPlainTextEdit;
    spec_json_->setObjectName("specJson");
    spec_json_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    auto* apply_json = new QPushButton(tr("Apply to the form"));
    json_layout->addWidget(new QLabel(tr("The trainer's job spec. Edits come back to the form when you apply them "
                                         "or leave this page; keys the form has no field for are kept.")));
    json_layout->addWidget(spec_json_);
    json_layout->addWidget(apply_json, 0, Qt::AlignRight);
    connect(apply_json, &QPushButton::clicked, this, [this] { applySpecJson(); });
    // While the JSON page is edited, Submit says whether that text is a spec the trainer takes.
    connect(spec_json_, &QPlainTextEdit::textChanged, this, [this] {
        if (builtin_tabs_->currentIndex() != 3 || spec_json_->toPlainText() == shown_json_)
            return;
        QString why;
        job_form_from_spec_text(spec_json_->toPlainText(), form(), nullptr, &why);
        problem_->setText(why);
        if (submit_)
            submit_->setEnabled(why.isEmpty());
    });

    builtin_tabs_->addTab(data_page, tr("Data"));
    builtin_tabs_->addTab(model_page, tr("Model"));
    builtin_tabs_->addTab(training_page, tr("Training"));
    builtin_tabs_->addTab(json_page, tr("JSON"));
    auto* builtin = builtin_tabs_;

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
    budget_->setPrefix(currency_symbol(display_currency()));
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
    connect(dataset_version_, &QComboBox::currentIndexChanged, this, &NewJobDialog::validate);
    connect(dataset_version_, &QComboBox::currentIndexChanged, this, &NewJobDialog::updateModelInput);
    connect(train_file_, &QLineEdit::textChanged, this, &NewJobDialog::updateModelInput);
    connect(dataset_, &QComboBox::currentIndexChanged, this, &NewJobDialog::updateDataFields);
    connect(regression_, &QCheckBox::toggled, this, [this] {
        updateTask();
        updateModelInput();
        validate();
    });
    connect(image_size_, &QSpinBox::valueChanged, this, &NewJobDialog::updateModelInput);
    connect(channels_, &QComboBox::currentIndexChanged, this, &NewJobDialog::updateModelInput);
    connect(optimizer_, &QComboBox::currentTextChanged, this, [this](const QString& type) {
        lr_->setValue(type == "adamw" ? 0.001 : 0.05);
        weight_decay_->setValue(type == "adamw" ? 0.01 : 0.0);
    });
    connect(model_, &QComboBox::activated, this, &NewJobDialog::presetChosen);
    connect(layers_, &LayerListModel::edited, this, &NewJobDialog::builderEdited);
    connect(layers_, &QAbstractItemModel::modelReset, this, [this] {
        model_summary_->setText(layers_->summary());
        model_summary_->setStyleSheet(layers_->plan().ok() ? QString() : QStringLiteral("color: #b3261e"));
    });
    for (QSpinBox* box : {epochs_, batch_, grad_accum_, warmup_, checkpoint_every_, keep_checkpoints_, patience_})
        connect(box, &QSpinBox::valueChanged, this, &NewJobDialog::validate);
    // Entering the JSON page shows the form as JSON; leaving it applies the edits, or stays when they do not parse.
    connect(builtin_tabs_, &QTabWidget::currentChanged, this, [this](int page) {
        const int left = std::exchange(builtin_page_, page);
        if (left == 3 && page != 3 && !applySpecJson()) {
            const QSignalBlocker quiet(builtin_tabs_); // back to the page with its text as the user left it
            builtin_tabs_->setCurrentIndex(3);
            builtin_page_ = 3;
            return;
        }
        if (page == 3)
            showSpecJson();
    });
    layers_->setPreset("mlp");
    updateDataFields();
}

void NewJobDialog::accept() {
    if (kind_->currentIndex() == 0 && builtin_tabs_->currentIndex() == 3 && !applySpecJson())
        return;
    if (!problem().isEmpty()) {
        validate();
        return;
    }
    QDialog::accept();
}

void NewJobDialog::presetChosen() {
    const QString preset = model_->currentData().toString();
    const QJsonObject loaded = loaded_.value("builtin").toObject();
    if (preset != "custom") // the loaded request's preset keys when it is that preset; "custom" keeps the rows shown
        layers_->setPreset(preset, loaded.value("model").toString() == preset ? loaded : QJsonObject());
    validate();
}

void NewJobDialog::builderEdited() {
    // Any edit makes the list the model (the preset's keys no longer describe it).
    model_->setCurrentIndex(model_->findData("custom"));
    validate();
}

void NewJobDialog::updateModelInput() {
    const QString data = dataset_->currentData().toString();
    // Shapes for the data chosen; what is not known before the data is read is shown for a stand-in and said.
    engine::SampleShape input{28, 28, 1};
    int classes = 10;
    QString note;
    const int generation = ++input_generation_;
    if (data == "images") {
        // A local folder is looked at off the GUI thread (its classes, its first image's size and colour): the
        // shapes become the trainer's own once the answer comes. Until then, and inside a dataset version, a stand-in.
        const ImageFolderSurvey& seen = surveyed_folder_ == train_file_->text() ? survey_ : ImageFolderSurvey{};
        const int height = image_size_->value() > 0 ? image_size_->value() : seen.image_folder ? seen.first_height : 32;
        const int width = image_size_->value() > 0 ? image_size_->value() : seen.image_folder ? seen.first_width : 32;
        const int channels = channels_->currentData().toInt() > 0 ? channels_->currentData().toInt()
                             : seen.image_folder                  ? (seen.colour ? 3 : 1)
                                                                  : 3;
        input = {height, width, channels};
        if (seen.image_folder) {
            classes = static_cast<int>(seen.classes.size());
            note = tr("Shapes for the %1 classes and %2x%3x%4 images of the folder.")
                       .arg(classes)
                       .arg(height)
                       .arg(width)
                       .arg(channels);
        } else {
            note = tr("Shapes for %1x%2x%3 images%4; the head has one output per class folder.")
                       .arg(height)
                       .arg(width)
                       .arg(channels)
                       .arg(image_size_->value() > 0 && channels_->currentData().toInt() > 0
                                ? QString()
                                : tr(" (size or channels come from the images)"));
        }
        const QString folder = train_file_->text();
        if (dataset_version_->currentData().toString().isEmpty() && !folder.isEmpty() && folder != surveyed_folder_)
            run_in_background(
                this, [folder] { return survey_image_folder(folder); },
                [this, folder, generation](const ImageFolderSurvey& survey) {
                    if (generation != input_generation_ || folder != train_file_->text())
                        return; // the form moved on meanwhile
                    surveyed_folder_ = folder;
                    survey_ = survey;
                    updateModelInput();
                });
    } else if (data == "csv") {
        input = {1, 1, 16};
        note = tr("Shapes for 16 feature columns; the table's own count is read when the job starts.");
        if (regression_->isChecked()) {
            classes = 1;
            note += tr(" A regression's head has one output.");
        }
    }
    layers_->setInput(input, classes);
    layers_view_->setToolTip(note);
    if (!note.isEmpty())
        model_summary_->setText(layers_->summary() + "\n" + note);
}

void NewJobDialog::updateTask() {
    // A regression has no classes: no label smoothing, and early stopping watches its loss (the squared error).
    const bool regression = regression_->isEnabled() && regression_->isChecked();
    if (regression) {
        label_smoothing_->setValue(0);
        if (early_metric_->currentData().toString() == "val_accuracy")
            early_metric_->setCurrentIndex(early_metric_->findData("val_loss"));
    }
    label_smoothing_->setEnabled(!regression);
    // Only accuracy is not a regression's: the choice stays open to a classifier (the group enables it as it does).
    auto* metrics = qobject_cast<QStandardItemModel*>(early_metric_->model());
    if (QStandardItem* accuracy = metrics ? metrics->item(early_metric_->findData("val_accuracy")) : nullptr)
        accuracy->setEnabled(!regression);
}

void NewJobDialog::showSpecJson() {
    shown_json_ = job_form_spec_text(form());
    spec_json_->setPlainText(shown_json_);
}

bool NewJobDialog::applySpecJson() {
    if (spec_json_->toPlainText() == shown_json_)
        return true;
    JobForm loaded;
    QString why;
    if (!job_form_from_spec_text(spec_json_->toPlainText(), form(), &loaded, &why)) {
        problem_->setText(why);
        if (submit_)
            submit_->setEnabled(false);
        return false;
    }
    setForm(loaded);
    showSpecJson();
    validate();
    return true;
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
    missing_->setEnabled(data == "csv");
    regression_->setEnabled(data == "csv");
    updateTask();
    updateModelInput();
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
    validate(); // a version now chosen changes what the form needs (its folders are inside it)
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
    const QString preset = model_->currentData().toString();
    if (preset == "custom") {
        form.layers = layers_->layersJson();
        // An empty list is not a preset: the form says to add a layer (jobform.h).
        form.model = form.layers.isEmpty() ? QStringLiteral("custom")
                                           : loaded_.value("builtin").toObject().value("model").toString("mlp");
    } else {
        form.model = preset;
    }
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
    form.missing = missing_->currentData().toString();
    form.regression = regression_->isChecked();
    form.crop_padding = crop_padding_->value();
    form.hflip = hflip_->isChecked();
    form.rotate = rotate_->value();
    form.jitter = jitter_->value();
    form.epochs = epochs_->value();
    form.batch_size = batch_->value();
    form.grad_accum = grad_accum_->value();
    form.optimizer = optimizer_->currentText();
    form.learning_rate = lr_->value();
    form.weight_decay = weight_decay_->value();
    form.warmup_steps = warmup_->value();
    form.cosine = cosine_->isChecked();
    form.label_smoothing = label_smoothing_->value();
    form.seed = seed_->value();
    form.device = device_->currentData().toString();
    form.precision = precision_->currentData().toString();
    form.checkpoint_every = checkpoint_every_->value();
    form.keep_checkpoints = keep_checkpoints_->value();
    form.early_stopping = early_stopping_->isChecked();
    form.early_stopping_metric = early_metric_->currentData().toString();
    form.patience = patience_->value();
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
    if (form.layers.isEmpty()) {
        model_->setCurrentIndex(std::max(0, model_->findData(form.model)));
        const QJsonObject loaded = form.loaded.value("builtin").toObject();
        layers_->setPreset(form.model, loaded.value("model").toString() == form.model ? loaded : QJsonObject());
    } else {
        model_->setCurrentIndex(model_->findData("custom"));
        layers_->setLayers(form.layers); // a list the trainer refuses cannot come from a loaded, valid request
    }
    // A version the list does not hold yet is chosen by setDatasets(), which looks at the loaded request.
    if (const int index = dataset_version_->findData(form.dataset_version); index >= 0)
        dataset_version_->setCurrentIndex(index);
    dataset_->setCurrentIndex(std::max(0, dataset_->findData(form.data)));
    train_file_->setText(form.data == "images" ? form.train_folder : form.train_csv);
    test_file_->setText(form.data == "images" ? form.test_folder : form.test_csv);
    image_size_->setValue(form.image_size);
    channels_->setCurrentIndex(std::max(0, channels_->findData(form.channels)));
    resize_->setCurrentIndex(std::max(0, resize_->findData(form.resize)));
    missing_->setCurrentIndex(std::max(0, missing_->findData(form.missing)));
    regression_->setChecked(form.regression);
    crop_padding_->setValue(form.crop_padding);
    hflip_->setChecked(form.hflip);
    rotate_->setValue(form.rotate);
    jitter_->setValue(form.jitter);
    epochs_->setValue(form.epochs);
    batch_->setValue(form.batch_size);
    grad_accum_->setValue(form.grad_accum);
    // Before the learning rate and weight decay: choosing an optimizer sets its usual ones.
    optimizer_->setCurrentText(form.optimizer);
    lr_->setValue(form.learning_rate);
    weight_decay_->setValue(form.weight_decay >= 0 ? form.weight_decay : form.optimizer == "adamw" ? 0.01 : 0.0);
    warmup_->setValue(form.warmup_steps);
    cosine_->setChecked(form.cosine);
    label_smoothing_->setValue(form.label_smoothing);
    seed_->setValue(form.seed);
    device_->setCurrentIndex(std::max(0, device_->findData(form.device)));
    precision_->setCurrentIndex(std::max(0, precision_->findData(form.precision)));
    checkpoint_every_->setValue(form.checkpoint_every);
    keep_checkpoints_->setValue(form.keep_checkpoints);
    early_stopping_->setChecked(form.early_stopping);
    early_metric_->setCurrentIndex(std::max(0, early_metric_->findData(form.early_stopping_metric)));
    patience_->setValue(form.patience);
}

void NewJobDialog::load(const QJsonObject& request) { setForm(job_form_from_request(request, form())); }

} // namespace traindeck
