#include "capture.h"

#include "atomicfile.h"
#include "clock.h"
#include "manifest.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <sstream>

#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

namespace traindeck::worker {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Never captured, whatever the folder's rules say: what holds credentials by its name.
const std::vector<std::string>& secret_patterns() {
    static const std::vector<std::string> patterns = {".env",
                                                      ".env.*",
                                                      "*.env",
                                                      ".envrc",
                                                      "*.pem",
                                                      "*.key",
                                                      "*.p12",
                                                      "*.pfx",
                                                      "*.jks",
                                                      "*.keystore",
                                                      "*.kdbx",
                                                      "id_rsa*",
                                                      "id_dsa*",
                                                      "id_ecdsa*",
                                                      "id_ed25519*",
                                                      ".netrc",
                                                      ".pgpass",
                                                      ".npmrc",
                                                      ".pypirc",
                                                      ".git-credentials",
                                                      "credentials",
                                                      "credentials.json",
                                                      "*credentials*.json",
                                                      "service-account*.json",
                                                      "*.token",
                                                      "token",
                                                      ".bash_history",
                                                      ".zsh_history",
                                                      ".python_history",
                                                      ".ssh/",
                                                      ".aws/",
                                                      ".gnupg/",
                                                      ".kube/",
                                                      ".docker/",
                                                      ".config/",
                                                      ".cache/",
                                                      ".local/"};
    return patterns;
}

// A .gitignore-style glob against a relative path: "name" matches that name as any part of the path, "dir/"
// any folder of that name, "/x" and "a/b" are anchored at the root, "*" does not cross '/'.
bool pattern_matches(std::string pattern, std::string_view path) {
    if (pattern.empty())
        return false;
    const bool folder_only = pattern.back() == '/';
    if (folder_only)
        pattern.pop_back();
    const bool anchored = pattern.find('/') != std::string::npos;
    if (!pattern.empty() && pattern.front() == '/')
        pattern.erase(0, 1);
    const std::string text(path);
    if (anchored) {
        // The pattern names the path, or one of its folders.
        for (size_t end = 0; end != std::string::npos;) {
            end = text.find('/', end + 1);
            const std::string prefix = text.substr(0, end);
            if ((end != std::string::npos || !folder_only) &&
                ::fnmatch(pattern.c_str(), prefix.c_str(), FNM_PATHNAME) == 0)
                return true;
        }
        return false;
    }
    size_t start = 0;
    for (;;) {
        const size_t end = text.find('/', start);
        const std::string part = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
        if ((end != std::string::npos || !folder_only) && ::fnmatch(pattern.c_str(), part.c_str(), 0) == 0)
            return true;
        if (end == std::string::npos)
            return false;
        start = end + 1;
    }
}

std::string trimmed(std::string text) {
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
        text.pop_back();
    size_t start = 0;
    while (start < text.size() && std::isspace(static_cast<unsigned char>(text[start])))
        ++start;
    return text.substr(start);
}

std::vector<std::string> split_nul(const std::string& text) {
    std::vector<std::string> parts;
    for (size_t start = 0; start < text.size();) {
        size_t end = text.find('\0', start);
        if (end == std::string::npos)
            end = text.size();
        if (end > start)
            parts.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    return parts;
}

// A .gitignore-style file's patterns (comments, blank lines and negations skipped: negations are noted).
std::vector<std::string> read_patterns(const std::string& path, std::vector<std::string>* negations = nullptr) {
    std::vector<std::string> patterns;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) {
        line = trimmed(line);
        if (line.empty() || line[0] == '#')
            continue;
        if (line[0] == '!') {
            if (negations)
                negations->push_back(line);
            continue;
        }
        patterns.push_back(line);
    }
    return patterns;
}

ProgramResult git(const std::string& folder, std::vector<std::string> args, double seconds = 30) {
    SpawnOptions options;
    options.argv = {"git", "-C", folder};
    options.argv.insert(options.argv.end(), args.begin(), args.end());
    options.search_path = true;
    // The user's own git config applies (safe.directory, core settings), but never a pager, a prompt or an editor.
    Environment env = Environment::current();
    env.set("GIT_TERMINAL_PROMPT", "0");
    env.set("GIT_OPTIONAL_LOCKS", "0"); // a capture must not take the index lock from the user's own git
    env.set("LC_ALL", "C");
    options.environment = env;
    return run_program(options, {.seconds = seconds, .max_output = size_t(64) << 20});
}

struct CachedFile {
    int64_t size = 0, mtime = 0, ctime = 0, inode = 0;
    std::string sha256;
};

int64_t nanoseconds(const timespec& t) { return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec; }

// A text file's content as a "new file" section of a git diff (untracked files: git diff leaves them out).
std::string new_file_diff(const std::string& path, std::string_view bytes) {
    std::string out =
        "diff --git a/" + path + " b/" + path + "\nnew file mode 100644\n--- /dev/null\n+++ b/" + path + "\n";
    if (bytes.find('\0') != std::string_view::npos)
        return out + "Binary file " + path + " (untracked, in the snapshot)\n";
    size_t lines = std::count(bytes.begin(), bytes.end(), '\n') + (!bytes.empty() && bytes.back() != '\n');
    out += "@@ -0,0 +1," + std::to_string(lines) + " @@\n";
    for (size_t start = 0; start < bytes.size();) {
        size_t end = bytes.find('\n', start);
        if (end == std::string_view::npos)
            end = bytes.size();
        out += "+";
        out.append(bytes.substr(start, end - start));
        out += "\n";
        start = end + 1;
    }
    return out;
}

// The diff without the sections of secret files (a tracked .env changed must not reach the catalog).
std::string without_secret_sections(const std::string& diff, const std::vector<std::string>& patterns,
                                    std::vector<std::string>& dropped) {
    std::string out;
    size_t start = 0;
    while (start < diff.size()) {
        size_t next = diff.find("\ndiff --git ", start);
        next = next == std::string::npos ? diff.size() : next + 1;
        const std::string_view section(diff.data() + start, next - start);
        bool keep = true;
        if (section.starts_with("diff --git a/")) {
            const size_t space = section.find(" b/");
            const size_t line_end = section.find('\n');
            if (space != std::string_view::npos) {
                const std::string a(section.substr(13, space - 13));
                const std::string b(section.substr(space + 3, line_end - space - 3));
                if (!secret_rule(a, patterns).empty() || !secret_rule(b, patterns).empty()) {
                    keep = false;
                    dropped.push_back(b);
                }
            }
        }
        if (keep)
            out.append(section);
        start = next;
    }
    return out;
}

// At most `limit` bytes of a file; "" when it cannot be read.
std::string read_small_file(const std::string& path, size_t limit = 1 << 20, bool follow_links = true) {
    std::string text;
    if (!read_file_upto(path, limit, text, follow_links))
        text.clear();
    return text;
}

} // namespace

std::string secret_rule(std::string_view path, const std::vector<std::string>& patterns) {
    for (const std::string& pattern : secret_patterns())
        if (pattern_matches(pattern, path))
            return pattern;
    for (const std::string& pattern : patterns)
        if (pattern_matches(pattern, path))
            return pattern;
    return {};
}

std::string strip_credentials(const std::string& url) {
    const size_t scheme = url.find("://");
    if (scheme == std::string::npos)
        return url; // scp-like "git@host:path": the user is no secret
    const size_t host_start = scheme + 3;
    const size_t path_start = url.find('/', host_start);
    const size_t at = url.rfind('@', path_start == std::string::npos ? std::string::npos : path_start);
    if (at == std::string::npos || at < host_start)
        return url;
    return url.substr(0, host_start) + url.substr(at + 1);
}

json redact_environment(const std::vector<std::string>& entries) {
    static const char* secret_words[] = {
        "TOKEN",   "SECRET",   "PASSWORD",   "PASSWD", "PASSPHRASE", "CREDENTIAL", "CREDS",   "PRIVATE",
        "API_KEY", "APIKEY",   "ACCESS_KEY", "JWT",    "AUTH",       "COOKIE",     "SESSION", "CONNECTION_STRING",
        "DSN",     "SIGNATURE"};
    json out = json::object();
    for (const std::string& entry : entries) {
        const size_t eq = entry.find('=');
        if (eq == std::string::npos)
            continue;
        const std::string key = entry.substr(0, eq);
        std::string upper = key;
        std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
        bool secret = upper.ends_with("_KEY") || upper == "KEY" || upper.ends_with("_PASS") || upper.ends_with("_PAT");
        for (const char* word : secret_words)
            secret = secret || upper.find(word) != std::string::npos;
        const std::string value = entry.substr(eq + 1);
        out[key] = secret ? "(hidden)" : value.find("://") != std::string::npos ? strip_credentials(value) : value;
    }
    return out;
}

json capture_code(const std::string& cwd, dataset::ContentStore& store, const CaptureLimits& limits) {
    const double started = wall_seconds();
    json info = {{"cwd", cwd}};
    json problems = json::array();
    std::error_code ec;
    if (!fs::is_directory(cwd, ec)) {
        info["kind"] = "none";
        problems.push_back("the working folder " + cwd + " does not exist");
        info["problems"] = problems;
        return info;
    }
    // Where the snapshot is rooted: the repository's top, or the working folder itself.
    std::string root = fs::weakly_canonical(cwd, ec).string();
    std::vector<std::string> candidates; // relative to root
    std::string diff;
    std::vector<std::string> untracked;
    const ProgramResult top = git(root, {"rev-parse", "--show-toplevel"});
    const bool in_git = top.ok() && !trimmed(top.output).empty();
    if (in_git)
        root = trimmed(top.output);
    // Never captured: the worker's patterns and the folder's own (.traindeckignore), besides the built-in secrets.
    std::vector<std::string> patterns = limits.exclude;
    for (const std::string& own : read_patterns(root + "/.traindeckignore"))
        patterns.push_back(own);
    if (in_git) {
        info["kind"] = "git";
        // Four questions at once: a capture holds up the job's start.
        auto status = std::async(std::launch::async, git, root,
                                 std::vector<std::string>{"-c", "core.quotePath=false", "status", "--porcelain=v2",
                                                          "--branch", "-z", "--untracked-files=all"},
                                 30.0);
        auto files =
            std::async(std::launch::async, git, root,
                       std::vector<std::string>{"ls-files", "-z", "--cached", "--others", "--exclude-standard"}, 30.0);
        // The diff as it is read back (a/ and b/ prefixes, paths unquoted) whatever the user's git config says, and
        // without the secrets' files at all: git is told to leave them out, and what it prints is filtered again.
        std::vector<std::string> diff_args = {"-c",
                                              "core.quotePath=false",
                                              "-c",
                                              "diff.noprefix=false",
                                              "-c",
                                              "diff.mnemonicPrefix=false",
                                              "diff",
                                              "HEAD",
                                              "--no-color",
                                              "--no-ext-diff",
                                              "--no-textconv",
                                              "--src-prefix=a/",
                                              "--dst-prefix=b/",
                                              "--",
                                              "."};
        std::vector<std::string> all_patterns = secret_patterns();
        all_patterns.insert(all_patterns.end(), patterns.begin(), patterns.end());
        for (std::string pattern : all_patterns) {
            const bool folder_only = !pattern.empty() && pattern.back() == '/';
            if (folder_only)
                pattern.pop_back();
            const bool anchored = pattern.find('/') != std::string::npos;
            if (!pattern.empty() && pattern.front() == '/')
                pattern.erase(0, 1);
            const std::string glob = (anchored ? "" : "**/") + pattern;
            diff_args.push_back(":(exclude,glob)" + glob);
            diff_args.push_back(":(exclude,glob)" + glob + "/**");
        }
        auto changes = std::async(std::launch::async, git, root, diff_args, 30.0);
        const ProgramResult remote = git(root, {"config", "--get", "remote.origin.url"});
        info["remote"] = remote.ok() ? strip_credentials(trimmed(remote.output)) : "";
        const ProgramResult state = status.get();
        std::string commit, branch;
        for (const std::string& line : split_nul(state.output)) {
            if (line.starts_with("# branch.oid "))
                commit = line.substr(13);
            else if (line.starts_with("# branch.head "))
                branch = line.substr(14);
            else if (line.starts_with("? "))
                untracked.push_back(line.substr(2));
        }
        if (!state.ok())
            problems.push_back("git status failed: " + trimmed(state.errors));
        info["commit"] = commit == "(initial)" ? "" : commit;
        info["branch"] = branch;
        const ProgramResult listed = files.get();
        if (!listed.ok())
            problems.push_back("git ls-files failed: " + trimmed(listed.errors));
        candidates = split_nul(listed.output);
        const ProgramResult changed = changes.get();
        if (changed.ok())
            diff = changed.output;
        else if (!info["commit"].get<std::string>().empty())
            problems.push_back("git diff failed: " + trimmed(changed.errors));
        std::sort(candidates.begin(), candidates.end());
        candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
    } else {
        info["kind"] = "folder";
        // Outside git: every file under the folder but what is never code (version control, caches, virtual
        // environments) and what its .gitignore names (simple patterns: a negation "!x" is not followed).
        std::vector<std::string> negations;
        std::vector<std::string> ignored = read_patterns(root + "/.gitignore", &negations);
        for (const std::string& negation : negations)
            problems.push_back(".gitignore's \"" + negation +
                               "\" is not followed outside git: what it keeps may be left out");
        // Hidden folders too: version control, caches, tools' settings and credentials (~/.config, ~/.kube, ...).
        static const std::vector<std::string> skipped = {".*/", "__pycache__/", "node_modules/", "*.pyc"};
        ignored.insert(ignored.end(), skipped.begin(), skipped.end());
        const int give_up = limits.max_files * 4;
        int64_t visited = 0;
        for (fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
             it != end; it.increment(ec)) {
            if (++visited > int64_t(give_up) * 5) { // ignored entries count too: a home folder is not walked whole
                problems.push_back("stopped looking after " + std::to_string(visited - 1) +
                                   " entries: is the working folder a project's folder?");
                break;
            }
            const std::string relative = fs::relative(it->path(), root, ec).generic_string();
            const bool folder = it->is_directory(ec) && !it->is_symlink(ec);
            bool skip = false;
            for (const std::string& pattern : ignored)
                if (pattern_matches(pattern, folder ? relative + "/" : relative) ||
                    (folder && pattern_matches(pattern, relative + "/x")))
                    skip = true;
            if (folder) {
                // A virtual environment, whatever its name.
                if (skip || fs::exists(it->path() / "pyvenv.cfg", ec))
                    it.disable_recursion_pending();
                continue;
            }
            if (!skip)
                candidates.push_back(relative);
            if (static_cast<int>(candidates.size()) > give_up) {
                problems.push_back("stopped looking after " + std::to_string(give_up) +
                                   " files: is the working folder a project's folder?");
                break;
            }
        }
        std::sort(candidates.begin(), candidates.end());
    }
    info["root"] = root;
    info["cwd"] = fs::relative(fs::weakly_canonical(cwd, ec), root, ec).generic_string();
    if (info["cwd"] == ".")
        info["cwd"] = "";

    // What the last capture of this folder saw of each file: an unchanged file (size, times, inode) is not read
    // again, as git's index does. A file changed within two seconds of a capture is never trusted to it.
    const std::string cache_path =
        store.dir() + "/capture/" + dataset::sha256_hex(root.data(), root.size()).substr(0, 32) + ".json";
    std::map<std::string, CachedFile> cache, next_cache;
    if (const json cached = json::parse(read_small_file(cache_path, 64 << 20), nullptr, false);
        cached.is_object() && cached.value("root", "") == root && cached.contains("files") &&
        cached["files"].is_object())
        for (const auto& [path, row] : cached["files"].items())
            if (row.is_array() && row.size() == 5 && row[0].is_number_integer() && row[1].is_number_integer() &&
                row[2].is_number_integer() && row[3].is_number_integer() && row[4].is_string())
                cache[path] = {row[0].get<int64_t>(), row[1].get<int64_t>(), row[2].get<int64_t>(),
                               row[3].get<int64_t>(), row[4].get<std::string>()};
    const int64_t trust_before = static_cast<int64_t>((started - 2) * 1e9);

    dataset::Manifest manifest;
    json left_out = json::array();
    int64_t left_out_count = 0, total = 0, incomplete = 0;
    auto leave_out = [&](const std::string& path, const std::string& why, bool secret) {
        ++left_out_count;
        if (!secret)
            ++incomplete;
        if (left_out.size() < 200)
            left_out.push_back({{"path", path}, {"why", why}});
    };
    std::vector<std::string> contents;                   // bytes of files the store lacks
    std::vector<std::pair<std::string, size_t>> pending; // hash, index into contents
    int64_t new_bytes = 0;
    bool cache_changed = false;
    int64_t caches_skipped = 0;
    for (const std::string& path : candidates) {
        if (!dataset::is_safe_relative_path(path))
            continue;
        // Python's bytecode caches are made by running the code, not part of it (a run would change the next
        // run's snapshot): counted, never captured.
        if (pattern_matches("__pycache__/", path) || path.ends_with(".pyc")) {
            ++caches_skipped;
            continue;
        }
        if (const std::string rule = secret_rule(path, patterns); !rule.empty()) {
            leave_out(path, "never captured (matches \"" + rule + "\")", true);
            continue;
        }
        std::string absolute = root;
        absolute += "/";
        absolute += path;
        struct stat st {};
        if (::lstat(absolute.c_str(), &st) != 0)
            continue; // tracked but deleted: the diff says so
        if (S_ISLNK(st.st_mode)) {
            leave_out(path, "a symbolic link (to " + fs::read_symlink(absolute, ec).string() + ")", false);
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            leave_out(path, "a git submodule or a folder git lists: its files are not in the snapshot", false);
            continue;
        }
        if (!S_ISREG(st.st_mode))
            continue;
        if (st.st_size > limits.max_file_bytes) {
            leave_out(path,
                      "larger than " + std::to_string(limits.max_file_bytes >> 20) + " MiB (" +
                          std::to_string(st.st_size) + " bytes)",
                      false);
            continue;
        }
        if (static_cast<int>(manifest.files.size()) >= limits.max_files ||
            total + st.st_size > limits.max_total_bytes) {
            leave_out(path,
                      "over the snapshot's limit of " + std::to_string(limits.max_files) + " files or " +
                          std::to_string(limits.max_total_bytes >> 20) + " MiB",
                      false);
            if (static_cast<int>(manifest.files.size()) >= limits.max_files) {
                // Full: the rest are only counted, not looked at (a tree of a million files costs no more).
                const int64_t rest = static_cast<int64_t>(&candidates.back() - &path);
                left_out_count += rest;
                incomplete += rest;
                break;
            }
            continue;
        }
        CachedFile now{
            st.st_size, nanoseconds(st.st_mtim), nanoseconds(st.st_ctim), static_cast<int64_t>(st.st_ino), {}};
        if (auto it = cache.find(path); it != cache.end() && it->second.size == now.size &&
                                        it->second.mtime == now.mtime && it->second.ctime == now.ctime &&
                                        it->second.inode == now.inode && now.mtime < trust_before &&
                                        store.has_chunk(it->second.sha256)) {
            now.sha256 = it->second.sha256;
        } else {
            const int fd = ::open(absolute.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
            if (fd < 0) {
                leave_out(path, std::string("cannot be read (") + std::strerror(errno) + ")", false);
                continue;
            }
            std::string bytes(static_cast<size_t>(st.st_size), '\0');
            size_t got = 0;
            for (ssize_t n; got < bytes.size() && (n = ::read(fd, bytes.data() + got, bytes.size() - got)) != 0;) {
                if (n < 0 && errno == EINTR)
                    continue;
                if (n < 0)
                    break;
                got += static_cast<size_t>(n);
            }
            struct stat after {};
            ::fstat(fd, &after);
            ::close(fd);
            if (got != bytes.size() || after.st_size != st.st_size || nanoseconds(after.st_mtim) != now.mtime) {
                leave_out(path, "changed while it was read", false);
                continue;
            }
            now.sha256 = dataset::sha256_hex(bytes.data(), bytes.size());
            if (!store.has_chunk(now.sha256)) {
                new_bytes += st.st_size;
                pending.emplace_back(now.sha256, contents.size());
                contents.push_back(std::move(bytes));
            }
            cache_changed = true;
        }
        if (now.mtime < trust_before)
            next_cache[path] = now;
        manifest.files.push_back({path, st.st_size, now.sha256, {now.sha256}});
        total += st.st_size;
    }
    // Untracked files (git diff leaves them out) are in the diff as new files.
    for (const std::string& path : untracked) {
        if (diff.size() >= limits.max_diff_bytes || diff.find(" b/" + path + "\n") != std::string::npos ||
            !secret_rule(path, patterns).empty())
            continue;
        const dataset::ManifestFile* file = manifest.find(path);
        if (file && file->size <= 256 << 10) {
            std::string absolute = root;
            absolute += "/";
            absolute += path;
            diff += new_file_diff(path, read_small_file(absolute, 256 << 10, false)); // never through a link
        }
    }
    std::vector<std::string> dropped;
    diff = without_secret_sections(diff, patterns, dropped);
    for (const std::string& path : dropped)
        if (std::none_of(left_out.begin(), left_out.end(), [&](const json& row) { return row["path"] == path; }))
            leave_out(path, "never captured (its diff is a secret's)", true);
    std::vector<std::pair<std::string, std::string_view>> chunks;
    chunks.reserve(pending.size());
    for (const auto& [hash, index] : pending)
        chunks.emplace_back(hash, contents[index]);
    std::string snapshot;
    if (const int saved = store.put_chunks(chunks); saved != 0) {
        problems.push_back(std::string("the snapshot could not be stored: ") + std::strerror(saved) +
                           (saved == ENOSPC ? " (the worker's disk is full)" : ""));
    } else if (!manifest.files.empty()) {
        std::sort(manifest.files.begin(), manifest.files.end(),
                  [](const dataset::ManifestFile& a, const dataset::ManifestFile& b) { return a.path < b.path; });
        if (const int saved = store.put_manifest(manifest); saved != 0)
            problems.push_back(std::string("the snapshot's manifest could not be stored: ") + std::strerror(saved));
        else
            snapshot = manifest.version();
    } else {
        problems.push_back("no file to snapshot");
    }
    // The cache is only a shortcut: written without fsync, and a torn one is read as none.
    if (cache_changed || next_cache.size() != cache.size()) {
        json rows = json::object();
        for (const auto& [path, file] : next_cache)
            rows[path] = json::array({file.size, file.mtime, file.ctime, file.inode, file.sha256});
        fs::create_directories(store.dir() + "/capture", ec);
        const std::string temp = cache_path + ".tmp." + std::to_string(::getpid());
        if (std::ofstream out(temp, std::ios::binary | std::ios::trunc);
            out << json{{"root", root}, {"files", rows}}.dump())
            out.close(), fs::rename(temp, cache_path, ec);
        else
            fs::remove(temp, ec);
    }
    const bool truncated = diff.size() > limits.max_diff_bytes;
    if (truncated) {
        diff.resize(limits.max_diff_bytes);
        diff += "\n… (diff cut at " + std::to_string(limits.max_diff_bytes >> 10) +
                " KiB; the snapshot holds every file)\n";
    }
    info["dirty"] = in_git ? json(!diff.empty() || !untracked.empty()) : json(nullptr);
    info["diff"] = diff;
    info["diff_truncated"] = truncated;
    if (untracked.size() > 200)
        untracked.resize(200);
    info["untracked"] = untracked;
    info["snapshot"] = snapshot;
    info["files"] = manifest.files.size();
    info["bytes"] = total;
    info["stored_bytes"] = snapshot.empty() ? 0 : new_bytes;
    info["left_out"] = left_out;
    info["left_out_count"] = left_out_count;
    info["caches_skipped"] = caches_skipped;
    info["complete"] = incomplete == 0 && !snapshot.empty();
    info["problems"] = problems;
    info["seconds"] = wall_seconds() - started;
    return info;
}

json verify_snapshot(const std::string& folder, const dataset::Manifest& manifest, const std::string& cwd) {
    json info = {{"kind", "snapshot"}, {"snapshot", manifest.version()}, {"root", folder},
                 {"cwd", cwd},         {"files", manifest.files.size()}, {"bytes", manifest.bytes()},
                 {"stored_bytes", 0},  {"left_out", json::array()},      {"left_out_count", 0}};
    json problems = json::array();
    for (const dataset::ManifestFile& file : manifest.files)
        if (dataset::sha256_file(folder + "/" + file.path) != file.sha256)
            problems.push_back(file.path + " is not the snapshot's");
    info["complete"] = problems.empty();
    info["problems"] = problems;
    return info;
}

std::string python_interpreter(const std::vector<std::string>& argv, const Environment& env, const std::string& cwd) {
    if (argv.empty())
        return {};
    auto resolve = [&](const std::string& program) -> std::string {
        if (program.find('/') != std::string::npos)
            return program.front() == '/' ? program : cwd + "/" + program;
        const std::string path = env.get("PATH").value_or("/usr/local/bin:/usr/bin:/bin");
        for (size_t start = 0; start <= path.size();) {
            size_t end = path.find(':', start);
            if (end == std::string::npos)
                end = path.size();
            std::string candidate = path.substr(start, end - start);
            candidate += "/";
            candidate += program;
            if (::access(candidate.c_str(), X_OK) == 0)
                return candidate;
            start = end + 1;
        }
        return {};
    };
    auto is_python = [](const std::string& program) {
        const std::string name = fs::path(program).filename().string();
        return name.starts_with("python") && std::all_of(name.begin() + 6, name.end(), [](char c) {
                   return std::isdigit(static_cast<unsigned char>(c)) || c == '.';
               });
    };
    std::string first = argv[0];
    // sh -c "python3 train.py ...": the command's first word.
    if ((first == "/bin/sh" || first == "sh" || first == "/bin/bash" || first == "bash") && argv.size() >= 3 &&
        argv[1] == "-c") {
        std::istringstream words(argv[2]);
        words >> first;
    }
    if (first == "/usr/bin/env" && argv.size() >= 2)
        first = argv[1];
    if (is_python(first))
        return resolve(first);
    // A script whose first line names python: "#!/usr/bin/python3" or "#!/usr/bin/env python3".
    const std::string script = resolve(first);
    if (script.empty())
        return {};
    std::string line = read_small_file(script, 256);
    line = line.substr(0, line.find('\n'));
    if (!line.starts_with("#!"))
        return {};
    std::istringstream words(line.substr(2));
    std::string program, argument;
    words >> program >> argument;
    if (fs::path(program).filename() == "env")
        program = argument;
    return is_python(program) ? resolve(program) : std::string();
}

json capture_python(const std::string& interpreter, const Environment& env, const std::string& cwd, double seconds) {
    const double deadline = wall_seconds() + seconds;
    const auto left = [&] { return std::max(0.1, deadline - wall_seconds()); };
    // The job's folder is not on the path (-c puts it first): a project's json.py or platform.py must not answer.
    static const char* script = R"(import sys
sys.path = [p for p in sys.path if p not in ("", ".")]
import json, platform
try:
    import importlib.metadata as m
    dists = list(m.distributions())
except Exception as e:
    dists = []
pk = {}
for d in dists:
    try:
        name = d.metadata["Name"]
        if not name or name in pk: continue
        p = getattr(d, "_path", None)
        pk[name] = [d.version or "", str(p) if p else ""]
    except Exception:
        pass
print(json.dumps({"version": platform.python_version(), "implementation": platform.python_implementation(),
                  "executable": sys.executable, "prefix": sys.prefix, "packages": pk}))
)";
    json info = {{"interpreter", interpreter}};
    SpawnOptions options;
    options.argv = {interpreter, "-c", script};
    options.environment = env;
    options.cwd = cwd;
    const ProgramResult result = run_program(options, {.seconds = left(), .max_output = 8 << 20});
    json parsed = result.ok() ? json::parse(result.output, nullptr, false) : json();
    if (!parsed.is_object() || !parsed.contains("packages") || !parsed["packages"].is_object()) {
        info["problem"] =
            "could not ask " + interpreter + " for its packages: " +
            (!result.started    ? result.error
             : result.timed_out ? "it did not answer within " + std::to_string(static_cast<int>(seconds)) + " s"
                                : trimmed(result.errors.substr(0, 400)));
        return info;
    }
    for (const char* key : {"version", "implementation", "executable", "prefix"})
        info[key] = parsed.contains(key) && parsed[key].is_string() ? parsed[key] : json("");
    // Which Debian package holds each distribution that came from Debian: one dpkg-query for all.
    std::vector<std::string> debian_paths;
    for (const auto& [name, row] : parsed["packages"].items())
        if (row.is_array() && row.size() == 2 && row[1].is_string() &&
            row[1].get<std::string>().starts_with("/usr/lib/python3"))
            debian_paths.push_back(row[1]);
    std::map<std::string, std::string> owner; // path -> package
    std::map<std::string, std::string> debian_version;
    if (!debian_paths.empty()) {
        SpawnOptions query;
        query.argv = {"dpkg-query", "-S"};
        query.argv.insert(query.argv.end(), debian_paths.begin(), debian_paths.end());
        query.search_path = true;
        const ProgramResult owners = run_program(query, {.seconds = left()});
        std::istringstream lines(owners.output);
        std::vector<std::string> names;
        for (std::string line; std::getline(lines, line);) {
            const size_t colon = line.find(": /");
            if (colon == std::string::npos)
                continue;
            std::string package = line.substr(0, colon);
            if (const size_t comma = package.find(','); comma != std::string::npos)
                package = package.substr(0, comma); // "a, b: path": the first is enough
            owner[line.substr(colon + 2)] = package;
            names.push_back(package);
        }
        if (!names.empty()) {
            SpawnOptions versions;
            versions.argv = {"dpkg-query", "-W", "-f=${binary:Package}\t${Version}\n"};
            versions.argv.insert(versions.argv.end(), names.begin(), names.end());
            versions.search_path = true;
            std::istringstream rows(run_program(versions, {.seconds = left()}).output);
            for (std::string row; std::getline(rows, row);)
                if (const size_t tab = row.find('\t'); tab != std::string::npos) {
                    std::string package = row.substr(0, tab);
                    if (const size_t arch = package.find(':'); arch != std::string::npos)
                        package = package.substr(0, arch);
                    debian_version[package] = row.substr(tab + 1);
                }
        }
    }
    json packages = json::object();
    for (const auto& [name, row] : parsed["packages"].items()) {
        if (!row.is_array() || row.size() != 2 || !row[0].is_string() || !row[1].is_string())
            continue;
        json entry = {{"version", row[0]}};
        if (auto it = owner.find(row[1].get<std::string>()); it != owner.end()) {
            entry["debian"] = it->second;
            if (auto version = debian_version.find(it->second); version != debian_version.end())
                entry["debian_version"] = version->second;
        }
        packages[name] = entry;
    }
    info["packages"] = packages;
    return info;
}

json capture_system(double seconds) {
    json info;
    char host[256] = {};
    ::gethostname(host, sizeof(host) - 1);
    info["hostname"] = host;
    struct utsname name {};
    if (::uname(&name) == 0) {
        info["kernel"] = std::string(name.sysname) + " " + name.release;
        info["architecture"] = name.machine;
    }
    {
        std::ifstream in("/etc/os-release");
        for (std::string line; std::getline(in, line);)
            if (line.starts_with("PRETTY_NAME=")) {
                std::string value = line.substr(12);
                if (value.size() >= 2 && value.front() == '"')
                    value = value.substr(1, value.size() - 2);
                info["os"] = value;
            }
    }
    {
        std::ifstream in("/proc/cpuinfo");
        for (std::string line; std::getline(in, line);)
            if (line.starts_with("model name")) {
                info["cpu"] = trimmed(line.substr(line.find(':') + 1));
                break;
            }
    }
    info["cores"] = ::sysconf(_SC_NPROCESSORS_ONLN);
    {
        std::ifstream in("/proc/meminfo");
        std::string key;
        int64_t kb = 0;
        if (in >> key >> kb && key == "MemTotal:")
            info["memory_mb"] = kb / 1024;
    }
    json gpus = json::array();
    SpawnOptions smi;
    smi.argv = {"nvidia-smi", "--query-gpu=index,name,driver_version,memory.total,uuid",
                "--format=csv,noheader,nounits"};
    smi.search_path = true;
    if (const ProgramResult result = run_program(smi, {.seconds = seconds}); result.ok()) {
        std::istringstream lines(result.output);
        for (std::string line; std::getline(lines, line);) {
            std::vector<std::string> fields;
            std::istringstream parts(line);
            for (std::string field; std::getline(parts, field, ',');)
                fields.push_back(trimmed(field));
            if (fields.size() == 5)
                gpus.push_back({{"index", fields[0]},
                                {"name", fields[1]},
                                {"driver", fields[2]},
                                {"memory_mb", fields[3]},
                                {"uuid", fields[4]}});
        }
    }
    info["gpus"] = gpus;
    // The CUDA toolkit and libraries a job would load here (headers say their versions).
    if (const json cuda = json::parse(read_small_file("/usr/local/cuda/version.json"), nullptr, false);
        cuda.is_object() && cuda.contains("cuda") && cuda["cuda"].is_object())
        info["cuda"] = cuda["cuda"].value("version", "");
    auto header_version = [](const std::vector<std::string>& paths, const std::string& prefix) -> std::string {
        for (const std::string& path : paths) {
            const std::string text = read_small_file(path, 64 << 10);
            std::string parts[3];
            const char* names[3] = {"MAJOR ", "MINOR ", "PATCH"};
            bool found = true;
            for (int i = 0; i < 3; ++i) {
                const size_t at = text.find("#define " + prefix + names[i]);
                if (at == std::string::npos) {
                    found = false;
                    break;
                }
                std::istringstream line(text.substr(at, text.find('\n', at) - at));
                std::string define, key;
                line >> define >> key >> parts[i];
            }
            if (found)
                return parts[0] + "." + parts[1] + "." + parts[2];
        }
        return {};
    };
    if (std::string v = header_version({"/usr/include/cudnn_version.h", "/usr/local/cuda/include/cudnn_version.h",
                                        "/usr/include/x86_64-linux-gnu/cudnn_version_v9.h"},
                                       "CUDNN_");
        !v.empty())
        info["cudnn"] = v;
    if (std::string v = header_version({"/usr/include/nccl.h", "/usr/local/cuda/include/nccl.h"}, "NCCL_"); !v.empty())
        info["nccl"] = v;
    return info;
}

json capture_engine(const std::string& train_binary, double seconds) {
    json info = {{"binary", train_binary}};
    SpawnOptions options;
    options.argv = {train_binary, "--version"};
    const ProgramResult result = run_program(options, {.seconds = seconds});
    if (!result.ok()) {
        info["problem"] = "could not ask " + train_binary +
                          " for its build: " + (result.started ? trimmed(result.errors) : result.error);
        return info;
    }
    std::istringstream lines(result.output);
    for (std::string line; std::getline(lines, line);) {
        if (line.starts_with("traindeck-train "))
            info["version"] = trimmed(line.substr(16));
        else if (line.starts_with("BLAS: "))
            info["blas"] = trimmed(line.substr(6));
        else if (line.starts_with("GPU: "))
            info["gpu"] = trimmed(line.substr(5));
    }
    return info;
}

} // namespace traindeck::worker
