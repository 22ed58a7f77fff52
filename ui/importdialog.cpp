// ImportDialog (importdialog.h): only shows; RunImporter reads on its own pool thread and writes through the
// catalog's writer.
#include "importdialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QTime>
#include <QVBoxLayout>

namespace traindeck {

namespace {

// Paths separated by ";" in the field (a folder may hold spaces).
QStringList split_paths(const QString& text) {
    QStringList paths;
    for (const QString& part : text.split(QLatin1Char(';'), Qt::SkipEmptyParts))
        if (!part.trimmed().isEmpty())
            paths << part.trimmed();
    return paths;
}

} // namespace

ImportDialog::ImportDialog(CatalogWriter& writer, QWidget* parent) : QDialog(parent), importer_(writer) {
    setWindowTitle(tr("Import runs"));
    paths_ = new QLineEdit;
    paths_->setPlaceholderText(tr("A TensorBoard logdir, an mlruns folder, a wandb folder, or metric files (.csv, "
                                  ".jsonl); several separated by ;"));
    paths_->setAccessibleName(tr("Paths to import"));
    auto* folder = new QPushButton(tr("Folder…"));
    auto* files = new QPushButton(tr("Files…"));
    auto* path_row = new QHBoxLayout;
    path_row->addWidget(paths_, 1);
    path_row->addWidget(folder);
    path_row->addWidget(files);
    format_ = new QComboBox;
    format_->addItem(tr("Detect from the files"), QString());
    format_->addItem(tr("TensorBoard event files"), "tensorboard");
    format_->addItem(tr("MLflow file store (mlruns)"), "mlflow");
    format_->addItem(tr("W&B offline runs"), "wandb");
    format_->addItem(tr("CSV metric table"), "csv");
    format_->addItem(tr("JSONL metric lines"), "jsonl");
    format_->setAccessibleName(tr("Format"));
    deleted_ = new QCheckBox(tr("Also runs deleted in MLflow"));
    follow_ = new QCheckBox(tr("Keep following: import what is written there as it is written (live)"));
    auto* form = new QFormLayout;
    form->addRow(tr("Import"), path_row);
    form->addRow(tr("Format"), format_);
    form->addRow(QString(), deleted_);
    form->addRow(QString(), follow_);

    bar_ = new QProgressBar;
    bar_->setRange(0, 1);
    bar_->setValue(0);
    bar_->setFormat(tr("%v of %m runs"));
    status_ = new QLabel(tr("Nothing is written into the source folders; importing again adds only what they gained."));
    status_->setWordWrap(true);
    summary_ = new QPlainTextEdit;
    summary_->setReadOnly(true);
    summary_->setAccessibleName(tr("Import summary"));
    summary_->setPlaceholderText(tr("What was imported, and any damage found, shows here."));
    import_ = new QPushButton(tr("Import"));
    import_->setDefault(true);
    cancel_ = new QPushButton(tr("Cancel import"));
    cancel_->setEnabled(false);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
    buttons->addButton(import_, QDialogButtonBox::ActionRole);
    buttons->addButton(cancel_, QDialogButtonBox::ActionRole);

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(bar_);
    layout->addWidget(status_);
    layout->addWidget(summary_, 1);
    layout->addWidget(buttons);
    resize(720, 460);

    connect(folder, &QPushButton::clicked, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Import runs from"));
        if (!dir.isEmpty())
            setPaths({dir});
    });
    connect(files, &QPushButton::clicked, this, [this] {
        const QStringList chosen = QFileDialog::getOpenFileNames(
            this, tr("Import runs from"), QString(),
            tr("Run files (events.out.tfevents.* *.wandb *.csv *.tsv *.jsonl *.ndjson *.json);;All files (*)"));
        if (!chosen.isEmpty())
            setPaths(chosen);
    });
    connect(import_, &QPushButton::clicked, this, &ImportDialog::startImport);
    connect(cancel_, &QPushButton::clicked, this, [this] {
        importer_.cancel();
        cancel_->setEnabled(false);
        status_->setText(tr("Cancelling after the run being written…"));
    });
    connect(buttons, &QDialogButtonBox::rejected, this, &ImportDialog::reject);
    connect(&importer_, &RunImporter::progress, this, [this](const RunImporter::Progress& progress) {
        bar_->setRange(0, std::max(progress.runs_total, 1));
        bar_->setValue(progress.runs_done);
        const QLocale locale;
        for (const QString& line : progress.lines)
            summary_->appendPlainText(line);
        if (progress.following) {
            cancel_->setText(tr("Stop following"));
            status_->setText(tr("Following %1 — %2 points imported; last look %3")
                                 .arg(progress.current, locale.toString(progress.points),
                                      QTime::currentTime().toString("HH:mm:ss")));
        } else {
            status_->setText(tr("%1 — %2 points, %3 points/s")
                                 .arg(progress.current, locale.toString(progress.points),
                                      locale.toString(qRound64(progress.points_per_second))));
        }
        if (!progress.changed.isEmpty())
            emit imported(progress.changed);
    });
    connect(&importer_, &RunImporter::finished, this, &ImportDialog::finish);
}

void ImportDialog::setPaths(const QStringList& paths) { paths_->setText(paths.join(QStringLiteral("; "))); }

QString ImportDialog::status() const { return status_->text(); }

QString ImportDialog::summaryText() const { return summary_->toPlainText(); }

void ImportDialog::startImport() {
    const QStringList paths = split_paths(paths_->text());
    if (paths.isEmpty()) {
        status_->setText(tr("Choose a folder or files to import first."));
        return;
    }
    if (!importer_.start(paths, format_->currentData().toString(), deleted_->isChecked(), follow_->isChecked()))
        return;
    cancel_->setText(tr("Cancel import"));
    import_->setEnabled(false);
    cancel_->setEnabled(true);
    bar_->setRange(0, 0); // busy until the first run is read
    summary_->clear();
    status_->setText(tr("Reading %1…").arg(paths.join(QStringLiteral(", "))));
}

void ImportDialog::finish(const RunImporter::Summary& summary) {
    import_->setEnabled(true);
    cancel_->setEnabled(false);
    bar_->setRange(0, std::max(1, static_cast<int>(summary.jobs.size()) + summary.runs_failed));
    bar_->setValue(static_cast<int>(summary.jobs.size()));
    status_->setText(summary.text());
    summary_->setPlainText(summary.lines.join(QLatin1Char('\n')));
    if (!summary.jobs.isEmpty())
        emit imported(summary.jobs);
}

void ImportDialog::setFollow(bool follow) { follow_->setChecked(follow); }

void ImportDialog::stop() { importer_.cancel(); }

void ImportDialog::reject() {
    importer_.cancel(); // what is imported stays; the run being written finishes first
    QDialog::reject();
}

} // namespace traindeck
