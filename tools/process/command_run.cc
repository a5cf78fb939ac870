#include "tools/process/command_run.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "tools/process/output_capture.h"
#include "tools/runtime/metrics.h"
#include "tools/runtime/tool.h"
#include "tools/runtime/utf8.h"

namespace toolexec::command {
namespace {

using std::chrono::milliseconds;

// The supervisor was killed from outside before it had ended the tree: what
// was left of it was re-parented to the daemon (a subreaper). SIGKILL what
// carries the command's marker, a few times, since the leader's own children
// move only once the leader (killed by its PDEATHSIG) is gone.
void SweepAdopted(absl::string_view marker) {
  int quiet_rounds = 0;
  for (int round = 0; round < 50 && quiet_rounds < 3; ++round) {
    quiet_rounds = ChildProcess::KillAdopted(marker) > 0 ? 0 : quiet_rounds + 1;
    usleep(10 * 1000);
  }
}

}  // namespace

ssize_t WriteNoSigpipe(int fd, const char* data, size_t n) {
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  ssize_t w = write(fd, data, n);
  int err = errno;
  if (w < 0 && err == EPIPE) {
    struct timespec zero = {0, 0};
    sigtimedwait(&pipe_set, nullptr, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = err;
  return w;
}

int MsUntil(Clock::time_point now, Clock::time_point deadline) {
  if (deadline <= now) return 0;
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(deadline - now).count();
  int64_t ms = (us + 999) / 1000;
  return static_cast<int>(std::min<int64_t>(ms, 24 * 3600 * 1000));
}

absl::string_view TimedOutName(StopReason reason) {
  switch (reason) {
    case StopReason::kWall:
      return "wall";
    case StopReason::kIdle:
      return "idle";
    case StopReason::kCancelled:
      return "cancelled";
    default:
      return "";
  }
}

absl::StatusOr<SpawnSpec> SpawnSpecFor(const CommandSpec& spec,
                                       std::unique_ptr<CommandCgroup>* cgroup) {
  SpawnSpec s;
  s.argv = spec.argv;
  s.env = spec.env;
  s.cwd_fd = spec.cwd_fd;
  s.inherit_fds = spec.inherit_fds;
  s.stdin_pipe = spec.stdin_text.has_value();
  s.rlimits = spec.rlimits;
  if (spec.pids != nullptr) {
    auto created = spec.pids->Create();
    if (!created.ok()) return created.status();
    *cgroup = std::move(*created);
    s.cgroup_procs_fd = (*cgroup)->procs_fd();
  }
  return s;
}

absl::StatusOr<std::unique_ptr<CommandRun>> CommandRun::Start(CommandSpec spec) {
  int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) return absl::ResourceExhaustedError(absl::StrCat("eventfd: ", strerror(errno)));
  UniqueFd wake_fd(wake);
  std::unique_ptr<CommandCgroup> cgroup;
  auto s = SpawnSpecFor(spec, &cgroup);
  if (!s.ok()) return s.status();
  auto child = ChildProcess::Spawn(*s);
  if (!child.ok()) return child.status();
  return std::unique_ptr<CommandRun>(
      new CommandRun(std::move(spec), std::move(cgroup), std::move(*child), wake_fd.release()));
}

CommandRun::CommandRun(CommandSpec spec, std::unique_ptr<CommandCgroup> cgroup,
                       std::unique_ptr<ChildProcess> child, int wake_fd)
    : spec_(std::move(spec)),
      cgroup_(std::move(cgroup)),
      child_(std::move(child)),
      wake_(wake_fd),
      pid_(child_->pid()),
      started_(Clock::now()) {
  ProcessCounters().commands_running.fetch_add(1, std::memory_order_relaxed);
}

CommandRun::~CommandRun() { CountEnded(); }

void CommandRun::CountEnded() {
  if (counted_running_) {
    counted_running_ = false;
    ProcessCounters().commands_running.fetch_sub(1, std::memory_order_relaxed);
  }
}

void CommandRun::RequestStop(StopReason reason) {
  StopReason expected = StopReason::kNone;
  if (!stop_.compare_exchange_strong(expected, reason)) return;
  uint64_t one = 1;
  ssize_t ignored = write(wake_.get(), &one, sizeof(one));
  (void)ignored;
}

CommandOutcome CommandRun::Wait(const OutputFn& on_output) {
  CaptureStream out(&child_->stdout_fd(), false, spec_.capture_bytes);
  CaptureStream err(&child_->stderr_fd(), true, spec_.capture_bytes);
  HeadTail combined(spec_.capture_bytes);
  std::unique_ptr<char[]> buf(new char[kReadBytes]);
  std::string text;  // repaired output of one read

  auto emit = [&](CaptureStream& s, absl::string_view t) {
    if (t.empty()) return;
    s.capture.Append(t);
    combined.Append(t);
    // Progress in pieces of at most kMaxChunkBytes, cut between characters.
    while (!t.empty()) {
      size_t n = Utf8SafePrefix(t, kMaxChunkBytes);
      if (on_output) on_output(s.is_stderr, t.substr(0, n));
      t.remove_prefix(n);
    }
  };

  const std::string& stdin_text = spec_.stdin_text ? *spec_.stdin_text : std::string();
  size_t stdin_off = 0;
  if (child_->stdin_fd().valid() && stdin_text.empty()) child_->stdin_fd().reset();

  const Clock::time_point start = started_;
  std::optional<Clock::time_point> wall_deadline;
  if (spec_.wall_timeout) wall_deadline = start + *spec_.wall_timeout;
  Clock::time_point last_output = start;
  enum class Phase { kRunning, kTerminating, kKilled } phase = Phase::kRunning;
  Clock::time_point kill_at;
  bool exited = false;
  ExitStatus exit_status;
  Clock::time_point drain_deadline;
  const bool have_pidfd = child_->pidfd() >= 0;

  auto kill_tree = [&] {
    child_->KillTree();
    phase = Phase::kKilled;
  };
  auto begin_terminate = [&](Clock::time_point now) {
    child_->SignalTree(SIGTERM, /*include_leader=*/!spec_.sandboxed);
    phase = Phase::kTerminating;
    kill_at = now + spec_.kill_grace;
    if (spec_.kill_grace.count() <= 0) kill_tree();
  };

  while (true) {
    Clock::time_point now = Clock::now();
    if (!exited) {
      if (phase == Phase::kRunning) {
        StopReason reason = stop_.load();
        if (reason == StopReason::kNone) {
          StopReason fired = StopReason::kNone;
          if (wall_deadline && now >= *wall_deadline) {
            fired = StopReason::kWall;
          } else if (spec_.idle_timeout && now >= last_output + *spec_.idle_timeout) {
            fired = StopReason::kIdle;
          }
          if (fired != StopReason::kNone) {
            StopReason expected = StopReason::kNone;
            stop_.compare_exchange_strong(expected, fired);
            reason = stop_.load();
          }
        }
        if (reason != StopReason::kNone) begin_terminate(now);
      }
      if (phase == Phase::kTerminating && now >= kill_at) kill_tree();
    }
    bool pipes_open = out.fd->valid() || err.fd->valid();
    if (exited && (!pipes_open || now >= drain_deadline)) break;

    struct pollfd fds[5];
    int nfds = 0;
    int out_i = -1, err_i = -1, in_i = -1, pid_i = -1, wake_i = -1;
    if (out.fd->valid()) {
      out_i = nfds;
      fds[nfds++] = {out.fd->get(), POLLIN, 0};
    }
    if (err.fd->valid()) {
      err_i = nfds;
      fds[nfds++] = {err.fd->get(), POLLIN, 0};
    }
    if (!exited && child_->stdin_fd().valid()) {
      in_i = nfds;
      fds[nfds++] = {child_->stdin_fd().get(), POLLOUT, 0};
    }
    if (!exited && have_pidfd) {
      pid_i = nfds;
      fds[nfds++] = {child_->pidfd(), POLLIN, 0};
    }
    if (!exited && phase == Phase::kRunning) {
      wake_i = nfds;
      fds[nfds++] = {wake_.get(), POLLIN, 0};
    }
    int timeout = -1;
    auto until = [&](Clock::time_point t) {
      int ms = MsUntil(now, t);
      if (timeout < 0 || ms < timeout) timeout = ms;
    };
    if (exited) {
      until(drain_deadline);
    } else if (phase == Phase::kRunning) {
      if (wall_deadline) until(*wall_deadline);
      if (spec_.idle_timeout) until(last_output + *spec_.idle_timeout);
    } else if (phase == Phase::kTerminating) {
      until(kill_at);
    }
    if (!exited && !have_pidfd && (timeout < 0 || timeout > 10)) timeout = 10;

    int ready = poll(fds, nfds, timeout);
    if (ready < 0) {
      if (errno == EINTR) continue;
      // EINVAL/ENOMEM: nothing sensible to wait on; fall back to a short sleep.
      usleep(10000);
      continue;
    }
    now = Clock::now();
    if (wake_i >= 0 && (fds[wake_i].revents & POLLIN)) {
      uint64_t v;
      ssize_t ignored = read(wake_.get(), &v, sizeof(v));
      (void)ignored;
    }
    for (auto [idx, s] : {std::pair<int, CaptureStream*>{out_i, &out}, {err_i, &err}}) {
      if (idx < 0 || fds[idx].revents == 0) continue;
      ssize_t n = read(s->fd->get(), buf.get(), kReadBytes);
      if (n > 0) {
        last_output = now;
        s->bytes += n;
        ProcessCounters().command_output_bytes.fetch_add(n, std::memory_order_relaxed);
        text.clear();
        s->utf8.Feed(absl::string_view(buf.get(), n), &text);
        emit(*s, text);
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        s->fd->reset();
        text.clear();
        s->utf8.Finish(&text);
        emit(*s, text);
      }
    }
    if (in_i >= 0 && fds[in_i].revents != 0) {
      ssize_t w = WriteNoSigpipe(child_->stdin_fd().get(), stdin_text.data() + stdin_off,
                                 stdin_text.size() - stdin_off);
      if (w > 0) stdin_off += w;
      // Done, or the command closed its stdin (EPIPE): either way, no more.
      if (stdin_off >= stdin_text.size() || (w < 0 && errno != EAGAIN && errno != EINTR)) {
        child_->stdin_fd().reset();
      }
    }
    bool ended = false;
    if (!exited) {
      if (pid_i >= 0) {
        ended = (fds[pid_i].revents & POLLIN) != 0;
      } else {
        ended = child_->Ended();
      }
    }
    if (ended) {
      // The leader has exited and the supervisor has killed and reaped the
      // rest of the tree; what is left is output still in the pipes.
      if (auto st = child_->TryReap()) exit_status = *st;
      if (!child_->supervised_to_the_end()) SweepAdopted(spec_.marker);
      // Nothing of the tree is left in its pids cgroup (a background
      // command's entry outlives its processes; its cgroup does not).
      if (child_->reaped()) {
        cgroup_.reset();
        CountEnded();
      }
      exited = true;
      drain_deadline = now + kDrainAfterExit;
      child_->stdin_fd().reset();
    }
  }

  CommandOutcome o;
  for (CaptureStream* s : {&out, &err}) {
    if (s->fd->valid()) {
      o.output_cut_at_exit = true;
      s->fd->reset();
      text.clear();
      s->utf8.Finish(&text);
      emit(*s, text);
    }
  }
  o.exit = exit_status;
  o.stop = stop_.load();
  bool cut[3] = {false, false, false};
  o.stdout_text = out.capture.Render(spec_.output_chars, &cut[0]);
  o.stderr_text = err.capture.Render(spec_.output_chars, &cut[1]);
  o.combined = combined.Render(spec_.output_chars, &cut[2]);
  o.stdout_bytes = out.bytes;
  o.stderr_bytes = err.bytes;
  o.truncated = cut[0] || cut[1] || cut[2];
  o.stdout_truncated = cut[0];
  o.invalid_utf8_bytes = out.utf8.invalid_bytes() + err.utf8.invalid_bytes();
  o.duration = std::chrono::duration_cast<milliseconds>(Clock::now() - start);
  return o;
}

}  // namespace toolexec::command
