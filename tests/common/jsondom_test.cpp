// simdjson's DOM as nlohmann::json (jsondom.h) and the thread's parser.
#include "jsondom.h"

#include <gtest/gtest.h>

#include <string>

using namespace traindeck;

// The conversion gives what nlohmann's own parser gives for the same text, number types and repeated keys included.
TEST(JsonDom, AnElementIsWhatNlohmannParsesFromTheSameText) {
    const std::string text =
        R"({"a":1,"a":[2,-3,18446744073709551615,0.5,-0.0,"x\u00e9",true,null,{}],"b":{"c":-9223372036854775808}})";
    simdjson::dom::element element;
    ASSERT_EQ(thread_parser().parse(text).get(element), simdjson::SUCCESS);
    const nlohmann::json converted = nlohmann_of(element), parsed = nlohmann::json::parse(text);
    EXPECT_EQ(converted, parsed);
    EXPECT_EQ(converted.dump(), parsed.dump());
    EXPECT_TRUE(converted["a"][0].is_number_unsigned());
    EXPECT_TRUE(converted["a"][1].is_number_integer() && !converted["a"][1].is_number_unsigned());
}

// A document that grew the thread's parser past 64 MB does not keep those buffers past the next call.
TEST(JsonDom, TheThreadsParserLetsGoOfALargeDocumentsBuffers) {
    std::string large = "[";
    large.reserve(80u << 20);
    while (large.size() < (70u << 20))
        large += "1,";
    large += "1]";
    simdjson::dom::element element;
    simdjson::dom::parser& parser = thread_parser();
    ASSERT_EQ(parser.parse(large).get(element), simdjson::SUCCESS);
    EXPECT_GT(parser.capacity(), size_t{64} << 20);
    simdjson::dom::parser& next = thread_parser();
    EXPECT_EQ(next.capacity(), 0u);
    ASSERT_EQ(next.parse(std::string("[1,2]")).get(element), simdjson::SUCCESS);
    EXPECT_GT(thread_parser().capacity(), 0u);
    EXPECT_LT(thread_parser().capacity(), size_t{64} << 20);
}
