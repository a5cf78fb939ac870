#include "tools/runtime/executor.h"

#include <gtest/gtest.h>

#include <atomic>

#include "absl/strings/match.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/notification.h"
#include "tests/common/test_tools.h"
#include "tests/common/thread_limit.h"
#include "tools/runtime/cancellation.h"
#include "tools/runtime/timer_queue.h"
#include "tools/runtime/tool_runner.h"

namespace toolexec {
namespace {

TEST(ExecutorTest, RunsEveryTaskAndCapsThreads) {
  Executor executor({.min_threads = 1, .max_threads = 4, .idle_timeout = absl::Seconds(1)});
  std::atomic<int> running{0}, peak{0}, done{0};
  absl::BlockingCounter counter(20);
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(executor.Submit([&] {
      int now = ++running;
      int p = peak.load();
      while (now > p && !peak.compare_exchange_weak(p, now)) {
      }
      absl::SleepFor(absl::Milliseconds(20));
      --running;
      ++done;
      counter.DecrementCount();
    }).ok());
  }
  counter.Wait();
  EXPECT_EQ(done, 20);
  EXPECT_LE(peak, 4);
  EXPECT_LE(executor.threads(), 4u);
}

TEST(ExecutorTest, IdleThreadsRetire) {
  Executor executor({.min_threads = 1, .max_threads = 8, .idle_timeout = absl::Milliseconds(50)});
  absl::BlockingCounter counter(8);
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(executor.Submit([&] {
      absl::SleepFor(absl::Milliseconds(20));
      counter.DecrementCount();
    }).ok());
  }
  counter.Wait();
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(executor.threads(), 1u);
}

// Under light steady traffic the idle threads of a burst still retire: the
// work goes to the most recently idle thread, so the others stay idle.
TEST(ExecutorTest, IdleThreadsRetireUnderATrickleOfTasks) {
  constexpr absl::Duration kIdle = absl::Milliseconds(500);
  Executor executor({.min_threads = 1, .max_threads = 64, .idle_timeout = kIdle});
  absl::BlockingCounter burst(64);
  for (int i = 0; i < 64; ++i) {
    ASSERT_TRUE(executor.Submit([&] {
      absl::SleepFor(absl::Milliseconds(100));
      burst.DecrementCount();
    }).ok());
  }
  burst.Wait();
  ASSERT_GE(executor.threads(), 32u);
  // One tiny task every 5 ms for four idle timeouts: woken in turn, each of
  // the 64 threads would see a task every 320 ms and never time out. A few
  // stay in the rotation when a loaded machine is slow to wake them.
  std::atomic<int> done{0};
  int sent = 0;
  for (absl::Time end = absl::Now() + 4 * kIdle; absl::Now() < end; ++sent) {
    ASSERT_TRUE(executor.Submit([&] { ++done; }).ok());
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_LE(executor.threads(), 16u);
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_EQ(done.load(), sent);
}

// A call for which no thread can be started fails with the reason, and the
// process stays up.
TEST(ExecutorTest, ACallThatGetsNoThreadFailsWithTheReason) {
  int code = testing::RunInChild([] {
    ToolRegistry registry;
    auto echo = testing::MakeTool("echo", [](const JsonValue& a, ToolContext&) -> absl::StatusOr<Json> {
      return CopyJson(a);
    });
    if (!registry.Register(std::move(echo), "test").ok()) return 2;
    ToolRunner::Options options;
    options.executor.min_threads = 0;
    ToolRunner runner(&registry, options);
    if (!testing::StopNewThreads()) return 3;
    ToolCallResult r = testing::RunOneCall(runner, "echo", "{}");
    if (r.ok() || !r.error || r.error->code != ErrorCode::kInternal) return 4;
    if (!absl::StrContains(r.error_message, "tool 'echo' was not run: cannot start a thread")) return 5;
    return 0;
  });
  EXPECT_EQ(code, 0);
}

// Submit says why a task was refused; the executor keeps working with the
// threads it has.
TEST(ExecutorTest, SubmitRefusesATaskNoThreadCanRun) {
  int code = testing::RunInChild([] {
    Executor executor({.min_threads = 1, .max_threads = 4});
    if (executor.threads() != 1) return 2;
    if (!testing::StopNewThreads()) return 3;
    absl::Notification release;
    absl::BlockingCounter ran(2);
    // The one thread is busy with the first task; the second cannot start one.
    if (!executor.Submit([&] { release.WaitForNotification(); ran.DecrementCount(); }).ok()) {
      return 4;
    }
    while (executor.queued() > 0) absl::SleepFor(absl::Milliseconds(1));
    absl::Status refused = executor.Submit([] {});
    if (refused.code() != absl::StatusCode::kResourceExhausted) return 5;
    if (!absl::StrContains(refused.message(), "cannot start a thread")) return 6;
    release.Notify();
    // Free again: the same thread runs the next task.
    while (!executor.Submit([&] { ran.DecrementCount(); }).ok()) {
      absl::SleepFor(absl::Milliseconds(1));
    }
    ran.Wait();
    return 0;
  });
  EXPECT_EQ(code, 0);
}

TEST(ExecutorTest, ShutdownRunsQueuedTasksThenRefuses) {
  std::atomic<int> done{0};
  Executor executor({.min_threads = 1, .max_threads = 1});
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(executor.Submit([&] { ++done; }).ok());
  executor.Shutdown();
  EXPECT_EQ(done, 5);
  EXPECT_TRUE(absl::IsUnavailable(executor.Submit([] {})));
}

TEST(TimerQueueTest, FiresInDeadlineOrderAndCancels) {
  TimerQueue timers;
  absl::Mutex mu;
  std::vector<int> fired;
  auto record = [&](int v) {
    return [&, v] {
      absl::MutexLock lock(&mu);
      fired.push_back(v);
    };
  };
  absl::Time now = absl::Now();
  timers.Schedule(now + absl::Milliseconds(60), record(2));
  auto cancelled = timers.Schedule(now + absl::Milliseconds(30), record(99));
  timers.Schedule(now + absl::Milliseconds(20), record(1));
  EXPECT_TRUE(timers.Cancel(cancelled));
  absl::SleepFor(absl::Milliseconds(200));
  absl::MutexLock lock(&mu);
  EXPECT_EQ(fired, (std::vector<int>{1, 2}));
}

TEST(CancellationTest, CallbacksRunOnceAndWaitWakes) {
  CancellationToken token;
  int calls = 0;
  token.AddCallback([&] { ++calls; });
  int removed = token.AddCallback([&] { calls += 100; });
  token.RemoveCallback(removed);
  std::thread waiter([&] { EXPECT_TRUE(token.WaitFor(absl::Seconds(10))); });
  absl::SleepFor(absl::Milliseconds(20));
  EXPECT_TRUE(token.Cancel(CancelReason::kTimeout));
  EXPECT_FALSE(token.Cancel(CancelReason::kCancelled));  // the first reason wins
  waiter.join();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(token.reason(), CancelReason::kTimeout);
  int late = 0;
  EXPECT_EQ(token.AddCallback([&] { ++late; }), 0);  // runs at once
  EXPECT_EQ(late, 1);
}

}  // namespace
}  // namespace toolexec
