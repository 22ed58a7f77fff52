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

// The class folders of dir as the trainer counts them (every folder not starting with "."), in byte order, with the
// images they hold and each one's first image (empty for a folder without one). No classes when no folder has an image.
struct ClassFolders {
    QStringList classes, first_images;
    int images = 0;
};
ClassFolders class_folders(const QDir& dir) {
    QStringList names = dir.entryList(QDir::Dirs | QDir::NoDotAndDotDot, QDir::NoSort);
    std::sort(names.begin(), names.end(), [](const QString& a, const QString& b) { return a.toUtf8() < b.toUtf8(); });
    ClassFolders found;
    for (const QString& name : names) {
        const QDir folder(dir.filePath(name));
        QString first;
        for (const QString& file : folder.entryList(QDir::Files, QDir::Name))
            if (is_image_name(file)) {
                if (first.isEmpty())
                    first = folder.filePath(file);
                ++found.images;
            }
        found.classes << name;
        found.first_images << first;
    }
    if (found.images == 0)
        return {};
    return found;
}

} // namespace

ImageFolderSurvey survey_image_folder(const QString& root) {
    ImageFolderSurvey survey;
    const QDir dir(root);
    if (!QFileInfo(root).isDir()) {
        survey.why_not = QStringLiteral("not a folder");
        return survey;
    }
    const QDir train(dir.filePath("train"));
    ClassFolders found = train.exists() ? class_folders(train) : ClassFolders{};
    if (!found.classes.isEmpty()) {
        survey.train = "train";
        for (const char* test : {"test", "val", "validation"})
            if (QDir(dir.filePath(test)).exists() && !class_folders(QDir(dir.filePath(test))).classes.isEmpty()) {
                survey.test = test;
                break;
            }
    } else {
        found = class_folders(dir);
    }
    if (found.classes.size() < 2) {
        survey.why_not = QStringLiteral("fewer than two folders of PNG/JPEG images");
        return survey;
    }
    survey.image_folder = true;
    survey.classes = found.classes;
    survey.images = found.images;
    // The first image in class order gives the size; colour when any class's first image has it (the trainer's own
    // rule for channels 0), from the file's header.
    bool sized = false;
    for (const QString& first : found.first_images) {
        if (first.isEmpty())
            continue;
        if (!sized) {
            const QSize size = QImageReader(first).size();
            survey.first_width = size.width();
            survey.first_height = size.height();
            sized = true;
        }
        if (has_colour(first)) {
            survey.colour = true;
            break;
        }
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
