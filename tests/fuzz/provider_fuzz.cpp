// Fuzz target: a provider file as a user hands it in (parse_provider_config) and what a cloud's CLI prints back to
// the provider backend (parse_instance_list for list, last_word_line for create's id and address's destination), all
// on the same bytes.
// Properties, not just "does not crash":
//  - a refused file has a message and leaves the output config as it was;
//  - an accepted one has its four commands, at least one type (named by one word, each once, a finite price of at
//    least 0), at least one instance allowed, a boot timeout above 0; its create command expands with every
//    placeholder it may name, word for word;
//  - every id a list yields, and the id or address a last line yields, is one word of printable ASCII without quotes
//    (it becomes an argv word and a file name) of at most 200 bytes, found as such in the output.
#include "fuzzsupport.h"
#include "provider.h"

#include <cmath>
#include <cstdint>
#include <set>
#include <string>

using namespace traindeck::client;

namespace {

bool is_word(const std::string& word) {
    if (word.empty() || word.size() > 200)
        return false;
    for (const char c : word)
        if (c <= ' ' || c > '~' || c == '"' || c == '\'' || c == '\\')
            return false;
    return true;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);

    ProviderConfig config;
    config.label = "untouched";
    const std::string error = parse_provider_config(text, &config);
    if (!error.empty()) {
        FUZZ_CHECK(config.label == "untouched" && config.types.empty(), "a refused file changed the output");
    } else {
        FUZZ_CHECK(!config.create.empty() && !config.list.empty() && !config.address.empty() && !config.remove.empty(),
                   "an accepted file lacks a command");
        FUZZ_CHECK(!config.types.empty(), "an accepted file has no instance type");
        std::set<std::string> names;
        for (const InstanceType& type : config.types) {
            FUZZ_CHECK(is_word(type.name) && names.insert(type.name).second, "a type name that is no word, or twice");
            FUZZ_CHECK(std::isfinite(type.price_per_hour) && type.price_per_hour >= 0, "a price out of range");
            FUZZ_CHECK(type.gpus >= 0 && type.cpus >= 0 && type.memory_mb >= 0, "a negative size");
        }
        FUZZ_CHECK(config.max_instances >= 1 && config.boot_timeout_seconds > 0 && config.idle_seconds >= 0 &&
                       config.max_spend_per_hour >= 0,
                   "a limit out of range");
        std::string expand_error;
        const std::vector<std::string> argv = expand_command(
            config.create, {{"name", "td-x-1"}, {"type", "t"}, {"label", config.label}, {"spot", "spot"}},
            &expand_error);
        FUZZ_CHECK(expand_error.empty() && argv.size() == config.create.size(),
                   "an accepted create command does not expand");
    }

    std::vector<std::string> problems;
    for (const std::string& id : parse_instance_list(text, &problems))
        FUZZ_CHECK(is_word(id) && text.find(id) != std::string::npos, "a listed id that is no word of the output");
    const std::string last = last_word_line(text);
    FUZZ_CHECK(last.empty() || (is_word(last) && text.find(last) != std::string::npos),
               "a last line that is no word of the output");
    return 0;
}
