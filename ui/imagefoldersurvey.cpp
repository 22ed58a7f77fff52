// survey_image_folder and image_folder_job_form (imagefoldersurvey.h).
#include "imagefoldersurvey.h"

#include <QDir>
#include <QFileInfo>
#include <QImage>
#include <QImageReader>

#include <algorithm>

namespace traindeck {

namespace {

bool is_image_name(const QString& name) {
    const QString suffix = QFileInfo(name).suffix().toLower();
    return suffix == "png" || suffix == "jpg" || suffix == "jpeg";
}

// Colour as the trainer decides it: by the file's colour type, not its pixels (an RGB file of grey pixels is RGB).
bool has_colour(const QString& path) {
    const QImage::Format format = QImageReader(path).imageFormat();
    return format != QImage::Format_Invalid && format != QImage::Format_Grayscale8 &&
           format != QImage::Format_Grayscale16 && format != QImage::Format_Mono && format != QImage::Format_MonoLSB;
}

// The class folders of dir as the trainer counts them (every folder not starting with "."), in byte order; the
// images in them counted. Empty when no folder holds an image.
QStringList class_folders(const QDir& dir, int* images, QString* first_image) {
    QStringList names = dir.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::NoSort);
    std::sort(names.begin(), names.end(), [](const QString& a, const QString& b) { return a.toUtf8() < b.toUtf8(); });
    QStringList classes;
    bool any_image = false;
    for (const QString& name : names) {
        const QDir folder(dir.filePath(name));
        int count = 0;
        for (const QString& file : folder.entryList(QDir::Files, QDir::Name))
            if (is_image_name(file)) {
                if (count == 0 && first_image && first_image->isEmpty())
                    *first_image = folder.filePath(file);
                ++count;
            }
        classes << name;
        any_image = any_image || count > 0;
        if (images)
            *images += count;
    }
    return any_image ? classes : QStringList();
}

} // namespace

ImageFolderSurvey survey_image_folder(const QString& root) {
    ImageFolderSurvey survey;
    const QDir dir(root);
    if (!QFileInfo(root).isDir()) {
        survey.why_not = QStringLiteral("not a folder");
        return survey;
    }
    QString first;
    int images = 0;
    QStringList classes;
    const QDir train(dir.filePath("train"));
    if (train.exists() && !class_folders(train, nullptr, nullptr).isEmpty()) {
        survey.train = "train";
        classes = class_folders(train, &images, &first);
        for (const char* test : {"test", "val", "validation"})
            if (QDir(dir.filePath(test)).exists() &&
                !class_folders(QDir(dir.filePath(test)), nullptr, nullptr).isEmpty()) {
                survey.test = test;
                break;
            }
    } else {
        classes = class_folders(dir, &images, &first);
    }
    if (classes.size() < 2) {
        survey.why_not = QStringLiteral("fewer than two folders of PNG/JPEG images");
        return survey;
    }
    survey.image_folder = true;
    survey.classes = classes;
    survey.images = images;
    QImageReader reader(first);
    const QSize size = reader.size();
    survey.first_width = size.width();
    survey.first_height = size.height();
    // Colour when any class's first image has it (the trainer's own rule for channels 0), from the file's header.
    const QDir classes_dir(survey.train.isEmpty() ? root : dir.filePath(survey.train));
    for (const QString& name : classes) {
        const QDir folder(classes_dir.filePath(name));
        for (const QString& file : folder.entryList(QDir::Files, QDir::Name))
            if (is_image_name(file)) {
                survey.colour = has_colour(folder.filePath(file));
                break;
            }
        if (survey.colour)
            break;
    }
    return survey;
}

JobForm image_folder_job_form(const ImageFolderSurvey& survey, const QString& name, const QString& version) {
    JobForm form;
    form.data = "images";
    form.dataset_version = version;
    form.train_folder = survey.train;
    form.test_folder = survey.test;
    const int side = std::max(survey.first_width, survey.first_height);
    form.image_size = side > 0 ? std::min(side, 64) : 64; // larger photos train at 64 px unless asked otherwise
    form.channels = survey.colour ? 3 : 1;
    form.model = form.image_size >= 16 ? QStringLiteral("resnet") : QStringLiteral("cnn");
    form.crop_padding = form.image_size >= 16 ? form.image_size / 8 : 0; // the usual crop+flip for photos
    form.hflip = true;
    form.early_stopping = true; // a new dataset's right epoch count is unknown: keep the best
    form.epochs = 20;
    form.name = QStringLiteral("%1 on %2").arg(form.model == "resnet" ? "ResNet" : "CNN", name);
    return form;
}

} // namespace traindeck
