// split_csv_line: the one CSV field splitter of the engine and the dataset inspection.
#include "csv.h"

#include <gtest/gtest.h>

using traindeck::split_csv_line;
using Fields = std::vector<std::string>;

TEST(Csv, PlainFieldsSplitAtCommas) {
    EXPECT_EQ(split_csv_line("a,b,c"), (Fields{"a", "b", "c"}));
    EXPECT_EQ(split_csv_line("1.5,,3"), (Fields{"1.5", "", "3"}));
    EXPECT_EQ(split_csv_line(""), (Fields{""}));
    EXPECT_EQ(split_csv_line("x,"), (Fields{"x", ""}));
}

TEST(Csv, QuotedFieldsKeepCommasAndDoubledQuotes) {
    EXPECT_EQ(split_csv_line(R"("a,b",c)"), (Fields{"a,b", "c"}));
    EXPECT_EQ(split_csv_line(R"("say ""hi""",2)"), (Fields{R"(say "hi")", "2"}));
    EXPECT_EQ(split_csv_line(R"("",x)"), (Fields{"", "x"}));
}

TEST(Csv, WindowsLineEndsAndUnclosedQuotes) {
    EXPECT_EQ(split_csv_line("a,b\r"), (Fields{"a", "b"}));
    EXPECT_EQ(split_csv_line(R"(a,"b,c)"), (Fields{"a", "b,c"})); // an unclosed quote runs to the end
}
