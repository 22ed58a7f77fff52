#pragma once
// A run's configuration as flattened keys: {"optimizer":{"lr":0.01},"hidden":[256,128]} becomes optimizer.lr = 0.01,
// hidden[0] = 256, hidden[1] = 128. What a "config" record (backend/api/METRICS.md) carries, and the built-in
// trainer's spec, are stored this way in the catalog (one row a key) so that any key can be a column, a query term
// or a group key. (The default goal of a metric, from its name, is backend/common/metricgoal.h.)
#include "runrecord.h"

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <string_view>

namespace traindeck {

// Limits on what one run may report (a runaway script must not fill the catalog): keys beyond kMaxConfigKeys are
// left out, longer texts are cut; the return value says what was left out ("" when nothing was).
constexpr size_t kMaxConfigKeys = 4096, kMaxConfigKeyLength = 256, kMaxConfigText = 4096;
std::string flatten_config(const nlohmann::json& config, std::map<std::string, ConfigValue>& out);

} // namespace traindeck
