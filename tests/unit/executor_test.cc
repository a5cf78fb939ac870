#include "tools/runtime/executor.h"

#include <gtest/gtest.h>

#include <atomic>

#include "absl/synchronization/blocking_counter.h"
#include "tools/runtime/cancellation.h"
#include "tools/runtime/timer_queue.h"

namespace toolexec {
namespace {

TEST(ExecutorTest, RunsEveryTaskAndCapsThreads) {
  Executor executor({.min_threads = 1, .max_threads = 4, .idle_timeout = absl::Seconds(1)});
  std::atomic<int> running{0}, peak{0}, done{0};
  absl::BlockingCounter counter(20);
  for (int i = 0; i < 20; ++i) {
    executor.Submit([&] {
      int now = ++running;
      int p = peak.load();
      while (now > p && !peak.compare_exchange_weak(p, now)) {
      }
      absl::SleepFor(absl::Milliseconds(20));
      --running;
      ++done;
      counter.DecrementCount();
    });
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
    executor.Submit([&] {
      absl::SleepFor(absl::Milliseconds(20));
      counter.DecrementCount();
    });
  }
  counter.Wait();
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(executor.threads(), 1u);
}

TEST(ExecutorTest, ShutdownRunsQueuedTasksThenRefuses) {
  std::atomic<int> done{0};
  Executor executor({.min_threads = 1, .max_threads = 1});
  for (int i = 0; i < 5; ++i) executor.Submit([&] { ++done; });
  executor.Shutdown();
  EXPECT_EQ(done, 5);
  EXPECT_FALSE(executor.Submit([] {}));
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
