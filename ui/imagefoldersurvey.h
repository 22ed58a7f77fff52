#pragma once
// What a dropped folder is, looked at once off the GUI thread: a folder of images with one folder per class (the
// layout the built-in trainer's image_folder reads), either directly or as train/ and test/ folders each holding the
// classes; and the New job form that trains on it with sensible defaults (size from the first image, capped; colour
// when any class's first image has colour; a preset that fits the size). Qt Core and QImageReader only.
#include "jobform.h"

#include <QString>
#include <QStringList>

namespace traindeck {

struct ImageFolderSurvey {
    bool image_folder = false; // false: something else (runs to import, for instance)
    QString why_not;           // when not: what was missing, for the log
    QString train, test;       // relative to the folder: "" (the folder itself) or "train"; test: "test" or ""
    QStringList classes;       // the training classes in byte order, as the trainer orders them
    int images = 0;            // in the training classes
    int first_width = 0, first_height = 0;
    bool colour = false;
};

// Reads folder names and image headers only (the first image's size; each class's first image's colour type).
ImageFolderSurvey survey_image_folder(const QString& root);

// The form for training on that folder as dataset `version` (registered from root): images from the version's
// folder, the size and channels from the images (the longer side, capped at 64 px), the ResNet preset from 16 px
// up (the CNN below), crop+flip augmentation and early stopping.
JobForm image_folder_job_form(const ImageFolderSurvey& survey, const QString& name, const QString& version);

} // namespace traindeck
