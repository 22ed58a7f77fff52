#pragma once
// What the importer tests share: the fixtures folder (shared/fixtures beside the checkout, TRAINDECK_FIXTURES), a temp
// folder per test, and small readers of the neutral form.
#include "common/tempfolder.h"
#include "importedrun.h"
#include "requireall.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace traindeck::test {

inline std::string fixture(const std::string& relative) { return std::string(TRAINDECK_FIXTURES) + "/" + relative; }
inline bool have_fixtures() { return std::filesystem::is_directory(TRAINDECK_FIXTURES); }

// In a test body: skip (fail under TRAINDECK_REQUIRE_ALL=1) when the fixtures are not there.
#define REQUIRE_FIXTURES()                                                                                             \
    if (!::traindeck::test::have_fixtures()) {                                                                         \
        TRAINDECK_SKIP(std::string("the fixtures folder ") + TRAINDECK_FIXTURES +                                      \
                       " is missing: check out the shared folder beside the repository");                              \
    }

// A folder of the test's own (tests/common/tempfolder.h).
using TempDir = TempFolder;

// A copy of a fixture folder the test may change and remove (the fixtures are read-only files in read-only folders).
inline void copy_writable(const std::string& from, const std::string& to) {
    namespace fs = std::filesystem;
    fs::create_directories(fs::path(to).parent_path());
    fs::copy(from, to, fs::copy_options::recursive);
    fs::permissions(to, fs::perms::owner_all, fs::perm_options::add);
    for (const auto& entry : fs::recursive_directory_iterator(to))
        fs::permissions(entry.path(),
                        fs::perms::owner_read | fs::perms::owner_write |
                            (entry.is_directory() ? fs::perms::owner_exec : fs::perms::none),
                        fs::perm_options::add);
}

inline std::string slurp(const std::string& path) { return read_file(path); }

inline void spill(const std::string& path, const std::string& bytes) {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline const std::vector<importers::ScalarPoint>& series(const importers::ImportedRun& run, const std::string& tag) {
    static const std::vector<importers::ScalarPoint> none;
    const auto it = run.scalars.find(tag);
    return it == run.scalars.end() ? none : it->second;
}

} // namespace traindeck::test
