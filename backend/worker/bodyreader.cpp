#include "bodyreader.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

namespace traindeck::worker {

namespace {

// The numeric address and port of one end, as httplib writes them (getnameinfo, numeric host and service).
bool end_is(const sockaddr_storage& address, socklen_t length, const std::string& host, int port) {
    char name[NI_MAXHOST], service[NI_MAXSERV];
    if (::getnameinfo(reinterpret_cast<const sockaddr*>(&address), length, name, sizeof(name), service, sizeof(service),
                      NI_NUMERICHOST | NI_NUMERICSERV) != 0)
        return false;
    return host == name && std::to_string(port) == service;
}

bool is_connection(int fd, const httplib::Request& req) {
    sockaddr_storage address{};
    socklen_t length = sizeof(address);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0 ||
        (address.ss_family != AF_INET && address.ss_family != AF_INET6) ||
        !end_is(address, length, req.local_addr, req.local_port))
        return false;
    length = sizeof(address);
    return ::getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0 &&
           end_is(address, length, req.remote_addr, req.remote_port);
}

bool is_identity(const httplib::Request& req, const char* header) {
    return !req.has_header(header) || req.get_header_value(header) == "identity";
}

// The answer to a body that stopped part way, written here, and the connection shut both ways: what would come
// next on it is the rest of that body, not a request. httplib's own answer then finds the connection shut and is
// not written.
void answer_and_close(int fd, int status, const std::string& error) {
    const std::string body =
        nlohmann::json{{"error", error}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    const std::string answer = "HTTP/1.1 " + std::to_string(status) +
                               (status == 408 ? " Request Timeout" : " Bad Request") +
                               "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                               "\r\nConnection: close\r\n\r\n" + body;
    for (size_t sent = 0; sent < answer.size();) {
        const ssize_t wrote = ::send(fd, answer.data() + sent, answer.size() - sent, MSG_NOSIGNAL);
        if (wrote < 0 && errno == EINTR)
            continue;
        if (wrote <= 0)
            break;
        sent += static_cast<size_t>(wrote);
    }
    ::shutdown(fd, SHUT_RDWR);
}

} // namespace

int connection_socket(const httplib::Request& req) {
    thread_local int remembered = -1;
    if (req.remote_port <= 0 || req.local_port <= 0)
        return -1;
    if (remembered >= 0 && is_connection(remembered, req))
        return remembered;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
        const std::string name = entry.path().filename().string();
        int fd = -1;
        if (std::from_chars(name.data(), name.data() + name.size(), fd).ec != std::errc())
            continue;
        struct stat info {};
        if (::fstat(fd, &info) == 0 && S_ISSOCK(info.st_mode) && is_connection(fd, req))
            return remembered = fd;
    }
    return -1;
}

namespace {

// Body: std::string or AlignedBytes (clear, append, resize, data, size).
template <typename Body>
int read_body_into(const httplib::Request& req, const httplib::ContentReader& reader, size_t max_bytes, int timeout_ms,
                   Body& body, std::string& error) {
    body.clear();
    const std::string length_text = req.get_header_value("Content-Length");
    size_t length = 0;
    const bool has_length =
        !length_text.empty() &&
        std::from_chars(length_text.data(), length_text.data() + length_text.size(), length).ec == std::errc() &&
        length > 0;
    const std::string too_large = "the body is larger than " + std::to_string(max_bytes) + " bytes";
    if (req.is_multipart_form_data() || (has_length && length > max_bytes)) {
        const int status = req.is_multipart_form_data() ? 400 : 413;
        error = status == 400 ? "the body is the bytes themselves (application/octet-stream), not a multipart form"
                              : too_large;
        // Taken and dropped through httplib (which skips a body over its own payload limit), so that the connection
        // stays in step; where httplib refuses to read it (a form with no boundary), answered here and closed.
        const bool drained = status == 400 ? reader([](const httplib::MultipartFormData&) { return true; },
                                                    [](const char*, size_t) { return true; })
                                           : reader([](const char*, size_t) { return true; });
        if (const int fd = drained ? -1 : connection_socket(req); fd >= 0)
            answer_and_close(fd, status, error);
        return status;
    }
    const int fd = has_length && is_identity(req, "Transfer-Encoding") && is_identity(req, "Content-Encoding")
                       ? connection_socket(req)
                       : -1;
    if (fd < 0) {
        // Through httplib, whole (its payload limit bounds it, and a body left half read would be taken for the
        // next request), then measured against this endpoint's limit.
        if (!reader([&](const char* data, size_t size) {
                body.append(data, size);
                return true;
            })) {
            error = "the body did not arrive whole";
            return 400;
        }
        if (body.size() > max_bytes) {
            error = too_large;
            return 413;
        }
        return 0;
    }
    body.resize(length);
    size_t have = 0;
    // What httplib holds of the body: its first read returns its buffer (or reads up to 4 KiB itself), and the
    // receiver stops it there unless that was the whole body.
    reader([&](const char* data, size_t size) {
        size = std::min(size, length - have);
        std::memcpy(body.data() + have, data, size);
        have += size;
        return have == length;
    });
    while (have < length) {
        pollfd ready{fd, POLLIN, 0};
        const int polled = ::poll(&ready, 1, timeout_ms);
        if (polled < 0 && errno == EINTR)
            continue;
        ssize_t got = 0;
        if (polled > 0) {
            got = ::recv(fd, body.data() + have, length - have, 0);
            if (got < 0 && (errno == EINTR || errno == EAGAIN))
                continue;
        }
        if (got <= 0) {
            body.resize(have);
            error = polled == 0 ? "the client stopped sending the body (" + std::to_string(have) + " of " +
                                      std::to_string(length) + " bytes came)"
                                : "the body did not arrive whole (" + std::to_string(have) + " of " +
                                      std::to_string(length) + " bytes)";
            const int status = polled == 0 ? 408 : 400;
            answer_and_close(fd, status, error);
            return status;
        }
        have += static_cast<size_t>(got);
    }
    return 0;
}

} // namespace

int read_body(const httplib::Request& req, const httplib::ContentReader& reader, size_t max_bytes, int timeout_ms,
              std::string& body, std::string& error) {
    return read_body_into(req, reader, max_bytes, timeout_ms, body, error);
}

int read_body(const httplib::Request& req, const httplib::ContentReader& reader, size_t max_bytes, int timeout_ms,
              AlignedBytes& body, std::string& error) {
    return read_body_into(req, reader, max_bytes, timeout_ms, body, error);
}

} // namespace traindeck::worker
