#pragma once
// Names that arrive from a worker (checkpoint names in its listings, file names in its replies) before they become
// a path on the console's machine. A worker, or whatever answers in its place, never chooses where the console
// writes: a name is one plain file name inside a folder the console picked. Plain C++, no Qt.
#include <string>
#include <string_view>

namespace traindeck::client {

// The most bytes a name from a worker may have (ext4 and most file systems allow 255).
constexpr size_t kMaxRemoteNameBytes = 255;

// "" when `name` is safe to use as a file name inside a folder of ours; otherwise what is wrong with it, in words
// for the user ("contains “/”", "is absolute", ...). Refused: empty, "." and "..", any "..", "/" or "\", NUL and
// other control characters, a leading "-" or ".", invalid UTF-8, and more than kMaxRemoteNameBytes bytes.
std::string unsafe_remote_name(std::string_view name);

} // namespace traindeck::client
