// Preloaded (LD_PRELOAD) into a worker for a test: fork() fails with EAGAIN, as on a machine out of processes, in
// a job shim (a process started as `traindeck-worker --run-job DIR`) and nowhere else, so the worker itself and
// everything it starts otherwise run as usual.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace {

bool in_job_shim() {
    char text[4096] = {};
    const int fd = ::open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    const ssize_t got = ::read(fd, text, sizeof(text) - 1);
    ::close(fd);
    // The arguments are separated by NULs: look at each in turn.
    for (ssize_t at = 0; at < got; at += static_cast<ssize_t>(std::strlen(text + at)) + 1)
        if (std::strcmp(text + at, "--run-job") == 0)
            return true;
    return false;
}

} // namespace

extern "C" pid_t fork() {
    if (in_job_shim()) {
        errno = EAGAIN;
        return -1;
    }
    using Fork = pid_t (*)();
    static const auto real = reinterpret_cast<Fork>(::dlsym(RTLD_NEXT, "fork"));
    return real();
}
