#include "metricswriter.h"

#include <chrono>
#include <cstdlib>
#include <string>

#include <fcntl.h>

namespace traindeck::engine {

MetricsWriter::MetricsWriter() {
    out_ = stdout;
    const char* fd_text = std::getenv("TRAINDECK_METRICS_FD");
    if (!fd_text || !*fd_text)
        return;
    char* end = nullptr;
    const long fd = std::strtol(fd_text, &end, 10);
    if (*end != '\0' || fd < 0 || ::fcntl(static_cast<int>(fd), F_GETFD) < 0) {
        std::fprintf(stderr, "traindeck-train: TRAINDECK_METRICS_FD=%s is not an open file descriptor; "
                             "writing metrics to stdout with the \"@traindeck \" prefix instead\n", fd_text);
        return;
    }
    if (fd == 1)
        return;
    if (std::FILE* file = ::fdopen(static_cast<int>(fd), "w")) {
        out_ = file;
        prefixed_ = false;
        owns_ = true;
    }
}

MetricsWriter::~MetricsWriter() {
    if (owns_)
        std::fclose(out_);
}

void MetricsWriter::write(nlohmann::json record) {
    record["v"] = 1;
    record["time"] = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    std::string line = record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (prefixed_)
        line.insert(0, "@traindeck ");
    line += '\n';
    if ((std::fwrite(line.data(), 1, line.size(), out_) != line.size() || std::fflush(out_) != 0) && !failed_) {
        failed_ = true; // the reader went away; training goes on, the checkpoints still hold the run
        std::fprintf(stderr, "traindeck-train: cannot write metrics (reader closed?); continuing without them\n");
    }
}

void MetricsWriter::log(const std::string& line) {
    std::fprintf(stdout, "%s\n", line.c_str());
    std::fflush(stdout);
}

} // namespace traindeck::engine
