#include "libraryversion.h"

#include <sqlite3.h>

namespace traindeck {

std::string sqlite_library_version() { return sqlite3_libversion(); }

} // namespace traindeck
