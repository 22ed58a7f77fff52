#pragma once
// The TEST provider's cloud for the tests (test-cloud-provider.sh beside this file): a folder of "instances", each a
// real sshd on a loopback port; the key they accept; a provider file pointing at the script; a real catalog whose
// instance ledger the provider writes. Shared by provider_test.cpp and the console's scenario.
#include "catalog.h"
#include "catalogledger.h"
#include "providerbackend.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTcpSocket>
#include <QTemporaryDir>

#include <memory>

#include <unistd.h>

namespace traindeck::testcloud {

inline const char* const kFashionMnist = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";
inline const QString kScript = QStringLiteral(TRAINDECK_SOURCE_DIR "/tests/ui/testcloud/test-cloud-provider.sh");

inline bool write_file(const QString& path, const QByteArray& bytes) {
    QFile file(path);
    return file.open(QIODevice::WriteOnly) && file.write(bytes) == bytes.size();
}

inline QByteArray read_all(const QString& path) {
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

// A small MLP on Fashion-MNIST that pauses after `hold` until `release` exists (TRAINDECK_HOLD_AT).
inline QJsonObject held_job(const QString& release, int hold = 5) {
    QJsonObject spec{{"model", "mlp"},   {"data", QJsonObject{{"dataset", "fashion-mnist"}, {"limit", 1000}}},
                     {"batch_size", 64}, {"epochs", 1},
                     {"seed", 3},        {"checkpoint_every", 5}};
    return {{"name", "elastic"},
            {"builtin", spec},
            {"resources", QJsonObject{{"cpus", 1}}},
            {"env", QJsonObject{{"TRAINDECK_HOLD_AT", QString("%1:%2").arg(hold).arg(release)}}}};
}

// One test cloud: its folder, the key its instances accept, the provider file, a catalog whose ledger it writes.
struct TestCloud {
    QTemporaryDir temp;
    QString dir = temp.path(), cloud = dir + "/cloud", file = dir + "/provider.json";
    std::unique_ptr<Catalog> catalog;
    std::unique_ptr<CatalogWriter> writer;
    std::unique_ptr<CatalogInstanceLedger> ledger;

    ~TestCloud() {
        // Every instance still up (a failed test) ends as a cloud's would: its sshd, its worker and jobs.
        for (const QString& name : QDir(cloud).entryList(QDir::Dirs | QDir::NoDotAndDotDot))
            if (!QFile::exists(cloud + "/" + name + "/deleted"))
                QProcess::execute("bash", {kScript, cloud, "delete", name});
        ledger.reset();
        writer.reset();
    }
    QString start(const QString& types, const QString& limits) {
        QDir().mkpath(cloud);
        if (QProcess::execute("ssh-keygen", {"-q", "-t", "ed25519", "-N", "", "-f", dir + "/userkey"}) != 0)
            return "ssh-keygen failed";
        QFile::copy(dir + "/userkey.pub", cloud + "/authorized_keys");
        catalog = std::make_unique<Catalog>();
        if (const std::string e = catalog->open((dir + "/catalog.db").toStdString()); !e.empty())
            return QString::fromStdString(e);
        writer = std::make_unique<CatalogWriter>(*catalog);
        ledger = std::make_unique<CatalogInstanceLedger>(*writer);
        write_file(cloud + "/ledger", (dir + "/catalog.db").toUtf8()); // create checks the record came first
        const QString user = qEnvironmentVariable("USER", ::getuid() == 0 ? "root" : "");
        auto command = [&](const QStringList& words) {
            QJsonArray argv{"bash", kScript, cloud};
            for (const QString& word : words)
                argv.append(word);
            return argv;
        };
        QJsonObject config{{"label", "tdtest"},
                           {"create", command({"create", "{name}", "{type}", "{label}"})},
                           {"list", command({"list", "{label}"})},
                           {"address", command({"address", "{id}"})},
                           {"delete", command({"delete", "{id}"})},
                           {"ssh", QJsonObject{{"user", user},
                                               {"options", QJsonArray{"IdentityFile=" + dir + "/userkey",
                                                                      QString("IdentitiesOnly=yes")}}}},
                           {"types", QJsonDocument::fromJson(types.toUtf8()).array()}};
        const QJsonObject more = QJsonDocument::fromJson(limits.toUtf8()).object();
        for (auto it = more.begin(); it != more.end(); ++it)
            config[it.key()] = it.value();
        write_file(file, QJsonDocument(config).toJson());
        return {};
    }
    // A provider backend as the console makes one (more: other settings, e.g. the command line's "wait").
    std::unique_ptr<ProviderBackend> open(QString* error, const QVariantMap& more = {}) {
        auto backend = std::make_unique<ProviderBackend>();
        backend->setInstanceLedger(ledger.get());
        QVariantMap settings{{"config", file},
                             {"name", "testcloud"},
                             {"state_dir", dir + "/console"},
                             {"worker_binary", TRAINDECK_WORKER_BINARY},
                             {"train_binary", TRAINDECK_TRAIN_BINARY}};
        settings.insert(more);
        const bool ok = backend->open(settings, error);
        return ok ? std::move(backend) : nullptr;
    }
    QList<RentedInstance> recorded() {
        QString error;
        return ledger->instances("testcloud", &error);
    }
    RentedInstance recorded(const QString& name) {
        for (const RentedInstance& r : recorded())
            if (r.name == name)
                return r;
        return {};
    }
    int calls(const QString& verb) {
        int n = 0;
        for (const QByteArray& line : read_all(cloud + "/calls").split('\n'))
            n += line.startsWith(verb.toUtf8() + ' ') ? 1 : 0;
        return n;
    }
    bool instance_answers(const QString& name) {
        QTcpSocket socket;
        socket.connectToHost("127.0.0.1",
                             static_cast<quint16>(read_all(cloud + "/" + name + "/port").trimmed().toInt()));
        return socket.waitForConnected(2000);
    }
};

} // namespace traindeck::testcloud
