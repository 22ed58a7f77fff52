#pragma once
// What several worker test suites (local and Slurm executors) check and submit alike.
#include "workerprocess.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace traindeck::test {

// Events are numbered 1, 2, 3, ... without a gap or a repeat.
inline void expect_gapless(const std::vector<nlohmann::json>& events) {
    ASSERT_FALSE(events.empty());
    for (size_t i = 0; i < events.size(); ++i)
        ASSERT_EQ(events[i]["seq"].get<int64_t>(), static_cast<int64_t>(i + 1)) << "gap or duplicate at index " << i;
}

// resources/examples/pytorch_fashion.py through Debian's PyTorch: one epoch of 2,560 samples (20 steps of 128).
inline nlohmann::json pytorch_example_job(const std::string& name) {
    return {{"name", name},
            {"argv", {"/usr/bin/python3", source_dir() + "/resources/examples/pytorch_fashion.py", "--epochs", "1", "--limit", "2560"}},
            {"resources", {{"cpus", 1}}}};
}

} // namespace traindeck::test
