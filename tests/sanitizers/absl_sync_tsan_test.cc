// What absl_sync_tsan.cc is for, checked in the TSan build: data handed from
// thread to thread by absl::Mutex (Lock, LockWhen, Await), absl::CondVar and
// absl::Notification is not reported as a race. Without the interposer each
// of these reports a data race and, with halt_on_error, fails.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"

namespace {

TEST(AbslSyncTsan, MutexGuardedCounter) {
  absl::Mutex mu;
  int counter = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        absl::MutexLock lock(&mu);
        ++counter;
      }
    });
  }
  for (auto& t : threads) t.join();
  absl::MutexLock lock(&mu);
  EXPECT_EQ(counter, 4000);
}

TEST(AbslSyncTsan, LockWhenAndAwait) {
  absl::Mutex mu;
  int stage = 0;
  std::thread other([&] {
    absl::MutexLock lock(&mu);
    mu.Await(absl::Condition(
        +[](int* s) { return *s == 1; }, &stage));
    stage = 2;
  });
  {
    absl::MutexLock lock(&mu);
    stage = 1;
  }
  mu.LockWhen(absl::Condition(+[](int* s) { return *s == 2; }, &stage));
  EXPECT_EQ(stage, 2);
  mu.Unlock();
  other.join();
}

TEST(AbslSyncTsan, CondVarHandoff) {
  absl::Mutex mu;
  absl::CondVar cv;
  bool ready = false;
  int payload = 0;
  std::thread producer([&] {
    absl::MutexLock lock(&mu);
    payload = 42;
    ready = true;
    cv.Signal();
  });
  {
    absl::MutexLock lock(&mu);
    while (!ready) cv.Wait(&mu);
    EXPECT_EQ(payload, 42);
  }
  producer.join();
}

TEST(AbslSyncTsan, NotificationHandoff) {
  absl::Notification done;
  int payload = 0;  // written before Notify, read after the wait: no lock
  std::thread producer([&] {
    payload = 7;
    done.Notify();
  });
  done.WaitForNotification();
  EXPECT_EQ(payload, 7);
  producer.join();
}

}  // namespace
