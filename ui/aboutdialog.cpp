#include "aboutdialog.h"

#include "libraryversion.h"

#include <QApplication>
#include <QClipboard>
#include <QDialogButtonBox>
#include <QHBoxLayout>
#include <QIcon>
#include <QLabel>
#include <QProcess>
#include <QPushButton>
#include <QVBoxLayout>

namespace traindeck {

AboutDialog::AboutDialog(QWidget* parent) : QDialog(parent) {
    setWindowTitle(tr("About TrainDeck"));
    auto* icon = new QLabel;
    icon->setPixmap(QApplication::windowIcon().pixmap(96, 96));
    icon->setAlignment(Qt::AlignTop);
    text_ = new QLabel;
    text_->setTextFormat(Qt::RichText);
    text_->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::TextSelectableByKeyboard);
    text_->setWordWrap(true);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
    QPushButton* copy = buttons->addButton(tr("Copy"), QDialogButtonBox::ActionRole);
    copy->setToolTip(tr("Copy the versions to the clipboard (for a bug report)"));
    connect(copy, &QPushButton::clicked, this, [this] { QApplication::clipboard()->setText(versions()); });
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* top = new QHBoxLayout;
    top->addWidget(icon);
    top->addWidget(text_, 1);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(top);
    layout->addWidget(buttons);

    // The engine is another program (the console does not link it): ask it, without waiting for it here.
    trainer_version_ = QStringLiteral("…");
    trainer_ = new QProcess(this);
    const QString binary =
        qEnvironmentVariable("TRAINDECK_TRAIN_BINARY", QCoreApplication::applicationDirPath() + "/traindeck-train");
    connect(trainer_, &QProcess::finished, this, [this] {
        const QString out = QString::fromUtf8(trainer_->readAllStandardOutput()).trimmed();
        trainer_version_ = out.isEmpty() ? tr("no answer from traindeck-train") : out;
        show_versions();
        emit trainerAnswered();
    });
    connect(trainer_, &QProcess::errorOccurred, this, [this, binary](QProcess::ProcessError error) {
        if (error != QProcess::FailedToStart)
            return; // finished follows
        trainer_version_ = tr("%1 could not be started: %2").arg(binary, trainer_->errorString());
        show_versions();
        emit trainerAnswered();
    });
    trainer_->start(binary, {QStringLiteral("--version")});
    show_versions();
}

AboutDialog::~AboutDialog() {
    // The QProcess (a child) ends the trainer after this body, when the labels are gone: its finished must not reach
    // show_versions() then.
    trainer_->disconnect(this);
}

QString AboutDialog::versions() const {
    return tr("TrainDeck %1\nQt %2 (built against %3)\nSQLite %4\nTrainer: %5")
        .arg(QApplication::applicationVersion(), QString::fromLatin1(qVersion()), QStringLiteral(QT_VERSION_STR),
             QString::fromStdString(sqlite_library_version()), trainer_version_);
}

void AboutDialog::show_versions() {
    QString trainer = trainer_version_.toHtmlEscaped();
    trainer.replace(QLatin1Char('\n'), QStringLiteral("<br>"));
    text_->setText(
        tr("<h2>TrainDeck %1</h2><p>Train models on this machine, on remote workers and on Slurm, and watch every "
           "run live.</p><table><tr><td>Qt</td><td>%2 (built against %3)</td></tr><tr><td>SQLite</td><td>%4</td></tr>"
           "<tr><td valign=top>Trainer&nbsp;</td><td>%5</td></tr></table>")
            .arg(QApplication::applicationVersion().toHtmlEscaped(), QString::fromLatin1(qVersion()),
                 QStringLiteral(QT_VERSION_STR), QString::fromStdString(sqlite_library_version()), trainer));
}

} // namespace traindeck
