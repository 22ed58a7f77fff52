#include "settingsdialog.h"

#include "money.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRegularExpressionValidator>
#include <QDoubleSpinBox>
#include <QSettings>
#include <QSpinBox>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace traindeck {

ConsoleSettings ConsoleSettings::load(const QSettings& settings) {
    ConsoleSettings loaded;
    loaded.theme = settings.value("appearance/theme", loaded.theme).toString();
    loaded.default_backend = settings.value("jobs/default_backend").toString();
    loaded.smoothing = std::clamp(settings.value("charts/smoothing", loaded.smoothing).toInt(), 0, 99);
    loaded.log_scale = settings.value("charts/log_scale", loaded.log_scale).toBool();
    loaded.notify = settings.value("alerts/notify", loaded.notify).toBool();
    loaded.data_folder = settings.value("data/folder").toString();
    const auto non_negative = [&](const char* key, double fallback) {
        bool ok = false;
        const double value = settings.value(key, fallback).toDouble(&ok);
        return ok && std::isfinite(value) && value >= 0 ? std::min(value, 1e6) : fallback;
    };
    loaded.price_base = non_negative("local/price_base", loaded.price_base);
    loaded.price_gpu = non_negative("local/price_gpu", loaded.price_gpu);
    loaded.price_cpu = non_negative("local/price_cpu", loaded.price_cpu);
    loaded.idle_percent = std::min(100.0, non_negative("alerts/idle_percent", loaded.idle_percent));
    bool minutes_ok = false;
    const int minutes = settings.value("alerts/idle_minutes", loaded.idle_minutes).toInt(&minutes_ok);
    loaded.idle_minutes = minutes_ok ? std::clamp(minutes, 1, 1440) : loaded.idle_minutes;
    loaded.idle_stop = settings.value("alerts/idle_stop", loaded.idle_stop).toBool();
    loaded.budget_warn_percent =
        std::clamp(non_negative("alerts/budget_warn_percent", loaded.budget_warn_percent), 1.0, 99.0);
    const QString currency = settings.value("money/currency", loaded.currency).toString();
    loaded.currency = is_currency_code(currency) ? currency : loaded.currency;
    loaded.policy_set = settings.contains("local/price_base");
    return loaded;
}

QJsonObject ConsoleSettings::policy() const {
    return {{"price_base", price_base},
            {"price_gpu", price_gpu},
            {"price_cpu", price_cpu},
            {"idle_percent", idle_percent},
            {"idle_seconds", idle_minutes * 60.0},
            {"idle_stop", idle_stop},
            {"budget_warn_percent", budget_warn_percent},
            {"currency", currency}};
}

QStringList ConsoleSettings::workerArguments() const {
    if (!policy_set)
        return {};
    QStringList arguments{
        "--price-base",   QString::number(price_base),       "--price-gpu",    QString::number(price_gpu),
        "--price-cpu",    QString::number(price_cpu),        "--idle-percent", QString::number(idle_percent),
        "--idle-seconds", QString::number(idle_minutes * 60)};
    if (idle_stop)
        arguments << "--idle-stop";
    arguments << "--budget-warn" << QString::number(budget_warn_percent) << "--currency" << currency;
    return arguments;
}

void ConsoleSettings::save(QSettings& settings) const {
    settings.setValue("appearance/theme", theme);
    settings.setValue("jobs/default_backend", default_backend);
    settings.setValue("charts/smoothing", smoothing);
    settings.setValue("charts/log_scale", log_scale);
    settings.setValue("alerts/notify", notify);
    settings.setValue("data/folder", data_folder);
    settings.setValue("money/currency", currency);
    if (!policy_set)
        return; // the worker's own stay its own
    settings.setValue("local/price_base", price_base);
    settings.setValue("local/price_gpu", price_gpu);
    settings.setValue("local/price_cpu", price_cpu);
    settings.setValue("alerts/idle_percent", idle_percent);
    settings.setValue("alerts/idle_minutes", idle_minutes);
    settings.setValue("alerts/idle_stop", idle_stop);
    settings.setValue("alerts/budget_warn_percent", budget_warn_percent);
}

SettingsDialog::SettingsDialog(const ConsoleSettings& current, const QStringList& backends,
                               const QString& data_folder_now, QWidget* parent)
    : QDialog(parent), initial_(current) {
    setWindowTitle(tr("Settings"));
    theme_ = new QComboBox;
    theme_->addItem(tr("Follow the system"), QStringLiteral("system"));
    theme_->addItem(tr("Light"), QStringLiteral("light"));
    theme_->addItem(tr("Dark"), QStringLiteral("dark"));
    theme_->setCurrentIndex(std::max(0, theme_->findData(current.theme)));
    theme_->setAccessibleName(tr("Appearance"));
    backend_ = new QComboBox;
    backend_->addItem(tr("The first connected (the local worker)"), QString());
    for (const QString& name : backends)
        backend_->addItem(name, name);
    if (!current.default_backend.isEmpty() && backend_->findData(current.default_backend) < 0)
        backend_->addItem(tr("%1 (not connected now)").arg(current.default_backend), current.default_backend);
    backend_->setCurrentIndex(std::max(0, backend_->findData(current.default_backend)));
    backend_->setAccessibleName(tr("Default backend for new jobs"));
    smoothing_ = new QSpinBox;
    smoothing_->setRange(0, 99);
    smoothing_->setValue(current.smoothing);
    smoothing_->setToolTip(tr("How much the job view smooths the training loss at first (0: none); the band "
                              "always shows every point's spread"));
    smoothing_->setAccessibleName(tr("Chart smoothing"));
    log_scale_ = new QCheckBox(tr("Loss on a log scale"));
    log_scale_->setChecked(current.log_scale);
    notify_ = new QCheckBox(tr("Show alerts as desktop notifications"));
    notify_->setChecked(current.notify);
    notify_->setToolTip(tr("NaN loss, failures, budgets (the warning and the stop), idle jobs: always in the Alerts "
                           "list, and also as notifications when this is on"));
    // The default folder as a person reads it: ~/.local/share/traindeck rather than the whole of /home/….
    const QString home = QDir::homePath();
    const QString shown_default = data_folder_now.startsWith(home + '/')
                                      ? QStringLiteral("~") + data_folder_now.mid(home.size())
                                      : data_folder_now;
    data_folder_ = new QLineEdit(current.data_folder);
    data_folder_->setPlaceholderText(shown_default);
    data_folder_->setAccessibleName(tr("Data folder"));
    auto* browse = new QPushButton(tr("Choose…"));
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Data folder"), data_folder_->text());
        if (!dir.isEmpty())
            data_folder_->setText(dir);
    });
    auto* folder_row = new QHBoxLayout;
    folder_row->addWidget(data_folder_, 1);
    folder_row->addWidget(browse);

    auto* form = new QFormLayout;
    form->addRow(tr("&Appearance:"), theme_);
    form->addRow(tr("New jobs &go to:"), backend_);
    form->addRow(tr("Chart &smoothing:"), smoothing_);
    form->addRow(QString(), log_scale_);
    form->addRow(QString(), notify_);
    auto* folder_label = new QLabel(tr("&Data folder:"));
    folder_label->setBuddy(data_folder_);
    form->addRow(folder_label, folder_row);
    auto* folder_note = new QLabel(tr("The catalog and the local worker's state live in the data folder; a new one "
                                      "is used from the next start (empty: %1).")
                                       .arg(shown_default));
    folder_note->setWordWrap(true);
    form->addRow(QString(), folder_note);
    // This machine: what it costs, when a job on it is idle.
    const auto money = [&](double value, const QString& name) {
        auto* box = new QDoubleSpinBox;
        box->setRange(0, 1e6);
        box->setDecimals(4); // a CPU's price per hour can be a few cents
        box->setSingleStep(0.1);
        box->setPrefix(currency_symbol(current.currency));
        box->setSuffix(tr(" /h"));
        box->setValue(value);
        box->setAccessibleName(name);
        return box;
    };
    price_base_ = money(current.price_base, tr("This machine's price per hour"));
    price_gpu_ = money(current.price_gpu, tr("Price per GPU per hour"));
    price_cpu_ = money(current.price_cpu, tr("Price per CPU per hour"));
    auto* prices = new QHBoxLayout;
    prices->addWidget(price_base_);
    prices->addWidget(new QLabel(tr("+ per GPU")));
    prices->addWidget(price_gpu_);
    prices->addWidget(new QLabel(tr("+ per CPU")));
    prices->addWidget(price_cpu_);
    // The console's currency: every amount it shows, and what the local worker charges in.
    currency_ = new QComboBox;
    currency_->setEditable(true);
    currency_->addItems({"USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD", "CNY", "INR", "SEK", "NOK", "DKK", "PLN"});
    currency_->setValidator(
        new QRegularExpressionValidator(QRegularExpression(QStringLiteral("[A-Za-z]{0,3}")), currency_));
    currency_->setCurrentText(current.currency);
    currency_->setAccessibleName(tr("Currency"));
    currency_->setToolTip(tr("An ISO 4217 code; amounts are written with its symbol where it has a common one"));
    connect(currency_, &QComboBox::currentTextChanged, this, [this](const QString& typed) {
        const QString code = typed.toUpper();
        if (!is_currency_code(code))
            return;
        for (QDoubleSpinBox* box : {price_base_, price_gpu_, price_cpu_})
            box->setPrefix(currency_symbol(code));
    });
    auto* currency_label = new QLabel(tr("C&urrency:"));
    currency_label->setBuddy(currency_);
    form->addRow(currency_label, currency_);
    auto* price_label = new QLabel(tr("This machine &costs:"));
    price_label->setBuddy(price_base_);
    form->addRow(price_label, prices);
    idle_percent_ = new QDoubleSpinBox;
    idle_percent_->setRange(0, 100);
    idle_percent_->setDecimals(0);
    idle_percent_->setSuffix(QStringLiteral(" %"));
    idle_percent_->setValue(current.idle_percent);
    idle_percent_->setAccessibleName(tr("Idle below this utilisation"));
    idle_minutes_ = new QSpinBox;
    idle_minutes_->setRange(1, 1440);
    idle_minutes_->setSuffix(tr(" min"));
    idle_minutes_->setValue(current.idle_minutes);
    idle_minutes_->setAccessibleName(tr("Idle for this long"));
    idle_stop_ = new QCheckBox(tr("and stop it (checkpoint first)"));
    idle_stop_->setChecked(current.idle_stop);
    auto* idle = new QHBoxLayout;
    idle->addWidget(new QLabel(tr("under")));
    idle->addWidget(idle_percent_);
    idle->addWidget(new QLabel(tr("for")));
    idle->addWidget(idle_minutes_);
    idle->addWidget(idle_stop_);
    idle->addStretch(1);
    auto* idle_label = new QLabel(tr("A job is &idle:"));
    idle_label->setBuddy(idle_percent_);
    form->addRow(idle_label, idle);
    budget_warn_ = new QSpinBox;
    budget_warn_->setRange(1, 99);
    budget_warn_->setSuffix(QStringLiteral(" %"));
    budget_warn_->setValue(static_cast<int>(std::lround(current.budget_warn_percent)));
    budget_warn_->setAccessibleName(tr("Warn at this share of a job's budget"));
    auto* budget_row = new QHBoxLayout;
    budget_row->addWidget(budget_warn_);
    budget_row->addWidget(new QLabel(tr("of its budget (it stops, checkpoint first, at 100 %)")));
    budget_row->addStretch(1);
    auto* budget_label = new QLabel(tr("&Warn when a job spent:"));
    budget_label->setBuddy(budget_warn_);
    form->addRow(budget_label, budget_row);
    auto* local_note =
        new QLabel(tr("For jobs on the local worker: their spend, idle alerts and budget warnings. Given "
                      "to it at once (running jobs are charged the new price from now on). Remote "
                      "workers and providers have their own. The currency is also how the console "
                      "writes every amount."));
    local_note->setWordWrap(true);
    form->addRow(QString(), local_note);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(buttons);
}

ConsoleSettings SettingsDialog::settings() const {
    ConsoleSettings chosen = initial_;
    chosen.theme = theme_->currentData().toString();
    chosen.default_backend = backend_->currentData().toString();
    chosen.smoothing = smoothing_->value();
    chosen.log_scale = log_scale_->isChecked();
    chosen.notify = notify_->isChecked();
    // "~/…" as the placeholder writes it: the home folder.
    chosen.data_folder = data_folder_->text().trimmed();
    if (chosen.data_folder == QStringLiteral("~") || chosen.data_folder.startsWith(QStringLiteral("~/")))
        chosen.data_folder = QDir::homePath() + chosen.data_folder.mid(1);
    chosen.price_base = price_base_->value();
    chosen.price_gpu = price_gpu_->value();
    chosen.price_cpu = price_cpu_->value();
    chosen.idle_percent = idle_percent_->value();
    chosen.idle_minutes = idle_minutes_->value();
    chosen.idle_stop = idle_stop_->isChecked();
    chosen.budget_warn_percent = budget_warn_->value();
    const QString code = currency_->currentText().toUpper();
    chosen.currency = is_currency_code(code) ? code : initial_.currency;
    // The currency alone is the console's way of writing money: it does not make the local worker's prices ours.
    QJsonObject was = initial_.policy(), now = chosen.policy();
    was.remove("currency");
    now.remove("currency");
    chosen.policy_set = chosen.policy_set || now != was;
    return chosen;
}

} // namespace traindeck
