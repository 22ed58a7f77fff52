// traindeck-cli: the console's catalog and backends from a terminal or a login node (README: Command line).
// Global options anywhere on the line, then a command and its arguments; human text on stdout, --json for scripts,
// errors on stderr, and exit codes that say what happened (cli.h: Exit).
#include "cli.h"

#include <QCoreApplication>

#include <cstdio>
#include <cstring>
#include <map>

using namespace traindeck::cli;

namespace {

void print_usage() {
    std::printf(
        "usage: traindeck-cli [--catalog FILE] [--worker-state-dir DIR] [--json] COMMAND [ARGS]\n"
        "\n"
        "The console's runs and backends from a terminal; safe to use while the console is open.\n"
        "\n"
        "commands:\n"
        "  ls [QUERY] [--limit N]         runs matching the runs table's query (README: Query runs), newest first\n"
        "  show RUN                       one run: state, config, every metric's summary, source, artifacts\n"
        "  submit SPEC.json [--backend NAME] [--name NAME]\n"
        "                                 a job request or a built-in trainer spec, on local (default) or NAME\n"
        "  logs [-f] [--metrics] RUN      the job's output lines; -f follows it until it ends\n"
        "  cancel RUN                     stops the job (it writes a checkpoint first)\n"
        "  resume RUN [--budget DOLLARS]  continues a stopped, cancelled or failed job from its checkpoint\n"
        "  export RUN [--csv FILE] [--jsonl FILE] [--tensorboard DIR] [--onnx DIR [--no-int8]]\n"
        "                                 the run's curves as a table or event files; its model as ONNX\n"
        "  import PATH... [--format tensorboard|mlflow|wandb|csv|jsonl] [--include-deleted] [--follow [--interval "
        "MS]]\n"
        "                                 runs of other tools (a logdir, mlruns/, wandb/, metric files); --follow\n"
        "                                 keeps importing what is written there until Ctrl+C\n"
        "  backends [--check]             where jobs can go; --check connects to each\n"
        "  add-host NAME HOST [--ssh-config FILE] [--state-dir DIR] [--install]\n"
        "                                 a machine you can ssh into (user@host[:port] or a Host of ~/.ssh/config) as\n"
        "                                 the backend NAME: its worker started there and reached through an ssh\n"
        "                                 forward; without one of this build it prints the install commands, and\n"
        "                                 --install runs them\n"
        "  add-provider NAME FILE         a cloud provider file as the backend NAME: instances rented when jobs\n"
        "                                 need them and deleted when idle (see README: Cloud providers)\n"
        "  instances [NAME] [--all]       the instances providers rented and live (--all: also those that ended),\n"
        "                                 with their cost\n"
        "  release NAME INSTANCE          deletes one of provider NAME's instances now\n"
        "\n"
        "RUN is a run's id (the ID column of ls) or its exact name.\n"
        "  --catalog FILE           the catalog (default: the console's, $XDG_DATA_HOME/traindeck/catalog.db)\n"
        "  --worker-state-dir DIR   the local worker's state folder (default: the console's)\n"
        "  --json                   machine-readable output\n"
        "\n"
        "exit codes: 0 done, 1 failed (a backend refused or was unreachable, a file could not be written; logs -f: "
        "the\n"
        "            job did not succeed), 2 bad arguments, 3 imported with damage (each piece reported), 4 no such\n"
        "            run or backend\n");
}

} // namespace

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    QCoreApplication::setOrganizationName("traindeck"); // the console's QSettings (its data folder)
    QCoreApplication::setApplicationName("traindeck");
    const QStringList all = QCoreApplication::arguments().mid(1);
    Options options;
    QString command;
    for (int i = 0; i < all.size(); ++i) {
        const QString& arg = all[i];
        if (arg == "--help" || arg == "-h") {
            print_usage();
            return kOk;
        }
        if (arg == "--version") {
            std::printf("traindeck-cli %s\n", TRAINDECK_VERSION);
            return kOk;
        }
        if (arg == "--json") {
            options.json = true;
        } else if (arg == "--catalog" || arg == "--worker-state-dir") {
            if (i + 1 >= all.size()) {
                std::fprintf(stderr, "traindeck-cli: %s needs a value\n", qPrintable(arg));
                return kUsage;
            }
            (arg == "--catalog" ? options.catalog : options.worker_state_dir) = all[++i];
        } else if (arg.startsWith("--catalog=")) {
            options.catalog = arg.mid(10);
        } else if (arg.startsWith("--worker-state-dir=")) {
            options.worker_state_dir = arg.mid(19);
        } else if (command.isEmpty() && !arg.startsWith('-')) {
            command = arg;
        } else {
            options.args << arg;
        }
    }
    const std::map<QString, int (*)(Cli&)> commands = {{"ls", cmd_ls},
                                                       {"show", cmd_show},
                                                       {"logs", cmd_logs},
                                                       {"import", cmd_import},
                                                       {"export", cmd_export},
                                                       {"submit", cmd_submit},
                                                       {"cancel", cmd_cancel},
                                                       {"resume", cmd_resume},
                                                       {"backends", cmd_backends},
                                                       {"add-host", cmd_add_host},
                                                       {"add-provider", cmd_add_provider},
                                                       {"instances", cmd_instances},
                                                       {"release", cmd_release}};
    if (command.isEmpty()) {
        print_usage();
        return kUsage;
    }
    const auto found = commands.find(command);
    if (found == commands.end()) {
        std::fprintf(stderr, "traindeck-cli: unknown command \"%s\" (--help lists them)\n", qPrintable(command));
        return kUsage;
    }
    Cli cli(std::move(options));
    // A database error the command did not expect (the catalog damaged, or held by another program past the busy
    // timeout) is said and ends it with 1, never an abort.
    try {
        return found->second(cli);
    } catch (const std::exception& e) {
        return cli.fail(kFailed, QString("the catalog %1 could not be used: %2").arg(cli.catalogPath(), e.what()));
    }
}
