#include "chartexport.h"

#include <QAbstractItemModel>
#include <QChart>
#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QGraphicsLayout>
#include <QGraphicsScene>
#include <QImage>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>
#include <QSaveFile>
#include <QSvgGenerator>
#include <QWidget>

#include <charconv>
#include <cmath>
#include <functional>
#include <memory>

namespace traindeck {

namespace {

enum class Format { png, svg, pdf };

// A figure's layout happens at a screen's 96 px an inch, so that point-sized fonts keep their size relative to
// the figure; only the rendering is scaled to the file's resolution.
constexpr double kLayoutDpi = 96;
constexpr double kMillimetresPerInch = 25.4;

QString folder_problem(const QString& path) {
    const QString folder = QFileInfo(path).absolutePath();
    if (!QFileInfo(folder).isDir())
        return QCoreApplication::translate("chartexport",
                                           "Cannot write %1: the folder %2 does not exist. Create it or choose "
                                           "another folder.")
            .arg(QDir::toNativeSeparators(path), QDir::toNativeSeparators(folder));
    return {};
}

QString write_problem(const QString& path, const QString& reason) {
    return QCoreApplication::translate("chartexport",
                                       "Cannot write %1 (%2). Choose a folder you can write to, with room left.")
        .arg(QDir::toNativeSeparators(path), reason);
}

// Opens the save file, or says why not.
QString open_for_writing(QSaveFile& file) {
    if (QString problem = folder_problem(file.fileName()); !problem.isEmpty())
        return problem;
    if (!file.open(QIODevice::WriteOnly))
        return write_problem(file.fileName(), file.errorString());
    return {};
}

QString commit(QSaveFile& file) {
    if (!file.commit())
        return write_problem(file.fileName(), file.errorString());
    return {};
}

// Paints a figure into `target` (device coordinates of the painter's device).
using FigurePainter = std::function<void(QPainter& painter, const QRectF& target)>;

QString write_figure(const QString& path, QSizeF size_mm, int dpi, const FigurePainter& paint) {
    const QString suffix = QFileInfo(path).suffix().toLower();
    Format format;
    if (suffix == "png")
        format = Format::png;
    else if (suffix == "svg")
        format = Format::svg;
    else if (suffix == "pdf")
        format = Format::pdf;
    else
        return QCoreApplication::translate("chartexport",
                                           "Cannot export to %1: unknown format \"%2\". Use a file name ending in "
                                           ".png, .svg or .pdf.")
            .arg(QDir::toNativeSeparators(path), suffix.isEmpty() ? QStringLiteral("(no suffix)") : "." + suffix);
    if (!(size_mm.width() > 0 && size_mm.height() > 0 && size_mm.width() <= 2000 && size_mm.height() <= 2000))
        return QCoreApplication::translate("chartexport",
                                           "Cannot export a figure of %1 × %2 mm; give a size between 1 and 2000 mm.")
            .arg(size_mm.width())
            .arg(size_mm.height());
    if (dpi < 30 || dpi > 2400)
        return QCoreApplication::translate("chartexport", "Cannot export at %1 dpi; give 30 to 2400 dpi.").arg(dpi);
    const QSize pixels(qRound(size_mm.width() / kMillimetresPerInch * dpi),
                       qRound(size_mm.height() / kMillimetresPerInch * dpi));

    QSaveFile file(path);
    if (QString problem = open_for_writing(file); !problem.isEmpty())
        return problem;
    const QString title = QFileInfo(path).completeBaseName();
    QPainter painter;
    switch (format) {
    case Format::png: {
        QImage image(pixels, QImage::Format_ARGB32_Premultiplied);
        if (image.isNull())
            return write_problem(
                path, QStringLiteral("not enough memory for %1 × %2 px").arg(pixels.width()).arg(pixels.height()));
        const int dots_per_metre = qRound(dpi / (kMillimetresPerInch / 1000));
        image.setDotsPerMeterX(dots_per_metre);
        image.setDotsPerMeterY(dots_per_metre);
        image.fill(Qt::white);
        painter.begin(&image);
        painter.setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing | QPainter::SmoothPixmapTransform);
        paint(painter, QRectF(QPointF(), pixels));
        painter.end();
        if (!image.save(&file, "PNG"))
            return write_problem(path, file.errorString());
        break;
    }
    case Format::svg: {
        QSvgGenerator generator;
        generator.setOutputDevice(&file);
        generator.setSize(pixels);
        generator.setViewBox(QRect(QPoint(), pixels));
        generator.setResolution(dpi); // with the size, makes the file's width and height size_mm
        generator.setTitle(title);
        generator.setDescription(QStringLiteral("Exported by TrainDeck"));
        if (!painter.begin(&generator))
            return write_problem(path, QStringLiteral("the SVG writer did not start"));
        painter.setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
        paint(painter, QRectF(QPointF(), pixels));
        painter.end();
        break;
    }
    case Format::pdf: {
        QPdfWriter writer(&file);
        writer.setPageSize(QPageSize(size_mm, QPageSize::Millimeter, title, QPageSize::ExactMatch));
        writer.setPageMargins(QMarginsF(0, 0, 0, 0));
        writer.setResolution(dpi);
        writer.setTitle(title);
        writer.setCreator(QStringLiteral("TrainDeck"));
        if (!painter.begin(&writer))
            return write_problem(path, QStringLiteral("the PDF writer did not start"));
        painter.setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
        paint(painter, QRectF(0, 0, writer.width(), writer.height()));
        painter.end();
        break;
    }
    }
    if (file.error() != QFileDevice::NoError)
        return write_problem(path, file.errorString());
    return commit(file);
}

QSizeF layout_size(QSizeF size_mm) { return size_mm / kMillimetresPerInch * kLayoutDpi; }

// Shortest text that reads back as the same double; whole numbers as integers (step 100000, not 1e+05).
void append_number(QByteArray& out, double value) {
    char buffer[32];
    std::to_chars_result result;
    if (value == std::floor(value) && std::abs(value) < 9.007199254740992e15) // 2^53: every integer exact
        result = std::to_chars(buffer, buffer + sizeof buffer, static_cast<long long>(value));
    else
        result = std::to_chars(buffer, buffer + sizeof buffer, value);
    out.append(buffer, result.ptr - buffer);
}

void append_field(QByteArray& out, const QString& text) {
    const QByteArray utf8 = text.toUtf8();
    const bool quote = utf8.contains(',') || utf8.contains('"') || utf8.contains('\n') || utf8.contains('\r');
    if (!quote) {
        out += utf8;
        return;
    }
    out += '"';
    for (char c : utf8) {
        if (c == '"')
            out += '"';
        out += c;
    }
    out += '"';
}

QString display_text(const QVariant& value) {
    if (value.typeId() == QMetaType::Double || value.typeId() == QMetaType::Float) {
        if (std::isnan(value.toDouble()))
            return {}; // a missing value: an empty field, which CSV readers take as missing (not the text "nan")
        QByteArray number;
        append_number(number, value.toDouble());
        return QString::fromLatin1(number);
    }
    return value.toString();
}

// Large exports go to the file in pieces instead of one buffer of the whole text.
constexpr qsizetype kFlushBytes = 1 << 20;

bool flush(QSaveFile& file, QByteArray& buffer) {
    if (file.write(buffer) != buffer.size())
        return false;
    buffer.clear();
    return true;
}

} // namespace

QString exportChart(QChart* chart, const QString& path, QSizeF size_mm, int dpi) {
    if (!chart)
        return QCoreApplication::translate("chartexport", "Cannot export %1: there is no chart.").arg(path);
    // A chart shown in a QChartView lives in the view's scene; one that is not gets a scene for the rendering.
    std::unique_ptr<QGraphicsScene> own_scene;
    QGraphicsScene* scene = chart->scene();
    if (!scene) {
        own_scene = std::make_unique<QGraphicsScene>();
        own_scene->addItem(chart);
        scene = own_scene.get();
    }
    const QSizeF on_screen = chart->size();
    const QSizeF figure = layout_size(size_mm);
    auto relayout = [chart](QSizeF size) {
        chart->resize(size);
        if (chart->layout())
            chart->layout()->activate();
    };
    relayout(figure);
    QString error = write_figure(path, size_mm, dpi, [&](QPainter& painter, const QRectF& target) {
        scene->render(&painter, target, QRectF(chart->scenePos(), figure), Qt::IgnoreAspectRatio);
    });
    relayout(on_screen);
    if (own_scene)
        own_scene->removeItem(chart); // the chart stays the caller's
    return error;
}

QString exportWidget(QWidget* widget, const QString& path, QSizeF size_mm, int dpi) {
    if (!widget)
        return QCoreApplication::translate("chartexport", "Cannot export %1: there is no view.").arg(path);
    const QSize on_screen = widget->size();
    const QSize figure = layout_size(size_mm).toSize();
    widget->resize(figure);
    QString error = write_figure(path, size_mm, dpi, [&](QPainter& painter, const QRectF& target) {
        painter.save();
        painter.translate(target.topLeft());
        painter.scale(target.width() / figure.width(), target.height() / figure.height());
        widget->render(&painter, QPoint(), QRegion(), QWidget::DrawWindowBackground | QWidget::DrawChildren);
        painter.restore();
    });
    widget->resize(on_screen);
    return error;
}

QString writeModelCsv(const QAbstractItemModel& model, const QString& path, int value_role) {
    QSaveFile file(path);
    if (QString problem = open_for_writing(file); !problem.isEmpty())
        return problem;
    QByteArray out;
    const int columns = model.columnCount();
    for (int column = 0; column < columns; ++column) {
        if (column > 0)
            out += ',';
        append_field(out, model.headerData(column, Qt::Horizontal, Qt::DisplayRole).toString());
    }
    out += "\r\n";
    const int rows = model.rowCount();
    for (int row = 0; row < rows; ++row) {
        for (int column = 0; column < columns; ++column) {
            if (column > 0)
                out += ',';
            const QModelIndex cell = model.index(row, column);
            QVariant value = model.data(cell, value_role);
            if (!value.isValid() && value_role != Qt::DisplayRole)
                value = model.data(cell, Qt::DisplayRole);
            append_field(out, display_text(value));
        }
        out += "\r\n";
        if (out.size() > kFlushBytes && !flush(file, out))
            return write_problem(path, file.errorString());
    }
    if (!flush(file, out))
        return write_problem(path, file.errorString());
    return commit(file);
}

QString writeSeriesCsv(const QString& path, const QStringList& names, const QVector<QVector<QPointF>>& series) {
    if (names.size() != series.size())
        return QCoreApplication::translate("chartexport",
                                           "Cannot write %1: %2 series names for %3 series; give one name a series.")
            .arg(path)
            .arg(names.size())
            .arg(series.size());
    QSaveFile file(path);
    if (QString problem = open_for_writing(file); !problem.isEmpty())
        return problem;
    QByteArray out = "series,step,value\r\n";
    for (qsizetype s = 0; s < series.size(); ++s) {
        QByteArray name;
        append_field(name, names[s]);
        name += ',';
        for (const QPointF& point : series[s]) {
            out += name;
            append_number(out, point.x());
            out += ',';
            append_number(out, point.y());
            out += "\r\n";
            if (out.size() > kFlushBytes && !flush(file, out))
                return write_problem(path, file.errorString());
        }
    }
    if (!flush(file, out))
        return write_problem(path, file.errorString());
    return commit(file);
}

} // namespace traindeck
