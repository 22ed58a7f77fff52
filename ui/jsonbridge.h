#pragma once
// Qt's JSON and nlohmann's, one way across for the console: the engine's and the sweep's parsers take nlohmann
// values, the widgets and the backends speak QJson. A round trip through compact text: exact for every value JSON has.
#include <QJsonArray>
#include <QJsonObject>
#include <QJsonValue>

#include <nlohmann/json.hpp>

namespace traindeck {

nlohmann::json to_nlohmann(const QJsonObject& object);
nlohmann::json to_nlohmann(const QJsonArray& array);
nlohmann::json to_nlohmann(const QJsonValue& value);
// Text that is not valid UTF-8 is replaced (U+FFFD), never thrown on; a value of the other kind gives an empty one.
QJsonObject to_qt_object(const nlohmann::json& json);
QJsonArray to_qt_array(const nlohmann::json& json);

} // namespace traindeck
