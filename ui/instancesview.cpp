// InstancesView (instancesview.h): one row an instance, keyed by (backend, instance name).
#include "instancesview.h"
#include "money.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonArray>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QStandardItemModel>
#include <QTableView>
#include <QVBoxLayout>

namespace traindeck {

namespace {

enum Column { Instance, Provider, Type, State, Uptime, Cost, Price, Spot, Columns };

QString uptime(double seconds) {
    const qint64 s = static_cast<qint64>(seconds);
    return s >= 3600 ? QString("%1 h %2 min").arg(s / 3600).arg((s % 3600) / 60, 2, 10, QChar('0'))
                     : QString("%1:%2").arg(s / 60).arg(s % 60, 2, 10, QChar('0'));
}

} // namespace

InstancesView::InstancesView(QWidget* parent) : QWidget(parent), model_(new QStandardItemModel(0, Columns, this)) {
    model_->setHorizontalHeaderLabels(
        {tr("Instance"), tr("Provider"), tr("Type"), tr("State"), tr("Up"), tr("Cost"), tr("Per hour"), tr("Spot")});
    table_ = new QTableView;
    table_->setModel(model_);
    table_->verticalHeader()->hide();
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->horizontalHeader()->setStretchLastSection(true);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setSelectionMode(QAbstractItemView::SingleSelection);
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setMaximumHeight(110);
    table_->setAccessibleName(tr("Rented instances"));
    release_ = new QPushButton(tr("Release now"));
    release_->setToolTip(tr("Delete the selected instance in its cloud now: billing stops, its jobs end"));
    release_->setEnabled(false);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* title = new QHBoxLayout;
    title->addWidget(new QLabel(tr("<b>Rented instances</b>")), 1);
    title->addWidget(release_);
    layout->addLayout(title);
    layout->addWidget(table_);
    connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this,
            [this] { release_->setEnabled(table_->selectionModel()->hasSelection()); });
    connect(release_, &QPushButton::clicked, this, &InstancesView::askRelease);
    setVisible(false);
}

int InstancesView::rowCount() const { return model_->rowCount(); }

void InstancesView::update(const QString& backend, const QJsonObject& resources) {
    const QJsonArray instances = resources.value("instances").toArray();
    // The selection is kept by name across the refresh.
    QString selected;
    if (table_->selectionModel()->hasSelection()) {
        const int row = table_->selectionModel()->selectedRows().value(0).row();
        selected = model_->item(row, Provider)->text() + "/" + model_->item(row, Instance)->text();
    }
    for (int row = model_->rowCount() - 1; row >= 0; --row)
        if (model_->item(row, Provider)->text() == backend)
            model_->removeRow(row);
    for (const auto& value : instances) {
        const QJsonObject i = value.toObject();
        QList<QStandardItem*> row;
        for (const QString& text :
             {i.value("name").toString(), backend, i.value("type").toString(), i.value("state").toString(),
              uptime(i.value("uptime_s").toDouble()), money(i.value("cost").toDouble(), 4),
              money(i.value("price_per_hour").toDouble(), 2), i.value("spot").toBool() ? tr("spot") : tr("on-demand")})
            row << new QStandardItem(text);
        row[Cost]->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        row[Price]->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        row[Instance]->setToolTip(tr("%1 at %2").arg(i.value("id").toString(), i.value("address").toString()));
        model_->appendRow(row);
        if (selected == backend + "/" + i.value("name").toString())
            table_->selectRow(model_->rowCount() - 1);
    }
    release_->setEnabled(table_->selectionModel()->hasSelection());
    setVisible(model_->rowCount() > 0);
}

void InstancesView::askRelease() {
    if (!table_->selectionModel()->hasSelection())
        return;
    const int row = table_->selectionModel()->selectedRows().value(0).row();
    const QString backend = model_->item(row, Provider)->text(), name = model_->item(row, Instance)->text();
    const auto answer = QMessageBox::question(
        this, tr("Release instance"),
        tr("Delete %1 (%2 on %3) now? Billing stops; the jobs running there end with it (those allowed to move "
           "continue from their last checkpoint).")
            .arg(name, model_->item(row, Type)->text(), backend));
    if (answer == QMessageBox::Yes)
        emit releaseRequested(backend, name);
}

} // namespace traindeck
