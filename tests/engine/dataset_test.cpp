#include "dataset.h"
#include "requireall.h"
#include "testsupport.h"

#include <gtest/gtest.h>

#include <zlib.h>

#include <algorithm>
#include <fstream>

using namespace traindeck::engine;
using traindeck::test::TempDir;
using traindeck::test::write_text;

namespace {

std::string idx_bytes(uint32_t count, uint32_t rows, uint32_t cols, size_t data_bytes) {
    std::string bytes = {0, 0, 8, 3};
    for (uint32_t v : {count, rows, cols})
        for (int shift = 24; shift >= 0; shift -= 8)
            bytes += static_cast<char>((v >> shift) & 0xff);
    for (size_t i = 0; i < data_bytes; ++i)
        bytes += static_cast<char>(i % 256);
    return bytes;
}

std::string label_bytes(uint32_t count) {
    std::string bytes = {0, 0, 8, 1};
    for (int shift = 24; shift >= 0; shift -= 8)
        bytes += static_cast<char>((count >> shift) & 0xff);
    for (uint32_t i = 0; i < count; ++i)
        bytes += static_cast<char>(i % 3);
    return bytes;
}

void write_gzip(const std::string& path, const std::string& bytes) {
    gzFile file = gzopen(path.c_str(), "wb");
    gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(file);
}

} // namespace

TEST(Dataset, ReadsDebianFashionMnist) {
    if (!traindeck::test::fashion_mnist_installed()) {
        TRAINDECK_SKIP("dataset-fashion-mnist is not installed (installer/install-deps.sh installs it)");
    }
    auto data = load_idx("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz",
                         "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz");
    ASSERT_TRUE(data) << data.error();
    EXPECT_EQ(data->size(), 10000u);
    EXPECT_EQ(data->height, 28);
    EXPECT_EQ(data->width, 28);
    EXPECT_EQ(data->classes, 10);
    EXPECT_EQ(data->y[0], 9); // the first test image is an ankle boot
    const auto [low, high] = std::minmax_element(data->x.begin(), data->x.end());
    EXPECT_EQ(*low, 0.0f);
    EXPECT_EQ(*high, 1.0f);
}

TEST(Dataset, ReadsPlainAndGzipIdx) {
    TempDir dir;
    write_text(dir.file("images"), idx_bytes(4, 2, 3, 24));
    write_gzip(dir.file("labels.gz"), label_bytes(4));
    auto data = load_idx(dir.file("images"), dir.file("labels.gz"));
    ASSERT_TRUE(data) << data.error();
    EXPECT_EQ(data->size(), 4u);
    EXPECT_EQ(data->features(), 6u);
    EXPECT_FLOAT_EQ(data->x[5], 5.0f / 255.0f);
    EXPECT_EQ(data->y, (std::vector<int32_t>{0, 1, 2, 0}));
}

TEST(Dataset, TruncatedOrCorruptIdxIsAClearError) {
    TempDir dir;
    write_gzip(dir.file("labels.gz"), label_bytes(10));
    write_text(dir.file("short"), idx_bytes(10, 28, 28, size_t{28} * 28 * 5));
    auto truncated = load_idx(dir.file("short"), dir.file("labels.gz"));
    ASSERT_FALSE(truncated);
    EXPECT_NE(truncated.error().find("truncated IDX file"), std::string::npos) << truncated.error();
    EXPECT_NE(truncated.error().find("7840 bytes of data but 3920"), std::string::npos) << truncated.error();

    // A gzip stream cut in half: zlib reports the broken stream.
    write_gzip(dir.file("full.gz"), idx_bytes(10, 28, 28, size_t{28} * 28 * 10));
    std::ifstream in(dir.file("full.gz"), std::ios::binary);
    std::string gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    write_text(dir.file("cut.gz"), gz.substr(0, gz.size() / 2));
    auto cut = load_idx(dir.file("cut.gz"), dir.file("labels.gz"));
    ASSERT_FALSE(cut);
    EXPECT_NE(cut.error().find("cut.gz"), std::string::npos) << cut.error();

    write_text(dir.file("text"), "hello, this is not an IDX file");
    auto bad_magic = load_idx(dir.file("text"), dir.file("labels.gz"));
    ASSERT_FALSE(bad_magic);
    EXPECT_NE(bad_magic.error().find("bad magic"), std::string::npos);

    write_text(dir.file("img"), idx_bytes(9, 2, 2, 36));
    auto mismatch = load_idx(dir.file("img"), dir.file("labels.gz"));
    ASSERT_FALSE(mismatch);
    EXPECT_NE(mismatch.error().find("9 images but"), std::string::npos);

    auto missing = load_idx(dir.file("nope"), dir.file("labels.gz"));
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.error().find("cannot open"), std::string::npos);
}

TEST(Dataset, CsvWithStringLabelsAndQuotes) {
    TempDir dir;
    write_text(dir.file("t.csv"), "a,\"b, quoted\",species\n1,2.5,setosa\n3,-4e-1,virginica\n\n5,6,setosa\n");
    auto data = load_csv(dir.file("t.csv"), "species");
    ASSERT_TRUE(data) << data.error();
    EXPECT_EQ(data->size(), 3u);
    EXPECT_EQ(data->features(), 2u);
    EXPECT_EQ(data->class_names, (std::vector<std::string>{"setosa", "virginica"}));
    EXPECT_EQ(data->y, (std::vector<int32_t>{0, 1, 0}));
    EXPECT_FLOAT_EQ(data->x[3], -0.4f);
}

TEST(Dataset, CsvErrorsNameLineAndColumn) {
    TempDir dir;
    write_text(dir.file("bad.csv"), "x,y,label\n1,2,0\n3,oops,1\n");
    auto bad = load_csv(dir.file("bad.csv"), "");
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().find("bad.csv:3: column \"y\": \"oops\" is not a number"), std::string::npos) << bad.error();

    write_text(dir.file("ragged.csv"), "x,y,label\n1,2,0\n3,1\n");
    auto ragged = load_csv(dir.file("ragged.csv"), "");
    ASSERT_FALSE(ragged);
    EXPECT_NE(ragged.error().find("ragged.csv:3: 2 cells, but the header has 3 columns"), std::string::npos);

    write_text(dir.file("nan.csv"), "x,label\nnan,0\n");
    EXPECT_FALSE(load_csv(dir.file("nan.csv"), ""));
    auto no_column = load_csv(dir.file("bad.csv"), "species");
    ASSERT_FALSE(no_column);
    EXPECT_NE(no_column.error().find("no column named \"species\""), std::string::npos);
}

TEST(Dataset, ARegressionsTargetsAreNumbersAndAWordOrAMissingOneIsSaid) {
    TempDir dir;
    write_text(dir.file("t.csv"), "rooms,area,price\n3,70.5,250000\n4,NA,312500.5\n2,40,-1e3\n5,120,\n");
    CsvOptions options{.missing = "fill", .regression = true};
    CsvReport report;
    options.report = &report;
    auto data = load_csv(dir.file("t.csv"), "price", {}, options);
    ASSERT_TRUE(data) << data.error();
    // The row without a price is left out (a target is never made up), the missing area filled.
    EXPECT_EQ(data->size(), 3u);
    EXPECT_TRUE(data->regression());
    EXPECT_EQ(data->target, (std::vector<float>{250000.0f, 312500.5f, -1000.0f}));
    EXPECT_EQ(data->y, (std::vector<int32_t>{0, 0, 0}));
    EXPECT_EQ(data->classes, 1);
    EXPECT_TRUE(data->class_names.empty());
    EXPECT_EQ(report.rows_dropped, 1u);
    EXPECT_EQ(report.cells_filled, 1u);
    // The split and a subset carry the targets with their rows.
    Dataset copy = *data;
    const Dataset val = split_validation(copy, 0.34, 5);
    ASSERT_EQ(val.size(), 1u);
    ASSERT_EQ(copy.target.size(), 2u);
    std::vector<float> all = {val.target[0], copy.target[0], copy.target[1]};
    std::sort(all.begin(), all.end());
    EXPECT_EQ(all, (std::vector<float>{-1000.0f, 250000.0f, 312500.5f}));
    for (size_t i = 0; i < copy.size(); ++i) // rooms 3 → 250000, 4 → 312500.5, 2 → -1000
        EXPECT_EQ(copy.target[i], copy.x[i * 2] == 3 ? 250000.0f : copy.x[i * 2] == 4 ? 312500.5f : -1000.0f);
    const TargetScale scale = fit_target_scale(*data);
    EXPECT_NEAR(scale.mean, (250000.0 + 312500.5 - 1000.0) / 3, 0.1);
    EXPECT_GT(scale.scale, 1e5f);

    write_text(dir.file("word.csv"), "rooms,price\n3,250000\n4,expensive\n");
    auto word = load_csv(dir.file("word.csv"), "price", {}, {.regression = true});
    ASSERT_FALSE(word);
    EXPECT_NE(word.error().find("word.csv:3: the target \"price\" is \"expensive\", not a finite number"),
              std::string::npos)
        << word.error();
    auto missing = load_csv(dir.file("t.csv"), "price", {}, {.regression = true});
    ASSERT_FALSE(missing);
    EXPECT_NE(missing.error().find("t.csv:5: the label is missing"), std::string::npos) << missing.error();
    // The same column read as classes: each price a class of its own, as before.
    write_text(dir.file("ints.csv"), "rooms,price\n3,2\n4,7\n");
    auto classes = load_csv(dir.file("ints.csv"), "price");
    ASSERT_TRUE(classes);
    EXPECT_FALSE(classes->regression());
    EXPECT_EQ(classes->classes, 8);
}

TEST(Dataset, CsvCategoricalColumnsAreOneHotFromTheTrainingFile) {
    TempDir dir;
    write_text(dir.file("train.csv"),
               "age,colour,size,label\n30,red,1.5,a\n40,blue,2.5,b\n50,red,NA,a\n,green,3.5,b\n60,red,4.5,a\n");
    write_text(dir.file("test.csv"), "age,colour,size,label\n35,blue,1,a\n45,purple,2,b\n");
    CsvEncoding encoding;
    CsvReport report;
    // Missing cells are an error by default, naming the line and column.
    auto refused = load_csv(dir.file("train.csv"), "label", {}, {.learned = &encoding});
    ASSERT_FALSE(refused);
    EXPECT_NE(
        refused.error().find("train.csv:4: column \"size\" is missing (set data.missing to \"drop\" or \"fill\")"),
        std::string::npos)
        << refused.error();

    auto filled =
        load_csv(dir.file("train.csv"), "label", {}, {.missing = "fill", .learned = &encoding, .report = &report});
    ASSERT_TRUE(filled) << filled.error();
    // colour one-hot over its values in byte order (blue, green, red); age and size numeric.
    EXPECT_EQ(filled->feature_names,
              (std::vector<std::string>{"age", "colour=blue", "colour=green", "colour=red", "size"}));
    ASSERT_EQ(filled->features(), 5u);
    EXPECT_EQ(std::vector<float>(filled->x.begin(), filled->x.begin() + 5), (std::vector<float>{30, 0, 0, 1, 1.5f}));
    // Row 3's size is the column's mean (1.5, 2.5, 3.5, 4.5 → 3); row 4's age the mean of 30, 40, 50, 60.
    EXPECT_FLOAT_EQ(filled->x[2 * 5 + 4], 3.0f);
    EXPECT_FLOAT_EQ(filled->x[3 * 5 + 0], 45.0f);
    EXPECT_EQ(report.cells_filled, 2u);
    EXPECT_EQ(encoding.categories[1], (std::vector<std::string>{"blue", "green", "red"}));

    // The test file reads with the training file's encoding; a colour training never saw is all zeros, counted.
    CsvReport test_report;
    auto test = load_csv(dir.file("test.csv"), "label", filled->class_names,
                         {.missing = "fill", .encoding = &encoding, .report = &test_report});
    ASSERT_TRUE(test) << test.error();
    EXPECT_EQ(test->features(), 5u);
    EXPECT_EQ(std::vector<float>(test->x.begin(), test->x.begin() + 5), (std::vector<float>{35, 1, 0, 0, 1}));
    EXPECT_EQ(std::vector<float>(test->x.begin() + 5, test->x.end()), (std::vector<float>{45, 0, 0, 0, 2}));
    EXPECT_EQ(test_report.unseen_values, 1u);

    // drop: the rows with a missing cell go, and are counted.
    CsvReport dropped;
    auto kept = load_csv(dir.file("train.csv"), "label", {}, {.missing = "drop", .report = &dropped});
    ASSERT_TRUE(kept) << kept.error();
    EXPECT_EQ(kept->size(), 3u);
    EXPECT_EQ(dropped.rows_dropped, 2u);
    EXPECT_EQ(kept->y, (std::vector<int32_t>{0, 1, 0})) << "the labels stay with their rows (a, b, a)";
    EXPECT_FLOAT_EQ(kept->x[2 * 5 + 0], 60.0f);
    // An identifier column is no category.
    std::string ids = "id,label\n";
    for (int i = 0; i < 120; ++i)
        ids.append("user").append(std::to_string(i)).append(i % 2 ? ",a\n" : ",b\n");
    write_text(dir.file("ids.csv"), ids);
    auto identifiers = load_csv(dir.file("ids.csv"), "label");
    ASSERT_FALSE(identifiers);
    EXPECT_NE(identifiers.error().find("column \"id\" has 120 different text values in 120 rows"), std::string::npos)
        << identifiers.error();
    // A column of numbers with one word in it is a typo, not a category.
    write_text(dir.file("typo.csv"), "x,label\n1,a\n2,b\n3x,a\n4,b\n");
    auto typo = load_csv(dir.file("typo.csv"), "label");
    ASSERT_FALSE(typo);
    EXPECT_NE(typo.error().find("typo.csv:4: column \"x\": \"3x\" is not a number (most of the column is"),
              std::string::npos)
        << typo.error();
}

TEST(Dataset, ValidationSplitAndNormalisation) {
    Dataset data;
    data.width = 2;
    data.classes = 2;
    for (int i = 0; i < 100; ++i) {
        data.x.push_back(float(i));
        data.x.push_back(float(2 * i + 1));
        data.y.push_back(i % 2);
    }
    Dataset val = split_validation(data, 0.2, 7);
    EXPECT_EQ(data.size(), 80u);
    EXPECT_EQ(val.size(), 20u);
    const Normalization norm = fit_normalization(data);
    apply_normalization(data, norm);
    double mean = 0.0, square = 0.0;
    for (size_t i = 0; i < data.size(); ++i) {
        mean += data.x[i * 2 + 1];
        square += data.x[i * 2 + 1] * data.x[i * 2 + 1];
    }
    EXPECT_NEAR(mean / 80.0, 0.0, 1e-5);
    EXPECT_NEAR(square / 80.0, 1.0, 1e-4);
}
