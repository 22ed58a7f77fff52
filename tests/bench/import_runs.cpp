// Benchmark: importing a TensorBoard logdir into the catalog, against `cat` reading the same bytes (issue 17's
// "Speed").
//   import_runs [--runs 200] [--points 10000000] [--megabytes 2000] [--bulk histograms|images] [--rounds 5]
//               [--dir DIR] [--keep]
// The logdir (in DIR, default $TMPDIR or /tmp, as traindeck-import-bench/; removed at the end unless --keep):
//   - --runs run folders run-000 ... each with one event file written by our exporter (write_tensorboard_scalars):
//     its file_version event, the run's config (4 keys) as hparams session_start_info, and --points / --runs scalar
//     points as 5 tags (train/loss, train/accuracy, train/learning_rate, val/loss, val/accuracy) at every step, one
//     event a point (200 runs: 50,000 points a run, steps 1..10,000).
//   - A scalar event is about 50 bytes framed, so 10 M points are about 0.5 GB, not 2 GB. The rest of --megabytes
//     is what a real logdir's bulk usually is, in a second event file a run (events.out.tfevents.*.<bulk>, framed by
//     tfrecord_frame, encoded with ProtoWriter: our exporter writes scalars only) with 4 tags every 10 steps:
//       histograms (the default): TensorBoard's HistogramProto (weights and gradients of two layers), the bucket
//         count chosen so the logdir reaches --megabytes (about 110 buckets at the defaults); the import keeps every
//         bucket in the catalog;
//       images: Summary.Image (4 sample tags) with incompressible encoded bytes sized likewise (about 1.9 KB each);
//         the import keeps their tags, steps, sizes and places (model/imagestore.h), the pixels stay in the source.
//     --megabytes 0 writes the scalars alone. The output states the layout and the real size.
// Then --rounds rounds, alternating which goes first, each timing:
//   (a) `cat` of every file of the logdir to /dev/null: the physical limit of reading these bytes on this machine;
//   (b) our import of the whole logdir into a fresh catalog file in DIR: list_tensorboard_runs, Catalog::open, then
//       each run read (read_tensorboard_run) on a thread of its own, at most two ahead, while import_run writes the
//       one before (each in its own transaction), as the console's RunImporter overlaps them (read_runs_each); the
//       catalog closed (its WAL checkpointed), the runs freed.
// Both read warm page cache: the logdir is read once before the first round and fits in memory (the output says how
// much of it was resident after the rounds, by mincore); the import's writes go to the page cache too (the catalog's
// synchronous=NORMAL syncs at checkpoints only, as in the console). Medians of each side and the median of the
// per-round ratios are printed with points/s and MB/s (MB = 10^6 bytes). Targets: >= 5 M points/s and >= 25 % of
// cat's MB/s. Each round's import is checked whole (every point and histogram added, no damage, nothing not
// finite). Exits 1 when a target is missed or an import is not whole, 2 when it cannot run. These machines are
// noisy (other builds share the cores): read the medians and the ratio, not one round.
#include "catalog.h"
#include "process.h"
#include "protowire.h"
#include "runimport.h"
#include "tfevents.h"
#include "tfrecord.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace traindeck;
using namespace traindeck::importers;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

namespace {

constexpr double kPointsTarget = 5e6, kCatShareTarget = 0.25;
constexpr int kHistogramEvery = 10; // steps between two histograms of one tag
const char* const kScalarTags[] = {"train/loss", "train/accuracy", "train/learning_rate", "val/loss", "val/accuracy"};
const char* const kHistogramTags[] = {"weights/fc1", "weights/fc2", "gradients/fc1", "gradients/fc2"};
const char* const kImageTags[] = {"samples/input", "samples/reconstruction", "samples/generated", "samples/attention"};
constexpr double kFirstWallTime = 1.7e9;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }
double cpu_seconds(const rusage& usage) {
    return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
           1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}
double median(std::vector<double> v) {
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    const size_t mid = v.size() / 2;
    return v.size() % 2 ? v[mid] : 0.5 * (v[mid - 1] + v[mid]);
}

ImportedRun scalar_run(int index, int64_t steps) {
    ImportedRun run;
    run.started = kFirstWallTime + index * 1e5;
    run.config = {{"learning_rate", 1e-3 * (1 + index % 7)},
                  {"batch_size", 32 << (index % 4)},
                  {"optimizer", index % 2 ? "adam" : "sgd"},
                  {"seed", index}};
    const double rate = 1e-3 * (1 + index % 5);
    for (const char* tag : kScalarTags) {
        auto& points = run.scalars[tag];
        points.reserve(static_cast<size_t>(steps));
        const double phase = static_cast<double>(std::strlen(tag));
        for (int64_t step = 1; step <= steps; ++step) {
            const double decay = std::exp(-rate * static_cast<double>(step));
            points.push_back({step, decay + 0.01 * std::sin(phase + 0.37 * static_cast<double>(step)),
                              run.started + 0.05 * static_cast<double>(step)});
        }
    }
    return run;
}

// One framed Event with a HistogramProto of `buckets` buckets, as TensorBoard's legacy histogram summary is written.
std::string histogram_event(const std::string& tag, int64_t step, double wall_time, int buckets) {
    std::string limits(static_cast<size_t>(buckets) * 8, '\0'), counts(limits.size(), '\0');
    double num = 0, sum = 0, sum_squares = 0;
    const double spread = 1.0 + 1e-4 * static_cast<double>(step);
    for (int i = 0; i < buckets; ++i) {
        const double limit = spread * (-3.0 + 6.0 * (i + 1) / buckets);
        const double center = limit - 3.0 * spread / buckets;
        const double count = std::round(1000.0 * std::exp(-0.5 * center * center / (spread * spread)));
        std::memcpy(limits.data() + 8 * static_cast<size_t>(i), &limit, 8);
        std::memcpy(counts.data() + 8 * static_cast<size_t>(i), &count, 8);
        num += count;
        sum += count * center;
        sum_squares += count * center * center;
    }
    ProtoWriter histogram;
    histogram.fixed64(1, -3.0 * spread).fixed64(2, 3.0 * spread).fixed64(3, num).fixed64(4, sum);
    histogram.fixed64(5, sum_squares).bytes(6, limits).bytes(7, counts);
    const std::string value = ProtoWriter().bytes(1, tag).bytes(5, histogram.data()).take();
    ProtoWriter event;
    event.fixed64(1, wall_time).varint(2, static_cast<uint64_t>(step));
    event.bytes(5, ProtoWriter().bytes(1, value).data());
    return tfrecord_frame(event.data());
}

// One framed Event with a Summary.Image of `bytes` encoded bytes (not a real PNG: the import keeps its place, the job
// view decodes it).
std::string image_event(const std::string& tag, int64_t step, double wall_time, int bytes) {
    std::string encoded(static_cast<size_t>(bytes), '\0');
    uint64_t state = 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(step);
    for (char& c : encoded) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        c = static_cast<char>(state >> 56);
    }
    ProtoWriter image;
    image.varint(1, 32).varint(2, 32).varint(3, 3).bytes(4, encoded);
    const std::string value = ProtoWriter().bytes(1, tag).bytes(4, image.data()).take();
    ProtoWriter event;
    event.fixed64(1, wall_time).varint(2, static_cast<uint64_t>(step));
    event.bytes(5, ProtoWriter().bytes(1, value).data());
    return tfrecord_frame(event.data());
}

struct Logdir {
    std::vector<std::string> files;
    uint64_t bytes = 0, scalar_bytes = 0;
    int64_t points = 0, histograms = 0, images = 0;
    int buckets = 0, image_bytes = 0;
};

// Writes the logdir the header describes; an empty string, or why not.
std::string write_logdir(const fs::path& root, int runs, int64_t total_points, double megabytes, bool images,
                         Logdir& out) {
    const int64_t steps = total_points / runs / static_cast<int64_t>(std::size(kScalarTags));
    for (int r = 0; r < runs; ++r) {
        char name[32];
        std::snprintf(name, sizeof name, "run-%03d", r);
        const ImportedRun run = scalar_run(r, steps);
        const auto path = write_tensorboard_scalars((root / name).string(), run);
        if (!path)
            return path.error();
        out.files.push_back(*path);
        out.scalar_bytes += fs::file_size(*path);
        out.points += run.scalar_points();
    }
    const int64_t per_run = steps / kHistogramEvery * static_cast<int64_t>(std::size(kHistogramTags));
    const double budget = megabytes * 1e6 - static_cast<double>(out.scalar_bytes);
    if (megabytes <= 0 || budget <= 0 || per_run == 0)
        return {};
    // Bucket count (or image size) from the size of an event with none: each bucket adds a limit and a count.
    const double per_event = budget / static_cast<double>(runs * per_run);
    const double empty = static_cast<double>((images ? image_event(kImageTags[0], steps, kFirstWallTime, 0)
                                                     : histogram_event(kHistogramTags[0], steps, kFirstWallTime, 0))
                                                 .size());
    if (images)
        out.image_bytes = std::max(1, static_cast<int>(std::lround(per_event - empty - 2)));
    else
        out.buckets = std::max(1, static_cast<int>(std::lround((per_event - empty) / 16)));
    for (int r = 0; r < runs; ++r) {
        char name[32];
        std::snprintf(name, sizeof name, "run-%03d", r);
        const std::string path =
            (root / name / (std::string("events.out.tfevents.1700000000.bench.") + (images ? "images" : "histograms")))
                .string();
        std::string bytes;
        bytes.reserve(static_cast<size_t>(per_event * static_cast<double>(per_run) * 1.01));
        for (int64_t step = kHistogramEvery; step <= steps; step += kHistogramEvery)
            for (size_t t = 0; t < std::size(kHistogramTags); ++t) {
                const double wall_time = kFirstWallTime + r * 1e5 + 0.05 * static_cast<double>(step);
                if (images) {
                    bytes += image_event(kImageTags[t], step, wall_time, out.image_bytes);
                    ++out.images;
                } else {
                    bytes += histogram_event(kHistogramTags[t], step, wall_time, out.buckets);
                    ++out.histograms;
                }
            }
        std::ofstream file(path, std::ios::binary | std::ios::trunc);
        if (!file.write(bytes.data(), static_cast<std::streamsize>(bytes.size())) || !file.flush())
            return "cannot write " + path + ": " + std::strerror(errno);
        out.files.push_back(path);
    }
    return {};
}

struct Timing {
    double seconds = -1, cpu = 0; // wall, and the CPU time (user + system) the side used
};

// `cat` of every file to /dev/null; its wall time in seconds (-1 when it failed) and its CPU time.
Timing time_cat(const std::vector<std::string>& files) {
    SpawnOptions options;
    options.argv = {"cat"};
    options.argv.insert(options.argv.end(), files.begin(), files.end());
    options.search_path = true;
    options.output_path = "/dev/null";
    const auto start = Clock::now();
    int error = 0;
    const pid_t pid = spawn_process(options, error);
    if (pid < 0) {
        std::fprintf(stderr, "cannot start cat: %s\n", std::strerror(error));
        return {};
    }
    int status = 0;
    rusage usage{};
    while (::wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
    }
    const double seconds = seconds_since(start);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::fprintf(stderr, "cat failed (status %d)\n", status);
        return {};
    }
    return {seconds, cpu_seconds(usage)};
}

struct ImportRound {
    double seconds = -1, reading = 0, cpu = 0; // reading: the reader thread's time reading runs (not its waits)
    int64_t points = 0, histograms = 0, images = 0, not_finite = 0, damage = 0, runs = 0;
};

ImportRound time_import(const std::string& logdir, const std::string& catalog_path) {
    for (const char* suffix : {"", "-wal", "-shm"})
        fs::remove(catalog_path + suffix);
    ImportRound round;
    rusage before{}, after{};
    ::getrusage(RUSAGE_SELF, &before);
    const auto start = Clock::now();
    {
        const auto listed = list_tensorboard_runs(logdir);
        if (!listed) {
            std::fprintf(stderr, "%s\n", listed.error().c_str());
            return round;
        }
        Catalog catalog;
        if (const std::string error = catalog.open(catalog_path); !error.empty()) {
            std::fprintf(stderr, "%s\n", error.c_str());
            return round;
        }
        // The reader keeps at most two runs ready: the logdir is never in memory whole.
        std::mutex mutex;
        std::condition_variable changed;
        std::deque<ImportedRun> ready;
        bool stop = false;
        std::thread reader([&] {
            SourceBuffer buffer;
            for (const TensorBoardRunFiles& files : *listed) {
                const auto started = Clock::now();
                ImportedRun run = read_tensorboard_run(files, buffer);
                std::unique_lock lock(mutex);
                round.reading += seconds_since(started);
                changed.wait(lock, [&] { return stop || ready.size() < 2; });
                if (stop)
                    return;
                ready.push_back(std::move(run));
                changed.notify_all();
            }
        });
        bool failed = false;
        for (size_t i = 0; i < listed->size() && !failed; ++i) {
            ImportedRun run;
            {
                std::unique_lock lock(mutex);
                changed.wait(lock, [&] { return !ready.empty(); });
                run = std::move(ready.front());
                ready.pop_front();
                changed.notify_all();
            }
            auto result = import_run(catalog, run);
            if (!result) {
                std::fprintf(stderr, "%s\n", result.error().c_str());
                failed = true;
                break;
            }
            round.points += result->points_added;
            round.histograms += result->histograms_added;
            round.images += result->images_added; // their places in the catalog, every one
            round.not_finite += result->not_finite;
            round.damage += static_cast<int64_t>(run.damage.size());
            ++round.runs;
        }
        {
            std::lock_guard lock(mutex);
            stop = true;
            changed.notify_all();
        }
        reader.join();
        if (failed)
            return round;
    }
    round.seconds = seconds_since(start);
    ::getrusage(RUSAGE_SELF, &after);
    round.cpu = cpu_seconds(after) - cpu_seconds(before);
    return round;
}

// The share of the files' pages in the page cache now.
double resident_share(const std::vector<std::string>& files) {
    const long page = ::sysconf(_SC_PAGESIZE);
    uint64_t pages = 0, resident = 0;
    for (const std::string& file : files) {
        const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
        const size_t size = fs::file_size(file);
        if (fd < 0 || size == 0) {
            if (fd >= 0)
                ::close(fd);
            continue;
        }
        void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
        ::close(fd);
        if (map == MAP_FAILED)
            continue;
        std::vector<unsigned char> in_core((size + page - 1) / page);
        if (::mincore(map, size, in_core.data()) == 0) {
            pages += in_core.size();
            for (const unsigned char c : in_core)
                resident += c & 1;
        }
        ::munmap(map, size);
    }
    return pages ? static_cast<double>(resident) / static_cast<double>(pages) : 0;
}

} // namespace

int main(int argc, char** argv) {
    int runs = 200, rounds = 5;
    int64_t total_points = 10'000'000;
    double megabytes = 2000;
    bool keep = false, images = false;
    std::string base = std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp";
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const bool has_value = i + 1 < argc;
        if (arg == "--runs" && has_value)
            runs = std::atoi(argv[++i]);
        else if (arg == "--points" && has_value)
            total_points = std::atoll(argv[++i]);
        else if (arg == "--megabytes" && has_value)
            megabytes = std::atof(argv[++i]);
        else if (arg == "--bulk" && has_value &&
                 (std::string(argv[i + 1]) == "histograms" || std::string(argv[i + 1]) == "images"))
            images = std::string(argv[++i]) == "images";
        else if (arg == "--rounds" && has_value)
            rounds = std::atoi(argv[++i]);
        else if (arg == "--dir" && has_value)
            base = argv[++i];
        else if (arg == "--keep")
            keep = true;
        else {
            std::fprintf(stderr, "usage: import_runs [--runs 200] [--points 10000000] [--megabytes 2000] "
                                 "[--bulk histograms|images] [--rounds 5] [--dir DIR] [--keep]\n");
            return 2;
        }
    }
    if (runs <= 0 || rounds <= 0 || total_points < runs * static_cast<int64_t>(std::size(kScalarTags))) {
        std::fprintf(stderr, "--runs and --rounds must be positive, and --points at least 5 a run\n");
        return 2;
    }
    const fs::path dir = fs::path(base) / "traindeck-import-bench";
    const fs::path logdir = dir / "logdir";
    const std::string catalog_path = (dir / "catalog.db").string();
    std::error_code ec;
    fs::remove_all(dir, ec);
    fs::create_directories(logdir, ec);
    if (ec) {
        std::fprintf(stderr, "cannot create %s: %s\n", logdir.c_str(), ec.message().c_str());
        return 2;
    }
    auto cleanup = [&] {
        if (!keep)
            fs::remove_all(dir, ec);
    };

    auto start = Clock::now();
    Logdir written;
    if (const std::string error = write_logdir(logdir, runs, total_points, megabytes, images, written);
        !error.empty()) {
        std::fprintf(stderr, "%s\n", error.c_str());
        cleanup();
        return 2;
    }
    for (const std::string& file : written.files)
        written.bytes += fs::file_size(file);
    const double mb = static_cast<double>(written.bytes) / 1e6;
    std::printf("import_runs: logdir %s, written in %.0f s\n", logdir.c_str(), seconds_since(start));
    std::printf("  %d runs, %zu event files, %.0f MB (%llu bytes)\n", runs, written.files.size(), mb,
                static_cast<unsigned long long>(written.bytes));
    std::printf("  scalars: %lld points (%zu tags x %lld steps a run, one event a point, our exporter): %.0f MB\n",
                static_cast<long long>(written.points), std::size(kScalarTags),
                static_cast<long long>(written.points / runs / static_cast<int64_t>(std::size(kScalarTags))),
                static_cast<double>(written.scalar_bytes) / 1e6);
    if (written.histograms > 0)
        std::printf("  histograms: %lld (%zu tags every %d steps a run, %d buckets each): %.0f MB\n",
                    static_cast<long long>(written.histograms), std::size(kHistogramTags), kHistogramEvery,
                    written.buckets, static_cast<double>(written.bytes - written.scalar_bytes) / 1e6);
    else if (written.images > 0)
        std::printf("  images: %lld (%zu tags every %d steps a run, %d encoded bytes each, places kept): %.0f MB\n",
                    static_cast<long long>(written.images), std::size(kImageTags), kHistogramEvery, written.image_bytes,
                    static_cast<double>(written.bytes - written.scalar_bytes) / 1e6);
    else
        std::printf("  nothing but scalars (--megabytes %.0f)\n", megabytes);

    // Warm the page cache for both sides: the first round must not pay for the disk while the others do not.
    if (time_cat(written.files).seconds < 0) {
        cleanup();
        return 2;
    }
    std::vector<double> cat_s, import_s, reading_s, ratios, cat_cpu, import_cpu;
    bool whole = true;
    ImportRound last;
    for (int round = 0; round < rounds; ++round) {
        Timing cat;
        ImportRound import;
        if (round % 2 == 0) {
            cat = time_cat(written.files);
            import = time_import(logdir.string(), catalog_path);
        } else {
            import = time_import(logdir.string(), catalog_path);
            cat = time_cat(written.files);
        }
        if (cat.seconds < 0 || import.seconds < 0) {
            cleanup();
            return 2;
        }
        if (import.points != written.points || import.histograms != written.histograms ||
            import.images != written.images || import.damage != 0 || import.not_finite != 0 || import.runs != runs)
            whole = false;
        cat_s.push_back(cat.seconds);
        cat_cpu.push_back(cat.cpu);
        import_s.push_back(import.seconds);
        import_cpu.push_back(import.cpu);
        reading_s.push_back(import.reading);
        // Ratio of the import's MB/s to cat's, this round.
        ratios.push_back(cat.seconds / import.seconds);
        std::printf("  round %d (%s first): cat %.3f s (cpu %.3f s), import %.3f s (cpu %.3f s; reading the logdir "
                    "%.3f s)\n",
                    round + 1, round % 2 == 0 ? "cat" : "import", cat.seconds, cat.cpu, import.seconds, import.cpu,
                    import.reading);
        last = import;
    }
    const double resident = resident_share(written.files);
    const uint64_t catalog_bytes = fs::exists(catalog_path) ? fs::file_size(catalog_path) : 0;

    const double cat = median(cat_s), import = median(import_s), ratio = median(ratios);
    const double points_per_s = static_cast<double>(written.points) / import;
    const bool points_met = points_per_s >= kPointsTarget, share_met = ratio >= kCatShareTarget;
    std::printf("%d rounds, warm page cache on both sides (logdir read once before the rounds; %.0f %% of its pages "
                "resident after them)\n",
                rounds, 100 * resident);
    std::printf("cat to /dev/null:  median %7.3f s  %8.0f MB/s  (cpu median %.3f s)\n", cat, mb / cat, median(cat_cpu));
    std::printf("import:            median %7.3f s  %8.0f MB/s  %10.0f points/s  (catalog file %.0f MB; last round: "
                "%lld points, %lld histograms, %lld images, %lld damage)\n",
                import, mb / import, points_per_s, static_cast<double>(catalog_bytes) / 1e6,
                static_cast<long long>(last.points), static_cast<long long>(last.histograms),
                static_cast<long long>(last.images), static_cast<long long>(last.damage));
    std::printf("  cpu median %.3f s (user + system: the other work on these cores slows the wall times, not this)\n",
                median(import_cpu));
    std::printf("  of which reading the logdir (read_tensorboard_run on its own thread, beside the writing): median "
                "%.3f s busy, %.0f MB/s\n",
                median(reading_s), mb / median(reading_s));
    std::printf("points/s:            target >= 5,000,000: ratio %.2f -> %s\n", points_per_s / kPointsTarget,
                points_met ? "met" : "MISSED");
    std::printf("import MB/s / cat's: median of rounds %.3f  target >= 0.25: ratio %.2f -> %s\n", ratio,
                ratio / kCatShareTarget, share_met ? "met" : "MISSED");
    if (!whole)
        std::printf("an import was NOT WHOLE: expected %lld points, %lld histograms and %lld images of %d runs, no "
                    "damage\n",
                    static_cast<long long>(written.points), static_cast<long long>(written.histograms),
                    static_cast<long long>(written.images), runs);

    // Issue 17's other speed targets (the live tail's p99, traindeck-cli ls on 10,000 runs) are import_tail_ls's.
    std::printf(
        "live tail p99 (< 500 ms) and CLI ls on 10,000 runs (< 150 ms): see build/tests/bench/import_tail_ls\n");

    cleanup();
    return points_met && share_met && whole ? 0 : 1;
}
