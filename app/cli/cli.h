#pragma once
// traindeck-cli's shared parts: the catalog and backends the console uses (the same files, the same plugins, the same
// keyring), how a run is named on the command line, and how a command speaks (human text on stdout, --json for
// scripts, errors on stderr, exit codes that mean something). Each command is a function of cli.cpp's table.
#include "backend.h"
#include "catalog.h"
#include "catalogledger.h"
#include "pluginregistry.h"

#include <QString>
#include <QStringList>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

namespace traindeck::cli {

// What the program's exit status means (README: Command line).
enum Exit : int {
    kOk = 0,
    kFailed = 1,   // the command could not do it: a backend refused or was unreachable, a file could not be written
    kUsage = 2,    // bad arguments
    kDamaged = 3,  // import: done, but some of the source was damaged (each piece reported)
    kNotFound = 4, // no such run or backend
};

struct Options {
    QString catalog, worker_state_dir;
    bool json = false;
    QStringList args; // the command's own arguments and options, in order
};

class Cli {
public:
    explicit Cli(Options options) : options_(std::move(options)) {}

    const Options& options() const { return options_; }
    bool json() const { return options_.json; }

    // Opens the catalog (once): the console's file unless --catalog names another. False, said on stderr, when not.
    bool openCatalog();
    Catalog& catalog() { return catalog_; }
    const QString& catalogPath() const { return catalog_path_; }

    // A run named by its id or its exact name; nothing (and the reason said, with the exit code in *exit) when no run
    // or several have it.
    std::optional<RunRecord> findRun(const QString& name, int* exit);

    // The backend of that name, connected (local: started or attached; a remote worker: with its keyring token and
    // pinned key; slurm: as configured by $TRAINDECK_SLURM_*). Null, said on stderr, when not; *exit says why.
    Backend* connect(const QString& name, int* exit);
    // The backends a job can go to: local, slurm when configured, the remote workers the catalog has.
    struct BackendInfo {
        QString name, kind, url;
    };
    std::vector<BackendInfo> backends();
    // The plugin of that kind ("local", "worker", "ssh", "cloud", "slurm"), or nullptr.
    BackendFactory* factory(const QString& kind);
    // What cloud providers rent, in the catalog (written on a connection and thread of its own, as the console
    // does); null, said on stderr, when the catalog does not open.
    InstanceLedger* ledger();

    // An error on stderr ("traindeck-cli: ..."); returns code.
    int fail(int code, const QString& message) const;
    // A result: the JSON document with --json, else the text.
    void print(const nlohmann::json& document, const QString& text) const;

private:
    Options options_;
    QString catalog_path_;
    Catalog catalog_;
    bool catalog_open_ = false;
    PluginRegistry plugins_;
    bool plugins_scanned_ = false;
    // Before the backends: they go first.
    Catalog ledger_catalog_;
    std::unique_ptr<CatalogWriter> ledger_writer_;
    std::unique_ptr<CatalogInstanceLedger> ledger_;
    std::vector<std::unique_ptr<Backend>> backends_;
};

// The commands: each takes the Cli and returns the exit status.
int cmd_ls(Cli& cli);
int cmd_add_provider(Cli& cli);
int cmd_instances(Cli& cli);
int cmd_release(Cli& cli);
int cmd_show(Cli& cli);
int cmd_logs(Cli& cli);
int cmd_import(Cli& cli);
int cmd_export(Cli& cli);
int cmd_submit(Cli& cli);
int cmd_cancel(Cli& cli);
int cmd_resume(Cli& cli);
int cmd_backends(Cli& cli);
int cmd_add_host(Cli& cli);

// The value of "--name VALUE" / "--name=VALUE" in args (removed from them), or nothing.
std::optional<QString> take_option(QStringList& args, const QString& name);
bool take_flag(QStringList& args, const QString& name);
// The arguments left must be plain (no unknown --option): "" or a message naming the first unknown one.
QString unknown_option(const QStringList& args);

// Seconds since the epoch as local "yyyy-MM-dd HH:mm", "" for 0.
QString time_text(double seconds);

} // namespace traindeck::cli
