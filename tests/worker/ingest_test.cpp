// The line → event ingest, on bytes alone: what each kind of line becomes, and what is repaired and said.
#include "ingest.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

using namespace traindeck;
using namespace traindeck::worker;
using nlohmann::json;

namespace {

struct Event {
    std::string type, data;
};

struct Collected {
    std::vector<Event> events;
    int64_t warnings = 0;
    size_t consumed = 0;
};

Collected ingest(OutputStream stream, std::string_view text, int64_t warnings = 0, bool at_end = false) {
    Collected out;
    out.warnings = warnings;
    out.consumed = ingest_text(
        stream, text, out.warnings,
        [&](const char* type, std::string_view data) {
            out.events.push_back({type, std::string(data)});
        },
        at_end);
    return out;
}

} // namespace

TEST(Ingest, AMetricsLineIsStoredAsItCame) {
    const std::string line = R"({"step": 3, "loss": 0.25})";
    const Collected out = ingest(OutputStream::metrics, line + "\n");
    ASSERT_EQ(out.events.size(), 1u);
    EXPECT_EQ(out.events[0].type, "record");
    EXPECT_EQ(out.events[0].data, line); // byte for byte, not re-serialised
    EXPECT_EQ(out.consumed, line.size() + 1);
    EXPECT_EQ(out.warnings, 0);
}

TEST(Ingest, InvalidUtf8InAMetricsLineIsRepairedStoredAndCounted) {
    const Collected out = ingest(OutputStream::metrics, "{\"note\": \"a\xff" "b\", \"step\": 1}\n", 4);
    ASSERT_EQ(out.events.size(), 2u);
    EXPECT_EQ(out.events[0].type, "record");
    const json record = json::parse(out.events[0].data);
    EXPECT_EQ(record["note"], "a\xEF\xBF\xBD" "b"); // U+FFFD
    EXPECT_EQ(record["step"], 1);
    EXPECT_EQ(out.events[1].type, "warning");
    const json warning = json::parse(out.events[1].data);
    EXPECT_EQ(warning["message"], "metrics line repaired: 1 invalid UTF-8 sequence(s) replaced by U+FFFD");
    EXPECT_EQ(warning["stream"], "metrics");
    EXPECT_EQ(warning["count"], 5);
    EXPECT_EQ(out.warnings, 5);
}

TEST(Ingest, ANumberNoDoubleHoldsBecomesNull) {
    const Collected out = ingest(OutputStream::metrics, "{\"loss\": 1e999, \"step\": 2}\n");
    ASSERT_EQ(out.events.size(), 2u);
    const json record = json::parse(out.events[0].data);
    EXPECT_TRUE(record["loss"].is_null());
    EXPECT_EQ(record["step"], 2);
    EXPECT_NE(json::parse(out.events[1].data)["message"].get<std::string>().find("1 number(s) out of range"),
              std::string::npos);
}

TEST(Ingest, ALineThatIsNotAnObjectIsSkippedWithAWarning) {
    const Collected out = ingest(OutputStream::metrics, "[1, 2]\nloss=0.3\n");
    ASSERT_EQ(out.events.size(), 2u);
    for (const Event& event : out.events) {
        EXPECT_EQ(event.type, "warning");
        EXPECT_EQ(json::parse(event.data)["message"], "metrics line is not a JSON object; skipped");
    }
    EXPECT_EQ(json::parse(out.events[1].data)["line"], "loss=0.3");
    EXPECT_EQ(out.warnings, 2);
}

TEST(Ingest, StdoutCarriesRecordsAfterTheProtocolPrefixAndLogsOtherwise) {
    const Collected out = ingest(OutputStream::stdout_log, "epoch 1\n@traindeck {\"step\": 9}\r\n");
    ASSERT_EQ(out.events.size(), 2u);
    EXPECT_EQ(out.events[0].type, "log");
    EXPECT_EQ(json::parse(out.events[0].data), (json{{"stream", "stdout"}, {"line", "epoch 1"}}));
    EXPECT_EQ(out.events[1].type, "record");
    EXPECT_EQ(out.events[1].data, "{\"step\": 9}"); // prefix and \r gone
    // On stderr the prefix means nothing.
    const Collected err = ingest(OutputStream::stderr_log, "@traindeck {\"step\": 9}\n");
    ASSERT_EQ(err.events.size(), 1u);
    EXPECT_EQ(err.events[0].type, "log");
    EXPECT_EQ(json::parse(err.events[0].data)["stream"], "stderr");
}

TEST(Ingest, BlankMetricsLinesRecordNothingButAreConsumed) {
    const Collected out = ingest(OutputStream::metrics, "\n\r\n");
    EXPECT_TRUE(out.events.empty());
    EXPECT_EQ(out.consumed, 3u);
}

TEST(Ingest, AnUnfinishedLineWaitsForItsNewline) {
    const std::string text = "{\"step\": 1}\n{\"step\": 2";
    const Collected out = ingest(OutputStream::metrics, text);
    ASSERT_EQ(out.events.size(), 1u);
    EXPECT_EQ(out.consumed, 12u); // the next read starts at {"step": 2
}

TEST(Ingest, AtAStreamsEndAnUnfinishedLineIsALine) {
    const std::string text = "{\"step\": 1}\n{\"step\": 2}";
    const Collected out = ingest(OutputStream::metrics, text, 0, true);
    ASSERT_EQ(out.events.size(), 2u);
    EXPECT_EQ(out.events[1].data, "{\"step\": 2}");
    EXPECT_EQ(out.consumed, text.size());
    // Nothing left, nothing made up.
    EXPECT_EQ(ingest(OutputStream::metrics, "{\"step\": 1}\n", 0, true).events.size(), 1u);
    EXPECT_EQ(ingest(OutputStream::metrics, "", 0, true).consumed, 0u);
}

TEST(Ingest, AnAbsurdlyLongLineIsCutAndItsLogEventTruncated) {
    const std::string text(kMaxLine + 10, 'x'); // no newline at all
    const Collected out = ingest(OutputStream::stderr_log, text);
    EXPECT_EQ(out.consumed, kMaxLine);
    ASSERT_EQ(out.events.size(), 1u);
    const json log = json::parse(out.events[0].data);
    EXPECT_EQ(log["line"].get<std::string>().size(), kMaxLogText);
    EXPECT_EQ(log["truncated_bytes"], kMaxLine - kMaxLogText);
}

TEST(Ingest, InvalidUtf8InALogLineBecomesReplacementCharacters) {
    const Collected out = ingest(OutputStream::stderr_log, "bad \xff\xfe bytes\n");
    ASSERT_EQ(out.events.size(), 1u);
    const json log = json::parse(out.events[0].data); // still valid JSON
    EXPECT_EQ(log["line"], "bad \xEF\xBF\xBD\xEF\xBF\xBD bytes");
}
