// resources/python/traindeck.py's SummaryWriter (the drop-in for torch.utils.tensorboard's) run standalone by the real
// /usr/bin/python3, its event files read back by read_tensorboard_logdir: every scalar exactly as float32 at its step
// (add_scalars' curves as main_tag/tag), histograms' bucket limits and counts (torch's algorithm: numpy's buckets cut
// to those holding values), images' sizes and their PNG pixels (decoded here with zlib), the hparams as the run's
// config; lists, numpy arrays and torch tensors as they come; a scalar event byte for byte what encode_scalar_event
// writes; and, where TensorBoard is installed, the same file through TensorBoard's own reader.
#include "importertest.h"
#include "tfevents.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <regex>
#include <tuple>

#include <sys/wait.h>
#include <unistd.h>

using namespace traindeck::importers;
using namespace traindeck::test;
using nlohmann::json;

namespace {

// Runs `script` with /usr/bin/python3 in `folder` as a script run by hand (no worker's TRAINDECK_METRICS_FD), the
// helper on its path. Returns the exit status; what it printed is in folder/output.txt.
int run_python(const TempDir& folder, const std::string& script) {
    spill(folder.file("script.py"), script);
    const std::string command = "cd '" + folder.path + "' && env -u TRAINDECK_METRICS_FD PYTHONPATH='" +
                                TRAINDECK_PYTHON_HELPER_DIR + "' /usr/bin/python3 script.py > output.txt 2>&1";
    const int status = std::system(command.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool python_has(const std::string& module) {
    return std::system(("/usr/bin/python3 -c 'import " + module + "' > /dev/null 2>&1").c_str()) == 0;
}

ImportedRun only_run(const std::string& logdir) {
    auto runs = read_tensorboard_logdir(logdir);
    EXPECT_TRUE(runs) << (runs ? "" : runs.error());
    if (!runs || runs->size() != 1) {
        ADD_FAILURE() << logdir << ": expected one run";
        return {};
    }
    for (const Damage& d : runs->front().damage)
        ADD_FAILURE() << d.file << " at " << d.offset << ": " << d.what;
    return std::move(runs->front());
}

// The points of a tag, each exactly the float32 of what the script wrote, at its step.
void expect_points(const ImportedRun& run, const std::string& tag,
                   const std::vector<std::pair<int64_t, double>>& points) {
    const auto& got = series(run, tag);
    ASSERT_EQ(got.size(), points.size()) << tag;
    for (size_t i = 0; i < points.size(); ++i) {
        EXPECT_EQ(got[i].step, points[i].first) << tag << " point " << i;
        EXPECT_EQ(got[i].value, static_cast<double>(static_cast<float>(points[i].second))) << tag << " point " << i;
        EXPECT_GT(got[i].wall_time, 1.6e9) << tag << " point " << i;
    }
}

const HistogramPoint& only_histogram(const ImportedRun& run, const std::string& tag) {
    static const HistogramPoint none;
    const auto it = run.histograms.find(tag);
    if (it == run.histograms.end() || it->second.size() != 1) {
        ADD_FAILURE() << "expected one histogram " << tag;
        return none;
    }
    return it->second.front();
}

struct Png {
    uint32_t width = 0, height = 0, channels = 0;
    std::string pixels; // rows of RGB or RGBA bytes, the filter bytes taken out
};

uint32_t big_endian(const std::string& bytes, size_t at) {
    return static_cast<uint32_t>(static_cast<unsigned char>(bytes[at])) << 24 |
           static_cast<uint32_t>(static_cast<unsigned char>(bytes[at + 1])) << 16 |
           static_cast<uint32_t>(static_cast<unsigned char>(bytes[at + 2])) << 8 |
           static_cast<uint32_t>(static_cast<unsigned char>(bytes[at + 3]));
}

// Every PNG inside the file's bytes, in order: chunks walked and their CRCs checked, IDAT inflated, filter bytes 0.
std::vector<Png> pngs_in(const std::string& bytes) {
    static const std::string signature("\x89PNG\r\n\x1a\n", 8);
    std::vector<Png> found;
    for (size_t at = bytes.find(signature); at != std::string::npos; at = bytes.find(signature, at + 1)) {
        Png png;
        std::string compressed;
        for (size_t chunk = at + 8; chunk + 12 <= bytes.size();) {
            const uint32_t length = big_endian(bytes, chunk);
            const std::string kind = bytes.substr(chunk + 4, 4);
            EXPECT_LE(chunk + 12 + length, bytes.size()) << kind << " runs past the file";
            const std::string body = bytes.substr(chunk + 8, length);
            const uLong crc = crc32(crc32(0, nullptr, 0), reinterpret_cast<const Bytef*>(bytes.data() + chunk + 4),
                                    static_cast<uInt>(4 + length));
            EXPECT_EQ(crc, big_endian(bytes, chunk + 8 + length)) << "CRC of the PNG chunk " << kind;
            if (kind == "IHDR") {
                png.width = big_endian(body, 0);
                png.height = big_endian(body, 4);
                EXPECT_EQ(body[8], 8) << "bit depth";
                png.channels = body[9] == 2 ? 3 : body[9] == 6 ? 4 : 0;
            } else if (kind == "IDAT") {
                compressed += body;
            }
            chunk += 12 + length;
            if (kind == "IEND")
                break;
        }
        const size_t row = 1 + static_cast<size_t>(png.width) * png.channels;
        std::string raw(row * png.height, '\0');
        uLongf size = raw.size();
        EXPECT_EQ(uncompress(reinterpret_cast<Bytef*>(raw.data()), &size,
                             reinterpret_cast<const Bytef*>(compressed.data()), compressed.size()),
                  Z_OK);
        EXPECT_EQ(size, raw.size());
        for (size_t y = 0; y < png.height; ++y) {
            EXPECT_EQ(raw[y * row], 0) << "filter byte of row " << y;
            png.pixels += raw.substr(y * row + 1, row - 1);
        }
        found.push_back(std::move(png));
    }
    return found;
}

std::string pixels(std::initializer_list<int> values) {
    std::string out;
    for (const int v : values)
        out.push_back(static_cast<char>(v));
    return out;
}

std::string event_file_in(const std::string& folder) {
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(folder))
        files.push_back(entry.path().string());
    EXPECT_EQ(files.size(), 1u) << folder;
    return files.empty() ? std::string() : files.front();
}

// torch's "tensorflow" buckets, computed here as SummaryWriter.__init__ does: ±1e-12 growing by 10 % to ±1e20, and 0.
std::vector<double> torch_default_bins() {
    std::vector<double> positive;
    for (double v = 1e-12; v < 1e20; v *= 1.1)
        positive.push_back(v);
    std::vector<double> bins;
    for (auto it = positive.rbegin(); it != positive.rend(); ++it)
        bins.push_back(-*it);
    bins.push_back(0);
    bins.insert(bins.end(), positive.begin(), positive.end());
    return bins;
}

} // namespace

TEST(SummaryWriter, StandaloneScriptWritesAnEventFileOurReaderReads) {
    TempDir folder;
    ASSERT_EQ(run_python(folder, R"(
from traindeck import SummaryWriter
writer = SummaryWriter(log_dir="logs/run1")
for step in range(1, 6):
    writer.add_scalar("loss", 1.0 / step, step)
    writer.add_scalars("accuracy", {"train": step / 10, "val": step / 20}, step)
writer.add_scalar("overflow", 1e300, 6)
writer.add_histogram("weights", [-1.0, 0.0, 0.5, 0.5, 2.0], 5, bins=3)
writer.add_histogram("tensorflow_bins", [[0.5, 0.5], [3.0, -2.0]], 5)
writer.add_image("chw", [[[0.0, 0.5, 1.0], [1.0, 0.5, 0.0]]] * 3, 5)
writer.add_image("hw", [[0, 1], [1, 0], [0.25, 2.0]], 5, dataformats="HW")
writer.add_hparams({"lr": 0.01, "optimizer": "sgd", "layers": 3, "nesterov": True, "unset": None},
                   {"hparam/accuracy": 0.875})
writer.close()
with SummaryWriter(comment="_lr0.01") as default_folder:
    default_folder.add_scalar("loss", 1.0, 1)
    print("default:", default_folder.get_logdir())
)"),
              0)
        << read_file(folder.file("output.txt"));
    const ImportedRun run = only_run(folder.file("logs"));
    EXPECT_EQ(run.name, "run1");
    EXPECT_EQ(run.tool, "traindeck");
    ASSERT_EQ(run.files.size(), 1u);
    EXPECT_TRUE(std::regex_match(std::filesystem::path(run.files[0]).filename().string(),
                                 std::regex(R"(events\.out\.tfevents\.\d{10}\.[^.]+(\.[^.]+)*\.\d+\.0)")))
        << run.files[0];
    EXPECT_EQ(run.other_records.at("file_version"), 1);

    expect_points(run, "loss", {{1, 1.0}, {2, 1.0 / 2}, {3, 1.0 / 3}, {4, 1.0 / 4}, {5, 1.0 / 5}});
    expect_points(run, "accuracy/train", {{1, 0.1}, {2, 0.2}, {3, 0.3}, {4, 0.4}, {5, 0.5}});
    expect_points(run, "accuracy/val", {{1, 0.05}, {2, 0.1}, {3, 0.15}, {4, 0.2}, {5, 0.25}});
    ASSERT_EQ(series(run, "overflow").size(), 1u);
    EXPECT_EQ(series(run, "overflow")[0].value, std::numeric_limits<double>::infinity()) << "float32 overflows";
    // add_hparams' metrics at the highest step written before them (no global_step given).
    expect_points(run, "hparam/accuracy", {{6, 0.875}});
    EXPECT_EQ(run.scalars.size(), 5u);

    // numpy.histogram's buckets over [-1, 2] in three: [-1, 0) [0, 1) [1, 2]; TensorBoard keeps right limits, so an
    // empty bucket ends at the left edge.
    const HistogramPoint& weights = only_histogram(run, "weights");
    EXPECT_EQ(weights.step, 5);
    EXPECT_EQ(weights.bucket_limit, (std::vector<double>{-1, 0, 1, 2}));
    EXPECT_EQ(weights.bucket_count, (std::vector<double>{0, 1, 3, 1}));
    EXPECT_EQ(weights.min, -1);
    EXPECT_EQ(weights.max, 2);
    EXPECT_EQ(weights.num, 5);
    EXPECT_EQ(weights.sum, 2);
    EXPECT_EQ(weights.sum_squares, 5.5);
    // The default buckets: consecutive limits of torch's list, each value counted in the bucket [left, right).
    const HistogramPoint& tf = only_histogram(run, "tensorflow_bins");
    const std::vector<double> bins = torch_default_bins();
    ASSERT_GE(tf.bucket_limit.size(), 2u);
    const auto first = std::find(bins.begin(), bins.end(), tf.bucket_limit[0]);
    ASSERT_NE(first, bins.end()) << tf.bucket_limit[0] << " is not one of torch's bucket limits";
    ASSERT_LE(static_cast<size_t>(bins.end() - first), bins.size());
    ASSERT_GE(static_cast<size_t>(bins.end() - first), tf.bucket_limit.size());
    EXPECT_TRUE(std::equal(tf.bucket_limit.begin(), tf.bucket_limit.end(), first)) << "limits are consecutive";
    EXPECT_EQ(tf.bucket_count.front(), 0) << "the empty bucket whose right limit is the first value's left edge";
    EXPECT_EQ(tf.num, 4);
    EXPECT_EQ(tf.min, -2);
    EXPECT_EQ(tf.max, 3);
    double counted = 0;
    for (size_t i = 0; i < tf.bucket_count.size(); ++i)
        counted += tf.bucket_count[i];
    EXPECT_EQ(counted, 4);
    auto count_of = [&](double value) {
        for (size_t i = 1; i < tf.bucket_limit.size(); ++i)
            if (tf.bucket_limit[i - 1] <= value && value < tf.bucket_limit[i])
                return tf.bucket_count[i];
        return -1.0;
    };
    EXPECT_EQ(count_of(0.5), 2);
    EXPECT_EQ(count_of(3.0), 1);
    EXPECT_EQ(count_of(-2.0), 1);

    ASSERT_EQ(run.images.count("chw"), 1u);
    ASSERT_EQ(run.images.count("hw"), 1u);
    const ImagePoint chw = run.images.at("chw").at(0), hw = run.images.at("hw").at(0);
    EXPECT_EQ(chw.step, 5);
    EXPECT_EQ(chw.width, 3);
    EXPECT_EQ(chw.height, 2);
    EXPECT_EQ(hw.width, 2);
    EXPECT_EQ(hw.height, 3);
    // The PNGs themselves: grey as RGB, floats scaled by 255 and cut to 0..255 as torch does.
    const std::vector<Png> images = pngs_in(read_file(run.files[0]));
    ASSERT_EQ(images.size(), 2u);
    EXPECT_EQ(images[0].width, 3u);
    EXPECT_EQ(images[0].height, 2u);
    EXPECT_EQ(images[0].channels, 3u);
    EXPECT_EQ(images[0].pixels, pixels({0, 0, 0, 127, 127, 127, 255, 255, 255, 255, 255, 255, 127, 127, 127, 0, 0, 0}));
    EXPECT_EQ(images[1].pixels, pixels({0, 0, 0, 255, 255, 255, 255, 255, 255, 0, 0, 0, 63, 63, 63, 255, 255, 255}));
    EXPECT_EQ(images[0].pixels.size(), static_cast<size_t>(chw.width * chw.height * 3));
    // Each image is read again from where the import found it (as the job view's strip reads it): the same PNG.
    for (const auto& [image, tag, expected] : {std::tuple{chw, "chw", images[0]}, std::tuple{hw, "hw", images[1]}}) {
        const auto encoded =
            read_tensorboard_image(run.files.at(image.file), image.record_offset, tag, image.item, image.step);
        ASSERT_TRUE(encoded) << encoded.error();
        const std::vector<Png> again = pngs_in(*encoded);
        ASSERT_EQ(again.size(), 1u);
        EXPECT_EQ(again[0].pixels, expected.pixels) << tag;
    }

    EXPECT_EQ(run.config, (json{{"lr", 0.01}, {"optimizer", "sgd"}, {"layers", 3.0}, {"nesterov", true}}));

    // As torch names its default folder: runs/<Mon><day>_<hh>-<mm>-<ss>_<host><comment>.
    char host[256] = "";
    ::gethostname(host, sizeof host - 1);
    const std::string output = read_file(folder.file("output.txt"));
    std::smatch match;
    ASSERT_TRUE(std::regex_search(output, match, std::regex(R"(default: (runs/\w{3}\d{2}_\d{2}-\d{2}-\d{2}_(.*)))")))
        << output;
    EXPECT_EQ(match[2].str(), std::string(host) + "_lr0.01");
    const ImportedRun other = only_run(folder.file(match[1].str()));
    expect_points(other, "loss", {{1, 1.0}});
}

TEST(SummaryWriter, NumpyArraysAndTorchTensorsAsTheyCome) {
    if (!python_has("numpy") || !python_has("torch")) {
        TRAINDECK_SKIP("/usr/bin/python3 lacks numpy or torch: Debian's python3-numpy and python3-torch "
                       "(installer/install-deps.sh installs both)");
    }
    TempDir folder;
    ASSERT_EQ(run_python(folder, R"(
import numpy as np
import torch
from traindeck import SummaryWriter
with SummaryWriter("logs") as writer:
    writer.add_scalar("numpy", np.float32(0.1), np.int64(3))
    writer.add_scalar("torch", torch.tensor(0.2), torch.tensor(4))
    writer.add_histogram("numpy", np.array([[-1.0, 0.0], [0.5, 0.5]], dtype=np.float32), 5, bins=3)
    writer.add_histogram("torch", torch.arange(6, dtype=torch.float32, requires_grad=True), 5, bins=5)
    writer.add_image("numpy", np.ones((2, 3, 3)) * np.array([1.0, 0.5, 0.0]), 6, dataformats="HWC")
    writer.add_image("torch", torch.full((1, 2, 2), 200, dtype=torch.uint8), 6)
    writer.add_hparams({"lr": torch.tensor(0.5), "batch": np.int64(64)}, {"m": np.float64(0.25)}, global_step=9)
)"),
              0)
        << read_file(folder.file("output.txt"));
    const ImportedRun run = only_run(folder.file("logs"));
    expect_points(run, "numpy", {{3, 0.1}});
    expect_points(run, "torch", {{4, static_cast<double>(0.2f)}});
    expect_points(run, "m", {{9, 0.25}});
    // [-1, 0, 0.5, 0.5] in three buckets over [-1, 0.5]: [-1, -0.5) [-0.5, 0) [0, 0.5].
    const HistogramPoint& numpy = only_histogram(run, "numpy");
    EXPECT_EQ(numpy.bucket_limit, (std::vector<double>{-1, -0.5, 0, 0.5}));
    EXPECT_EQ(numpy.bucket_count, (std::vector<double>{0, 1, 0, 3}));
    EXPECT_EQ(numpy.num, 4);
    const HistogramPoint& torch = only_histogram(run, "torch");
    EXPECT_EQ(torch.bucket_limit, (std::vector<double>{0, 1, 2, 3, 4, 5}));
    EXPECT_EQ(torch.bucket_count, (std::vector<double>{0, 1, 1, 1, 1, 2}));
    EXPECT_EQ(torch.sum, 15);
    EXPECT_EQ(torch.sum_squares, 55);
    ASSERT_EQ(run.images.count("numpy"), 1u);
    EXPECT_EQ(run.images.at("numpy")[0].width, 3);
    EXPECT_EQ(run.images.at("numpy")[0].height, 2);
    const std::vector<Png> images = pngs_in(read_file(run.files.at(0)));
    ASSERT_EQ(images.size(), 2u);
    EXPECT_EQ(images[0].pixels, pixels({255, 127, 0, 255, 127, 0, 255, 127, 0, 255, 127, 0, 255, 127, 0, 255, 127, 0}));
    EXPECT_EQ(images[1].pixels, pixels({200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200})) << "uint8: as is";
    EXPECT_EQ(run.config, (json{{"lr", 0.5}, {"batch", 64.0}}));
}

// The Python writer and the C++ exporter agree to the byte: a file_version event, then scalar events (step 0 left
// out, a negative and a 41-bit step, a value float32 rounds, NaN, one beyond float32's range, a UTF-8 tag).
TEST(SummaryWriter, ScalarEventsAreTheBytesOfEncodeScalarEvent) {
    TempDir folder;
    ASSERT_EQ(run_python(folder, R"(
from traindeck import SummaryWriter
writer = SummaryWriter(log_dir="bytes")
writer.add_scalar("loss", 0.1, 7, walltime=1700000000.25)
writer.add_scalar("loss", 2.5, 0, walltime=1700000001.5)
writer.add_scalar("train/accuracy", float("nan"), -3, walltime=1700000002.125)
writer.add_scalar("\u00fcber", 1e300, 2 ** 40, walltime=1700000003.0)
writer.add_scalar("loss", -7, None, walltime=1700000004.0)
writer.close()
)"),
              0)
        << read_file(folder.file("output.txt"));
    const std::string bytes = read_file(event_file_in(folder.file("bytes")));
    ASSERT_GT(bytes.size(), 21u);
    ASSERT_EQ(bytes[12], '\x09') << "the file_version event starts with its wall_time";
    double created = 0;
    std::memcpy(&created, bytes.data() + 13, 8);
    const std::string expected =
        encode_file_version_event(created) + encode_scalar_event("loss", 7, 0.1f, 1700000000.25) +
        encode_scalar_event("loss", 0, 2.5f, 1700000001.5) +
        encode_scalar_event("train/accuracy", -3, std::numeric_limits<float>::quiet_NaN(), 1700000002.125) +
        encode_scalar_event("\u00fcber", int64_t(1) << 40, std::numeric_limits<float>::infinity(), 1700000003.0) +
        encode_scalar_event("loss", 0, -7.0f, 1700000004.0);
    EXPECT_EQ(bytes.size(), expected.size());
    EXPECT_TRUE(bytes == expected) << "the Python writer's bytes differ from encode_scalar_event's";
}
