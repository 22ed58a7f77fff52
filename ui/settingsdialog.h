#pragma once
// Edit → Settings… (Ctrl+,): the console's preferences, kept with QSettings (organisation "traindeck", application
// "traindeck"): the appearance (the system's, light or dark), the backend new jobs go to, the job view's chart
// defaults, desktop notifications of alerts, the data folder of the next start, and this machine's prices and idle
// alert (given to the local worker at once, and at each start). Each key and its default is
// named once here; the window reads them through the accessors.
#include <QDialog>
#include <QJsonObject>
#include <QString>
#include <QStringList>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLineEdit;
class QSettings;
class QSpinBox;

namespace traindeck {

struct ConsoleSettings {
    QString theme = QStringLiteral("system"); // theme.h's names
    QString default_backend;                  // "" = the first (the local worker)
    int smoothing = 60;                       // the job view's smoothing, 0..99
    bool log_scale = false;                   // the loss axis on a log scale by default
    bool notify = true;                       // alerts also as desktop notifications (tray)
    QString data_folder;                      // "" = $XDG_DATA_HOME/traindeck; read at start
    // This machine (the local worker): what it costs per hour (a job's rate: base + per GPU × its GPUs + per CPU ×
    // its CPUs), and when a job on it counts as idle (its GPUs, or its CPUs without GPUs, under idle_percent for
    // idle_minutes: an alert, and a stop with a checkpoint when idle_stop).
    double price_base = 0, price_gpu = 0, price_cpu = 0;
    double idle_percent = 5;
    int idle_minutes = 10;
    bool idle_stop = false;
    double budget_warn_percent = 80; // a job's budget: a warning at this percent, the stop at 100
    // The console's money (model/money.h), an ISO 4217 code; the local worker charges in it too.
    QString currency = QStringLiteral("USD");
    // Whether the user ever saved them: until then the local worker keeps its own (it may be one started by hand
    // with its own prices), and the console neither sends nor starts it with these defaults.
    bool policy_set = false;

    // The local worker's policy as Backend::setPolicy takes it, and as its command line says it at its start.
    QJsonObject policy() const;
    QStringList workerArguments() const;

    static ConsoleSettings load(const QSettings& settings);
    void save(QSettings& settings) const;
};

class SettingsDialog : public QDialog {
    Q_OBJECT
public:
    // backends: the names new jobs can go to.
    SettingsDialog(const ConsoleSettings& current, const QStringList& backends, const QString& data_folder_now,
                   QWidget* parent = nullptr);
    ConsoleSettings settings() const;

private:
    ConsoleSettings initial_;
    QComboBox* theme_;
    QComboBox* backend_;
    QSpinBox* smoothing_;
    QCheckBox* log_scale_;
    QCheckBox* notify_;
    QLineEdit* data_folder_;
    QDoubleSpinBox *price_base_, *price_gpu_, *price_cpu_, *idle_percent_;
    QSpinBox *idle_minutes_, *budget_warn_;
    QCheckBox* idle_stop_;
    QComboBox* currency_;
};

} // namespace traindeck
