// The daemon's orphan reaper and its clean-up of what an earlier daemon left
// (see "Reaping" in command.h).
//
// The daemon is a child subreaper, as a second line behind each command's
// supervisor: if a supervisor is killed from outside, what was left of its
// tree is re-parented to the daemon rather than to init, where the command's
// end finds it (ChildProcess::KillAdopted) and this reaper reaps it. The
// reaper never steals an exit status somebody waits for: supervisors are
// created without an exit signal, so waitid(P_ALL) without __WALL does not
// see them, and other children that are in the daemon's own session are left
// to whoever spawned them (within kForeignZombieGrace).
//
// Rule for other daemon code that spawns children: reap them yourself, and
// do not give them a session of their own unless you create them without an
// exit signal (as ChildProcess does).
//
// Thread safety: every method is thread-safe. The instance lives for the
// whole process (never destroyed).
#ifndef TOOLEXEC_TOOLS_PROCESS_REAPER_H_
#define TOOLEXEC_TOOLS_PROCESS_REAPER_H_

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace toolexec::command {

class ChildReaper final {
 public:
  static ChildReaper& Get();

  // Once per process: SIGKILLs what commands of daemons that are gone left
  // running (see NewRunId), then PR_SET_CHILD_SUBREAPER and the reaper
  // thread. Idempotent; returns the first attempt's status.
  absl::Status Start();

  // Orphans reaped so far (for tests and diagnostics).
  uint64_t orphans_reaped() const;

 private:
  ChildReaper() = default;
  void Loop();
  bool ReapIfOrphan(pid_t pid);

  mutable absl::Mutex mu_;
  uint64_t orphans_reaped_ ABSL_GUARDED_BY(mu_) = 0;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status start_status_ ABSL_GUARDED_BY(mu_);
  pid_t own_sid_ = 0;
};

// A new TOOLEXEC_RUN_ID value: "<daemon pid>-<daemon start time>-<n>". The
// daemon's pid and start time (clock ticks since boot, as in /proc/<pid>/stat)
// tell a later daemon whether the one that ran the command is gone.
std::string NewRunId();

// Whether the daemon named by a run id ("<pid>-<start>-<n>") still runs
// (true for what is not a run id: not ours to judge).
bool OwnerAlive(absl::string_view run_id);

// The whole of a small file (/proc, cgroup files); "" if unreadable.
std::string ReadSmallFile(const std::string& path);

// Fields of /proc/<pid>/stat: "pid (comm) state ppid pgrp session ... and
// starttime (field 22, in clock ticks after boot)".
struct ProcStat {
  pid_t ppid = 0;
  pid_t pgrp = 0;
  pid_t sid = 0;
  uint64_t start_ticks = 0;
};
// False when the process is gone or its stat cannot be read.
bool ReadProcStat(pid_t pid, ProcStat* out);

}  // namespace toolexec::command

#endif  // TOOLEXEC_TOOLS_PROCESS_REAPER_H_
