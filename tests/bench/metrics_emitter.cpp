// A load-generating job for worker_events: writes `rate` metric records per second to TRAINDECK_METRICS_FD
// for `seconds`, each stamped with the wall time it was written (so the reader can measure latency). With
// START_FILE it begins when that file exists, so that many jobs start streaming together, once they are watched.
//   metrics_emitter RATE SECONDS [START_FILE]
// It must cost far less than what it measures: integers only (no printf of doubles), one write() per 10 ms
// burst, as a training loop with a buffered logger would do.
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include <unistd.h>

int main(int argc, char** argv) {
    if (argc != 3 && argc != 4)
        return 2;
    const double rate = std::atof(argv[1]), seconds = std::atof(argv[2]);
    while (argc == 4 && ::access(argv[3], F_OK) != 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    const char* fd_text = std::getenv("TRAINDECK_METRICS_FD");
    const int fd = fd_text ? std::atoi(fd_text) : 1;
    const auto start = std::chrono::steady_clock::now();
    const long total = static_cast<long>(rate * seconds);
    std::string buffer;
    char number[32];
    auto append = [&](long long value) {
        const auto end = std::to_chars(number, number + sizeof(number), value).ptr;
        buffer.append(number, end);
    };
    for (long step = 1; step <= total;) {
        const long until = std::min(total, static_cast<long>(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() * rate) + 1);
        const long long micros = std::chrono::duration_cast<std::chrono::microseconds>(
            std::chrono::system_clock::now().time_since_epoch()).count();
        buffer.clear();
        for (; step <= until; ++step) {
            buffer += "{\"type\":\"metric\",\"step\":";
            append(step);
            buffer += ",\"loss\":0.5,\"written_us\":";
            append(micros);
            buffer += "}\n";
        }
        for (size_t done = 0; done < buffer.size();) {
            const ssize_t n = ::write(fd, buffer.data() + done, buffer.size() - done);
            if (n <= 0)
                return 1;
            done += static_cast<size_t>(n);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return 0;
}
