#pragma once
// The console's InstanceLedger (backend/api/instanceledger.h): the catalog's instances table, written on the
// catalog's writer thread and waited for, so that record() returns only once the row is committed. Called from the
// provider backends' threads, never from the GUI thread (it waits on the disk).
#include "catalog.h"
#include "instanceledger.h"

namespace traindeck {

class CatalogInstanceLedger : public InstanceLedger {
public:
    explicit CatalogInstanceLedger(CatalogWriter& writer) : writer_(writer) {}
    bool record(const RentedInstance& instance, QString* error) override;
    QList<RentedInstance> instances(const QString& provider, QString* error) override;

private:
    CatalogWriter& writer_;
};

} // namespace traindeck
