// NewSweepDialog (newsweepdialog.h): the widgets, the spec made from them, and the sweep library's verdict on it.
#include "newsweepdialog.h"
#include "metricgoal.h"
#include "money.h"

#include "sweepspec.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

namespace traindeck {

namespace {

const QStringList kKinds = {"choice", "uniform", "loguniform", "int", "qloguniform"};

// A number cell: the number, or the text as it is, so that the spec's validation says what is wrong with it
// ("low must be a number (it is "1e-x")") and names the key.
QJsonValue numberOrText(const QString& text) {
    bool ok = false;
    const double value = text.trimmed().toDouble(&ok);
    return ok ? QJsonValue(value) : QJsonValue(text.trimmed());
}

// A choice's values: a comma-separated list of JSON values ("64, 128", "[64, 64], [128]", "true, false"), and any
// word that is no JSON value taken as text ("sgd, adamw"), as a user writes them.
QJsonArray choiceValues(const QString& text) {
    const QJsonDocument whole = QJsonDocument::fromJson(("[" + text + "]").toUtf8());
    if (whole.isArray())
        return whole.array();
    QJsonArray values;
    for (const QString& word : text.split(',', Qt::SkipEmptyParts)) {
        const QJsonDocument one = QJsonDocument::fromJson(("[" + word.trimmed() + "]").toUtf8());
        if (one.isArray() && one.array().size() == 1)
            values.append(one.array().first());
        else
            values.append(word.trimmed());
    }
    return values;
}

QString jsonText(const QJsonValue& value) {
    if (value.isString())
        return value.toString();
    if (value.isDouble())
        return QString::number(value.toDouble(), 'g', 12);
    return QString::fromUtf8(QJsonDocument(QJsonArray{value}).toJson(QJsonDocument::Compact)).mid(1).chopped(1);
}

nlohmann::json toNlohmann(const QJsonObject& object) {
    return nlohmann::json::parse(QJsonDocument(object).toJson(QJsonDocument::Compact).toStdString(), nullptr, false);
}

QString money(double amount) { return traindeck::money(amount, amount < 1 ? 4 : 2); }

} // namespace

NewSweepDialog::NewSweepDialog(QWidget* parent) : QDialog(parent) {
    setWindowTitle(tr("New sweep"));
    name_ = new QLineEdit;
    name_->setPlaceholderText(tr("sweep (its trials are named “NAME #1”, “NAME #2”…)"));
    backend_ = new QComboBox;
    backend_->addItem(QStringLiteral("local"));

    // The base job: the New job dialog's built-in fields (a data limit besides, as small sweeps want) or a command.
    auto* builtin = new QWidget;
    auto* builtin_form = new QFormLayout(builtin);
    model_ = new QComboBox;
    model_->addItem(tr("MLP 784-256-128-10"), "mlp");
    model_->addItem(tr("CNN conv32-conv64-fc128"), "cnn");
    data_ = new QComboBox;
    data_->addItem(tr("Fashion-MNIST (Debian dataset-fashion-mnist)"), "fashion-mnist");
    data_->addItem(tr("CSV file (numeric columns + label)"), "csv");
    train_file_ = new QLineEdit;
    train_file_->setPlaceholderText(tr("/path/to/train.csv"));
    test_file_ = new QLineEdit;
    test_file_->setPlaceholderText(tr("optional /path/to/test.csv"));
    limit_ = new QSpinBox;
    limit_->setRange(0, 100000000);
    limit_->setSingleStep(1000);
    limit_->setSpecialValueText(tr("all"));
    limit_->setToolTip(tr("Train on the first N examples only: quick trials to rank settings by"));
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
    trainer_seed_ = new QSpinBox;
    trainer_seed_->setRange(0, 1 << 30);
    trainer_seed_->setValue(42);
    builtin_form->addRow(tr("Model"), model_);
    builtin_form->addRow(tr("Data"), data_);
    builtin_form->addRow(tr("Training file"), train_file_);
    builtin_form->addRow(tr("Test file"), test_file_);
    builtin_form->addRow(tr("Examples"), limit_);
    builtin_form->addRow(tr("Epochs"), epochs_);
    builtin_form->addRow(tr("Batch size"), batch_);
    builtin_form->addRow(tr("Optimizer"), optimizer_);
    builtin_form->addRow(tr("Learning rate"), lr_);
    builtin_form->addRow(tr("Seed"), trainer_seed_);
    auto* command = new QWidget;
    auto* command_form = new QFormLayout(command);
    command_ = new QLineEdit;
    command_->setPlaceholderText(tr("/usr/bin/python3 train.py (reads traindeck.params())"));
    cwd_ = new QLineEdit;
    cwd_->setPlaceholderText(tr("working folder (default: the job's folder)"));
    env_ = new QPlainTextEdit;
    env_->setPlaceholderText(tr("KEY=VALUE, one a line"));
    env_->setMaximumHeight(60);
    command_form->addRow(tr("Command"), command_);
    command_form->addRow(tr("Working folder"), cwd_);
    command_form->addRow(tr("Environment"), env_);
    kind_ = new QTabWidget;
    kind_->addTab(builtin, tr("Built-in trainer"));
    kind_->addTab(command, tr("Command"));
    cpus_ = new QSpinBox;
    cpus_->setRange(1, 1024);
    cpus_->setValue(1);
    gpus_ = new QSpinBox;
    gpus_->setRange(0, 64);
    gpus_->setSpecialValueText(tr("auto"));
    gpus_->setToolTip(tr("auto: one GPU a trial where the worker has GPUs, none where it has not"));
    per_gpu_ = new QSpinBox;
    per_gpu_->setRange(1, sweep::max_trials_per_gpu);
    per_gpu_->setValue(1);
    per_gpu_->setToolTip(tr("Small trials can share a GPU: this many run on each one (and each pays that share of "
                            "the GPU's price). A cluster still gives each trial whole GPUs."));
    auto* per_trial = new QHBoxLayout;
    per_trial->addWidget(new QLabel(tr("CPUs")));
    per_trial->addWidget(cpus_);
    per_trial->addWidget(new QLabel(tr("GPUs")));
    per_trial->addWidget(gpus_);
    per_trial->addWidget(new QLabel(tr("Trials per GPU")));
    per_trial->addWidget(per_gpu_);
    per_trial->addStretch(1);
    auto* base_box = new QGroupBox(tr("Base job (each trial starts from it)"));
    auto* base_layout = new QVBoxLayout(base_box);
    base_layout->addWidget(kind_);
    auto* trial_form = new QFormLayout;
    trial_form->addRow(tr("Each trial"), per_trial);
    base_layout->addLayout(trial_form);

    // The space: a row a dimension.
    space_ = new QTableWidget(0, 5);
    space_->setHorizontalHeaderLabels({tr("Key"), tr("Kind"), tr("Low"), tr("High"), tr("q / values")});
    space_->horizontalHeader()->setSectionResizeMode(KeyColumn, QHeaderView::Stretch);
    space_->horizontalHeader()->setSectionResizeMode(ExtraColumn, QHeaderView::Stretch);
    space_->verticalHeader()->hide();
    space_->setMinimumHeight(130);
    space_->setToolTip(tr("Key: a dotted path into the trial's parameters (optimizer.lr, hidden[0]). Low and high "
                          "for uniform, loguniform, int and qloguniform; q for qloguniform; the values, "
                          "comma-separated, for choice"));
    auto* add = new QPushButton(tr("Add"));
    auto* remove = new QPushButton(tr("Remove"));
    connect(add, &QPushButton::clicked, this, [this] { addDimension({}, QStringLiteral("loguniform")); });
    connect(remove, &QPushButton::clicked, this, [this] {
        if (space_->currentRow() >= 0)
            space_->removeRow(space_->currentRow());
    });
    connect(space_, &QTableWidget::itemChanged, this, &NewSweepDialog::validate);
    connect(space_->model(), &QAbstractItemModel::rowsRemoved, this, &NewSweepDialog::validate);
    auto* space_buttons = new QHBoxLayout;
    space_buttons->addWidget(add);
    space_buttons->addWidget(remove);
    space_buttons->addStretch(1);
    auto* space_box = new QGroupBox(tr("Search space"));
    auto* space_layout = new QVBoxLayout(space_box);
    space_layout->addWidget(space_);
    space_layout->addLayout(space_buttons);

    // How to search, what for, and when to stop.
    method_ = new QComboBox;
    method_->addItem(tr("TPE (learns from the trials so far)"), "tpe");
    method_->addItem(tr("Random (never the same twice)"), "random");
    method_->addItem(tr("Grid (every combination once)"), "grid");
    metric_ = new QComboBox;
    metric_->setEditable(true);
    metric_->addItems({"val/accuracy", "val/loss", "loss", "accuracy", "val/r2", "val/rmse", "val/mae"});
    goal_ = new QComboBox;
    goal_->addItem(tr("maximise"), "max");
    goal_->addItem(tr("minimise"), "min");
    auto* objective = new QHBoxLayout;
    objective->addWidget(metric_, 1);
    objective->addWidget(goal_);
    max_trials_ = new QSpinBox;
    max_trials_->setRange(1, 100000);
    max_trials_->setValue(20);
    max_concurrent_ = new QSpinBox;
    max_concurrent_->setRange(1, 1024);
    max_concurrent_->setValue(2);
    seed_ = new QSpinBox;
    seed_->setRange(0, 1 << 30);
    auto* search_box = new QGroupBox(tr("Search"));
    auto* search = new QFormLayout(search_box);
    search->addRow(tr("Method"), method_);
    search->addRow(tr("Objective"), objective);
    search->addRow(tr("Max trials"), max_trials_);
    search->addRow(tr("At once"), max_concurrent_);
    search->addRow(tr("Seed"), seed_);

    stopping_ = new QComboBox;
    stopping_->addItem(tr("none (every trial to its end)"), "none");
    stopping_->addItem(tr("ASHA (pause the weaker at each rung)"), "asha");
    resource_ = new QComboBox;
    resource_->addItem(tr("epochs"), "epochs");
    resource_->addItem(tr("steps"), "steps");
    min_resource_ = new QDoubleSpinBox;
    min_resource_->setRange(0.001, 1e9);
    min_resource_->setDecimals(3);
    min_resource_->setValue(1);
    max_resource_ = new QDoubleSpinBox;
    max_resource_->setRange(0.001, 1e9);
    max_resource_->setDecimals(3);
    max_resource_->setValue(9);
    factor_ = new QDoubleSpinBox;
    factor_->setRange(1.01, 100);
    factor_->setValue(3);
    auto* stopping_box = new QGroupBox(tr("Early stopping"));
    auto* stopping = new QFormLayout(stopping_box);
    stopping->addRow(tr("Method"), stopping_);
    stopping->addRow(tr("Resource"), resource_);
    stopping->addRow(tr("Min (first rung)"), min_resource_);
    stopping->addRow(tr("Max (last rung)"), max_resource_);
    stopping->addRow(tr("Reduction factor"), factor_);

    money_ = new QDoubleSpinBox;
    money_->setRange(0, 1e7);
    money_->setDecimals(2);
    money_->setPrefix(currency_symbol(display_currency()));
    money_->setSpecialValueText(tr("no cap"));
    gpu_hours_ = new QDoubleSpinBox;
    gpu_hours_->setRange(0, 1e7);
    gpu_hours_->setDecimals(2);
    gpu_hours_->setSuffix(tr(" GPU-hours"));
    gpu_hours_->setSpecialValueText(tr("no cap"));
    auto* budget_box = new QGroupBox(tr("Budget (a hard cap for the whole sweep)"));
    auto* budget = new QFormLayout(budget_box);
    budget->addRow(tr("Money"), money_);
    budget->addRow(tr("GPU time"), gpu_hours_);

    auto* top = new QFormLayout;
    top->addRow(tr("Name"), name_);
    top->addRow(tr("Run on"), backend_);
    auto* left = new QVBoxLayout;
    left->addLayout(top);
    left->addWidget(base_box);
    left->addWidget(space_box, 1);
    auto* right = new QVBoxLayout;
    right->addWidget(search_box);
    right->addWidget(stopping_box);
    right->addWidget(budget_box);
    right->addStretch(1);
    auto* columns = new QHBoxLayout;
    columns->addLayout(left, 3);
    columns->addLayout(right, 2);

    preview_ = new QLabel;
    preview_->setWordWrap(true);
    problem_ = new QLabel;
    problem_->setWordWrap(true);
    problem_->setStyleSheet("color: #b3261e");
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    start_ = buttons->button(QDialogButtonBox::Ok);
    start_->setText(tr("Start sweep"));
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(columns, 1);
    layout->addWidget(preview_);
    layout->addWidget(problem_);
    layout->addWidget(buttons);

    for (QLineEdit* edit : {name_, train_file_, test_file_, command_, cwd_})
        connect(edit, &QLineEdit::textChanged, this, &NewSweepDialog::validate);
    connect(env_, &QPlainTextEdit::textChanged, this, &NewSweepDialog::validate);
    connect(metric_, &QComboBox::currentTextChanged, this, &NewSweepDialog::validate);
    // A metric chosen proposes its goal: an error or loss minimised (val/rmse, val/loss), anything else maximised.
    connect(metric_, &QComboBox::textActivated, this, [this](const QString& metric) {
        const bool minimize = default_goal(metric.trimmed().toStdString()) == MetricGoal::minimize;
        goal_->setCurrentIndex(goal_->findData(minimize ? "min" : "max"));
    });
    for (QComboBox* combo : {backend_, model_, data_, optimizer_, method_, goal_, stopping_, resource_})
        connect(combo, &QComboBox::currentIndexChanged, this, &NewSweepDialog::validate);
    for (QSpinBox* spin :
         {limit_, epochs_, batch_, trainer_seed_, cpus_, gpus_, per_gpu_, max_trials_, max_concurrent_, seed_})
        connect(spin, &QSpinBox::valueChanged, this, &NewSweepDialog::validate);
    for (QDoubleSpinBox* spin : {lr_, min_resource_, max_resource_, factor_, money_, gpu_hours_})
        connect(spin, &QDoubleSpinBox::valueChanged, this, &NewSweepDialog::validate);
    connect(kind_, &QTabWidget::currentChanged, this, &NewSweepDialog::validate);
    connect(optimizer_, &QComboBox::currentTextChanged, this,
            [this](const QString& type) { lr_->setValue(type == "adamw" ? 0.001 : 0.05); });

    // A first dimension to edit: the learning rate is what a sweep most often searches.
    addDimension(QStringLiteral("optimizer.lr"), QStringLiteral("loguniform"), QStringLiteral("0.0001"),
                 QStringLiteral("0.3"));
    resize(1080, 720);
    validate();
}

void NewSweepDialog::setBackends(const QStringList& names, const QString& current) {
    backend_->clear();
    backend_->addItems(names);
    if (!current.isEmpty() && names.contains(current))
        backend_->setCurrentText(current);
}

QString NewSweepDialog::backendName() const { return backend_->currentText(); }

void NewSweepDialog::setPrices(const QHash<QString, QJsonObject>& prices) {
    prices_ = prices;
    validate();
}

void NewSweepDialog::addDimension(const QString& key, const QString& kind, const QString& low, const QString& high,
                                  const QString& extra) {
    const QSignalBlocker quiet(space_); // one validation for the whole row, below
    const int row = space_->rowCount();
    space_->insertRow(row);
    space_->setItem(row, KeyColumn, new QTableWidgetItem(key));
    auto* kinds = new QComboBox;
    kinds->addItems(kKinds);
    kinds->setCurrentText(kKinds.contains(kind) ? kind : QStringLiteral("choice"));
    connect(kinds, &QComboBox::currentIndexChanged, this, &NewSweepDialog::validate);
    space_->setCellWidget(row, KindColumn, kinds);
    space_->setItem(row, LowColumn, new QTableWidgetItem(low));
    space_->setItem(row, HighColumn, new QTableWidgetItem(high));
    space_->setItem(row, ExtraColumn, new QTableWidgetItem(extra));
    validate();
}

JobForm NewSweepDialog::baseForm() const {
    JobForm form = loaded_form_;
    form.kind = kind_->currentIndex() == 1 ? JobForm::Kind::command : JobForm::Kind::builtin;
    form.name = name_->text().trimmed().isEmpty() ? QStringLiteral("sweep") : name_->text().trimmed();
    form.model = model_->currentData().toString();
    form.data = data_->currentData().toString();
    form.train_csv = train_file_->text();
    form.test_csv = test_file_->text();
    form.epochs = epochs_->value();
    form.batch_size = batch_->value();
    form.optimizer = optimizer_->currentText();
    form.learning_rate = lr_->value();
    form.seed = trainer_seed_->value();
    form.command_line = command_->text();
    form.working_folder = cwd_->text();
    form.environment = env_->toPlainText();
    form.cpus = cpus_->value();
    form.gpus = gpus_->value();
    // The data limit is the one built-in field the job form does not have: it travels in the loaded request.
    QJsonObject builtin = form.loaded.value("builtin").toObject();
    QJsonObject data = builtin.value("data").toObject();
    if (limit_->value() > 0)
        data["limit"] = limit_->value();
    else
        data.remove("limit");
    builtin["data"] = data;
    form.loaded["builtin"] = builtin;
    return form;
}

QJsonObject NewSweepDialog::spaceJson(QString* problem) const {
    QJsonObject space;
    for (int row = 0; row < space_->rowCount(); ++row) {
        auto text = [&](int column) {
            const QTableWidgetItem* item = space_->item(row, column);
            return item ? item->text().trimmed() : QString();
        };
        const QString key = text(KeyColumn);
        const auto* kinds = qobject_cast<QComboBox*>(space_->cellWidget(row, KindColumn));
        const QString kind = kinds ? kinds->currentText() : QStringLiteral("choice");
        if (key.isEmpty()) {
            if (problem->isEmpty() && !(text(LowColumn) + text(HighColumn) + text(ExtraColumn)).isEmpty())
                *problem = tr("Space, row %1: give its key, a dotted path such as optimizer.lr").arg(row + 1);
            continue;
        }
        if (space.contains(key)) {
            if (problem->isEmpty())
                *problem = tr("Space: %1 is given twice (rows with the same key); remove one").arg(key);
            continue;
        }
        QJsonArray arguments;
        if (kind == "choice") {
            arguments = choiceValues(text(ExtraColumn));
        } else {
            arguments = {numberOrText(text(LowColumn)), numberOrText(text(HighColumn))};
            if (kind == "qloguniform")
                arguments.append(numberOrText(text(ExtraColumn)));
        }
        space[key] = QJsonObject{{kind, arguments}};
    }
    return space;
}

QJsonObject NewSweepDialog::spec() const {
    QJsonObject spec = loaded_;
    const JobForm form = baseForm();
    QJsonObject base = job_form_request(form);
    // The worker names each trial and gives it what is left of the sweep's budget; the console's own settings are
    // not the worker's.
    for (const char* key : {"name", "budget", "console"})
        base.remove(key);
    // No GPUs asked for: the worker gives each trial one where it has GPUs (and none where it has not).
    if (form.gpus == 0) {
        QJsonObject resources = base.value("resources").toObject();
        resources.remove("gpus");
        base["resources"] = resources;
    }
    spec["name"] = form.name;
    spec["base"] = base;
    QString ignored;
    spec["space"] = spaceJson(&ignored);
    spec["method"] = method_->currentData().toString();
    spec["objective"] =
        QJsonObject{{"metric", metric_->currentText().trimmed()}, {"goal", goal_->currentData().toString()}};
    if (stopping_->currentData() == "asha")
        spec["early_stopping"] = QJsonObject{{"method", "asha"},
                                             {"resource", resource_->currentData().toString()},
                                             {"min_resource", min_resource_->value()},
                                             {"max_resource", max_resource_->value()},
                                             {"reduction_factor", factor_->value()}};
    else
        spec["early_stopping"] = QJsonObject{{"method", "none"}};
    spec["max_trials"] = max_trials_->value();
    spec["max_concurrent"] = max_concurrent_->value();
    spec["trials_per_gpu"] = per_gpu_->value();
    spec["seed"] = seed_->value();
    QJsonObject budget;
    if (money_->value() > 0)
        budget["money"] = money_->value();
    if (gpu_hours_->value() > 0)
        budget["gpu_hours"] = gpu_hours_->value();
    if (budget.isEmpty())
        spec.remove("budget");
    else
        spec["budget"] = budget;
    return spec;
}

QString NewSweepDialog::problem() const {
    if (const QString why = job_form_problem(baseForm()); !why.isEmpty())
        return tr("Base job: %1").arg(why);
    QString why;
    spaceJson(&why);
    if (!why.isEmpty())
        return why;
    sweep::SweepSpec parsed;
    const std::string error = sweep::parse_sweep_spec(toNlohmann(spec()), parsed);
    return error.empty() ? QString() : QString::fromStdString(error);
}

QString NewSweepDialog::preview() const { return preview_->text(); }

void NewSweepDialog::updateEnabled() {
    const bool asha = stopping_->currentData() == "asha";
    for (QWidget* widget : std::initializer_list<QWidget*>{resource_, min_resource_, max_resource_, factor_})
        widget->setEnabled(asha);
    const bool csv = data_->currentData() == "csv";
    train_file_->setEnabled(csv);
    test_file_->setEnabled(csv);
    // Counting ASHA epochs, the worker trains each trial max_resource epochs, whatever the base says.
    epochs_->setEnabled(!(asha && resource_->currentData() == "epochs"));
}

void NewSweepDialog::validate() {
    updateEnabled();
    const QString why = problem();
    problem_->setText(why);
    if (start_)
        start_->setEnabled(why.isEmpty());
    if (!why.isEmpty()) {
        preview_->setText(tr("Preview: fix what is said below first"));
        return;
    }
    sweep::SweepSpec parsed;
    sweep::parse_sweep_spec(toNlohmann(spec()), parsed);
    const uint64_t trials = parsed.method == sweep::Method::grid
                                ? std::min<uint64_t>(sweep::grid_size(parsed), static_cast<uint64_t>(parsed.max_trials))
                                : static_cast<uint64_t>(parsed.max_trials);
    QStringList parts;
    parts << (parsed.method == sweep::Method::grid
                  ? tr("%n trial(s) (a grid of %1)", nullptr, static_cast<int>(trials)).arg(sweep::grid_size(parsed))
                  : tr("%n trial(s)", nullptr, static_cast<int>(trials)));
    const bool builtin = parsed.base.contains("builtin");
    if (builtin) {
        const double epochs = parsed.asha.enabled && parsed.asha.epochs ? parsed.asha.max_resource
                                                                        : parsed.base["builtin"].value("epochs", 5.0);
        parts << tr("at most %1 epochs (%2 × %3)").arg(static_cast<double>(trials) * epochs).arg(trials).arg(epochs);
    } else {
        parts << tr("epochs: as the command trains");
    }
    const QJsonObject prices = prices_.value(backendName());
    if (prices.isEmpty()) {
        parts << tr("prices of %1 not known yet").arg(backendName());
    } else {
        // "auto" GPUs: one a trial where the backend has GPUs; a cluster gives (and bills) whole GPUs.
        const int gpus = gpus_->value() > 0 ? gpus_->value() : (prices.value("gpu_count").toInt() > 0 ? 1 : 0);
        const int sharing = prices.value("cluster").toBool() ? 1 : per_gpu_->value();
        const double rate = prices.value("base_per_hour").toDouble() +
                            prices.value("gpu_per_hour").toDouble() * gpus / sharing +
                            prices.value("cpu_per_hour").toDouble() * cpus_->value();
        const int at_once = static_cast<int>(std::min<uint64_t>(trials, static_cast<uint64_t>(parsed.max_concurrent)));
        parts << tr("%1 an hour while %n trial(s) run", nullptr, at_once).arg(money(rate * at_once));
    }
    parts << (parsed.budget > 0 ? tr("never more than %1 in all (its cap)").arg(money(parsed.budget))
                                : tr("no money cap"));
    preview_->setText(parts.join(QStringLiteral(" · ")));
}

void NewSweepDialog::load(const QJsonObject& spec) {
    loaded_ = spec;
    const QJsonObject base = spec.value("base").toObject();
    loaded_form_ = job_form_from_request(base, JobForm{});
    const JobForm& form = loaded_form_;
    name_->setText(spec.value("name").toString());
    kind_->setCurrentIndex(form.kind == JobForm::Kind::command ? 1 : 0);
    model_->setCurrentIndex(std::max(0, model_->findData(form.model)));
    data_->setCurrentIndex(std::max(0, data_->findData(form.data)));
    train_file_->setText(form.train_csv);
    test_file_->setText(form.test_csv);
    limit_->setValue(base.value("builtin").toObject().value("data").toObject().value("limit").toInt());
    epochs_->setValue(form.epochs);
    batch_->setValue(form.batch_size);
    optimizer_->setCurrentText(form.optimizer); // before the rate: choosing an optimizer sets its usual rate
    lr_->setValue(form.learning_rate);
    trainer_seed_->setValue(form.seed);
    command_->setText(form.command_line);
    cwd_->setText(form.working_folder);
    env_->setPlainText(form.environment);
    cpus_->setValue(form.cpus);
    gpus_->setValue(form.gpus);
    space_->setRowCount(0);
    const QJsonObject space = spec.value("space").toObject();
    for (auto it = space.begin(); it != space.end(); ++it) {
        const QJsonObject dimension = it.value().toObject();
        const QString kind = dimension.isEmpty() ? QStringLiteral("choice") : dimension.begin().key();
        const QJsonArray arguments = dimension.value(kind).toArray();
        if (kind == "choice") {
            QStringList values;
            for (const auto& value : arguments)
                values << jsonText(value);
            addDimension(it.key(), kind, {}, {}, values.join(QStringLiteral(", ")));
        } else {
            addDimension(it.key(), kind, jsonText(arguments.at(0)), jsonText(arguments.at(1)),
                         kind == "qloguniform" ? jsonText(arguments.at(2)) : QString());
        }
    }
    method_->setCurrentIndex(std::max(0, method_->findData(spec.value("method").toString("tpe"))));
    const QJsonObject objective = spec.value("objective").toObject();
    metric_->setCurrentText(objective.value("metric").toString("val/accuracy"));
    goal_->setCurrentIndex(std::max(0, goal_->findData(objective.value("goal").toString("max"))));
    const QJsonObject stopping = spec.value("early_stopping").toObject();
    stopping_->setCurrentIndex(std::max(0, stopping_->findData(stopping.value("method").toString("none"))));
    resource_->setCurrentIndex(std::max(0, resource_->findData(stopping.value("resource").toString("epochs"))));
    min_resource_->setValue(stopping.value("min_resource").toDouble(1));
    max_resource_->setValue(stopping.value("max_resource").toDouble(9));
    factor_->setValue(stopping.value("reduction_factor").toDouble(3));
    max_trials_->setValue(spec.value("max_trials").toInt(20));
    max_concurrent_->setValue(spec.value("max_concurrent").toInt(2));
    per_gpu_->setValue(spec.value("trials_per_gpu").toInt(1));
    seed_->setValue(spec.value("seed").toInt(0));
    const QJsonObject budget = spec.value("budget").toObject();
    money_->setValue(budget.value("money").toDouble());
    gpu_hours_->setValue(budget.value("gpu_hours").toDouble());
    validate();
}

} // namespace traindeck
