// One command's process tree: a supervisor process and, below it, the
// command's leader in a session and process group of its own, with pipes
// for its stdin, stdout and stderr (see "Spawning" and "The supervisor" in
// command.h).
//
// Ownership: a ChildProcess is owned by exactly one CommandRun, which is the
// only code that signals or reaps it. If it is destroyed before Reap()
// succeeded, the destructor has the supervisor kill the whole tree and reaps
// the supervisor (blocking briefly), so no path leaks a process or a zombie.
// Thread safety: none; one owner thread at a time.
#ifndef TOOLEXEC_TOOLS_PROCESS_CHILD_PROCESS_H_
#define TOOLEXEC_TOOLS_PROCESS_CHILD_PROCESS_H_

#include <sys/resource.h>
#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/runtime/file_io.h"

namespace toolexec::command {

using ::toolexec::UniqueFd;

struct SpawnSpec {
  // argv[0] is the program path (absolute; no PATH search).
  std::vector<std::string> argv;
  // "NAME=value" entries, the child's whole environment.
  std::vector<std::string> env;
  // The directory to fchdir() to; -1 keeps the daemon's.
  int cwd_fd = -1;
  // Descriptors (above 2) left open across exec, under the same numbers;
  // every other one is closed. At most kMaxInheritFds.
  std::vector<int> inherit_fds;
  static constexpr size_t kMaxInheritFds = 16;
  // A pipe for stdin when true, /dev/null otherwise.
  bool stdin_pipe = false;
  // setrlimit() in the child before exec (soft = hard = value).
  std::vector<std::pair<int, rlim_t>> rlimits;
  // A cgroup's cgroup.procs (open for writing) the leader moves itself into
  // before exec; -1: none.
  int cgroup_procs_fd = -1;
};

// How a process ended, as waitid reported it.
struct ExitStatus {
  bool signaled = false;
  int code = 0;  // the exit code, or the signal number when signaled
};

class ChildProcess final {
 public:
  // Starts the supervisor, which starts the leader. Fails (and leaves
  // nothing behind) if a pipe, a clone, or any step before the leader's exec
  // fails; the message names the step. The supervisor ends the whole tree if
  // the calling *thread* exits (PR_SET_PDEATHSIG follows the thread), so call
  // it from the thread that will wait for the command: a crash of the daemon
  // then ends its commands' trees.
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Spawn(const SpawnSpec& spec);

  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // The leader's pid (also its session and process group id).
  pid_t pid() const { return pid_; }
  // Readable (POLLIN) once the command has ended: its leader exited and the
  // rest of its tree was killed and reaped. -1 on kernels without pidfd (then
  // poll with a short timeout and call Ended/TryReap).
  int pidfd() const { return pidfd_.get(); }
  UniqueFd& stdin_fd() { return stdin_; }
  UniqueFd& stdout_fd() { return stdout_; }
  UniqueFd& stderr_fd() { return stderr_; }

  // Whether the command has ended (see pidfd), without reaping it.
  bool Ended();
  // Reaps the supervisor once the command has ended and returns how the
  // leader ended; nullopt while it runs. After a successful reap nothing may
  // be signalled any more.
  std::optional<ExitStatus> TryReap();
  bool reaped() const { return reaped_; }
  // After TryReap: false if the supervisor itself was killed before it could
  // end the tree (what was left of it was re-parented to the daemon).
  bool supervised_to_the_end() const { return supervised_to_the_end_; }

  // Sends `sig` to every process of the command's tree (the supervisor's
  // descendants, from the kernel's children lists: processes that left the
  // group with setsid, or lost their parent, are still below the
  // supervisor). With include_leader false the leader is spared (bwrap: it
  // would tear the sandbox down at once). Best effort against processes
  // forking meanwhile; KillTree is exact.
  void SignalTree(int sig, bool include_leader);

  // Has the supervisor SIGKILL the whole tree (repeatedly, until it has no
  // children left), reap it and exit. Never blocks.
  void KillTree();

  // SIGKILLs the processes the daemon adopted (as subreaper) whose
  // environment carries `marker` ("NAME=value"), with their descendants: what
  // was left of a command whose supervisor was killed from outside. Reads the
  // daemon's own children list, not all of /proc; returns how many it found.
  static int KillAdopted(absl::string_view marker);

 private:
  ChildProcess() = default;

  pid_t pid_ = -1;
  pid_t supervisor_ = -1;
  UniqueFd pidfd_;  // the supervisor's
  UniqueFd stdin_;
  UniqueFd stdout_;
  UniqueFd stderr_;
  // The supervisor's and the leader's stacks and the report the supervisor
  // leaves (mapped until the supervisor is reaped).
  void* region_ = nullptr;
  bool reaped_ = false;
  bool supervised_to_the_end_ = true;
};

// The signal's name ("SIGKILL"), or "signal N".
std::string SignalName(int sig);

}  // namespace toolexec::command

#endif  // TOOLEXEC_TOOLS_PROCESS_CHILD_PROCESS_H_
