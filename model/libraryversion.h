#pragma once
// The version of the SQLite library the catalog runs on (the About dialog says it; the UI itself never touches SQLite).
#include <string>

namespace traindeck {

std::string sqlite_library_version();

} // namespace traindeck
