#pragma once
// A run's value for a field name, resolved the one way the runs table's columns, the query language, the group
// keys and the compare views all use (README "Query runs"):
//   built-in fields   id name state reason backend note progress spend created started finished duration
//   summary fields    best.S last.S min.S max.S count.S last_step.S — S a series of the run, matched exactly or
//                     with '/' and '_' taken as the same (best.val_accuracy is best.val/accuracy)
//   config.KEY        the config key, even where a built-in field has its name
//   anything else     a config key (optimizer.lr, hidden[1])
// Plain C++, no Qt.
#include "runrecord.h"

#include <string>
#include <string_view>
#include <vector>

namespace traindeck {

struct FieldValue {
    bool present = false;
    double number = NAN; // NaN for a text
    std::string text;    // numbers too, as their shortest round-trip text
    bool is_number() const { return present && !std::isnan(number); }
};

FieldValue run_field(const RunRecord& run, std::string_view field, double now);

// Which series of the run a summary field's name S means (exact, then '/' and '_' alike); nullptr when none.
const MetricSummary* find_summary(const RunRecord& run, std::string_view series);

// The shortest text that reads back as the same double ("0.05", "1e-05", "128").
std::string number_text(double value);

// Every config key and summary field ("best.loss", "last.loss", ...) that some of the runs have, sorted: config keys
// first, then summary fields. What the column chooser and the compare views' axis choosers offer.
std::vector<std::string> config_keys_of(const std::vector<const RunRecord*>& runs);
std::vector<std::string> summary_fields_of(const std::vector<const RunRecord*>& runs);

} // namespace traindeck
