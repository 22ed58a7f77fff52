#pragma once
// A large request body read in large pieces. httplib 0.11 (Debian's build, compiled with its 4 KiB receive buffer)
// reads a body 4 KiB at a time with a poll() before each read: a 4 MiB dataset chunk took 2,048 system calls, and
// uploads ran at a fifth of what the loopback carries (tests/bench/dataset_hash_upload). On a plain TCP connection
// read_body takes what httplib has already buffered of the body through its ContentReader, then reads the rest from
// the connection's socket itself, up to the whole body in one call. Anywhere else (TLS, a Unix socket, a chunked or
// encoded body, a socket it cannot find) it reads through httplib as before.
#include "alignedbytes.h"

#include <httplib.h>

#include <cstddef>
#include <string>

namespace traindeck::worker {

// The socket the request arrived on: the open socket whose two ends are the request's local and remote address and
// port (one at a time in the whole system), or -1. Remembered per thread: httplib serves a connection on one thread.
int connection_socket(const httplib::Request& req);

// Reads the request's body into body. Returns 0, or an HTTP status with error: 400 for a body that did not arrive
// whole or is a multipart form, 408 when the client stopped sending for timeout_ms, 413 above max_bytes (a refused
// body is read and dropped through httplib, so the connection stays in step). When a body read from the socket stops
// part way, the answer (408 or 400, {"error": ...}) is written here and the connection shut: the rest of that body must
// not be read as the next request.
int read_body(const httplib::Request& req, const httplib::ContentReader& reader, size_t max_bytes, int timeout_ms,
              std::string& body, std::string& error);
// The same into memory aligned for O_DIRECT, not zero-filled first (a dataset chunk).
int read_body(const httplib::Request& req, const httplib::ContentReader& reader, size_t max_bytes, int timeout_ms,
              AlignedBytes& body, std::string& error);

} // namespace traindeck::worker
