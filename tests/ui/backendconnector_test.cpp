// BackendConnector (ui/backendconnector.h) without a window: a new worker is probed and the user asked before its
// token goes; a declined key leaves nothing connected; a probe still under way when the connector goes is deleted
// when it ends; a worker the catalog's CA already vouches for is connected and kept. A temp catalog, a fake plugin.
#include "backendconnector.h"

#include "fakebackend.h"
#include "tokenstore.h"
#include "unittest.h"

#include <gtest/gtest.h>

#include <QTemporaryDir>

#include <memory>

using namespace traindeck;
using namespace traindeck::test;

namespace {

class FakeFactory : public BackendFactory {
public:
    Gate* gate = nullptr;
    bool needs_trust = true;
    QStringList plan; // an SSH host's install commands, until installed
    QString kind() const override { return QStringLiteral("worker"); }
    Backend* create(QObject* parent) override {
        auto* backend = new FakeBackend;
        backend->setParent(parent);
        backend->gate = gate;
        backend->needs_trust_without_pin = needs_trust;
        backend->plan_until_installed = plan;
        last = backend;
        return backend;
    }
    FakeBackend* last = nullptr;
};

struct TempCatalog {
    QTemporaryDir dir;
    Catalog catalog;
    std::unique_ptr<CatalogWriter> writer;
    TempCatalog() {
        EXPECT_EQ(catalog.open(dir.filePath("catalog.db").toStdString()), "");
        writer = std::make_unique<CatalogWriter>(catalog);
    }
};

} // namespace

TEST(BackendConnector, ANewWorkerIsProbedAndADeclinedKeyConnectsNothing) {
    TempCatalog temp;
    FakeFactory factory;
    const int alive_before = FakeBackend::alive();
    BackendConnector connector(temp.catalog, *temp.writer, &factory);
    QString asked_name, asked_url, asked_key, failure;
    int connected = 0;
    QObject::connect(&connector, &BackendConnector::trustNeeded,
                     [&](const QString& name, const QString& url, const QString& key) {
                         asked_name = name;
                         asked_url = url;
                         asked_key = key;
                     });
    QObject::connect(&connector, &BackendConnector::connected, [&] { ++connected; });
    QObject::connect(&connector, &BackendConnector::failed, [&](const QString& message) { failure = message; });

    connector.add("box", "https://box.example:7878", "s3cret");
    ASSERT_TRUE(process_until([&] { return !asked_key.isEmpty(); }));
    EXPECT_EQ(asked_name, "box");
    EXPECT_EQ(asked_url, "https://box.example:7878");
    EXPECT_EQ(asked_key, "KEY");
    EXPECT_EQ(FakeBackend::alive(), alive_before); // the probe learned the key and went

    connector.distrust("box");
    EXPECT_EQ(failure, "Worker “box” not added: its key was not trusted, and its token was not sent");
    EXPECT_EQ(connected, 0);
    // A second answer for the same question does nothing.
    failure.clear();
    connector.distrust("box");
    connector.trust("box");
    EXPECT_EQ(failure, "");
}

TEST(BackendConnector, AProbeStillUnderWayWhenTheConnectorGoesIsDeletedWhenItEnds) {
    TempCatalog temp;
    Gate gate;
    FakeFactory factory;
    factory.gate = &gate;
    const int alive_before = FakeBackend::alive();
    auto connector = std::make_unique<BackendConnector>(temp.catalog, *temp.writer, &factory);
    bool asked = false;
    QObject::connect(connector.get(), &BackendConnector::trustNeeded, [&] { asked = true; });
    connector->add("box", "https://box.example:7878", "s3cret");
    ASSERT_TRUE(process_until([&] { return factory.last && factory.last->opened > 0; }));
    EXPECT_EQ(FakeBackend::alive(), alive_before + 1);
    connector.reset(); // the window closed while open() waits on the network
    gate.open();
    ASSERT_TRUE(process_until([&] { return FakeBackend::alive() == alive_before; }));
    EXPECT_FALSE(asked);
}

TEST(BackendConnector, AWorkerThatNeedsNoTrustIsConnectedKeptAndLetGoWithTheConnector) {
    TempCatalog temp;
    FakeFactory factory;
    factory.needs_trust = false; // its CA file vouches for it
    const int alive_before = FakeBackend::alive();
    auto connector = std::make_unique<BackendConnector>(temp.catalog, *temp.writer, &factory);
    QString connected_name, failure;
    Backend* connected_backend = nullptr;
    QObject::connect(connector.get(), &BackendConnector::connected,
                     [&](const QString& name, JobSync& sync, Backend& backend) {
                         connected_name = name;
                         connected_backend = &backend;
                         EXPECT_EQ(sync.backendName(), name);
                     });
    QObject::connect(connector.get(), &BackendConnector::failed, [&](const QString& message) { failure = message; });
    connector->add("box", "https://box.example:7878", "s3cret");
    // The token goes to the keyring first; without one (CI) the worker is refused with the keyring's reason.
    ASSERT_TRUE(process_until([&] { return !connected_name.isEmpty() || !failure.isEmpty(); }));
    if (connected_name.isEmpty()) {
        EXPECT_TRUE(failure.startsWith("Worker “box” not added: ")) << failure.toStdString();
        EXPECT_EQ(FakeBackend::alive(), alive_before);
        return;
    }
    QString error;
    TokenStore::remove("box", &error); // the test's token leaves the keyring it went to
    EXPECT_EQ(connected_name, "box");
    EXPECT_EQ(connected_backend, factory.last);
    EXPECT_EQ(FakeBackend::alive(), alive_before + 1);
    temp.writer->flush();
    ASSERT_EQ(temp.catalog.backends().size(), 1u);
    EXPECT_EQ(temp.catalog.backends().front().pinned_public_key, "KEY");
    connector.reset();
    EXPECT_EQ(FakeBackend::alive(), alive_before);
}

TEST(BackendConnector, AnSshHostAsksBeforeInstallingAndKeepsItsTokenInTheKeyring) {
    TempCatalog temp;
    FakeFactory ssh;
    ssh.needs_trust = false; // ssh verified the host against known_hosts: no key question
    ssh.plan = {"'ssh' 'gpu-box' ... < '/usr/bin/traindeck-worker'"};
    const int alive_before = FakeBackend::alive();
    BackendConnector connector(temp.catalog, *temp.writer, nullptr);
    connector.setSshFactory(&ssh);
    EXPECT_TRUE(connector.canConnectSsh());
    QString asked_name, asked_url, asked_facts, failure, connected_name;
    QStringList asked_commands;
    QObject::connect(&connector, &BackendConnector::installNeeded,
                     [&](const QString& name, const QString& url, const QString& facts, const QStringList& commands) {
                         asked_name = name;
                         asked_url = url;
                         asked_facts = facts;
                         asked_commands = commands;
                     });
    QObject::connect(&connector, &BackendConnector::failed, [&](const QString& message) { failure = message; });
    QObject::connect(&connector, &BackendConnector::connected,
                     [&](const QString& name, JobSync&, Backend&) { connected_name = name; });
    // Without consent: the question, with what the host has and the exact commands; the probe is let go, nothing kept.
    connector.addSsh("lab", "ssh://gpu-box", false);
    ASSERT_TRUE(process_until([&] { return !asked_name.isEmpty() || !failure.isEmpty(); }));
    EXPECT_EQ(failure, QString());
    EXPECT_EQ(asked_url, "ssh://gpu-box");
    EXPECT_EQ(asked_facts, "Debian 12, 4 CPUs");
    EXPECT_EQ(asked_commands, ssh.plan);
    EXPECT_EQ(FakeBackend::alive(), alive_before);
    temp.writer->flush();
    EXPECT_TRUE(temp.catalog.backends().empty());
    // Consented: connected, its token (read over ssh) to the keyring before the host is kept as kind "ssh"; without
    // a keyring (CI) it is refused with the keyring's reason and nothing is kept.
    connector.addSsh("lab", "ssh://gpu-box", true);
    ASSERT_TRUE(process_until([&] { return !connected_name.isEmpty() || !failure.isEmpty(); }));
    temp.writer->flush();
    if (connected_name.isEmpty()) {
        EXPECT_TRUE(failure.startsWith("SSH host “lab” not added: ")) << failure.toStdString();
        EXPECT_TRUE(temp.catalog.backends().empty());
        EXPECT_EQ(FakeBackend::alive(), alive_before);
        return;
    }
    QString token, error;
    EXPECT_TRUE(TokenStore::load("lab", &token, &error));
    EXPECT_EQ(token, "read-over-ssh");
    TokenStore::remove("lab", &error);
    ASSERT_EQ(temp.catalog.backends().size(), 1u);
    EXPECT_EQ(temp.catalog.backends().front().kind, "ssh");
    EXPECT_EQ(temp.catalog.backends().front().url, "ssh://gpu-box");
}

// Remove backend…: a worker's row goes (and its token is asked out of the keyring); a provider that still rents a live
// instance is refused and kept, and goes once that instance is deleted.
TEST(BackendConnector, RemoveForgetsABackendButNotAProviderThatStillRents) {
    TempCatalog temp;
    FakeFactory factory;
    BackendConnector connector(temp.catalog, *temp.writer, &factory);
    Catalog::InstanceRow instance;
    instance.provider = "aws";
    instance.name = "td-1";
    instance.state = "ready";
    temp.writer->post([instance](Catalog& catalog) {
        catalog.add_backend({"box", "worker", "https://box.example:7878", "KEY"});
        catalog.add_backend({"aws", "cloud", "/etc/aws.json", ""});
        catalog.record_instance(instance);
    });
    ASSERT_EQ(temp.writer->flush(), "");
    QStringList removed;
    QString failure;
    QObject::connect(&connector, &BackendConnector::removed,
                     [&](const QString& name, const QString&) { removed << name; });
    QObject::connect(&connector, &BackendConnector::failed, [&](const QString& message) { failure = message; });
    const auto names = [&] {
        EXPECT_EQ(temp.writer->flush(), "");
        QStringList listed;
        for (const Catalog::BackendRow& row : temp.catalog.backends())
            listed << QString::fromStdString(row.name);
        listed.sort();
        return listed;
    };
    connector.remove("aws");
    ASSERT_TRUE(process_until([&] { return !failure.isEmpty(); }));
    EXPECT_EQ(failure, "“aws” not removed: it still rents 1 instance(s); release them first (Rented instances, "
                       "Release now)");
    EXPECT_EQ(names(), (QStringList{"aws", "box"}));
    connector.remove("box");
    ASSERT_TRUE(process_until([&] { return removed.size() == 1; }));
    EXPECT_EQ(removed, QStringList{"box"});
    EXPECT_EQ(names(), QStringList{"aws"});
    instance.state = "deleted";
    temp.writer->post([instance](Catalog& catalog) { catalog.record_instance(instance); });
    connector.remove("aws");
    ASSERT_TRUE(process_until([&] { return removed.size() == 2; }));
    EXPECT_EQ(names(), QStringList{});
}

TEST(BackendConnector, WithoutThePluginNothingIsTried) {
    TempCatalog temp;
    BackendConnector connector(temp.catalog, *temp.writer, nullptr);
    EXPECT_FALSE(connector.canConnect());
    QString failure;
    QObject::connect(&connector, &BackendConnector::failed, [&](const QString& message) { failure = message; });
    connector.add("box", "https://box.example:7878", "s3cret");
    EXPECT_EQ(failure, "The remote-worker plugin is not installed");
}
