// Reads /proc/net/tcp{,6} for listening sockets and /proc/PID/fd for the process that holds each (portlistener.h).
#include "portlistener.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <unistd.h>

namespace traindeck::client {

namespace {

// Addresses in /proc/net/tcp* are the kernel's in-memory words in hex: 127.0.0.1 reads 0100007F on a
// little-endian machine and 7F000001 on a big-endian one; both are accepted, as are the IPv6 forms.
bool reaches_loopback(const std::string& address) {
    static const std::set<std::string> accepted = {
        "0100007F", "7F000001", "00000000",                         // 127.0.0.1, any (IPv4)
        "00000000000000000000000000000000",                         // :: (any, IPv6)
        "00000000000000000000000001000000", "00000000000000000000000000000001", // ::1
        "0000000000000000FFFF00000100007F", "00000000000000000000FFFF7F000001", // ::ffff:127.0.0.1
    };
    return accepted.count(address) > 0;
}

std::vector<std::string> read_argv(const std::string& pid) {
    std::ifstream in("/proc/" + pid + "/cmdline", std::ios::binary);
    std::vector<std::string> argv;
    std::string word;
    while (std::getline(in, word, '\0'))
        argv.push_back(word);
    return argv;
}

} // namespace

std::vector<PortListener> port_listeners(int port, bool* readable) {
    // inode -> owner uid of every listening socket on the port
    std::map<std::string, uid_t> sockets;
    *readable = false;
    for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
        std::ifstream in(table);
        if (!in)
            continue;
        *readable = true;
        std::string line;
        std::getline(in, line); // header
        while (std::getline(in, line)) {
            std::istringstream fields(line);
            std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
            if (!(fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode))
                continue;
            const size_t colon = local.find(':');
            if (colon == std::string::npos || state != "0A") // 0A: TCP_LISTEN
                continue;
            if (std::strtol(local.c_str() + colon + 1, nullptr, 16) != port || !reaches_loopback(local.substr(0, colon)))
                continue;
            sockets[inode] = static_cast<uid_t>(std::strtoul(uid.c_str(), nullptr, 10));
        }
    }
    std::vector<PortListener> listeners;
    if (sockets.empty())
        return listeners;
    std::map<std::string, PortListener> found;
    std::error_code ec;
    for (const auto& process : std::filesystem::directory_iterator("/proc", ec)) {
        const std::string pid = process.path().filename().string();
        if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos)
            continue;
        std::error_code fd_ec;
        for (const auto& fd : std::filesystem::directory_iterator(process.path() / "fd", fd_ec)) {
            std::error_code link_ec;
            const std::string target = std::filesystem::read_symlink(fd.path(), link_ec).string();
            if (link_ec || target.rfind("socket:[", 0) != 0)
                continue;
            const std::string inode = target.substr(8, target.size() - 9);
            if (!sockets.count(inode))
                continue;
            PortHolder holder;
            holder.pid = static_cast<pid_t>(std::atoi(pid.c_str()));
            holder.argv = read_argv(pid);
            std::error_code cwd_ec;
            holder.cwd = std::filesystem::read_symlink(process.path() / "cwd", cwd_ec).string();
            found[inode].holders.push_back(std::move(holder));
        }
    }
    for (const auto& [inode, uid] : sockets) {
        PortListener listener = found[inode];
        listener.uid = uid;
        listeners.push_back(std::move(listener));
    }
    return listeners;
}

} // namespace traindeck::client
