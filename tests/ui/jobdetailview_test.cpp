// jobdetailview.h: both of a run's charts export from the job view as the other charts do: a figure at publication
// size (SVG and PDF read back with QSvgRenderer and pdftotext, a PNG of 160 × 100 mm at 300 dpi) and the series each
// chart draws to CSV with every point, from a real catalog file.
#include "catalog.h"
#include "chartview.h"
#include "jobdetailview.h"
#include "xaxis.h"
#include "requireall.h"
#include "unittest.h"

#include <gtest/gtest.h>

#include <QCategoryAxis>
#include <QChart>
#include <QFile>
#include <QImage>
#include <QCheckBox>
#include <QComboBox>
#include <QKeyEvent>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QRegularExpression>
#include <QProcess>
#include <QStandardPaths>
#include <QSvgRenderer>
#include <QTemporaryDir>
#include <QValueAxis>

#include <cmath>
#include <functional>
#include <map>
#include <optional>

namespace traindeck {
namespace {

constexpr int kSteps = 3000; // more points than the chart's buckets: the CSV must not be the buckets

QByteArray read_all(const QString& path) {
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

// Every CSV line but the header, counted per series (series,step,value).
std::map<QString, int> rows_per_series(const QString& path) {
    std::map<QString, int> rows;
    const QList<QByteArray> lines = read_all(path).split('\n');
    for (qsizetype i = 1; i < lines.size(); ++i)
        if (!lines[i].trimmed().isEmpty())
            ++rows[QString::fromUtf8(lines[i].left(lines[i].lastIndexOf(',', lines[i].lastIndexOf(',') - 1)))];
    return rows;
}

// The line series of `chart` named `name`; nullptr when there is none.
QLineSeries* line_named(QChart* chart, const QString& name) {
    for (QAbstractSeries* series : chart->series())
        if (series->name() == name)
            return qobject_cast<QLineSeries*>(series);
    return nullptr;
}

// Does `action` and waits until the view has drawn what it reads (the catalog is read on a pool thread).
bool drawn(JobDetailView& view, const std::function<void()>& action) {
    bool done = false;
    const QMetaObject::Connection connection =
        QObject::connect(&view, &JobDetailView::refreshed, [&done] { done = true; });
    action();
    const bool answered = test::process_until([&done] { return done; });
    QObject::disconnect(connection);
    test::settle();
    return answered;
}

class JobDetailExport : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_TRUE(dir_.isValid());
        Catalog catalog;
        ASSERT_EQ(catalog.open(path("catalog.db").toStdString()), "");
        job_ = catalog.add_job("cnn seed 3", "local", "1", nlohmann::json::object());
        std::vector<nlohmann::json> events;
        int64_t seq = 0;
        auto event = [&](const char* type, double time, nlohmann::json data) {
            events.push_back({{"seq", ++seq}, {"time", time}, {"type", type}, {"data", std::move(data)}});
        };
        event("state", 1000, {{"state", "running"}});
        for (int step = 1; step <= kSteps; ++step) {
            event("record", 1000 + step * 0.01,
                  {{"type", "metric"}, {"step", step}, {"loss", 0.3 + 2.0 * std::exp(-step / 400.0)}});
            if (step % 100 == 0)
                event("record", 1000 + step * 0.01,
                      {{"type", "eval"}, {"split", "val"}, {"step", step}, {"accuracy", 0.9 - 0.5 / step}});
        }
        for (int i = 1; i <= 30; ++i)
            event(
                "telemetry", 1000.0 + i,
                {{"cpu_percent", 40 + i},
                 {"spend", 0.001 * i},
                 {"gpus", {{{"index", 0}, {"utilization", 80}, {"memory_used_mb", 4000}, {"memory_total_mb", 8000}}}}});
        catalog.db().exec("BEGIN");
        catalog.ingest(job_, events);
        catalog.db().exec("COMMIT");
    }
    QString path(const QString& name) const { return dir_.filePath(name); }
    // The view's answer for `file` (the CSV comes from a pool thread).
    QString exported(JobDetailView& view, JobDetailView::Chart chart, const QString& file) {
        std::optional<std::pair<QString, QString>> answer;
        const QMetaObject::Connection connection =
            QObject::connect(&view, &JobDetailView::exported,
                             [&](const QString& to, const QString& error) { answer.emplace(to, error); });
        view.exportTo(chart, file);
        const bool answered = test::process_until([&] { return answer.has_value(); });
        QObject::disconnect(connection);
        if (!answered)
            return "no answer within 20 s";
        EXPECT_EQ(answer->first, file);
        return answer->second;
    }

    QTemporaryDir dir_;
    int64_t job_ = 0;
};

TEST_F(JobDetailExport, LossChartToSvgPdfPngAndEveryPointToCsv) {
    JobDetailView view(path("catalog.db"));
    view.resize(1200, 800);
    view.show();
    ASSERT_TRUE(drawn(view, [&] { view.showJob(job_, "cnn seed 3"); }));
    ASSERT_EQ(view.error(), QString());

    ASSERT_EQ(exported(view, JobDetailView::Chart::loss, path("loss.svg")), QString());
    QSvgRenderer renderer(path("loss.svg"));
    ASSERT_TRUE(renderer.isValid());
    const QByteArray svg = read_all(path("loss.svg"));
    for (const char* text : {"Loss and validation accuracy", "train loss", "val accuracy", "step"})
        EXPECT_TRUE(svg.contains(text)) << text;
    EXPECT_TRUE(svg.contains("width=\"160")) << "a 160 mm figure: " << svg.left(600).constData();
    EXPECT_TRUE(svg.contains("<path") || svg.contains("<polyline")) << "the curves as vectors";

    ASSERT_EQ(exported(view, JobDetailView::Chart::loss, path("loss.png")), QString());
    EXPECT_EQ(QImage(path("loss.png")).size(), QSize(1890, 1181)); // 160 × 100 mm at 300 dpi

    const QString pdftotext = QStandardPaths::findExecutable("pdftotext");
    if (pdftotext.isEmpty()) {
        TRAINDECK_SKIP("pdftotext is missing: install poppler-utils (installer/install-deps.sh --tests)");
    }
    ASSERT_EQ(exported(view, JobDetailView::Chart::loss, path("loss.pdf")), QString());
    QProcess text;
    text.start(pdftotext, {path("loss.pdf"), "-"});
    ASSERT_TRUE(text.waitForFinished(30000));
    ASSERT_EQ(text.exitCode(), 0) << text.readAllStandardError().constData();
    const QString content = QString::fromUtf8(text.readAllStandardOutput());
    for (const char* expected : {"Loss and validation accuracy", "train loss", "val accuracy", "accuracy"})
        EXPECT_TRUE(content.contains(expected)) << expected << " in " << content.toStdString();

    // Every point the catalog has, not the chart's buckets.
    ASSERT_EQ(exported(view, JobDetailView::Chart::loss, path("loss.csv")), QString());
    const std::map<QString, int> rows = rows_per_series(path("loss.csv"));
    EXPECT_EQ(rows, (std::map<QString, int>{{"loss", kSteps}, {"val/accuracy", kSteps / 100}}));
    const QList<QByteArray> lines = read_all(path("loss.csv")).split('\n');
    EXPECT_EQ(lines[0], "series,step,value\r");
    ASSERT_TRUE(lines[1].startsWith("loss,1,")) << lines[1].constData();
    EXPECT_EQ(lines[1].trimmed().split(',').at(2).toDouble(), 0.3 + 2.0 * std::exp(-1 / 400.0)); // exactly the double
}

TEST_F(JobDetailExport, SystemChartToSvgPdfAndCsv) {
    JobDetailView view(path("catalog.db"));
    view.resize(1200, 800);
    view.show();
    ASSERT_TRUE(drawn(view, [&] { view.showJob(job_, "cnn seed 3"); }));

    ASSERT_EQ(exported(view, JobDetailView::Chart::system, path("system.svg")), QString());
    QSvgRenderer renderer(path("system.svg"));
    ASSERT_TRUE(renderer.isValid());
    const QByteArray svg = read_all(path("system.svg"));
    // The time axis says m:ss from 0:00, the spend axis money.
    for (const char* text :
         {"CPU, GPU and spend", "CPU %", "spend ($)", "GPU0 util %", "time since start", ">0:00<", ">$0.00"})
        EXPECT_TRUE(svg.contains(text)) << text;

    ASSERT_EQ(exported(view, JobDetailView::Chart::system, path("system.csv")), QString());
    const std::map<QString, int> rows = rows_per_series(path("system.csv"));
    EXPECT_EQ(rows.at("telemetry/cpu_percent"), 30);
    EXPECT_EQ(rows.at("telemetry/spend"), 30);
    EXPECT_EQ(rows.at("telemetry/gpu0/utilization"), 30);
    EXPECT_EQ(rows.at("telemetry/gpu0/memory_percent"), 30);

    const QString pdftotext = QStandardPaths::findExecutable("pdftotext");
    if (pdftotext.isEmpty()) {
        TRAINDECK_SKIP("pdftotext is missing: install poppler-utils (installer/install-deps.sh --tests)");
    }
    ASSERT_EQ(exported(view, JobDetailView::Chart::system, path("system.pdf")), QString());
    QProcess text;
    text.start(pdftotext, {path("system.pdf"), "-"});
    ASSERT_TRUE(text.waitForFinished(30000));
    const QString content = QString::fromUtf8(text.readAllStandardOutput());
    EXPECT_TRUE(content.contains("CPU, GPU and spend")) << content.toStdString();
    EXPECT_TRUE(content.contains("CPU %")) << content.toStdString();
}

TEST_F(JobDetailExport, ProblemsAreSaid) {
    JobDetailView view(path("catalog.db"));
    // No run shown: nothing to read the points of.
    const QString none = exported(view, JobDetailView::Chart::loss, path("none.csv"));
    EXPECT_TRUE(none.contains("Select a run")) << none.toStdString();
    ASSERT_TRUE(drawn(view, [&] { view.showJob(job_, "cnn seed 3"); }));
    const QString suffix = exported(view, JobDetailView::Chart::loss, path("loss.bmp"));
    EXPECT_TRUE(suffix.contains(".png, .svg or .pdf")) << suffix.toStdString();
    const QString folder = exported(view, JobDetailView::Chart::loss, path("no/such/folder/loss.csv"));
    EXPECT_TRUE(folder.contains("does not exist")) << folder.toStdString();
}

// The accuracy axis is fitted to the accuracies (0.895 to 0.8998 here), not 0 to 1 where they would draw as a flat
// line along the top.
TEST_F(JobDetailExport, TheAccuracyAxisFitsTheAccuracies) {
    JobDetailView view(path("catalog.db"));
    view.resize(1200, 800);
    view.show();
    ASSERT_TRUE(drawn(view, [&] { view.showJob(job_, "cnn seed 3"); }));
    QChart* loss = view.chart(JobDetailView::Chart::loss);
    const auto right = loss->axes(Qt::Vertical);
    ASSERT_EQ(right.size(), 2);
    auto* accuracy = qobject_cast<QValueAxis*>(right.at(1));
    ASSERT_TRUE(accuracy);
    EXPECT_EQ(accuracy->titleText(), "accuracy");
    const double lowest = 0.9 - 0.5 / 100, highest = 0.9 - 0.5 / kSteps;
    EXPECT_LE(accuracy->min(), lowest);
    EXPECT_GE(accuracy->max(), highest);
    EXPECT_GT(accuracy->min(), 0.85) << "fitted, not from 0";
    EXPECT_LT(accuracy->max(), 0.95) << "fitted, not to 1";
}

// A user's zoom holds while the job goes on (each refresh used to fit the axes again), the zoomed axis's labels are
// those of what is visible (a label left past the range was drawn at the plot's edge over the last one: "0:00" over
// "0:03"), and a double-click shows everything again, the new points included.
TEST_F(JobDetailExport, AZoomHoldsWhileTheJobGoesOnWithTheVisibleRangesOwnTicks) {
    JobDetailView view(path("catalog.db"));
    view.resize(1200, 800);
    view.show();
    ASSERT_TRUE(drawn(view, [&] { view.showJob(job_, "cnn seed 3"); }));
    QChart* system = view.chart(JobDetailView::Chart::system);
    auto* time = qobject_cast<QCategoryAxis*>(system->axes(Qt::Horizontal).first());
    ASSERT_TRUE(time);
    EXPECT_DOUBLE_EQ(time->max(), 29); // telemetry at 1..30 s from its first sample
    const QRectF plot = system->plotArea();
    system->zoomIn(QRectF(plot.left(), plot.top(), plot.width() * 0.3, plot.height()));
    const double zoomed_min = time->min(), zoomed_max = time->max();
    EXPECT_LT(zoomed_max, 10);
    auto labels_in_view = [&] {
        for (const QString& label : time->categoriesLabels())
            if (time->endValue(label) < time->min() - 1e-9 || time->endValue(label) > time->max() + 1e-9)
                return label.toStdString() + " at " + std::to_string(time->endValue(label));
        return std::string();
    };
    EXPECT_EQ(labels_in_view(), "");
    EXPECT_GE(time->categoriesLabels().size(), 3) << "ticks for the visible seconds";

    {
        // The job goes on: 30 more seconds of telemetry.
        Catalog catalog;
        ASSERT_EQ(catalog.open(path("catalog.db").toStdString()), "");
        std::vector<nlohmann::json> more;
        int64_t seq = static_cast<int64_t>(catalog.last_seq(job_));
        for (int i = 31; i <= 60; ++i)
            more.push_back({{"seq", ++seq},
                            {"time", 1000.0 + i},
                            {"type", "telemetry"},
                            {"data", {{"cpu_percent", 50}, {"spend", 0.001 * i}}}});
        catalog.ingest(job_, more);
    }
    ASSERT_TRUE(drawn(view, [&] { view.refresh(); }));
    EXPECT_DOUBLE_EQ(time->min(), zoomed_min);
    EXPECT_DOUBLE_EQ(time->max(), zoomed_max);
    EXPECT_EQ(labels_in_view(), "");

    // 0 (or a double-click) shows everything, the seconds that came while zoomed included, with no new event.
    ChartView* system_view = nullptr;
    for (ChartView* each : view.findChildren<ChartView*>())
        if (each->chart() == system)
            system_view = each;
    ASSERT_TRUE(system_view);
    QKeyEvent zero(QEvent::KeyPress, Qt::Key_0, Qt::NoModifier);
    ASSERT_TRUE(drawn(view, [&] { QCoreApplication::sendEvent(system_view, &zero); }));
    EXPECT_DOUBLE_EQ(time->max(), 59);
    EXPECT_EQ(labels_in_view(), "");
    EXPECT_EQ(time->categoriesLabels().last(), "0:45");
}

// The loss is painted by the chart's CurveLayer (its series holds the legend entry, pen and axes, no points): pixels of
// its colour where its points map to, none once the series is hidden (as a click on its legend entry hides it), and
// back when it is shown again.
TEST_F(JobDetailExport, TheLossIsPaintedWhereItsPointsAreAndHidesWithItsSeries) {
    JobDetailView view(path("catalog.db"));
    view.resize(800, 800);
    view.show();
    ASSERT_TRUE(drawn(view, [&] { view.showJob(job_, "cnn seed 3"); }));
    ChartView* loss_view = nullptr;
    for (ChartView* each : view.findChildren<ChartView*>())
        if (each->chart() == view.chart(JobDetailView::Chart::loss))
            loss_view = each;
    ASSERT_TRUE(loss_view);
    QChart* chart = loss_view->chart();
    QLineSeries* loss = line_named(chart, "train loss");
    ASSERT_TRUE(loss);
    EXPECT_EQ(loss->count(), 0);
    const QVector<QPointF> points = view.lossPoints();
    ASSERT_GT(points.size(), 100);
    ASSERT_EQ(loss->color(), QColor(31, 119, 180));
    // Of every tenth point, those with a pixel of the curve's blue within two pixels of where it maps to (an
    // antialiased line of a pixel blends it with the white; the band's pale blue and the grid's grey are not it).
    const auto on_curve = [&](const QImage& image) {
        int found = 0;
        for (qsizetype i = 0; i < points.size(); i += 10) {
            const QPoint at = loss_view->mapFromScene(chart->mapToScene(chart->mapToPosition(points[i], loss)));
            bool near = false;
            for (int dx = -2; dx <= 2 && !near; ++dx)
                for (int dy = -2; dy <= 2 && !near; ++dy) {
                    const QColor pixel = image.pixelColor(at + QPoint(dx, dy));
                    near = pixel.blue() - pixel.red() > 40;
                }
            found += near ? 1 : 0;
        }
        return found;
    };
    const int sampled = static_cast<int>((points.size() + 9) / 10);
    EXPECT_GT(on_curve(loss_view->grab().toImage()), sampled * 9 / 10);
    loss->setVisible(false);
    EXPECT_EQ(on_curve(loss_view->grab().toImage()), 0);
    loss->setVisible(true);
    EXPECT_GT(on_curve(loss_view->grab().toImage()), sampled * 9 / 10);
}

// The crosshair over a run of 3000 steps drawn in fewer buckets: each point says the bucket's steps, how many points
// it holds and their exact min, max and last, read back from the catalog (the loss falls, so a bucket's max is its
// first step's loss and its min and last its last step's); the telemetry's points say their span of time.
TEST_F(JobDetailExport, TheCrosshairSaysWhatEachBucketHolds) {
    JobDetailView view(path("catalog.db"));
    view.resize(800, 800); // about 1,400 buckets (two a pixel column) for 3000 steps
    view.show();
    ASSERT_TRUE(drawn(view, [&] { view.showJob(job_, "cnn seed 3"); }));
    ChartView* loss_view = nullptr;
    ChartView* system_view = nullptr;
    for (ChartView* each : view.findChildren<ChartView*>()) {
        if (each->chart() == view.chart(JobDetailView::Chart::loss))
            loss_view = each;
        if (each->chart() == view.chart(JobDetailView::Chart::system))
            system_view = each;
    }
    ASSERT_TRUE(loss_view && system_view);
    QChart* chart = loss_view->chart();
    // The series holds the legend entry, pen and axes; its points are drawn by the chart's CurveLayer.
    QLineSeries* loss = line_named(chart, "train loss");
    ASSERT_TRUE(loss);
    QVector<QPointF> points = view.lossPoints();
    ASSERT_GT(points.size(), 100);
    ASSERT_LT(points.size(), kSteps) << "drawn in buckets";
    // The mouse on the pixel of the middle point; a pixel spans more steps than a bucket, so the point the crosshair
    // reads is the one nearest to where that pixel lies on the step axis.
    const QPoint mouse =
        loss_view->mapFromScene(chart->mapToScene(chart->mapToPosition(points.at(points.size() / 2), loss)));
    const double mouse_step = chart->mapToValue(chart->mapFromScene(loss_view->mapToScene(mouse)), loss).x();
    QPointF middle = points.at(0);
    for (const QPointF& point : points)
        if (std::abs(point.x() - mouse_step) < std::abs(middle.x() - mouse_step))
            middle = point;
    const QString text = loss_view->crosshairText(mouse);
    const QRegularExpression said("train loss: [0-9.]+  \\(last ([0-9.]+), min ([0-9.]+), max ([0-9.]+) of ([0-9]+) "
                                  "points, step ([0-9.]+(?: k)?)–([0-9.]+(?: k)?)\\)");
    const QRegularExpressionMatch match = said.match(text);
    ASSERT_TRUE(match.hasMatch()) << text.toStdString();
    // Steps as the step axis writes them: "1.501 k".
    const auto number = [&](int group) {
        QString text = match.captured(group);
        const double scale = text.endsWith(" k") ? 1000 : 1;
        return text.remove(" k").toDouble() * scale;
    };
    const double first = number(5), last = number(6);
    EXPECT_EQ(number(4), last - first + 1) << "every step of the range, once";
    EXPECT_EQ(last, middle.x()) << "the drawn point is the bucket's last step";
    const auto loss_at = [](double step) { return 0.3 + 2.0 * std::exp(-step / 400.0); };
    EXPECT_NEAR(number(1), loss_at(last), 1e-5);
    EXPECT_NEAR(number(2), loss_at(last), 1e-5);
    EXPECT_NEAR(number(3), loss_at(first), 1e-5);
    EXPECT_GT(number(3), number(2));

    // On the time since the start the same bucket says its span of time (its first step placed by the record times).
    QComboBox* x_axis = nullptr;
    for (QComboBox* box : view.findChildren<QComboBox*>())
        if (box->findData(static_cast<int>(XAxis::relative_time)) >= 0)
            x_axis = box;
    ASSERT_TRUE(x_axis);
    ASSERT_TRUE(
        drawn(view, [&] { x_axis->setCurrentIndex(x_axis->findData(static_cast<int>(XAxis::relative_time))); }));
    points = view.lossPoints();
    ASSERT_GT(points.size(), 100);
    const QString timed = loss_view->crosshairText(
        loss_view->mapFromScene(chart->mapToScene(chart->mapToPosition(points.at(points.size() / 2), loss))));
    EXPECT_TRUE(QRegularExpression("train loss: [0-9.]+  \\(last [0-9.]+, min [0-9.]+, max [0-9.]+ of [0-9]+ points, "
                                   "seconds since start [^–]+–[^)]+\\)")
                    .match(timed)
                    .hasMatch())
        << timed.toStdString();
    ASSERT_TRUE(drawn(view, [&] { x_axis->setCurrentIndex(x_axis->findData(static_cast<int>(XAxis::step))); }));

    // The telemetry: 30 samples a second apart; a point standing for several says their seconds since the start.
    QChart* system = system_view->chart();
    QLineSeries* cpu = line_named(system, "CPU %");
    ASSERT_TRUE(cpu);
    ASSERT_EQ(cpu->count(), 30) << "fewer samples than buckets: each drawn as it is";
    const QString cpu_text = system_view->crosshairText(
        system_view->mapFromScene(system->mapToScene(system->mapToPosition(cpu->at(10), cpu))));
    EXPECT_TRUE(cpu_text.contains(QStringLiteral("CPU %: 51\n")) || cpu_text.endsWith("CPU %: 51"))
        << cpu_text.toStdString();

    // The system chart's own log scale: the loss chart's axis stays linear.
    QCheckBox* log_system = nullptr;
    for (QCheckBox* box : view.findChildren<QCheckBox*>())
        if (box->text() == "Log system")
            log_system = box;
    ASSERT_TRUE(log_system);
    ASSERT_TRUE(drawn(view, [&] { log_system->setChecked(true); }));
    EXPECT_TRUE(qobject_cast<QLogValueAxis*>(system->axes(Qt::Vertical).value(0)));
    EXPECT_TRUE(qobject_cast<QLogValueAxis*>(system->axes(Qt::Vertical).value(1)));
    EXPECT_FALSE(qobject_cast<QLogValueAxis*>(chart->axes(Qt::Vertical).value(0)));
    const double cpu_max = qobject_cast<QLogValueAxis*>(system->axes(Qt::Vertical).value(0))->max();
    EXPECT_GE(cpu_max, 100);
}

} // namespace
} // namespace traindeck
