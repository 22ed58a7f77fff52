// BackendManager (backendmanager.h): the questions and the alerts; BackendConnector does the connecting.
#include "backendmanager.h"

#include "mainwindow.h"

#include <QDialog>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLineEdit>
#include <QMessageBox>

namespace traindeck {

BackendManager::BackendManager(Catalog& catalog, CatalogWriter& writer, BackendFactory* worker_factory,
                               MainWindow& window)
    : QObject(&window), window_(window), connector_(catalog, writer, worker_factory) {
    connect(&window_, &MainWindow::addRemoteWorkerRequested, this, qOverload<>(&BackendManager::addRemote));
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
    connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    if (dialog.exec() != QDialog::Accepted)
        return;
    addRemote(name->text().trimmed(), url->text().trimmed(), token->text().trimmed());
}

void BackendManager::addRemote(const QString& name, const QString& url, const QString& token) {
    if (!connector_.canConnect()) {
        window_.addAlert(tr("The remote-worker plugin is not installed"));
        return;
    }
    if (name.isEmpty() || window_.backendNames().contains(name)) {
        window_.addAlert(tr("Give the worker a name not used yet"));
        return;
    }
    connector_.add(name, url, token);
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
