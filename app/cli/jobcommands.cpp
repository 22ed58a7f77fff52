// traindeck-cli's commands that reach a backend: submit, cancel, resume, logs, backends. Backend calls block (this
// is a terminal program: nothing else waits on it); logs -f runs Qt's event loop for the events the backend streams.
#include "cli.h"

#include "jobstate.h"
#include "sshurl.h"
#include "tokenstore.h"

#include <QCoreApplication>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>

#include <cstdio>

namespace traindeck::cli {

using nlohmann::json;

namespace {

QJsonObject to_qt(const json& object) {
    return QJsonDocument::fromJson(QByteArray::fromStdString(object.dump())).object();
}

// A terminal line for one event of a job's stream; "" for what is not shown (telemetry).
QString event_line(const json& event, bool metrics) {
    const std::string type = event.value("type", std::string());
    const json data = event.contains("data") ? event["data"] : json::object();
    if (type == "log" && data.is_object())
        return QString::fromStdString((data.value("stream", std::string()) == "stderr" ? "! " : "") +
                                      data.value("line", std::string()));
    if (type == "state" && data.is_object())
        return QString::fromStdString("== " + data.value("state", std::string()) +
                                      (data.contains("reason") ? ": " + data.value("reason", std::string()) : ""));
    if (type == "warning" && data.is_object())
        return QString::fromStdString("warning: " + data.value("message", std::string()));
    if (type == "record" && metrics && data.is_object()) {
        const std::string kind = data.value("type", std::string());
        if (kind != "metric" && kind != "eval" && kind != "status" && kind != "event")
            return {};
        QString line = QString::fromStdString(kind);
        for (const auto& [key, value] : data.items())
            if (key != "type" && key != "v" && key != "time")
                line += QString(" %1=%2").arg(QString::fromStdString(key), QString::fromStdString(value.dump()));
        return line;
    }
    return {};
}

} // namespace

int cmd_submit(Cli& cli) {
    QStringList args = cli.options().args;
    const QString backend_name = take_option(args, "--backend").value_or("local");
    const std::optional<QString> name = take_option(args, "--name");
    if (const QString unknown = unknown_option(args); !unknown.isEmpty())
        return cli.fail(kUsage, unknown);
    if (args.size() != 1)
        return cli.fail(kUsage, "usage: traindeck-cli submit SPEC.json [--backend NAME] [--name NAME]");
    QFile file(args[0]);
    if (!file.open(QIODevice::ReadOnly))
        return cli.fail(kUsage, QString("cannot read %1: %2").arg(args[0], file.errorString()));
    json request = json::parse(file.readAll().toStdString(), nullptr, false);
    if (!request.is_object())
        return cli.fail(kUsage, QString("%1 is not a JSON object (a job request, README: POST /v1/jobs, or a built-in "
                                        "trainer spec like resources/examples/fashion-mlp.json)")
                                    .arg(args[0]));
    // A bare built-in spec (what traindeck-train reads) is the request's "builtin".
    if (!request.contains("builtin") && !request.contains("argv") && request.contains("model"))
        request = json{{"name", request.value("name", std::string())}, {"builtin", request}};
    const QString run_name = name ? *name
                             : !request.value("name", std::string()).empty()
                                 ? QString::fromStdString(request.value("name", std::string()))
                                 : QFileInfo(args[0]).completeBaseName();
    request["name"] = run_name.toStdString();
    if (!cli.openCatalog())
        return kFailed;
    int exit = kOk;
    Backend* backend = cli.connect(backend_name, &exit);
    if (!backend)
        return exit;
    // The backend holds the dataset version first: only the chunks it lacks travel.
    if (const std::string version = request.value("dataset", std::string()); !version.empty()) {
        Statement select = cli.catalog().db().prepare("SELECT root, manifest FROM dataset_versions WHERE version=?");
        select.bind(1, version);
        if (!select.step())
            return cli.fail(kNotFound, QString("dataset version %1 is not in the catalog (register it first)")
                                           .arg(QString::fromStdString(version)));
        QString error;
        if (!backend->uploadDataset(QString::fromStdString(select.text(0)), QByteArray::fromStdString(select.text(1)),
                                    {}, &error))
            return cli.fail(kFailed, "the dataset upload failed: " + error);
    }
    json sent = request;
    sent.erase("console"); // the console's own settings: the catalog keeps them, the worker never sees them
    QString error;
    const QString remote = backend->submit(to_qt(sent), &error);
    if (remote.isEmpty())
        return cli.fail(kFailed, QString("%1 refused the job: %2").arg(backend_name, error));
    int64_t id = 0;
    try {
        id = cli.catalog().add_job(run_name.toStdString(), backend_name.toStdString(), remote.toStdString(), request);
    } catch (const std::exception& e) {
        // The job runs; only the catalog did not take it: say which job it is, so it can be cancelled or adopted.
        return cli.fail(kFailed, QString("job %1 was submitted to %2 but the catalog could not record it (%3): "
                                         "`traindeck-cli cancel` cannot find it; cancel it on the worker, or submit "
                                         "again once the catalog is free")
                                     .arg(remote, backend_name, QString::fromUtf8(e.what())));
    }
    cli.print({{"run", id},
               {"name", run_name.toStdString()},
               {"backend", backend_name.toStdString()},
               {"remote_id", remote.toStdString()}},
              QString("submitted run %1 \"%2\" (job %3 on %4)").arg(id).arg(run_name, remote, backend_name));
    return kOk;
}

int cmd_cancel(Cli& cli) {
    QStringList args = cli.options().args;
    if (const QString unknown = unknown_option(args); !unknown.isEmpty())
        return cli.fail(kUsage, unknown);
    if (args.size() != 1)
        return cli.fail(kUsage, "usage: traindeck-cli cancel RUN");
    int exit = kOk;
    const std::optional<RunRecord> run = cli.findRun(args[0], &exit);
    if (!run)
        return exit;
    if (is_finished_in_catalog(run->state))
        return cli.fail(kUsage,
                        QString("run %1 has already ended (%2)").arg(run->id).arg(QString::fromStdString(run->state)));
    Backend* backend = cli.connect(QString::fromStdString(run->backend), &exit);
    if (!backend)
        return exit;
    QString error;
    if (!backend->cancel(QString::fromStdString(run->remote_id), &error))
        return cli.fail(
            kFailed,
            QString("%1 did not cancel run %2: %3").arg(QString::fromStdString(run->backend)).arg(run->id).arg(error));
    cli.print({{"run", run->id}, {"cancel", "sent"}},
              QString("run %1 is stopping: it writes a checkpoint first (resume continues from it)").arg(run->id));
    return kOk;
}

int cmd_resume(Cli& cli) {
    QStringList args = cli.options().args;
    const std::optional<QString> budget_text = take_option(args, "--budget");
    if (const QString unknown = unknown_option(args); !unknown.isEmpty())
        return cli.fail(kUsage, unknown);
    if (args.size() != 1)
        return cli.fail(kUsage, "usage: traindeck-cli resume RUN [--budget DOLLARS]");
    bool budget_ok = true;
    const double budget = budget_text ? budget_text->toDouble(&budget_ok) : 0.0;
    if (!budget_ok || budget < 0)
        return cli.fail(kUsage, "--budget takes an amount of money, e.g. 2.50");
    int exit = kOk;
    const std::optional<RunRecord> run = cli.findRun(args[0], &exit);
    if (!run)
        return exit;
    Backend* backend = cli.connect(QString::fromStdString(run->backend), &exit);
    if (!backend)
        return exit;
    QString error;
    if (!backend->resume(QString::fromStdString(run->remote_id), budget, &error))
        return cli.fail(kFailed, QString("run %1 was not resumed: %2").arg(run->id).arg(error));
    // Active again in the catalog, so a console (open now or later) watches it from the last event it has.
    cli.catalog().set_outcome(run->id, "queued", "resumed from the command line", run->started, 0);
    cli.print({{"run", run->id}, {"resume", "queued"}}, QString("run %1 resumes from its checkpoint").arg(run->id));
    return kOk;
}

int cmd_logs(Cli& cli) {
    QStringList args = cli.options().args;
    const bool follow = take_flag(args, "-f") || take_flag(args, "--follow");
    const bool metrics = take_flag(args, "--metrics");
    if (const QString unknown = unknown_option(args); !unknown.isEmpty())
        return cli.fail(kUsage, unknown);
    if (args.size() != 1)
        return cli.fail(kUsage, "usage: traindeck-cli logs [-f] [--metrics] RUN");
    int exit = kOk;
    const std::optional<RunRecord> run = cli.findRun(args[0], &exit);
    if (!run)
        return exit;
    // What the catalog has, then (with -f) what the backend streams after it, until the job ends. With --metrics
    // and -f the whole stream from its first event instead (the catalog keeps curves, not the records).
    const bool replay = follow && metrics;
    Statement select =
        cli.catalog().db().prepare("SELECT seq, time, stream, line FROM job_logs WHERE job=? ORDER BY seq");
    select.bind(1, run->id);
    while (!replay && select.step()) {
        const std::string line = (select.text(2) == "stderr" ? "! " : "") + select.text(3);
        if (cli.json())
            std::printf("%s\n", json({{"seq", select.integer(0)},
                                      {"time", select.real(1)},
                                      {"stream", select.text(2)},
                                      {"line", select.text(3)}})
                                    .dump()
                                    .c_str());
        else
            std::printf("%s\n", line.c_str());
    }
    std::fflush(stdout);
    if (!follow || (!replay && is_finished_in_catalog(run->state)))
        return kOk;
    Backend* backend = cli.connect(QString::fromStdString(run->backend), &exit);
    if (!backend)
        return exit;
    CatalogWriter writer(cli.catalog());
    const QString remote = QString::fromStdString(run->remote_id);
    int64_t shown_after = replay ? 0 : cli.catalog().remote_last_seq(run->id);
    std::string final_state;
    QObject::connect(backend, &Backend::eventsArrived, qApp,
                     [&](const QString& id, const QByteArray& events, bool finished) {
                         if (id != remote)
                             return;
                         const json parsed = json::parse(events.toStdString(), nullptr, false);
                         if (!parsed.is_array())
                             return;
                         std::vector<json> fresh;
                         for (const json& event : parsed) {
                             if (!event.is_object() || event.value("seq", int64_t(0)) <= shown_after)
                                 continue;
                             shown_after = event.value("seq", int64_t(0));
                             fresh.push_back(event);
                             if (event.value("type", std::string()) == "state" && event["data"].is_object())
                                 final_state = event["data"].value("state", final_state);
                             if (cli.json())
                                 std::printf("%s\n", event.dump().c_str());
                             else if (const QString line = event_line(event, metrics); !line.isEmpty())
                                 std::printf("%s\n", qPrintable(line));
                         }
                         std::fflush(stdout);
                         // The catalog learns what was shown, as the console would (upserts by seq: no duplicates).
                         if (!fresh.empty())
                             writer.post(run->id, std::move(fresh));
                         if (finished)
                             QCoreApplication::exit(0);
                     });
    backend->watch(remote, shown_after);
    QCoreApplication::exec();
    if (const std::string error = writer.flush(); !error.empty())
        cli.fail(kFailed, "the catalog could not keep the events: " + QString::fromStdString(error));
    return final_state == "succeeded" ? kOk : kFailed;
}

int cmd_backends(Cli& cli) {
    QStringList args = cli.options().args;
    const bool check = take_flag(args, "--check");
    if (const QString unknown = unknown_option(args); !unknown.isEmpty())
        return cli.fail(kUsage, unknown);
    json list = json::array();
    QString text;
    int exit = kOk;
    for (const Cli::BackendInfo& info : cli.backends()) {
        json entry = {
            {"name", info.name.toStdString()}, {"kind", info.kind.toStdString()}, {"url", info.url.toStdString()}};
        QString line = QString("%1  %2  %3").arg(info.name, info.kind, info.url);
        if (check) {
            int connect_exit = kOk;
            if (Backend* backend = cli.connect(info.name, &connect_exit)) {
                QString error;
                const QJsonObject resources = backend->resources(&error);
                entry["reachable"] = error.isEmpty();
                entry["resources"] = json::parse(QJsonDocument(resources).toJson().toStdString(), nullptr, false);
                line += error.isEmpty() ? QString("  reachable: %1 CPUs, %2 GPUs (%3)")
                                              .arg(resources.value("cpus").toInt())
                                              .arg(resources.value("gpus").toArray().size())
                                              .arg(backend->describe())
                                        : "  unreachable: " + error;
            } else {
                entry["reachable"] = false;
                line += "  unreachable";
                exit = kFailed;
            }
        }
        list.push_back(entry);
        text += line + "\n";
    }
    cli.print(list, text);
    return exit;
}

int cmd_add_host(Cli& cli) {
    QStringList args = cli.options().args;
    const bool install = take_flag(args, "--install");
    const QString config = take_option(args, "--ssh-config").value_or(QString());
    const QString state_dir = take_option(args, "--state-dir").value_or(QString());
    if (const QString unknown = unknown_option(args); !unknown.isEmpty())
        return cli.fail(kUsage, unknown);
    if (args.size() != 2)
        return cli.fail(kUsage, "add-host takes a name and a host: add-host NAME user@host[:port]");
    const QString name = args[0], destination = args[1];
    for (const Cli::BackendInfo& info : cli.backends())
        if (info.name == name)
            return cli.fail(kUsage, QString("a backend named \"%1\" exists already").arg(name));
    if (name == "import" || name.isEmpty())
        return cli.fail(kUsage, QString("\"%1\" cannot name a backend").arg(name));
    BackendFactory* factory = cli.factory("ssh");
    if (!factory)
        return cli.fail(kFailed,
                        "the SSH-host plugin was not found (" + PluginRegistry::default_dirs().join(", ") + ")");
    const QString url = ssh_url(destination, config, state_dir);
    std::unique_ptr<Backend> backend(factory->create(nullptr));
    QString error;
    if (!backend->open({{"url", url}, {"install", install}}, &error)) {
        const QStringList plan = backend->installPlan();
        if (plan.isEmpty())
            return cli.fail(kFailed, QString("cannot reach SSH host \"%1\": %2").arg(destination, error));
        // Nothing was copied: the user reads what would be, then consents with --install.
        json commands = json::array();
        for (const QString& command : plan)
            commands.push_back(command.toStdString());
        cli.print({{"name", name.toStdString()},
                   {"host", backend->hostFacts().toStdString()},
                   {"installed", false},
                   {"install_commands", commands}},
                  error + ".\nWith --install these commands copy it (nothing was copied yet):\n  " + plan.join("\n  ") +
                      "\n");
        return kFailed;
    }
    // The token ssh read on the host goes to the keyring before the host is kept in the catalog.
    if (!TokenStore::save(name, backend->learnedToken(), &error))
        return cli.fail(kFailed, QString("SSH host \"%1\" not added: %2").arg(name, error));
    if (!cli.openCatalog())
        return kFailed;
    cli.catalog().add_backend({name.toStdString(), "ssh", url.toStdString(), {}});
    cli.print({{"name", name.toStdString()}, {"url", url.toStdString()}, {"host", backend->hostFacts().toStdString()}},
              QString("added %1: %2 (%3)\n").arg(name, backend->describe(), backend->hostFacts()));
    return kOk;
}

int cmd_add_provider(Cli& cli) {
    QStringList args = cli.options().args;
    if (const QString unknown = unknown_option(args); !unknown.isEmpty())
        return cli.fail(kUsage, unknown);
    if (args.size() != 2)
        return cli.fail(kUsage, "add-provider takes a name and a provider file: add-provider NAME FILE.json");
    const QString name = args[0], file = QFileInfo(args[1]).absoluteFilePath();
    for (const Cli::BackendInfo& info : cli.backends())
        if (info.name == name)
            return cli.fail(kUsage, QString("a backend named \"%1\" exists already").arg(name));
    if (name == "import" || name.isEmpty() || name.contains('/'))
        return cli.fail(kUsage, QString("\"%1\" cannot name a backend").arg(name));
    BackendFactory* factory = cli.factory("cloud");
    if (!factory)
        return cli.fail(kFailed,
                        "the cloud-provider plugin was not found (" + PluginRegistry::default_dirs().join(", ") + ")");
    InstanceLedger* ledger = cli.ledger();
    if (!ledger)
        return kFailed;
    std::unique_ptr<Backend> backend(factory->create(nullptr));
    backend->setInstanceLedger(ledger);
    QString error;
    // Opening reads the file and reconciles the cloud's list with the catalog: nothing is rented yet.
    if (!backend->open({{"config", file}, {"name", name}}, &error))
        return cli.fail(kFailed, QString("provider \"%1\" not added: %2").arg(name, error));
    cli.catalog().add_backend({name.toStdString(), "cloud", file.toStdString(), {}});
    cli.print({{"name", name.toStdString()}, {"file", file.toStdString()}},
              QString("added %1: %2 (%3)\n").arg(name, backend->describe(), file));
    return kOk;
}

int cmd_instances(Cli& cli) {
    QStringList args = cli.options().args;
    const bool all = take_flag(args, "--all");
    if (const QString unknown = unknown_option(args); !unknown.isEmpty())
        return cli.fail(kUsage, unknown);
    if (args.size() > 1)
        return cli.fail(kUsage, "instances takes at most a provider's name: instances [NAME] [--all]");
    InstanceLedger* ledger = cli.ledger();
    if (!ledger)
        return kFailed;
    QString error;
    const QList<RentedInstance> recorded = ledger->instances(args.value(0), &error);
    if (!error.isEmpty())
        return cli.fail(kFailed, "the catalog's instances could not be read: " + error);
    json list = json::array();
    QString text;
    double spent = 0;
    for (const RentedInstance& r : recorded) {
        spent += r.cost();
        if (!all && !r.live())
            continue;
        list.push_back({{"provider", r.provider.toStdString()},
                        {"name", r.name.toStdString()},
                        {"id", r.id.toStdString()},
                        {"type", r.type.toStdString()},
                        {"address", r.address.toStdString()},
                        {"state", r.state.toStdString()},
                        {"reason", r.reason.toStdString()},
                        {"price_per_hour", r.price_per_hour},
                        {"spot", r.spot},
                        {"created", r.created},
                        {"ended", r.ended},
                        {"seconds", r.seconds()},
                        {"cost", r.cost()}});
        text += QString("%1  %2  %3  %4  up %5 s  $%6 ($%7/h%8)%9\n")
                    .arg(r.provider, r.name, r.type, r.state)
                    .arg(static_cast<qint64>(r.seconds()))
                    .arg(r.cost(), 0, 'f', 4)
                    .arg(r.price_per_hour, 0, 'f', 2)
                    .arg(r.spot ? ", spot" : "")
                    .arg(r.reason.isEmpty() ? QString() : "  " + r.reason);
    }
    text += QString("%1 instance(s) shown; $%2 spent on %3 recorded\n")
                .arg(list.size())
                .arg(spent, 0, 'f', 4)
                .arg(recorded.size());
    cli.print(list, text);
    return kOk;
}

int cmd_release(Cli& cli) {
    QStringList args = cli.options().args;
    if (const QString unknown = unknown_option(args); !unknown.isEmpty())
        return cli.fail(kUsage, unknown);
    if (args.size() != 2)
        return cli.fail(kUsage, "release takes a provider and one of its instances: release NAME INSTANCE");
    int exit = kFailed;
    Backend* backend = cli.connect(args[0], &exit);
    if (!backend)
        return exit;
    QString error;
    if (!backend->releaseInstance(args[1], &error))
        return cli.fail(kFailed, QString("%1 was not released: %2").arg(args[1], error));
    cli.print({{"released", args[1].toStdString()}}, QString("released %1: deleted in its cloud\n").arg(args[1]));
    return kOk;
}

} // namespace traindeck::cli
