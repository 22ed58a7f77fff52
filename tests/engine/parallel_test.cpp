#include "gemm.h"
#include "parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <numeric>
#include <vector>

using namespace traindeck::engine;

TEST(Parallel, EveryIndexRunsOnceInFixedRanges) {
    set_parallel_threads(2);
    std::vector<std::atomic<int>> hits(10007);
    parallel_for(hits.size(), [&](size_t first, size_t last) {
        for (size_t i = first; i < last; ++i)
            hits[i]++;
    });
    for (const auto& h : hits)
        ASSERT_EQ(h.load(), 1);
}

TEST(Parallel, ResizingRightAfterStartNeverHangs) {
    // A worker that started after the stop that followed its creation once waited forever (process exit hung).
    for (int i = 0; i < 2000; ++i) {
        set_parallel_threads(2);
        set_parallel_threads(1);
    }
    set_parallel_threads(2);
    long sum = 0;
    std::vector<long> part(2, 0);
    parallel_for(2, [&](size_t first, size_t last) {
        for (size_t i = first; i < last; ++i)
            part[i] = static_cast<long>(i) + 1;
    });
    sum = std::accumulate(part.begin(), part.end(), 0L);
    EXPECT_EQ(sum, 3);
}

TEST(Parallel, SplitGemmEqualsSingleThreadedGemm) {
    std::vector<float> a(size_t{300} * 200), b(size_t{200} * 150), c1(size_t{300} * 150), c2(c1.size());
    for (size_t i = 0; i < a.size(); ++i)
        a[i] = static_cast<float>((i * 7919) % 1000) / 1000.0f - 0.5f;
    for (size_t i = 0; i < b.size(); ++i)
        b[i] = static_cast<float>((i * 104729) % 1000) / 1000.0f - 0.5f;
    for (bool ta : {false, true})
        for (bool tb : {false, true}) {
            set_compute_threads(1);
            gemm(ta, tb, 300, 150, 200, 1.0f, a.data(), ta ? 300 : 200, b.data(), tb ? 200 : 150, 0.0f, c1.data(), 150);
            set_compute_threads(2);
            gemm(ta, tb, 300, 150, 200, 1.0f, a.data(), ta ? 300 : 200, b.data(), tb ? 200 : 150, 0.0f, c2.data(), 150);
            for (size_t i = 0; i < c1.size(); ++i)
                ASSERT_NEAR(c1[i], c2[i], 1e-4f) << ta << tb << " at " << i;
        }
    // Split along N (M small) too: 4 x 150 x 2000 is big enough to be split.
    std::vector<float> a2(size_t{4} * 2000), b2(size_t{2000} * 150), d1(size_t{4} * 150), d2(d1.size());
    for (size_t i = 0; i < a2.size(); ++i)
        a2[i] = a[i % a.size()];
    for (size_t i = 0; i < b2.size(); ++i)
        b2[i] = b[i % b.size()];
    set_compute_threads(1);
    gemm(false, false, 4, 150, 2000, 1.0f, a2.data(), 2000, b2.data(), 150, 0.0f, d1.data(), 150);
    set_compute_threads(2);
    gemm(false, false, 4, 150, 2000, 1.0f, a2.data(), 2000, b2.data(), 150, 0.0f, d2.data(), 150);
    for (size_t i = 0; i < d1.size(); ++i)
        ASSERT_NEAR(d1[i], d2[i], 1e-4f);
}
