#pragma once
// One run as the runs table, the query language, the groups and the compare views see it: the job's own fields,
// its configuration as flattened keys ("optimizer.lr", "hidden[1]") and one summary per metric series, kept by
// the catalog on ingest (never computed by scanning a series). Plain C++: the pure parts (runquery, groupstats)
// and their tests use it without Qt or SQLite.
#include "metricgoal.h"

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace traindeck {

// A configuration value. Numbers (and booleans, as 0/1) keep their number; everything keeps its text as the run
// reported it (a number's shortest round-trip form, a string without quotes), so equality on text never depends
// on how a double prints.
struct ConfigValue {
    std::string text;
    double number = NAN;
    bool is_number() const { return !std::isnan(number); }
};

struct MetricSummary {
    double last = NAN, min = NAN, max = NAN, best = NAN;
    int64_t last_step = 0, count = 0;
    MetricGoal goal = MetricGoal::none;
};

struct RunRecord {
    int64_t id = 0;
    std::string name, state, reason, backend, remote_id, note;
    double progress = 0, spend = 0;
    double loss = NAN, accuracy = NAN; // the latest training loss and validation accuracy, as the jobs table shows
    double created = 0, started = 0, finished = 0; // Unix seconds; 0 = not yet
    bool starred = false, archived = false;
    bool deleted = false;                           // deleted this session (undo brings it back); hidden everywhere
    std::vector<std::string> tags;                  // sorted, unique
    std::map<std::string, ConfigValue> config;      // flattened keys
    std::map<std::string, MetricSummary> summaries; // by series name ("loss", "val/accuracy", ...)
};

} // namespace traindeck
