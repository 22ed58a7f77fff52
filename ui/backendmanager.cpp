// BackendManager (backendmanager.h): the questions and the alerts; BackendConnector does the connecting.
#include "backendmanager.h"

#include "background.h"
#include "mainwindow.h"
#include "sshurl.h"

#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPointer>
#include <QPushButton>
#include <QRegularExpression>
#include <QStatusBar>

#include <functional>

namespace traindeck {

namespace {

// The host names of an ssh config file (its "Host" lines, patterns left out), for the dialog's list. Runs off the GUI
// thread: it reads a file.
QStringList ssh_config_hosts(const QString& path) {
    QFile file(path);
    QStringList hosts;
    if (!file.open(QIODevice::ReadOnly))
        return hosts;
    static const QRegularExpression host_line(QStringLiteral("^\\s*Host\\s+(.*)$"),
                                              QRegularExpression::CaseInsensitiveOption);
    while (!file.atEnd() && hosts.size() < 500) {
        const QRegularExpressionMatch match = host_line.match(QString::fromUtf8(file.readLine()).trimmed());
        if (!match.hasMatch())
            continue;
        for (const QString& name : match.captured(1).split(' ', Qt::SkipEmptyParts))
            if (!name.contains('*') && !name.contains('?') && !name.startsWith('!') && !hosts.contains(name))
                hosts << name;
    }
    return hosts;
}

// OK closes the dialog only once `problem_of` has nothing to say; until then its answer shows in the dialog, above
// the buttons, and what was typed stays (an error after the dialog closed would lose it).
void accept_when_valid(QDialog& dialog, QFormLayout* form, QDialogButtonBox* buttons,
                       const std::function<QString()>& problem_of) {
    auto* problem = new QLabel;
    problem->setWordWrap(true);
    problem->setStyleSheet(QStringLiteral("color: #b3261e"));
    problem->setAccessibleName(QObject::tr("Problem"));
    problem->hide();
    form->insertRow(form->rowCount() - 1, problem);
    QObject::connect(buttons, &QDialogButtonBox::accepted, &dialog, [&dialog, problem, problem_of] {
        const QString why = problem_of();
        problem->setText(why);
        problem->setVisible(!why.isEmpty());
        if (why.isEmpty())
            dialog.accept();
    });
    QObject::connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
}

} // namespace

BackendManager::BackendManager(Catalog& catalog, CatalogWriter& writer, BackendFactory* worker_factory,
                               MainWindow& window, BackendFactory* ssh_factory, BackendFactory* cloud_factory)
    : QObject(&window), window_(window), connector_(catalog, writer, worker_factory) {
    connector_.setSshFactory(ssh_factory);
    connector_.setCloudFactory(cloud_factory);
    connect(&window_, &MainWindow::addCloudProviderRequested, this, &BackendManager::addCloudProvider);
    connect(&window_, &MainWindow::addRemoteWorkerRequested, this, qOverload<>(&BackendManager::addRemote));
    connect(&window_, &MainWindow::removeBackendRequested, this, &BackendManager::askRemove);
    connect(&connector_, &BackendConnector::removed, &window_, &MainWindow::backendRemoved);
    connect(&window_, &MainWindow::addSshHostRequested, this, &BackendManager::addSshHost);
    connect(&connector_, &BackendConnector::installNeeded, this, &BackendManager::askInstall);
    connect(&connector_, &BackendConnector::connected, this,
            [this](const QString& name, JobSync& sync, Backend& backend) { window_.addBackend(name, sync, backend); });
    connect(&connector_, &BackendConnector::failed, &window_, &MainWindow::addAlert);
    connect(&connector_, &BackendConnector::trustNeeded, this, &BackendManager::askTrust);
}

// The connector (a member) disconnects every worker as it goes, after this.
BackendManager::~BackendManager() = default;

void BackendManager::restore() { connector_.restore(); }

void BackendManager::addRemote() {
    if (!connector_.canConnect()) {
        window_.addAlert(tr("The remote-worker plugin is not installed"));
        return;
    }
    QDialog dialog(&window_);
    dialog.setWindowTitle(tr("Add remote worker"));
    auto* name = new QLineEdit;
    name->setPlaceholderText(tr("gpu-box"));
    auto* url = new QLineEdit;
    url->setPlaceholderText(tr("https://gpu-box.example:7878"));
    auto* token = new QLineEdit;
    token->setEchoMode(QLineEdit::Password);
    token->setPlaceholderText(tr("printed by traindeck-worker at its first start"));
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    auto* form = new QFormLayout(&dialog);
    form->addRow(tr("Name"), name);
    form->addRow(tr("Address"), url);
    form->addRow(tr("Token"), token);
    form->addRow(buttons);
    accept_when_valid(dialog, form, buttons, [this, name, url] {
        if (!nameFree(name->text()))
            return tr("Give the worker a name not used yet");
        return url->text().trimmed().isEmpty() ? tr("Give the worker's address, such as https://gpu-box:7878")
                                               : QString();
    });
    if (dialog.exec() != QDialog::Accepted)
        return;
    addRemote(name->text().trimmed(), url->text().trimmed(), token->text().trimmed());
}

bool BackendManager::nameFree(const QString& name) const {
    const QString trimmed = name.trimmed();
    return !trimmed.isEmpty() && !window_.controller().find(trimmed);
}

void BackendManager::askRemove(const QString& name) {
    QMessageBox box(QMessageBox::Question, tr("Remove “%1”?").arg(name),
                    tr("TrainDeck forgets “%1”: its runs stay in the catalog with their curves, its token leaves the "
                       "keyring, and it is not connected at the next start (until then it stays connected).")
                        .arg(name),
                    QMessageBox::Cancel, &window_);
    box.addButton(tr("Remove"), QMessageBox::DestructiveRole);
    box.setDefaultButton(QMessageBox::Cancel);
    if (box.exec() == QMessageBox::Cancel)
        return;
    remove(name);
}

void BackendManager::remove(const QString& name) { connector_.remove(name); }

void BackendManager::addRemote(const QString& name, const QString& url, const QString& token) {
    if (!connector_.canConnect()) {
        window_.addAlert(tr("The remote-worker plugin is not installed"));
        return;
    }
    if (!nameFree(name)) {
        window_.addAlert(tr("Give the worker a name not used yet"));
        return;
    }
    connector_.add(name, url, token);
}

void BackendManager::addSshHost() {
    if (!connector_.canConnectSsh()) {
        window_.addAlert(tr("The SSH-host plugin is not installed"));
        return;
    }
    QDialog dialog(&window_);
    dialog.setWindowTitle(tr("Add SSH host"));
    auto* name = new QLineEdit;
    name->setPlaceholderText(tr("lab-server"));
    auto* host = new QComboBox;
    host->setEditable(true);
    host->lineEdit()->setPlaceholderText(tr("user@host[:port], or a Host of ~/.ssh/config"));
    host->setMinimumWidth(320);
    auto* config = new QLineEdit;
    config->setPlaceholderText(tr("~/.ssh/config"));
    auto* state = new QLineEdit;
    state->setPlaceholderText(tr("~/.local/share/traindeck/worker"));
    auto* note = new QLabel(tr("TrainDeck runs your own ssh (its agent, keys and known hosts). The worker listens only "
                               "on the host's loopback and is reached through an ssh forward: no certificate, no open "
                               "port. Nothing is installed there without asking you first."));
    note->setWordWrap(true);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Connect"));
    auto* form = new QFormLayout(&dialog);
    form->addRow(tr("Name"), name);
    form->addRow(tr("Host"), host);
    form->addRow(tr("SSH config"), config);
    form->addRow(tr("Worker folder there"), state);
    form->addRow(note);
    form->addRow(buttons);
    // The name follows the host until the user types one.
    connect(host, &QComboBox::currentTextChanged, name, [name](const QString& text) {
        if (!name->isModified())
            name->setText(QString(text).section('@', -1).section(':', 0, 0).section('/', -1));
    });
    accept_when_valid(dialog, form, buttons, [this, name, host] {
        if (host->currentText().trimmed().isEmpty())
            return tr("Give the SSH host's address or its name in ~/.ssh/config");
        return !nameFree(name->text()) ? tr("Give the SSH host a name not used yet") : QString();
    });
    QPointer<QComboBox> hosts(host);
    run_in_background(
        &dialog, [] { return ssh_config_hosts(QDir::homePath() + "/.ssh/config"); },
        [hosts](const QStringList& names) {
            if (hosts && hosts->count() == 0) {
                const QString typed = hosts->currentText();
                hosts->addItems(names);
                hosts->setCurrentText(typed);
            }
        });
    if (dialog.exec() != QDialog::Accepted)
        return;
    const QString destination = host->currentText().trimmed(); // not empty: accept_when_valid
    QString config_path = config->text().trimmed();
    if (config_path.startsWith("~/"))
        config_path = QDir::homePath() + config_path.mid(1);
    addSsh(name->text().trimmed(), ssh_url(destination, config_path, state->text().trimmed()));
}

void BackendManager::addSsh(const QString& name, const QString& url) {
    if (!nameFree(name)) {
        window_.addAlert(tr("Give the SSH host a name not used yet"));
        return;
    }
    window_.statusBar()->showMessage(tr("Connecting to %1 over ssh…").arg(name), 5000);
    connector_.addSsh(name, url, false);
}

void BackendManager::addCloudProvider() {
    if (!connector_.canConnectCloud()) {
        window_.addAlert(tr("The cloud-provider plugin is not installed"));
        return;
    }
    QDialog dialog(&window_);
    dialog.setWindowTitle(tr("Add cloud provider"));
    auto* name = new QLineEdit;
    name->setPlaceholderText(tr("aws-gpu"));
    auto* file = new QLineEdit;
    file->setPlaceholderText(tr("a provider file: your cloud's CLI commands, instance types, prices and limits"));
    file->setMinimumWidth(360);
    auto* browse = new QPushButton(tr("Choose…"));
    auto* file_row = new QHBoxLayout;
    file_row->addWidget(file, 1);
    file_row->addWidget(browse);
    auto* note = new QLabel(tr("An instance is rented when a job needs one (within the file's maximum count and hourly "
                               "spend ceiling), reached over your own ssh, and deleted once its queue has been empty "
                               "for the file's idle time. Every instance is recorded before it is created, and a "
                               "restart deletes strays that carry the file's label. README.md has examples for AWS "
                               "and Google Cloud."));
    note->setWordWrap(true);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Add"));
    auto* form = new QFormLayout(&dialog);
    form->addRow(tr("Name"), name);
    form->addRow(tr("Provider file"), file_row);
    form->addRow(note);
    form->addRow(buttons);
    connect(browse, &QPushButton::clicked, &dialog, [&dialog, file, name] {
        const QString chosen = QFileDialog::getOpenFileName(&dialog, tr("Provider file"), QDir::homePath(),
                                                            tr("Provider files (*.json);;All files (*)"));
        if (chosen.isEmpty())
            return;
        file->setText(chosen);
        if (!name->isModified())
            name->setText(QFileInfo(chosen).completeBaseName());
    });
    accept_when_valid(dialog, form, buttons, [this, name, file] {
        if (!nameFree(name->text()))
            return tr("Give the provider a name not used yet");
        if (file->text().trimmed().isEmpty())
            return tr("Choose the provider's file");
        return QFileInfo(file->text().trimmed()).isFile() ? QString()
                                                          : tr("%1 is not a file").arg(file->text().trimmed());
    });
    if (dialog.exec() != QDialog::Accepted)
        return;
    addCloud(name->text().trimmed(), file->text().trimmed());
}

void BackendManager::addCloud(const QString& name, const QString& file) {
    if (!nameFree(name)) {
        window_.addAlert(tr("Give the provider a name not used yet"));
        return;
    }
    if (file.isEmpty()) {
        window_.addAlert(tr("Choose the provider's file"));
        return;
    }
    window_.statusBar()->showMessage(tr("Opening provider %1 (listing its instances)…").arg(name), 5000);
    connector_.addCloud(name, QFileInfo(file).absoluteFilePath());
}

void BackendManager::askInstall(const QString& name, const QString& url, const QString& facts,
                                const QStringList& commands) {
    QMessageBox box(QMessageBox::Question, tr("Install the TrainDeck worker on %1?").arg(name),
                    tr("%1 (%2) has no TrainDeck worker of this version.\n\nTrainDeck can copy this build's worker "
                       "and trainer into ~/.local/lib/traindeck/bin there, with the commands under Show Details, "
                       "then start it. Install and connect?")
                        .arg(name, facts),
                    QMessageBox::Cancel, &window_);
    QPushButton* install = box.addButton(tr("Install and connect"), QMessageBox::AcceptRole);
    box.setTextFormat(Qt::PlainText); // the facts are the host's words: never rich text it could shape
    box.setDetailedText(commands.join("\n\n"));
    box.exec();
    if (box.clickedButton() == install)
        connector_.addSsh(name, url, true);
    else
        window_.addAlert(tr("SSH host “%1” not added: nothing was installed").arg(name));
}

void BackendManager::askTrust(const QString& name, const QString& url, const QString& key) {
    const auto answer = QMessageBox::question(&window_, tr("Trust this worker?"),
                                              tr("The worker at %1 presents this key:\n\n%2\n\nCompare it with the "
                                                 "fingerprint printed on that machine. Trust "
                                                 "it from now on? Its token is sent only if you do.")
                                                  .arg(url, key));
    if (answer == QMessageBox::Yes)
        connector_.trust(name);
    else
        connector_.distrust(name);
}

} // namespace traindeck
