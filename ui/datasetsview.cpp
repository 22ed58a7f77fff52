// DatasetsView (datasetsview.h).
#include "datasetsview.h"

#include "background.h"
#include "datasetreader.h"
#include "inspect.h"
#include "manifest.h"
#include "theme.h"

#include <QAction>
#include <QComboBox>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QDir>
#include <QFile>
#include <QEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QIcon>
#include <QFontMetrics>
#include <QImage>
#include <QLabel>
#include <QMimeData>
#include <QPainter>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSplitter>
#include <QStackedWidget>
#include <QTableView>
#include <QTableWidget>
#include <QVBoxLayout>

namespace traindeck {

namespace {

const char* kFashionMnist = "/usr/share/datasets/fashion-mnist";
// Fashion-MNIST's class names (Zalando's README) and the first labels of its training and test files, by which a
// copy under any name or folder is known.
const char* const kFashionClasses[] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                       "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
const std::vector<int32_t> kFashionTrainFirst = {9, 0, 0, 3, 0, 2, 7, 2, 5, 5, 0, 9, 5, 5, 7, 9};
const std::vector<int32_t> kFashionTestFirst = {9, 2, 1, 1, 6, 1, 4, 6, 5, 7, 4, 5, 7, 3, 4, 1};

// The class names of an IDX set: a classes.txt (or class_names.txt, labels.txt) beside its files, one name a line
// in label order; else Fashion-MNIST's when the set is it (its first labels, or "fashion" in the dataset's name).
// None: the labels show as numbers.
QStringList idx_class_names(const QString& root, const QString& name, const dataset::IdxSet& set) {
    const QFileInfo info(root);
    const QDir dir(info.isDir() ? root : info.path());
    for (const char* file : {"classes.txt", "class_names.txt", "labels.txt"}) {
        QFile names(dir.filePath(file));
        if (!names.open(QIODevice::ReadOnly | QIODevice::Text))
            continue;
        QStringList lines;
        for (const QByteArray& line : names.readAll().split('\n'))
            if (!line.trimmed().isEmpty())
                lines << QString::fromUtf8(line.trimmed());
        if (!lines.isEmpty())
            return lines;
    }
    const auto starts_with = [&](const std::vector<int32_t>& first) {
        return set.sample_labels.size() >= first.size() &&
               std::equal(first.begin(), first.end(), set.sample_labels.begin());
    };
    if (set.width == 28 && set.height == 28 &&
        (name.contains("fashion", Qt::CaseInsensitive) || starts_with(kFashionTrainFirst) ||
         starts_with(kFashionTestFirst))) {
        QStringList names;
        for (const char* each : kFashionClasses)
            names << each;
        return names;
    }
    return {};
}

// A grid of the first IDX images, each with its label (and class name, when known) under it.
// Drawn on the palette's base in its text colour (the dark theme's too).
QImage idx_grid(const dataset::IdxSet& set, const QStringList& names, const QColor& paper, const QColor& ink) {
    const int count = static_cast<int>(set.pixels.size() / std::max(1, set.height * set.width));
    const int columns = 8, scale = 3, cell_w = set.width * scale + 8, cell_h = set.height * scale + 22;
    const int rows = (count + columns - 1) / columns;
    QImage grid(columns * cell_w, std::max(1, rows) * cell_h, QImage::Format_RGB32);
    grid.fill(paper);
    QPainter painter(&grid);
    painter.setPen(ink);
    const QFontMetrics metrics(painter.font());
    for (int i = 0; i < count; ++i) {
        QImage image(set.pixels.data() + static_cast<size_t>(i) * set.height * set.width, set.width, set.height, set.width,
                     QImage::Format_Grayscale8);
        const int x = (i % columns) * cell_w + 4, y = (i / columns) * cell_h + 4;
        painter.drawImage(QRect(x, y, set.width * scale, set.height * scale), image.copy());
        if (i < static_cast<int>(set.sample_labels.size())) {
            const int label = set.sample_labels[i];
            const QString text = label >= 0 && label < names.size() ? names[label] : QString::number(label);
            painter.drawText(QRect(x - 2, y + set.height * scale, set.width * scale + 4, 16), Qt::AlignCenter,
                             metrics.elidedText(text, Qt::ElideRight, set.width * scale + 4));
        }
    }
    return grid;
}

// Everything the view shows of one version, made on a pool thread (QImage, not QPixmap: pixmaps are GUI-only).
struct Loaded {
    dataset::Preview preview;
    QString error, diff;
    QImage image;      // the IDX grid or the class-folder thumbnails
    QStringList names; // the IDX set's class names, when known
};

// What changed against the previous version of the same dataset, as the diff pane shows it.
QString diff_text(DatasetReader& reader, const QString& name, const QString& version) {
    const QString previous = reader.previousVersion(name, version);
    if (previous.isEmpty())
        return reader.error().isEmpty() ? QObject::tr("%1: first version (%2).").arg(name, version.left(12))
                                        : QObject::tr("Cannot compare: %1").arg(reader.error());
    dataset::Manifest before, after;
    std::string error;
    if (!dataset::Manifest::from_json(nlohmann::json::parse(reader.manifest(previous).toStdString(), nullptr, false), before, error) ||
        !dataset::Manifest::from_json(nlohmann::json::parse(reader.manifest(version).toStdString(), nullptr, false), after, error))
        return QObject::tr("Cannot compare with %1: its manifest in the catalog is damaged (%2)").arg(previous.left(12), QString::fromStdString(error));
    const dataset::ManifestDiff diff = diff_manifests(before, after);
    QStringList lines;
    lines << QObject::tr("%1: %2 → %3").arg(name, previous.left(12), version.left(12));
    lines << QObject::tr("%1 added, %2 removed, %3 changed, %4 unchanged")
                 .arg(diff.added.size()).arg(diff.removed.size()).arg(diff.changed.size()).arg(diff.unchanged);
    for (const auto& c : diff.added)
        lines << QString("+ %1  (%2)").arg(QString::fromStdString(c.path), formatBytes(c.new_size));
    for (const auto& c : diff.removed)
        lines << QString("- %1  (%2)").arg(QString::fromStdString(c.path), formatBytes(c.old_size));
    for (const auto& c : diff.changed)
        lines << QString("~ %1  (%2 → %3)").arg(QString::fromStdString(c.path), formatBytes(c.old_size), formatBytes(c.new_size));
    return lines.join('\n');
}

// A few thumbnails per class of an image folder, each decoded and scaled here.
QImage thumbnails(const dataset::Preview& p, const QString& root, const QColor& paper, const QColor& ink) {
    const int thumb = 72;
    QImage grid(4 * (thumb + 8), std::max(1, static_cast<int>(p.classes.size())) * (thumb + 24), QImage::Format_RGB32);
    grid.fill(paper);
    QPainter painter(&grid);
    painter.setPen(ink);
    for (size_t c = 0; c < p.classes.size(); ++c) {
        const int y = static_cast<int>(c) * (thumb + 24);
        painter.drawText(QRect(4, y, grid.width(), 18), Qt::AlignLeft,
                         QString("%1 (%2 images)").arg(QString::fromStdString(p.classes[c].name)).arg(p.classes[c].count));
        for (size_t i = 0; i < p.classes[c].samples.size(); ++i) {
            QImage image(root + "/" + QString::fromStdString(p.classes[c].samples[i]));
            if (!image.isNull())
                painter.drawImage(QRect(4 + static_cast<int>(i) * (thumb + 8), y + 20, thumb, thumb),
                                  image.scaled(thumb, thumb, Qt::KeepAspectRatio, Qt::SmoothTransformation));
        }
    }
    return grid;
}

} // namespace

DatasetsView::DatasetsView(const QString& catalog_path, DatasetSync& sync, const JobController& backends,
                           QWidget* parent)
    : QWidget(parent), catalog_path_(catalog_path), sync_(sync), backends_(backends) {
    setAcceptDrops(true);
    model_ = new DatasetTableModel(catalog_path, this);
    table_ = new QTableView;
    table_->setModel(model_);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setSelectionMode(QAbstractItemView::SingleSelection);
    table_->verticalHeader()->hide();
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->horizontalHeader()->setStretchLastSection(true);
    table_->setAlternatingRowColors(true);

    auto* register_folder =
        new QAction(action_icon("folder-new", QStyle::SP_FileDialogNewFolder), tr("Register folder…"), this);
    register_folder->setToolTip(tr("Register a folder as a dataset version (or drop it on this tab)"));
    auto* register_file = new QAction(action_icon("document-new", QStyle::SP_FileIcon), tr("Register file…"), this);
    register_file->setToolTip(tr("Register a file as a dataset version (or drop it on this tab)"));
    auto* fashion = new QAction(tr("Add Fashion-MNIST"), this);
    fashion->setEnabled(QFileInfo::exists(kFashionMnist));
    fashion->setToolTip(fashion->isEnabled() ? tr("Debian's dataset-fashion-mnist in %1").arg(kFashionMnist)
                                             : tr("Debian's dataset-fashion-mnist — not installed (apt-get install "
                                                  "dataset-fashion-mnist puts it in %1)")
                                                   .arg(kFashionMnist));
    auto* upload = new QAction(action_icon("go-up", QStyle::SP_ArrowUp), tr("Upload selected version"), this);
    upload->setToolTip(tr("Send the selected version to the backend chosen beside the button (only the chunks it "
                          "lacks)"));
    auto* cancel_upload = new QAction(action_icon("process-stop", QStyle::SP_MediaStop), tr("Cancel upload"), this);
    cancel_upload->setToolTip(tr("Stop the upload in progress (it resumes where it stopped next time)"));
    commands_ = {register_folder, register_file, fashion, upload, cancel_upload};
    for (const auto& [made, name] : {std::pair{register_folder, "register_folder"},
                                     {register_file, "register_file"},
                                     {fashion, "add_fashion_mnist"},
                                     {upload, "upload_dataset"},
                                     {cancel_upload, "cancel_upload"}})
        made->setObjectName(QLatin1String(name));
    // A push button that runs the action and follows its state.
    const auto button = [this](QAction* action, const QString& text) {
        auto* push = new QPushButton(text);
        push->setToolTip(action->toolTip());
        push->setEnabled(action->isEnabled());
        connect(push, &QPushButton::clicked, action, &QAction::trigger);
        connect(action, &QAction::changed, push, [push, action] { push->setEnabled(action->isEnabled()); });
        return push;
    };
    backend_ = new QComboBox;
    upload_ = button(upload, tr("Upload to"));
    QPushButton* cancel = button(cancel_upload, tr("Cancel"));
    progress_ = new QProgressBar;
    progress_->setRange(0, 1000);
    progress_->setValue(0);
    progress_->setTextVisible(false);
    progress_->setMaximumHeight(12);
    status_ = new QLabel(tr("Drop a folder or file here to register it as a dataset version."));
    status_->setWordWrap(true);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);

    auto* buttons = new QHBoxLayout;
    buttons->addWidget(button(register_folder, register_folder->text()));
    buttons->addWidget(button(register_file, register_file->text()));
    buttons->addWidget(button(fashion, fashion->text()));
    buttons->addStretch(1);
    buttons->addWidget(upload_);
    buttons->addWidget(backend_);
    buttons->addWidget(cancel);

    preview_ = new QStackedWidget;
    images_ = new QLabel;
    images_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
    rows_ = new QTableWidget;
    rows_->verticalHeader()->hide();
    preview_text_ = new QLabel;
    preview_text_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
    preview_text_->setWordWrap(true);
    // What the preview shows, in words, above the images or rows: the counts, the class names, a table's label column.
    summary_ = new QLabel;
    summary_->setWordWrap(true);
    summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    summary_->setAccessibleName(tr("Preview summary"));
    summary_->hide();
    images_->setAccessibleName(tr("Preview images"));
    rows_->setAccessibleName(tr("Preview rows"));
    preview_->addWidget(preview_text_);
    preview_->addWidget(images_);
    preview_->addWidget(rows_);
    diff_ = new QPlainTextEdit;
    diff_->setReadOnly(true);
    diff_->setPlaceholderText(tr("Changes against the previous version of the same dataset appear here."));

    auto* preview_box = new QWidget;
    auto* preview_layout = new QVBoxLayout(preview_box);
    preview_layout->setContentsMargins(0, 0, 0, 0);
    preview_layout->addWidget(new QLabel(tr("<b>Preview</b>")));
    preview_layout->addWidget(summary_);
    preview_layout->addWidget(preview_, 1);
    auto* diff_box = new QWidget;
    auto* diff_layout = new QVBoxLayout(diff_box);
    diff_layout->setContentsMargins(0, 0, 0, 0);
    diff_layout->addWidget(new QLabel(tr("<b>Changes from the previous version</b>")));
    diff_layout->addWidget(diff_, 1);
    auto* bottom = new QSplitter;
    bottom->addWidget(preview_box);
    bottom->addWidget(diff_box);
    bottom->setSizes({700, 400});
    auto* vertical = new QSplitter(Qt::Vertical);
    vertical->addWidget(table_);
    vertical->addWidget(bottom);
    vertical->setSizes({220, 480});

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(buttons);
    layout->addWidget(progress_);
    layout->addWidget(status_);
    layout->addWidget(vertical, 1);

    connect(register_folder, &QAction::triggered, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Register a dataset folder"));
        if (!dir.isEmpty())
            registerPath(dir);
    });
    connect(register_file, &QAction::triggered, this, [this] {
        const QString file = QFileDialog::getOpenFileName(this, tr("Register a dataset file"));
        if (!file.isEmpty())
            registerPath(file);
    });
    connect(fashion, &QAction::triggered, this, [this] { registerPath(kFashionMnist, "fashion-mnist"); });
    connect(upload, &QAction::triggered, this, [this] { uploadSelected(backend_->currentText()); });
    connect(cancel_upload, &QAction::triggered, &sync_, &DatasetSync::cancel);
    // Cancel has something to stop only while an upload or a registration is under way; Upload needs a version
    // selected and nothing else under way. Each says why when it cannot.
    const auto follow = [this, upload, cancel_upload, upload_tip = upload->toolTip(),
                         cancel_tip = cancel_upload->toolTip()] {
        const bool busy = sync_.busy();
        cancel_upload->setEnabled(busy);
        cancel_upload->setToolTip(busy ? cancel_tip
                                       : tr("%1 — nothing is being uploaded or registered now").arg(cancel_tip));
        const QString why = busy                                ? tr("wait for the operation under way (or cancel it)")
                            : !table_->currentIndex().isValid() ? tr("select a version in the table first")
                                                                : QString();
        upload->setEnabled(why.isEmpty());
        upload->setToolTip(why.isEmpty() ? upload_tip : tr("%1 — %2").arg(upload_tip, why));
    };
    follow();
    connect(&sync_, &DatasetSync::busyChanged, this, follow);
    // Right-click on the versions: the same commands (the Datasets menu's).
    table_->setContextMenuPolicy(Qt::ActionsContextMenu);
    table_->addActions(commands_);
    connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, follow);
    connect(model_, &QAbstractItemModel::modelReset, this, follow);
    connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& current) {
        if (current.isValid())
            showVersion(model_->data(current, DatasetTableModel::VersionRole).toString());
    });
    connect(&sync_, &DatasetSync::progress, this, [this](const QString& what, qint64 done, qint64 total, double seconds) {
        progress_->setValue(total > 0 ? static_cast<int>(1000.0 * done / total) : 1000);
        const double rate = seconds > 0 ? done / seconds : 0;
        setStatus(tr("%1: %2 of %3 (%4/s)").arg(what, formatBytes(done), formatBytes(total), formatBytes(static_cast<qint64>(rate))));
    });
    connect(&sync_, &DatasetSync::failed, this, [this](const QString& message) {
        progress_->setValue(0);
        setStatus(message, true);
    });
    connect(&sync_, &DatasetSync::catalogChanged, model_, &DatasetTableModel::refresh);
    // A refresh resets the model: keep the selected version selected.
    connect(model_, &QAbstractItemModel::modelAboutToBeReset, this, [this] {
        const QModelIndex current = table_->currentIndex();
        kept_version_ = current.isValid() ? model_->data(current, DatasetTableModel::VersionRole).toString() : QString();
    });
    connect(model_, &QAbstractItemModel::modelReset, this, [this] {
        const int row = model_->rowOfVersion(kept_version_);
        if (row >= 0) {
            const QSignalBlocker block(table_->selectionModel());
            table_->setCurrentIndex(model_->index(row, 0));
        }
        showNothing();
    });
    showNothing();
    connect(&sync_, &DatasetSync::registered, this, [this](const QString& name, const QString& version, bool is_new) {
        progress_->setValue(1000);
        setStatus(is_new ? tr("Registered %1, version %2").arg(name, version.left(12))
                         : tr("%1 is unchanged: these bytes are version %2 already").arg(name, version.left(12)));
        const QString shown = shown_version_;
        selectVersion(version);
        if (shown_version_ == shown)
            showVersion(version); // it was selected already: show it again (its diff may be new)
    });
    connect(&sync_, &DatasetSync::uploaded, this,
            [this](const QString& version, const QString& backend, qint64 sent, qint64, double seconds) {
                progress_->setValue(1000);
                setStatus(tr("Version %1 is on %2: sent %3 in %4 s (%5/s); chunks it had already were not sent")
                              .arg(version.left(12), backend, formatBytes(sent))
                              .arg(seconds, 0, 'f', 1)
                              .arg(formatBytes(seconds > 0 ? static_cast<qint64>(sent / seconds) : 0)));
            });
    refreshBackends();
}

// The backends list changes when remote workers join (MainWindow::addBackend calls this).
void DatasetsView::refreshBackends() {
    const QString current = backend_->currentText();
    backend_->clear();
    backend_->addItems(backends_.names());
    if (!current.isEmpty())
        backend_->setCurrentText(current);
}

QString DatasetsView::status() const { return status_->text(); }
QString DatasetsView::diffText() const { return diff_->toPlainText(); }

void DatasetsView::setStatus(const QString& text, bool error) {
    status_->setText(text);
    status_->setStyleSheet(error ? "color: #b3261e;" : QString());
}

bool DatasetsView::registerPath(const QString& root, const QString& name) {
    const QString dataset_name = name.isEmpty() ? QFileInfo(root).fileName() : name;
    if (!sync_.registerPath(dataset_name, root)) {
        setStatus(tr("Busy with another dataset; try again when it is done"), true);
        return false;
    }
    setStatus(tr("Hashing %1…").arg(root));
    return true;
}

void DatasetsView::uploadSelected(const QString& backend_name) {
    const QModelIndex current = table_->currentIndex();
    if (!current.isValid()) {
        setStatus(tr("Select a version to upload"), true);
        return;
    }
    const std::optional<JobController::Connected> backend = backends_.find(backend_name);
    if (!backend) {
        setStatus(tr("Backend “%1” is not connected").arg(backend_name), true);
        return;
    }
    const QString version = model_->data(current, DatasetTableModel::VersionRole).toString();
    if (!sync_.upload(version, model_->data(current, DatasetTableModel::RootRole).toString(), *backend->backend,
                      backend_name))
        setStatus(tr("Busy with another dataset; try again when it is done"), true);
}

void DatasetsView::selectVersion(const QString& version) {
    const int row = model_->rowOfVersion(version);
    if (row >= 0)
        table_->setCurrentIndex(model_->index(row, 0));
}

void DatasetsView::dragEnterEvent(QDragEnterEvent* event) {
    if (event->mimeData()->hasUrls())
        event->acceptProposedAction();
}

void DatasetsView::dropEvent(QDropEvent* event) {
    const QList<QUrl> urls = event->mimeData()->urls();
    if (!urls.isEmpty() && urls.first().isLocalFile())
        registerPath(urls.first().toLocalFile());
}

void DatasetsView::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange && !shown_version_.isEmpty())
        showVersion(shown_version_);
}

QString DatasetsView::previewWords() const { return summary_->isHidden() ? preview_text_->text() : summary_->text(); }

void DatasetsView::showNothing() {
    if (!shown_version_.isEmpty())
        return;
    // With no version chosen, what to do: the first steps while the catalog has none.
    preview_text_->setText(
        model_->rowCount() == 0
            ? tr("No datasets yet. Register folder… or Register file… makes a dataset version of your files (or drop "
                 "them here); Add Fashion-MNIST registers Debian's copy, ready for the demo jobs.")
            : tr("Select a version to preview it."));
    summary_->hide();
    preview_->setCurrentWidget(preview_text_);
}

void DatasetsView::showVersion(const QString& version) {
    shown_version_ = version;
    const int row = model_->rowOfVersion(version);
    if (row < 0)
        return;
    const QString root = model_->data(model_->index(row, 0), DatasetTableModel::RootRole).toString();
    const QString name = model_->data(model_->index(row, 0), DatasetTableModel::NameRole).toString();
    preview_text_->setText(tr("Reading %1…").arg(root));
    summary_->hide();
    preview_->setCurrentWidget(preview_text_);
    const QString catalog_path = catalog_path_;
    // Reading the manifests, diffing them, decompressing and checking files, decoding thumbnails: off the GUI thread
    // (on Qt's global pool: this is disk and CPU work, not a wait on the network).
    const QColor paper = palette().color(QPalette::Base), ink = palette().color(QPalette::Text);
    run_in_background(
        this,
        [catalog_path, root, name, version, paper, ink] {
            Loaded loaded;
            DatasetReader reader(catalog_path);
            loaded.diff = diff_text(reader, name, version);
            dataset::Manifest manifest;
            std::string error;
            if (!dataset::Manifest::from_json(
                    nlohmann::json::parse(reader.manifest(version).toStdString(), nullptr, false), manifest, error) ||
                !dataset::inspect_dataset(root.toStdString(), manifest, loaded.preview, error, 32)) {
                loaded.error = QString::fromStdString(error);
                return loaded;
            }
            const dataset::Preview& p = loaded.preview;
            if (p.format == "idx" && !p.idx.empty()) {
                // The training set when there is one (the larger set).
                const auto& set = *std::max_element(p.idx.begin(), p.idx.end(),
                                                    [](const auto& a, const auto& b) { return a.count < b.count; });
                loaded.names = idx_class_names(root, name, set);
                loaded.image = idx_grid(set, loaded.names, paper, ink);
            } else if (p.format == "image-folder") {
                loaded.image = thumbnails(p, root, paper, ink);
            }
            return loaded;
        },
        [this, version](const Loaded& loaded) {
            if (version != shown_version_)
                return;
            diff_->setPlainText(loaded.diff);
            if (!loaded.error.isEmpty()) {
                preview_summary_ =
                    tr("The files changed or went away since this version was registered: %1").arg(loaded.error);
                preview_text_->setText(preview_summary_);
                preview_->setCurrentWidget(preview_text_);
                return;
            }
            const dataset::Preview& p = loaded.preview;
            preview_summary_ = QString::fromStdString(p.summary);
            if (!loaded.names.isEmpty()) {
                QStringList classes;
                for (int i = 0; i < loaded.names.size(); ++i)
                    classes << QString("%1 %2").arg(i).arg(loaded.names[i]);
                preview_summary_ += tr("\nClasses: %1").arg(classes.join(QStringLiteral(", ")));
            }
            summary_->setText(preview_summary_);
            summary_->setVisible(!loaded.image.isNull() || (p.format == "csv" && !p.tables.empty()));
            if (!loaded.image.isNull()) {
                images_->setPixmap(QPixmap::fromImage(loaded.image));
                images_->setToolTip(preview_summary_);
                preview_->setCurrentWidget(images_);
            } else if (p.format == "csv" && !p.tables.empty()) {
                const dataset::CsvTable& table = p.tables.front();
                rows_->clear();
                rows_->setColumnCount(static_cast<int>(table.header.size()));
                rows_->setRowCount(static_cast<int>(table.rows.size()));
                QStringList headers;
                for (size_t c = 0; c < table.header.size(); ++c)
                    headers << QString("%1\n(%2)")
                                   .arg(QString::fromStdString(table.header[c]),
                                        QString::fromStdString(table.types[c]));
                rows_->setHorizontalHeaderLabels(headers);
                for (size_t r = 0; r < table.rows.size(); ++r)
                    for (size_t c = 0; c < table.rows[r].size(); ++c)
                        rows_->setItem(static_cast<int>(r), static_cast<int>(c),
                                       new QTableWidgetItem(QString::fromStdString(table.rows[r][c])));
                rows_->setToolTip(preview_summary_);
                preview_->setCurrentWidget(rows_);
            } else {
                preview_text_->setText(preview_summary_);
                preview_->setCurrentWidget(preview_text_);
            }
        },
        QThreadPool::globalInstance());
}

} // namespace traindeck
