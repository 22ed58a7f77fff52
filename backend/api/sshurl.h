#pragma once
// How the catalog keeps an SSH host (the "ssh" plugin's "url" setting): ssh://[user@]host[:port], with the optional
// ?config= (ssh -F), &state_dir= and &worker= (the worker's folder and program on the host). The console's dialog,
// traindeck-cli and the plugin all write it here.
#include <QString>
#include <QUrl>
#include <QUrlQuery>

namespace traindeck {

inline QString ssh_url(const QString& destination, const QString& ssh_config = {}, const QString& state_dir = {},
                       const QString& worker_path = {}) {
    QString url = destination.startsWith("ssh://") ? destination : "ssh://" + destination;
    QUrlQuery query;
    if (!ssh_config.isEmpty())
        query.addQueryItem("config", ssh_config);
    if (!state_dir.isEmpty())
        query.addQueryItem("state_dir", state_dir);
    if (!worker_path.isEmpty())
        query.addQueryItem("worker", worker_path);
    if (!query.isEmpty())
        url += "?" + query.toString(QUrl::FullyEncoded);
    return url;
}

} // namespace traindeck
