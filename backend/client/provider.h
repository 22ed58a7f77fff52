#pragma once
// An elastic provider: a cloud (or anything that hands out machines one can ssh into) described by a small JSON file
// of the commands that create, list, address and delete an instance, each an argv template (the cloud's own CLI:
// aws, gcloud, ...; never a shell), the instance types with what they have and what they cost, and the limits that
// keep a bill from running away. The provider backend (providerbackend.h) rents, uses and releases instances with
// it. Plain C++, no Qt: the parsers here read a user's file and a cloud CLI's output, and have a fuzz target.
//
//   {"label": "traindeck",
//    "create":  ["aws", "ec2", "run-instances", "--instance-type", "{type}", "...", "Key=Name,Value={name}"],
//    "list":    ["aws", "ec2", "describe-instances", "--filters", "Name=tag:traindeck,Values={label}", "..."],
//    "address": ["aws", "ec2", "describe-instances", "--instance-ids", "{id}", "..."],
//    "delete":  ["aws", "ec2", "terminate-instances", "--instance-ids", "{id}"],
//    "ssh": {"user": "ubuntu", "options": ["IdentityFile=~/.ssh/cloud"]},
//    "types": [{"name": "g5.xlarge", "gpus": 1, "cpus": 4, "memory_mb": 16384, "price_per_hour": 1.006}],
//    "max_instances": 2, "max_spend_per_hour": 3.0, "idle_minutes": 5, "boot_timeout_minutes": 10}
//
// Placeholders, replaced inside any word: {name} (TrainDeck's name for the instance, also its label's value),
// {type}, {label}, {spot} ("spot" or "on-demand"), {id} (what create printed). create prints the instance's id as
// its last line (none: the id is the name); list prints one instance a line, its id first (lines starting with '#'
// are comments); address prints the ssh destination as its last line (host, host:port, user@host[:port]).
#include <atomic>
#include <map>
#include <string>
#include <vector>

namespace traindeck::client {

struct InstanceType {
    std::string name;
    int gpus = 0, cpus = 0;
    long long memory_mb = 0;
    double price_per_hour = 0;
    bool spot = false;
};

struct ProviderConfig {
    std::string label = "traindeck";
    std::vector<std::string> create, list, address, remove; // "delete" in the file
    std::string ssh_user, ssh_config;
    std::vector<std::string> ssh_options; // more -o NAME=VALUE
    std::string state_dir;                // the worker's state folder on an instance ("" its default)
    std::vector<InstanceType> types;      // in the file's order
    int max_instances = 1;
    double max_spend_per_hour = 0; // 0: no ceiling; the sum of the live instances' prices
    double idle_seconds = 300;     // an instance whose queue stayed empty this long is deleted
    double boot_timeout_seconds = 600;
    double command_timeout_seconds = 120; // each create, list, address, delete
};

// "" or why the file cannot be used, naming the key (and *config filled).
std::string parse_provider_config(const std::string& text, ProviderConfig* config);

// The template with its placeholders replaced from vars; "" and *error when it names one not in vars.
std::vector<std::string> expand_command(const std::vector<std::string>& words,
                                        const std::map<std::string, std::string>& vars, std::string* error);

// The ids of a list command's output (the first word of each line that is not blank or a comment), each checked:
// printable ASCII without quotes or spaces, at most 200 bytes; a line that is not is said in *problems.
std::vector<std::string> parse_instance_list(const std::string& output, std::vector<std::string>* problems);

// The last non-blank line of output, trimmed and checked as list's ids are ("" when none or it is not one).
std::string last_word_line(const std::string& output);

// Runs a provider command (argv, PATH searched) for at most seconds; *output its stdout. False and *error (which
// command, its exit, its last line of stderr) when it did not succeed.
bool run_provider_command(const std::vector<std::string>& argv, double seconds, std::string* output, std::string* error,
                          const std::atomic<bool>* abort = nullptr);

} // namespace traindeck::client
