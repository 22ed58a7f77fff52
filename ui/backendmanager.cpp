#include "backendmanager.h"

#include "jobsync.h"
#include "mainwindow.h"
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
    connect(&window_, &MainWindow::addRemoteWorkerRequested, this, &BackendManager::addRemote);
}

BackendManager::~BackendManager() {
    syncs_.clear();
    for (Backend* backend : backends_)
        delete backend;
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
                                     false);
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
    if (name->text().trimmed().isEmpty() || window_.backendNames().contains(name->text().trimmed())) {
        window_.addAlert(tr("Give the worker a name not used yet"));
        return;
    }
    connectBackend(name->text().trimmed(), {{"url", url->text().trimmed()}, {"token", token->text().trimmed()}}, true);
}

void BackendManager::connectBackend(const QString& name, const QVariantMap& settings, bool first_time) {
    Backend* backend = factory_->create(nullptr);
    QPointer<BackendManager> self(this);
    (void)QtConcurrent::run([self, backend, settings, name, first_time] {
        QString error;
        const bool ok = backend->open(settings, &error);
        QMetaObject::invokeMethod(self, [self, backend, settings, name, first_time, ok, error] {
            if (!self) {
                delete backend;
                return;
            }
            if (!ok) {
                self->window_.addAlert(tr("Cannot connect to worker “%1”: %2").arg(name, error));
                delete backend;
                return;
            }
            if (first_time) {
                const QString pin = backend->property("pinned_public_key").toString();
                const auto answer = QMessageBox::question(
                    &self->window_, tr("Trust this worker?"),
                    tr("The worker at %1 presents this key:\n\n%2\n\nCompare it with the fingerprint printed on that "
                       "machine. Trust it from now on?").arg(settings.value("url").toString(), pin));
                if (answer != QMessageBox::Yes) {
                    delete backend;
                    return;
                }
                QString keyring_error;
                if (!TokenStore::save(name, settings.value("token").toString(), &keyring_error)) {
                    self->window_.addAlert(tr("Worker “%1” not added: %2").arg(name, keyring_error));
                    delete backend;
                    return;
                }
                Catalog::BackendRow row{name.toStdString(), "worker", settings.value("url").toString().toStdString(),
                                        pin.toStdString()};
                self->writer_.post([row](Catalog& catalog) { catalog.add_backend(row); });
            }
            self->attach(name, backend);
        }, Qt::QueuedConnection);
    });
}

void BackendManager::attach(const QString& name, Backend* backend) {
    backends_.push_back(backend);
    syncs_.push_back(std::make_unique<JobSync>(catalog_, writer_, *backend, name));
    window_.addBackend(name, *syncs_.back(), *backend);
    syncs_.back()->resumeWatching();
}

} // namespace traindeck
