// run_in_background (ui/background.h): the work on a pool thread, the answer on the GUI thread while its context
// lives; what nobody takes is handed to `dropped`; reports arrive in order, before the answer, and stop with the
// context.
#include "background.h"

#include "fakebackend.h"
#include "unittest.h"

#include <gtest/gtest.h>

#include <QObject>

#include <atomic>
#include <memory>
#include <vector>

using namespace traindeck;
using namespace traindeck::test;

TEST(RunInBackground, WorkRunsOnAPoolThreadAndTheAnswerOnTheGuiThread) {
    QObject context;
    QThread* worked_on = nullptr;
    QThread* answered_on = nullptr;
    int answer = 0;
    run_in_background(
        &context,
        [&worked_on] {
            worked_on = QThread::currentThread();
            return 42;
        },
        [&](int result) {
            answered_on = QThread::currentThread();
            answer = result;
        });
    ASSERT_TRUE(process_until([&] { return answer != 0; }));
    EXPECT_EQ(answer, 42);
    EXPECT_EQ(answered_on, QCoreApplication::instance()->thread());
    EXPECT_NE(worked_on, answered_on);
}

TEST(RunInBackground, AnAnswerForAContextThatWentIsDroppedNotDelivered) {
    Gate gate;
    auto context = std::make_unique<QObject>();
    bool done = false;
    QThread* dropped_on = nullptr;
    int dropped_result = 0;
    run_in_background(
        context.get(),
        [&gate] {
            gate.wait();
            return 7;
        },
        [&](int) { done = true; },
        [&](int&& result) {
            dropped_on = QThread::currentThread();
            dropped_result = result;
        });
    context.reset(); // the window closed while the work ran
    gate.open();
    ASSERT_TRUE(process_until([&] { return dropped_result != 0; }));
    EXPECT_FALSE(done);
    EXPECT_EQ(dropped_result, 7);
    EXPECT_EQ(dropped_on, QCoreApplication::instance()->thread()); // where the probe backend was made
}

TEST(RunInBackground, ADroppedHookIsNotCalledWhenTheAnswerIsDelivered) {
    QObject context;
    bool done = false, dropped = false;
    run_in_background(
        &context, [] {}, [&] { done = true; }, [&] { dropped = true; });
    ASSERT_TRUE(process_until([&] { return done; }));
    EXPECT_FALSE(dropped);
}

TEST(RunInBackground, WithoutADroppedHookAGoneContextIsSimplyNotCalled) {
    Gate gate;
    auto context = std::make_unique<QObject>();
    bool done = false;
    std::atomic<bool> finished = false;
    run_in_background(
        context.get(),
        [&] {
            gate.wait();
            finished = true;
        },
        [&] { done = true; });
    context.reset();
    gate.open();
    ASSERT_TRUE(process_until([&] { return finished.load(); }));
    // Any answer was posted before `finished` was seen; let the queue run dry.
    QCoreApplication::processEvents();
    QCoreApplication::processEvents();
    EXPECT_FALSE(done);
}

TEST(RunInBackgroundReporting, ReportsArriveInOrderBeforeTheAnswer) {
    QObject context;
    std::vector<int> seen;
    std::vector<int> seen_at_answer;
    bool answered = false;
    run_in_background_reporting(
        &context,
        [](const auto& report) {
            for (int i = 1; i <= 5; ++i)
                report(i, QStringLiteral("step"));
            return QStringLiteral("done");
        },
        [&](int step, const QString& what) {
            EXPECT_EQ(QThread::currentThread(), QCoreApplication::instance()->thread());
            EXPECT_EQ(what, QStringLiteral("step"));
            seen.push_back(step);
        },
        [&](const QString& result) {
            EXPECT_EQ(result, QStringLiteral("done"));
            seen_at_answer = seen;
            answered = true;
        },
        QThreadPool::globalInstance());
    ASSERT_TRUE(process_until([&] { return answered; }));
    EXPECT_EQ(seen_at_answer, (std::vector<int>{1, 2, 3, 4, 5}));
}

TEST(RunInBackgroundReporting, ReportsStopWithTheContext) {
    Gate go_on;
    auto context = std::make_unique<QObject>();
    std::vector<int> seen;
    bool answered = false;
    std::atomic<bool> finished = false;
    run_in_background_reporting(
        context.get(),
        [&](const auto& report) {
            report(1);
            go_on.wait();
            report(2);
            finished = true;
            return 0;
        },
        [&](int step) { seen.push_back(step); }, [&](int) { answered = true; });
    ASSERT_TRUE(process_until([&] { return !seen.empty(); }));
    context.reset();
    go_on.open();
    ASSERT_TRUE(process_until([&] { return finished.load(); }));
    QCoreApplication::processEvents();
    QCoreApplication::processEvents();
    EXPECT_EQ(seen, (std::vector<int>{1}));
    EXPECT_FALSE(answered);
}
