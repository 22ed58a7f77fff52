#pragma once
// A run's images of one tag (TensorBoard's, imported) as a strip over the steps: a thumbnail a logged image, in the
// order written, captioned with its step, and the one chosen shown larger beside it. Every image is in the strip
// (nothing sampled away); only those scrolled into view are read, from the source file the import found them in,
// on a pool thread. An image whose source changed or went since the import shows as a gap saying why.
#include "imagestore.h"

#include <QImage>
#include <QSet>
#include <QWidget>

#include <vector>

class QLabel;
class QListWidget;

namespace traindeck {

class ImageStrip : public QWidget {
    Q_OBJECT
public:
    static constexpr int kThumbnail = 96; // the thumbnails' box, in pixels

    explicit ImageStrip(QWidget* parent = nullptr);

    void setImages(const QString& tag, std::vector<ImageRef> images);
    QString caption() const; // what the widget says under the strip ("40 images of samples/input, steps 0–390")
    // The image of one ref, read from its source (a pool thread's work): a null image and *error when it cannot be.
    static QImage load(const QString& tag, const ImageRef& image, QString* error);

    // What the strip shows now, for tests and accessibility.
    int thumbnailsShown() const { return static_cast<int>(shown_.size()); }
    QStringList problems() const { return problems_; }
    QImage preview() const { return preview_image_; }
    QString previewCaption() const; // what is said under the chosen image (its size, or why it cannot show)
    void choose(int index);         // as a click on the index-th thumbnail

signals:
    void thumbnailsLoaded(); // a batch of thumbnails (or their problems) arrived
    void previewShown();

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void loadVisible();

    QListWidget* list_;
    QLabel* caption_;
    QLabel* preview_;
    QLabel* preview_caption_;
    QString tag_;
    std::vector<ImageRef> images_;
    int generation_ = 0;  // moves on with setImages: an answer for the images before is dropped
    QSet<int> requested_; // thumbnails asked for (shown, failed or on their way)
    QSet<int> shown_;
    QStringList problems_;
    QImage preview_image_;
};

} // namespace traindeck
