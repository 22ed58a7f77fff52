// posix_spawn with file actions and attributes built from SpawnOptions; Environment over "KEY=value" strings.
#include "process.h"

#include <algorithm>
#include <csignal>
#include <utility>

#include <fcntl.h>
#include <spawn.h>

extern char** environ;

namespace traindeck {

Environment Environment::current() {
    Environment env;
    for (char** entry = environ; *entry; ++entry)
        env.entries_.emplace_back(*entry);
    return env;
}

Environment Environment::from_entries(const std::vector<std::string>& entries) {
    Environment env;
    env.set_entries(entries);
    return env;
}

std::optional<std::string> Environment::get(std::string_view key) const {
    for (const std::string& entry : entries_)
        if (key_of(entry) == key && entry.size() > key.size())
            return entry.substr(key.size() + 1);
    return std::nullopt;
}

void Environment::set(std::string_view key, std::string_view value) {
    std::string entry = std::string(key) + "=" + std::string(value);
    for (std::string& existing : entries_)
        if (key_of(existing) == key) {
            existing = std::move(entry);
            return;
        }
    entries_.push_back(std::move(entry));
}

void Environment::set_entries(const std::vector<std::string>& entries) {
    for (const std::string& entry : entries) {
        const size_t eq = entry.find('=');
        if (eq != std::string::npos)
            set(std::string_view(entry).substr(0, eq), std::string_view(entry).substr(eq + 1));
    }
}

void Environment::erase(std::string_view key) {
    std::erase_if(entries_, [&](const std::string& entry) { return key_of(entry) == key; });
}

CStringArray::CStringArray(std::vector<std::string> words) : words_(std::move(words)) {
    for (std::string& word : words_)
        pointers_.push_back(word.data());
    pointers_.push_back(nullptr);
}

pid_t spawn_process(const SpawnOptions& options, int& error_number) {
    error_number = 0;
    if (options.argv.empty()) {
        error_number = EINVAL;
        return -1;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (!options.stdin_path.empty())
        posix_spawn_file_actions_addopen(&actions, 0, options.stdin_path.c_str(), O_RDONLY, 0);
    if (!options.output_path.empty()) {
        posix_spawn_file_actions_addopen(&actions, 1, options.output_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
        posix_spawn_file_actions_adddup2(&actions, 1, 2);
    }
    for (const auto& [here, in_child] : options.fds)
        posix_spawn_file_actions_adddup2(&actions, here, in_child);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    short flags = 0;
    if (options.new_session)
        flags |= POSIX_SPAWN_SETSID;
    if (!options.blocked_signals.empty()) {
        sigset_t blocked;
        sigemptyset(&blocked);
        for (int signal : options.blocked_signals)
            sigaddset(&blocked, signal);
        posix_spawnattr_setsigmask(&attributes, &blocked);
        flags |= POSIX_SPAWN_SETSIGMASK;
    }
    posix_spawnattr_setflags(&attributes, flags);
    const Environment inherited = options.environment ? Environment() : Environment::current();
    const CStringArray argv(options.argv);
    const CStringArray envp((options.environment ? *options.environment : inherited).entries());
    pid_t pid = -1;
    const auto spawn = options.search_path ? ::posix_spawnp : ::posix_spawn;
    const int rc = spawn(&pid, options.argv.front().c_str(), &actions, &attributes, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (rc != 0) {
        error_number = rc;
        return -1;
    }
    return pid;
}

} // namespace traindeck
