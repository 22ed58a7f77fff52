#pragma once
// A catalog file in a fresh temp folder, removed with the folder when the test ends: what the model tests share.
#include <cstdlib>
#include <filesystem>
#include <string>

namespace traindeck::test {

struct TempCatalog {
    std::filesystem::path dir;
    TempCatalog() {
        std::string pattern = (std::filesystem::temp_directory_path() / "traindeck-model-XXXXXX").string();
        dir = ::mkdtemp(pattern.data());
    }
    ~TempCatalog() { std::filesystem::remove_all(dir); }
    TempCatalog(const TempCatalog&) = delete;
    TempCatalog& operator=(const TempCatalog&) = delete;
    std::string path() const { return (dir / "catalog.db").string(); }
};

} // namespace traindeck::test
