#pragma once
// Which process listens on a TCP port of this machine, read from /proc (Linux). The local and Slurm plugins ask
// before they send a worker on 127.0.0.1 its token: the port named in a worker's state folder may, after that
// worker died, belong to any other program, and the kernel's socket table says whose it is without trusting
// anything that program answers. Plain C++, no Qt.
#include <string>
#include <sys/types.h>
#include <vector>

namespace traindeck::client {

struct PortHolder {
    pid_t pid = 0;
    std::vector<std::string> argv; // its command line
    std::string cwd;               // its working folder (relative arguments resolve against it)
};

struct PortListener {
    uid_t uid = 0; // the socket's owner
    // The processes holding it (a forked child may share its parent's socket); empty when none we may look into.
    std::vector<PortHolder> holders;
};

// Every listening socket on the port that a connection to 127.0.0.1 (or ::1) could reach: bound to loopback or
// to any address, IPv4 or IPv6. Empty when nothing listens there, or when the kernel's tables cannot be read
// (*readable false: no /proc, or a sandbox without /proc/net), which callers must not take for "nobody".
std::vector<PortListener> port_listeners(int port, bool* readable);

} // namespace traindeck::client
