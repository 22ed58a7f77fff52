#pragma once
// What a provider backend (backend/client/providerbackend.h) rented: each instance is recorded before its creation
// is asked of the cloud and kept after its deletion with what it cost, so nothing rented is ever forgotten, a
// console that was killed mid-creation finds the instance again, and a restart can tell its own instances from
// strays. The console keeps the ledger in its catalog (ui/catalogledger.h). Qt Core only.
#include <QDateTime>
#include <QList>
#include <QString>

namespace traindeck {

struct RentedInstance {
    QString provider; // the backend's name
    QString name;     // TrainDeck's name for it (td-LABEL-xxxxxxxx), given to the cloud as its name and label
    QString id;       // the cloud's id: "" until create answered
    QString type;
    QString address; // the ssh destination: "" until known
    // creating (asked of the cloud), booting (created; reaching it), ready (its worker runs jobs), deleting (asked
    // to go), deleted, failed (create refused), vanished (the cloud no longer lists it: gone while watched, or a
    // spot instance taken back).
    QString state;
    QString reason; // why it ended (or why it is being deleted)
    double price_per_hour = 0;
    bool spot = false;
    double created = 0, ended = 0; // seconds since the epoch; ended 0 while it lives

    bool live() const { return state == "creating" || state == "booting" || state == "ready" || state == "deleting"; }
    // Billed from the moment creation was asked until it ended (or now).
    double seconds() const {
        const double end = ended > 0 ? ended : static_cast<double>(QDateTime::currentMSecsSinceEpoch()) / 1000;
        return end > created ? end - created : 0;
    }
    double cost() const { return price_per_hour * seconds() / 3600; }
};

class InstanceLedger {
public:
    virtual ~InstanceLedger() = default;
    // Inserts or updates the instance (by provider and name). True only once it is durable (committed); false and
    // *error when it is not, and then nothing is asked of the cloud.
    virtual bool record(const RentedInstance& instance, QString* error) = 0;
    // Every instance the provider has had, oldest first.
    virtual QList<RentedInstance> instances(const QString& provider, QString* error) = 0;
};

} // namespace traindeck
