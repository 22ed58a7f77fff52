// traindeck-train sweep: starts a sweep on a worker from a terminal (a login node, a script) and, with --watch,
// follows it to its end. The worker runs the sweep; this command only hands it over and reads its state, so
// closing the terminal stops nothing. The spec is checked here first, with the worker's own rules.
#include "sweepcommand.h"

#include "sweepspec.h"
#include "workerclient.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>

namespace traindeck::app {

namespace {

using nlohmann::json;

constexpr int kDone = 0, kNotFinished = 1, kUsage = 2, kRefused = 3;

void print_sweep_usage() {
    std::printf(
        "usage: traindeck-train sweep SPEC.json --worker URL [--token-file FILE] [--ca FILE] [--watch]\n"
        "       traindeck-train sweep --status ID --worker URL [--token-file FILE] [--ca FILE] [--watch]\n"
        "\n"
        "Starts the sweep SPEC.json describes (README: Sweeps) on the worker at URL, or shows sweep ID's state.\n"
        "The worker runs it, with or without a console or this command watching.\n"
        "  --worker URL       http://127.0.0.1:PORT (its STATE_DIR/port) or https://host:port\n"
        "  --token-file FILE  the worker's bearer token (STATE_DIR/token); default: $TRAINDECK_TOKEN\n"
        "  --ca FILE          the CA or self-signed certificate to trust for https\n"
        "  --watch            print each trial as it changes until the sweep is no longer running\n"
        "\n"
        "exit codes: 0 created (or, with --watch, finished), 1 with --watch: stopped or budget spent, 2 bad arguments\n"
        "            or spec, 3 the worker refused or could not be reached\n");
}

bool read_text(const std::string& path, std::string& out) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return false;
    std::stringstream buffer;
    buffer << in.rdbuf();
    out = buffer.str();
    return true;
}

std::string trial_line(const json& trial) {
    std::string line = "  #" + trial.value("trial", json()).dump() + " " + trial.value("state", std::string("?"));
    if (trial.contains("rung"))
        line += " rung " + trial["rung"].dump();
    if (trial.contains("best") && trial["best"].is_number())
        line += " best " + trial["best"].dump();
    if (trial.contains("params"))
        line += " " + trial["params"].dump();
    return line;
}

int watch(client::WorkerClient& client, const std::string& id, bool follow) {
    std::map<int64_t, std::string> shown;
    for (;;) {
        const client::HttpResponse response = client.get("/v1/sweeps/" + id);
        const json sweep = response.json();
        if (!response.ok() || !sweep.is_object()) {
            std::fprintf(stderr, "traindeck-train: cannot read sweep %s: %s\n", id.c_str(), response.message().c_str());
            return kRefused;
        }
        for (const json& trial : sweep.value("trials", json::array())) {
            const std::string line = trial_line(trial);
            std::string& before = shown[trial.value("trial", int64_t(0))];
            if (line != before)
                std::printf("%s\n", line.c_str());
            before = line;
        }
        const std::string state = sweep.value("state", std::string());
        if (!follow || state != "running") {
            std::printf("sweep %s: %s — %s; spent %s\n", id.c_str(), state.c_str(),
                        sweep.value("reason", std::string()).c_str(), sweep.value("spend", json(0)).dump().c_str());
            std::fflush(stdout);
            return state == "finished" || !follow ? kDone : kNotFinished;
        }
        std::fflush(stdout);
        std::this_thread::sleep_for(std::chrono::seconds(1));
    }
}

} // namespace

int run_sweep(int argc, char** argv) {
    std::string spec_path, url, token_file, ca_file, status;
    bool follow = false;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "traindeck-train sweep: %s needs a value (see --help)\n", arg.c_str());
                std::exit(kUsage);
            }
            return argv[++i];
        };
        if (arg == "--help" || arg == "-h") {
            print_sweep_usage();
            return kDone;
        } else if (arg == "--worker") {
            url = value();
        } else if (arg == "--token-file") {
            token_file = value();
        } else if (arg == "--ca") {
            ca_file = value();
        } else if (arg == "--status") {
            status = value();
        } else if (arg == "--watch") {
            follow = true;
        } else if (!arg.starts_with("-") && spec_path.empty()) {
            spec_path = arg;
        } else {
            std::fprintf(stderr, "traindeck-train sweep: unknown argument \"%s\" (see --help)\n", arg.c_str());
            return kUsage;
        }
    }
    if (url.empty() || (spec_path.empty() == status.empty())) {
        std::fprintf(stderr, "traindeck-train sweep: give SPEC.json or --status ID, and --worker URL (see --help)\n");
        return kUsage;
    }
    std::string token;
    if (!token_file.empty()) {
        if (!read_text(token_file, token)) {
            std::fprintf(stderr, "traindeck-train sweep: cannot read the token file %s\n", token_file.c_str());
            return kUsage;
        }
    } else if (const char* env = std::getenv("TRAINDECK_TOKEN")) {
        token = env;
    }
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' '))
        token.pop_back();
    client::WorkerClient client(url, token);
    if (!ca_file.empty())
        client.set_tls({}, ca_file);
    if (!status.empty())
        return watch(client, status, follow);

    std::string text;
    if (!read_text(spec_path, text)) {
        std::fprintf(stderr, "traindeck-train sweep: cannot read %s\n", spec_path.c_str());
        return kUsage;
    }
    const json spec = json::parse(text, nullptr, false);
    if (spec.is_discarded()) {
        std::fprintf(stderr, "traindeck-train sweep: %s is not valid JSON\n", spec_path.c_str());
        return kUsage;
    }
    sweep::SweepSpec parsed;
    if (const std::string error = sweep::parse_sweep_spec(spec, parsed); !error.empty()) {
        std::fprintf(stderr, "traindeck-train sweep: %s: %s\n", spec_path.c_str(), error.c_str());
        return kUsage;
    }
    const client::HttpResponse response = client.post("/v1/sweeps", spec, 60000);
    const json reply = response.json();
    if (!response.ok() || !reply.is_object() || !reply.contains("id")) {
        std::fprintf(stderr, "traindeck-train sweep: the worker did not start it: %s\n", response.message().c_str());
        return kRefused;
    }
    const std::string id = reply["id"].dump();
    std::printf("sweep %s started on %s (%d trials at most, %d at once)\n", id.c_str(), url.c_str(), parsed.max_trials,
                parsed.max_concurrent);
    std::fflush(stdout);
    return follow ? watch(client, id, true) : kDone;
}

} // namespace traindeck::app
