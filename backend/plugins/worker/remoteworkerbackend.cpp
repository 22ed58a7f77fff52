// The remote-worker plugin: trust on first use, then HTTPS with the pinned key (remoteworkerbackend.h).
#include "remoteworkerbackend.h"

#include <QUrl>

namespace traindeck {

bool RemoteWorkerBackend::open(const QVariantMap& settings, QString* error) {
    const QUrl url(settings.value("url").toString());
    if (!url.isValid() || url.scheme() != "https" || url.host().isEmpty()) {
        if (error)
            *error = tr("a remote worker needs an https://host:port address (got “%1”)").arg(settings.value("url").toString());
        return false;
    }
    const std::string base = url.toString(QUrl::RemovePath | QUrl::StripTrailingSlash).toStdString();
    const std::string token = settings.value("token").toString().toStdString();
    const std::string ca_file = settings.value("ca_file").toString().toStdString();
    std::string pin = settings.value("pinned_public_key").toString().toStdString();
    set_key({}, false);
    if (pin.empty() && ca_file.empty()) {
        // First use: learn the key without the token (the probe carries no Authorization header).
        client::WorkerClient probe(base, std::string());
        std::string why;
        pin = probe.fetch_public_key_pin(why);
        if (pin.empty()) {
            if (error)
                *error = QString::fromStdString(why);
            return false;
        }
        set_key(QString::fromStdString(pin), true);
        if (error)
            *error = tr("the key of the worker at %1 is not trusted yet (%2): compare it with the fingerprint printed on "
                        "that machine and connect again with it pinned; no token was sent")
                         .arg(url.authority(), QString::fromStdString(pin));
        return false;
    }
    set_key(QString::fromStdString(pin), false);
    set_endpoint(base, token, pin, ca_file, tr("worker %1").arg(url.authority()));
    const auto health = call("GET", "/v1/health");
    if (!health.ok()) {
        if (error)
            *error = health.status == 401 ? tr("the worker refused the token") : QString::fromStdString(health.message());
        return false;
    }
    return true;
}

} // namespace traindeck
