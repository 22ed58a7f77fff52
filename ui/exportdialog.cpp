// ExportDialog (exportdialog.h): the checkpoint fetched on the network pool, the exporter a separate process.
#include "exportdialog.h"

#include "background.h"
#include "backendref.h"
#include "datasettablemodel.h"

#include <QCheckBox>
#include <QCoreApplication>
#include <QDialogButtonBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QLineEdit>
#include <QProcess>
#include <QPushButton>
#include <QSaveFile>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

namespace traindeck {

namespace {

QString train_binary() {
    return qEnvironmentVariable("TRAINDECK_TRAIN_BINARY", QCoreApplication::applicationDirPath() + "/traindeck-train");
}

QString percent(double fraction) { return QString("%1 %").arg(100.0 * fraction, 0, 'f', 2); }

} // namespace

ExportDialog::ExportDialog(const Job& job, Backend& backend, const QString& out_dir, QWidget* parent)
    : QDialog(parent), job_(job), backend_(backend) {
    setWindowTitle(tr("Export %1").arg(job.name));
    onnx_ = new QCheckBox(tr("ONNX (fp32)"));
    onnx_->setChecked(true);
    int8_ = new QCheckBox(tr("ONNX int8 (static quantisation, re-evaluated)"));
    int8_->setChecked(true);
    safetensors_ = new QCheckBox(tr("safetensors (weights)"));
    safetensors_->setChecked(true);
    calibration_ = new QSpinBox;
    calibration_->setRange(1, 1000000);
    calibration_->setValue(1000);
    calibration_->setSuffix(tr(" training samples"));
    max_drop_ = new QDoubleSpinBox;
    max_drop_->setRange(0, 100);
    max_drop_->setValue(1.0);
    max_drop_->setSuffix(tr(" points"));
    out_dir_ = new QLineEdit(out_dir);
    auto* browse = new QPushButton(tr("…"));
    auto* folder = new QHBoxLayout;
    folder->addWidget(out_dir_, 1);
    folder->addWidget(browse);
    auto* form = new QFormLayout;
    form->addRow(tr("Formats"), onnx_);
    form->addRow(QString(), int8_);
    form->addRow(QString(), safetensors_);
    form->addRow(tr("Calibration"), calibration_);
    form->addRow(tr("Warn when int8 loses more than"), max_drop_);
    form->addRow(tr("Folder"), folder);

    status_ = new QLabel(job.request.contains("builtin") ? tr("Exports the newest checkpoint of the job.")
                                                           : tr("Only built-in trainer jobs can be exported."));
    status_->setWordWrap(true);
    files_ = new QTableWidget(0, 3);
    files_->setHorizontalHeaderLabels({tr("Format"), tr("Size"), tr("File")});
    files_->verticalHeader()->hide();
    files_->horizontalHeader()->setStretchLastSection(true);
    files_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    files_->setMinimumHeight(110);
    accuracy_ = new QLabel;
    accuracy_->setTextFormat(Qt::RichText);
    warning_ = new QLabel;
    warning_->setStyleSheet("color: #b3261e; font-weight: bold;");
    warning_->setWordWrap(true);
    export_ = new QPushButton(tr("Export"));
    export_->setDefault(true);
    export_->setEnabled(job.request.contains("builtin"));
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
    buttons->addButton(export_, QDialogButtonBox::ActionRole);

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(status_);
    layout->addWidget(files_);
    layout->addWidget(accuracy_);
    layout->addWidget(warning_);
    layout->addWidget(buttons);
    resize(640, 520);

    connect(browse, &QPushButton::clicked, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Export into"), out_dir_->text());
        if (!dir.isEmpty())
            out_dir_->setText(dir);
    });
    connect(export_, &QPushButton::clicked, this, &ExportDialog::startExport);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
}

void ExportDialog::setOptions(bool onnx, bool int8, bool safetensors, int calibration, double max_drop_percent) {
    onnx_->setChecked(onnx);
    int8_->setChecked(int8);
    safetensors_->setChecked(safetensors);
    calibration_->setValue(calibration);
    max_drop_->setValue(max_drop_percent);
}

QString ExportDialog::status() const { return status_->text(); }

void ExportDialog::setStatus(const QString& text, bool error) {
    status_->setText(text);
    status_->setStyleSheet(error ? "color: #b3261e;" : QString());
}

void ExportDialog::startExport() {
    if (running_)
        return;
    running_ = true;
    export_->setEnabled(false);
    report_ = {};
    setStatus(tr("Fetching the newest checkpoint from the backend…"));
    const QString dir = out_dir_->text();
    const BackendRef ref = BackendRef::of(&backend_);
    const QString remote_id = job_.remote_id;
    run_in_background(this, [ref, remote_id, dir] {
        QString error = tr("the console is closing");
        const BackendRef::Use backend = ref.use();
        const QString path = backend ? backend->fetchCheckpoint(remote_id, dir + "/checkpoint", &error) : QString();
        return qMakePair(path, error);
    }, [this](const QPair<QString, QString>& fetched) {
        if (fetched.first.isEmpty()) {
            running_ = false;
            export_->setEnabled(true);
            setStatus(tr("No checkpoint to export: %1").arg(fetched.second), true);
            return;
        }
        runExporter(fetched.first);
    });
}

void ExportDialog::runExporter(const QString& checkpoint) {
    const QString dir = out_dir_->text();
    const QString spec_path = dir + "/spec.json";
    QSaveFile spec(spec_path);
    if (!spec.open(QIODevice::WriteOnly) ||
        spec.write(QJsonDocument(job_.request.value("builtin").toObject()).toJson()) < 0 || !spec.commit()) {
        running_ = false;
        export_->setEnabled(true);
        setStatus(tr("Cannot write %1: %2").arg(spec_path, spec.errorString()), true);
        return;
    }
    QStringList args = {"export", spec_path, "--checkpoint", checkpoint, "--out", dir, "--name", "model",
                        "--calibration", QString::number(calibration_->value()), "--max-drop", QString::number(max_drop_->value())};
    if (!job_.provenance.isEmpty())
        args << "--provenance" << QString::fromUtf8(QJsonDocument(job_.provenance).toJson(QJsonDocument::Compact));
    if (!onnx_->isChecked())
        args << "--no-onnx";
    if (!int8_->isChecked())
        args << "--no-int8";
    if (!safetensors_->isChecked())
        args << "--no-safetensors";
    process_ = new QProcess(this);
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    if (!job_.dataset_root.isEmpty())
        env.insert("TRAINDECK_DATASET_DIR", job_.dataset_root); // relative data paths resolve as on the worker
    process_->setProcessEnvironment(env);
    setStatus(tr("Exporting and evaluating (fp32, then int8 with %1 calibration samples)…").arg(calibration_->value()));
    connect(process_, &QProcess::finished, this, [this](int code, QProcess::ExitStatus status) {
        const QByteArray out = process_->readAllStandardOutput();
        const QString err = QString::fromUtf8(process_->readAllStandardError()).trimmed();
        process_->deleteLater();
        process_ = nullptr;
        running_ = false;
        export_->setEnabled(true);
        const QJsonObject report = QJsonDocument::fromJson(out.trimmed().split('\n').last()).object();
        if (status != QProcess::NormalExit || code != 0 || report.isEmpty()) {
            setStatus(tr("Export failed: %1").arg(err.isEmpty() ? tr("traindeck-train exited with %1").arg(code) : err), true);
            return;
        }
        showReport(report);
        emit exported(job_.id, report);
    });
    connect(process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError error) {
        if (error != QProcess::FailedToStart)
            return;
        running_ = false;
        export_->setEnabled(true);
        setStatus(tr("Cannot run %1: %2").arg(train_binary(), process_->errorString()), true);
    });
    process_->start(train_binary(), args);
}

void ExportDialog::showReport(const QJsonObject& report) {
    report_ = report;
    const QJsonArray artifacts = report.value("artifacts").toArray();
    files_->setRowCount(artifacts.size());
    for (int i = 0; i < artifacts.size(); ++i) {
        const QJsonObject a = artifacts[i].toObject();
        files_->setItem(i, 0, new QTableWidgetItem(a.value("kind").toString()));
        files_->setItem(i, 1, new QTableWidgetItem(formatBytes(a.value("bytes").toInteger())));
        files_->setItem(i, 2, new QTableWidgetItem(a.value("path").toString()));
    }
    files_->resizeColumnsToContents();
    const double val32 = report.value("val_accuracy_fp32").toDouble(), val8 = report.value("val_accuracy_int8").toDouble();
    const double test32 = report.value("test_accuracy_fp32").toDouble();
    const double test8 = report.value("test_accuracy_int8").toDouble();
    if (report.value("metric").toString() == "r2") {
        // A regression: R² of the predictions (1 is exact; 0 is no better than the mean), not an accuracy.
        auto r2 = [](double value) { return QString::number(value, 'f', 4); };
        QString text = tr("<table cellspacing=6><tr><th>R²</th><th>fp32</th><th>int8</th><th>change</th></tr>"
                          "<tr><td>validation (%1 samples)</td><td>%2</td><td>%3</td><td>%4</td></tr>"
                          "<tr><td>test (%5 samples)</td><td>%6</td><td>%7</td><td>%8</td></tr></table>")
                           .arg(report.value("val_samples").toInteger())
                           .arg(r2(val32), r2(val8), r2(val8 - val32))
                           .arg(report.value("test_samples").toInteger())
                           .arg(r2(test32), r2(test8), r2(test8 - test32));
        text += tr("int8 predictions differ from fp32 by %1 on average over the test set; checkpoint of step %2.")
                    .arg(report.value("int8_mean_difference").toDouble(), 0, 'g', 4)
                    .arg(report.value("step").toInteger());
        accuracy_->setText(text);
        warning_->setText(report.value("accuracy_warning").toBool()
                              ? tr("Warning: %1").arg(report.value("warning").toString())
                              : QString());
        setStatus(tr("Exported into %1").arg(out_dir_->text()));
        return;
    }
    QString text = tr("<table cellspacing=6><tr><th></th><th>fp32</th><th>int8</th><th>change</th></tr>"
                      "<tr><td>validation (%1 samples)</td><td>%2</td><td>%3</td><td>%4 points</td></tr>"
                      "<tr><td>test (%5 samples)</td><td>%6</td><td>%7</td><td>%8 points</td></tr></table>")
                       .arg(report.value("val_samples").toInteger())
                       .arg(percent(val32), percent(val8))
                       .arg(100 * (val8 - val32), 0, 'f', 2)
                       .arg(report.value("test_samples").toInteger())
                       .arg(percent(test32), percent(test8))
                       .arg(100 * (test8 - test32), 0, 'f', 2);
    text += tr("int8 and fp32 agree on %1 of test samples; checkpoint of step %2.")
                .arg(percent(report.value("int8_agreement").toDouble()))
                .arg(report.value("step").toInteger());
    accuracy_->setText(text);
    warning_->setText(report.value("accuracy_warning").toBool() ? tr("Warning: %1").arg(report.value("warning").toString()) : QString());
    setStatus(tr("Exported into %1").arg(out_dir_->text()));
}

} // namespace traindeck
