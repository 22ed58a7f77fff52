#pragma once
// Export model…: fetches the job's newest checkpoint from its backend, runs `traindeck-train export` on it (a
// separate process: a crash or a long quantisation never touches the console) and shows what came out: each
// file with its size, and validation/test accuracy before and after int8 quantisation, with a warning when the
// drop is above the user's threshold.
#include "backend.h"

#include <QDialog>
#include <QJsonObject>

class QCheckBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QProcess;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace traindeck {

class ExportDialog : public QDialog {
    Q_OBJECT
public:
    struct Job {
        qint64 id = 0;
        QString name, remote_id;
        QJsonObject request;  // as submitted; its "builtin" is the spec
        QString dataset_root; // local folder of the job's dataset version ("" when none)
        QJsonObject provenance; // written into the files' metadata (traindeck-train export --provenance)
    };
    ExportDialog(const Job& job, Backend& backend, const QString& out_dir, QWidget* parent = nullptr);

    void startExport();
    bool running() const { return running_; }
    QJsonObject report() const { return report_; }
    QString status() const;
    void setOptions(bool onnx, bool int8, bool safetensors, int calibration, double max_drop_percent);

signals:
    void exported(qint64 job, const QJsonObject& report);

private:
    void runExporter(const QString& checkpoint);
    void showReport(const QJsonObject& report);
    void setStatus(const QString& text, bool error = false);

    Job job_;
    Backend& backend_;
    QCheckBox* onnx_;
    QCheckBox* int8_;
    QCheckBox* safetensors_;
    QSpinBox* calibration_;
    QDoubleSpinBox* max_drop_;
    QLineEdit* out_dir_;
    QPushButton* export_;
    QLabel* status_;
    QTableWidget* files_;
    QLabel* accuracy_;
    QLabel* warning_;
    QProcess* process_ = nullptr;
    QJsonObject report_;
    bool running_ = false;
};

} // namespace traindeck
