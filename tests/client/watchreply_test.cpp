// A worker's watch reply read the fast way (each job's events cut out of the text, as the worker wrote them) and the
// old way (nlohmann): which replies take which way, and that both say the same of a reply. tests/fuzz/watchreply
// checks the same on random bytes.
#include "watchreply.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>
#include <random>
#include <string>

using namespace traindeck::client;
using nlohmann::json;

namespace {

std::map<std::string, WatchedJob> by_id(const std::vector<WatchedJob>& jobs) {
    std::map<std::string, WatchedJob> map;
    for (const WatchedJob& job : jobs)
        map[job.id] = job;
    return map;
}

} // namespace

TEST(WatchReply, EachJobsEventsAreCutFromTheReplyAsTheWorkerWroteThem) {
    const std::string a_events =
        R"([{"seq":4,"time":1.5,"type":"record","data":{"type":"metric","step":4,"loss":0.25}} ,)"
        "\n  "
        R"({"seq":5,"type":"log","data":{"line":"caf\u00e9 \"quoted\" ]}"}}])";
    const std::string body = R"({ "jobs" : {"a":{"state":"running","events":)" + a_events +
                             " \n,\"next\":5},\"b\":{\"events\":[ ],\"next\":9,\"state\":\"succeeded\"},"
                             "\"c\":{\"next\":2}},\"missing\":[] }";
    const auto fast = read_watch_reply(body);
    ASSERT_TRUE(fast);
    const auto jobs = by_id(*fast);
    ASSERT_EQ(jobs.size(), 3u);
    EXPECT_EQ(jobs.at("a").events, a_events); // byte for byte, the whitespace inside kept, the trailing cut
    EXPECT_EQ(jobs.at("a").count, 2u);
    EXPECT_EQ(jobs.at("a").next, 5);
    EXPECT_EQ(jobs.at("a").state, "running");
    EXPECT_EQ(jobs.at("b").events, "[ ]");
    EXPECT_EQ(jobs.at("b").count, 0u);
    EXPECT_EQ(jobs.at("b").state, "succeeded");
    EXPECT_EQ(jobs.at("c").events, "[]"); // no events key: none
    EXPECT_EQ(jobs.at("c").next, 2);
    EXPECT_EQ(jobs.at("c").state, "");
    // And nlohmann's reading says the same.
    const auto slow = by_id(watched_jobs_of(json::parse(body)["jobs"]));
    ASSERT_EQ(slow.size(), 3u);
    for (const auto& [id, job] : jobs) {
        EXPECT_EQ(json::parse(job.events), json::parse(slow.at(id).events)) << id;
        EXPECT_EQ(job.next, slow.at(id).next) << id;
        EXPECT_EQ(job.state, slow.at(id).state) << id;
        EXPECT_EQ(job.count, slow.at(id).count) << id;
    }
}

TEST(WatchReply, AnyOtherShapeIsLeftToNlohmann) {
    const char* const others[] = {
        R"({"jobs":{"a":{"events":[{"seq":1,"data":{"loss":1e999}}],"next":1}}})",    // beyond a double
        R"({"jobs":{"a":{"events":[{"seq":1,"data":{"line":"\ud800"}}],"next":1}}})", // a lone surrogate
        "{\"jobs\":{\"a\":{\"events\":[{\"line\":\"\xff\"}],\"next\":1}}}",           // invalid UTF-8
        R"({"jobs":{"a":{"events":[{"seq":7}],"state":"running"}}})",                 // no next: the seqs say
        R"({"jobs":{"a":{"events":[],"next":1.0}}})",                                 // next not an integer
        R"({"jobs":{"a":{"events":[],"next":18446744073709551615}}})",                // next past int64
        R"({"jobs":{"a":{"events":[],"next":1},"a":{"events":[],"next":2}}})",        // a job twice
        R"({"jobs":{"a":{"events":[],"events":[{"seq":3}],"next":3}}})",              // a key twice
        R"({"jobs":{"a":{"events":{},"next":1}}})",                                   // events not an array
        R"({"jobs":{"a":{"events":[],"next":1,"state":7}}})",                         // a state not a string
        R"({"jobs":{"a":[]}})",                                                       // a part not an object
        R"({"jobs":{},"missing":["b"]})",                                             // missing jobs: a warning
        R"({"jobs":[]})",                                                             // jobs not an object
        R"({"missing":[]})",                                                          // no jobs
        R"([])",
        R"({"jobs":{"a":{"events":[],"next":1}}} trailing)",
        "",
    };
    for (const char* body : others)
        EXPECT_FALSE(read_watch_reply(body)) << body;
    // What nlohmann makes of the ones it reads, as the watch loop had it: no next, the largest seq; a job given twice,
    // its last part; events that are no array, none.
    EXPECT_EQ(
        watched_jobs_of(json::parse(R"({"a":{"events":[{"seq":7},{"seq":3},{"x":1}],"state":"running"}})"))[0].next, 7);
    const auto twice = watched_jobs_of(json::parse(R"({"a":{"events":[],"next":1},"a":{"events":[],"next":2}})"));
    ASSERT_EQ(twice.size(), 1u);
    EXPECT_EQ(twice[0].next, 2);
    const auto odd = watched_jobs_of(json::parse(R"({"a":{"events":{},"next":1.0,"state":7},"b":[]})"));
    ASSERT_EQ(odd.size(), 2u);
    EXPECT_EQ(odd[0].count, 0u);
    EXPECT_EQ(odd[0].events, "[]");
    EXPECT_FALSE(odd[0].next);
    EXPECT_EQ(odd[0].state, "");
    EXPECT_EQ(odd[1].count, 0u);
}

// Replies as a worker writes them, with random events (strings with escapes and brackets, nested data, numbers of
// every kind): the fast way takes each, and says what nlohmann says.
TEST(WatchReply, RandomRepliesReadTheSameBothWays) {
    std::mt19937_64 random(5);
    const char* const pieces[] = {
        R"("a]b")", R"("q\"}")", R"("\u00e9\n")",        "[1,[2,{}]]",           R"({"k":[]})",
        "-0",       "1e-300",    "18446744073709551615", "-9223372036854775808", "true",
        "null",     "0.1"};
    int taken = 0;
    for (int round = 0; round < 500; ++round) {
        std::string body = "{\"jobs\":{";
        const int jobs = static_cast<int>(random() % 4);
        for (int j = 0; j < jobs; ++j) {
            body += (j ? ",\"" : "\"") + std::to_string(j) + "\":{\"events\":[";
            const int events = static_cast<int>(random() % 5);
            for (int e = 0; e < events; ++e) {
                body += e ? " , " : "";
                body += "{\"seq\":" + std::to_string(e + 1) +
                        ",\"data\":{\"v\":" + pieces[random() % std::size(pieces)] +
                        ",\"w\":" + pieces[random() % std::size(pieces)] + "}}";
            }
            body +=
                "]\t,\"next\":" + std::to_string(random() % 100) + (random() % 2 ? ",\"state\":\"running\"" : "") + "}";
        }
        body += "},\"missing\":[]}";
        const auto fast = read_watch_reply(body);
        ASSERT_TRUE(fast) << body;
        ++taken;
        const auto slow = by_id(watched_jobs_of(json::parse(body)["jobs"]));
        ASSERT_EQ(fast->size(), slow.size()) << body;
        for (const WatchedJob& job : *fast) {
            ASSERT_EQ(json::parse(job.events), json::parse(slow.at(job.id).events)) << body;
            ASSERT_EQ(job.count, slow.at(job.id).count) << body;
            ASSERT_EQ(job.next, slow.at(job.id).next) << body;
            ASSERT_EQ(job.state, slow.at(job.id).state) << body;
            ASSERT_NE(body.find(job.events), std::string::npos) << body;
        }
    }
    EXPECT_EQ(taken, 500);
}
