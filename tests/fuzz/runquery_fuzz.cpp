// Fuzz target: the runs table's query language (model/runquery: RunQuery::parse, then matches), which reads whatever
// is typed into the filter box, on every keystroke.
// Input: the query text.
// Properties, not just "does not crash":
//  - a query is valid, or refused with a message and a position inside the text;
//  - parsing is a function of the text (a second parse agrees);
//  - an archived run matches only a query that names archived:, and a blank query matches every other run;
//  - when "not (Q)" parses, it matches exactly the runs that are not archived and that Q does not match (a missing
//    field makes a condition false, never the whole query undefined).
#include "fuzzsupport.h"
#include "runquery.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

using traindeck::ConfigValue;
using traindeck::MetricGoal;
using traindeck::MetricSummary;
using traindeck::QueryError;
using traindeck::RunQuery;
using traindeck::RunRecord;

namespace {

constexpr double kNow = 1796904000; // 2026-12-10T12:00:00Z

// Runs with the fields the dictionary names: numbers and text in the config, a series with '/', a NaN best, a run
// not started, an archived one.
const std::vector<RunRecord>& runs() {
    static const std::vector<RunRecord> all = [] {
        std::vector<RunRecord> r(4);
        r[0].id = 1;
        r[0].name = "cnn-seed1";
        r[0].state = "finished";
        r[0].backend = "local";
        r[0].note = "a **markdown** note\nwith two lines";
        r[0].tags = {"baseline", "lr-sweep:2"};
        r[0].starred = true;
        r[0].progress = 1;
        r[0].spend = 0.25;
        r[0].created = kNow - 86400;
        r[0].started = kNow - 86000;
        r[0].finished = kNow - 3600;
        r[0].config = {{"model", {"cnn", NAN}},   {"optimizer.lr", {"0.001", 0.001}},
                       {"hidden[1]", {"64", 64}}, {"augment", {"true", 1}},
                       {"seed", {"1", 1}},        {"val/accuracy", {"x", NAN}}};
        MetricSummary accuracy;
        accuracy.best = accuracy.max = accuracy.last = 0.9;
        accuracy.min = 0.1;
        accuracy.count = accuracy.last_step = 10;
        accuracy.goal = MetricGoal::maximize;
        r[0].summaries = {{"val/accuracy", accuracy}, {"loss", MetricSummary{}}};

        r[1].id = 2;
        r[1].name = "mlp";
        r[1].state = "running";
        r[1].backend = "gpu-box";
        r[1].started = kNow - 60;
        r[1].config = {{"model", {"mlp", NAN}}, {"optimizer.lr", {"auto", NAN}}, {"seed", {"2", 2}}};
        r[1].summaries = {{"val_accuracy", accuracy}};

        r[2].id = 3;
        r[2].name = "";
        r[2].state = "queued";

        r[3].id = 4;
        r[3].name = "old";
        r[3].state = "finished";
        r[3].archived = true;
        r[3].tags = {"baseline"};
        r[3].created = 1;
        r[3].config = {{"model", {"cnn", NAN}}};
        return r;
    }();
    return all;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    QueryError error{12345, "unset"};
    const RunQuery query = RunQuery::parse(text, &error);
    QueryError again;
    const RunQuery second = RunQuery::parse(text, &again);
    FUZZ_CHECK(query.valid() == second.valid() && error.position == again.position && error.message == again.message,
               "two parses of the same text disagree");
    if (!query.valid()) {
        FUZZ_CHECK(!error.message.empty(), "a refused query without a message");
        FUZZ_CHECK(error.position <= size, "an error position past the end of the text");
        FUZZ_CHECK(!query.shows_archived(), "a refused query that shows archived runs");
        for (const RunRecord& run : runs())
            FUZZ_CHECK(!query.matches(run, kNow), "a refused query that matches a run");
        return 0;
    }
    FUZZ_CHECK(error.message.empty() && error.position == 0, "a valid query that leaves an error behind");

    const bool blank = text.find_first_not_of(" \t\n\r\f\v") == std::string_view::npos;
    std::vector<bool> matched;
    for (const RunRecord& run : runs()) {
        const bool match = query.matches(run, kNow);
        FUZZ_CHECK(match == second.matches(run, kNow), "two parses of the same text match differently");
        if (run.archived && !query.shows_archived())
            FUZZ_CHECK(!match, "an archived run matched a query that does not name archived:");
        if (blank)
            FUZZ_CHECK(match == !run.archived, "a blank query that does not match exactly the runs not archived");
        matched.push_back(match);
    }
    if (blank)
        return 0;

    const RunQuery negated = RunQuery::parse("not (" + std::string(text) + "\n)", nullptr);
    if (!negated.valid()) {
        QueryError why;
        RunQuery::parse("not (" + std::string(text) + "\n)", &why);
        FUZZ_CHECK(why.message.find("nested") != std::string::npos,
                   "Q parses but not (Q) does not, below the nesting limit");
        return 0;
    }
    for (size_t i = 0; i < runs().size(); ++i) {
        const bool visible = !runs()[i].archived || query.shows_archived();
        FUZZ_CHECK(negated.matches(runs()[i], kNow) == (visible && !matched[i]),
                   "not (Q) is not the complement of Q over the visible runs");
    }
    return 0;
}
