#include "workerclient.h"

#include <curl/curl.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <mutex>

namespace traindeck::client {

namespace {

// A response body, and the most it may grow to (0: no limit); past it the transfer is aborted.
struct BodySink {
    std::string* body;
    size_t limit = 0;
};

size_t append_body(char* data, size_t size, size_t count, void* target) {
    auto* sink = static_cast<BodySink*>(target);
    if (sink->limit > 0 && sink->body->size() + size * count > sink->limit)
        return 0; // CURLE_WRITE_ERROR: a peer that sends more than it may is not read further
    sink->body->append(data, size * count);
    return size * count;
}

void global_init() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// Not a libcurl code: the transfer was left because the abort flag was set.
constexpr CURLcode kInterrupted = CURL_LAST;

// curl_easy_perform, but through a multi handle polled every 50 ms, so that another thread's abort flag ends the
// transfer at once instead of after the request's whole timeout. The multi handle keeps the connection cache
// between calls, as the easy interface would.
CURLcode run_transfer(CURL* curl, void*& multi_slot, const std::atomic<bool>* abort) {
    if (!multi_slot)
        multi_slot = curl_multi_init();
    CURLM* multi = static_cast<CURLM*>(multi_slot);
    if (!multi)
        return curl_easy_perform(curl);
    if (abort && abort->load())
        return kInterrupted;
    if (curl_multi_add_handle(multi, curl) != CURLM_OK)
        return curl_easy_perform(curl);
    CURLcode result = CURLE_OK;
    for (bool done = false; !done;) {
        int running = 0;
        if (curl_multi_perform(multi, &running) != CURLM_OK) {
            result = CURLE_FAILED_INIT;
            break;
        }
        int queued = 0;
        while (CURLMsg* message = curl_multi_info_read(multi, &queued))
            if (message->msg == CURLMSG_DONE && message->easy_handle == curl) {
                result = message->data.result;
                done = true;
            }
        if (done)
            break;
        if (abort && abort->load()) {
            result = kInterrupted;
            break;
        }
        curl_multi_poll(multi, nullptr, 0, 50, nullptr);
    }
    curl_multi_remove_handle(multi, curl);
    return result;
}

} // namespace

nlohmann::json HttpResponse::json() const {
    return nlohmann::json::parse(body, nullptr, false).is_discarded() ? nlohmann::json() : nlohmann::json::parse(body);
}

std::string HttpResponse::message() const {
    if (!error.empty())
        return error;
    const nlohmann::json parsed = json();
    if (parsed.is_object() && parsed.contains("error") && parsed["error"].is_string())
        return parsed["error"].get<std::string>();
    return "HTTP " + std::to_string(status);
}

WorkerClient::WorkerClient(std::string base_url, std::string token)
    : base_url_(std::move(base_url)), token_(std::move(token)) {
    global_init();
    curl_ = curl_easy_init();
}

WorkerClient::~WorkerClient() {
    curl_easy_cleanup(static_cast<CURL*>(curl_));
    curl_multi_cleanup(static_cast<CURLM*>(multi_));
}

void WorkerClient::set_tls(std::string pinned_public_key, std::string ca_file, bool verify_host) {
    pinned_ = std::move(pinned_public_key);
    ca_file_ = std::move(ca_file);
    verify_host_ = verify_host;
}

HttpResponse WorkerClient::get(const std::string& path, long timeout_ms) { return perform("GET", path, nullptr, timeout_ms); }

HttpResponse WorkerClient::post(const std::string& path, const std::string& body, long timeout_ms) {
    return perform("POST", path, &body, timeout_ms);
}

HttpResponse WorkerClient::put(const std::string& path, const std::string& body, const char* content_type, long timeout_ms) {
    return perform("PUT", path, &body, timeout_ms, content_type);
}

HttpResponse WorkerClient::put_file(const std::string& path, int fd, int64_t offset, int64_t size,
                                    const char* content_type, long timeout_ms) {
    FileBody file{fd, offset, size};
    HttpResponse response = perform("PUT", path, nullptr, timeout_ms, content_type, &file);
    if (file.short_file) {
        response.status = 0;
        response.error = "the file is shorter than the body it was to give (" + std::to_string(file.sent) + " of " +
                         std::to_string(size) + " bytes)";
    }
    return response;
}

std::unique_ptr<WorkerClient> WorkerClient::fork() const {
    auto client = std::make_unique<WorkerClient>(base_url_, token_);
    client->set_tls(pinned_, ca_file_, verify_host_);
    client->set_headers(headers_);
    client->set_unix_socket(unix_socket_);
    client->set_abort(abort_);
    client->set_max_response_bytes(max_response_bytes_);
    return client;
}

HttpResponse WorkerClient::perform(const std::string& method, const std::string& path, const std::string* body,
                                   long timeout_ms, const char* content_type, FileBody* file) {
    HttpResponse response;
    CURL* curl = static_cast<CURL*>(curl_);
    if (!curl) {
        response.error = "libcurl could not be initialised";
        return response;
    }
    curl_easy_reset(curl);
    const std::string url = base_url_ + path;
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, std::min(timeout_ms, 5000L));
    BodySink sink{&response.body, max_response_bytes_};
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, append_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
    curl_easy_setopt(curl, CURLOPT_TCP_NODELAY, 1L);
    struct curl_slist* headers = nullptr;
    const std::string authorization = "Authorization: Bearer " + token_;
    if (!token_.empty())
        headers = curl_slist_append(headers, authorization.c_str());
    for (const std::string& header : headers_)
        headers = curl_slist_append(headers, header.c_str());
    if (body || file) {
        headers = curl_slist_append(headers, (std::string("Content-Type: ") + content_type).c_str());
        // No "Expect: 100-continue" round trip before large bodies.
        headers = curl_slist_append(headers, "Expect:");
    }
    if (body) {
        curl_easy_setopt(curl, CURLOPT_POST, 1L);
        if (method != "POST")
            curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body->data());
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body->size()));
    } else if (file) {
        curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
        if (method != "PUT")
            curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
        curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(file->size));
        // Large reads into libcurl's buffer: a 4 MiB chunk in a few system calls instead of 64.
        curl_easy_setopt(curl, CURLOPT_UPLOAD_BUFFERSIZE, 1L << 20);
        file->sent = 0;
        curl_easy_setopt(curl, CURLOPT_READDATA, file);
        // Sent again from the start when libcurl must resend (a connection that was closed under it).
        curl_easy_setopt(curl, CURLOPT_SEEKDATA, file);
        curl_easy_setopt(
            curl, CURLOPT_SEEKFUNCTION, +[](void* data, curl_off_t offset, int origin) -> int {
                auto* from = static_cast<FileBody*>(data);
                if (origin != SEEK_SET || offset < 0 || offset > from->size)
                    return CURL_SEEKFUNC_CANTSEEK;
                from->sent = offset;
                return CURL_SEEKFUNC_OK;
            });
        curl_easy_setopt(
            curl, CURLOPT_READFUNCTION, +[](char* into, size_t size, size_t count, void* data) -> size_t {
                auto* from = static_cast<FileBody*>(data);
                const int64_t want = std::min<int64_t>(static_cast<int64_t>(size * count), from->size - from->sent);
                if (want == 0)
                    return 0;
                ssize_t got;
                while ((got = ::pread(from->fd, into, static_cast<size_t>(want), from->offset + from->sent)) < 0 &&
                       errno == EINTR) {
                }
                if (got <= 0) {
                    from->short_file = true;
                    return CURL_READFUNC_ABORT;
                }
                from->sent += got;
                return static_cast<size_t>(got);
            });
    } else if (method != "GET") {
        curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
    }
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    if (!unix_socket_.empty())
        curl_easy_setopt(curl, CURLOPT_UNIX_SOCKET_PATH, unix_socket_.c_str());
    if (!pinned_.empty()) {
        // A pinned key replaces CA trust (a worker's certificate is usually self-signed): the key must match exactly.
        curl_easy_setopt(curl, CURLOPT_PINNEDPUBLICKEY, pinned_.c_str());
        if (ca_file_.empty()) {
            curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
            curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
        }
    }
    if (!ca_file_.empty())
        curl_easy_setopt(curl, CURLOPT_CAINFO, ca_file_.c_str());
    if (!verify_host_)
        curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
    char error_buffer[CURL_ERROR_SIZE] = {};
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_buffer);
    const CURLcode code = run_transfer(curl, multi_, abort_.get());
    curl_slist_free_all(headers);
    if (code == kInterrupted) {
        response.error = url + ": interrupted (the console is closing or the operation was cancelled)";
        return response;
    }
    if (code == CURLE_WRITE_ERROR && max_response_bytes_ > 0) {
        response.error = url + ": the answer is larger than the " + std::to_string(max_response_bytes_) +
                         " bytes it may be; not read further";
        return response;
    }
    if (code != CURLE_OK) {
        if (!unix_socket_.empty() && (code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST))
            // curl names the URL's host and port 80, which are not where it went: say the socket.
            response.error = path + ": nothing answers on " + unix_socket_ + " (the ssh forward is down)";
        else
            response.error = url + ": " + (error_buffer[0] ? error_buffer : curl_easy_strerror(code));
        return response;
    }
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    response.status = static_cast<int>(status);
    return response;
}

} // namespace traindeck::client

namespace traindeck::client {

std::string WorkerClient::fetch_public_key_pin(std::string& error) {
    CURL* curl = static_cast<CURL*>(curl_);
    curl_easy_reset(curl);
    const std::string url = base_url_ + "/v1/health";
    std::string body;
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 10000L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
    curl_easy_setopt(curl, CURLOPT_CERTINFO, 1L);
    BodySink sink{&body, 0};
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, append_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
    if (const CURLcode code = curl_easy_perform(curl); code != CURLE_OK) {
        error = url + ": " + curl_easy_strerror(code);
        return {};
    }
    struct curl_certinfo* info = nullptr;
    if (curl_easy_getinfo(curl, CURLINFO_CERTINFO, &info) != CURLE_OK || !info || info->num_of_certs < 1) {
        error = url + ": the server sent no certificate (is it HTTPS?)";
        return {};
    }
    std::string pem;
    for (struct curl_slist* field = info->certinfo[0]; field; field = field->next)
        if (std::string_view(field->data).substr(0, 5) == "Cert:")
            pem = field->data + 5;
    BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
    X509* certificate = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    if (!certificate) {
        error = url + ": cannot read the server's certificate";
        return {};
    }
    EVP_PKEY* key = X509_get_pubkey(certificate);
    unsigned char* der = nullptr;
    const int der_size = key ? i2d_PUBKEY(key, &der) : -1;
    std::string pin;
    if (der_size > 0) {
        unsigned char digest[SHA256_DIGEST_LENGTH];
        SHA256(der, static_cast<size_t>(der_size), digest);
        unsigned char encoded[64];
        const int length = EVP_EncodeBlock(encoded, digest, sizeof(digest));
        pin = "sha256//" + std::string(reinterpret_cast<char*>(encoded), static_cast<size_t>(length));
    } else {
        error = url + ": cannot read the server's public key";
    }
    OPENSSL_free(der);
    EVP_PKEY_free(key);
    X509_free(certificate);
    return pin;
}

} // namespace traindeck::client
