// Design in shell_session.h.
#include "tools/command/shell_session.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/notification.h"
#include "tools/process/child_process.h"
#include "tools/process/command_line.h"
#include "tools/command/launch.h"
#include "tools/process/output_capture.h"
#include "tools/runtime/model_content.h"
#include "tools/process/pids_cgroup.h"
#include "tools/workspace/confined.h"
#include "tools/runtime/tool.h"
#include "tools/runtime/utf8.h"

namespace toolexec::command {
namespace {

using std::chrono::milliseconds;

// The loop bash runs; C and R are the control and report descriptors, and
// every name it keeps (V_pre, V_cmd, V_id, V_st, V_fl, V_so, V_on, V_pf, V_x)
// is V_ made unique per shell (`tag`), so no command can come upon them
// unless it goes looking; and even one that assigns them, gives them
// attributes or makes them namerefs cannot mislead the report: the loop
// drops their attributes (`unset -n`) before it uses them, and the id that
// closes the report is read from the control pipe after the command.
//
// POSIXLY_CORRECT=1 puts bash in posix mode, where a special builtin (unset,
// eval, trap, set) is found before a function of the same name, so the loop's
// own steps cannot be replaced by a function the command defined: it removes
// a function named `builtin` first, and calls everything else through
// `builtin`. The prelude (from the daemon) removes the functions the last
// command left and, when needed, moves back into the workspace; if a
// function survives (readonly -f), the loop reports "F" without running the
// command and the daemon replaces the shell.
//
// The command's shell options are its own and carry over, as in a terminal:
// the first step after it (an assignment and special builtins only, inside a
// group whose stderr is /dev/null, so even xtrace shows none of it) saves
// errexit, nounset, xtrace, verbose, allexport and pipefail and turns them
// off; the loop's own code always runs without them, and they are turned
// back on just before the next command: xtrace inside its eval, so the
// trace shows the command and nothing of the loop.
std::string Driver(int c, int r, absl::string_view tag) {
  return absl::StrReplaceAll(
      "builtin set +o history 2>/dev/null\n"
      "V_on= V_pf= V_x=\n"
      "while builtin unset -n V_pre V_cmd V_id 2>/dev/null;"
      " IFS= builtin read -r -d '' -u @C V_pre && IFS= builtin read -r -d '' -u @C V_cmd; do\n"
      "  POSIXLY_CORRECT=1 2>/dev/null\n"
      "  unset -f builtin 2>/dev/null\n"
      "  builtin eval \"$V_pre\" </dev/null @C<&- @R>&-\n"
      "  if [[ ! -o posix ]] || builtin compgen -A function >/dev/null 2>&1; then\n"
      "    IFS= builtin read -r -d '' -u @C V_id\n"
      "    builtin printf 'F\\0END:%s\\0' \"$V_id\" >&@R 2>/dev/null\n"
      "    continue\n"
      "  fi\n"
      "  builtin unset POSIXLY_CORRECT\n"
      "  [[ -n $V_on ]] && builtin set \"-$V_on\"\n"
      "  [[ -n $V_pf ]] && builtin set -o pipefail\n"
      "  builtin eval \"$V_x$V_cmd\" </dev/null @C<&- @R>&-\n"
      "  { V_st=$?\n"
      "    POSIXLY_CORRECT=1\n"
      "    unset -f builtin\n"
      "    builtin unset -n V_fl V_so V_on V_pf V_x V_id\n"
      "    V_fl=$- V_so=$SHELLOPTS\n"
      "    builtin set +euxva +o pipefail\n"
      "    builtin export -n V_st V_fl V_so\n"
      "  } 2>/dev/null\n"
      "  V_on=${V_fl//[!euva]/} V_pf= V_x=\n"
      "  [[ :$V_so: == *:pipefail:* ]] && V_pf=1\n"
      "  [[ $V_fl == *x* ]] && V_x='builtin set -x; '\n"
      "  builtin trap - EXIT ERR DEBUG RETURN HUP INT QUIT TERM USR1 USR2 PIPE ALRM CHLD\n"
      "  builtin unalias -a 2>/dev/null\n"
      "  builtin shopt -u expand_aliases\n"
      "  builtin set +k\n"
      "  builtin hash -r\n"
      "  IFS= builtin read -r -d '' -u @C V_id\n"
      "  { builtin printf '%s\\0' \"$V_st\"; builtin pwd -P; builtin printf '\\0';"
      " builtin compgen -A function; builtin printf 'END:%s\\0' \"$V_id\"; } >&@R 2>/dev/null\n"
      "  builtin unset POSIXLY_CORRECT\n"
      "done\n",
      {{"V_", absl::StrCat("__te_", tag, "_")},
       {"@C", absl::StrCat(c)},
       {"@R", absl::StrCat(r)}});
}

void SetNonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

// Whether `path` (absolute) is `root` or beneath it.
bool Beneath(absl::string_view path, absl::string_view root) {
  if (root.empty()) return false;
  if (root == "/") return true;
  return path == root || (absl::StartsWith(path, root) && path.size() > root.size() &&
                          path[root.size()] == '/');
}

}  // namespace

struct ShellTable::Shell {
  absl::Mutex run_mu;  // held by the call running a command
  // Declared before child: removed after the ChildProcess reaped the tree.
  std::unique_ptr<CommandCgroup> cgroup;
  std::unique_ptr<ChildProcess> child;
  UniqueFd ctl;  // our end of the control pipe
  UniqueFd rep;  // our end of the report pipe
  UniqueFd wake;  // eventfd: the running call was cancelled
  std::string rep_buf;
  std::string id_prefix;
  uint64_t next_id = 1;
  bool sandboxed = false;
  // Where the shell may be (the workspace roots as the kernel names them)
  // and where to go back to.
  std::vector<std::string> roots;
  std::string home;
  // For the next command's prelude.
  std::vector<std::string> functions;  // left by the last command
  bool reset_cwd = false;
  std::atomic<int64_t> last_used_ns{0};
  bool ended = false;  // under run_mu
};

ShellTable::ShellTable(std::shared_ptr<const CommandConfig> config, absl::Duration idle_timeout)
    : config_(std::move(config)), idle_timeout_(idle_timeout) {
  thread_ = std::thread([this] { Loop(); });
}

ShellTable::~ShellTable() {
  Shutdown();
  {
    absl::MutexLock lock(&mu_);
    stop_thread_ = true;
  }
  thread_.join();
}

void ShellTable::Loop() {
  absl::MutexLock lock(&mu_);
  while (true) {
    const absl::Duration tick = idle_timeout_ > absl::ZeroDuration()
                                    ? std::min(idle_timeout_ / 4 + absl::Milliseconds(1),
                                               absl::Seconds(30))
                                    : absl::InfiniteDuration();
    mu_.AwaitWithTimeout(absl::Condition(
                             +[](ShellTable* t) ABSL_EXCLUSIVE_LOCKS_REQUIRED(t->mu_) {
                               return t->stop_thread_ || !t->tasks_.empty();
                             },
                             this),
                         tick);
    while (!tasks_.empty()) {
      std::function<void()> task = std::move(tasks_.front());
      tasks_.pop_front();
      mu_.Unlock();
      task();
      mu_.Lock();
    }
    if (stop_thread_) return;
    if (idle_timeout_ > absl::ZeroDuration()) {
      mu_.Unlock();
      SweepIdle(absl::Now());
      mu_.Lock();
    }
  }
}

void ShellTable::OnOwnThread(const std::function<void()>& fn) {
  absl::Notification done;
  {
    absl::MutexLock lock(&mu_);
    tasks_.push_back([&fn, &done] {
      fn();
      done.Notify();
    });
  }
  done.WaitForNotification();
}

void ShellTable::SweepIdle(absl::Time now) {
  std::vector<std::shared_ptr<Shell>> idle;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = shells_.begin(); it != shells_.end();) {
      Shell& s = *it->second;
      // A shell whose call is running is never idle.
      if (s.run_mu.TryLock()) {
        const absl::Time last = absl::FromUnixNanos(s.last_used_ns.load());
        s.run_mu.Unlock();
        if (now - last >= idle_timeout_) {
          idle.push_back(std::move(it->second));
          it = shells_.erase(it);
          continue;
        }
      }
      ++it;
    }
  }
  // Each destructor has the supervisor kill the tree and reaps it.
  for (auto& s : idle) {
    absl::MutexLock lock(&s->run_mu);
    s->child.reset();
    s->cgroup.reset();
  }
}

void ShellTable::SweepIdleForTesting(absl::Time now) { SweepIdle(now); }

std::shared_ptr<ShellTable::Shell> ShellTable::Take(absl::string_view session_id) {
  absl::MutexLock lock(&mu_);
  auto it = shells_.find(session_id);
  if (it == shells_.end()) return nullptr;
  std::shared_ptr<Shell> s = std::move(it->second);
  shells_.erase(it);
  return s;
}

bool ShellTable::Restart(absl::string_view session_id) {
  std::shared_ptr<Shell> s = Take(session_id);
  if (s == nullptr) return false;
  // Waits for a call still running on it (which ends within its timeout).
  absl::MutexLock lock(&s->run_mu);
  const bool had = s->child != nullptr && !s->ended;
  s->child.reset();
  s->cgroup.reset();
  s->ended = true;
  return had;
}

void ShellTable::CloseSession(absl::string_view session_id) {
  std::shared_ptr<Shell> s = Take(session_id);
  if (s == nullptr) return;
  // Wake a running call so it ends its command now.
  uint64_t one = 1;
  if (s->wake.valid()) {
    ssize_t ignored = write(s->wake.get(), &one, sizeof(one));
    (void)ignored;
  }
  absl::MutexLock lock(&s->run_mu);
  s->child.reset();
  s->cgroup.reset();
  s->ended = true;
}

void ShellTable::Shutdown() {
  std::map<std::string, std::shared_ptr<Shell>, std::less<>> all;
  {
    absl::MutexLock lock(&mu_);
    shut_down_ = true;
    all.swap(shells_);
  }
  for (auto& [id, s] : all) {
    uint64_t one = 1;
    if (s->wake.valid()) {
      ssize_t ignored = write(s->wake.get(), &one, sizeof(one));
      (void)ignored;
    }
  }
  for (auto& [id, s] : all) {
    absl::MutexLock lock(&s->run_mu);
    s->child.reset();
    s->cgroup.reset();
    s->ended = true;
  }
}

size_t ShellTable::shells() const {
  absl::MutexLock lock(&mu_);
  return shells_.size();
}

namespace {

// Starts bash for `shell` in the call's first workspace root. Runs on the
// table's thread (see "Which thread runs what").
absl::Status StartShell(const CommandConfig& config, const ToolContext& ctx,
                        ShellTable::Shell& shell) {
  auto wp = fs::ResolveWorkspacePath(ctx.info().workspaces, ".", "workspace");
  if (!wp.ok()) return wp.status();
  auto dir = fs::OpenDirectory(*wp);
  if (!dir.ok()) return dir.status();
  int ctl[2], rep[2];
  if (pipe2(ctl, O_CLOEXEC) != 0) return ErrnoStatus(errno, "pipe2");
  UniqueFd ctl_read(ctl[0]), ctl_write(ctl[1]);
  if (pipe2(rep, O_CLOEXEC) != 0) return ErrnoStatus(errno, "pipe2");
  UniqueFd rep_read(rep[0]), rep_write(rep[1]);
  std::random_device rd;
  const std::string tag = absl::StrCat(absl::Hex(rd()), absl::Hex(rd()));
  CommandSpec spec = MakeCommandSpec(
      config, ctx, *wp, dir->get(),
      {"/bin/bash", "--noprofile", "--norc", "-c", Driver(ctl_read.get(), rep_write.get(), tag),
       "bash"},
      {});
  spec.inherit_fds.push_back(ctl_read.get());
  spec.inherit_fds.push_back(rep_write.get());
  std::unique_ptr<CommandCgroup> cgroup;
  auto s = SpawnSpecFor(spec, &cgroup);
  if (!s.ok()) return s.status();
  auto child = ChildProcess::Spawn(*s);
  if (!child.ok()) return child.status();
  SetNonBlocking(ctl_write.get());
  SetNonBlocking(rep_read.get());
  SetNonBlocking((*child)->stdout_fd().get());
  SetNonBlocking((*child)->stderr_fd().get());

  shell.cgroup = std::move(cgroup);
  shell.child = std::move(*child);
  shell.ctl = std::move(ctl_write);
  shell.rep = std::move(rep_read);
  shell.rep_buf.clear();
  shell.sandboxed = spec.sandboxed;
  shell.functions.clear();
  shell.reset_cwd = false;
  shell.ended = false;
  shell.roots.clear();
  for (const auto& root : ctx.info().workspaces) {
    shell.roots.push_back(root->path());
    std::string real = fs::FdPath(root->fd());
    if (!real.empty() && real != root->path()) shell.roots.push_back(real);
  }
  // Under bwrap the root is bound at its path; outside, the kernel's name of
  // the directory handle is the directory itself.
  std::string real = fs::FdPath(wp->root->fd());
  shell.home = spec.sandboxed || real.empty() ? wp->root->path() : real;
  shell.id_prefix = absl::StrCat(tag, "-");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ShellOutcome> ShellTable::Run(ToolContext& ctx, absl::string_view command,
                                            int64_t timeout_ms,
                                            const CommandRun::OutputFn& on_output) {
  const std::string& session_id = ctx.info().session_id;
  if (session_id.empty()) {
    return ToolError(ErrorCode::kNoContext,
                     "the persistent shell belongs to a session; open a session (OpenSession) "
                     "and call it with its session_id, or use run_command");
  }
  if (command.find('\0') != absl::string_view::npos) {
    return absl::InvalidArgumentError("the command contains a NUL byte");
  }
  {
    CommandLineAnalysis line = AnalyzeCommandLine(command);
    for (const SimpleCommand& c : line.commands) {
      if (!c.words.empty() && c.words[0].text == "enable") {
        return ToolError(ErrorCode::kDenied,
                         "`enable` is refused in the persistent shell: builtins it loads or "
                         "disables would change what later calls run, which the policy judges "
                         "by their command lines alone. Use run_command for this line");
      }
    }
  }

  std::shared_ptr<Shell> shell;
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) return absl::FailedPreconditionError("the daemon is shutting down");
    auto it = shells_.find(session_id);
    if (it == shells_.end()) {
      auto made = std::make_shared<Shell>();
      int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
      if (wake < 0) return ErrnoStatus(errno, "eventfd");
      made->wake.reset(wake);
      it = shells_.emplace(session_id, std::move(made)).first;
    }
    shell = it->second;
  }
  absl::MutexLock run_lock(&shell->run_mu);
  ShellOutcome out;
  const BuiltinOptions& opt = config_->options;

  auto start_shell = [&]() -> absl::Status {
    shell->child.reset();
    shell->cgroup.reset();
    absl::Status started;
    OnOwnThread([&] { started = StartShell(*config_, ctx, *shell); });
    if (!started.ok()) {
      shell->ended = true;
      return started;
    }
    out.new_shell = true;
    return absl::OkStatus();
  };
  if (shell->ended) {
    // Ended by Restart/CloseSession while this call waited: it is no longer
    // the session's; put a fresh one in its place.
    absl::MutexLock lock(&mu_);
    auto it = shells_.find(session_id);
    if (it != shells_.end() && it->second != shell) {
      return absl::UnavailableError("the session's shell was restarted meanwhile; call again");
    }
    if (shut_down_) return absl::FailedPreconditionError("the daemon is shutting down");
    shells_[session_id] = shell;
  }
  if (shell->child == nullptr || shell->ended || shell->child->Ended()) {
    if (absl::Status s = start_shell(); !s.ok()) return s;
  }
  shell->last_used_ns.store(absl::ToUnixNanos(absl::Now()));

  // --- the call's wall timeout, fitted inside its deadline (RunForeground) ---
  milliseconds grace(absl::ToInt64Milliseconds(opt.command_kill_grace));
  if (ctx.info().deadline != absl::InfiniteFuture()) {
    const int64_t remaining =
        std::max<int64_t>(0, absl::ToInt64Milliseconds(ctx.info().deadline - absl::Now()));
    const int64_t margin = CommandRun::kDrainAfterExit.count() + 50;
    const int64_t reserve = std::min<int64_t>(grace.count() + margin, remaining / 2);
    grace = milliseconds(std::clamp<int64_t>(reserve - margin, 0, grace.count()));
    timeout_ms = std::min(timeout_ms, std::max<int64_t>(remaining - reserve, 1));
  }
  out.timeout_ms = timeout_ms;

  // One attempt; a shell whose functions could not be removed is replaced
  // and the command sent again (it has not run).
  for (int attempt = 0;; ++attempt) {
    std::string prelude;
    if (!shell->functions.empty()) {
      std::vector<std::string> quoted;
      for (const std::string& f : shell->functions) quoted.push_back(ShellQuote(f));
      prelude = absl::StrCat("unset -f -- ", absl::StrJoin(quoted, " "), " 2>/dev/null\n");
    }
    if (shell->reset_cwd) {
      prelude += absl::StrCat("builtin cd -- ", ShellQuote(shell->home), "\n");
      shell->reset_cwd = false;
    }
    const std::string id = absl::StrCat(shell->id_prefix, shell->next_id++);
    // The prelude and the command, then the id the report ends with (read
    // after the command, so nothing the command does can change it).
    std::string message = absl::StrCat(prelude, absl::string_view("\0", 1), command,
                                       absl::string_view("\0", 1), id,
                                       absl::string_view("\0", 1));
    size_t sent = 0;
    const size_t capture = opt.command_capture_bytes;
    ChildProcess& child = *shell->child;
    CaptureStream so(&child.stdout_fd(), false, capture);
    CaptureStream se(&child.stderr_fd(), true, capture);
    HeadTail combined(capture);
    std::string text;
    std::unique_ptr<char[]> buf(new char[CommandRun::kReadBytes]);
    auto emit = [&](CaptureStream& s, absl::string_view t) {
      if (t.empty()) return;
      s.capture.Append(t);
      combined.Append(t);
      while (!t.empty()) {
        size_t n = Utf8SafePrefix(t, CommandRun::kMaxChunkBytes);
        if (on_output) on_output(s.is_stderr, t.substr(0, n));
        t.remove_prefix(n);
      }
    };
    // Reads what `s` has now; false at end of file.
    auto read_some = [&](CaptureStream& s) {
      if (!s.fd->valid()) return false;
      ssize_t n = read(s.fd->get(), buf.get(), CommandRun::kReadBytes);
      if (n > 0) {
        s.bytes += n;
        text.clear();
        s.utf8.Feed(absl::string_view(buf.get(), n), &text);
        emit(s, text);
        return true;
      }
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) return false;
      s.fd->reset();
      return false;
    };

    std::atomic<bool> cancelled{false};
    const CancellationToken& token = ctx.cancellation();
    const int wake_fd = shell->wake.get();
    {
      uint64_t stale;  // a wake-up meant for an earlier call
      ssize_t ignored = read(wake_fd, &stale, sizeof(stale));
      (void)ignored;
    }
    int cb = token.AddCallback([&cancelled, wake_fd] {
      cancelled.store(true);
      uint64_t one = 1;
      ssize_t ignored = write(wake_fd, &one, sizeof(one));
      (void)ignored;
    });

    const Clock::time_point start = Clock::now();
    const Clock::time_point deadline = start + milliseconds(timeout_ms);
    enum class Phase { kRunning, kTerminating } phase = Phase::kRunning;
    Clock::time_point kill_at;
    bool reported = false, gone = false, functions_left = false;
    std::optional<ExitStatus> shell_exit;
    std::string report;  // the record between the id and END
    const std::string end_marker = absl::StrCat("END:", id, absl::string_view("\0", 1));

    while (!reported && !gone) {
      Clock::time_point now = Clock::now();
      if (phase == Phase::kRunning) {
        std::string why;
        if (cancelled.load()) {
          why = "cancelled";
        } else if (now >= deadline) {
          why = "wall";
        } else {
          // CloseSession / Shutdown wrote the eventfd without cancelling.
          uint64_t v;
          if (read(wake_fd, &v, sizeof(v)) == sizeof(v)) why = "cancelled";
        }
        if (!why.empty()) {
          out.timed_out = why;
          // The command's processes and the shell running the rest of its
          // list (the leader, or below bwrap, which is spared).
          child.SignalTree(SIGTERM, /*include_leader=*/!shell->sandboxed);
          phase = Phase::kTerminating;
          kill_at = now + grace;
        }
      }
      if (phase == Phase::kTerminating && now >= kill_at) {
        child.KillTree();
        gone = true;
        break;
      }
      struct pollfd fds[6];
      int nfds = 0;
      int out_i = -1, err_i = -1, rep_i = -1, pid_i = -1, ctl_i = -1, wake_i = -1;
      if (so.fd->valid()) {
        out_i = nfds;
        fds[nfds++] = {so.fd->get(), POLLIN, 0};
      }
      if (se.fd->valid()) {
        err_i = nfds;
        fds[nfds++] = {se.fd->get(), POLLIN, 0};
      }
      if (shell->rep.valid()) {
        rep_i = nfds;
        fds[nfds++] = {shell->rep.get(), POLLIN, 0};
      }
      if (child.pidfd() >= 0) {
        pid_i = nfds;
        fds[nfds++] = {child.pidfd(), POLLIN, 0};
      }
      if (sent < message.size()) {
        ctl_i = nfds;
        fds[nfds++] = {shell->ctl.get(), POLLOUT, 0};
      }
      if (phase == Phase::kRunning) {
        wake_i = nfds;
        fds[nfds++] = {wake_fd, POLLIN, 0};
      }
      int timeout = MsUntil(now, phase == Phase::kRunning ? deadline : kill_at);
      if (child.pidfd() < 0) timeout = std::min(timeout, 10);
      int ready = poll(fds, nfds, timeout);
      if (ready < 0) {
        if (errno != EINTR) usleep(10000);
        continue;
      }
      if (wake_i >= 0 && (fds[wake_i].revents & POLLIN)) {
        uint64_t v;
        if (read(wake_fd, &v, sizeof(v)) == sizeof(v) && !cancelled.load()) {
          cancelled.store(true);
        }
      }
      if (out_i >= 0 && fds[out_i].revents) read_some(so);
      if (err_i >= 0 && fds[err_i].revents) read_some(se);
      if (ctl_i >= 0 && fds[ctl_i].revents) {
        ssize_t w = WriteNoSigpipe(shell->ctl.get(), message.data() + sent, message.size() - sent);
        if (w > 0) {
          sent += w;
        } else if (w < 0 && errno != EAGAIN && errno != EINTR) {
          sent = message.size();  // the shell is gone; its pidfd says so
        }
      }
      if (rep_i >= 0 && fds[rep_i].revents) {
        char rb[4096];
        ssize_t n = read(shell->rep.get(), rb, sizeof(rb));
        if (n > 0) {
          shell->rep_buf.append(rb, n);
          size_t end = shell->rep_buf.find(end_marker);
          if (end != std::string::npos) {
            // The record is what the shell wrote since the last report ended.
            report = shell->rep_buf.substr(0, end);
            reported = true;
            shell->rep_buf.erase(0, end + end_marker.size());
          }
        } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
          shell->rep.reset();  // the shell ended; its pidfd will say how
        }
      }
      bool ended = pid_i >= 0 ? (fds[pid_i].revents & POLLIN) != 0 : child.Ended();
      if (ended) gone = true;
    }
    token.RemoveCallback(cb);
    if (!out.timed_out.empty() && !gone) {
      // The shell outlived the signal (the command trapped it) and went on
      // with the list: it ends all the same, so nothing more of it runs.
      child.KillTree();
      gone = true;
    }

    if (gone) {
      // Whatever is still in the pipes, until they close (the tree is gone)
      // or the drain time is up.
      const Clock::time_point drain_until = Clock::now() + CommandRun::kDrainAfterExit;
      while ((so.fd->valid() || se.fd->valid()) && Clock::now() < drain_until) {
        struct pollfd fds[2];
        int nfds = 0;
        if (so.fd->valid()) fds[nfds++] = {so.fd->get(), POLLIN, 0};
        if (se.fd->valid()) fds[nfds++] = {se.fd->get(), POLLIN, 0};
        if (poll(fds, nfds, MsUntil(Clock::now(), drain_until)) <= 0) break;
        bool any = false;
        for (CaptureStream* s : {&so, &se}) {
          if (s->fd->valid() && read_some(*s)) any = true;
        }
        (void)any;
      }
      if (!child.reaped()) {
        for (int i = 0; i < 200 && !child.reaped(); ++i) {
          if ((shell_exit = child.TryReap())) break;
          if (i == 0) child.KillTree();
          usleep(5000);
        }
      }
    } else {
      // Everything the command wrote before the report is in the pipes.
      for (CaptureStream* s : {&so, &se}) {
        for (int i = 0; i < 1024 && read_some(*s); ++i) {
        }
      }
    }
    for (CaptureStream* s : {&so, &se}) {
      text.clear();
      s->utf8.Finish(&text);
      emit(*s, text);
    }

    // --- what the report says ---
    if (reported) {
      std::vector<std::string> fields = absl::StrSplit(report, absl::string_view("\0", 1));
      if (!fields.empty() && fields[0] == "F") {
        functions_left = true;
      } else if (fields.size() >= 3) {
        int code = 0;
        if (absl::SimpleAtoi(fields[0], &code)) out.exit_code = code;
        out.cwd = std::string(absl::StripSuffix(fields[1], "\n"));
        shell->functions.clear();
        for (absl::string_view f : absl::StrSplit(fields[2], '\n', absl::SkipEmpty())) {
          shell->functions.emplace_back(f);
        }
      }
    }
    if (functions_left && attempt == 0) {
      // Functions made readonly survived: replace the shell, run again.
      shell->child.reset();
      shell->cgroup.reset();
      if (absl::Status s = start_shell(); !s.ok()) return s;
      out.notes.push_back(
          "the shell was restarted before this command: a function an earlier command made "
          "readonly could not be removed (functions do not persist between calls); the "
          "working directory and variables were reset");
      continue;
    }
    if (functions_left) {
      shell->child.reset();
      shell->cgroup.reset();
      shell->ended = true;
      return absl::InternalError("the new shell could not remove its functions");
    }

    bool cut[3] = {false, false, false};
    const size_t chars = ctx.info().model_content.TextChars();
    // A model given bash or shell may have no file viewer: the hint says
    // how to read a part of a file with the shell itself.
    auto marker = [](uint64_t bytes) {
      return OmittedBytesMarker(bytes,
                                "rerun piped through | tail, | head or | grep, or redirect the "
                                "output to a file and read a part of it with sed -n '1,200p' FILE");
    };
    out.stdout_text = so.capture.Render(chars, &cut[0], marker);
    out.stderr_text = se.capture.Render(chars, &cut[1], marker);
    out.combined = combined.Render(chars, &cut[2], marker);
    out.truncated = cut[0] || cut[1] || cut[2];
    out.stdout_bytes = so.bytes;
    out.stderr_bytes = se.bytes;
    out.invalid_utf8_bytes = so.utf8.invalid_bytes() + se.utf8.invalid_bytes();
    out.duration_ms =
        std::chrono::duration_cast<milliseconds>(Clock::now() - start).count();

    if (gone) {
      out.shell_ended = true;
      out.cwd.clear();
      shell->child.reset();
      shell->cgroup.reset();
      shell->ended = true;
      if (!out.timed_out.empty()) {
        out.exit_code.reset();
        out.notes.push_back(absl::StrCat(
            out.timed_out == "wall"
                ? absl::StrCat("the command timed out after ", timeout_ms, " ms")
                : std::string("the call was cancelled"),
            ": it was stopped with the shell running it (SIGTERM, then SIGKILL after ",
            grace.count(), " ms), so nothing more of it runs; the next call starts a new "
            "shell at the workspace root (variables, options and working directory reset)"));
      } else {
        std::string how = "the shell ended";
        if (shell_exit.has_value() && shell_exit->signaled) {
          // As bash reports a command a signal ended.
          out.exit_code = 128 + shell_exit->code;
          out.signal = SignalName(shell_exit->code);
          how = absl::StrCat("the shell was killed by ", out.signal);
        } else if (shell_exit.has_value()) {
          out.exit_code = shell_exit->code;
          how = absl::StrCat("the shell exited with code ", shell_exit->code,
                             " (`exit`, `exec`, or a failing command under `set -e` ends it)");
        }
        out.notes.push_back(absl::StrCat(
            how, "; the next call starts a new shell at the workspace root (variables, "
                 "options and working directory reset)"));
      }
      absl::MutexLock lock(&mu_);
      auto it = shells_.find(session_id);
      if (it != shells_.end() && it->second == shell) shells_.erase(it);
    } else {
      if (!out.cwd.empty() &&
          std::none_of(shell->roots.begin(), shell->roots.end(),
                       [&](const std::string& r) { return Beneath(out.cwd, r); })) {
        shell->reset_cwd = true;
        out.notes.push_back(absl::StrCat("the working directory ", out.cwd,
                                         " is outside the workspace; the next call starts at "
                                         "the workspace root ",
                                         shell->home));
      }
      if (!shell->functions.empty()) {
        out.notes.push_back(absl::StrCat(
            "functions do not persist between calls (each line is judged with what it defines); "
            "removed before the next call: ",
            absl::StrJoin(shell->functions, ", ")));
      }
    }
    shell->last_used_ns.store(absl::ToUnixNanos(absl::Now()));
    return out;
  }
}

}  // namespace toolexec::command
