// run_command, command_status and kill_command: shell commands for an agent,
// with a process lifecycle that never leaks, timeouts that keep output, and
// live output streaming.
//
// Design
// ======
//
// No process a command starts outlives the command, nor the daemon: each
// command runs under a supervisor process of its own that is the subreaper
// of the command's tree and ends with the daemon.
//
// Who owns what
// -------------
// * CommandConfig (this file): the immutable settings every command tool
//   shares by shared_ptr: BuiltinOptions, the scrubbed base environment (a
//   snapshot of the daemon's environment taken at registration), the bwrap
//   path. Built once by RegisterCommandTools.
// * ChildProcess (child_process.h): one command's process tree: the
//   supervisor's pid and pidfd, the leader's pid, our ends of the pipes.
//   Exactly one owner; the destructor has the supervisor kill the tree and
//   reaps the supervisor, so no early return anywhere can leak a process or
//   a zombie.
// * The supervisor (one process per command, below the daemon): the only
//   parent and reaper of everything the command starts. It owns the tree's
//   exit statuses; the daemon only ever waits for supervisors.
// * CommandRun (command_run.h): one command from spawn to exit. It owns the
//   ChildProcess, the bounded output captures and the timers, and it is the
//   only code that ever signals or reaps that supervisor (so there is no
//   race on pid reuse). Everybody else asks it to stop with
//   RequestStop(reason), which only sets an atomic and writes an eventfd; it
//   never blocks, so it is safe inside a CancellationToken callback.
// * BackgroundProcesses (background.h): the table of background commands,
//   keyed by process id and tagged with the session id that started them
//   ("" when the call had no session). One per RegisterCommandTools call
//   (one per daemon), shared by shared_ptr between the three tools, so it
//   lives as long as the registry holding them. Each entry owns a CommandRun
//   and the thread pumping it, plus the unread-output log command_status
//   reads.
// * CommandCgroup (pids_cgroup.h): with rlimit_processes, the command's own
//   pids cgroup, made from CommandConfig's PidsCgroups and owned by the
//   CommandRun, which removes it once the tree is reaped.
// * ChildReaper (reaper.h): process-wide. Keeps the daemon a subreaper as a
//   second line (see Reaping) and, at start-up, kills what commands of a
//   daemon that is gone left running.
//
// Which thread runs what
// ----------------------
// * Foreground run_command: the executor thread that runs Tool::Call runs the
//   CommandRun loop itself: one poll() over stdout, stderr, the stdin pipe,
//   the supervisor's pidfd and the wake eventfd; wall, idle and kill-grace
//   deadlines are the poll timeout. No extra thread per command, so a batch
//   of 32 commands costs 32 executor threads in poll(), and they run side by
//   side.
// * Background run_command: one pump thread per background command (at most
//   kMaxRunningBackground across the daemon). The call starts the thread,
//   which spawns the command itself and runs the same loop; the call waits
//   only for the spawn. The thread is joined by whoever ends the command
//   (kill_command, cleanup_session, shutdown) or by the table when it evicts
//   a finished entry.
// * The thread that spawns a command is always the one that waits for it,
//   because the supervisor gets PR_SET_PDEATHSIG, which follows the spawning
//   *thread*.
// * The supervisor is a process, not a thread of the daemon; it runs no
//   daemon code but its own loop (see The supervisor).
// * The reaper thread: one detached thread for the daemon's lifetime.
//
// The supervisor
// --------------
// clone(CLONE_VM) without an exit signal, on a stack of its own: it shares
// the daemon's memory (no copy of a large address space per command, nothing
// written behind the daemon's back but its own stack and report), not its
// fds (it closes every fd but the command's pipes at once) nor its signal
// handlers (it blocks every signal). In order: setsid() (a signal to the
// daemon's process group does not reach it), PR_SET_CHILD_SUBREAPER,
// PR_SET_PDEATHSIG(SIGTERM), then it starts the leader (see Spawning),
// writes the leader's pid to its report and closes its copies of the pipes;
// the spawning thread waits (with every signal blocked, so the libc calls up
// to here cannot disturb it) until the leader has exec'd. From then on the
// supervisor makes only raw system calls
// that leave errno alone (the thread pointer, and so errno, is the spawning
// thread's): it reaps whatever ends below it, and once the leader has
// ended, or SIGTERM arrives (the daemon's KillTree, or the kernel when the
// spawning thread dies), it SIGKILLs the leader's group and every child it
// has (/proc/thread-self/children; a /proc scan without
// CONFIG_PROC_CHILDREN), reaps, and repeats: each killed process's children
// are re-parented to it, so rounds continue until it has no child left,
// setsid'd and daemonized ones included. It then writes the leader's status
// to its report and exits 0.
// Considered and not taken: a pid namespace per command (needs user
// namespaces unless root, and changes what the command sees of /proc; the
// bwrap mode has one); cgroup.kill (needs a delegated cgroup v2, which
// containers and non-root daemons often lack, and nothing kills when the
// daemon dies); exec'ing a helper binary (one more exec per command, and a
// second binary to install); fork without exec (copies the daemon's page
// tables, and its pages stay pinned for the command's life).
//
// How cancellation, timeouts, shutdown and daemon death reach a process
// ---------------------------------------------------------------------
// * Wall timeout (timeout_ms), idle timeout (idle_timeout_ms), the call's
//   CancellationToken (client cancel, batch timeout, runner shutdown),
//   kill_command, cleanup_session and run_command's Tool::shutdown all end in
//   the same place: the CommandRun loop sends SIGTERM to every process below
//   the supervisor (the kernel's children lists, walked from the supervisor:
//   the command's tree only, never all of /proc), waits command_kill_grace,
//   then has the supervisor SIGKILL the tree (KillTree). Output read so far
//   is kept; the result says which timer fired (timed_out = "wall" | "idle" |
//   "cancelled" | "").
// * The command's own timeout is reported as a successful result with the
//   partial output. The runner's per-call deadline is a separate, outer
//   bound: when the call has a deadline, the effective wall timeout is
//   shortened so that the command's own timeout (and kill grace) fire first
//   and the model still gets the output; the result's timeout_ms says what
//   was used.
// * A command is finished when its leader (bash, or bwrap) exits, never when
//   the pipes close: `sleep 1000 &` holds the pipes but not the call. The
//   supervisor then kills the rest of the tree at once (anything left
//   behind would hold the pipes, run on unaccounted, and nobody could ever
//   stop it; use background:true for servers) and exits when nothing is
//   left, which is what the CommandRun waits for (the supervisor's pidfd);
//   then the pipes are drained for at most kDrainAfterExit. So when a call
//   returns, every process of its command is gone and reaped.
// * Graceful shutdown (SIGTERM): the runner cancels the calls and
//   run_command's Tool::shutdown ends the background commands, as above.
// * The daemon dies at once (a second SIGTERM, SIGKILL, a crash): every
//   spawning thread is gone, so every supervisor gets its PDEATHSIG and ends
//   its tree. Supervisors are not in the daemon's process group, so killing
//   that group does not take them first.
// * A supervisor killed from outside (e.g. by its own command): the leader
//   dies of its own PDEATHSIG, and the rest of the tree is re-parented to the
//   daemon (a subreaper), where the CommandRun finds what carries the
//   command's TOOLEXEC_RUN_ID among the daemon's children and kills it. Only
//   a process that also clears its environment escapes that case.
// * A daemon killed together with its supervisors (SIGKILL to every process
//   of its binary, or the OOM killer, which kills every process sharing the
//   daemon's memory): the next daemon's start-up kills every process of its
//   user and pid namespace whose TOOLEXEC_RUN_ID names a daemon that is gone.
//
// Reaping
// -------
// Each supervisor reaps its own tree, as it goes, at any rate: nothing of a
// command ever becomes a zombie of the daemon. The daemon reaps only its
// supervisors, each through its pidfd (waitid(P_PIDFD, __WALL)), in the
// CommandRun that owns it. The daemon stays a child subreaper only as the
// second line above; its reaper thread peeks with waitid(P_ALL, WNOWAIT),
// which never sees supervisors (no exit signal makes them "clone children"),
// and reaps a zombie that is in another session than the daemon's (an orphan
// of a command); a zombie of the daemon's own session is left to whoever
// spawned it for 2 s, then reaped anyway (waitid(P_ALL) always returns the
// first zombie, so a forgotten one would hide every orphan behind it).
//
// Spawning
// --------
// The supervisor starts the leader with clone(CLONE_VM) on a second private
// stack (what posix_spawn does, plus the steps posix_spawn lacks; the
// spawning thread, not the supervisor, waits for the exec: the leader's
// copy of a close-on-exec pipe closes then): in the leader, every signal disposition back to default (so a
// daemon that ignores SIGPIPE does not pass that on), an empty signal mask,
// setsid(), PR_SET_PDEATHSIG(SIGKILL) (if the supervisor dies, so does the
// leader), the pipes on 0/1/2, fchdir() to the working directory's fd,
// setrlimit() for each configured limit (rlimit_processes is not one:
// it is the command's own pids cgroup, which the leader joins before the
// dup2s, see pids_cgroup.h), every other fd marked
// close-on-exec, then execve. A failure in the leader or the supervisor is
// reported through the shared memory and the call fails (a command that
// failed to start is a tool failure; a non-zero exit is a successful call
// carrying that exit code).
//
// Working directory: resolved beneath the call's workspace by the confined
// path layer (tools/workspace/confined.h: openat2 RESOLVE_BENEATH, or its
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
#ifndef TOOLEXEC_TOOLS_COMMAND_COMMAND_H_
#define TOOLEXEC_TOOLS_COMMAND_COMMAND_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "tools/builtin.h"
#include "tools/process/pids_cgroup.h"
#include "tools/runtime/tool.h"

namespace toolexec::command {

// What the three command tools share. Immutable after Create().
struct CommandConfig {
  BuiltinOptions options;
  // The base environment ("NAME=value"), already scrubbed.
  std::vector<std::string> base_env;
  // Absolute path of bwrap when options.sandbox == "bwrap", else empty.
  std::string bwrap_path;
  // Where each command's pids cgroup is made when rlimit_processes is set,
  // else null.
  std::shared_ptr<const PidsCgroups> pids;

  // Validates the options (an unknown sandbox value, "bwrap" that is not
  // installed or cannot create namespaces here, or rlimit_processes where no
  // pids cgroup can be made, is an error that names the fix), snapshots and
  // scrubs the environment.
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
// The resources of command_status/kill_command: the command they act on, so
// the calls on one command in a batch run in call order.
std::vector<std::string> ProcessResources(const JsonValue& input);

// At most this many background commands run at once across the daemon, and
// this many per session.
inline constexpr size_t kMaxRunningBackground = 64;
inline constexpr size_t kMaxRunningBackgroundPerSession = 16;

}  // namespace toolexec::command

#endif  // TOOLEXEC_TOOLS_COMMAND_COMMAND_H_
