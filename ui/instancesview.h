#pragma once
// The instances the providers rented, live: each with its provider, type, state, uptime, cost so far, price an hour
// and whether it is spot, from the providers' resources (refreshed with the backends' table), and "Release now" for
// the one selected (asked first: its jobs end with it). Hidden while no provider has an instance.
#include <QJsonObject>
#include <QWidget>

class QPushButton;
class QStandardItemModel;
class QTableView;

namespace traindeck {

class InstancesView : public QWidget {
    Q_OBJECT
public:
    explicit InstancesView(QWidget* parent = nullptr);
    // A backend's resources: its "instances" replace the rows it had (none: it has none, or rents none).
    void update(const QString& backend, const QJsonObject& resources);
    int rowCount() const;
    QTableView& table() { return *table_; }

signals:
    // The user confirmed: delete that instance now.
    void releaseRequested(const QString& backend, const QString& instance);

private:
    void askRelease();

    QStandardItemModel* model_;
    QTableView* table_;
    QPushButton* release_;
};

} // namespace traindeck
