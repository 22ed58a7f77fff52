// chartexport.h: charts and widgets to PNG, SVG and PDF at publication size, read back (QSvgRenderer, pdftotext,
// QImage); tables and series to CSV with every row and point; a path that cannot be written is an error message.
#include "catalog.h"
#include "chartexport.h"
#include "jobtablemodel.h"
#include "parallelcoordinates.h"
#include "requireall.h"
#include "sampleruns.h"

#include <gtest/gtest.h>

#include <QChart>
#include <QChartView>
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QLineSeries>
#include <QProcess>
#include <QRegularExpression>
#include <QSortFilterProxyModel>
#include <QStandardItemModel>
#include <QStandardPaths>
#include <QSvgRenderer>
#include <QTemporaryDir>
#include <QValueAxis>

#include <cmath>
#include <memory>

namespace traindeck {
namespace {

QByteArray read_all(const QString& path) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return {};
    return file.readAll();
}

// A chart as the console draws one: a title, two named curves, titled axes.
std::unique_ptr<QChart> sample_chart() {
    auto chart = std::make_unique<QChart>();
    chart->setTitle("Validation accuracy by step");
    const char* names[] = {"cnn seed 1", "mlp seed 2"};
    auto* x = new QValueAxis;
    x->setTitleText("training step");
    x->setRange(0, 1000);
    auto* y = new QValueAxis;
    y->setTitleText("accuracy");
    y->setRange(0, 1);
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    for (int s = 0; s < 2; ++s) {
        auto* series = new QLineSeries;
        series->setName(names[s]);
        for (int step = 0; step <= 1000; step += 50)
            series->append(step, 0.9 - 0.8 * std::exp(-step / (150.0 + 100 * s)));
        chart->addSeries(series);
        series->attachAxis(x);
        series->attachAxis(y);
    }
    return chart;
}

class ChartExport : public ::testing::Test {
protected:
    void SetUp() override { ASSERT_TRUE(dir_.isValid()); }
    QString path(const QString& name) const { return dir_.filePath(name); }
    QTemporaryDir dir_;
};

TEST_F(ChartExport, SvgParsesAndNamesTheSeries) {
    auto chart = sample_chart();
    const QString file = path("chart.svg");
    ASSERT_EQ(exportChart(chart.get(), file), QString());
    QSvgRenderer renderer(file);
    ASSERT_TRUE(renderer.isValid());
    EXPECT_FALSE(renderer.viewBoxF().isEmpty());
    const QByteArray svg = read_all(file);
    EXPECT_TRUE(svg.contains("cnn seed 1"));
    EXPECT_TRUE(svg.contains("mlp seed 2"));
    EXPECT_TRUE(svg.contains("Validation accuracy by step"));
    // Publication size: 160 mm wide (1890 px at 300 dpi, as the generator writes it).
    EXPECT_TRUE(svg.contains("width=\"160")) << svg.left(600).constData();
    EXPECT_EQ(chart->scene(), nullptr) << "the chart was lent a scene for the rendering only";
}

TEST_F(ChartExport, PdfReadsBackWithTitleAxesAndSize) {
    const QString pdftotext = QStandardPaths::findExecutable("pdftotext");
    if (pdftotext.isEmpty()) {
        TRAINDECK_SKIP("pdftotext is missing: install poppler-utils (installer/install-deps.sh --tests)");
    }
    auto chart = sample_chart();
    const QString file = path("chart.pdf");
    ASSERT_EQ(exportChart(chart.get(), file), QString());
    QProcess text;
    text.start(pdftotext, {file, "-"});
    ASSERT_TRUE(text.waitForFinished(30000));
    ASSERT_EQ(text.exitCode(), 0) << text.readAllStandardError().constData();
    const QString content = QString::fromUtf8(text.readAllStandardOutput());
    EXPECT_TRUE(content.contains("Validation accuracy by step")) << content.toStdString();
    EXPECT_TRUE(content.contains("training step")) << content.toStdString();
    EXPECT_TRUE(content.contains("accuracy")) << content.toStdString();
    EXPECT_TRUE(content.contains("cnn seed 1")) << content.toStdString();

    const QString pdfinfo = QStandardPaths::findExecutable("pdfinfo");
    if (!pdfinfo.isEmpty()) {
        QProcess info;
        info.start(pdfinfo, {file});
        ASSERT_TRUE(info.waitForFinished(30000));
        const QString page = QString::fromUtf8(info.readAllStandardOutput());
        // 160 × 100 mm = 453.5 × 283.5 pt.
        const QRegularExpression size("Page size:\\s+([0-9.]+) x ([0-9.]+) pts");
        const auto match = size.match(page);
        ASSERT_TRUE(match.hasMatch()) << page.toStdString();
        EXPECT_NEAR(match.captured(1).toDouble(), 160 / 25.4 * 72, 1.0);
        EXPECT_NEAR(match.captured(2).toDouble(), 100 / 25.4 * 72, 1.0);
    }
}

TEST_F(ChartExport, PngHasThePublicationPixelSize) {
    auto chart = sample_chart();
    const QString file = path("chart.png");
    ASSERT_EQ(exportChart(chart.get(), file, {160, 100}, 300), QString());
    const QImage image(file);
    ASSERT_FALSE(image.isNull());
    EXPECT_EQ(image.size(), QSize(1890, 1181)); // 160 mm and 100 mm at 300 dpi
    EXPECT_NEAR(image.dotsPerMeterX(), 300 / 0.0254, 1);
    // Something was drawn: the curves and text, not a white page.
    int inked = 0;
    for (int y = 0; y < image.height(); y += 7)
        for (int x = 0; x < image.width(); x += 7)
            inked += qGray(image.pixel(x, y)) < 160;
    EXPECT_GT(inked, 200);

    ASSERT_EQ(exportChart(chart.get(), path("small.png"), {80, 60}, 150), QString());
    EXPECT_EQ(QImage(path("small.png")).size(), QSize(472, 354));
}

TEST_F(ChartExport, ChartInAViewKeepsItsSize) {
    QChart* chart = sample_chart().release();
    QChartView view(chart); // owns the chart
    view.resize(700, 420);
    view.show();
    QCoreApplication::processEvents();
    const QSizeF before = chart->size();
    ASSERT_EQ(exportChart(chart, path("view.svg")), QString());
    ASSERT_EQ(exportChart(chart, path("view.png")), QString());
    EXPECT_EQ(chart->size(), before);
    EXPECT_EQ(chart->scene(), view.scene());
    EXPECT_EQ(QImage(path("view.png")).size(), QSize(1890, 1181));
}

TEST_F(ChartExport, WidgetToSvgPdfAndPng) {
    ParallelCoordinates view;
    view.setRuns(test::sweep_runs());
    view.setAxes({"model", "optimizer.lr", "dropout"}, "best.val/accuracy");
    view.resize(500, 300);
    ASSERT_EQ(exportWidget(&view, path("parallel.svg")), QString());
    QSvgRenderer renderer(path("parallel.svg"));
    EXPECT_TRUE(renderer.isValid());
    const QByteArray svg = read_all(path("parallel.svg"));
    EXPECT_TRUE(svg.contains("dropout"));
    EXPECT_TRUE(svg.contains("<path") || svg.contains("<polyline")) << "lines as vectors, not one picture";
    ASSERT_EQ(exportWidget(&view, path("parallel.png"), {120, 80}, 300), QString());
    EXPECT_EQ(QImage(path("parallel.png")).size(), QSize(1417, 945));
    ASSERT_EQ(exportWidget(&view, path("parallel.pdf")), QString());
    EXPECT_TRUE(read_all(path("parallel.pdf")).startsWith("%PDF"));
    EXPECT_EQ(view.size(), QSize(500, 300));
}

TEST_F(ChartExport, UnknownSuffixSaysWhatToUse) {
    auto chart = sample_chart();
    const QString error = exportChart(chart.get(), path("chart.bmp"));
    EXPECT_TRUE(error.contains(".png, .svg or .pdf")) << error.toStdString();
    EXPECT_FALSE(QFile::exists(path("chart.bmp")));
    EXPECT_FALSE(exportChart(chart.get(), path("chart")).isEmpty());
}

TEST_F(ChartExport, UnwritablePathIsAnErrorNotACrash) {
    // A folder that is a plain file: no one can write under it (root included, unlike a read-only folder).
    QFile plain(path("plain.txt"));
    ASSERT_TRUE(plain.open(QIODevice::WriteOnly));
    plain.write("x");
    plain.close();
    auto chart = sample_chart();
    for (const char* name : {"plain.txt/chart.png", "plain.txt/chart.svg", "plain.txt/chart.pdf"}) {
        const QString error = exportChart(chart.get(), path(name));
        EXPECT_FALSE(error.isEmpty()) << name;
        EXPECT_TRUE(error.contains("folder")) << error.toStdString();
    }
    const QString missing = exportChart(chart.get(), path("no/such/folder/chart.png"));
    EXPECT_TRUE(missing.contains("does not exist")) << missing.toStdString();
    QStandardItemModel model(1, 1);
    EXPECT_FALSE(writeModelCsv(model, path("plain.txt/table.csv")).isEmpty());
    EXPECT_FALSE(writeSeriesCsv(path("plain.txt/series.csv"), {"loss"}, {{QPointF(0, 1)}}).isEmpty());
    EXPECT_FALSE(writeSeriesCsv(path("mismatch.csv"), {"a", "b"}, {{QPointF(0, 1)}}).isEmpty());
    EXPECT_FALSE(exportChart(nullptr, path("none.png")).isEmpty());
    EXPECT_FALSE(exportWidget(nullptr, path("none.png")).isEmpty());
}

TEST_F(ChartExport, SeriesCsvHasEveryPoint) {
    QVector<QPointF> loss;
    loss.reserve(100000);
    for (int step = 0; step < 100000; ++step)
        loss.append(QPointF(step, 2.3 * std::exp(-step / 20000.0) + 0.01 * std::sin(step)));
    const QString file = path("loss.csv");
    ASSERT_EQ(writeSeriesCsv(file, {"loss"}, {loss}), QString());
    const QList<QByteArray> lines = read_all(file).split('\n');
    // 100,000 points and the header; the file ends with a line end, so split gives one empty piece after it.
    ASSERT_EQ(lines.size(), 100002);
    EXPECT_TRUE(lines.back().isEmpty());
    EXPECT_EQ(lines[0], "series,step,value\r");
    auto value_of = [](const QByteArray& line) { return line.trimmed().split(',').at(2).toDouble(); };
    EXPECT_TRUE(lines[1].startsWith("loss,0,"));
    EXPECT_EQ(value_of(lines[1]), loss.front().y()); // shortest round-trip text: exactly the double
    EXPECT_TRUE(lines[100000].startsWith("loss,99999,")) << lines[100000].constData();
    EXPECT_EQ(value_of(lines[100000]), loss.back().y());
    EXPECT_EQ(QDir(dir_.path()).entryList(QDir::Files), QStringList{"loss.csv"}) << "no temporary file left";

    // Long format for several series; names with commas are quoted.
    ASSERT_EQ(writeSeriesCsv(path("two.csv"), {"val/accuracy", "loss, smoothed"},
                             {{QPointF(10, 0.5), QPointF(20, 0.75)}, {QPointF(1.5, 1e-7)}}),
              QString());
    EXPECT_EQ(read_all(path("two.csv")), QByteArray("series,step,value\r\n"
                                                    "val/accuracy,10,0.5\r\n"
                                                    "val/accuracy,20,0.75\r\n"
                                                    "\"loss, smoothed\",1.5,1e-07\r\n"));
}

TEST_F(ChartExport, ModelCsvQuotesAndFollowsTheProxy) {
    QStandardItemModel model(0, 3);
    model.setHorizontalHeaderLabels({"name", "note, short", "best"});
    auto add = [&](const QString& name, const QString& note, double best) {
        auto* value = new QStandardItem;
        value->setData(best, Qt::DisplayRole);
        model.appendRow({new QStandardItem(name), new QStandardItem(note), value});
    };
    add("cnn-a", "said \"wow\"", 0.9125);
    add("mlp-b", "two\nlines", 0.875);
    add("cnn-c", "a, b", 0.1 + 0.2);
    ASSERT_EQ(writeModelCsv(model, path("table.csv")), QString());
    EXPECT_EQ(read_all(path("table.csv")), QByteArray("name,\"note, short\",best\r\n"
                                                      "cnn-a,\"said \"\"wow\"\"\",0.9125\r\n"
                                                      "mlp-b,\"two\nlines\",0.875\r\n"
                                                      "cnn-c,\"a, b\",0.30000000000000004\r\n"));
    // As the table shows it: filtered to the cnn runs, sorted by best, descending.
    QSortFilterProxyModel proxy;
    proxy.setSourceModel(&model);
    proxy.setFilterRegularExpression("^cnn");
    proxy.setFilterKeyColumn(0);
    proxy.sort(2, Qt::DescendingOrder);
    ASSERT_EQ(writeModelCsv(proxy, path("filtered.csv")), QString());
    EXPECT_EQ(read_all(path("filtered.csv")), QByteArray("name,\"note, short\",best\r\n"
                                                         "cnn-a,\"said \"\"wow\"\"\",0.9125\r\n"
                                                         "cnn-c,\"a, b\",0.30000000000000004\r\n"));
}

TEST_F(ChartExport, RunsTableCsvHasTheRawValuesNotTheirDisplayText) {
    const QString catalog_path = path("catalog.db");
    {
        Catalog catalog;
        ASSERT_EQ(catalog.open(catalog_path.toStdString()), "");
        const int64_t job = catalog.add_job("cnn, seed 1", "local", "1", nlohmann::json::object());
        auto event = [](int64_t seq, const char* type, double time, nlohmann::json data) {
            return nlohmann::json{{"seq", seq}, {"time", time}, {"type", type}, {"data", std::move(data)}};
        };
        catalog.ingest(
            job,
            {event(1, "state", 1000.0, {{"state", "running"}}),
             event(2, "record", 1000.0, {{"type", "config"}, {"config", {{"optimizer", {{"lr", 0.000123456789}}}}}}),
             event(3, "record", 1100.0, {{"type", "metric"}, {"step", 7}, {"loss", 0.123456789012}, {"progress", 0.5}}),
             event(4, "record", 1100.0, {{"type", "eval"}, {"split", "val"}, {"step", 7}, {"accuracy", 0.912345678}}),
             event(5, "telemetry", 1150.0, {{"spend", 0.0312345678}}),
             event(6, "state", 1200.25, {{"state", "succeeded"}})});
        catalog.add_job("queued", "local", "2", nlohmann::json::object()); // no loss, no accuracy: empty fields
    }
    JobTableModel model(catalog_path);
    model.refresh();
    model.setExtraColumns({"optimizer.lr", "best.loss"});
    ASSERT_EQ(model.rowCount(), 2);
    // As shown: 5 significant digits, a percentage, money to 4 places, minutes and seconds.
    const int finished = model.rowOf(1);
    ASSERT_EQ(model.data(model.index(finished, JobTableModel::Accuracy), Qt::DisplayRole).toString(), "91.23 %");
    ASSERT_EQ(model.data(model.index(finished, JobTableModel::Spend), Qt::DisplayRole).toString(), "$0.0312");
    ASSERT_EQ(writeModelCsv(model, path("runs.csv"), JobTableModel::SortRole), QString());
    const QList<QByteArray> lines = read_all(path("runs.csv")).split('\n');
    ASSERT_EQ(lines.size(), 4); // the header, two runs, and the piece after the last line end
    EXPECT_EQ(lines[0], "Job,State,Backend,Progress,Loss,Val acc.,Elapsed,Spend,ETA,optimizer.lr,best.loss\r");
    // Newest first, as the table shows them; the queued run has no loss, accuracy, ETA or summary.
    EXPECT_EQ(lines[1], "queued,queued,local,0,,,0,0,,,\r");
    EXPECT_EQ(lines[2], "\"cnn, seed 1\",succeeded,local,0.5,0.123456789012,0.912345678,200.25,0.0312345678,,"
                        "0.000123456789,0.123456789012\r");
}

} // namespace
} // namespace traindeck
