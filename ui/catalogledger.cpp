// CatalogInstanceLedger (catalogledger.h): each call one closure on the writer thread, then a flush.
#include "catalogledger.h"

#include <memory>

namespace traindeck {

bool CatalogInstanceLedger::record(const RentedInstance& i, QString* error) {
    const Catalog::InstanceRow row{i.provider.toStdString(),
                                   i.name.toStdString(),
                                   i.id.toStdString(),
                                   i.type.toStdString(),
                                   i.address.toStdString(),
                                   i.state.toStdString(),
                                   i.reason.toStdString(),
                                   i.price_per_hour,
                                   i.spot,
                                   i.created,
                                   i.ended};
    writer_.post([row](Catalog& catalog) { catalog.record_instance(row); });
    const std::string failure = writer_.flush();
    if (!failure.empty() && error)
        *error = QString::fromStdString(failure);
    return failure.empty();
}

QList<RentedInstance> CatalogInstanceLedger::instances(const QString& provider, QString* error) {
    auto rows = std::make_shared<std::vector<Catalog::InstanceRow>>();
    writer_.post([rows, name = provider.toStdString()](Catalog& catalog) { *rows = catalog.instances(name); });
    const std::string failure = writer_.flush();
    if (!failure.empty()) {
        if (error)
            *error = QString::fromStdString(failure);
        return {};
    }
    QList<RentedInstance> list;
    for (const Catalog::InstanceRow& r : *rows) {
        RentedInstance i;
        i.provider = QString::fromStdString(r.provider);
        i.name = QString::fromStdString(r.name);
        i.id = QString::fromStdString(r.id);
        i.type = QString::fromStdString(r.type);
        i.address = QString::fromStdString(r.address);
        i.state = QString::fromStdString(r.state);
        i.reason = QString::fromStdString(r.reason);
        i.price_per_hour = r.price_per_hour;
        i.spot = r.spot;
        i.created = r.created;
        i.ended = r.ended;
        list << i;
    }
    return list;
}

} // namespace traindeck
