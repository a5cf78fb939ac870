// The persistent shell behind `bash` and `shell`: one long-lived bash per
// session, so `cd`, variables and an activated virtualenv carry from one call
// to the next.
//
// Design
// ======
//
// Who owns what
// -------------
// * ShellTable (one per RegisterCommandTools call, shared by shared_ptr
//   between bash and shell, so it lives as long as the registry holding
//   them): the shells, keyed by session id. A shell is made by the first
//   call of its session, ended by `restart`, by cleanup_session (the session
//   closed), by Shutdown (the daemon stops; also the destructor) and by the
//   idle sweep (no call for `idle_timeout`). Calls without a session have no
//   shell to keep: bash and shell need a session (NO_CONTEXT otherwise).
// * Shell (shell_session.cc): one bash process tree, as a ChildProcess (the
//   same supervisor, process group, pipes, rlimits, pids cgroup, scrubbed
//   environment and bwrap sandbox as run_command's, from MakeCommandSpec and
//   CommandCgroup) plus two pipes of its own: the control pipe (the daemon
//   writes each command to it) and the report pipe (the shell writes how each
//   command ended). Destroying a Shell has its supervisor kill the whole tree
//   and reaps it (ChildProcess's destructor), so ending a shell never leaves
//   a process behind, background jobs included.
//
// Which thread runs what
// ----------------------
// * A shell is spawned on the table's own thread, which lives as long as the
//   table: the supervisor's PR_SET_PDEATHSIG follows the spawning *thread*,
//   and executor threads come and go. That thread also runs the idle sweep.
//   If the daemon dies, the thread dies with it and every shell's tree ends.
// * A call runs its command on its own (executor) thread: it holds the
//   shell's run lock for the whole command, so the calls on one session's
//   shell run one at a time; within a batch they also share a resource key
//   (Tool::resources), so they run in call order. The call's thread is the
//   only reader of the shell's pipes while it holds the lock: one poll() over
//   stdout, stderr, the report pipe, the supervisor's pidfd, the control pipe
//   (while the command is still being written) and a wake eventfd.
//
// The protocol: how a command's end and exit code are found
// ---------------------------------------------------------
// bash runs a fixed loop (Driver in shell_session.cc; --noprofile --norc,
// stdin /dev/null): read a prelude and the command, each NUL-terminated,
// from the control pipe; eval the prelude, then eval the command with stdin
// from /dev/null and the control and report pipes closed for it (so no
// process the command starts holds them, and nothing it prints reaches
// them); then read the id the daemon wrote after the command and write the
// report: `$?`, `pwd -P` and the names of the shell's functions, closed by
// "END:<id>". The end of a command is that report on the report pipe, never
// text on stdout: output cannot end a call whatever it prints, and an id
// that names each command (a per-shell random prefix and a counter), which
// the command cannot see or change, keeps a stale report from ending the
// next call. The exit code is bash's `$?` for the command, exact.
// Output that never ends a line, binary output (made valid UTF-8 as
// run_command does) and a command reading stdin (it reads /dev/null) all
// end normally. `exit N`, `exec prog`, a failing command under the user's
// `set -e` and a signal end the shell: the report pipe closes and the
// supervisor's pidfd fires; the call reports the shell's exit status (128 +
// the signal, and which signal, when one killed it) and says the next call
// starts a new shell.
//
// The loop's own code is immune to what the command sets: its names are
// unique per shell and their attributes are dropped before each use, so no
// assignment, nameref or attribute a command gives any name can change a
// report; and the shell options the command turns on (errexit, nounset,
// pipefail, xtrace, verbose, allexport) persist to the next command as in a
// terminal, but are saved and turned off for the loop's code in between
// (the first step after the command, itself traced nowhere), so they can
// neither end the shell in the loop's code nor trace it into the output.
//
// What persists, and what does not (the policy's view)
// ----------------------------------------------------
// The policy judges each call's command line alone, by what it runs
// (core/policy.h, command_line.h), exactly as run_command's: a rule naming
// run_command, bash or shell applies to all three. Persistent state that
// would make a later line run something other than what it says is not
// kept, or is refused:
// * kept: the working directory while it stays inside the session's
//   workspace (a call that leaves it is told, and the next call starts at
//   the workspace root: run_command cannot start outside it either),
//   variables (exported or not; a line that sets one that makes code run,
//   PATH, LD_PRELOAD, BASH_ENV, ..., is judged for it by that line), and
//   descriptors opened with `exec`;
// * not kept: functions (removed before the next command; a function's body
//   is judged only with the line that defines it, so a later `ls` can never
//   run a function named ls), aliases (removed and never expanded), traps
//   (EXIT, ERR, DEBUG, RETURN and signal traps are reset after each
//   command), `set -k` (keyword assignments after a command's name), and
//   remembered command locations (`hash -p`; `hash -r` after each command);
// * refused: `enable` (it loads or disables builtins for every later call).
//
// How a timeout or a cancellation reaches the command
// ---------------------------------------------------
// The command's wall timeout (the call's, fitted inside the call's deadline
// as RunForeground does) or the call's cancellation stops the command and
// the shell running it: a non-interactive bash cannot abandon the rest of a
// command list and keep going, so keeping the shell would let the rest of
// the list run after the result reported the timeout. SIGTERM goes to every
// process of the tree (ChildProcess::SignalTree; under bwrap, whose leader
// is bwrap, to everything below it: the shell and the command's processes),
// and whatever is left when the shell has ended, or after the kill grace,
// is killed (a shell that outlives the signal, because the command trapped
// it, is killed as soon as it reports). The result says the command timed
// out (or was cancelled) and that the next call starts a new shell at the
// workspace root, as Anthropic's reference bash tool requires a restart
// after a timeout.
//
// Limits: each call's stdout, stderr and their interleaving are captured
// like run_command's (head and tail of command_capture_bytes each, rendered
// within the call's model_content budget); output written by background jobs
// between calls is read with the next call.
//
// Thread safety: every ShellTable method is thread-safe.
#ifndef TOOLEXEC_TOOLS_COMMAND_SHELL_SESSION_H_
#define TOOLEXEC_TOOLS_COMMAND_SHELL_SESSION_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "tools/command/command.h"
#include "tools/process/command_run.h"
#include "tools/runtime/tool_context.h"

namespace toolexec::command {

// How one command in the persistent shell ended.
struct ShellOutcome {
  std::string stdout_text;  // valid UTF-8, head + marker + tail within the budget
  std::string stderr_text;
  std::string combined;  // both, in arrival order
  uint64_t stdout_bytes = 0;
  uint64_t stderr_bytes = 0;
  bool truncated = false;
  uint64_t invalid_utf8_bytes = 0;
  // The command's exit status (`$?`), or the shell's when the command ended
  // it (128 + the signal when one killed it, as bash reports a command a
  // signal ended); unset when it timed out or was cancelled.
  std::optional<int> exit_code;
  // "" (it ended on its own), "wall" or "cancelled".
  std::string timed_out;
  // The signal that killed the shell during this call ("SIGKILL"), if one
  // did (not a timeout's).
  std::string signal;
  // The shell ended during this call (exit, exec, a failing command under
  // `set -e`, a signal, a timeout): the next call starts a new shell at the
  // workspace root.
  bool shell_ended = false;
  // This call started a new shell (the first call, after a restart, or after
  // the previous shell ended).
  bool new_shell = false;
  // What the model should know besides the output: why the shell ended, that
  // the working directory was reset, which functions were dropped.
  std::vector<std::string> notes;
  std::string cwd;  // where the shell is after the command ("" if it ended)
  int64_t duration_ms = 0;
  int64_t timeout_ms = 0;  // the wall timeout used
};

class ShellTable final {
 public:
  // `idle_timeout`: a shell without a call for this long is ended (zero:
  // never).
  ShellTable(std::shared_ptr<const CommandConfig> config, absl::Duration idle_timeout);
  // Shutdown().
  ~ShellTable();
  ShellTable(const ShellTable&) = delete;
  ShellTable& operator=(const ShellTable&) = delete;

  // Runs `command` in the session's shell (starting one if it has none),
  // after every earlier call on that shell. Fails (and runs nothing) when the
  // call has no session, the command has a NUL byte or runs `enable`, the
  // shell cannot be started, or after Shutdown().
  absl::StatusOr<ShellOutcome> Run(ToolContext& ctx, absl::string_view command,
                                   int64_t timeout_ms, const CommandRun::OutputFn& on_output);

  // Ends the session's shell (the next Run starts a new one). Returns
  // whether it had one.
  bool Restart(absl::string_view session_id);
  // cleanup_session.
  void CloseSession(absl::string_view session_id);
  // Ends every shell and refuses new ones. Idempotent.
  void Shutdown();

  // Live shells (for tests and diagnostics).
  size_t shells() const;
  // Runs the idle sweep now (tests).
  void SweepIdleForTesting(absl::Time now);

  struct Shell;

 private:
  // Runs `fn` on the table's thread and waits for it.
  void OnOwnThread(const std::function<void()>& fn);
  void Loop();
  void SweepIdle(absl::Time now);
  std::shared_ptr<Shell> Take(absl::string_view session_id);

  const std::shared_ptr<const CommandConfig> config_;
  const absl::Duration idle_timeout_;

  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<Shell>, std::less<>> shells_ ABSL_GUARDED_BY(mu_);
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  bool stop_thread_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

// What bash and shell share: the table and the config, a resource key that
// runs a batch's calls on the shell in call order, and the shell's end with
// its session and with the daemon.
class PersistentShellTool : public Tool {
 public:
  PersistentShellTool(ToolSpec spec, std::shared_ptr<const CommandConfig> config,
                      std::shared_ptr<ShellTable> shells)
      : Tool(std::move(spec)), config_(std::move(config)), shells_(std::move(shells)) {}

  std::vector<std::string> resources(const JsonValue& /*input*/) const override {
    return {"persistent-shell"};
  }
  void cleanup_session(absl::string_view session_id) const override {
    shells_->CloseSession(session_id);
  }
  void shutdown() const override { shells_->Shutdown(); }

 protected:
  const std::shared_ptr<const CommandConfig> config_;
  const std::shared_ptr<ShellTable> shells_;
};

// The tools over the table, registered after kill_command: bash (Anthropic's
// bash_20250124: command, restart) and shell (OpenAI Responses' shell:
// commands, timeout_ms, max_output_length).
std::unique_ptr<Tool> MakeBashTool(std::shared_ptr<const CommandConfig> config,
                                   std::shared_ptr<ShellTable> shells);
std::unique_ptr<Tool> MakeShellTool(std::shared_ptr<const CommandConfig> config,
                                    std::shared_ptr<ShellTable> shells);

}  // namespace toolexec::command

#endif  // TOOLEXEC_TOOLS_COMMAND_SHELL_SESSION_H_
