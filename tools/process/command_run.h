// One command from spawn to exit: the pump loop that moves its output into
// bounded captures (and out as progress), writes its stdin, enforces its wall
// and idle timeouts, and ends its process tree on a timeout or a stop request
// (see "How cancellation, timeouts and shutdown reach a process" in command.h).
//
// Thread safety: Wait() runs on one thread (the call's executor thread, or a
// background pump thread) and owns everything; RequestStop() and pid() may be
// called from any thread, any number of times, concurrently with Wait().
#ifndef TOOLEXEC_TOOLS_PROCESS_COMMAND_RUN_H_
#define TOOLEXEC_TOOLS_PROCESS_COMMAND_RUN_H_

#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/process/child_process.h"
#include "tools/process/output_capture.h"
#include "tools/process/pids_cgroup.h"
#include "tools/runtime/utf8.h"

namespace toolexec::command {

using Clock = std::chrono::steady_clock;

// Why a command was ended before it exited on its own.
enum class StopReason { kNone, kWall, kIdle, kCancelled, kKilled, kShutdown };

// "wall", "idle", "cancelled" (the call was cancelled) or "" (none, or ended
// by kill_command / session close / shutdown, which the result reports
// separately).
absl::string_view TimedOutName(StopReason reason);

struct CommandSpec {
  // The full argv (bash -c, possibly wrapped in bwrap) and environment.
  std::vector<std::string> argv;
  std::vector<std::string> env;
  int cwd_fd = -1;                        // borrowed; must stay open until Start() returns
  // Borrowed descriptors (above 2) the program inherits under the same
  // numbers (e.g. bwrap's --bind-fd); must stay open until Start() returns.
  std::vector<int> inherit_fds;
  std::optional<std::string> stdin_text;  // nullopt: /dev/null
  std::optional<std::chrono::milliseconds> wall_timeout;
  std::optional<std::chrono::milliseconds> idle_timeout;
  std::chrono::milliseconds kill_grace{2000};
  size_t capture_bytes = 64 * 1024;
  // Characters (code points) of each output text in the outcome, marker
  // included: the call's model_content budget for its text.
  size_t output_chars = SIZE_MAX;
  // bwrap: SIGTERM spares the leader (bwrap itself).
  bool sandboxed = false;
  std::vector<std::pair<int, rlim_t>> rlimits;
  // When set, the command runs in a pids cgroup of its own, made from this
  // (rlimit_processes; see pids_cgroup.h).
  std::shared_ptr<const PidsCgroups> pids;
  // "TOOLEXEC_RUN_ID=<id>", also present in `env`: how adopted escapees of
  // this command are recognised when its tree is killed.
  std::string marker;
};

struct CommandOutcome {
  ExitStatus exit;
  StopReason stop = StopReason::kNone;
  std::string stdout_text;  // head + marker + tail, valid UTF-8, at most output_chars
  std::string stderr_text;
  std::string combined;       // both, in arrival order, bounded the same way
  uint64_t stdout_bytes = 0;  // bytes the command wrote (before UTF-8 repair)
  uint64_t stderr_bytes = 0;
  bool truncated = false;  // some text left out of stdout_text, stderr_text or combined
  bool stdout_truncated = false;  // some text left out of stdout_text
  uint64_t invalid_utf8_bytes = 0;
  std::chrono::milliseconds duration{0};
  // The leader exited but something kept the pipes open past the drain time.
  bool output_cut_at_exit = false;
};

// The SpawnSpec that starts `spec`; when spec.pids is set, also makes the
// command's pids cgroup in *cgroup (its owner removes it once the tree is
// reaped). Fails when the cgroup cannot be made.
absl::StatusOr<SpawnSpec> SpawnSpecFor(const CommandSpec& spec,
                                       std::unique_ptr<CommandCgroup>* cgroup);

// One output stream of a command: its pipe, UTF-8 repair and capture.
struct CaptureStream {
  UniqueFd* fd;
  bool is_stderr;
  Utf8StreamSanitizer utf8;
  HeadTail capture;
  uint64_t bytes = 0;  // read from the pipe: what the command wrote

  CaptureStream(UniqueFd* f, bool err, size_t limit) : fd(f), is_stderr(err), capture(limit) {}
};

// write(2) that turns a closed pipe into EPIPE without raising SIGPIPE in the
// daemon: SIGPIPE is blocked on this thread around the write, and the one the
// kernel queued for it is consumed.
ssize_t WriteNoSigpipe(int fd, const char* data, size_t n);

// A poll() timeout in ms until `deadline`, rounded up, at least 0.
int MsUntil(Clock::time_point now, Clock::time_point deadline);

class CommandRun final {
 public:
  // Called from Wait()'s thread with valid UTF-8, at most kMaxChunkBytes.
  using OutputFn = std::function<void(bool is_stderr, absl::string_view text)>;

  static constexpr size_t kReadBytes = 64 * 1024;
  static constexpr size_t kMaxChunkBytes = 16 * 1024;
  // After the leader exits (and its group is killed), how long to keep
  // reading what is still in the pipes.
  static constexpr std::chrono::milliseconds kDrainAfterExit{250};

  // Spawns the command. Fails if it cannot be started.
  static absl::StatusOr<std::unique_ptr<CommandRun>> Start(CommandSpec spec);
  // If Wait() never ran, the ChildProcess destructor kills and reaps.
  ~CommandRun();
  CommandRun(const CommandRun&) = delete;
  CommandRun& operator=(const CommandRun&) = delete;

  // Runs the command to its end (exit, or timeout/stop then kill) and drains
  // its output. Call once.
  CommandOutcome Wait(const OutputFn& on_output);

  // Asks Wait() to end the command (SIGTERM, grace, SIGKILL). Never blocks;
  // safe in a CancellationToken callback. The first reason wins.
  void RequestStop(StopReason reason);

  pid_t pid() const { return pid_; }
  Clock::time_point started() const { return started_; }

 private:
  CommandRun(CommandSpec spec, std::unique_ptr<CommandCgroup> cgroup,
             std::unique_ptr<ChildProcess> child, int wake_fd);
  // The tree is reaped (or about to be, by the destructor): no longer counted
  // in ProcessCounters().commands_running. Once.
  void CountEnded();

  const CommandSpec spec_;
  // Removed by Wait() once the tree is reaped; else, declared before
  // child_, after the ChildProcess destructor has reaped it.
  std::unique_ptr<CommandCgroup> cgroup_;
  std::unique_ptr<ChildProcess> child_;
  UniqueFd wake_;  // eventfd written by RequestStop
  const pid_t pid_;
  const Clock::time_point started_;
  std::atomic<StopReason> stop_{StopReason::kNone};
  bool counted_running_ = true;  // Wait()'s thread, then the destructor
};

}  // namespace toolexec::command

#endif  // TOOLEXEC_TOOLS_PROCESS_COMMAND_RUN_H_
