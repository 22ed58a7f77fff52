// resultsview.h: a run's confusion matrices from a real catalog file, shown with class names, shaded by each row's
// share, with per-class scores that match the counts; the newest evaluation first, the user's choice kept while
// evaluations arrive. Writes its screenshot to the build's screenshots folder.
#include "base64.h"
#include "catalog.h"
#include "idx.h"
#include "jobspec.h"
#include "requireall.h"
#include "resultsview.h"
#include "unittest.h"

#include <gtest/gtest.h>

#include <QApplication>
#include <QDir>
#include <QKeyEvent>
#include <QPointF>
#include <QTableWidget>
#include <QTemporaryDir>

namespace traindeck {
namespace {

using nlohmann::json;

const std::vector<std::string> kNames = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                         "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

// A plausible Fashion-MNIST test matrix: mostly right, shirts taken for T-shirts, pullovers and coats.
json fashion_matrix(int epoch) {
    json matrix = json::array();
    for (int t = 0; t < 10; ++t) {
        json row = json::array();
        for (int p = 0; p < 10; ++p)
            row.push_back(t == p                                     ? 800 + 10 * epoch + 15 * (t % 3)
                          : (t == 6 && (p == 0 || p == 2 || p == 4)) ? 60 - 5 * epoch
                          : (t + p) % 7 == 0                         ? 9
                                                                     : 2);
        matrix.push_back(row);
    }
    return matrix;
}

class Results : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_TRUE(dir_.isValid());
        path_ = dir_.filePath("catalog.db");
        ASSERT_EQ(catalog_.open(path_.toStdString()), "");
        job_ = catalog_.add_job("cnn on photos", "local", "1", json::object());
    }
    void add_eval(int64_t seq, const char* split, int64_t step, int epoch, const json& matrix, bool names = true) {
        json data = {{"type", "eval"}, {"split", split}, {"step", step}, {"epoch", epoch}, {"confusion", matrix}};
        if (names)
            data["class_names"] = kNames;
        catalog_.db().exec("BEGIN");
        catalog_.ingest(job_, {json{{"seq", seq}, {"time", 100.0 + seq}, {"type", "record"}, {"data", data}}});
        catalog_.db().exec("COMMIT");
    }
    QTemporaryDir dir_;
    QString path_;
    Catalog catalog_;
    int64_t job_ = 0;
};

} // namespace

TEST_F(Results, TheNewestMatrixShowsWithNamesShadesAndScoresThatMatchItsCounts) {
    add_eval(1, "val", 422, 1, fashion_matrix(1));
    add_eval(2, "val", 844, 2, fashion_matrix(2));
    add_eval(3, "test", 844, 2, fashion_matrix(3));
    ResultsView view(path_);
    view.resize(1100, 560);
    view.show();
    bool loaded = false;
    QObject::connect(&view, &ResultsView::loaded, [&] { loaded = true; });
    view.showJob(job_);
    ASSERT_TRUE(test::process_until([&] { return loaded; }));

    ASSERT_EQ(view.evaluationCount(), 3);
    EXPECT_EQ(view.evaluationLabel(0), "test set, step 844") << "the newest first";
    EXPECT_EQ(view.evaluationLabel(2), "val set, epoch 1 (step 422)");
    EXPECT_EQ(view.classNames().at(6), "Shirt");
    EXPECT_EQ(view.matrix()->verticalHeaderItem(6)->text(), "Shirt");
    EXPECT_EQ(view.matrix()->horizontalHeaderItem(9)->text(), "Ankle boot");
    const json shown = fashion_matrix(3);
    int64_t shirt_row = 0, predicted_shirt = 0;
    for (int p = 0; p < 10; ++p)
        shirt_row += shown[6][p].get<int64_t>();
    for (int t = 0; t < 10; ++t)
        predicted_shirt += shown[t][6].get<int64_t>();
    EXPECT_EQ(view.cell(6, 0), QString::number(shown[6][0].get<int64_t>()));
    EXPECT_DOUBLE_EQ(view.cellShare(6, 0), shown[6][0].get<double>() / shirt_row);
    const int64_t hits = shown[6][6].get<int64_t>();
    EXPECT_EQ(view.score(6, 0), QString::number(double(hits) / predicted_shirt, 'f', 3)) << "precision";
    EXPECT_EQ(view.score(6, 1), QString::number(double(hits) / shirt_row, 'f', 3)) << "recall";
    EXPECT_EQ(view.score(6, 3), QString::number(shirt_row));
    EXPECT_NE(view.summary().indexOf("Shirt → T-shirt/top"), -1) << view.summary().toStdString();

    // Shading: the diagonal green, a mistake red, deeper where the share is larger.
    const QColor right = view.matrix()->item(1, 1)->background().color();
    const QColor wrong = view.matrix()->item(6, 0)->background().color();
    EXPECT_GT(right.green(), right.red());
    EXPECT_GT(wrong.red(), wrong.green());
    EXPECT_LT(view.matrix()->item(6, 0)->background().color().lightness(),
              view.matrix()->item(1, 0)->background().color().lightness());

    const QString folder = QStringLiteral(TRAINDECK_SCREENSHOT_DIR);
    ASSERT_TRUE(QDir().mkpath(folder));
    ASSERT_TRUE(view.grab().save(QDir(folder).filePath("results-confusion.png")));

    // While the user has chosen nothing, a new evaluation shows as it arrives.
    loaded = false;
    add_eval(4, "val", 1266, 3, fashion_matrix(4));
    view.refresh();
    ASSERT_TRUE(test::process_until([&] { return loaded; }));
    EXPECT_EQ(view.cell(6, 0), QString::number(fashion_matrix(4)[6][0].get<int64_t>())) << "the newest shows";

    // The user picks epoch 1; a new evaluation arrives; the choice stays.
    view.selectEvaluation(3);
    EXPECT_EQ(view.cell(6, 0), QString::number(fashion_matrix(1)[6][0].get<int64_t>()));
    loaded = false;
    add_eval(5, "val", 1688, 4, fashion_matrix(5));
    view.refresh();
    ASSERT_TRUE(test::process_until([&] { return loaded; }));
    EXPECT_EQ(view.evaluationCount(), 5);
    EXPECT_EQ(view.cell(6, 0), QString::number(fashion_matrix(1)[6][0].get<int64_t>())) << "the choice was kept";
}

TEST_F(Results, TheGalleryShowsTheMistakesAndACellsExamplesAsTheirImages) {
    // Real Fashion-MNIST test images as the trainer would send them: the shirts taken for T-shirts and pullovers,
    // one right shirt, and the matrix they belong to.
    auto images = read_idx(std::string(engine::kFashionMnistDir) + "/t10k-images-idx3-ubyte.gz", 3, 200);
    auto labels = read_idx(std::string(engine::kFashionMnistDir) + "/t10k-labels-idx1-ubyte.gz", 1, 200);
    if (!images || !labels) {
        TRAINDECK_SKIP("dataset-fashion-mnist is not installed (installer/install-deps.sh installs it)");
    }
    std::vector<size_t> shirts, tops;
    for (size_t i = 0; i < 200; ++i) {
        if (labels->data[i] == 6)
            shirts.push_back(i);
        else if (labels->data[i] == 0)
            tops.push_back(i);
    }
    ASSERT_GE(shirts.size(), 4u);
    ASSERT_GE(tops.size(), 1u);
    auto pixels_of = [&](size_t index) { return base64_encode(images->data.data() + index * 784, 784); };
    const json items = {{6, 0, 0.97, pixels_of(shirts[0]), shirts[0]},
                        {6, 2, 0.91, pixels_of(shirts[1]), shirts[1]},
                        {6, 0, 0.62, pixels_of(shirts[2]), shirts[2]},
                        {6, 6, 0.99, pixels_of(shirts[3]), shirts[3]},
                        {0, 0, 0.95, pixels_of(tops[0]), tops[0]}};
    json data = {{"type", "eval"},
                 {"split", "test"},
                 {"step", 844},
                 {"epoch", 2},
                 {"confusion", fashion_matrix(2)},
                 {"class_names", kNames},
                 {"examples", {{"height", 28}, {"width", 28}, {"channels", 1}, {"items", items}, {"candidates", 5}}}};
    catalog_.db().exec("BEGIN");
    catalog_.ingest(job_, {json{{"seq", 1}, {"time", 101.0}, {"type", "record"}, {"data", data}}});
    catalog_.db().exec("COMMIT");
    ResultsView view(path_);
    view.resize(1100, 760);
    view.show();
    bool loaded = false;
    QObject::connect(&view, &ResultsView::loaded, [&] { loaded = true; });
    view.showJob(job_);
    ASSERT_TRUE(test::process_until([&] { return loaded; }));
    // The mistakes, the most confident first, captioned with both classes and the confidence.
    ASSERT_EQ(view.galleryCount(), 3);
    EXPECT_EQ(view.galleryCaption(0), "Shirt → T-shirt/top\n97 %");
    EXPECT_EQ(view.galleryCaption(1), "Shirt → Pullover\n91 %");
    EXPECT_EQ(view.galleryCaption(2), "Shirt → T-shirt/top\n62 %");
    EXPECT_NE(view.galleryTitle().indexOf("Mistakes"), -1);
    // Each is the image itself, pixel for pixel.
    const QImage first = view.galleryImage(0);
    ASSERT_EQ(first.size(), QSize(28, 28));
    for (int y = 0; y < 28; ++y)
        for (int x = 0; x < 28; ++x)
            ASSERT_EQ(qGray(first.pixel(x, y)), images->data[shirts[0] * 784 + static_cast<size_t>(y) * 28 + x])
                << x << "," << y;
    const QString folder = QStringLiteral(TRAINDECK_SCREENSHOT_DIR);
    QDir().mkpath(folder);
    ASSERT_TRUE(view.grab().save(QDir(folder).filePath("results-gallery.png")));

    // A click on the shirts-as-T-shirts cell: its two, and the title says of how many.
    view.matrix()->cellClicked(6, 0);
    ASSERT_EQ(view.galleryCount(), 2);
    const QImage second = view.galleryImage(1); // the 62 % one
    ASSERT_EQ(second.size(), QSize(28, 28));
    for (int y = 0; y < 28; ++y)
        for (int x = 0; x < 28; ++x)
            ASSERT_EQ(qGray(second.pixel(x, y)), images->data[shirts[2] * 784 + static_cast<size_t>(y) * 28 + x])
                << x << "," << y;
    EXPECT_NE(view.galleryTitle().indexOf(QString("True Shirt, predicted T-shirt/top</b>: 2 of its %1 samples")
                                              .arg(fashion_matrix(2)[6][0].get<int>())),
              -1)
        << view.galleryTitle().toStdString();
    // The diagonal: the right shirt; a cell with no example kept says so by showing none.
    view.matrix()->cellClicked(6, 6);
    ASSERT_EQ(view.galleryCount(), 1);
    EXPECT_EQ(view.galleryCaption(0), "Shirt\n99 %");
    view.matrix()->cellClicked(3, 5);
    EXPECT_EQ(view.galleryCount(), 0);
    EXPECT_NE(view.galleryTitle().indexOf("0 of its"), -1);
    view.showCellExamples(-1, -1);
    EXPECT_EQ(view.galleryCount(), 3);
    // From the keyboard: an arrow to the shirts-as-T-shirts cell, then Enter, shows its two.
    view.matrix()->setCurrentCell(6, 1);
    for (const int key : {int(Qt::Key_Left), int(Qt::Key_Return)}) {
        QKeyEvent press(QEvent::KeyPress, key, Qt::NoModifier);
        QApplication::sendEvent(view.matrix(), &press);
    }
    EXPECT_EQ(view.matrix()->currentRow(), 6);
    EXPECT_EQ(view.matrix()->currentColumn(), 0);
    EXPECT_EQ(view.galleryCount(), 2);
    EXPECT_EQ(view.matrix()->accessibleName(), "Confusion matrix");
}

TEST_F(Results, ColourExamplesShowInTheirOwnColours) {
    // Two 2x3 RGB thumbnails, HWC bytes as the trainer sends them: a red one, and one whose left column is blue.
    const std::vector<uint8_t> red = {250, 10, 20, 250, 10, 20, 250, 10, 20, 250, 10, 20, 250, 10, 20, 250, 10, 20};
    std::vector<uint8_t> blue_left = red;
    for (int y = 0; y < 2; ++y) {
        blue_left[static_cast<size_t>(y) * 9 + 0] = 5;
        blue_left[static_cast<size_t>(y) * 9 + 1] = 30;
        blue_left[static_cast<size_t>(y) * 9 + 2] = 240;
    }
    const json items = {{0, 1, 0.8, base64_encode(red.data(), red.size()), 0},
                        {1, 0, 0.7, base64_encode(blue_left.data(), blue_left.size()), 1}};
    json data = {{"type", "eval"},
                 {"split", "test"},
                 {"step", 10},
                 {"epoch", 1},
                 {"confusion", {{3, 1}, {1, 3}}},
                 {"examples", {{"height", 2}, {"width", 3}, {"channels", 3}, {"items", items}, {"candidates", 2}}}};
    catalog_.db().exec("BEGIN");
    catalog_.ingest(job_, {json{{"seq", 1}, {"time", 101.0}, {"type", "record"}, {"data", data}}});
    catalog_.db().exec("COMMIT");
    ResultsView view(path_);
    bool loaded = false;
    QObject::connect(&view, &ResultsView::loaded, [&] { loaded = true; });
    view.showJob(job_);
    ASSERT_TRUE(test::process_until([&] { return loaded; }));
    ASSERT_EQ(view.galleryCount(), 2);
    const QImage first = view.galleryImage(0), second = view.galleryImage(1);
    ASSERT_EQ(first.size(), QSize(3, 2));
    EXPECT_EQ(first.pixelColor(2, 1), QColor(250, 10, 20));
    EXPECT_EQ(second.pixelColor(0, 0), QColor(5, 30, 240)) << "rows of width × 3 bytes, R, G, B";
    EXPECT_EQ(second.pixelColor(0, 1), QColor(5, 30, 240));
    EXPECT_EQ(second.pixelColor(1, 1), QColor(250, 10, 20));
}

TEST_F(Results, ARegressionShowsItsPredictionsAgainstTheTruthAndItsErrors) {
    // 300 house prices, predicted within a few per cent, plus one wild miss; and a classification eval after it.
    json pairs = json::array();
    for (int i = 0; i < 300; ++i) {
        const double truth = 100000 + 1000.0 * i;
        pairs.push_back({truth, truth * (1 + 0.03 * ((i * 7) % 5 - 2) / 2)});
    }
    pairs.push_back({150000.0, 420000.0});
    json data = {{"type", "eval"}, {"split", "test"}, {"step", 90},   {"epoch", 3},      {"loss", 2.5e8},
                 {"rmse", 15811},  {"mae", 4100},     {"r2", 0.9683}, {"samples", 5000}, {"pairs", pairs}};
    catalog_.db().exec("BEGIN");
    catalog_.ingest(job_, {json{{"seq", 1}, {"time", 101.0}, {"type", "record"}, {"data", data}}});
    catalog_.db().exec("COMMIT");
    ResultsView view(path_);
    view.resize(900, 560);
    view.show();
    bool loaded = false;
    QObject::connect(&view, &ResultsView::loaded, [&] { loaded = true; });
    view.showJob(job_);
    ASSERT_TRUE(test::process_until([&] { return loaded; }));
    ASSERT_EQ(view.evaluationCount(), 1);
    EXPECT_TRUE(view.showsScatter());
    const QList<QPointF> points = view.scatterPoints();
    ASSERT_EQ(points.size(), 301);
    EXPECT_EQ(points.last(), QPointF(150000.0, 420000.0)) << "the miss is drawn where it is, not clipped";
    EXPECT_EQ(points.first(), QPointF(100000.0, 97000.0));
    EXPECT_NE(view.summary().indexOf("R² 0.9683, RMSE 15811, MAE 4100 over 5000 samples"), -1)
        << view.summary().toStdString();
    EXPECT_NE(view.summary().indexOf("the first 301 of the 5000 samples"), -1) << view.summary().toStdString();
    EXPECT_EQ(view.matrix()->rowCount(), 0);
    const QString folder = QStringLiteral(TRAINDECK_SCREENSHOT_DIR);
    QDir().mkpath(folder);
    ASSERT_TRUE(view.grab().save(QDir(folder).filePath("results-regression.png")));

    // A classification's matrix after it takes the page back.
    add_eval(2, "val", 100, 4, {{3, 1}, {0, 4}}, false);
    loaded = false;
    view.refresh();
    ASSERT_TRUE(test::process_until([&] { return loaded; }));
    EXPECT_FALSE(view.showsScatter());
    EXPECT_EQ(view.cell(0, 0), "3");
    view.selectEvaluation(1);
    EXPECT_TRUE(view.showsScatter());
    EXPECT_EQ(view.scatterPoints().size(), 301) << "shown again, not added twice";
}

TEST_F(Results, ARunWithoutNamesNumbersItsClassesAndARunWithoutMatricesSaysHowToGetOne) {
    add_eval(1, "val", 10, 1, {{3, 1}, {0, 4}}, false);
    ResultsView view(path_);
    bool loaded = false;
    QObject::connect(&view, &ResultsView::loaded, [&] { loaded = true; });
    view.showJob(job_);
    ASSERT_TRUE(test::process_until([&] { return loaded; }));
    EXPECT_EQ(view.classNames(), QStringList({"class 0", "class 1"}));
    EXPECT_EQ(view.score(0, 1), "0.750");

    const int64_t other = catalog_.add_job("script without evals", "local", "2", json::object());
    loaded = false;
    view.showJob(other);
    ASSERT_TRUE(test::process_until([&] { return loaded; }));
    EXPECT_EQ(view.evaluationCount(), 0);
    EXPECT_NE(view.summary().indexOf("No confusion matrix"), -1);
    EXPECT_EQ(view.matrix()->rowCount(), 0);
}

} // namespace traindeck
