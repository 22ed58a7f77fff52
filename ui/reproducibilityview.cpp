// ReproducibilityView (reproducibilityview.h): one read of the catalog on a pool thread per showJob/refresh, shown
// as a summary line and five tabs.
#include "reproducibilityview.h"

#include "background.h"
#include "diffhighlighter.h"

#include <QDateTime>
#include <QFileInfo>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTabWidget>
#include <QTableWidget>
#include <QTreeWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <functional>

namespace traindeck {

namespace {

QString bytes_text(qint64 bytes) {
    if (bytes < 1024)
        return QObject::tr("%1 B").arg(bytes);
    if (bytes < qint64(1024) * 1024)
        return QObject::tr("%1 KiB").arg(bytes / 1024.0, 0, 'f', 1);
    return QObject::tr("%1 MiB").arg(bytes / 1048576.0, 0, 'f', 1);
}

QString value_text(const QJsonValue& value) {
    if (value.isString())
        return value.toString();
    if (value.isDouble())
        return QString::number(value.toDouble(), 'g', 12);
    if (value.isBool())
        return value.toBool() ? QObject::tr("yes") : QObject::tr("no");
    return {};
}

QTableWidget* make_table(const QStringList& headers) {
    auto* table = new QTableWidget(0, static_cast<int>(headers.size()));
    table->setHorizontalHeaderLabels(headers);
    table->verticalHeader()->hide();
    table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table->setSelectionBehavior(QAbstractItemView::SelectRows);
    table->horizontalHeader()->setStretchLastSection(true);
    table->setSortingEnabled(false);
    table->setWordWrap(false);
    return table;
}

void add_row(QTableWidget* table, const QStringList& cells) {
    const int row = table->rowCount();
    table->insertRow(row);
    for (int column = 0; column < cells.size(); ++column) {
        auto* item = new QTableWidgetItem(cells[column]);
        item->setToolTip(cells[column]);
        table->setItem(row, column, item);
    }
}

} // namespace

struct ReproducibilityView::Loaded {
    qint64 job = 0;
    int generation = 0;
    CatalogReader::RunCapture capture;
    QByteArray request;
    QString name, error;
    std::vector<CatalogReader::Checkpoint> checkpoints;
    std::vector<CatalogReader::Artifact> artifacts;
};

ReproducibilityView::ReproducibilityView(const QString& catalog_path, QWidget* parent)
    : QWidget(parent), catalog_path_(catalog_path) {
    summary_ = new QLabel(tr("Select a run to see what it was made of."));
    summary_->setWordWrap(true);
    summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    reproduce_ = new QPushButton(tr("Rerun exactly…"));
    reproduce_->setToolTip(
        tr("Run it again from its captured code snapshot, with the same spec, seeds, dataset version "
           "and thread count, on any backend"));
    reproduce_->setEnabled(false);
    connect(reproduce_, &QPushButton::clicked, this, [this] { emit reproduceRequested(job_); });

    left_out_ = make_table({tr("Left out"), tr("Why")});
    diff_ = make_diff_view();
    diff_->setPlaceholderText(tr("No uncommitted change: the run's code is its commit."));
    auto* code = new QWidget;
    auto* code_layout = new QVBoxLayout(code);
    code_layout->setContentsMargins(0, 0, 0, 0);
    code_layout->addWidget(left_out_);
    code_layout->addWidget(diff_, 1);

    packages_ = make_table({tr("Package"), tr("Version"), tr("Debian package")});
    packages_->setSortingEnabled(true);
    system_ = make_table({tr("What"), tr("Value")});
    environment_ = make_table({tr("Variable"), tr("Value")});
    lineage_ = new QTreeWidget;
    lineage_->setHeaderLabels({tr("Lineage"), tr("Details")});
    lineage_->setColumnWidth(0, 320);

    tabs_ = new QTabWidget;
    tabs_->addTab(code, tr("Code"));
    tabs_->addTab(packages_, tr("Packages"));
    tabs_->addTab(system_, tr("System"));
    tabs_->addTab(environment_, tr("Environment"));
    tabs_->addTab(lineage_, tr("Lineage"));

    auto* top = new QHBoxLayout;
    top->addWidget(summary_, 1);
    top->addWidget(reproduce_, 0, Qt::AlignTop);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(top);
    layout->addWidget(tabs_, 1);
}

void ReproducibilityView::showJob(qint64 job) {
    job_ = job;
    refresh();
}

void ReproducibilityView::refresh() {
    if (job_ <= 0)
        return;
    const int generation = ++generation_;
    run_in_background(
        this,
        [path = catalog_path_, job = job_, generation] {
            Loaded loaded;
            loaded.job = job;
            loaded.generation = generation;
            CatalogReader reader(path);
            loaded.capture = reader.capture(job);
            loaded.request = reader.jobRequest(job);
            loaded.name = reader.jobName(job);
            loaded.checkpoints = reader.checkpoints(job);
            loaded.artifacts = reader.artifacts(job);
            loaded.error = reader.error();
            return loaded;
        },
        [this](const Loaded& loaded) {
            if (loaded.generation != generation_)
                return;
            // Rebuilt only when something changed: a refresh every second must not reset the tables under the user.
            const QByteArray shown = loaded.capture.code + '\n' + loaded.capture.environment + '\n' + loaded.request +
                                     '\n' + QByteArray::number(static_cast<qint64>(loaded.checkpoints.size())) + '/' +
                                     QByteArray::number(static_cast<qint64>(loaded.artifacts.size())) + '/' +
                                     QByteArray::number(loaded.job) + loaded.error.toUtf8();
            if (shown == shown_)
                return;
            shown_ = shown;
            show(loaded);
        },
        QThreadPool::globalInstance());
}

void ReproducibilityView::show(const Loaded& read) {
    const QJsonObject capture = QJsonDocument::fromJson(read.capture.code).object();
    const QJsonObject environment = QJsonDocument::fromJson(read.capture.environment).object();
    const QJsonObject code = capture.value("code").toObject();
    const QJsonObject request = QJsonDocument::fromJson(read.request).object();
    const bool builtin = request.contains("builtin");

    // The summary: where the code came from, in one or two lines.
    QStringList lines;
    if (!read.error.isEmpty()) {
        lines << tr("<b>The catalog could not be read:</b> %1").arg(read.error.toHtmlEscaped());
    } else if (capture.isEmpty() && environment.isEmpty()) {
        lines << tr("<b>No capture for this run.</b> Runs are captured by workers from TrainDeck 0.1 on, as they "
                    "start; an imported run keeps what its tool recorded.");
    } else if (builtin) {
        lines << tr("<b>Built-in trainer.</b> Its spec is its code (below as submitted; the run's config holds it "
                    "with every default filled in, the seed included); %1 thread(s).")
                     .arg(request.value("resources").toObject().value("cpus").toInt(1));
    } else if (code.value("kind") == "git") {
        const QString commit = code.value("commit").toString();
        lines << tr("<b>git</b> %1 @ <tt>%2</tt>%3 — %4")
                     .arg(code.value("branch").toString().toHtmlEscaped(), commit.left(10).toHtmlEscaped(),
                          code.value("remote").toString().isEmpty()
                              ? QString()
                              : tr(" from %1").arg(code.value("remote").toString().toHtmlEscaped()),
                          code.value("dirty").toBool() ? tr("<b>with uncommitted changes</b> (below)") : tr("clean"));
    } else if (code.value("kind") == "snapshot") {
        lines << tr("<b>Rerun</b> from code snapshot <tt>%1…</tt>: %2")
                     .arg(code.value("snapshot").toString().left(12).toHtmlEscaped(),
                          code.value("complete").toBool() ? tr("every file as captured")
                                                          : tr("<b>files differ from the snapshot</b>"));
    } else if (code.value("kind") == "folder") {
        lines << tr("<b>Folder</b> %1 (not in git)").arg(code.value("root").toString().toHtmlEscaped());
    } else if (!capture.isEmpty()) {
        lines << tr("<b>No code captured:</b> the job ran in no folder of its own.");
    }
    if (const QString snapshot = code.value("snapshot").toString();
        !snapshot.isEmpty() && code.value("kind") != "snapshot")
        lines << tr("Snapshot <tt>%1…</tt>: %2 files, %3 (%4 new on the worker), captured in %5 ms")
                     .arg(snapshot.left(12).toHtmlEscaped())
                     .arg(code.value("files").toInt())
                     .arg(bytes_text(code.value("bytes").toInteger()),
                          bytes_text(code.value("stored_bytes").toInteger()))
                     .arg(qRound(code.value("seconds").toDouble() * 1000));
    if (read.capture.snapshots.size() > 1)
        lines << tr("<b>The code changed between this job's runs:</b> %1 snapshots (the newest is shown)")
                     .arg(read.capture.snapshots.size());
    if (const qint64 reproduces = request.value("console").toObject().value("reproduces").toInteger(); reproduces > 0)
        lines << tr("Reruns run %1.").arg(reproduces);
    for (const auto& problem : code.value("problems").toArray())
        lines << tr("<b>Capture problem:</b> %1").arg(problem.toString().toHtmlEscaped());
    summary_->setText(lines.join("<br>"));
    reproduce_->setEnabled(!request.isEmpty() && (builtin || !code.value("snapshot").toString().isEmpty()));

    left_out_->setRowCount(0);
    for (const auto& row : code.value("left_out").toArray())
        add_row(left_out_, {row.toObject().value("path").toString(), row.toObject().value("why").toString()});
    if (const int more = code.value("left_out_count").toInt() - left_out_->rowCount(); more > 0)
        add_row(left_out_, {tr("… %1 more").arg(more), QString()});
    left_out_->setVisible(left_out_->rowCount() > 0);
    // As tall as its rows (up to five), so the diff keeps the room.
    const int rows = std::min(left_out_->rowCount(), 5);
    left_out_->setFixedHeight(left_out_->horizontalHeader()->height() +
                              rows * left_out_->verticalHeader()->defaultSectionSize() + 2 * left_out_->frameWidth());
    diff_->setPlainText(builtin ? QString::fromUtf8(QJsonDocument(request.value("builtin").toObject()).toJson())
                                : code.value("diff").toString());

    packages_->setSortingEnabled(false);
    packages_->setRowCount(0);
    const QJsonObject python = environment.value("python").toObject();
    const QJsonObject packages = python.value("packages").toObject();
    for (auto it = packages.begin(); it != packages.end(); ++it) {
        const QJsonObject package = it.value().toObject();
        const QString debian = package.value("debian").toString();
        add_row(packages_, {it.key(), package.value("version").toString(),
                            debian.isEmpty() ? QString() : debian + " " + package.value("debian_version").toString()});
    }
    packages_->setSortingEnabled(true);
    packages_->sortItems(0);
    packages_->resizeColumnsToContents();

    system_->setRowCount(0);
    const QJsonObject system = environment.value("system").toObject();
    const std::pair<const char*, QString> fields[] = {
        {"hostname", tr("Host")}, {"os", tr("OS")},       {"kernel", tr("Kernel")},
        {"cpu", tr("CPU")},       {"cores", tr("Cores")}, {"memory_mb", tr("Memory (MB)")},
        {"cuda", tr("CUDA")},     {"cudnn", tr("cuDNN")}, {"nccl", tr("NCCL")}};
    for (const auto& [key, label] : fields)
        if (system.contains(key))
            add_row(system_, {label, value_text(system.value(key))});
    for (const auto& gpu : system.value("gpus").toArray()) {
        const QJsonObject g = gpu.toObject();
        add_row(system_,
                {tr("GPU %1").arg(g.value("index").toString()),
                 tr("%1, %2 MB, driver %3")
                     .arg(g.value("name").toString(), g.value("memory_mb").toString(), g.value("driver").toString())});
    }
    if (!python.isEmpty())
        add_row(system_, {tr("Python"), python.contains("problem") ? python.value("problem").toString()
                                                                   : tr("%1 %2 (%3)")
                                                                         .arg(python.value("implementation").toString(),
                                                                              python.value("version").toString(),
                                                                              python.value("executable").toString())});
    if (const QJsonObject engine = environment.value("engine").toObject(); !engine.isEmpty()) {
        add_row(system_, {tr("Engine"), engine.value("version").toString()});
        add_row(system_, {tr("Engine BLAS"), engine.value("blas").toString()});
        add_row(system_, {tr("Engine GPU path"), engine.value("gpu").toString()});
    }
    if (!capture.isEmpty()) {
        add_row(system_, {tr("TrainDeck"), capture.value("traindeck").toString()});
        add_row(system_, {tr("Executor"), capture.value("executor").toString()});
        QStringList command;
        for (const auto& word : capture.value("command").toArray())
            command << word.toString();
        add_row(system_, {tr("Command"), command.join(' ')});
        add_row(system_, {tr("Working folder"), capture.value("cwd").toString()});
        const QJsonObject resources = capture.value("resources").toObject();
        add_row(system_, {tr("Resources"), tr("%1 CPU(s), %2 GPU(s), %3 MB")
                                               .arg(resources.value("cpus").toInt())
                                               .arg(resources.value("gpus").toInt())
                                               .arg(resources.value("memory_mb").toInteger())});
    }
    system_->resizeColumnToContents(0);

    environment_->setRowCount(0);
    const QJsonObject variables = capture.value("environment").toObject();
    for (auto it = variables.begin(); it != variables.end(); ++it)
        add_row(environment_, {it.key(), it.value().toString()});
    environment_->resizeColumnToContents(0);

    // dataset version -> run -> checkpoints -> exports
    lineage_->clear();
    QTreeWidgetItem* parent = nullptr;
    if (const QString dataset = request.value("dataset").toString(); !dataset.isEmpty()) {
        parent = new QTreeWidgetItem(lineage_, {tr("Dataset version %1…").arg(dataset.left(12)), dataset});
    } else if (builtin) {
        const QJsonObject data = request.value("builtin").toObject().value("data").toObject();
        parent = new QTreeWidgetItem(
            lineage_, {tr("Dataset %1").arg(data.value("dataset").toString(data.value("path").toString())),
                       tr("named by the spec (not a registered version)")});
    }
    const QString run_text = tr("Run %1 — %2").arg(read.job).arg(read.name);
    auto* run = parent ? new QTreeWidgetItem(parent, {run_text, code.value("snapshot").toString().left(12)})
                       : new QTreeWidgetItem(lineage_, {run_text, code.value("snapshot").toString().left(12)});
    for (const CatalogReader::Checkpoint& checkpoint : read.checkpoints)
        new QTreeWidgetItem(run,
                            {tr("Checkpoint at step %1").arg(checkpoint.step), QFileInfo(checkpoint.path).fileName()});
    for (const CatalogReader::Artifact& artifact : read.artifacts)
        new QTreeWidgetItem(
            run, {tr("Export: %1").arg(artifact.kind), tr("%1 (%2)").arg(artifact.path, bytes_text(artifact.bytes))});
    lineage_->expandAll();
    emit loaded();
}

QString ReproducibilityView::summary() const { return summary_->text(); }
QString ReproducibilityView::diffText() const { return diff_->toPlainText(); }
int ReproducibilityView::packageRows() const { return packages_->rowCount(); }
bool ReproducibilityView::canReproduce() const { return reproduce_->isEnabled(); }

QString ReproducibilityView::packageVersion(const QString& name) const {
    for (int row = 0; row < packages_->rowCount(); ++row)
        if (packages_->item(row, 0)->text() == name)
            return packages_->item(row, 1)->text();
    return {};
}

QStringList ReproducibilityView::leftOut() const {
    QStringList rows;
    for (int row = 0; row < left_out_->rowCount(); ++row)
        rows << left_out_->item(row, 0)->text() + ": " + left_out_->item(row, 1)->text();
    return rows;
}

QStringList ReproducibilityView::lineage() const {
    QStringList rows;
    std::function<void(QTreeWidgetItem*, int)> walk = [&](QTreeWidgetItem* item, int depth) {
        rows << QString(qsizetype(depth) * 2, ' ') + item->text(0);
        for (int i = 0; i < item->childCount(); ++i)
            walk(item->child(i), depth + 1);
    };
    for (int i = 0; i < lineage_->topLevelItemCount(); ++i)
        walk(lineage_->topLevelItem(i), 0);
    return rows;
}

} // namespace traindeck
