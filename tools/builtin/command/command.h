// run_command, command_status and kill_command: shell commands for an agent,
// with a process lifecycle that never leaks, timeouts that keep output, and
// live output streaming (issue 4).
//
// Design
// ======
//
// Who owns what
// -------------
// * CommandConfig (this file): the immutable settings every command tool
//   shares by shared_ptr: BuiltinOptions, the scrubbed base environment (a
//   snapshot of the daemon's environment taken at registration), the bwrap
//   path. Built once by RegisterCommandTools.
// * ChildProcess (child_process.h): one spawned child, i.e. its pid, its
//   pidfd and our ends of its pipes. Exactly one owner; the destructor
//   SIGKILLs the process group and reaps the leader if nobody has, so no
//   early return anywhere can leak a process or a zombie.
// * CommandRun (command_run.h): one command from spawn to exit. It owns the
//   ChildProcess, the bounded output captures and the timers, and it is the
//   only code that ever signals or reaps that child (so there is no race on
//   pid reuse). Everybody else asks it to stop with RequestStop(reason),
//   which only sets an atomic and writes an eventfd; it never blocks, so it
//   is safe inside a CancellationToken callback.
// * BackgroundProcesses (background.h): the table of background commands,
//   keyed by process id and tagged with the session id that started them
//   ("" when the call had no session). One per RegisterCommandTools call
//   (one per daemon), shared by shared_ptr between the three tools, so it
//   lives as long as the registry holding them. Each entry owns a CommandRun
//   and the thread pumping it, plus the unread-output log command_status
//   reads.
// * ChildReaper (reaper.h): process-wide. Makes the daemon a child
//   subreaper and reaps orphans (see Reaping).
//
// Which thread runs what
// ----------------------
// * Foreground run_command: the executor thread that runs Tool::Call runs the
//   CommandRun loop itself: one poll() over stdout, stderr, the stdin pipe,
//   the pidfd and the wake eventfd; wall, idle and kill-grace deadlines are
//   the poll timeout. No extra thread per command, so a batch of 32
//   commands costs 32 executor threads in poll(), and they run side by side.
// * Background run_command: one pump thread per background command (at most
//   kMaxRunningBackground across the daemon). The call starts the thread,
//   which spawns the command itself and runs the same loop; the call waits
//   only for the spawn. The thread is joined by whoever ends the command
//   (kill_command, cleanup_session, shutdown) or by the table when it evicts
//   a finished entry.
// * The thread that spawns a command is always the one that waits for it,
//   because the leader is spawned with PR_SET_PDEATHSIG(SIGKILL), which
//   follows the spawning *thread*: if the daemon crashes, each command's
//   leader (bwrap: the whole sandbox) dies with it.
// * The reaper thread: one detached thread for the daemon's lifetime.
//
// How cancellation, timeouts and shutdown reach a process
// --------------------------------------------------------
// * Wall timeout (timeout_ms), idle timeout (idle_timeout_ms), the call's
//   CancellationToken (client cancel, batch timeout, runner shutdown),
//   kill_command, cleanup_session and run_command's Tool::shutdown all end in
//   the same place: the CommandRun loop sends SIGTERM to the command's process
//   group and to every descendant found under /proc (processes that called
//   setsid are still descendants), waits command_kill_grace, then SIGKILLs
//   the same set. Output read so far is kept; the result says which timer
//   fired (timed_out = "wall" | "idle" | "cancelled" | "").
// * The command's own timeout is reported as a successful result with the
//   partial output. The runner's per-call deadline is a separate, outer
//   bound: when the call has a deadline, the effective wall timeout is
//   shortened so that the command's own timeout (and kill grace) fire first
//   and the model still gets the output; the result's timeout_ms says what
//   was used.
// * A command is finished when its leader (bash, or bwrap) exits, never when
//   the pipes close: `sleep 1000 &` holds the pipes but not the call. When the
//   leader of a *foreground* command exits, the rest of its process group is
//   SIGKILLed at once: anything it left behind would hold the pipes, run on
//   unaccounted, and nobody could ever stop it (use background:true for
//   servers). Then the pipes are drained for at most kDrainAfterExit.
//   What left the group (setsid) and has lost its parent was adopted by the
//   daemon (subreaper): the daemon's own children list, not a /proc scan,
//   finds those that carry the command's TOOLEXEC_RUN_ID, and they and
//   their descendants are SIGKILLed too. Only a process that both leaves
//   the group and clears its environment can outlive a finished command
//   (the bwrap sandbox's pid namespace leaves no such way out).
//
// Reaping
// -------
// The daemon is a child subreaper (PR_SET_CHILD_SUBREAPER, set once by
// RegisterCommandTools), so orphaned grandchildren are re-parented to it and
// it must reap them. A reaper calling waitpid(-1) would steal the exit
// status of commands that are waiting on their own pid, so:
// * each command waits for its own leader only, through its pidfd (poll for
//   exit, waitid(P_PIDFD) to reap);
// * the reaper thread blocks in waitid(P_ALL, WEXITED | WNOWAIT), which only
//   *peeks*; it reaps a peeked zombie only if no ChildProcess owns that pid
//   and the zombie is in a session other than the daemon's own (every command
//   runs in a session of its own, so its orphans are; children that other
//   daemon code spawns without setsid are left to their owner). Spawning
//   holds the reaper's lock in shared mode from clone() until the pid is
//   registered as owned, and the reaper takes it exclusively between its peek
//   and its reap, so a child that exits at once is never mistaken for an
//   orphan. When the peeked zombie is owned, the reaper waits until its
//   owner has reaped it. A zombie in the daemon's own session that nobody
//   reaps within 2 s is reaped anyway (waitid(P_ALL) always returns the
//   first zombie, so a forgotten one would hide every orphan behind it).
//
// Spawning
// --------
// clone(CLONE_VM | CLONE_VFORK | CLONE_PIDFD) on a small private stack (what
// posix_spawn does, plus the pidfd and the steps posix_spawn lacks): in the
// child, every signal disposition back to default (so a daemon that ignores
// SIGPIPE does not pass that on), an empty signal mask, setsid(),
// PR_SET_PDEATHSIG(SIGKILL), the pipes on 0/1/2, fchdir() to the working
// directory's fd, setrlimit() for each configured limit, every other fd
// marked close-on-exec, then execve. A
// failure in the child is reported through the shared memory and the call
// fails (a command that failed to start is a tool failure; a non-zero exit
// is a successful call carrying that exit code).
//
// Working directory: resolved beneath the call's workspace by the confined
// path layer (tools/builtin/fs/confined.h: openat2 RESOLVE_BENEATH, or its
// O_NOFOLLOW walk) and opened as a directory fd; the child fchdir()s to that
// fd, so there is no check-then-use race. Under bwrap, which needs a path,
// it is named inside its root's bind (below).
//
// Sandbox (sandbox: "bwrap"): bwrap --ro-bind / / --dev /dev --proc /proc
// --tmpfs /tmp --bind-fd <root fd> <root path>, the isolation flags of
// AppendIsolationFlags (sandbox.h: a user namespace mapping the daemon's ids
// to themselves, --cap-drop ALL, --disable-userns, pid/ipc/uts[/net]
// namespaces, --die-with-parent --new-session), --chdir <dir> -- /bin/bash -c
// <command>.
// --unshare-pid is added because --new-session moves the command out of our
// process group: in a PID namespace the whole sandbox dies with its init, so
// the group SIGKILL of bwrap still takes everything with it. In bwrap mode
// SIGTERM goes to the sandboxed processes, not to bwrap itself (bwrap dies
// on SIGTERM at once and would tear the sandbox down without a grace
// period). A command killed by signal N reports exit code 128+N there
// (bwrap's own convention).
//
// Environment: the daemon's environment minus every secret (LooksSecret and
// IsSecretEntry in environment.h) unless allow_env names it, then the call's
// env on top, then TOOLEXEC_RUN_ID (a per-command id, used to find escaped
// processes when killing a command's tree). toolexecd then wipes the secrets
// from its own environment and makes itself non-dumpable
// (SealDaemonSecrets), so a command cannot read them from the daemon either.
//
// Memory: each stream keeps a head and a tail of command_capture_bytes
// (output_capture.h), and so does combined_output, so a command costs a few
// times that whatever it prints; a background command additionally keeps at
// most 2 x command_capture_bytes of output nobody has read yet.
#ifndef TOOLEXEC_TOOLS_BUILTIN_COMMAND_COMMAND_H_
#define TOOLEXEC_TOOLS_BUILTIN_COMMAND_COMMAND_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "tools/builtin/builtin.h"
#include "tools/runtime/tool.h"

namespace toolexec::command {

// What the three command tools share. Immutable after Create().
struct CommandConfig {
  BuiltinOptions options;
  // The base environment ("NAME=value"), already scrubbed.
  std::vector<std::string> base_env;
  // Absolute path of bwrap when options.sandbox == "bwrap", else empty.
  std::string bwrap_path;

  // Validates the options (an unknown sandbox value, or "bwrap" that is not
  // installed or cannot create namespaces here, is an error that names the
  // fix), snapshots and scrubs the environment.
  static absl::StatusOr<std::shared_ptr<const CommandConfig>> Create(const BuiltinOptions& options);
};

class BackgroundProcesses;

// The tools, in the order RegisterCommandTools registers them; they share
// one table of background commands. run_command's Tool::shutdown ends every
// background command of every session (and of none) together and refuses
// later starts; foreground commands end through their calls' cancellation.
std::unique_ptr<Tool> MakeRunCommandTool(std::shared_ptr<const CommandConfig> config,
                                         std::shared_ptr<BackgroundProcesses> background);
std::unique_ptr<Tool> MakeCommandStatusTool(std::shared_ptr<BackgroundProcesses> background);
std::unique_ptr<Tool> MakeKillCommandTool(std::shared_ptr<BackgroundProcesses> background);

// The process_id argument of command_status/kill_command, or "?" when absent
// (for titles and summaries, which also see invalid input).
std::string ProcessIdOf(const JsonValue& input);
// The display title of command_status/kill_command: "<tool> <process_id>", or
// the tool's name alone without a process id.
std::string ProcessTitle(absl::string_view tool, const JsonValue& input);

// At most this many background commands run at once across the daemon, and
// this many per session.
inline constexpr size_t kMaxRunningBackground = 64;
inline constexpr size_t kMaxRunningBackgroundPerSession = 16;

}  // namespace toolexec::command

#endif  // TOOLEXEC_TOOLS_BUILTIN_COMMAND_COMMAND_H_
