#pragma once
// Charts, widgets, tables and series out of the console at publication size: a chart or a widget (the parallel
// coordinates) to PNG, SVG or PDF by the path's suffix, a table model or series to CSV with every row and point
// (nothing sampled, no cap). Every file is written whole or not at all (QSaveFile: temp + rename); each function
// returns "" or an error that says what was wrong and what to do.
#include <QPointF>
#include <QSizeF>
#include <QString>
#include <QStringList>
#include <QVector>

class QAbstractItemModel;
class QChart;
class QWidget;

namespace traindeck {

// The chart is laid out as a figure of size_mm (fonts keep their point size, so a 160 mm figure reads like one in
// a paper) and rendered into the file: vector for .svg and .pdf, dpi pixels per inch for .png (160 mm at 300 dpi is
// 1890 px wide). The chart's on-screen size is restored afterwards.
QString exportChart(QChart* chart, const QString& path, QSizeF size_mm = {160, 100}, int dpi = 300);

// Likewise for a widget, through QWidget::render (the widget is resized to the figure while it renders).
QString exportWidget(QWidget* widget, const QString& path, QSizeF size_mm = {160, 100}, int dpi = 300);

// Every row and column as the model shows them (through a proxy: as filtered and sorted), the horizontal headers
// first; RFC 4180 (fields with a comma, quote or line break quoted, quotes doubled, CRLF line ends). Each cell is
// its data for value_role (the display text where the model has none for that role): the runs table passes its
// JobTableModel::SortRole, so that the file holds the raw values, not "91.25 %" or "3:20". Doubles are written at
// full precision, a NaN as an empty field.
QString writeModelCsv(const QAbstractItemModel& model, const QString& path, int value_role = Qt::DisplayRole);

// Long format, one line a point: series,step,value (header first), every point of every series.
QString writeSeriesCsv(const QString& path, const QStringList& names, const QVector<QVector<QPointF>>& series);

} // namespace traindeck
