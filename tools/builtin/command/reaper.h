// The daemon's child reaper (see "Reaping" in command.h).
//
// The daemon is a child subreaper, so orphaned grandchildren of commands are
// re-parented to it. ChildReaper reaps them without ever stealing the exit
// status of a child somebody waits for: a ChildProcess registers its pid as
// owned, inside a SpawnLock, and the reaper thread only peeks
// (waitid(WNOWAIT)) until it holds the lock exclusively and has checked the
// zombie is neither owned nor in the daemon's own session.
//
// Rule for other daemon code that spawns children: either give the child a
// session of its own and wrap the spawn in a SpawnLock + Own(pid) (like
// ChildProcess), or spawn it without setsid (the reaper leaves children in
// the daemon's session to their owner).
//
// Thread safety: every method is thread-safe. The instance lives for the
// whole process (never destroyed).
#ifndef TOOLEXEC_TOOLS_BUILTIN_COMMAND_REAPER_H_
#define TOOLEXEC_TOOLS_BUILTIN_COMMAND_REAPER_H_

#include <sys/types.h>

#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace toolexec::command {

class ChildReaper final {
 public:
  static ChildReaper& Get();

  // Once per process: PR_SET_CHILD_SUBREAPER and the reaper thread.
  // Idempotent; returns the first attempt's status.
  absl::Status Start();

  // Hold while creating a child in a new session and until Own(pid).
  class SpawnLock final {
   public:
    explicit SpawnLock(ChildReaper& r) : r_(r) { r_.spawn_mu_.ReaderLock(); }
    ~SpawnLock() { r_.spawn_mu_.ReaderUnlock(); }
    SpawnLock(const SpawnLock&) = delete;
    SpawnLock& operator=(const SpawnLock&) = delete;

   private:
    ChildReaper& r_;
  };

  // `pid` is waited for by its owner; the reaper will not reap it.
  void Own(pid_t pid);
  // The owner has reaped `pid` (call after the wait).
  void Disown(pid_t pid);

  // Orphans reaped so far (for tests and diagnostics).
  uint64_t orphans_reaped() const;

 private:
  ChildReaper() = default;
  void Loop();
  bool ReapIfOrphan(pid_t pid);

  // Shared by spawners (clone .. Own), exclusive between peek and reap.
  absl::Mutex spawn_mu_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<pid_t, int> owned_ ABSL_GUARDED_BY(mu_);
  uint64_t spawns_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t disowns_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t orphans_reaped_ ABSL_GUARDED_BY(mu_) = 0;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status start_status_ ABSL_GUARDED_BY(mu_);
  pid_t own_sid_ = 0;
};

}  // namespace toolexec::command

#endif  // TOOLEXEC_TOOLS_BUILTIN_COMMAND_REAPER_H_
