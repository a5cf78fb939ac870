// One child process in a session and process group of its own, with pipes
// for its stdin, stdout and stderr (see "Spawning" in command.h).
//
// Ownership: a ChildProcess is owned by exactly one CommandRun, which is the
// only code that signals or reaps it. If it is destroyed before Reap()
// succeeded, the destructor SIGKILLs the process group and reaps the leader
// (blocking briefly), so no path leaks a process or a zombie.
// Thread safety: none; one owner thread at a time.
#ifndef TOOLEXEC_TOOLS_BUILTIN_COMMAND_CHILD_PROCESS_H_
#define TOOLEXEC_TOOLS_BUILTIN_COMMAND_CHILD_PROCESS_H_

#include <sys/resource.h>
#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace toolexec::command {

// A file descriptor closed on destruction.
class UniqueFd final {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { Reset(); }
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.Release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) {
      Reset();
      fd_ = o.Release();
    }
    return *this;
  }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int Release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void Reset(int fd = -1);

 private:
  int fd_ = -1;
};

struct SpawnSpec {
  // argv[0] is the program path (absolute; no PATH search).
  std::vector<std::string> argv;
  // "NAME=value" entries, the child's whole environment.
  std::vector<std::string> env;
  // The directory to fchdir() to; -1 keeps the daemon's.
  int cwd_fd = -1;
  // Descriptors (above 2) left open across exec, under the same numbers;
  // every other one is closed.
  std::vector<int> inherit_fds;
  // A pipe for stdin when true, /dev/null otherwise.
  bool stdin_pipe = false;
  // setrlimit() in the child before exec (soft = hard = value).
  std::vector<std::pair<int, rlim_t>> rlimits;
};

// How a process ended, as waitid reported it.
struct ExitStatus {
  bool signaled = false;
  int code = 0;  // the exit code, or the signal number when signaled
};

class ChildProcess final {
 public:
  // Starts the child. Fails (and leaves nothing behind) if a pipe, the clone,
  // or any step in the child before exec fails; the message names the step.
  // The child's leader gets SIGKILL if the calling *thread* exits
  // (PR_SET_PDEATHSIG follows the thread), so call it from the thread that
  // will wait for the child: a crash of the daemon then takes its commands'
  // leaders with it.
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Spawn(const SpawnSpec& spec);

  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Readable (POLLIN) once the leader has exited; -1 on kernels without pidfd
  // (then poll with a short timeout and call TryReap).
  int pidfd() const { return pidfd_.get(); }
  UniqueFd& stdin_fd() { return stdin_; }
  UniqueFd& stdout_fd() { return stdout_; }
  UniqueFd& stderr_fd() { return stderr_; }

  // Whether the leader has exited (a zombie or reaped), without reaping it.
  bool LeaderExited();
  // Reaps the leader if it has exited; nullopt while it runs. After a
  // successful reap the pid must not be signalled any more.
  std::optional<ExitStatus> TryReap();
  bool reaped() const { return reaped_; }

  // Sends `sig` to the whole process group (the leader's pid is the group
  // and session id). Only valid before the leader is reaped (until then its
  // pid, and so the group id, cannot be reused).
  void SignalGroup(int sig);

  // Sends `sig` to the group and to every descendant of the leader found
  // under /proc (also those that left the group), plus processes that the
  // daemon adopted (as subreaper) whose environment carries `marker`
  // ("NAME=value"). With include_leader false the leader and its direct
  // children are spared (bwrap: it would tear the sandbox down at once).
  // Costs a /proc scan; used on the kill paths only.
  void SignalTree(int sig, bool include_leader, absl::string_view marker);

  // SIGKILLs the processes the daemon adopted (as subreaper) whose
  // environment carries `marker`, with all their descendants: what left the
  // command's group (setsid) and outlived its parent. Cheap: reads the
  // daemon's own children list, not all of /proc. For a command whose leader
  // exited normally; SignalGroup covers the rest.
  void KillAdopted(absl::string_view marker);

 private:
  ChildProcess() = default;

  pid_t pid_ = -1;
  UniqueFd pidfd_;
  UniqueFd stdin_;
  UniqueFd stdout_;
  UniqueFd stderr_;
  bool reaped_ = false;
};

// The signal's name ("SIGKILL"), or "signal N".
std::string SignalName(int sig);

}  // namespace toolexec::command

#endif  // TOOLEXEC_TOOLS_BUILTIN_COMMAND_CHILD_PROCESS_H_
