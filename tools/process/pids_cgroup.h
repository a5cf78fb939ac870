// run_command.rlimit_processes: a pids cgroup per command.
//
// RLIMIT_NPROC cannot limit one command: it counts every process and thread
// of the uid (the daemon's own threads, and everything else that user runs)
// and binds nothing for root. So the limit is a pids cgroup of the command's
// own, a child of the daemon's pids cgroup: cgroup v1's pids hierarchy, or
// on cgroup v2 the daemon's cgroup with the pids controller enabled for its
// children. Where the daemon cannot create one there, rlimit_processes is a
// start-up error that says why (PidsCgroups::Find); it is never silently
// ignored.
//
// Who owns what: CommandConfig holds the one PidsCgroups (immutable, shared).
// CommandRun::Start creates a CommandCgroup for its command; the leader, in
// ChildProcess's spawn path, writes its own pid to the cgroup's cgroup.procs
// before its exec, so the leader and everything it starts count against
// pids.max; the supervisor stays outside. The CommandRun owns the
// CommandCgroup and destroys it once every process of the command is gone
// and reaped (in Wait(), or after its ChildProcess); the destructor removes
// the directory, on the thread that runs the command. A daemon killed at
// once leaves its (empty) cgroups behind; the next daemon's Find removes
// those whose daemon is gone (OwnerAlive in reaper.h).
#ifndef TOOLEXEC_TOOLS_PROCESS_PIDS_CGROUP_H_
#define TOOLEXEC_TOOLS_PROCESS_PIDS_CGROUP_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "tools/process/child_process.h"

namespace toolexec::command {

// One command's pids cgroup; removed on destruction (which must come after
// the command's processes are gone: a cgroup with processes stays).
class CommandCgroup final {
 public:
  CommandCgroup(std::string path, UniqueFd procs)
      : path_(std::move(path)), procs_(std::move(procs)) {}
  ~CommandCgroup();
  CommandCgroup(const CommandCgroup&) = delete;
  CommandCgroup& operator=(const CommandCgroup&) = delete;

  // Its cgroup.procs, open for writing, close-on-exec.
  int procs_fd() const { return procs_.get(); }

 private:
  const std::string path_;
  UniqueFd procs_;
};

class PidsCgroups final {
 public:
  // Finds the daemon's pids cgroup and checks that it can create a child
  // there with pids.max = max_processes (creating and removing one). Fails
  // with FailedPrecondition, naming the reason and the ways out, where it
  // cannot.
  static absl::StatusOr<std::shared_ptr<const PidsCgroups>> Find(uint64_t max_processes);

  // Creates a command's cgroup: <parent>/toolexec-<run id> (NewRunId: the
  // daemon's pid and start time, so a later daemon knows it is stale), with
  // pids.max set. Thread-safe.
  absl::StatusOr<std::unique_ptr<CommandCgroup>> Create() const;

 private:
  PidsCgroups(std::string parent, uint64_t max) : parent_(std::move(parent)), max_(max) {}

  const std::string parent_;  // the daemon's pids cgroup directory
  const uint64_t max_;
};

}  // namespace toolexec::command

#endif  // TOOLEXEC_TOOLS_PROCESS_PIDS_CGROUP_H_
