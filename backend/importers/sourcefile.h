#pragma once
// Reading a source file whole, read-only, for the importers: they never write, create or lock anything where they
// read (a logdir may belong to a running job, or sit on a read-only mount), and they read a file once.
#include "expected.h"

#include <string>

namespace traindeck::importers {

// The file's bytes, or why not ("cannot read X: Permission denied; ...").
Expected<std::string> read_source_file(const std::string& path);

} // namespace traindeck::importers
