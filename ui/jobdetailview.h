#pragma once
// A job's live curves: training loss (with its min/max band when several steps share a pixel), validation
// accuracy, and CPU / spend on a second chart; log/linear axis, smoothing, the log tail. Reads through
// CatalogReader (bucketed queries), never raw series, except to export every point. Either chart exports
// (Export…): to PNG, SVG or PDF at publication size, or its series to CSV with every point (chartexport.h).
#include "jobtablemodel.h"
#include "xaxis.h"

#include <QMap>
#include <QWidget>

#include <memory>

class QCheckBox;
class QComboBox;
class QLabel;
class QToolButton;
class QPlainTextEdit;
class QSlider;
class QSplitter;
namespace QtCharts {}
class QChart;
class QChartView;
class QLineSeries;
class QAreaSeries;
class QValueAxis;
class QLogValueAxis;

namespace traindeck {

struct RefreshData; // what one refresh read (jobdetailview.cpp)

class JobDetailView : public QWidget {
    Q_OBJECT
public:
    enum class Chart { loss, system }; // loss and validation accuracy; CPU, GPU and spend

    explicit JobDetailView(const QString& catalog_path, QWidget* parent = nullptr);
    void showJob(qint64 job, const QString& title);
    // The run's note (markdown), shown under the title; "" hides it.
    void setNote(const QString& markdown);
    // The smoothing (0..99) and log scale the view starts with (Settings); the user's changes win until the next.
    void setChartDefaults(int smoothing, bool log_scale);
    QString note() const;
    // The loss chart's x-axis: the step (default), samples seen, wall time (a date axis: x in Unix milliseconds),
    // seconds since the run started, or its spend.
    void setXAxis(XAxis axis);
    // The loss curve as drawn (x on the chosen axis), for tests.
    QVector<QPointF> lossPoints() const;
    // Other jobs whose loss curves are drawn over this one's, for comparison (job id, name).
    void setOverlays(const QList<QPair<qint64, QString>>& jobs);
    int overlayCount() const { return overlays_.size(); }
    // Names of the curves on the system chart (CPU %, spend, and per GPU utilisation and memory when present).
    QStringList systemCurveNames() const;
    int budgetPoints() const;
    // Why the catalog could not be read at the last refresh ("" when it could).
    QString error() const { return error_; }

    class HistogramHeatmap& heatmap() {
        return *heatmap_;
    }
    class ImageStrip& imageStrip() {
        return *image_strip_;
    }
    QComboBox* imageTagBox() const { return image_tag_; }
    QString mainCurve() const { return main_curve_; }
    QChart* chart(Chart which) const { return which == Chart::loss ? loss_chart_ : system_chart_; }
    // Writes a chart to `path` by its suffix: .png, .svg or .pdf as a 160 × 100 mm figure, drawn here; .csv every
    // point of every series the chart draws (the catalog's raw points, not the buckets: series,step,value, the
    // step of a telemetry series being its time in Unix milliseconds), read and written on a pool thread.
    // exported(path, error) follows, "" or what went wrong.
    void exportTo(Chart which, const QString& path);

signals:
    void exported(const QString& path, const QString& error);
    // A refresh was drawn (the catalog is read on a pool thread: refresh() returns before).
    void refreshed();

public slots:
    void refresh();
    // The console's currency changed (model/money.h): the spend curve's name and axis say the new one.
    void currencyChanged();

private:
    void rebuildAxes();
    void shareRoom(); // the splitter's room among what shows, when the histograms or the images come or go
    void exportWithDialog(Chart which);
    void readNow();                     // a refresh's read, on a pool thread
    void draw(const RefreshData& data); // a refresh's answer, on the GUI thread

    QString catalog_path_;
    std::shared_ptr<CatalogReader> background_reader_; // used by one refresh's read at a time, on a pool thread
    QString error_;
    bool reading_ = false, read_again_ = false;
    class QTimer* read_soon_; // the refreshes of one event-loop turn, one read (readNow)
    qint64 job_ = 0;
    QLabel* title_;
    QLabel* coverage_;
    QLabel* note_;
    QChartView* loss_view_;
    QChartView* system_view_;
    QChart* loss_chart_;
    class CurveLayer* curves_ = nullptr; // draws the loss, its band and the overlays (curvelayer.h)
    QChart* system_chart_;
    QLineSeries* loss_;
    QLineSeries* loss_min_;
    QLineSeries* loss_max_;
    QAreaSeries* loss_band_;
    QLineSeries* val_accuracy_;
    QList<QPair<qint64, QLineSeries*>> overlays_;
    QLineSeries* cpu_;
    QLineSeries* spend_;
    QLineSeries* budget_;
    QMap<QString, QLineSeries*> gpu_series_; // catalog series name -> curve
    QCheckBox* log_axis_;
    QCheckBox* system_log_;       // the CPU, GPU and spend chart's own log scale
    QString spend_currency_;      // what the shown job's backend charges in (model/money.h); "" = not known yet
    QComboBox* x_axis_ = nullptr; // step, samples, wall time, time since start, spend (xaxis.h)
    QSlider* smoothing_;
    QToolButton* export_button_;
    QLabel* export_status_;
    QPlainTextEdit* log_;
    QSplitter* splitter_;     // the charts, the histograms, the images, the system chart and the log, one above another
    QWidget* histograms_box_; // shown for runs that have histograms
    QComboBox* histogram_name_;
    class HistogramHeatmap* heatmap_;
    QString histograms_shown_; // "job/name/count" last read into the heatmap
    QWidget* images_box_;      // shown for runs that have images
    QComboBox* image_tag_;
    class ImageStrip* image_strip_;
    QString images_shown_;        // "job/tag/count" last given to the strip
    QString main_curve_ = "loss"; // the curve drawn as "train loss": loss, else the run's own first curve
};

} // namespace traindeck
