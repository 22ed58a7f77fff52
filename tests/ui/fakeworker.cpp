// FakeWorker (fakeworker.h): a minimal HTTP/1.1 server (keep-alive, Content-Length bodies; what libcurl sends) on
// a QTcpServer or QSslServer that lives on the FakeWorker's own thread.
#include "fakeworker.h"

#include <QFile>
#include <QPointer>
#include <QSslCertificate>
#include <QSslConfiguration>
#include <QSslKey>
#include <QSslSocket>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTimer>

namespace {

// HTTPS the classic way (a QSslSocket per accepted descriptor, encryption started at once): QSslServer of Qt 6.4
// hands over sockets that never report the request that follows the handshake.
class TlsServer : public QTcpServer {
public:
    TlsServer(const QSslConfiguration& config, QObject* parent) : QTcpServer(parent), config_(config) {}

protected:
    void incomingConnection(qintptr descriptor) override {
        auto* socket = new QSslSocket(this);
        if (!socket->setSocketDescriptor(descriptor)) {
            delete socket;
            return;
        }
        socket->setSslConfiguration(config_);
        socket->startServerEncryption();
        addPendingConnection(socket);
    }

private:
    QSslConfiguration config_;
};

} // namespace

class FakeWorkerServer : public QObject {
public:
    explicit FakeWorkerServer(FakeWorker& owner) : owner_(owner) {}

    QString listen(const QString& cert_file, const QString& key_file, quint16 port) {
        if (!cert_file.isEmpty()) {
            QFile cert(cert_file), key(key_file);
            if (!cert.open(QIODevice::ReadOnly) || !key.open(QIODevice::ReadOnly))
                return "cannot read " + cert_file + " or " + key_file;
            QSslConfiguration config = QSslConfiguration::defaultConfiguration();
            config.setLocalCertificate(QSslCertificate(cert.readAll(), QSsl::Pem));
            config.setPrivateKey(QSslKey(key.readAll(), QSsl::Rsa, QSsl::Pem));
            config.setPeerVerifyMode(QSslSocket::VerifyNone);
            server_ = new TlsServer(config, this);
        } else {
            server_ = new QTcpServer(this);
        }
        connect(server_, &QTcpServer::newConnection, this, &FakeWorkerServer::accept);
        if (!server_->listen(QHostAddress::LocalHost, port))
            return "cannot listen on 127.0.0.1:" + QString::number(port) + ": " + server_->errorString();
        return {};
    }
    quint16 port() const { return server_ ? server_->serverPort() : 0; }

private:
    void accept() {
        while (QTcpSocket* socket = server_->nextPendingConnection()) {
            socket->setParent(this);
            auto buffer = std::make_shared<QByteArray>();
            connect(socket, &QTcpSocket::readyRead, this, [this, socket, buffer] {
                buffer->append(socket->readAll());
                serve(socket, *buffer);
            });
            connect(socket, &QTcpSocket::disconnected, socket, &QObject::deleteLater);
            if (socket->bytesAvailable() > 0) {
                buffer->append(socket->readAll());
                serve(socket, *buffer);
            }
        }
    }

    // Takes every whole request out of buffer and answers it (after its delay).
    void serve(QTcpSocket* socket, QByteArray& buffer) {
        for (;;) {
            const qsizetype head_end = buffer.indexOf("\r\n\r\n");
            if (head_end < 0)
                return;
            FakeWorker::Request request;
            const QList<QByteArray> lines = buffer.left(head_end).split('\n');
            const QList<QByteArray> first = lines.value(0).trimmed().split(' ');
            request.method = first.value(0);
            const QByteArray target = first.value(1);
            const qsizetype question = target.indexOf('?');
            request.path = question < 0 ? target : target.left(question);
            request.query = question < 0 ? QByteArray() : target.mid(question + 1);
            qsizetype length = 0;
            for (qsizetype i = 1; i < lines.size(); ++i) {
                const qsizetype colon = lines[i].indexOf(':');
                if (colon < 0)
                    continue;
                const QByteArray name = lines[i].left(colon).trimmed().toLower();
                const QByteArray value = lines[i].mid(colon + 1).trimmed();
                request.headers.insert(name, value);
                if (name == "content-length")
                    length = value.toLongLong();
            }
            if (buffer.size() < head_end + 4 + length)
                return; // the body is still coming
            request.body = buffer.mid(head_end + 4, length);
            buffer.remove(0, head_end + 4 + length);
            const FakeWorker::Reply reply = owner_.reply_for(request);
            QPointer<QTcpSocket> target_socket(socket);
            auto send = [target_socket, reply] {
                if (!target_socket)
                    return;
                QByteArray out = "HTTP/1.1 " + QByteArray::number(reply.status) + " Fake\r\nContent-Type: " + reply.content_type +
                                 "\r\nContent-Length: " + QByteArray::number(reply.body.size()) + "\r\nConnection: keep-alive\r\n\r\n";
                out += reply.body;
                target_socket->write(out);
            };
            if (reply.delay_ms > 0)
                QTimer::singleShot(reply.delay_ms, socket, send);
            else
                send();
        }
    }

    FakeWorker& owner_;
    QTcpServer* server_ = nullptr;
};

FakeWorker::FakeWorker() { thread_.setObjectName("fake-worker"); }

FakeWorker::~FakeWorker() {
    if (server_)
        QMetaObject::invokeMethod(server_, [this] { delete server_; }, Qt::BlockingQueuedConnection);
    thread_.quit();
    thread_.wait();
}

QString FakeWorker::start(const QString& cert_file, const QString& key_file, quint16 port) {
    thread_.start();
    server_ = new FakeWorkerServer(*this);
    server_->moveToThread(&thread_);
    QString error;
    QMetaObject::invokeMethod(server_, [&] {
        error = server_->listen(cert_file, key_file, port);
        port_ = server_->port();
    }, Qt::BlockingQueuedConnection);
    tls_ = !cert_file.isEmpty();
    return error;
}

QString FakeWorker::url() const { return QStringLiteral("%1://127.0.0.1:%2").arg(tls_ ? "https" : "http").arg(port_); }

void FakeWorker::route(const QByteArray& method, const QByteArray& prefix, Handler handler) {
    QMutexLocker lock(&mutex_);
    routes_.emplaceBack(QPair<QByteArray, QByteArray>(method, prefix), std::move(handler));
}

FakeWorker::Reply FakeWorker::reply_for(const Request& request) {
    Handler handler;
    {
        QMutexLocker lock(&mutex_);
        requests_.push_back(request);
        qsizetype best = -1;
        // Later routes for the same prefix replace earlier ones: a test can change an answer midway.
        for (const auto& [key, candidate] : routes_)
            if ((key.first.isEmpty() || key.first == request.method) && request.path.startsWith(key.second) &&
                key.second.size() >= best) {
                best = key.second.size();
                handler = candidate;
            }
    }
    if (!handler)
        return {404, R"({"error":"no such endpoint on the fake worker"})"};
    return handler(request);
}

QList<FakeWorker::Request> FakeWorker::requests() const {
    QMutexLocker lock(&mutex_);
    return requests_;
}

int FakeWorker::count(const QByteArray& path_prefix) const {
    QMutexLocker lock(&mutex_);
    int n = 0;
    for (const Request& r : requests_)
        n += r.path.startsWith(path_prefix) ? 1 : 0;
    return n;
}

bool FakeWorker::sawHeaderValue(const QByteArray& needle) const {
    QMutexLocker lock(&mutex_);
    for (const Request& r : requests_)
        for (const QByteArray& value : r.headers)
            if (value.contains(needle))
                return true;
    return false;
}

bool FakeWorker::sawHeader(const QByteArray& lower_case_name) const {
    QMutexLocker lock(&mutex_);
    for (const Request& r : requests_)
        if (r.headers.contains(lower_case_name))
            return true;
    return false;
}
