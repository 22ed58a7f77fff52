// Benchmark: the console's catalog ingest through its real path (issue 15: >= 2,000,000 points/s). A stand-in worker
// (tests/ui/fakeworker, HTTPS on 127.0.0.1 with a fresh self-signed certificate) answers the console's multi-job
// watch with replies as traindeck-worker writes them: --jobs jobs of --events events each, four metrics an event (the
// four traindeck-train reports each step), shared 20,000 events a reply as the console asks. The console's own
// remote-worker backend (its plugin, loaded as the console loads it), JobSync and CatalogWriter take them into a
// fresh catalog: HTTP reply -> JSON parse -> writer thread -> SQLite. Timed from the first watch to the last job's
// end committed (each job's events end with its final state, and every event of a job is committed in order).
//
// The peer, alternated with it round by round: the same events, parsed already, posted straight to a CatalogWriter
// (what the storage takes; the bound of any path through it). Prints both medians, the path's share of the storage's
// rate, and the verdict; exits 1 when the target is missed, 2 when the bench cannot run.
//
//   console_ingest [--jobs 10] [--events 250000] [--rounds 3]     (default: 10 M points)
#include "backend.h"
#include "catalog.h"
#include "fakeworker.h"
#include "jobsync.h"
#include "pluginregistry.h"

#include <QCoreApplication>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTimer>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

using namespace traindeck;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kEventsPerReply = 20000;
constexpr double kTarget = 2'000'000;

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

// Event `seq` of a job as the worker stores and sends it (its data is the job's metrics line).
std::string event_text(long seq) {
    char text[320];
    std::snprintf(text, sizeof(text),
                  "{\"seq\":%ld,\"time\":%.6f,\"type\":\"record\",\"data\":{\"type\":\"metric\",\"step\":%ld,"
                  "\"loss\":%.17g,\"accuracy\":%.17g,\"lr\":0.01,\"samples_per_s\":%.17g}}",
                  seq, 1.7e9 + 0.001 * double(seq), seq, 1.0 / double(seq), 0.5 + 0.4 * double(seq % 1000) / 1000.0,
                  1000.0 + double(seq % 97));
    return text;
}

// Every event of a job, written once before any clock starts (the worker's share of the work is its own machine's,
// not the console's): texts[seq - 1], the last one the job's end (state succeeded).
std::vector<std::string> job_events(long total) {
    std::vector<std::string> texts;
    texts.reserve(static_cast<size_t>(total) + 1);
    for (long seq = 1; seq <= total; ++seq)
        texts.push_back(event_text(seq));
    texts.push_back("{\"seq\":" + std::to_string(total + 1) +
                    ",\"time\":1.0,\"type\":\"state\",\"data\":{\"state\":\"succeeded\",\"reason\":\"\"}}");
    return texts;
}

// The events after seq `after` of one job, at most `count`, as the "events" array of a watch reply; `next` is the
// last seq it holds.
void append_events_after(const std::vector<std::string>& texts, long after, long count, std::string& out, long& next) {
    out += '[';
    next = after;
    for (long seq = after + 1; seq <= std::min(static_cast<long>(texts.size()), after + count); ++seq) {
        if (seq > after + 1)
            out += ',';
        out += texts[static_cast<size_t>(seq - 1)];
        next = seq;
    }
    out += ']';
}

struct Setup {
    QTemporaryDir temp;
    PluginRegistry plugins;
};

// One round through the console's path: a fresh catalog, the backend connected, every job watched. Seconds, or a
// negative number when it could not run (the reason printed).
double console_round(Setup& setup, const QString& url, int jobs, long total, int round) {
    const QString catalog_path = setup.temp.filePath(QString("console-%1.db").arg(round));
    std::vector<int64_t> ids;
    {
        Catalog seed;
        if (const std::string error = seed.open(catalog_path.toStdString()); !error.empty()) {
            std::fprintf(stderr, "catalog: %s\n", error.c_str());
            return -1;
        }
        for (int j = 1; j <= jobs; ++j)
            ids.push_back(
                seed.add_job("job " + std::to_string(j), "bench", std::to_string(j), nlohmann::json::object()));
    }
    BackendFactory* factory = setup.plugins.factory("worker");
    if (!factory) {
        std::fprintf(stderr, "the remote-worker plugin is not in %s\n", TRAINDECK_PLUGIN_DIR);
        return -1;
    }
    std::unique_ptr<Backend> backend(factory->create(nullptr));
    QString error;
    // As the console connects a remote worker: the first open learns its key, the user accepts it, the second pins it.
    backend->open({{"url", url}, {"token", "bench-token"}}, &error);
    const QString pin = backend->pinnedKey();
    if (!backend->open({{"url", url}, {"token", "bench-token"}, {"pinned_public_key", pin}}, &error)) {
        std::fprintf(stderr, "cannot connect the stand-in worker: %s\n", qPrintable(error));
        return -1;
    }
    Catalog catalog;
    catalog.open(catalog_path.toStdString());
    Catalog reader;
    reader.open(catalog_path.toStdString(), true);
    auto writer = std::make_unique<CatalogWriter>(catalog);
    auto sync = std::make_unique<JobSync>(catalog, *writer, *backend, "bench");
    const auto started = Clock::now();
    sync->resumeWatching();
    // Every job's end committed: all of its events were, before it.
    QTimer poll;
    bool done = false;
    QObject::connect(&poll, &QTimer::timeout, [&] {
        Statement ended = reader.db().prepare("SELECT count(*) FROM jobs WHERE state='succeeded'");
        done = ended.step() && ended.integer(0) == jobs;
        if (done || Clock::now() - started > std::chrono::minutes(10))
            QCoreApplication::quit();
    });
    poll.start(5);
    QCoreApplication::exec();
    const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
    sync.reset();
    backend.reset();
    writer.reset();
    if (!done) {
        std::fprintf(stderr, "the console did not take every job's events within 10 minutes\n");
        return -1;
    }
    // Every point is there: each job's four metrics at every step.
    Statement points = reader.db().prepare(
        "SELECT coalesce(sum(count), 0) FROM metric_chunks JOIN series ON series.id = metric_chunks.series "
        "WHERE series.name IN ('loss', 'accuracy', 'lr', 'samples_per_s')");
    const int64_t expected = 4 * static_cast<int64_t>(jobs) * total;
    if (!points.step() || points.integer(0) != expected) {
        std::fprintf(stderr, "the catalog holds %lld metric points, not %lld\n",
                     static_cast<long long>(points.integer(0)), static_cast<long long>(expected));
        return -1;
    }
    return seconds;
}

// The peer: the same events parsed already, straight into a CatalogWriter.
double storage_round(Setup& setup, const std::vector<std::vector<nlohmann::json>>& chunks, int jobs, int round) {
    const QString catalog_path = setup.temp.filePath(QString("storage-%1.db").arg(round));
    Catalog catalog;
    catalog.open(catalog_path.toStdString());
    std::vector<int64_t> ids;
    for (int j = 1; j <= jobs; ++j)
        ids.push_back(
            catalog.add_job("job " + std::to_string(j), "bench", std::to_string(j), nlohmann::json::object()));
    const auto started = Clock::now();
    {
        CatalogWriter writer(catalog);
        for (const auto& chunk : chunks)
            for (const int64_t id : ids)
                writer.post([id, &chunk](Catalog& c) { c.ingest(id, chunk); });
        if (const std::string error = writer.flush(); !error.empty()) {
            std::fprintf(stderr, "writer: %s\n", error.c_str());
            return -1;
        }
    }
    return std::chrono::duration<double>(Clock::now() - started).count();
}

} // namespace

int main(int argc, char** argv) {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    int jobs = 10, rounds = 3;
    long events = 250000;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string arg = argv[i];
        if (arg == "--jobs")
            jobs = std::atoi(argv[i + 1]);
        else if (arg == "--events")
            events = std::atol(argv[i + 1]);
        else if (arg == "--rounds")
            rounds = std::atoi(argv[i + 1]);
        else {
            std::fprintf(stderr, "unknown option %s\n", arg.c_str());
            return 2;
        }
    }
    if (jobs < 1 || events < 1 || rounds < 1) {
        std::fprintf(stderr, "--jobs, --events and --rounds must be positive\n");
        return 2;
    }
    QCoreApplication app(argc, argv);
    Setup setup;
    if (!setup.temp.isValid())
        return 2;
    setup.plugins.scan({TRAINDECK_PLUGIN_DIR});
    QProcess openssl;
    openssl.setProcessChannelMode(QProcess::MergedChannels);
    openssl.start("openssl", {"req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=bench",
                              "-keyout", setup.temp.filePath("key.pem"), "-out", setup.temp.filePath("cert.pem")});
    if (!openssl.waitForFinished(60000) || openssl.exitCode() != 0) {
        std::fprintf(stderr, "openssl could not make a certificate: %s\n", openssl.readAll().constData());
        return 2;
    }
    const long total = events;
    const std::vector<std::string> texts = job_events(total);
    FakeWorker box;
    if (const QString started = box.start(setup.temp.filePath("cert.pem"), setup.temp.filePath("key.pem"));
        !started.isEmpty()) {
        std::fprintf(stderr, "the stand-in worker did not start: %s\n", qPrintable(started));
        return 2;
    }
    box.answer("GET", "/v1/health", {200, R"({"status":"ok","version":"bench","api":1})"});
    box.answer("GET", "/v1/resources", {200, R"({"cpus":2})"});
    // The watch: each job with events after its seq gets an equal share of 20,000 (as the worker shares a reply).
    box.route("POST", "/v1/events/watch", [total, &texts](const FakeWorker::Request& request) -> FakeWorker::Reply {
        const QJsonObject after = QJsonDocument::fromJson(request.body).object().value("after").toObject();
        const long share = std::max<long>(1, kEventsPerReply / std::max<qsizetype>(1, after.size()));
        std::string body = "{\"jobs\":{";
        bool first = true;
        for (auto it = after.begin(); it != after.end(); ++it) {
            const long seen = static_cast<long>(it.value().toInteger());
            if (seen > total)
                continue;
            long next = seen;
            body += (first ? "\"" : ",\"") + it.key().toStdString() + "\":{\"events\":";
            append_events_after(texts, seen, share, body, next);
            body += ",\"next\":" + std::to_string(next) + ",\"state\":\"" + (next > total ? "succeeded" : "running") +
                    "\"}";
            first = false;
        }
        body += "},\"missing\":[]}";
        return {200, QByteArray::fromStdString(body)};
    });
    const QString url = box.url();

    // The peer's events, parsed once before any clock starts (the sender's work, not the catalog's).
    std::vector<std::vector<nlohmann::json>> chunks;
    for (long seq = 1; seq <= total + 1; ++seq) {
        if ((seq - 1) % std::max(1, kEventsPerReply / jobs) == 0)
            chunks.emplace_back();
        chunks.back().push_back(nlohmann::json::parse(texts[static_cast<size_t>(seq - 1)]));
    }

    const double points = 4.0 * double(total) * jobs;
    std::vector<double> console_rates, storage_rates;
    for (int round = 0; round < rounds; ++round) {
        // Alternated, each side first in turn.
        for (int side = 0; side < 2; ++side) {
            const bool console_side = (side == 0) == (round % 2 == 0);
            const double seconds = console_side ? console_round(setup, url, jobs, total, round)
                                                : storage_round(setup, chunks, jobs, round);
            if (seconds < 0)
                return 2;
            (console_side ? console_rates : storage_rates).push_back(points / seconds);
            std::printf("round %d %-8s %6.2f s  %10.0f points/s\n", round + 1, console_side ? "console" : "storage",
                        seconds, points / seconds);
        }
    }
    const double console_rate = median(console_rates), storage_rate = median(storage_rates);
    std::printf(
        "console_ingest: %d jobs x %ld events x 4 metrics = %.0f points a round, %d rounds, replies of %d events\n",
        jobs, total, points, rounds, kEventsPerReply);
    std::printf("storage alone (parsed events -> writer -> SQLite): median %10.0f points/s\n", storage_rate);
    std::printf("console path (HTTPS reply -> parse -> JobSync -> writer -> SQLite): median %10.0f points/s, "
                "%.2f of the storage's rate\n",
                console_rate, console_rate / storage_rate);
    std::printf("target >= 2,000,000 points/s: ratio %.2f -> %s\n", console_rate / kTarget,
                console_rate >= kTarget ? "met" : "MISSED");
    return console_rate >= kTarget ? 0 : 1;
}
