#include "imagestrip.h"

#include "background.h"
#include "tfevents.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QLocale>
#include <QScrollBar>
#include <QThreadPool>
#include <QVBoxLayout>

#include <algorithm>

namespace traindeck {

namespace {

constexpr int kPreview = 180;   // the chosen image's box
constexpr int kBatch = 24;      // thumbnails read in one pool task
constexpr int kAheadOfView = 8; // thumbnails read past each edge of the view, so a short scroll finds them ready

QString describe(const QString& tag, const ImageRef& image) {
    const QLocale locale;
    return QObject::tr("%1 at step %2: %3×%4, %5 bytes encoded")
        .arg(tag, locale.toString(static_cast<qlonglong>(image.step)))
        .arg(image.width)
        .arg(image.height)
        .arg(locale.toString(static_cast<qlonglong>(image.bytes)));
}

} // namespace

ImageStrip::ImageStrip(QWidget* parent) : QWidget(parent) {
    setAccessibleName(tr("Image strip"));
    list_ = new QListWidget;
    list_->setViewMode(QListView::IconMode);
    list_->setFlow(QListView::LeftToRight);
    list_->setWrapping(false);
    list_->setMovement(QListView::Static);
    list_->setUniformItemSizes(true);
    list_->setIconSize({kThumbnail, kThumbnail});
    list_->setGridSize({kThumbnail + 16, kThumbnail + 28});
    list_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOn);
    list_->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    list_->setFixedHeight(kThumbnail + 28 + list_->horizontalScrollBar()->sizeHint().height() +
                          2 * list_->frameWidth());
    list_->setAccessibleName(tr("Images over the steps"));
    caption_ = new QLabel;
    caption_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    caption_->setWordWrap(true);
    preview_ = new QLabel;
    preview_->setFixedSize(kPreview, kPreview);
    preview_->setAlignment(Qt::AlignCenter);
    preview_->setFrameShape(QFrame::StyledPanel);
    preview_->setAccessibleName(tr("Chosen image"));
    preview_caption_ = new QLabel;
    preview_caption_->setWordWrap(true);
    preview_caption_->setMaximumWidth(kPreview);
    preview_caption_->setTextInteractionFlags(Qt::TextSelectableByMouse);

    auto* left = new QVBoxLayout;
    left->addWidget(list_);
    left->addWidget(caption_);
    left->addStretch(1);
    auto* right = new QVBoxLayout;
    right->addWidget(preview_);
    right->addWidget(preview_caption_);
    right->addStretch(1);
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addLayout(left, 1);
    layout->addLayout(right);
    // Room for the chosen image and two lines under it, however little the splitter gives.
    setMinimumHeight(kPreview + 2 * fontMetrics().lineSpacing() + 8);

    connect(list_->horizontalScrollBar(), &QScrollBar::valueChanged, this, &ImageStrip::loadVisible);
    connect(list_, &QListWidget::currentRowChanged, this, &ImageStrip::choose);
}

void ImageStrip::setImages(const QString& tag, std::vector<ImageRef> images) {
    ++generation_;
    tag_ = tag;
    images_ = std::move(images);
    requested_.clear();
    shown_.clear();
    problems_.clear();
    preview_image_ = QImage();
    preview_->clear();
    preview_caption_->clear();
    const QSignalBlocker blocker(list_);
    list_->clear();
    QPixmap blank(kThumbnail, kThumbnail);
    blank.fill(palette().color(QPalette::AlternateBase));
    const QIcon placeholder(blank);
    const QLocale locale;
    for (const ImageRef& image : images_) {
        auto* item =
            new QListWidgetItem(placeholder, tr("step %1").arg(locale.toString(static_cast<qlonglong>(image.step))));
        item->setToolTip(describe(tag_, image));
        item->setTextAlignment(Qt::AlignHCenter | Qt::AlignTop);
        list_->addItem(item);
    }
    caption_->setText(caption());
    setAccessibleDescription(caption());
    // The newest is where a run's story is: the strip opens at its end, with it chosen.
    if (!images_.empty()) {
        list_->scrollToItem(list_->item(list_->count() - 1));
        list_->setCurrentRow(list_->count() - 1);
        choose(list_->count() - 1);
    }
    loadVisible();
}

QString ImageStrip::caption() const {
    if (images_.empty())
        return tr("No images of %1").arg(tag_);
    const QLocale locale;
    QString text = tr("%n image(s) of %1, steps %2–%3; every one is in the strip: scroll it, or click one to see it "
                      "larger",
                      nullptr, static_cast<int>(images_.size()))
                       .arg(tag_, locale.toString(static_cast<qlonglong>(images_.front().step)),
                            locale.toString(static_cast<qlonglong>(images_.back().step)));
    if (!problems_.isEmpty())
        text +=
            "\n" + tr("%n could not be read:", nullptr, static_cast<int>(problems_.size())) + " " + problems_.first();
    return text;
}

QImage ImageStrip::load(const QString& tag, const ImageRef& image, QString* error) {
    const auto bytes = importers::read_tensorboard_image(image.file, static_cast<uint64_t>(image.record_offset),
                                                         tag.toStdString(), image.item, image.step);
    if (!bytes) {
        *error = QString::fromStdString(bytes.error());
        return {};
    }
    QImage decoded;
    if (!decoded.loadFromData(reinterpret_cast<const uchar*>(bytes->data()), static_cast<int>(bytes->size()))) {
        *error = tr("the image of %1 at step %2 in %3 is in a format this console cannot decode (%4 bytes)")
                     .arg(tag)
                     .arg(image.step)
                     .arg(QString::fromStdString(image.file))
                     .arg(bytes->size());
        return {};
    }
    return decoded;
}

QString ImageStrip::previewCaption() const { return preview_caption_->text(); }

void ImageStrip::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    loadVisible();
}

void ImageStrip::loadVisible() {
    if (images_.empty())
        return;
    // The thumbnails in view (and a few past each edge) not asked for yet, in batches.
    const int step = list_->gridSize().width();
    const int first = std::max(0, list_->horizontalScrollBar()->value() / std::max(1, step) - kAheadOfView);
    const int last = std::min(static_cast<int>(images_.size()) - 1,
                              first + list_->viewport()->width() / std::max(1, step) + 2 * kAheadOfView + 1);
    std::vector<std::pair<int, ImageRef>> wanted;
    for (int i = first; i <= last; ++i)
        if (!requested_.contains(i)) {
            requested_.insert(i);
            wanted.emplace_back(i, images_[static_cast<size_t>(i)]);
        }
    struct Thumb {
        int index;
        QImage image;
        QString error;
    };
    for (size_t at = 0; at < wanted.size(); at += kBatch) {
        std::vector<std::pair<int, ImageRef>> batch(
            wanted.begin() + static_cast<std::ptrdiff_t>(at),
            wanted.begin() + static_cast<std::ptrdiff_t>(std::min(wanted.size(), at + kBatch)));
        const int generation = generation_;
        const QString tag = tag_;
        run_in_background(
            this,
            [batch = std::move(batch), tag] {
                std::vector<Thumb> thumbs;
                for (const auto& [index, ref] : batch) {
                    Thumb thumb{index, {}, {}};
                    const QImage full = load(tag, ref, &thumb.error);
                    if (!full.isNull())
                        thumb.image = full.scaled(kThumbnail, kThumbnail, Qt::KeepAspectRatio,
                                                  full.width() > kThumbnail || full.height() > kThumbnail
                                                      ? Qt::SmoothTransformation
                                                      : Qt::FastTransformation);
                    thumbs.push_back(std::move(thumb));
                }
                return thumbs;
            },
            [this, generation](const std::vector<Thumb>& thumbs) {
                if (generation != generation_)
                    return; // another run or tag since
                for (const Thumb& thumb : thumbs) {
                    QListWidgetItem* item = list_->item(thumb.index);
                    if (!item)
                        continue;
                    if (thumb.image.isNull()) {
                        problems_ << thumb.error;
                        item->setToolTip(item->toolTip() + "\n" + thumb.error);
                        item->setText(tr("unreadable"));
                        continue;
                    }
                    item->setIcon(QPixmap::fromImage(thumb.image));
                    shown_.insert(thumb.index);
                }
                caption_->setText(caption());
                emit thumbnailsLoaded();
            },
            QThreadPool::globalInstance());
    }
}

void ImageStrip::choose(int index) {
    if (index < 0 || index >= static_cast<int>(images_.size()))
        return;
    if (list_->currentRow() != index) {
        const QSignalBlocker blocker(list_);
        list_->setCurrentRow(index);
    }
    const ImageRef image = images_[static_cast<size_t>(index)];
    const QString tag = tag_;
    const int generation = generation_;
    preview_caption_->setText(describe(tag, image));
    struct Loaded {
        QImage image;
        QString error;
    };
    run_in_background(
        this,
        [tag, image] {
            Loaded loaded;
            loaded.image = load(tag, image, &loaded.error);
            return loaded;
        },
        [this, generation, index, image, tag](const Loaded& loaded) {
            if (generation != generation_ || list_->currentRow() != index)
                return; // another image chosen since
            preview_image_ = loaded.image;
            if (loaded.image.isNull()) {
                preview_->setText(tr("unreadable"));
                preview_caption_->setText(describe(tag, image) + "\n" + loaded.error);
            } else {
                // Small images (MNIST's 28×28) grow to be seen, pixel for pixel; large ones shrink to fit.
                preview_->setPixmap(QPixmap::fromImage(loaded.image.scaled(
                    kPreview, kPreview, Qt::KeepAspectRatio,
                    loaded.image.width() < kPreview / 2 ? Qt::FastTransformation : Qt::SmoothTransformation)));
            }
            emit previewShown();
        },
        QThreadPool::globalInstance());
}

} // namespace traindeck
