#pragma once
// The worker's HTTP API (/v1/...), served with cpp-httplib: on 127.0.0.1 by default, HTTPS when given a
// certificate and key. Every request needs "Authorization: Bearer <token>".
#include "supervisor.h"

#include <map>
#include <memory>
#include <string>

namespace httplib {
class Server;
}

namespace traindeck::worker {

class WorkerServer {
public:
    WorkerServer(Supervisor& supervisor, EventBoard& board, std::string token);
    ~WorkerServer();

    // Binds (port 0 = any free port); returns "" or why not. The bound port is port().
    std::string bind(const std::string& host, int port, const std::string& cert, const std::string& key);
    void run(); // blocks until stop()
    void stop();
    int port() const { return port_; }

    // One request through the same token check, routes and error replies as the HTTP server, without a socket
    // (the fuzz target's way in). path is decoded and without its query, which comes as params, as httplib gives it.
    struct Reply {
        int status = 0;
        std::string body, content_type;
    };
    using Fields = std::multimap<std::string, std::string>;
    Reply handle(const std::string& method, const std::string& path, const Fields& params, const Fields& headers,
                 std::string body) const;

private:
    struct Routes; // every endpoint, in the order they are matched: bind() hands them to httplib, handle() matches them
    void routes();
    void dataset_routes();

    Supervisor& supervisor_;
    EventBoard& board_;
    std::string token_;
    std::unique_ptr<Routes> routes_;
    std::unique_ptr<httplib::Server> server_;
    int port_ = 0;
};

// Reads the token from state_dir/token, creating one (32 random bytes, hex, mode 0600) at first start.
// `created` tells the caller to print it once.
std::string load_or_create_token(const std::string& state_dir, bool& created, std::string& error);

} // namespace traindeck::worker
