// jsonbridge.h's conversions.
#include "jsonbridge.h"

#include <QJsonDocument>

namespace traindeck {

namespace {

QJsonDocument document_of(const nlohmann::json& json) {
    return QJsonDocument::fromJson(
        QByteArray::fromStdString(json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
}

} // namespace

nlohmann::json to_nlohmann(const QJsonObject& object) {
    return nlohmann::json::parse(QJsonDocument(object).toJson(QJsonDocument::Compact).toStdString(), nullptr, false);
}

nlohmann::json to_nlohmann(const QJsonArray& array) {
    return nlohmann::json::parse(QJsonDocument(array).toJson(QJsonDocument::Compact).toStdString(), nullptr, false);
}

nlohmann::json to_nlohmann(const QJsonValue& value) { return to_nlohmann(QJsonArray{value})[0]; }

QJsonObject to_qt_object(const nlohmann::json& json) { return document_of(json).object(); }

QJsonArray to_qt_array(const nlohmann::json& json) { return document_of(json).array(); }

} // namespace traindeck
