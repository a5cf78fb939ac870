// FileWriteLock: one writer per (directory, name), whatever path reached the
// directory; waiters honour cancellation; entries go away when unused.
#include "tools/workspace/write_lock.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "tests/unit/builtin/file_test_util.h"
#include "tools/workspace/confined.h"
#include "tools/runtime/cancellation.h"

namespace toolexec {
namespace {

using fs::FileWriteLock;
using fs::UniqueFd;
using ::testing::HasSubstr;
using testing::TempTree;

UniqueFd OpenDir(const std::string& path) {
  return UniqueFd(open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
}

class WriteLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    t_.Mkdir("d");
    t_.Mkdir("e");
    t_.Symlink("alias", "d");
    d_ = OpenDir(t_.Abs("d"));
    alias_ = OpenDir(t_.Abs("alias"));
    dotdot_ = OpenDir(t_.Abs("e/../d"));
    e_ = OpenDir(t_.Abs("e"));
    ASSERT_TRUE(d_.valid() && alias_.valid() && dotdot_.valid() && e_.valid());
    ASSERT_EQ(FileWriteLock::KeysInUse(), 0u);
  }

  TempTree t_;
  UniqueFd d_, alias_, dotdot_, e_;
  CancellationToken never_;
};

// Acquires in another thread; `got` is notified once it holds the lock.
struct Contender {
  absl::Notification got;
  std::optional<absl::StatusOr<FileWriteLock>> lock;
  absl::Notification release;
  std::thread thread;

  void Start(int dir_fd, const char* name, const CancellationToken& cancel) {
    thread = std::thread([this, dir_fd, name, &cancel] {
      lock.emplace(FileWriteLock::Acquire(dir_fd, name, cancel, name));
      got.Notify();
      release.WaitForNotification();
      lock.reset();
    });
  }
  ~Contender() {
    if (!release.HasBeenNotified()) release.Notify();
    if (thread.joinable()) thread.join();
  }
};

TEST_F(WriteLockTest, OneWriterPerFileThroughEveryAlias) {
  for (int fd : {alias_.get(), dotdot_.get()}) {
    auto first = FileWriteLock::Acquire(d_.get(), "f", never_, "d/f");
    ASSERT_TRUE(first.ok()) << first.status();
    EXPECT_FALSE(first->waited());
    Contender other;
    other.Start(fd, "f", never_);
    // Generous: the contender cannot get the lock while it is held.
    EXPECT_FALSE(other.got.WaitForNotificationWithTimeout(absl::Milliseconds(200)));
    { FileWriteLock release = std::move(*first); }
    ASSERT_TRUE(other.got.WaitForNotificationWithTimeout(absl::Seconds(30)));
    ASSERT_TRUE(other.lock->ok());
    EXPECT_TRUE((*other.lock)->waited());
    other.release.Notify();
  }
}

TEST_F(WriteLockTest, OtherNamesAndDirectoriesDoNotWait) {
  auto held = FileWriteLock::Acquire(d_.get(), "f", never_, "d/f");
  ASSERT_TRUE(held.ok());
  Contender other_name, other_dir;
  other_name.Start(alias_.get(), "g", never_);
  other_dir.Start(e_.get(), "f", never_);
  ASSERT_TRUE(other_name.got.WaitForNotificationWithTimeout(absl::Seconds(30)));
  ASSERT_TRUE(other_dir.got.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_TRUE(other_name.lock->ok());
  EXPECT_TRUE(other_dir.lock->ok());
  EXPECT_EQ(FileWriteLock::KeysInUse(), 3u);
}

TEST_F(WriteLockTest, CancelledWaiterStopsWaitingAndLeavesNothing) {
  auto held = FileWriteLock::Acquire(d_.get(), "f", never_, "d/f");
  ASSERT_TRUE(held.ok());
  CancellationToken cancel;
  Contender waiter;
  waiter.Start(alias_.get(), "f", cancel);
  EXPECT_FALSE(waiter.got.WaitForNotificationWithTimeout(absl::Milliseconds(100)));
  cancel.Cancel(CancelReason::kTimeout);
  ASSERT_TRUE(waiter.got.WaitForNotificationWithTimeout(absl::Seconds(30)));
  ASSERT_FALSE(waiter.lock->ok());
  EXPECT_TRUE(absl::IsCancelled(waiter.lock->status()));
  EXPECT_THAT(waiter.lock->status().message(), HasSubstr("waiting for another write of 'f'"));
  EXPECT_EQ(FileWriteLock::KeysInUse(), 1u);
  { FileWriteLock release = std::move(*held); }
  EXPECT_EQ(FileWriteLock::KeysInUse(), 0u);
  // An already cancelled call does not take a free lock either.
  auto late = FileWriteLock::Acquire(d_.get(), "f", cancel, "d/f");
  EXPECT_TRUE(absl::IsCancelled(late.status()));
  EXPECT_EQ(FileWriteLock::KeysInUse(), 0u);
}

// Many threads through three paths to one file: never two inside at once, and
// the table is empty afterwards.
TEST_F(WriteLockTest, MutualExclusionUnderContention) {
  std::atomic<bool> inside{false};
  std::atomic<int> overlaps{0}, entered{0};
  std::vector<std::thread> threads;
  const int fds[] = {d_.get(), alias_.get(), dotdot_.get()};
  for (int i = 0; i < 12; ++i) {
    threads.emplace_back([&, fd = fds[i % 3]] {
      for (int k = 0; k < 300; ++k) {
        auto lock = FileWriteLock::Acquire(fd, "f", never_, "f");
        if (!lock.ok()) continue;
        if (inside.exchange(true)) ++overlaps;
        ++entered;
        std::this_thread::yield();
        inside.store(false);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(entered.load(), 12 * 300);
  EXPECT_EQ(FileWriteLock::KeysInUse(), 0u);
}

}  // namespace
}  // namespace toolexec

namespace toolexec {
namespace {

using fs::FileWriteLock;

// AcquireAll takes a set of locks for a write of several files: paths that
// alias one file share one lock (holding it twice would wait for itself),
// and two callers taking the same files in opposite orders never deadlock.
TEST_F(WriteLockTest, AcquireAllSharesAliasesAndTakesLocksInOneOrder) {
  {
    auto held = FileWriteLock::AcquireAll(
        {{d_.get(), "f", "d/f"}, {alias_.get(), "f", "alias/f"}, {e_.get(), "g", "e/g"}},
        never_);
    ASSERT_TRUE(held.ok()) << held.status();
    EXPECT_EQ(held->size(), 2u);
    EXPECT_EQ(FileWriteLock::UsersForTesting(dotdot_.get(), "f"), 1);
    EXPECT_EQ(FileWriteLock::UsersForTesting(e_.get(), "g"), 1);
  }
  EXPECT_EQ(FileWriteLock::KeysInUse(), 0u);

  std::atomic<int> done{0};
  auto loop = [&](std::vector<FileWriteLock::Target> targets) {
    for (int i = 0; i < 2000; ++i) {
      auto held = FileWriteLock::AcquireAll(targets, never_);
      if (held.ok()) ++done;
    }
  };
  std::thread a(loop, std::vector<FileWriteLock::Target>{{d_.get(), "f", "f"}, {e_.get(), "g", "g"}});
  std::thread b(loop, std::vector<FileWriteLock::Target>{{e_.get(), "g", "g"}, {d_.get(), "f", "f"}});
  a.join();
  b.join();
  EXPECT_EQ(done.load(), 4000);
  EXPECT_EQ(FileWriteLock::KeysInUse(), 0u);
}

}  // namespace
}  // namespace toolexec
