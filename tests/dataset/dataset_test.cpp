// Dataset manifests and format checks on real files: hashes against sha256sum, versions by content, diffs, and
// every kind of bad input the registration must refuse with a message (and no version).
#include "inspect.h"
#include "manifest.h"
#include "randombytes.h"
#include "requireall.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <sys/wait.h>
#include <unistd.h>

using namespace traindeck::dataset;
using traindeck::test::random_bytes;
namespace fs = std::filesystem;

namespace {

class TempDir {
public:
    TempDir() {
        char pattern[] = "/tmp/traindeck-dataset-XXXXXX";
        path_ = ::mkdtemp(pattern);
    }
    ~TempDir() {
        std::error_code ec;
        fs::permissions(path_, fs::perms::all, ec);
        fs::remove_all(path_, ec);
    }
    std::string file(const std::string& name) const { return path_ + "/" + name; }
    const std::string& path() const { return path_; }

private:
    std::string path_;
};

void write_bytes(const std::string& path, const std::string& bytes) {
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path, std::ios::binary) << bytes;
}

std::string sha256sum(const std::string& path) {
    FILE* pipe = ::popen(("sha256sum '" + path + "'").c_str(), "r");
    char line[256] = {};
    const bool got = std::fgets(line, sizeof(line), pipe) != nullptr;
    ::pclose(pipe);
    return got ? std::string(line, 64) : std::string();
}

void write_gzip(const std::string& path, const std::string& bytes) {
    gzFile file = gzopen(path.c_str(), "wb");
    gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(file);
}

std::string idx_header(int dims, std::initializer_list<uint32_t> sizes) {
    std::string header = {0, 0, 8, static_cast<char>(dims)};
    for (uint32_t size : sizes)
        for (int shift : {24, 16, 8, 0})
            header += static_cast<char>((size >> shift) & 0xff);
    return header;
}

Manifest scan(const std::string& root) {
    Manifest manifest;
    std::string error;
    EXPECT_TRUE(scan_manifest(root, manifest, error)) << error;
    return manifest;
}

} // namespace

TEST(Manifest, HashesEqualSha256sumAndChunksCoverLargeFiles) {
    TempDir dir;
    write_bytes(dir.file("small.bin"), random_bytes(1000, 1));
    write_bytes(dir.file("nested/large.bin"), random_bytes(kChunkBytes * 2 + 12345, 2));
    write_bytes(dir.file("empty.txt"), "");
    const Manifest manifest = scan(dir.path());
    ASSERT_EQ(manifest.files.size(), 3u);
    EXPECT_EQ(manifest.files[0].path, "empty.txt");
    EXPECT_EQ(manifest.files[1].path, "nested/large.bin");
    for (const ManifestFile& file : manifest.files)
        EXPECT_EQ(file.sha256, sha256sum(dir.file(file.path))) << file.path;
    const ManifestFile& large = manifest.files[1];
    ASSERT_EQ(large.chunks.size(), 3u);
    const std::string bytes = random_bytes(kChunkBytes * 2 + 12345, 2);
    for (size_t c = 0; c < 3; ++c) {
        const std::string piece = bytes.substr(c * kChunkBytes, kChunkBytes);
        EXPECT_EQ(large.chunks[c], sha256_hex(piece.data(), piece.size()));
    }
    EXPECT_EQ(manifest.files[2].chunks, std::vector<std::string>{manifest.files[2].sha256});
    EXPECT_EQ(manifest.bytes(), 1000 + kChunkBytes * 2 + 12345);

    // The version is the content's: the same bytes under a new date (or scanned by one thread) give the same id.
    fs::last_write_time(dir.file("small.bin"), fs::file_time_type::clock::now() - std::chrono::hours(5));
    Manifest again;
    std::string error;
    ScanOptions one_thread;
    one_thread.threads = 1;
    ASSERT_TRUE(scan_manifest(dir.path(), again, error, one_thread)) << error;
    EXPECT_EQ(again.version(), manifest.version());

    // Round trip through JSON (the form it travels and is stored in).
    Manifest parsed;
    ASSERT_TRUE(Manifest::from_json(nlohmann::json::parse(manifest.to_json().dump()), parsed, error)) << error;
    EXPECT_EQ(parsed.version(), manifest.version());
}

TEST(Manifest, ChangedFolderIsANewVersionWithItsDiff) {
    TempDir dir;
    for (int i = 0; i < 5; ++i)
        write_bytes(dir.file("f" + std::to_string(i) + ".bin"), random_bytes(100 + i, i));
    const Manifest before = scan(dir.path());
    write_bytes(dir.file("f1.bin"), random_bytes(300, 99));  // changed
    fs::remove(dir.file("f2.bin"));                           // removed
    write_bytes(dir.file("sub/new.bin"), random_bytes(7, 5)); // added
    const Manifest after = scan(dir.path());
    EXPECT_NE(before.version(), after.version());
    const ManifestDiff diff = diff_manifests(before, after);
    ASSERT_EQ(diff.changed.size(), 1u);
    EXPECT_EQ(diff.changed[0].path, "f1.bin");
    EXPECT_EQ(diff.changed[0].old_size, 101);
    EXPECT_EQ(diff.changed[0].new_size, 300);
    ASSERT_EQ(diff.removed.size(), 1u);
    EXPECT_EQ(diff.removed[0].path, "f2.bin");
    ASSERT_EQ(diff.added.size(), 1u);
    EXPECT_EQ(diff.added[0].path, "sub/new.bin");
    EXPECT_EQ(diff.added[0].new_size, 7);
    EXPECT_EQ(diff.unchanged, 3);
    EXPECT_TRUE(diff_manifests(after, after).empty());
}

TEST(Manifest, FileChangingWhileHashedIsRefused) {
    TempDir dir;
    write_bytes(dir.file("growing.bin"), random_bytes(kChunkBytes * 3, 3));
    Manifest manifest;
    std::string error;
    ScanOptions options;
    options.progress_every = kChunkBytes;
    options.threads = 1;
    bool touched = false;
    options.progress = [&](const ScanProgress&) {
        if (!touched)
            std::ofstream(dir.file("growing.bin"), std::ios::app) << "more";
        touched = true;
    };
    EXPECT_FALSE(scan_manifest(dir.path(), manifest, error, options));
    EXPECT_NE(error.find("growing.bin"), std::string::npos) << error;
    EXPECT_NE(error.find("changed while"), std::string::npos) << error;
    EXPECT_TRUE(manifest.files.empty());
}

TEST(Manifest, UnreadableFileIsNamed) {
    TempDir dir;
    write_bytes(dir.file("ok.bin"), "fine");
    write_bytes(dir.file("secret.bin"), "no");
    fs::permissions(dir.file("secret.bin"), fs::perms::none);
    fs::permissions(dir.path(), fs::perms::all);
    // Root reads anything: scan as an unprivileged user in a child process.
    const pid_t child = ::fork();
    if (child == 0) {
        if (::getuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0))
            ::_exit(3);
        Manifest manifest;
        std::string error;
        const bool ok = scan_manifest(dir.path(), manifest, error);
        ::_exit(!ok && error.find("secret.bin") != std::string::npos && error.find("cannot read") != std::string::npos ? 0 : 1);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "the scan did not fail with a message naming secret.bin";
}

TEST(Manifest, LinksMayNotLeaveTheFolder) {
    TempDir dir, outside;
    write_bytes(dir.file("data/a.bin"), "a");
    write_bytes(outside.file("b.bin"), "b");
    fs::create_symlink(dir.file("data/a.bin"), dir.file("link-inside.bin"));
    Manifest manifest = scan(dir.path());
    ASSERT_EQ(manifest.files.size(), 2u);
    EXPECT_EQ(manifest.files[1].sha256, manifest.files[0].sha256);
    fs::create_symlink(outside.file("b.bin"), dir.file("escape.bin"));
    std::string error;
    EXPECT_FALSE(scan_manifest(dir.path(), manifest, error));
    EXPECT_NE(error.find("escape.bin"), std::string::npos) << error;
    EXPECT_NE(error.find("outside"), std::string::npos) << error;
}

TEST(Manifest, BadManifestsFromTheNetworkAreRefused) {
    const std::string hash(64, 'a');
    auto manifest_with = [&](const std::string& path, nlohmann::json chunks, int64_t size = 3) {
        return nlohmann::json{{"format", 1}, {"files", {{{"path", path}, {"size", size}, {"sha256", hash}, {"chunks", chunks}}}}};
    };
    Manifest manifest;
    std::string error;
    EXPECT_TRUE(Manifest::from_json(manifest_with("ok/file.bin", {hash}), manifest, error)) << error;
    for (const char* path : {"../etc/passwd", "/etc/passwd", "a/../../b", "a//b", "./a", ""}) {
        EXPECT_FALSE(Manifest::from_json(manifest_with(path, {hash}), manifest, error)) << path;
        EXPECT_FALSE(error.empty());
    }
    EXPECT_FALSE(Manifest::from_json(manifest_with("a", {"XYZ"}), manifest, error));
    EXPECT_FALSE(Manifest::from_json(manifest_with("a", {hash, hash}), manifest, error)); // 2 chunks for 3 bytes
    EXPECT_NE(error.find("chunk hashes do not fit"), std::string::npos) << error;
    EXPECT_FALSE(Manifest::from_json(nlohmann::json::parse("[1,2]"), manifest, error));
    EXPECT_FALSE(Manifest::from_json(manifest_with("a", {hash}, -5), manifest, error));
}

TEST(Inspect, FashionMnistIsAnIdxSetWithLabels) {
    const std::string root = "/usr/share/datasets/fashion-mnist";
    if (!fs::exists(root + "/train-images-idx3-ubyte.gz")) {
        TRAINDECK_SKIP("dataset-fashion-mnist is not installed (installer/install-deps.sh installs it)");
    }
    const Manifest manifest = scan(root);
    Preview preview;
    std::string error;
    ASSERT_TRUE(inspect_dataset(root, manifest, preview, error, 16)) << error;
    EXPECT_EQ(preview.format, "idx");
    ASSERT_EQ(preview.idx.size(), 2u);
    const IdxSet& train = preview.idx[1].count == 60000 ? preview.idx[1] : preview.idx[0];
    EXPECT_EQ(train.count, 60000);
    EXPECT_EQ(train.height, 28);
    EXPECT_EQ(train.width, 28);
    EXPECT_EQ(train.pixels.size(), 16u * 28 * 28);
    ASSERT_EQ(train.sample_labels.size(), 16u);
    EXPECT_EQ(train.sample_labels[0], 9); // the first Fashion-MNIST training image is an ankle boot
    EXPECT_NE(preview.summary.find("70000"), std::string::npos) << preview.summary;
}

TEST(Inspect, CorruptIdxHeaderAndTruncatedDataAreRefused) {
    TempDir dir;
    const std::string pixels(size_t{3} * 4 * 4, '\x7f');
    write_gzip(dir.file("train-images-idx3-ubyte.gz"), idx_header(3, {3, 4, 4}) + pixels);
    write_gzip(dir.file("train-labels-idx1-ubyte.gz"), idx_header(1, {3}) + std::string("\x01\x02\x03"));
    Preview preview;
    std::string error;
    ASSERT_TRUE(inspect_dataset(dir.path(), scan(dir.path()), preview, error)) << error;
    EXPECT_EQ(preview.idx.at(0).sample_labels, (std::vector<int>{1, 2, 3}));

    std::string bad = idx_header(3, {3, 4, 4}) + pixels;
    bad[2] = 0x0d; // float data: not what TrainDeck reads
    write_gzip(dir.file("train-images-idx3-ubyte.gz"), bad);
    EXPECT_FALSE(inspect_dataset(dir.path(), scan(dir.path()), preview, error));
    EXPECT_NE(error.find("corrupt header"), std::string::npos) << error;

    write_gzip(dir.file("train-images-idx3-ubyte.gz"), idx_header(3, {3, 4, 4}) + pixels.substr(10));
    EXPECT_FALSE(inspect_dataset(dir.path(), scan(dir.path()), preview, error));
    EXPECT_NE(error.find("truncated"), std::string::npos) << error;

    write_gzip(dir.file("train-images-idx3-ubyte.gz"), idx_header(3, {3, 4, 4}) + pixels);
    write_gzip(dir.file("train-labels-idx1-ubyte.gz"), idx_header(1, {2}) + std::string("\x01\x02"));
    EXPECT_FALSE(inspect_dataset(dir.path(), scan(dir.path()), preview, error));
    EXPECT_NE(error.find("2 labels for 3 images"), std::string::npos) << error;
}

TEST(Inspect, CsvTypesAndRaggedRows) {
    TempDir dir;
    write_bytes(dir.file("iris.csv"), "sepal,petal,count,species\n5.1,1.4,3,setosa\n4.9,1.3,2,\"setosa, small\"\n6.0,,7,virginica\n");
    Preview preview;
    std::string error;
    ASSERT_TRUE(inspect_dataset(dir.path(), scan(dir.path()), preview, error)) << error;
    EXPECT_EQ(preview.format, "csv");
    const CsvTable& table = preview.tables.at(0);
    EXPECT_EQ(table.types, (std::vector<std::string>{"number", "number", "integer", "text"}));
    EXPECT_EQ(table.row_count, 3);
    EXPECT_EQ(table.rows.at(1).at(3), "setosa, small");
    // The label column (the last, as a job reads it), with its classes and how many rows each.
    EXPECT_EQ(table.label_column, 3);
    EXPECT_NE(preview.summary.find("label column \"species\" (the last: a job trains on it unless its spec names "
                                   "label_column): 3 classes: setosa (1), \"setosa, small\" (1), virginica (1)"),
              std::string::npos)
        << preview.summary;

    write_bytes(dir.file("iris.csv"), "a,b,c\n1,2,3\n4,5\n7,8,9\n");
    EXPECT_FALSE(inspect_dataset(dir.path(), scan(dir.path()), preview, error));
    EXPECT_NE(error.find("iris.csv:3"), std::string::npos) << error;
    EXPECT_NE(error.find("ragged"), std::string::npos) << error;
}

// The label column is the last, as the trainer reads it: a numeric target of many values reads as a range, a text
// column of too many values says so, a column of few numbers is classes in numeric order (the first 20), and a column
// named like a label elsewhere is pointed out.
TEST(Inspect, CsvLabelColumnSaysItsClassesOrItsRange) {
    TempDir dir;
    std::string csv = "id, Class ,price,city\n";
    for (int i = 0; i < 100; ++i)
        csv += std::to_string(i) + "," + std::to_string(i % 3) + "," + std::to_string(1.5 * i) + ",c" +
               std::to_string(i) + "\n";
    write_bytes(dir.file("data.csv"), csv);
    Preview preview;
    std::string error;
    ASSERT_TRUE(inspect_dataset(dir.path(), scan(dir.path()), preview, error)) << error;
    CsvTable table = preview.tables.at(0);
    EXPECT_EQ(table.label_column, 3);
    EXPECT_EQ(table.named_label, 1) << "\" Class \" is named like a label (trimmed, any case)";
    const std::string note = "; column \" Class \" is named like a label: a job's \"label_column\" chooses it";
    const std::string last = " (the last: a job trains on it unless its spec names label_column)";
    EXPECT_EQ(describe_label_column(table), "label column \"city\"" + last + ": more than 64 distinct texts" + note);
    EXPECT_EQ(table.values.at(1), (std::vector<std::pair<std::string, int64_t>>{{"0", 34}, {"1", 33}, {"2", 33}}));
    table.label_column = 1;
    EXPECT_EQ(describe_label_column(table),
              "label column \" Class \"" + last + ": 3 classes: 0 (34), 1 (33), 2 (33)" + note);
    table.label_column = 2;
    EXPECT_EQ(describe_label_column(table),
              "label column \"price\"" + last + ": numbers from 0 to 148.5 (a regression target)" + note);
    EXPECT_TRUE(table.values.at(2).empty()) << "100 distinct prices are past the list's limit";
    // Numbers as classes in numeric order; past 20 classes the list ends in "…".
    table.values.at(0) = {{"10", 1}, {"2", 3}, {"9", 1}};
    table.label_column = 0;
    table.named_label = -1;
    EXPECT_EQ(describe_label_column(table), "label column \"id\"" + last + ": 3 classes: 2 (3), 9 (1), 10 (1)");
    table.types.at(3) = "text";
    table.values.at(3).clear();
    for (int i = 0; i < 25; ++i)
        table.values.at(3).emplace_back("c" + std::to_string(100 + i), 1);
    table.label_column = 3;
    const std::string many = describe_label_column(table);
    EXPECT_NE(many.find(": 25 classes: c100 (1), "), std::string::npos) << many;
    EXPECT_NE(many.find("c119 (1), …"), std::string::npos) << many;
    EXPECT_EQ(many.find("c120"), std::string::npos) << many;
}

TEST(Inspect, ClassFoldersOfImages) {
    TempDir dir;
    const std::string png = std::string("\x89PNG\r\n\x1a\n", 8) + "rest";
    const std::string jpeg = std::string("\xff\xd8\xff\xe0", 4) + "rest";
    for (int i = 0; i < 3; ++i) {
        write_bytes(dir.file("cats/" + std::to_string(i) + ".png"), png);
        write_bytes(dir.file("dogs/" + std::to_string(i) + ".jpg"), jpeg);
    }
    Preview preview;
    std::string error;
    ASSERT_TRUE(inspect_dataset(dir.path(), scan(dir.path()), preview, error)) << error;
    EXPECT_EQ(preview.format, "image-folder");
    ASSERT_EQ(preview.classes.size(), 2u);
    EXPECT_EQ(preview.classes[0].name, "cats");
    EXPECT_EQ(preview.classes[1].count, 3);

    write_bytes(dir.file("dogs/broken.jpg"), png);
    EXPECT_FALSE(inspect_dataset(dir.path(), scan(dir.path()), preview, error));
    EXPECT_NE(error.find("broken.jpg"), std::string::npos) << error;
}
