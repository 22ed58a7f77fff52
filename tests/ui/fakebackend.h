#pragma once
// A Backend for the console's unit tests: no worker, no network. It answers from what the test set, records what it
// was asked, and can hold open() until the test lets it go (a probe that is still under way).
#include "backend.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QStringList>

#include <atomic>
#include <condition_variable>
#include <mutex>

namespace traindeck::test {

// Lets a pool thread wait until the test opens it.
class Gate {
public:
    void open() {
        std::lock_guard lock(mutex_);
        open_ = true;
        opened_.notify_all();
    }
    void wait() {
        std::unique_lock lock(mutex_);
        opened_.wait(lock, [this] { return open_; });
    }

private:
    std::mutex mutex_;
    std::condition_variable opened_;
    bool open_ = false;
};

class FakeBackend : public Backend {
public:
    // Counts the fakes alive, so that a test sees a probe deleted.
    static std::atomic<int>& alive() {
        static std::atomic<int> count{0};
        return count;
    }
    FakeBackend() { ++alive(); }
    ~FakeBackend() override { --alive(); }

    // open(): held at `gate` when one is given; a server whose key is "KEY" and not yet pinned needs trust.
    Gate* gate = nullptr;
    bool needs_trust_without_pin = false;
    // An SSH host without a worker: open() without settings["install"] stops, with these commands to show.
    QStringList plan_until_installed;
    std::atomic<int> opened{0};
    bool open(const QVariantMap& settings, QString* error) override {
        ++opened;
        if (gate)
            gate->wait();
        plan_ = settings.value("install").toBool() ? QStringList() : plan_until_installed;
        if (!plan_.isEmpty()) {
            *error = QStringLiteral("the host has no traindeck-worker");
            return false;
        }
        pin_ = QStringLiteral("KEY");
        trust_ = needs_trust_without_pin && settings.value("pinned_public_key").toString() != pin_;
        if (trust_) {
            *error = QStringLiteral("the server's key is not trusted yet");
            return false;
        }
        return true;
    }
    QString describe() const override { return QStringLiteral("fake"); }

    std::mutex mutex;
    QStringList submitted, cancelled, resumed, uploaded, removed; // guarded by mutex: pool threads call these
    QString submit(const QJsonObject& request, QString*) override {
        std::lock_guard lock(mutex);
        submitted << request.value("name").toString();
        return QStringLiteral("remote-%1").arg(submitted.size());
    }
    bool cancel(const QString& remote_id, QString*) override {
        std::lock_guard lock(mutex);
        cancelled << remote_id;
        return true;
    }
    bool resume(const QString& remote_id, double, QString*) override {
        std::lock_guard lock(mutex);
        resumed << remote_id;
        return true;
    }
    bool removeJob(const QString& remote_id, qint64* freed, QString*) override {
        std::lock_guard lock(mutex);
        removed << remote_id;
        *freed = 0;
        return true;
    }
    QString createSweep(const QJsonObject&, QString* error) override {
        *error = QStringLiteral("the fake runs no sweeps");
        return {};
    }
    QJsonObject sweeps(QString*) override { return QJsonObject{{"sweeps", QJsonArray()}}; }
    QJsonObject sweep(const QString&, QString* error) override {
        *error = QStringLiteral("no such sweep");
        return {};
    }
    bool sweepAction(const QString&, const QString&, const QJsonObject&, QString* error) override {
        *error = QStringLiteral("no such sweep");
        return false;
    }
    QJsonObject resources(QString*) override { return QJsonObject{{"cpus", 1}}; }
    bool uploadDataset(const QString& root, const QByteArray&,
                       const std::function<void(qint64, qint64, double)>& progress, QString*) override {
        if (progress)
            progress(1, 1, 0.1);
        std::lock_guard lock(mutex);
        uploaded << root;
        return true;
    }
    QString fetchCheckpoint(const QString&, const QString&, QString* error) override {
        *error = QStringLiteral("no checkpoint");
        return {};
    }
    void watch(const QString&, qint64) override {}
    QString pinnedKey() const override { return pin_; }
    bool keyNeedsTrust() const override { return trust_; }
    QString learnedToken() const override { return plan_until_installed.isEmpty() ? QString() : "read-over-ssh"; }
    QString hostFacts() const override { return plan_until_installed.isEmpty() ? QString() : "Debian 12, 4 CPUs"; }
    QStringList installPlan() const override { return plan_; }

private:
    QStringList plan_;
    QString pin_;
    bool trust_ = false;
};

} // namespace traindeck::test
