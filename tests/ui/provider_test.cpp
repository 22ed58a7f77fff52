// An elastic provider (ProviderBackend) end to end against the TEST provider of testcloud/test-cloud-provider.sh:
// its "instances" are real sshd servers on loopback ports, each with a home of its own, created and deleted by the
// provider file's commands as a cloud's CLI would. Jobs are real built-in training runs on the worker installed and
// started on each instance over ssh; the ledger is the console's real catalog file. Each private slot is its own
// CTest entry; the timings the issue asks for are printed as "timing:" lines.
#include "catalog.h"
#include "catalogledger.h"
#include "datasetsync.h"
#include "jobcontroller.h"
#include "jobmigrator.h"
#include "jobsync.h"
#include "jobtablemodel.h"
#include "providerbackend.h"
#include "reaper.h"
#include "sshhost.h"
#include "testcloud/testcloud.h"
#include "qtrequire.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QTcpSocket>

#include <memory>

#include <unistd.h>

using namespace traindeck;
using namespace traindeck::testcloud;

namespace {

// What one job's events said, in order, as they arrived (on this thread).
struct JobEvents {
    QStringList states;
    qint64 last_seq = 0;
    int records = 0;
    bool finished = false;
    QElapsedTimer clock;
    qint64 running_ms = -1, finished_ms = -1;

    void attach(ProviderBackend& backend, const QString& remote, QObject* context) {
        QObject::connect(
            &backend, &Backend::eventsArrived, context,
            [this, remote](const QString& id, const QByteArray& events, bool done) {
                if (id != remote)
                    return;
                const QJsonArray batch = QJsonDocument::fromJson(events).array();
                for (const auto& event : batch) {
                    const QJsonObject e = event.toObject();
                    const qint64 seq = e.value("seq").toInteger();
                    if (seq <= last_seq)
                        continue;
                    last_seq = seq;
                    ++records;
                    if (e.value("type").toString() != "state")
                        continue;
                    const QJsonValue data = e.value("data");
                    const QJsonObject object =
                        data.isObject() ? data.toObject() : QJsonDocument::fromJson(data.toString().toUtf8()).object();
                    states << object.value("state").toString();
                    if (states.last() == "running" && running_ms < 0)
                        running_ms = clock.elapsed();
                }
                if (done && !finished) {
                    finished = true;
                    finished_ms = clock.elapsed();
                }
            },
            Qt::QueuedConnection);
    }
};

} // namespace

// Each scenario's first line.
#define REQUIRE_TEST_CLOUD()                                                                                           \
    TRAINDECK_REQUIRE(QFile::exists("/usr/sbin/sshd") && ::getuid() == 0 &&                                            \
                          !QStandardPaths::findExecutable("ssh").isEmpty() && QFile::exists(kFashionMnist),            \
                      "the test cloud needs root for sshd, OpenSSH and dataset-fashion-mnist (bash "                   \
                      "installer/install-deps.sh --tests)")

class ProviderTest : public QObject {
    Q_OBJECT
private slots:
    void rentsAnInstanceRunsTheJobAndReleasesItWhenIdle();
    void anInstanceThatDoesNotBootIsDeletedAndTheJobRunsOnAnotherType();
    void aRestartReconcilesTheLedgerWithTheCloud();
    void aVanishedSpotInstanceHasItsJobMovedToANewOne();
    void aJobWaitsForItsInstanceThroughACancelAndARestart();
    void aJobNoInstanceBootsForEndsFailedWithTheReason();
    void aKilledConsolesSshForwardsAreEndedAtTheNextStart();
    void aBrokenProviderFileIsRefusedWithTheKeyNamed();
    void theReadmeExamplesAreProviderFilesThatParse();
};

void ProviderTest::rentsAnInstanceRunsTheJobAndReleasesItWhenIdle() {
    REQUIRE_TEST_CLOUD();
    TestCloud cloud;
    QVERIFY(cloud.temp.isValid());
    // One type at 0.50/h under a ceiling of 0.80/h: a second instance would pass it. Idle time 3 s.
    const QString started = cloud.start(R"([{"name": "cpu-small", "cpus": 2, "price_per_hour": 0.5}])",
                                        R"({"max_instances": 3, "max_spend_per_hour": 0.8, "idle_minutes": 0.05})");
    QVERIFY2(started.isEmpty(), qPrintable(started));
    QString error;
    auto backend = cloud.open(&error);
    QVERIFY2(backend, qPrintable(error));
    QVERIFY(backend->instances().isEmpty());
    QCOMPARE(cloud.calls("list"), 1); // open() reconciled with the cloud first

    const QString release = cloud.dir + "/release";
    JobEvents job;
    job.clock.start();
    const QString remote = backend->submit(held_job(release), &error);
    const qint64 submit_ms = job.clock.elapsed();
    QVERIFY2(!remote.isEmpty(), qPrintable(error));
    // No instance could take it: it is placed (its instance reserved at once, rented on the provider's thread).
    QVERIFY2(remote.startsWith("p-"), qPrintable(remote));
    QCOMPARE(backend->instances().size(), 1);
    job.attach(*backend, remote, this);
    backend->watch(remote, 0);
    QTRY_VERIFY_WITH_TIMEOUT(job.running_ms >= 0, 60000);
    qInfo("timing: submit to running on a fresh instance %lld ms (submit() returned after %lld ms; then create, ssh, "
          "install, start)",
          job.running_ms, submit_ms);
    QCOMPARE(cloud.calls("create"), 1); // and its ledger check passed: the record came before the create
    const QList<RentedInstance> live = backend->instances();
    QCOMPARE(live.size(), 1);
    const RentedInstance& instance = live.first();
    QVERIFY(backend->placement(remote).startsWith(instance.name + "/"));
    QCOMPARE(instance.state, QString("ready"));
    QCOMPARE(cloud.recorded(instance.name).state, QString("ready"));
    QVERIFY(cloud.recorded(instance.name)
                .address.endsWith("127.0.0.1:" + read_all(cloud.cloud + "/" + instance.name + "/port").trimmed()));
    QVERIFY(QFile::exists(cloud.cloud + "/" + instance.name + "/home/.local/lib/traindeck/bin/traindeck-worker"));

    // While it runs, a second job needs a second instance: 0.50 + 0.50 = 1.00/h is over the 0.80 ceiling.
    const QString refused = backend->submit(held_job(release), &error);
    QVERIFY(refused.isEmpty());
    QVERIFY2(error.contains("ceiling") && error.contains("max_spend_per_hour") && error.contains("1.00"),
             qPrintable(error));
    QCOMPARE(cloud.calls("create"), 1); // nothing was rented
    QCOMPARE(cloud.recorded().size(), 1);
    const QJsonObject resources = backend->resources(&error);
    QCOMPARE(resources.value("instances").toArray().size(), 1);
    QCOMPARE(resources.value("spend_per_hour").toDouble(), 0.5);

    // Released, the job ends; after 3 s of an empty queue the instance is deleted, in the cloud and the ledger.
    QVERIFY(write_file(release, "go\n"));
    QTRY_VERIFY_WITH_TIMEOUT(job.finished, 120000);
    QCOMPARE(job.states.last(), QString("succeeded"));
    QVERIFY(job.records > 10);
    QElapsedTimer empty;
    empty.start();
    QTRY_VERIFY_WITH_TIMEOUT(backend->instances().isEmpty(), 60000);
    const qint64 deleted_ms = empty.elapsed();
    qInfo("timing: queue empty to instance deleted %lld ms (idle time 3000 ms)", deleted_ms);
    QVERIFY(deleted_ms >= 2000); // not before its idle time
    const RentedInstance gone = cloud.recorded(instance.name);
    QCOMPARE(gone.state, QString("deleted"));
    QVERIFY2(gone.reason.contains("empty"), qPrintable(gone.reason));
    QVERIFY(gone.ended > gone.created && gone.cost() > 0);
    QCOMPARE(cloud.calls("delete"), 1);
    QVERIFY(QFile::exists(cloud.cloud + "/" + instance.name + "/deleted"));
    QVERIFY(!cloud.instance_answers(instance.name));
}

void ProviderTest::anInstanceThatDoesNotBootIsDeletedAndTheJobRunsOnAnotherType() {
    REQUIRE_TEST_CLOUD();
    TestCloud cloud;
    QVERIFY(cloud.temp.isValid());
    // The cheapest type never answers; the boot timeout is 4 s.
    const QString started = cloud.start(R"([{"name": "unbootable-tiny", "cpus": 2, "price_per_hour": 0.1},
                        {"name": "cpu-small", "cpus": 2, "price_per_hour": 0.5}])",
                                        R"({"max_instances": 2, "boot_timeout_minutes": 0.0667, "idle_minutes": 5})");
    QVERIFY2(started.isEmpty(), qPrintable(started));
    QString error;
    auto backend = cloud.open(&error);
    QVERIFY2(backend, qPrintable(error));
    QJsonObject request = held_job(cloud.dir + "/release", 1);
    request["elastic"] = QJsonObject{{"release_after_job", true}};
    QVERIFY(write_file(cloud.dir + "/release", "go\n")); // not held: it runs to its end
    JobEvents job;
    job.clock.start();
    const QString remote = backend->submit(request, &error);
    QVERIFY2(!remote.isEmpty(), qPrintable(error));
    job.attach(*backend, remote, this);
    backend->watch(remote, 0);
    QTRY_VERIFY_WITH_TIMEOUT(job.finished, 120000);
    QCOMPARE(job.states.last(), QString("succeeded"));
    QCOMPARE(cloud.calls("create"), 2);
    const QList<RentedInstance> all = cloud.recorded();
    QCOMPARE(all.size(), 2);
    QCOMPARE(all[0].type, QString("unbootable-tiny"));
    QCOMPARE(all[0].state, QString("deleted"));
    QVERIFY2(all[0].reason.contains("not reached within"), qPrintable(all[0].reason));
    QVERIFY(QFile::exists(cloud.cloud + "/" + all[0].name + "/deleted"));
    QCOMPARE(all[1].type, QString("cpu-small"));
    QVERIFY(backend->placement(remote).startsWith(all[1].name + "/"));
    qInfo("timing: submit to running %lld ms, with a 4 s boot timeout spent on the type that never booted",
          job.running_ms);
    // Its job asked for the instance to go once done: no 5-minute idle wait.
    QElapsedTimer empty;
    empty.start();
    QTRY_VERIFY_WITH_TIMEOUT(backend->instances().isEmpty(), 30000);
    qInfo("timing: job finished to instance deleted %lld ms (release_after_job)", empty.elapsed());
    QCOMPARE(cloud.recorded(all[1].name).state, QString("deleted"));
    QVERIFY2(cloud.recorded(all[1].name).reason.contains("asked"), qPrintable(cloud.recorded(all[1].name).reason));
}

void ProviderTest::aRestartReconcilesTheLedgerWithTheCloud() {
    REQUIRE_TEST_CLOUD();
    TestCloud cloud;
    QVERIFY(cloud.temp.isValid());
    const QString started = cloud.start(R"([{"name": "cpu-small", "cpus": 2, "price_per_hour": 0.5}])",
                                        R"({"max_instances": 1, "idle_minutes": 0.05})");
    QVERIFY2(started.isEmpty(), qPrintable(started));
    QString error;
    const QString release = cloud.dir + "/release";
    QString remote, kept;
    qint64 seen = 0;
    {
        auto backend = cloud.open(&error);
        QVERIFY2(backend, qPrintable(error));
        JobEvents job;
        job.clock.start();
        remote = backend->submit(held_job(release, 8), &error);
        QVERIFY2(!remote.isEmpty(), qPrintable(error));
        kept = backend->instances().first().name;
        job.attach(*backend, remote, this);
        backend->watch(remote, 0);
        QTRY_VERIFY_WITH_TIMEOUT(job.records >= 8, 60000);
        seen = job.last_seq;
        // Its one instance is busy and the file allows one: a second job is refused, nothing rented.
        QVERIFY(backend->submit(held_job(release, 8), &error).isEmpty());
        QVERIFY2(error.contains("max_instances") && error.contains("maximum"), qPrintable(error));
        QCOMPARE(cloud.calls("create"), 1);
    } // the console closes; the instance and its held job go on
    QVERIFY(cloud.instance_answers(kept));
    // While it is away: a stray with the label appears (a console killed between create and record), and an instance
    // the ledger holds as ready is gone from the cloud (deleted from its web page).
    qputenv("TEST_CLOUD_SKIP_LEDGER", "1");
    QCOMPARE(QProcess::execute("bash", {kScript, cloud.cloud, "create", "td-tdtest-stray", "cpu-small", "tdtest"}), 0);
    qunsetenv("TEST_CLOUD_SKIP_LEDGER");
    RentedInstance vanished;
    vanished.provider = "testcloud";
    vanished.name = vanished.id = "td-tdtest-vanished";
    vanished.type = "cpu-small";
    vanished.state = "ready";
    vanished.price_per_hour = 0.5;
    vanished.created = QDateTime::currentSecsSinceEpoch() - 60;
    QVERIFY(cloud.ledger->record(vanished, &error));

    auto backend = cloud.open(&error);
    QVERIFY2(backend, qPrintable(error));
    const RentedInstance stray = cloud.recorded("td-tdtest-stray");
    QCOMPARE(stray.state, QString("deleted"));
    QVERIFY2(stray.reason.contains("stray"), qPrintable(stray.reason));
    QVERIFY(QFile::exists(cloud.cloud + "/td-tdtest-stray/deleted"));
    QCOMPARE(cloud.recorded("td-tdtest-vanished").state, QString("vanished"));
    QVERIFY(cloud.recorded("td-tdtest-vanished").ended > 0);
    // The kept instance is reached again and its job's events continue after the last one seen.
    JobEvents job;
    job.clock.start();
    job.last_seq = seen;
    job.attach(*backend, remote, this);
    backend->watch(remote, seen);
    QTRY_VERIFY_WITH_TIMEOUT(cloud.recorded(kept).state == "ready" && backend->instances().size() == 1, 60000);
    QVERIFY(write_file(release, "go\n"));
    QTRY_VERIFY_WITH_TIMEOUT(job.finished, 120000);
    QCOMPARE(job.states.last(), QString("succeeded"));
    QVERIFY(job.records > 0 && job.last_seq > seen);
    QTRY_VERIFY_WITH_TIMEOUT(backend->instances().isEmpty(), 60000);
    QCOMPARE(cloud.recorded(kept).state, QString("deleted"));
    QCOMPARE(cloud.calls("delete"), 2); // the stray and the kept one, once each
}

void ProviderTest::aVanishedSpotInstanceHasItsJobMovedToANewOne() {
    REQUIRE_TEST_CLOUD();
    TestCloud cloud;
    QVERIFY(cloud.temp.isValid());
    qputenv("XDG_DATA_HOME", (cloud.dir + "/data").toUtf8()); // the console's copies of checkpoints
    const QString started = cloud.start(R"([{"name": "spot-small", "cpus": 2, "price_per_hour": 0.15, "spot": true}])",
                                        R"({"max_instances": 2, "idle_minutes": 0.05})");
    QVERIFY2(started.isEmpty(), qPrintable(started));
    QString error;
    auto backend = cloud.open(&error);
    QVERIFY2(backend, qPrintable(error));
    // The console's side as the window wires it: the job's sync (catalog, checkpoint copies), the controller, the
    // migrator.
    DatasetSync datasets(*cloud.writer, cloud.dir + "/catalog.db");
    JobController controller(datasets, [](const QString&) { return QString(); });
    JobSync sync(*cloud.catalog, *cloud.writer, *backend, "testcloud");
    controller.add("testcloud", sync, *backend);
    JobMigrator migrator(cloud.dir + "/catalog.db", *cloud.writer, controller);
    migrator.setTimeouts(300, 60000);
    QSignalSpy moved(&migrator, &JobMigrator::jobMoved), submitted(&sync, &JobSync::submitted);

    const QString release = cloud.dir + "/release";
    QJsonObject request = held_job(release, 8);
    request["console"] = QJsonObject{{"migrate", true}};
    sync.submit("spot job", request);
    QTRY_COMPARE_WITH_TIMEOUT(submitted.size(), 1, 60000);
    const qint64 job = submitted.at(0).at(0).toLongLong();
    const QString first = backend->instances().first().name;
    QVERIFY(backend->instances().first().spot);
    // Held at step 8; its step-5 checkpoint is copied to the console as it is written.
    QTRY_VERIFY_WITH_TIMEOUT(!QDir(JobSync::checkpointDir(job)).entryList({"ckpt-*.tdck"}, QDir::Files).isEmpty(),
                             60000);

    // The cloud takes the spot instance back: the machine ends with its worker and its job, nothing is said.
    QCOMPARE(QProcess::execute("bash", {kScript, cloud.cloud, "delete", first}), 0);
    QVERIFY(write_file(release, "go\n"));
    QElapsedTimer clock;
    clock.start();
    QTRY_COMPARE_WITH_TIMEOUT(moved.size(), 1, 120000);
    qInfo("timing: spot instance gone to its job moved (resubmitted, its new instance being rented) %lld ms",
          clock.elapsed());
    QCOMPARE(moved.at(0).at(2).toString(), QString("testcloud"));
    QTRY_COMPARE_WITH_TIMEOUT(cloud.calls("create"), 2, 60000); // on the placement's thread
    const RentedInstance lost = cloud.recorded(first);
    QCOMPARE(lost.state, QString("vanished"));
    QVERIFY2(lost.reason.contains("no longer lists"), qPrintable(lost.reason));
    QVERIFY(lost.ended > 0);
    // The test's, as the cloud; then the provider's own, in case its list had been wrong.
    QCOMPARE(cloud.calls("delete"), 2);
    const QString second = backend->instances().first().name;
    QVERIFY(second != first);

    // It finishes on the new instance, resumed from the copied checkpoint, not from the start.
    Catalog reader;
    QVERIFY(reader.open((cloud.dir + "/catalog.db").toStdString(), true).empty());
    auto state = [&] {
        Statement select = reader.db().prepare("SELECT state, remote_id FROM jobs WHERE id=?");
        select.bind(1, static_cast<int64_t>(job));
        return select.step() ? QString::fromStdString(select.text(0) + " " + select.text(1)) : QString();
    };
    QTRY_VERIFY_WITH_TIMEOUT(state().startsWith("running ") || state().startsWith("succeeded "), 120000);
    qInfo("timing: spot instance gone to its job running again on a new instance %lld ms", clock.elapsed());
    QTRY_VERIFY_WITH_TIMEOUT(state().startsWith("succeeded "), 120000);
    // Moved to a provider with no free instance: placed, and it ran on the new one.
    const QString moved_to = state().section(' ', 1);
    QVERIFY2(backend->placement(moved_to).startsWith(second + "/"), qPrintable(moved_to));
    QVERIFY(read_all(cloud.cloud + "/" + second + "/home/.local/share/traindeck/worker/jobs/1/stdout.log")
                .contains("resumed from"));
    // One curve: every step from 1 to the last exactly once, the last well past the step-8 hold it was lost at.
    cloud.writer->flush();
    const CatalogReader::Curve curve = CatalogReader(cloud.dir + "/catalog.db").curve(job, "loss", 100000);
    QVERIFY(curve.points >= 12);
    QCOMPARE(curve.points, static_cast<qint64>(curve.last.back().x()));
    for (int i = 0; i < curve.last.size(); ++i)
        QCOMPARE(static_cast<qint64>(curve.last[i].x()), static_cast<qint64>(i + 1));
}

// A job submitted while no instance is up is the console's at once ("p-…"), and waits for its instance: here the
// test holds the instances' boot (the cloud gives no address until CLOUD/boot exists), so that a second job can be
// cancelled before it ran and the console closed mid-boot; reopened, it finishes the first job's placement on the
// instance it had rented, and the cancelled job's instance idles out.
void ProviderTest::aJobWaitsForItsInstanceThroughACancelAndARestart() {
    REQUIRE_TEST_CLOUD();
    TestCloud cloud;
    QVERIFY(cloud.temp.isValid());
    const QString started = cloud.start(R"([{"name": "held-small", "cpus": 2, "price_per_hour": 0.5}])",
                                        R"({"max_instances": 2, "boot_timeout_minutes": 3, "idle_minutes": 0.05})");
    QVERIFY2(started.isEmpty(), qPrintable(started));
    QVERIFY(write_file(cloud.dir + "/release", "go\n")); // the jobs are not held: they run to their end
    QString error;
    auto backend = cloud.open(&error);
    QVERIFY2(backend, qPrintable(error));

    JobEvents first, second;
    const QString a = backend->submit(held_job(cloud.dir + "/release"), &error);
    QVERIFY2(a.startsWith("p-"), qPrintable(a + error));
    first.attach(*backend, a, this);
    backend->watch(a, 0);
    const QString b = backend->submit(held_job(cloud.dir + "/release"), &error);
    QVERIFY2(b.startsWith("p-") && b != a, qPrintable(b + error));
    second.attach(*backend, b, this);
    backend->watch(b, 0);
    QCOMPARE(backend->instances().size(), 2); // both reserved: a third job is refused at once, naming the limit
    QVERIFY(backend->submit(held_job(cloud.dir + "/release"), &error).isEmpty());
    QVERIFY2(error.contains("max_instances"), qPrintable(error));
    // Both created, neither reachable: the jobs wait, with nowhere to run yet.
    QTRY_VERIFY_WITH_TIMEOUT(cloud.recorded().size() == 2 && cloud.recorded()[0].state == "booting" &&
                                 cloud.recorded()[1].state == "booting",
                             60000);
    QCOMPARE(backend->placement(a), QString());
    QVERIFY(!backend->resume(a, 0, &error));
    QVERIFY2(error.contains("waits for its instance"), qPrintable(error));
    QVERIFY(first.states.isEmpty());

    // The second is cancelled before it ran: its one event says so, and it ends.
    QVERIFY2(backend->cancel(b, &error), qPrintable(error));
    QTRY_VERIFY_WITH_TIMEOUT(second.finished, 10000);
    QCOMPARE(second.states, QStringList{"cancelled"});
    const QString placement_file = cloud.dir + "/console/placements/" + a + ".json";
    const QString rented_for_a =
        QJsonDocument::fromJson(read_all(placement_file)).object().value("instance").toString();
    QVERIFY(rented_for_a.startsWith("td-tdtest-"));
    {
        // The command line (which waits for a placement within its submit) leaves the console's to the console.
        auto cli = cloud.open(&error, {{"wait", true}});
        QVERIFY2(cli, qPrintable(error));
        QVERIFY(!cli->cancel(a, &error));
        QVERIFY2(error.contains("being placed by the console"), qPrintable(error));
        qint64 ignored = 0;
        QVERIFY(!cli->removeJob(a, &ignored, &error));
    }

    // The console closes while both are booting: nothing is deleted, nothing forgotten.
    QElapsedTimer closing;
    closing.start();
    backend.reset();
    qInfo("timing: the console closed %lld ms after it was asked, two instances mid-boot", closing.elapsed());
    const QList<RentedInstance> kept = cloud.recorded();
    QCOMPARE(kept.size(), 2);
    for (const RentedInstance& instance : kept)
        QVERIFY2(instance.state == "booting", qPrintable(instance.name + " " + instance.state));
    QCOMPARE(cloud.calls("delete"), 0);

    // The machines come up; the console reopens, reaches both, and places the first job where it was to run. A
    // placement file that is not one is said and left alone.
    QVERIFY(write_file(cloud.cloud + "/boot", "up\n"));
    const QString garbage = cloud.dir + "/console/placements/p-00000000000000ff.json";
    QVERIFY(write_file(garbage, "{\"id\": \"p-00000000000000ff\", \"state\": \"plac"));
    backend = cloud.open(&error);
    QVERIFY2(backend, qPrintable(error));
    JobEvents again;
    again.clock.start();
    again.attach(*backend, a, this);
    backend->watch(a, 0);
    QTRY_VERIFY_WITH_TIMEOUT(again.finished, 120000);
    QCOMPARE(again.states.last(), QString("succeeded"));
    QCOMPARE(cloud.calls("create"), 2); // no third instance: the first job ran on the one rented for it
    const QString placed = backend->placement(a);
    QVERIFY2(placed.startsWith(rented_for_a + "/"), qPrintable(placed + " " + rented_for_a));
    QVERIFY(QFile::exists(garbage));
    QCOMPARE(backend->placement(b), QString());
    QVERIFY(!backend->resume(b, 0, &error));
    QVERIFY2(error.contains("never ran") && error.contains("cancelled"), qPrintable(error));
    // Both instances idle out (the cancelled job's never had one), each deleted once.
    QTRY_VERIFY_WITH_TIMEOUT(backend->instances().isEmpty(), 60000);
    QCOMPARE(cloud.calls("delete"), 2);
    // The cancelled job's placement goes with it; it had nothing anywhere else.
    qint64 freed = -1;
    QVERIFY2(backend->removeJob(b, &freed, &error), qPrintable(error));
    QCOMPARE(freed, 0);
    QVERIFY(!QFile::exists(cloud.dir + "/console/placements/" + b + ".json"));
}

// Every type fails to boot: the job, already the console's, ends failed with the reason as its one event, and every
// instance tried is deleted. The command line, which places within its submit, is told the same as its answer.
void ProviderTest::aJobNoInstanceBootsForEndsFailedWithTheReason() {
    REQUIRE_TEST_CLOUD();
    TestCloud cloud;
    QVERIFY(cloud.temp.isValid());
    const QString started = cloud.start(R"([{"name": "unbootable-tiny", "cpus": 2, "price_per_hour": 0.1}])",
                                        R"({"max_instances": 2, "boot_timeout_minutes": 0.0334, "idle_minutes": 5})");
    QVERIFY2(started.isEmpty(), qPrintable(started));
    QString error;
    auto backend = cloud.open(&error);
    QVERIFY2(backend, qPrintable(error));
    QStringList notices;
    QObject::connect(
        backend.get(), &Backend::notice, this, [&](const QString& message) { notices << message; },
        Qt::QueuedConnection);
    JobEvents job;
    const QString remote = backend->submit(held_job(cloud.dir + "/release"), &error);
    QVERIFY2(remote.startsWith("p-"), qPrintable(remote + error));
    QString reason;
    QObject::connect(
        backend.get(), &Backend::eventsArrived, this,
        [&](const QString& id, const QByteArray& events, bool) {
            if (id == remote)
                reason = QJsonDocument::fromJson(events).array().first()["data"]["reason"].toString();
        },
        Qt::QueuedConnection);
    job.attach(*backend, remote, this);
    backend->watch(remote, 0);
    QTRY_VERIFY_WITH_TIMEOUT(job.finished, 60000);
    QCOMPARE(job.states, QStringList{"failed"});
    QCOMPARE(job.last_seq, 1);
    QVERIFY2(reason.contains("unbootable-tiny") && reason.contains("not reached within"), qPrintable(reason));
    QTRY_VERIFY_WITH_TIMEOUT(notices.filter("could not be placed").size() == 1, 10000);
    QCOMPARE(cloud.calls("create"), 1);
    QCOMPARE(cloud.recorded().first().state, QString("deleted"));
    QVERIFY(backend->instances().isEmpty());
    backend.reset();

    auto cli = cloud.open(&error, {{"wait", true}});
    QVERIFY2(cli, qPrintable(error));
    QVERIFY(cli->submit(held_job(cloud.dir + "/release"), &error).isEmpty());
    QVERIFY2(error.contains("not reached within"), qPrintable(error));
    QCOMPARE(cloud.calls("create"), 2);
    QVERIFY(cli->instances().isEmpty());
    QCOMPARE(QDir(cloud.dir + "/console/placements").entryList({"p-*.json"}, QDir::Files).size(), 1); // the first
}

// A console killed with kill -9 leaves its forwards' ssh running (each a -L to a socket named after its pid). The
// next one ends them: here two real forwards to a test instance, one named after a process that has ended, one after
// this (live) one; only the first is ended, with its socket.
void ProviderTest::aKilledConsolesSshForwardsAreEndedAtTheNextStart() {
    REQUIRE_TEST_CLOUD();
    TestCloud cloud;
    QVERIFY(cloud.temp.isValid());
    QVERIFY(cloud.start(R"([{"name": "cpu-small", "price_per_hour": 0.5}])", "{}").isEmpty());
    qputenv("TEST_CLOUD_SKIP_LEDGER", "1");
    QCOMPARE(QProcess::execute("bash", {kScript, cloud.cloud, "create", "td-tdtest-forwards", "cpu-small", "tdtest"}),
             0);
    qunsetenv("TEST_CLOUD_SKIP_LEDGER");
    const QString port = read_all(cloud.cloud + "/td-tdtest-forwards/port").trimmed();
    const QString sockets = cloud.dir + "/sockets";
    QVERIFY(QDir().mkpath(sockets));
    QProcess gone;
    gone.start("sleep", {"60"});
    QVERIFY(gone.waitForStarted());
    const qint64 dead = gone.processId();
    gone.kill();
    QVERIFY(gone.waitForFinished());
    auto forward = [&](QProcess& ssh, const QString& socket) {
        ssh.start("ssh",
                  {"-N", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                   "-o", "IdentitiesOnly=yes", "-i", cloud.dir + "/userkey", "-p", port, "-L", socket + ":127.0.0.1:1",
                   qEnvironmentVariable("USER", "root") + "@127.0.0.1"});
        return ssh.waitForStarted();
    };
    const QString orphan = QString("%1/%2-0.sock").arg(sockets).arg(dead);
    const QString mine = QString("%1/%2-7.sock").arg(sockets).arg(QCoreApplication::applicationPid());
    QProcess left, kept;
    QVERIFY(forward(left, orphan));
    QVERIFY(forward(kept, mine));
    QVERIFY(write_file(orphan + ".log", "its last words\n"));
    QTRY_VERIFY_WITH_TIMEOUT(QFile::exists(orphan) && QFile::exists(mine), 30000);

    QCOMPARE(client::end_orphan_forwards(sockets.toStdString()), 1);
    QVERIFY(left.waitForFinished(10000));
    QVERIFY(!QFile::exists(orphan) && !QFile::exists(orphan + ".log"));
    QCOMPARE(kept.state(), QProcess::Running);
    QVERIFY(QFile::exists(mine));
    QCOMPARE(client::end_orphan_forwards(sockets.toStdString()), 0); // nothing is ended twice
    kept.kill();
    kept.waitForFinished();
}

void ProviderTest::aBrokenProviderFileIsRefusedWithTheKeyNamed() {
    REQUIRE_TEST_CLOUD();
    TestCloud cloud;
    QVERIFY(cloud.temp.isValid());
    QVERIFY(cloud.start(R"([{"name": "cpu-small", "price_per_hour": 0.5}])", "{}").isEmpty());
    QJsonObject config = QJsonDocument::fromJson(read_all(cloud.file)).object();
    config["create"] = QJsonArray{"bash", kScript, "{cloud}"};
    write_file(cloud.file, QJsonDocument(config).toJson());
    QString error;
    QVERIFY(!cloud.open(&error));
    QVERIFY2(error.contains("\"create\"") && error.contains("{cloud}"), qPrintable(error));
    write_file(cloud.file, "{\"types\": [");
    QVERIFY(!cloud.open(&error));
    QVERIFY2(error.contains("not a JSON object"), qPrintable(error));
    QCOMPARE(cloud.calls("list"), 0); // nothing was asked of the cloud
}

// README.md's provider files for AWS and Google Cloud (not run here: no cloud account) parse as they are printed,
// placeholders and all (AWS's Tags=[{Key=...}] braces are no placeholders).
void ProviderTest::theReadmeExamplesAreProviderFilesThatParse() {
    const QString readme = QString::fromUtf8(read_all(TRAINDECK_SOURCE_DIR "/README.md"));
    const qsizetype section = readme.indexOf("## Cloud providers");
    QVERIFY(section >= 0);
    const QString text = readme.mid(section, readme.indexOf("\n## ", section + 5) - section);
    int parsed = 0;
    for (qsizetype at = text.indexOf("```json\n"); at >= 0; at = text.indexOf("```json\n", at + 1)) {
        const qsizetype begin = at + 8, end = text.indexOf("```", begin);
        client::ProviderConfig config;
        const std::string error = client::parse_provider_config(text.mid(begin, end - begin).toStdString(), &config);
        QVERIFY2(error.empty(), error.c_str());
        QVERIFY(!config.types.empty());
        std::string expand_error;
        const std::vector<std::string> create = client::expand_command(
            config.create,
            {{"name", "td-x-0000abcd"}, {"type", config.types[0].name}, {"label", config.label}, {"spot", "spot"}},
            &expand_error);
        QVERIFY2(expand_error.empty(), expand_error.c_str());
        QVERIFY(std::find(create.begin(), create.end(), config.types[0].name) != create.end());
        ++parsed;
    }
    QCOMPARE(parsed, 2);
}

QTEST_GUILESS_MAIN(ProviderTest)
#include "provider_test.moc"
