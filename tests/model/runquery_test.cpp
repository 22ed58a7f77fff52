// The query language (README "Query runs") as a specification: tables of queries over eight hand-made runs with the
// runs each must match, tables of refused queries with where and why, and a check that parsing is total.
#include "runquery.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <vector>

using namespace traindeck;

namespace {

constexpr double kMinute = 60, kHour = 3600, kDay = 86400;
constexpr double kNow = 1796904000;        // 2026-12-10T12:00:00Z: every relative time below counts back from here
constexpr double kDec1 = 1796083200;       // 2026-12-01T00:00:00Z
constexpr double kDec1At1030 = 1796121000; // 2026-12-01T10:30:00Z
constexpr double kNov20 = 1795132800;      // 2026-11-20T00:00:00Z

ConfigValue number(double value, const char* text) { return {text, value}; }
ConfigValue text(const char* value) { return {value, NAN}; }

MetricSummary summary(double best, double last, double min, double max, int64_t last_step, int64_t count,
                      MetricGoal goal) {
    MetricSummary s;
    s.best = best;
    s.last = last;
    s.min = min;
    s.max = max;
    s.last_step = last_step;
    s.count = count;
    s.goal = goal;
    return s;
}

// Ids 1-8. Run 6 is archived. Runs 3 and 5 have not finished (5 has not started). Run 4's learning rate is the text
// "auto", run 8's batch the text "64" and its use_amp the text "true". Run 1 reports "val/accuracy", run 3
// "val_accuracy"; run 7's val/accuracy has no best (no goal).
const std::vector<RunRecord>& runs() {
    static const std::vector<RunRecord> all = [] {
        std::vector<RunRecord> r(8);
        r[0].id = 1;
        r[0].name = "cnn-seed1";
        r[0].state = "finished";
        r[0].backend = "local";
        r[0].tags = {"baseline"};
        r[0].starred = true;
        r[0].progress = 1;
        r[0].spend = 0.5;
        r[0].created = kNow - 3 * kDay;
        r[0].started = kNow - 3 * kDay + 60;
        r[0].finished = kNow - 2 * kDay;
        r[0].config = {{"model", text("cnn")},
                       {"optimizer.lr", number(0.001, "0.001")},
                       {"optimizer.type", text("adamw")},
                       {"hidden[0]", number(128, "128")},
                       {"hidden[1]", number(64, "64")},
                       {"seed", number(1, "1")},
                       {"augment", number(1, "true")},
                       {"batch", number(128, "128")}};
        r[0].summaries = {{"loss", summary(0.25, 0.30, 0.25, 2.3, 1000, 100, MetricGoal::minimize)},
                          {"val/accuracy", summary(0.91, 0.90, 0.1, 0.91, 1000, 10, MetricGoal::maximize)}};

        r[1].id = 2;
        r[1].name = "cnn-seed2";
        r[1].state = "finished";
        r[1].backend = "local";
        r[1].tags = {"baseline", "discarded"};
        r[1].progress = 1;
        r[1].spend = 0.25;
        r[1].created = kNow - kDay;
        r[1].started = kNow - kDay + 30;
        r[1].finished = kNow - 12 * kHour;
        r[1].config = {{"model", text("cnn")},          {"optimizer.lr", number(0.01, "0.01")},
                       {"optimizer.type", text("sgd")}, {"hidden[0]", number(128, "128")},
                       {"hidden[1]", number(32, "32")}, {"seed", number(2, "2")},
                       {"augment", number(0, "false")}, {"batch", number(32, "32")}};
        r[1].summaries = {{"loss", summary(0.4, 0.45, 0.38, 2.2, 500, 50, MetricGoal::minimize)},
                          {"val/accuracy", summary(0.85, 0.84, 0.2, 0.85, 500, 10, MetricGoal::maximize)}};

        r[2].id = 3;
        r[2].name = "mlp-seed1";
        r[2].state = "running";
        r[2].backend = "gpu-box";
        r[2].progress = 0.4;
        r[2].spend = 1.5;
        r[2].created = kNow - 3 * kHour;
        r[2].started = kNow - 2 * kHour;
        r[2].config = {
            {"model", text("mlp")},   {"optimizer.lr", number(0.1, "0.1")}, {"hidden[0]", number(256, "256")},
            {"seed", number(1, "1")}, {"batch", number(64, "64")},          {"use_amp", number(1, "true")}};
        r[2].summaries = {{"loss", summary(0.6, 0.6, 0.6, 2.1, 200, 20, MetricGoal::minimize)},
                          {"val_accuracy", summary(0.78, 0.78, 0.3, 0.78, 200, 5, MetricGoal::maximize)}};

        r[3].id = 4;
        r[3].name = "mlp-seed2";
        r[3].state = "failed";
        r[3].reason = "out of memory";
        r[3].backend = "gpu-box";
        r[3].tags = {"discarded"};
        r[3].progress = 0.1;
        r[3].spend = 0.75;
        r[3].created = kNow - 5 * kHour;
        r[3].started = kNow - 5 * kHour + 10;
        r[3].finished = kNow - 4 * kHour;
        r[3].config = {{"model", text("mlp")}, {"optimizer.lr", text("auto")}, {"seed", number(2, "2")}};
        r[3].summaries = {{"loss", summary(1.2, 1.5, 1.1, 2.5, 300, 30, MetricGoal::minimize)}};

        r[4].id = 5;
        r[4].name = "queued-run";
        r[4].state = "queued";
        r[4].backend = "slurm";
        r[4].created = kNow - 10 * kMinute;
        r[4].config = {{"model", text("transformer")}, {"seed", number(3, "3")}, {"arch", text("resnet-50")}};

        r[5].id = 6;
        r[5].name = "old-cnn";
        r[5].state = "finished";
        r[5].backend = "local";
        r[5].archived = true;
        r[5].tags = {"baseline", "old"};
        r[5].progress = 1;
        r[5].created = kNov20;
        r[5].started = kNov20 + 100;
        r[5].finished = kNov20 + 3600;
        r[5].config = {{"model", text("cnn")}, {"optimizer.lr", number(0.001, "0.001")}, {"seed", number(1, "1")}};
        r[5].summaries = {{"val/accuracy", summary(0.95, 0.95, 0.1, 0.95, 100, 10, MetricGoal::maximize)}};

        r[6].id = 7;
        r[6].name = "ablation/no-dropout";
        r[6].state = "finished";
        r[6].backend = "slurm";
        r[6].tags = {"ablation"};
        r[6].note = "Works **well**, see notebook";
        r[6].starred = true;
        r[6].progress = 1;
        r[6].spend = 2;
        r[6].created = kDec1At1030;
        r[6].started = kDec1At1030 + 60;
        r[6].finished = kDec1At1030 + 60 + 2 * kHour;
        r[6].config = {{"model", text("cnn")},        {"optimizer.lr", number(0.005, "0.005")},
                       {"seed", number(3, "3")},      {"data.path", text("/data/fashion")},
                       {"name", text("config-name")}, {"best.trick", text("yes")}};
        r[6].summaries = {{"val/accuracy", summary(NAN, 0.88, 0.5, 0.9, 300, 3, MetricGoal::none)}};

        r[7].id = 8;
        r[7].name = "cnn-seed3";
        r[7].state = "cancelled";
        r[7].backend = "local";
        r[7].tags = {"lr-sweep:2"};
        r[7].progress = 0.3;
        r[7].spend = 0.05;
        r[7].created = kDec1;
        r[7].started = kDec1 + 60;
        r[7].finished = kDec1 + 600;
        r[7].config = {{"model", text("CNN")},          {"optimizer.lr", number(0.005, "0.005")},
                       {"hidden[0]", number(64, "64")}, {"seed", number(3, "3")},
                       {"batch", text("64")},           {"use_amp", text("true")}};
        r[7].summaries = {{"loss", summary(0.35, 0.36, 0.35, 1.9, 1000, 100, MetricGoal::minimize)},
                          {"val/accuracy", summary(0.89, 0.89, 0.2, 0.89, 1000, 10, MetricGoal::maximize)}};
        return r;
    }();
    return all;
}

using Ids = std::set<int64_t>;
const Ids kNotArchived = {1, 2, 3, 4, 5, 7, 8};

Ids matching(const std::string& text) {
    QueryError error;
    const RunQuery query = RunQuery::parse(text, &error);
    EXPECT_TRUE(query.valid()) << "'" << text << "' refused at " << error.position << ": " << error.message;
    Ids ids;
    for (const RunRecord& run : runs())
        if (query.matches(run, kNow))
            ids.insert(run.id);
    return ids;
}

struct Case {
    std::string query;
    Ids runs;
};

void expect_cases(const std::vector<Case>& cases) {
    for (const Case& c : cases)
        EXPECT_EQ(matching(c.query), c.runs) << "query: " << c.query;
}

std::string repeated(const std::string& piece, int times) {
    std::string text;
    for (int i = 0; i < times; ++i)
        text += piece;
    return text;
}

struct Refusal {
    std::string query;
    size_t position;
    std::string message; // a part of the message
};

void expect_refusals(const std::vector<Refusal>& refusals) {
    for (const Refusal& r : refusals) {
        QueryError error;
        const RunQuery query = RunQuery::parse(r.query, &error);
        EXPECT_FALSE(query.valid()) << "query: " << r.query;
        EXPECT_EQ(error.position, r.position) << "query: " << r.query << "\nmessage: " << error.message;
        EXPECT_NE(error.message.find(r.message), std::string::npos)
            << "query: " << r.query << "\nmessage: " << error.message << "\nexpected in it: " << r.message;
    }
}

} // namespace

TEST(RunQuery, TheFixtureIsWhatTheTablesAssume) {
    ASSERT_EQ(runs().size(), 8u);
    for (size_t i = 0; i < runs().size(); ++i)
        EXPECT_EQ(runs()[i].id, static_cast<int64_t>(i + 1));
    EXPECT_EQ(std::count_if(runs().begin(), runs().end(), [](const RunRecord& r) { return r.archived; }), 1);
}

TEST(RunQuery, AnEmptyQueryMatchesEveryRunThatIsNotArchived) {
    expect_cases({
        {"", kNotArchived},
        {"  \t\n ", kNotArchived},
    });
    EXPECT_FALSE(RunQuery::parse("", nullptr).shows_archived());
}

TEST(RunQuery, ComparisonsOnConfigKeys) {
    expect_cases({
        {"model == cnn", {1, 2, 7}}, // a bare word is text; run 8's "CNN" differs in case
        {"model = \"cnn\"", {1, 2, 7}},
        {"model == 'cnn'", {1, 2, 7}},
        {"model != cnn", {3, 4, 5, 8}},
        {"optimizer.type == adamw", {1}},
        {"hidden[0] == 128", {1, 2}},
        {"hidden[1] < 64", {2}},
        {"hidden[1]==64", {1}},
        {"data.path == \"/data/fashion\"", {7}},
        {"arch == resnet-50", {5}}, // '-' before a digit continues a bare word
        {"seed != 1", {2, 4, 5, 7, 8}},
        {"seed>-2", {1, 2, 3, 4, 5, 7, 8}},
        {"model==cnn and seed==1", {1}},
    });
}

TEST(RunQuery, NumbersCompareAsNumbersAndAnythingElseAsText) {
    expect_cases({
        {"optimizer.lr < 0.01", {1, 7, 8}}, // run 4's "auto" < "0.01" is false as text
        {"optimizer.lr <= 0.01", {1, 2, 7, 8}},
        {"optimizer.lr > 0.01", {3, 4}}, // "auto" > "0.01" as text
        {"optimizer.lr >= 0.1", {3, 4}},
        {"optimizer.lr == auto", {4}},
        {"optimizer.lr == 1e-3", {1}},
        {"optimizer.lr < .002", {1}},
        {"optimizer.lr == \"0.005\"", {7, 8}}, // a quoted value compares with the config's text
        {"hidden[1] > -1.5e1", {1, 2}},
        {"batch < 100", {2, 3}}, // run 8's batch is the text "64", and "64" < "100" is false as text
        {"batch == 64", {3, 8}}, // 64 == 64 for run 3, "64" == "64" for run 8
        {"batch == \"64\"", {3, 8}},
        {"name < \"b\"", {7}},      // built-in text fields compare as text: "ablation/..." < "b"
        {"state >= \"q\"", {3, 5}}, // running, queued
        {"id >= 7", {7, 8}},
        {"id == \"3\"", {3}}, // a built-in number as text: its shortest form
        {"progress >= 1", {1, 2, 7}},
        {"spend > 1", {3, 7}},
        {"reason == \"\"", {1, 2, 3, 5, 7, 8}},
        {"reason == 'out of memory'", {4}},
    });
}

TEST(RunQuery, TrueAndFalseAreOneAndZeroOrTheirText) {
    expect_cases({
        {"augment == true", {1}},
        {"augment == FALSE", {2}},
        {"augment = 1", {1}},
        {"augment == \"true\"", {1}},
        {"use_amp == true", {3, 8}}, // run 3 holds the number 1, run 8 the text "true"
        {"use_amp == 1", {3}},
    });
}

TEST(RunQuery, BuiltInFieldsComeFirstThenSummariesThenConfig) {
    expect_cases({
        {"name == \"cnn-seed1\"", {1}},
        {"config.name == config-name", {7}}, // config. reaches a key that a built-in field hides
        {"config.best.trick == yes", {7}},   // and one that a summary field hides
        {"config.model == cnn", {1, 2, 7}},
    });
}

TEST(RunQuery, AFieldTheRunLacksMakesTheConditionFalse) {
    expect_cases({
        {"augment != true", {2}}, // runs without augment are neither equal nor unequal
        {"not augment == true", {2, 3, 4, 5, 7, 8}},
        {"hidden[1] != 64", {2}},
        {"not (hidden[1] == 64)", {2, 3, 4, 5, 7, 8}},
        {"not finished > 0", {3, 5}}, // a time of 0 is "not yet"
        {"data.path ~ \"\"", {7}},
        {"not best.val_accuracy > 0.5", {4, 5, 7}}, // run 7's best is NaN
    });
}

TEST(RunQuery, SummaryFieldsFindTheirSeriesWithSlashAndUnderscoreAlike) {
    expect_cases({
        {"best.val_accuracy > 0.88", {1, 8}}, // runs 1 and 8 report "val/accuracy"
        {"best.val/accuracy > 0.8", {1, 2, 8}},
        {"best.val/accuracy < 0.8", {3}}, // run 3 reports "val_accuracy"
        {"last.val_accuracy >= 0.88", {1, 7, 8}},
        {"min.loss < 0.3", {1}},
        {"max.loss > 2", {1, 2, 3, 4}},
        {"count.val_accuracy == 10", {1, 2, 8}},
        {"last_step.loss >= 1000", {1, 8}},
        {"best.val_accuracy ~ \"^0\\.9\"", {1}},
    });
}

TEST(RunQuery, AndBindsTighterThanOrAndNotTighterThanAnd) {
    expect_cases({
        {"model == cnn or model == mlp and seed == 2", {1, 2, 4, 7}},
        {"(model == cnn or model == mlp) and seed == 2", {2, 4}},
        {"not model == cnn and seed == 1", {3}},
        {"not (model == cnn and seed == 1)", {2, 3, 4, 5, 7, 8}},
        {"not not tag:baseline", {1, 2}},
        {"((seed == 1))", {1, 3}},
        {"model == cnn and (seed == 1 or seed == 3)", {1, 7}},
        {"seed == 1 OR seed == 2", {1, 2, 3, 4}},
        {"model == cnn AND NOT tag:baseline", {7}},
        {"optimizer.lr < 0.01 and model == \"cnn\" and not tag:discarded or name ~ \"seed.*\"", {1, 2, 3, 4, 7, 8}},
    });
}

TEST(RunQuery, InListsAreAnyOfTheirValues) {
    expect_cases({
        {"seed in [1, 3]", {1, 3, 5, 7, 8}},
        {"model in [mlp, \"transformer\"]", {3, 4, 5}},
        {"seed IN [2]", {2, 4}},
        {"optimizer.lr in [0.001, auto]", {1, 4}},
        {"seed in[1,2]", {1, 2, 3, 4}},
        {"not seed in [1, 2]", {5, 7, 8}},
        {"not seed in []", kNotArchived}, // an empty list holds nothing
    });
    EXPECT_EQ(matching("seed in []"), Ids{});
}

TEST(RunQuery, RegularExpressionsSearchTheTextForm) {
    expect_cases({
        {"name ~ \"seed.*\"", {1, 2, 3, 4, 8}},
        {"name ~ \"^cnn\"", {1, 2, 8}},
        {"name ~ 'seed[0-9]$'", {1, 2, 3, 4, 8}},
        {"name ~ \"^[a-z]+/\"", {7}},
        {"note ~ \"\\*\\*well\\*\\*\"", {7}}, // a backslash the string does not know stays for the regex
        {"model ~ \"^[Cc][Nn][Nn]$\"", {1, 2, 7, 8}},
        {"optimizer.lr ~ \"^0\\.00\"", {1, 7, 8}}, // a config number's own text
        {"spend ~ \"^0\\.[0-9]5$\"", {2, 4, 8}},   // a built-in number printed shortest: 0.25, 0.75, 0.05
        {"id ~ \"^[2-4]$\"", {2, 3, 4}},
        {"reason ~ \"memory\"", {4}},
    });
}

// Plain patterns ("seed", "^cnn", "seed.*") are matched without std::regex: they must find what std::regex finds.
TEST(RunQuery, PlainPatternsFindWhatTheRegexFinds) {
    const auto quoted = [](const std::string& pattern) {
        std::string text = "name ~ \"";
        for (char c : pattern)
            text += c == '\\' || c == '"' ? std::string{'\\', c} : std::string{c};
        return text + "\"";
    };
    std::vector<std::string> patterns = {"seed", "^cnn", "seed1$", "^cnn-seed1$", "seed.*", ".*seed", "^.*",
                                         ".*$",  "\\.*", "\\\\.*", "a\\$",        "\\^a",   "^",      "$",
                                         "^$",   "",     "-s",     "\\-s",        ".*\\.",  "d1.*$",  "^c.*"};
    const std::string alphabet = "ab.^$*\\-";
    std::mt19937 random(7);
    for (int i = 0; i < 3000; ++i) {
        std::string pattern;
        for (size_t k = random() % 6; k > 0; --k)
            pattern += alphabet[random() % alphabet.size()];
        patterns.push_back(pattern);
    }
    const std::string texts[] = {"",   "a",    "b",   "ab", "ba",      "a.b",      "a$",
                                 "^a", "a\\b", "a*b", "-a", "aab\nba", "cnn-seed1"};
    int compared = 0;
    for (const std::string& pattern : patterns) {
        std::regex reference;
        try {
            reference.assign(pattern, std::regex::ECMAScript);
        } catch (const std::regex_error&) {
            continue;
        }
        const RunQuery query = RunQuery::parse(quoted(pattern), nullptr);
        if (!query.valid())
            continue; // back-references, which the query refuses
        for (const std::string& name : texts) {
            RunRecord run;
            run.name = name;
            EXPECT_EQ(query.matches(run, kNow), std::regex_search(name, reference))
                << "pattern: " << pattern << "\nname: " << name;
            ++compared;
        }
    }
    EXPECT_GT(compared, 5000);
}

TEST(RunQuery, PrefixesMatchTagsStateBackendAndStar) {
    expect_cases({
        {"tag:baseline", {1, 2}}, // run 6 has it too, but is archived
        {"tag:\"lr-sweep:2\"", {8}},
        {"tag:lr-sweep:2", {8}},
        {"TAG:discarded", {2, 4}},
        {"not tag:discarded", {1, 3, 5, 7, 8}},
        {"state:running", {3}},
        {"state:'finished'", {1, 2, 7}},
        {"backend:gpu-box", {3, 4}},
        {"backend:slurm or backend:local", {1, 2, 5, 7, 8}},
        {"starred:true", {1, 7}},
        {"starred:false", {2, 3, 4, 5, 8}},
        {"(tag:baseline)", {1, 2}},
    });
}

TEST(RunQuery, ArchivedRunsShowOnlyWhenTheQueryAsks) {
    expect_cases({
        {"tag:baseline", {1, 2}},
        {"archived:true", {6}},
        {"archived:false", kNotArchived},
        {"archived:any", {1, 2, 3, 4, 5, 6, 7, 8}},
        {"archived:ANY and tag:baseline", {1, 2, 6}},
        {"archived:true or tag:baseline", {1, 2, 6}},
        {"not archived:true and model == cnn", {1, 2, 7}},
    });
    EXPECT_TRUE(RunQuery::parse("archived:any", nullptr).shows_archived());
    EXPECT_TRUE(RunQuery::parse("seed == 1 or not archived:false", nullptr).shows_archived());
    EXPECT_FALSE(RunQuery::parse("tag:archived", nullptr).shows_archived());
    EXPECT_FALSE(RunQuery::parse("archived == 1", nullptr).shows_archived()); // a config key, not the prefix
}

TEST(RunQuery, RelativeTimesCountBackFromNow) {
    expect_cases({
        {"started > -1d", {2, 3, 4}},
        {"started>-1d", {2, 3, 4}}, // '-' after '>' starts the time, it does not continue "started"
        {"created < -2d", {1, 7, 8}},
        {"created >= -3h", {3, 5}}, // run 3 was created exactly 3 h ago
        {"created > -30m", {5}},
        {"created > -700s", {5}},
        {"created < -45s", kNotArchived},
        {"created < -1w", {7, 8}},
        {"archived:any and created < -2w", {6}},
        {"created > -1w and created < -1d", {1}}, // run 2 was created exactly 1 d ago
        {"finished > -1d", {2, 4}},
        {"duration > 1h", {1, 2, 3, 7}}, // a running run's duration runs to now; 7200 s for run 3
        {"duration > 2h", {1, 2}},
        {"duration < 10m", {8}},
        {"duration < 3600", {4, 8}},
    });
}

TEST(RunQuery, IsoDatesAreUtc) {
    expect_cases({
        {"created < 2026-12-02", {7, 8}},
        {"created == 2026-12-01T10:30", {7}},
        {"created < 2026-12-01T10:30", {8}},
        {"created == 2026-12-01T00:00:00Z", {8}},
        {"archived:any and created < 2026-12-01", {6}},
        {"started >= 2026-12-01T10:31 and started < 2026-12-07", {7}},
    });
}

TEST(RunQuery, ErrorsSayWhereAndWhatWasExpected) {
    expect_refusals({
        {"optimizer.lr <", 14, "expected a value after '<'"},
        {"optimizer.lr < )", 15, "expected a value after '<'"},
        {"seed =", 6, "expected a value after '='"},
        {"seed == 1 and (model == cnn", 27, "expected ')' to close the '(' at 14"},
        {"tga:x", 0, "unknown prefix 'tga:' (known: tag:, state:, backend:, archived:, starred:)"},
        {"seed == 1 or nottag:x", 13, "unknown prefix 'nottag:'"},
        {"name == \"abc", 8, "unterminated string"},
        {"name == 'it\\'s", 8, "unterminated string"},
        {"name ~ \"seed(\"", 7, "'~' needs a quoted regular expression: "},
        {"name ~ seed", 7, "'~' needs a quoted regular expression"},
        {"name ~ \"(a)\\1\"", 7, "back-references"},
        {"name ~ \"\\3333333333333333333333\"", 7, "back-references"}, // libstdc++ would overflow a long on it
        {"name ~ \"a{1234567}\"", 7, "repetition counts above 99999"},
        {"seed == 1 seed == 2", 10, "expected 'and', 'or' or the end of the query"},
        {"seed == 1)", 9, "expected 'and', 'or' or the end of the query"},
        {"seed == 1 and", 13, "expected a condition after 'and'"},
        {"seed == 1 or or", 13, "expected a condition after 'or'"},
        {"or seed == 1", 0, "expected a condition"},
        {"not", 3, "expected a condition after 'not'"},
        {"()", 1, "expected a condition after '('"},
        {"seed 1", 5, "expected an operator (==, !=, <, <=, >, >=, in or ~) after 'seed'"},
        {"seed", 4, "expected an operator"},
        {"seed in 1", 8, "expected '[' after 'in'"},
        {"seed in [1, 2", 13, "expected ',' or ']' to close the '[' at 8"},
        {"seed in [1,]", 11, "expected a value after ','"},
        {"seed in [and]", 9, "expected a value after '['"},
        {"archived:maybe", 9, "archived: takes true, false or any"},
        {"starred:any", 8, "starred: takes true or false"},
        {"tag:", 4, "expected a value after 'tag:'"},
        {"tag: x", 4, "expected a value after 'tag:'"},
        {"seed == 1 && seed == 2", 10, "write 'and'"},
        {"seed == 1 || seed == 2", 10, "write 'or'"},
        {"!tag:x", 0, "write 'not'"},
        {"seed == 3x3", 8, "'3x3' is not a number"},
        {"seed == 1.2.3", 8, "'1.2.3' is not a number"},
        {"started > 2days", 10, "is not a number"},
        {"seed == 1e999", 8, "out of the range"},
        {"created > 2026-13-01", 10, "no such date"},
        {"created > 2026-02-29", 10, "no such date"},
        {"created > 2026-12-01T25:00", 10, "no such time of day"},
        {"created > 2026-12", 10, "expected a date such as 2026-12-01"},
        {"model == gpt:2", 9, "quote a value that holds ':'"},
        {"in == 3", 0, "'in' is a keyword"},
        {"seed == 1 # comment", 10, "unexpected '#'"},
        {"seed == -", 8, "unexpected '-'"},
        {"name == caf\xc3\xa9", 11, "unexpected byte 0xc3"},
        {repeated("(", 101) + "seed == 1" + repeated(")", 101), 100, "more than 100 nested"},
        {repeated("not ", 101) + "seed == 1", 400, "more than 100 nested 'not' and '('"},
    });
}

TEST(RunQuery, DeepButBoundedNestingParses) {
    EXPECT_EQ(matching(repeated("(", 100) + "seed == 2" + repeated(")", 100)), Ids({2, 4}));
    EXPECT_EQ(matching(repeated("not ", 100) + "seed == 2"), Ids({2, 4})); // an even number of nots
    EXPECT_EQ(matching(repeated("not (", 50) + "seed == 2" + repeated(")", 50)), Ids({2, 4}));
    // Long chains of and/or are flat lists, not deep trees.
    EXPECT_EQ(matching("seed == 2" + repeated(" or seed == 2", 5000)), Ids({2, 4}));
}

TEST(RunQuery, AnInvalidQueryMatchesNothingAndSuccessClearsTheError) {
    QueryError error{3, "stale"};
    const RunQuery bad = RunQuery::parse("seed ==", &error);
    EXPECT_FALSE(bad.valid());
    EXPECT_FALSE(bad.shows_archived());
    EXPECT_TRUE(std::none_of(runs().begin(), runs().end(), [&](const RunRecord& r) { return bad.matches(r, kNow); }));
    const RunQuery good = RunQuery::parse("seed == 1", &error);
    EXPECT_TRUE(good.valid());
    EXPECT_EQ(error.position, 0u);
    EXPECT_EQ(error.message, "");
    EXPECT_FALSE(RunQuery::parse("seed ==", nullptr).valid()); // no error wanted: none written
    RunQuery copy = good; // NOLINT(performance-unnecessary-copy-initialization): the copy is what this checks
    EXPECT_TRUE(copy.matches(runs()[0], kNow));
}

TEST(RunQuery, ParsingIsTotalOverRandomText) {
    // Bytes biased towards the language's own characters, so that many inputs get past the first token.
    const std::string alphabet = "abcdefginorstxyz_.-/[]()\"'\\:,=!<>~ 0123456789eTdhmswtag:state:archived:";
    std::mt19937 random(12);
    int valid = 0;
    for (int i = 0; i < 5000; ++i) {
        std::string text;
        const size_t length = random() % 48;
        for (size_t k = 0; k < length; ++k)
            text += random() % 8 == 0 ? static_cast<char>(random() % 256) : alphabet[random() % alphabet.size()];
        QueryError error;
        const RunQuery query = RunQuery::parse(text, &error);
        if (query.valid()) {
            ++valid;
            for (const RunRecord& run : runs())
                (void)query.matches(run, kNow);
        } else {
            EXPECT_LE(error.position, text.size()) << text;
            EXPECT_FALSE(error.message.empty()) << text;
        }
    }
    // Words from the query vocabulary, which parse far more often than random bytes.
    const char* const words[] = {"seed",   "==",         "1",    "and", "or", "not", "(",           ")",   "tag:x",
                                 "in",     "[",          "]",    ",",   "~",  "\"a", "\"",          "-2d", "<",
                                 "best.x", "2026-12-01", "true", "'b'", "!=", ">=",  "archived:any"};
    for (int i = 0; i < 5000; ++i) {
        std::string text;
        const size_t length = random() % 10;
        for (size_t k = 0; k < length; ++k)
            text += std::string(words[random() % std::size(words)]) + (random() % 3 ? " " : "");
        QueryError error;
        const RunQuery query = RunQuery::parse(text, &error);
        if (query.valid()) {
            ++valid;
            for (const RunRecord& run : runs())
                (void)query.matches(run, kNow);
        } else {
            EXPECT_LE(error.position, text.size()) << text;
            EXPECT_FALSE(error.message.empty()) << text;
        }
    }
    EXPECT_GT(valid, 100); // the check ran on queries that parse, not only on refusals
}

// Prints (does not assert) how long matching takes: 10,000 runs x 20 config keys x 5 summaries, the README's query.
TEST(RunQuerySpeed, TenThousandRuns) {
    std::vector<RunRecord> many(10000);
    for (size_t i = 0; i < many.size(); ++i) {
        RunRecord& run = many[i];
        run.id = static_cast<int64_t>(i + 1);
        run.name = (i % 3 ? "cnn-seed" : "mlp-seed") + std::to_string(i % 5);
        run.state = "finished";
        run.tags = {i % 7 ? "baseline" : "discarded"};
        run.created = kNow - static_cast<double>(i) * kMinute;
        run.started = run.created + 1;
        for (int k = 0; k < 18; ++k)
            run.config["key" + std::to_string(k)] = number(k + static_cast<double>(i % 10), "x");
        run.config["optimizer.lr"] = number(0.001 * static_cast<double>(i % 20), "0.0x");
        run.config["model"] = text(i % 2 ? "cnn" : "mlp");
        for (const char* series : {"loss", "val/accuracy", "lr", "grad_norm", "samples_per_s"})
            run.summaries[series] = summary(0.5, 0.5, 0.1, 0.9, 100, 10, MetricGoal::maximize);
    }
    const std::string queries[] = {
        "optimizer.lr < 0.01 and model == \"cnn\" and not tag:discarded or name ~ \"seed.*\"",
        "optimizer.lr < 0.01 and model == \"cnn\" and not tag:discarded and best.val_accuracy > 0.4",
        "key17 in [20, 21, 22] or started > -2d",
        "model == cnn",
        "name ~ \"seed.*\"",
    };
    for (const std::string& text : queries) {
        const RunQuery query = RunQuery::parse(text, nullptr);
        ASSERT_TRUE(query.valid()) << text;
        std::vector<double> times;
        size_t matched = 0;
        for (int round = 0; round < 7; ++round) {
            const auto start = std::chrono::steady_clock::now();
            matched = 0;
            for (const RunRecord& run : many)
                matched += query.matches(run, kNow);
            times.push_back(
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
        }
        std::sort(times.begin(), times.end());
        std::printf("[ timing   ] 10,000 runs, median of 7: %.2f ms (%zu match): %s\n", times[3], matched,
                    text.c_str());
        EXPECT_GT(matched, 0u);
    }
}
