#pragma once
// A stand-in for a worker inside a console test: an HTTP or HTTPS server on 127.0.0.1 that answers what the test
// tells it (canned replies or a handler per path, each after an optional delay) and records every request it gets:
// method, path, query, headers and body. It plays the hostile worker (names like "../../x"), the slow one (answers
// after 10 s), the broken one (invalid UTF-8, 1e999) and the foreign program on a dead worker's port. It serves
// from its own thread, so nothing it does counts against the GUI thread whose responsiveness a test measures.
// Only test code: the console's own code is never replaced by it.
#include <QByteArray>
#include <QList>
#include <QMap>
#include <QMutex>
#include <QObject>
#include <QThread>

#include <functional>

class FakeWorkerServer;

class FakeWorker {
public:
    struct Request {
        QByteArray method, path, query, body;
        QMap<QByteArray, QByteArray> headers; // names in lower case
    };
    struct Reply {
        int status = 200;
        QByteArray body;
        int delay_ms = 0;
        QByteArray content_type = "application/json";
    };
    using Handler = std::function<Reply(const Request&)>;

    FakeWorker();
    ~FakeWorker();
    FakeWorker(const FakeWorker&) = delete;
    FakeWorker& operator=(const FakeWorker&) = delete;

    // Listens on 127.0.0.1 (port 0: any free one); HTTPS with the PEM certificate and key when given. "" or why not.
    QString start(const QString& cert_file = {}, const QString& key_file = {}, quint16 port = 0);
    quint16 port() const { return port_; }
    QString url() const;

    // Requests whose method matches (empty: any) and whose path starts with prefix get the handler's reply; the
    // longest matching prefix wins; anything else gets 404. Safe to call while serving.
    void route(const QByteArray& method, const QByteArray& prefix, Handler handler);
    void answer(const QByteArray& method, const QByteArray& prefix, const Reply& reply) {
        route(method, prefix, [reply](const Request&) { return reply; });
    }

    QList<Request> requests() const;
    int count(const QByteArray& path_prefix) const;
    // Whether any request carried a header whose value contains needle (e.g. a token), or a header by that name.
    bool sawHeaderValue(const QByteArray& needle) const;
    bool sawHeader(const QByteArray& lower_case_name) const;

private:
    friend class FakeWorkerServer;
    Reply reply_for(const Request& request);

    QThread thread_;
    FakeWorkerServer* server_ = nullptr;
    quint16 port_ = 0;
    bool tls_ = false;
    mutable QMutex mutex_;
    QList<Request> requests_;
    QList<std::pair<QPair<QByteArray, QByteArray>, Handler>> routes_;
};
