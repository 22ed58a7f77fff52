#include "tokenstore.h"

#include <qt6keychain/keychain.h>

#include <QEventLoop>

namespace traindeck {

namespace {

// Runs a keychain job to completion; QtKeychain jobs are asynchronous and report through finished().
bool run(QKeychain::Job& job, QString* error) {
    job.setAutoDelete(false);
    job.setInsecureFallback(false);
    QEventLoop loop;
    QObject::connect(&job, &QKeychain::Job::finished, &loop, &QEventLoop::quit);
    job.start();
    loop.exec();
    if (job.error() == QKeychain::NoError)
        return true;
    if (error) {
        if (job.error() == QKeychain::EntryNotFound)
            *error = QObject::tr("no token stored in the system keyring for this backend");
        else
            *error = QObject::tr("the system keyring is not usable (%1); start one (GNOME Keyring or KWallet) to store "
                                 "worker tokens — TrainDeck will not keep them in plain text")
                         .arg(job.errorString());
    }
    return false;
}

} // namespace

bool TokenStore::save(const QString& backend, const QString& token, QString* error) {
    QKeychain::WritePasswordJob job(kService);
    job.setKey(backend);
    job.setTextData(token);
    return run(job, error);
}

bool TokenStore::load(const QString& backend, QString* token, QString* error) {
    QKeychain::ReadPasswordJob job(kService);
    job.setKey(backend);
    if (!run(job, error))
        return false;
    *token = job.textData();
    return true;
}

bool TokenStore::remove(const QString& backend, QString* error) {
    QKeychain::DeletePasswordJob job(kService);
    job.setKey(backend);
    if (run(job, error))
        return true;
    // No token to remove is what removing wants: not an error.
    if (job.error() != QKeychain::EntryNotFound)
        return false;
    if (error)
        error->clear();
    return true;
}

} // namespace traindeck
