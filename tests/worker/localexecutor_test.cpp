// The local executor: a shim it spawned is its child, there until it reaps it, whatever /proc says of it; only a
// shim re-adopted after a worker restart (not its child) is looked for in /proc, and must be this job's shim there.
// (A shim asked of /proc in its first milliseconds had no arguments yet and was taken for vanished: its job was
// marked failed while it ran on, never to be stopped.)
#include "common/tempfolder.h"
#include "jobrun.h"
#include "localexecutor.h"
#include "process.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <thread>

using namespace traindeck;
using namespace traindeck::worker;

TEST(LocalExecutor, ItsOwnShimIsThereUntilReapedAndOnlyAReadoptedOneIsLookedForInProc) {
    LocalExecutor executor("/nonexistent/traindeck-worker");
    test::TempFolder dir;
    // A child whose /proc/PID/cmdline is no shim's ("traindeck-worker --run-job DIR"), as a shim's is not in the
    // instant after posix_spawn returns.
    SpawnOptions sleeper;
    sleeper.argv = {"/bin/sleep", "60"};
    int error = 0;
    const pid_t pid = spawn_process(sleeper, error);
    ASSERT_GT(pid, 0) << error;
    JobRun run;
    run.shim = pid;
    EXPECT_FALSE(executor.check(run, dir.path, "").ended) << "our own running child was taken for vanished";

    // The same process as a re-adopted shim: /proc is asked, and it is not this job's shim (a recycled pid).
    JobRun adopted = run;
    EXPECT_FALSE(executor.adopt(adopted, dir.path));
    adopted.adopted = true;
    EXPECT_TRUE(executor.check(adopted, dir.path, "").ended);

    // Ended and reaped, with no exit recorded: vanished.
    ::kill(pid, SIGKILL);
    std::vector<JobRun*> runs{&run};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!run.shim_reaped && std::chrono::steady_clock::now() < deadline) {
        executor.collect(runs);
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ASSERT_TRUE(run.shim_reaped);
    const Executor::Check gone = executor.check(run, dir.path, "");
    EXPECT_TRUE(gone.ended);
    EXPECT_NE(gone.what.find("vanished"), std::string::npos);
}
