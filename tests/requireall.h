#pragma once
// What a test does when something it needs is missing (a dataset, a tool, a privilege): it skips with a message
// saying what to install, except under TRAINDECK_REQUIRE_ALL=1 (set by .ci/run), where nothing may be skipped
// and the same message is a failure. A skip is never a silent pass.
#include <cstdlib>
#include <cstring>

namespace traindeck::test {

inline bool require_all() {
    const char* value = std::getenv("TRAINDECK_REQUIRE_ALL");
    return value && std::strcmp(value, "1") == 0;
}

} // namespace traindeck::test

// In a gtest body or SetUp: returns from it, skipped or (under TRAINDECK_REQUIRE_ALL=1) failed. The switch keeps
// `if (missing) TRAINDECK_SKIP(...);` free of a dangling else, as gtest's own macros do.
#define TRAINDECK_SKIP(message)                                                                                        \
    switch (0)                                                                                                         \
    case 0:                                                                                                            \
    default:                                                                                                           \
        if (!::traindeck::test::require_all())                                                                         \
            GTEST_SKIP() << (message);                                                                                 \
        else                                                                                                           \
            GTEST_FAIL() << (message) << " (TRAINDECK_REQUIRE_ALL=1: nothing may be skipped)"
