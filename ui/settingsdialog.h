#pragma once
// Edit → Settings… (Ctrl+,): the console's preferences, kept with QSettings (organisation "traindeck", application
// "traindeck"): the appearance (the system's, light or dark), the backend new jobs go to, the job view's chart
// defaults, desktop notifications of alerts, and the data folder of the next start. Each key and its default is
// named once here; the window reads them through the accessors.
#include <QDialog>
#include <QString>
#include <QStringList>

class QCheckBox;
class QComboBox;
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
};

} // namespace traindeck
