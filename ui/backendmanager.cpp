// BackendManager (backendmanager.h): the token leaves the console only towards a key the user accepted.
#include "backendmanager.h"

#include "backendref.h"
#include "jobsync.h"
#include "mainwindow.h"
#include "networkpool.h"
#include "tokenstore.h"

#include <QDialog>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLineEdit>
#include <QMessageBox>
#include <QPointer>
#include <QtConcurrent>

namespace traindeck {

BackendManager::BackendManager(Catalog& catalog, CatalogWriter& writer, BackendFactory* worker_factory, MainWindow& window)
    : QObject(&window), catalog_(catalog), writer_(writer), factory_(worker_factory), window_(window) {
    connect(&window_, &MainWindow::addRemoteWorkerRequested, this, qOverload<>(&BackendManager::addRemote));
}

BackendManager::~BackendManager() {
    syncs_.clear();
    for (Backend* backend : backends_) {
        BackendRef::retire(backend); // its requests end; no task calls it after this
        delete backend;
    }
}

void BackendManager::restore() {
    QPointer<BackendManager> self(this);
    writer_.post([self](Catalog& catalog) {
        const auto rows = catalog.backends();
        QMetaObject::invokeMethod(self, [self, rows] {
            if (!self)
                return;
            for (const auto& row : rows) {
                if (row.kind != "worker")
                    continue;
                const QString name = QString::fromStdString(row.name);
                QString token, error;
                if (!TokenStore::load(name, &token, &error)) {
                    self->window_.addAlert(tr("Worker “%1” not connected: %2").arg(name, error));
                    continue;
                }
                self->connectBackend(name, {{"url", QString::fromStdString(row.url)}, {"token", token},
                                            {"pinned_public_key", QString::fromStdString(row.pinned_public_key)}},
                                     Step::Restore);
            }
        }, Qt::QueuedConnection);
    });
}

void BackendManager::addRemote() {
    if (!factory_) {
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
    if (!factory_) {
        window_.addAlert(tr("The remote-worker plugin is not installed"));
        return;
    }
    if (name.isEmpty() || window_.backendNames().contains(name)) {
        window_.addAlert(tr("Give the worker a name not used yet"));
        return;
    }
    connectBackend(name, {{"url", url}, {"token", token}}, Step::FirstUse);
}

void BackendManager::connectBackend(const QString& name, const QVariantMap& settings, Step step) {
    Backend* backend = factory_->create(nullptr);
    QPointer<BackendManager> self(this);
    (void)QtConcurrent::run(networkPool(), [self, backend, settings, name, step] {
        QString error;
        const bool ok = backend->open(settings, &error);
        QMetaObject::invokeMethod(self, [self, backend, settings, name, step, ok, error] {
            if (!self) {
                delete backend;
                return;
            }
            if (!ok && step == Step::FirstUse && backend->keyNeedsTrust()) {
                self->askTrust(name, settings, backend);
                return;
            }
            if (!ok) {
                self->window_.addAlert(tr("Cannot connect to worker “%1”: %2").arg(name, error));
                delete backend;
                return;
            }
            if (step != Step::Restore) {
                // Trusted now (or through its CA file): remember it, its pin in the catalog, its token in the keyring.
                if (step == Step::FirstUse) {
                    QString keyring_error;
                    if (!TokenStore::save(name, settings.value("token").toString(), &keyring_error)) {
                        self->window_.addAlert(tr("Worker “%1” not added: %2").arg(name, keyring_error));
                        delete backend;
                        return;
                    }
                }
                Catalog::BackendRow row{name.toStdString(), "worker", settings.value("url").toString().toStdString(),
                                        backend->pinnedKey().toStdString()};
                self->writer_.post([row](Catalog& catalog) { catalog.add_backend(row); });
            }
            self->attach(name, backend);
        }, Qt::QueuedConnection);
    });
}

void BackendManager::askTrust(const QString& name, const QVariantMap& settings, Backend* probe) {
    const QString pin = probe->pinnedKey();
    delete probe; // it learned the key and sent nothing else
    const auto answer = QMessageBox::question(
        &window_, tr("Trust this worker?"),
        tr("The worker at %1 presents this key:\n\n%2\n\nCompare it with the fingerprint printed on that machine. Trust "
           "it from now on? Its token is sent only if you do.").arg(settings.value("url").toString(), pin));
    if (answer != QMessageBox::Yes) {
        window_.addAlert(tr("Worker “%1” not added: its key was not trusted, and its token was not sent").arg(name));
        return;
    }
    // The token is kept before it is first sent: a worker is never left connected with a token the console
    // cannot find again at its next start.
    QString keyring_error;
    if (!TokenStore::save(name, settings.value("token").toString(), &keyring_error)) {
        window_.addAlert(tr("Worker “%1” not added: %2").arg(name, keyring_error));
        return;
    }
    QVariantMap pinned = settings;
    pinned["pinned_public_key"] = pin; // from now on only this key: a different server is refused before the token goes
    connectBackend(name, pinned, Step::Trusted);
}

void BackendManager::attach(const QString& name, Backend* backend) {
    backends_.push_back(backend);
    syncs_.push_back(std::make_unique<JobSync>(catalog_, writer_, *backend, name));
    window_.addBackend(name, *syncs_.back(), *backend);
    syncs_.back()->resumeWatching();
}

} // namespace traindeck
