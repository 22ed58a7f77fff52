// Cli (cli.h): the catalog is the console's own file, opened with SQLite's locking (WAL, a busy timeout), so a
// command writes beside an open console without either losing a write; backends are the console's plugins.
#include "cli.h"

#include "tokenstore.h"

#include <QFileInfo>

#include <QDir>
#include <QSettings>
#include <QStandardPaths>

#include <cstdio>
#include <ctime>

namespace traindeck::cli {

namespace {

QString data_dir() {
    // The console's Settings choose the data folder (catalog and local worker); else the XDG data dir.
    const QString chosen = QSettings().value("data/folder").toString();
    return chosen.isEmpty() ? QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation) + "/traindeck"
                            : chosen;
}

} // namespace

bool Cli::openCatalog() {
    if (catalog_open_)
        return true;
    catalog_path_ = options_.catalog.isEmpty() ? data_dir() + "/catalog.db" : options_.catalog;
    if (options_.catalog.isEmpty())
        QDir().mkpath(QFileInfo(catalog_path_).path());
    if (const std::string error = catalog_.open(catalog_path_.toStdString()); !error.empty()) {
        fail(kFailed, QString::fromStdString(error));
        return false;
    }
    catalog_open_ = true;
    return true;
}

std::optional<RunRecord> Cli::findRun(const QString& name, int* exit) {
    *exit = kFailed;
    if (!openCatalog())
        return std::nullopt;
    bool is_id = false;
    const qint64 id = name.toLongLong(&is_id);
    // The runs of that id or name by the jobs table's columns, then the one found with its details: not every run of
    // the catalog with theirs (10,000 runs took seconds).
    std::vector<int64_t> found;
    std::optional<RunRecord> run;
    try {
        Statement select = catalog_.db().prepare(is_id ? "SELECT id FROM jobs WHERE id=? AND deleted=0 ORDER BY id"
                                                       : "SELECT id FROM jobs WHERE name=? AND deleted=0 ORDER BY id");
        if (is_id)
            select.bind(1, static_cast<int64_t>(id));
        else
            select.bind(1, name.toStdString());
        while (select.step())
            found.push_back(select.integer(0));
        if (found.size() == 1)
            run = catalog_.run(found.front());
    } catch (const std::exception& e) {
        fail(kFailed, QString("the catalog %1 could not be read: %2").arg(catalog_path_, e.what()));
        return std::nullopt;
    }
    if (found.size() == 1 && (!run || run->deleted))
        found.clear(); // deleted or purged between the two reads
    *exit = kNotFound;
    if (found.empty()) {
        fail(kNotFound, QString("no run %1 in %2 (name a run by its id or its exact name; `ls` lists them)")
                            .arg(is_id ? name : "named \"" + name + "\"", catalog_path_));
        return std::nullopt;
    }
    if (found.size() > 1) {
        QStringList ids;
        for (const int64_t found_id : found)
            ids << QString::number(found_id);
        fail(kUsage, QString("%1 runs are named \"%2\" (ids %3): name one by its id")
                         .arg(found.size())
                         .arg(name, ids.join(", ")));
        *exit = kUsage;
        return std::nullopt;
    }
    *exit = kOk;
    return run;
}

std::vector<Cli::BackendInfo> Cli::backends() {
    std::vector<BackendInfo> list{{"local", "local", ""}};
    if (!qEnvironmentVariable("TRAINDECK_SLURM_REST").isEmpty() || !qEnvironmentVariable("SLURM_CONF").isEmpty())
        list.push_back({"slurm", "slurm", qEnvironmentVariable("TRAINDECK_SLURM_REST")});
    if (openCatalog())
        for (const Catalog::BackendRow& row : catalog_.backends())
            list.push_back(
                {QString::fromStdString(row.name), QString::fromStdString(row.kind), QString::fromStdString(row.url)});
    return list;
}

BackendFactory* Cli::factory(const QString& kind) {
    if (!plugins_scanned_) {
        plugins_.scan(PluginRegistry::default_dirs());
        plugins_scanned_ = true;
    }
    return plugins_.factory(kind);
}

InstanceLedger* Cli::ledger() {
    if (ledger_)
        return ledger_.get();
    if (!openCatalog())
        return nullptr;
    if (const std::string error = ledger_catalog_.open(catalog_path_.toStdString()); !error.empty()) {
        fail(kFailed, QString::fromStdString(error));
        return nullptr;
    }
    ledger_writer_ = std::make_unique<CatalogWriter>(ledger_catalog_);
    ledger_ = std::make_unique<CatalogInstanceLedger>(*ledger_writer_);
    return ledger_.get();
}

Backend* Cli::connect(const QString& name, int* exit) {
    *exit = kFailed;
    factory(QString()); // the plugins, scanned once
    if (name == "import") {
        *exit = kUsage;
        fail(kUsage, "an imported run has no backend: it was read from files, nothing runs it");
        return nullptr;
    }
    QVariantMap settings;
    QString kind;
    if (name == "local") {
        kind = "local";
        if (!options_.worker_state_dir.isEmpty())
            settings["state_dir"] = options_.worker_state_dir;
        else if (!QSettings().value("data/folder").toString().isEmpty())
            settings["state_dir"] = data_dir() + "/worker";
    } else if (name == "slurm") {
        kind = "slurm";
        settings = {{"slurm_rest", qEnvironmentVariable("TRAINDECK_SLURM_REST")},
                    {"slurm_token_file", qEnvironmentVariable("TRAINDECK_SLURM_TOKEN_FILE")},
                    {"slurm_user", qEnvironmentVariable("TRAINDECK_SLURM_USER")},
                    {"slurm_conf", qEnvironmentVariable("SLURM_CONF")}};
    } else {
        if (!openCatalog())
            return nullptr;
        std::optional<Catalog::BackendRow> found;
        for (const Catalog::BackendRow& row : catalog_.backends())
            if (QString::fromStdString(row.name) == name)
                found = row;
        if (!found) {
            *exit = kNotFound;
            fail(kNotFound, QString("no backend named \"%1\" (`backends` lists them)").arg(name));
            return nullptr;
        }
        kind = QString::fromStdString(found->kind);
        if (kind == "cloud") {
            // A provider file; no token (each instance's is read over ssh). "wait": a job is placed within its
            // submit, as this process exits after it.
            settings = {{"config", QString::fromStdString(found->url)}, {"name", name}, {"wait", true}};
        }
        QString token, error;
        if (kind != "cloud" && !TokenStore::load(name, &token, &error)) {
            fail(kFailed, QString("the token of worker \"%1\" is not in the keyring: %2").arg(name, error));
            return nullptr;
        }
        if (kind != "cloud")
            settings = {{"url", QString::fromStdString(found->url)},
                        {"token", token},
                        {"pinned_public_key", QString::fromStdString(found->pinned_public_key)}};
    }
    BackendFactory* plugin = plugins_.factory(kind);
    if (!plugin) {
        fail(kFailed, QString("the %1 backend plugin was not found in %2%3")
                          .arg(kind, PluginRegistry::default_dirs().join(", "),
                               plugins_.problems().isEmpty() ? QString() : ": " + plugins_.problems().join("; ")));
        return nullptr;
    }
    std::unique_ptr<Backend> backend(plugin->create(nullptr));
    if (kind == "cloud") {
        InstanceLedger* instances = ledger();
        if (!instances)
            return nullptr;
        backend->setInstanceLedger(instances);
    }
    QString error;
    if (!backend->open(settings, &error)) {
        fail(kFailed, QString("cannot reach backend \"%1\": %2").arg(name, error));
        return nullptr;
    }
    *exit = kOk;
    backends_.push_back(std::move(backend));
    return backends_.back().get();
}

int Cli::fail(int code, const QString& message) const {
    std::fprintf(stderr, "traindeck-cli: %s\n", qPrintable(message));
    return code;
}

void Cli::print(const nlohmann::json& document, const QString& text) const {
    if (options_.json)
        std::printf("%s\n", document.dump(2).c_str());
    else if (!text.isEmpty())
        std::printf("%s%s", qPrintable(text), text.endsWith('\n') ? "" : "\n");
    std::fflush(stdout);
}

std::optional<QString> take_option(QStringList& args, const QString& name) {
    for (int i = 0; i < args.size(); ++i) {
        if (args[i] == name && i + 1 < args.size()) {
            const QString value = args[i + 1];
            args.remove(i, 2);
            return value;
        }
        if (args[i].startsWith(name + "=")) {
            const QString value = args[i].mid(name.size() + 1);
            args.remove(i);
            return value;
        }
    }
    return std::nullopt;
}

bool take_flag(QStringList& args, const QString& name) { return args.removeAll(name) > 0; }

QString unknown_option(const QStringList& args) {
    for (const QString& arg : args)
        if (arg.startsWith("--") || (arg.startsWith('-') && arg.size() > 1 && !arg[1].isDigit()))
            return QString("unknown option %1 (--help lists them)").arg(arg);
    return {};
}

QString time_text(double seconds) {
    if (seconds <= 0)
        return {};
    // localtime_r, not QDateTime: Qt (and localtime) look at the time zone file again for every call, a stat each,
    // and ls formats 10,000 of them.
    const time_t time = static_cast<time_t>(seconds);
    struct tm local {};
    char text[32];
    if (!::localtime_r(&time, &local) || std::strftime(text, sizeof text, "%Y-%m-%d %H:%M", &local) == 0)
        return {};
    return QString::fromLatin1(text);
}

} // namespace traindeck::cli
