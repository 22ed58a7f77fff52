// NameTable: one table names an enum both ways; unknown values and texts are answered, never guessed.
#include "nametable.h"

#include <gtest/gtest.h>

using namespace traindeck;

namespace {

enum class Colour { red, green, blue, unnamed };
constexpr auto kColours = name_table<Colour>({{Colour::red, "red"}, {Colour::green, "green"}, {Colour::blue, "blue"}});
static_assert(kColours.name(Colour::green) == "green"); // usable at compile time
static_assert(kColours.value("blue") == Colour::blue);

} // namespace

TEST(NameTable, EveryEntryReadsBothWays) {
    for (const auto& [value, name] : kColours.entries) {
        EXPECT_EQ(kColours.name(value), name);
        EXPECT_EQ(kColours.value(name), value);
    }
}

TEST(NameTable, UnknownValuesAndTextsHaveNoAnswer) {
    EXPECT_EQ(kColours.name(Colour::unnamed), std::nullopt);
    EXPECT_EQ(kColours.value("purple"), std::nullopt);
    EXPECT_EQ(kColours.value("Red"), std::nullopt); // names are exact
    EXPECT_EQ(kColours.value(""), std::nullopt);
}

TEST(NameTable, SortedNamesListWhatIsAllowed) {
    EXPECT_EQ(kColours.sorted_names(), "blue, green, red");
    EXPECT_EQ(kColours.sorted_names(" | "), "blue | green | red");
}
