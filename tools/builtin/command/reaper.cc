#include "tools/builtin/command/reaper.h"

#include <errno.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tools/runtime/executor.h"

namespace toolexec::command {
namespace {

// A zombie in the daemon's own session that nobody claims within this long
// is reaped anyway: waitid(P_ALL) always returns the first zombie, so one
// that is never reaped would hide every orphan behind it.
constexpr absl::Duration kForeignZombieGrace = absl::Seconds(2);

}  // namespace

ChildReaper& ChildReaper::Get() {
  static ChildReaper* reaper = new ChildReaper();  // never destroyed: its thread runs to exit
  return *reaper;
}

absl::Status ChildReaper::Start() {
  absl::MutexLock lock(&mu_);
  if (started_) return start_status_;
  started_ = true;
  if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
    start_status_ = absl::InternalError(
        absl::StrCat("prctl(PR_SET_CHILD_SUBREAPER) failed: ", std::strerror(errno),
                     "; run_command needs it to reap the orphans of commands"));
    return start_status_;
  }
  own_sid_ = getsid(0);
  auto thread = StartThread([this] { Loop(); });
  if (!thread.ok()) {
    start_status_ = thread.status();
    return start_status_;
  }
  thread->detach();
  return start_status_;
}

void ChildReaper::Own(pid_t pid) {
  absl::MutexLock lock(&mu_);
  ++owned_[pid];
  ++spawns_;
}

void ChildReaper::Disown(pid_t pid) {
  absl::MutexLock lock(&mu_);
  auto it = owned_.find(pid);
  if (it != owned_.end() && --it->second == 0) owned_.erase(it);
  ++disowns_;
}

uint64_t ChildReaper::orphans_reaped() const {
  absl::MutexLock lock(&mu_);
  return orphans_reaped_;
}

bool ChildReaper::ReapIfOrphan(pid_t pid) {
  absl::WriterMutexLock spawn(&spawn_mu_);
  {
    absl::MutexLock lock(&mu_);
    if (owned_.contains(pid)) return false;
  }
  // Still a zombie (nobody reaped it since the peek: we hold spawn_mu_, and
  // owners only reap pids they own), so its pid and session are still valid.
  pid_t sid = getsid(pid);
  if (sid < 0) return false;
  if (sid == own_sid_) return false;
  siginfo_t si{};
  if (waitid(P_PID, pid, &si, WEXITED | WNOHANG) == 0 && si.si_pid == pid) {
    absl::MutexLock lock(&mu_);
    ++orphans_reaped_;
    return true;
  }
  return false;
}

void ChildReaper::Loop() {
  pid_t last_skipped = 0;
  absl::Time first_skipped_at;
  for (;;) {
    siginfo_t si{};
    if (waitid(P_ALL, 0, &si, WEXITED | WNOWAIT) != 0) {
      if (errno == EINTR) continue;
      // ECHILD: no children at all; sleep until somebody spawns one.
      absl::MutexLock lock(&mu_);
      uint64_t seen = spawns_;
      auto spawned = [this, seen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return spawns_ != seen; };
      mu_.AwaitWithTimeout(absl::Condition(&spawned), absl::Seconds(1));
      continue;
    }
    pid_t pid = si.si_pid;
    if (pid <= 0) continue;
    if (ReapIfOrphan(pid)) {
      last_skipped = 0;
      continue;
    }
    // Owned (its owner reaps it soon) or in our own session (left to whoever
    // spawned it, within reason).
    absl::Time now = absl::Now();
    if (pid != last_skipped) {
      last_skipped = pid;
      first_skipped_at = now;
    } else if (now - first_skipped_at > kForeignZombieGrace) {
      absl::WriterMutexLock spawn(&spawn_mu_);
      bool owned;
      {
        absl::MutexLock lock(&mu_);
        owned = owned_.contains(pid);
      }
      if (!owned) {
        siginfo_t gone{};
        if (waitid(P_PID, pid, &gone, WEXITED | WNOHANG) == 0 && gone.si_pid == pid) {
          absl::MutexLock lock(&mu_);
          ++orphans_reaped_;
        }
        last_skipped = 0;
        continue;
      }
    }
    absl::MutexLock lock(&mu_);
    uint64_t seen = disowns_;
    auto disowned = [this, seen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return disowns_ != seen; };
    mu_.AwaitWithTimeout(absl::Condition(&disowned), absl::Milliseconds(50));
  }
}

}  // namespace toolexec::command
