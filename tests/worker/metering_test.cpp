// Metering: spend from prices and time, the budget's warning and stop, the idle policy's report and stop.
#include "metering.h"

#include <gtest/gtest.h>

using namespace traindeck;
using namespace traindeck::worker;

TEST(Metering, SpendIsTheRateTimesTheTimeSinceTheLastReading) {
    Resources resources;
    resources.gpus = 2;
    resources.cpus = 4;
    const double rate = rate_per_hour({1.0, 2.0, 0.5}, resources);
    EXPECT_DOUBLE_EQ(rate, 7.0);
    double spend = 1.0, run_seconds = 10;
    MeterMarks marks;
    marks.last = 1000;
    charge(spend, run_seconds, marks, 2800, rate);
    EXPECT_DOUBLE_EQ(spend, 1.0 + 3.5);
    EXPECT_DOUBLE_EQ(run_seconds, 1810);
    EXPECT_EQ(marks.last, 2800);
    charge(spend, run_seconds, marks, 2700, rate); // a clock step back charges nothing
    EXPECT_DOUBLE_EQ(spend, 4.5);
}

TEST(Metering, AJobSharingAGpuPaysItsShareOfTheGpuPrice) {
    Resources resources;
    resources.gpus = 1;
    resources.gpu_share = 4;
    resources.cpus = 2;
    EXPECT_DOUBLE_EQ(rate_per_hour({1.0, 2.0, 0.5}, resources), 1.0 + 2.0 / 4 + 1.0);
    EXPECT_DOUBLE_EQ(resources.gpu_fraction(), 0.25);
}

TEST(Metering, TheBudgetWarnsOnceAt80PercentAndStopsAtItsEnd) {
    MeterMarks marks;
    const IdlePolicy policy;
    EXPECT_FALSE(judge(7.9, 100, 10, 50, 100, marks, policy).warn_budget);
    EXPECT_TRUE(judge(8.0, 101, 10, 50, 101, marks, policy).warn_budget);
    const MeterVerdict again = judge(9.0, 102, 10, 50, 102, marks, policy);
    EXPECT_FALSE(again.warn_budget); // said once
    EXPECT_FALSE(again.budget_reached);
    EXPECT_TRUE(judge(10.0, 103, 10, 50, 103, marks, policy).budget_reached);
    EXPECT_FALSE(judge(1e9, 103, 0, 50, 103, marks, policy).budget_reached); // 0: no budget
    // Another share asked for (Settings → Warn when a job spent): the warning comes there.
    MeterMarks other;
    EXPECT_FALSE(judge(4.9, 100, 10, 50, 100, other, policy, 50).warn_budget);
    EXPECT_TRUE(judge(5.0, 101, 10, 50, 101, other, policy, 50).warn_budget);
}

TEST(Metering, IdleIsReportedAfterThePolicysTimeAndWorkResetsIt) {
    MeterMarks marks;
    const IdlePolicy policy{5.0, 60.0, true};
    EXPECT_FALSE(judge(0, 1.5, 0, 0.0, 10, marks, policy).report_idle); // the first 2 s never count
    EXPECT_EQ(marks.idle_since, 0);
    EXPECT_FALSE(judge(0, 3, 0, 1.0, 20, marks, policy).report_idle);
    EXPECT_EQ(marks.idle_since, 20);
    EXPECT_FALSE(judge(0, 40, 0, 50.0, 50, marks, policy).report_idle); // busy again
    EXPECT_EQ(marks.idle_since, 0);
    EXPECT_FALSE(judge(0, 50, 0, 2.0, 60, marks, policy).report_idle);
    EXPECT_FALSE(judge(0, 100, 0, 2.0, 119, marks, policy).report_idle);
    const MeterVerdict idle = judge(0, 101, 0, 2.0, 120, marks, policy);
    EXPECT_TRUE(idle.report_idle);
    EXPECT_TRUE(idle.stop_idle);
    EXPECT_DOUBLE_EQ(idle.idle_for, 60);
    EXPECT_FALSE(judge(0, 102, 0, 2.0, 200, marks, policy).report_idle); // said once
    EXPECT_FALSE(judge(0, 100, 0, -1, 300, marks, IdlePolicy{5.0, 0, false}).report_idle); // unknown utilisation
}

TEST(Metering, AReachedBudgetStopsBeforeTheIdlePolicyIsAsked) {
    MeterMarks marks;
    marks.idle_since = 1;
    const MeterVerdict verdict = judge(10, 1000, 10, 0.0, 5000, marks, IdlePolicy{5.0, 60.0, true});
    EXPECT_TRUE(verdict.budget_reached);
    EXPECT_FALSE(verdict.report_idle);
}
