#include "settingsdialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QVBoxLayout>

#include <algorithm>

namespace traindeck {

ConsoleSettings ConsoleSettings::load(const QSettings& settings) {
    ConsoleSettings loaded;
    loaded.theme = settings.value("appearance/theme", loaded.theme).toString();
    loaded.default_backend = settings.value("jobs/default_backend").toString();
    loaded.smoothing = std::clamp(settings.value("charts/smoothing", loaded.smoothing).toInt(), 0, 99);
    loaded.log_scale = settings.value("charts/log_scale", loaded.log_scale).toBool();
    loaded.notify = settings.value("alerts/notify", loaded.notify).toBool();
    loaded.data_folder = settings.value("data/folder").toString();
    return loaded;
}

void ConsoleSettings::save(QSettings& settings) const {
    settings.setValue("appearance/theme", theme);
    settings.setValue("jobs/default_backend", default_backend);
    settings.setValue("charts/smoothing", smoothing);
    settings.setValue("charts/log_scale", log_scale);
    settings.setValue("alerts/notify", notify);
    settings.setValue("data/folder", data_folder);
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
    notify_->setToolTip(tr("NaN loss, failures, budgets at 80 % and 100 %, idle jobs: always in the Alerts list, "
                           "and also as notifications when this is on"));
    data_folder_ = new QLineEdit(current.data_folder);
    data_folder_->setPlaceholderText(data_folder_now);
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
                                       .arg(data_folder_now));
    folder_note->setWordWrap(true);
    form->addRow(QString(), folder_note);
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
    chosen.data_folder = data_folder_->text().trimmed();
    return chosen;
}

} // namespace traindeck
