#include "tools/process/child_process.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tools/process/reaper.h"

namespace toolexec::command {
namespace {

constexpr size_t kStackBytes = 64 * 1024;
// The supervisor's stack, the leader's stack, then the supervisor's report.
constexpr size_t kRegionBytes = 2 * kStackBytes + 4096;

// The signal that tells a supervisor to end its tree: sent by the daemon
// (KillTree) and by the kernel when the spawning thread dies (PDEATHSIG).
constexpr int kEndTreeSignal = SIGTERM;

// Shared with the leader through CLONE_VM; lives on the spawning thread's
// stack, which waits until the leader has exec'd or exited, so no locking.
struct ChildArgs {
  const char* path;
  char* const* argv;
  char* const* envp;
  int stdin_fd;
  int stdout_fd;
  int stderr_fd;
  int cwd_fd;
  const int* inherit_fds;
  size_t inherit_count;
  const std::pair<int, rlim_t>* rlimits;
  size_t rlimit_count;
  int cgroup_procs_fd;  // -1: none
  pid_t parent;  // the supervisor's pid
  // Set by the child when a step fails.
  int error;
  const char* failed_step;
};

// What the supervisor leaves for the daemon, in the mapping the daemon
// unmaps only after reaping it (so it is read after the supervisor's exit).
struct SupervisorReport {
  pid_t leader;
  // A start-up step that failed (error is its errno), else 0.
  int error;
  const char* failed_step;
  // Set once the leader's status below is known.
  int leader_ended;
  int leader_signaled;
  int leader_code;
};

// The supervisor's start-up arguments, on the spawning thread's stack: read
// only until the supervisor closes ready_fd (the thread waits for that).
struct SupervisorArgs {
  ChildArgs* leader;
  char* leader_stack_top;
  SupervisorReport* report;
  int ready_fd;
  pid_t daemon;
};

// --- system calls that leave errno alone ------------------------------------
//
// A supervisor shares the daemon's memory and runs with the spawning thread's
// thread pointer, so libc's errno would be that thread's: once started it
// makes only these calls, which return -errno instead of setting errno.
#if defined(__x86_64__)
long RawSyscall(long n, long a1 = 0, long a2 = 0, long a3 = 0, long a4 = 0, long a5 = 0) {
  long ret;
  register long r10 __asm__("r10") = a4;
  register long r8 __asm__("r8") = a5;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(n), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8)
                   : "rcx", "r11", "memory");
  return ret;
}
#elif defined(__aarch64__)
long RawSyscall(long n, long a1 = 0, long a2 = 0, long a3 = 0, long a4 = 0, long a5 = 0) {
  register long x8 __asm__("x8") = n;
  register long x0 __asm__("x0") = a1;
  register long x1 __asm__("x1") = a2;
  register long x2 __asm__("x2") = a3;
  register long x3 __asm__("x3") = a4;
  register long x4 __asm__("x4") = a5;
  __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4) : "memory");
  return x0;
}
#else
#error "RawSyscall: add this architecture's system call sequence"
#endif

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// SIGKILLs every child of the calling (single-threaded) process. Its
// children are not reaped yet, so their pids are still theirs.
void KillChildren(pid_t self) {
  long fd = RawSyscall(SYS_openat, AT_FDCWD, reinterpret_cast<long>("/proc/thread-self/children"),
                       O_RDONLY | O_CLOEXEC);
  char buf[512];
  if (fd >= 0) {
    long pid = -1;
    long n;
    while ((n = RawSyscall(SYS_read, fd, reinterpret_cast<long>(buf), sizeof(buf))) > 0) {
      for (long i = 0; i < n; ++i) {
        if (IsDigit(buf[i])) {
          pid = (pid < 0 ? 0 : pid * 10) + (buf[i] - '0');
        } else if (pid > 0) {
          RawSyscall(SYS_kill, pid, SIGKILL);
          pid = -1;
        }
      }
    }
    if (pid > 0) RawSyscall(SYS_kill, pid, SIGKILL);
    RawSyscall(SYS_close, fd);
    return;
  }
  // No children lists on this kernel (CONFIG_PROC_CHILDREN): look for our
  // pid as the parent in every /proc/<pid>/stat.
  long dir = RawSyscall(SYS_openat, AT_FDCWD, reinterpret_cast<long>("/proc"),
                        O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return;
  char entries[2048];
  long n;
  while ((n = RawSyscall(SYS_getdents64, dir, reinterpret_cast<long>(entries), sizeof(entries))) >
         0) {
    for (long off = 0; off < n;) {
      auto* d = reinterpret_cast<struct dirent64*>(entries + off);
      off += d->d_reclen;
      if (!IsDigit(d->d_name[0])) continue;
      char path[64] = "/proc/";
      size_t len = 6;
      for (const char* c = d->d_name; *c != '\0' && len < 50; ++c) path[len++] = *c;
      for (const char* c = "/stat"; *c != '\0'; ++c) path[len++] = *c;
      path[len] = '\0';
      long fd2 = RawSyscall(SYS_openat, AT_FDCWD, reinterpret_cast<long>(path), O_RDONLY | O_CLOEXEC);
      if (fd2 < 0) continue;
      long got = RawSyscall(SYS_read, fd2, reinterpret_cast<long>(buf), sizeof(buf) - 1);
      RawSyscall(SYS_close, fd2);
      if (got <= 0) continue;
      // "pid (comm) state ppid ...": the ppid is the second field after the last ')'.
      long rp = got - 1;
      while (rp >= 0 && buf[rp] != ')') --rp;
      long i = rp + 1;
      while (i < got && buf[i] == ' ') ++i;
      while (i < got && buf[i] != ' ') ++i;  // state
      while (i < got && buf[i] == ' ') ++i;
      long ppid = 0;
      while (i < got && IsDigit(buf[i])) ppid = ppid * 10 + (buf[i++] - '0');
      if (rp < 0 || ppid != self) continue;
      long pid = 0;
      for (const char* c = d->d_name; IsDigit(*c); ++c) pid = pid * 10 + (*c - '0');
      RawSyscall(SYS_kill, pid, SIGKILL);
    }
  }
  RawSyscall(SYS_close, dir);
}

// The supervisor once the leader runs: reaps whatever ends below it (it is
// the subreaper of the command's tree, so orphans come to it); when the
// leader has ended, or kEndTreeSignal arrives, SIGKILLs its children until it
// has none left (each round, the children of the killed ones are re-parented
// to it), then exits. Raw system calls only; touches only its own stack and
// the report.
[[noreturn]] void Supervise(pid_t leader, SupervisorReport* report) {
  const pid_t self = static_cast<pid_t>(RawSyscall(SYS_getpid));
  const uint64_t wait_set = (1ULL << (SIGCHLD - 1)) | (1ULL << (kEndTreeSignal - 1));
  bool ending = false;
  bool leader_reaped = false;
  for (;;) {
    siginfo_t si;
    if (!ending) {
      // Peek: until the leader is reaped, its pid (the group id) is ours.
      si.si_pid = 0;
      if (RawSyscall(SYS_waitid, P_PID, leader, reinterpret_cast<long>(&si),
                     WEXITED | WNOHANG | WNOWAIT, 0) == 0 &&
          si.si_pid == leader) {
        ending = true;
      }
    }
    if (ending) {
      if (!leader_reaped) RawSyscall(SYS_kill, -leader, SIGKILL);
      KillChildren(self);
    }
    bool none_left = false;
    for (;;) {
      si.si_pid = 0;
      long rc = RawSyscall(SYS_waitid, P_ALL, 0, reinterpret_cast<long>(&si),
                           WEXITED | WNOHANG | __WALL, 0);
      if (rc == -ECHILD) {
        none_left = true;
        break;
      }
      if (rc != 0 || si.si_pid == 0) break;
      if (si.si_pid == leader) {
        report->leader_signaled = si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED;
        report->leader_code = si.si_status;
        report->leader_ended = 1;
        leader_reaped = true;
        ending = true;
      }
    }
    if (none_left) RawSyscall(SYS_exit_group, 0);
    // Wait for a child to end or for the signal to end the tree; while
    // ending, also look again soon (a child's death is what re-parents its
    // own children, but a re-parented one may have been missed).
    struct timespec tick = {0, 10 * 1000 * 1000};
    long sig = RawSyscall(SYS_rt_sigtimedwait, reinterpret_cast<long>(&wait_set), 0,
                          ending ? reinterpret_cast<long>(&tick) : 0, sizeof(wait_set));
    if (sig == kEndTreeSignal) ending = true;
  }
}

[[noreturn]] void ChildFail(ChildArgs* a, const char* step) {
  a->error = errno;
  a->failed_step = step;
  _exit(127);
}

// Runs in the child, on its own stack, sharing the parent's memory: only
// plain system calls, no allocation, no locks.
int ChildMain(void* arg) {
  auto* a = static_cast<ChildArgs*>(arg);
  // Every signal back to its default (ignored ones too: a daemon that
  // ignores SIGPIPE must not pass that on), with all signals still blocked
  // so no handler of the daemon can run in this shared address space.
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    sigaction(sig, &dfl, nullptr);  // EINVAL for the C library's reserved signals
  }
  sigset_t none;
  sigemptyset(&none);
  if (sigprocmask(SIG_SETMASK, &none, nullptr) != 0) ChildFail(a, "sigprocmask");
  if (setsid() < 0) ChildFail(a, "setsid");
  // If the supervisor dies, so does the command's leader (bwrap: the whole
  // sandbox, through --die-with-parent).
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) ChildFail(a, "prctl(PR_SET_PDEATHSIG)");
  if (getppid() != a->parent) {
    errno = ESRCH;
    ChildFail(a, "the supervisor exited");
  }
  if (a->cgroup_procs_fd >= 0) {
    // Into the command's pids cgroup before anything runs: all it starts
    // counts against pids.max.
    char digits[16];
    char* p = digits + sizeof(digits);
    for (long pid = syscall(SYS_getpid); pid > 0; pid /= 10) {
      *--p = static_cast<char>('0' + pid % 10);
    }
    const ssize_t len = digits + sizeof(digits) - p;
    if (write(a->cgroup_procs_fd, p, len) != len) ChildFail(a, "joining the pids cgroup");
  }
  if (dup2(a->stdin_fd, 0) < 0 || dup2(a->stdout_fd, 1) < 0 || dup2(a->stderr_fd, 2) < 0) {
    ChildFail(a, "dup2");
  }
  if (a->cwd_fd >= 0 && fchdir(a->cwd_fd) != 0) ChildFail(a, "fchdir to the working directory");
  for (size_t i = 0; i < a->rlimit_count; ++i) {
    struct rlimit rl;
    rl.rlim_cur = a->rlimits[i].second;
    rl.rlim_max = a->rlimits[i].second;
    if (setrlimit(a->rlimits[i].first, &rl) != 0) ChildFail(a, "setrlimit");
  }
  // Nothing of the daemon's leaks into the command, even an fd some library
  // opened without O_CLOEXEC.
  syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
  // Except what the program is meant to have (the fd table is the child's
  // own copy: the daemon's descriptors keep their close-on-exec flag).
  for (size_t i = 0; i < a->inherit_count; ++i) {
    if (fcntl(a->inherit_fds[i], F_SETFD, 0) != 0) ChildFail(a, "fcntl(F_SETFD) to inherit an fd");
  }
  execve(a->path, a->argv, a->envp);
  ChildFail(a, "execve");
}

// Closes every fd of the calling process except those in `keep` (-1 entries
// ignored): a supervisor must hold no other command's pipe, nor the daemon's
// sockets, since it does not exec.
void CloseAllBut(int* keep, int count) {
  // Sort the few fds to keep, then close the gaps between them.
  for (int i = 1; i < count; ++i) {
    for (int j = i; j > 0 && keep[j] < keep[j - 1]; --j) std::swap(keep[j], keep[j - 1]);
  }
  unsigned int from = 0;
  for (int i = 0; i <= count; ++i) {
    unsigned int to = i < count ? static_cast<unsigned int>(keep[i]) : ~0U;
    if (i < count && keep[i] < 0) continue;
    if (to > from) {
      unsigned int last = i < count ? to - 1 : ~0U;
      if (syscall(SYS_close_range, from, last, 0) != 0) {
        // Kernels before 5.9: one by one, up to the fd limit.
        struct rlimit rl;
        rlim_t limit = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? rl.rlim_cur : 1024;
        for (rlim_t fd = from; fd <= last && fd < limit; ++fd) RawSyscall(SYS_close, fd);
      }
    }
    if (i < count) from = static_cast<unsigned int>(keep[i]) + 1;
  }
}

[[noreturn]] void SupervisorFail(SupervisorReport* report, int ready_fd, const char* step) {
  report->error = errno != 0 ? errno : EIO;
  report->failed_step = step;
  RawSyscall(SYS_close, ready_fd);
  RawSyscall(SYS_exit_group, 127);
  __builtin_unreachable();
}

// The supervisor, on its own stack, sharing the daemon's memory (CLONE_VM, so
// it costs no copy of the daemon) but not its fds or signal handlers. Every
// signal is blocked (the spawning thread blocked them all around the clone).
// Until it closes ready_fd, the spawning thread waits in read() with every
// signal blocked, so the libc calls here, whose errno lands in that thread,
// cannot mislead it; after that only raw system calls (Supervise). No libc
// cancellation points here (they would touch that thread's cancel state).
int SupervisorMain(void* arg) {
  auto* a = static_cast<SupervisorArgs*>(arg);
  SupervisorReport* report = a->report;
  ChildArgs* leader_args = a->leader;
  const int ready = a->ready_fd;
  // The leader's fds, and those it inherits, stay open until it is started.
  int keep[6 + SpawnSpec::kMaxInheritFds] = {ready, leader_args->stdin_fd, leader_args->stdout_fd,
                                             leader_args->stderr_fd, leader_args->cwd_fd,
                                             leader_args->cgroup_procs_fd};
  int kept = 6;
  for (size_t i = 0; i < leader_args->inherit_count; ++i) keep[kept++] = leader_args->inherit_fds[i];
  CloseAllBut(keep, kept);
  // SIGCHLD must not be ignored (children would be reaped by the kernel,
  // statuses lost) and the end signal must not be discarded.
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  sigaction(SIGCHLD, &dfl, nullptr);
  sigaction(kEndTreeSignal, &dfl, nullptr);
  prctl(PR_SET_NAME, "toolexec-super", 0, 0, 0);
  // A session of its own: a signal to the daemon's process group (a
  // terminal's ^C, kill -- -pgid) does not reach it, and its PDEATHSIG then
  // ends the tree.
  if (setsid() < 0) SupervisorFail(report, ready, "setsid (supervisor)");
  if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
    SupervisorFail(report, ready, "prctl(PR_SET_CHILD_SUBREAPER)");
  }
  if (prctl(PR_SET_PDEATHSIG, kEndTreeSignal, 0, 0, 0) != 0) {
    SupervisorFail(report, ready, "prctl(PR_SET_PDEATHSIG)");
  }
  if (getppid() != a->daemon) {
    errno = ESRCH;
    SupervisorFail(report, ready, "the daemon exited");
  }
  leader_args->parent = getpid();
  // No CLONE_VFORK: the leader runs beside the supervisor (on its own stack;
  // neither touches what the other uses), so nobody waits for its exec but
  // the spawning thread: the leader's copy of ready_fd closes at its exec
  // (close-on-exec), or at its exit if a step before failed.
  pid_t leader = clone(ChildMain, a->leader_stack_top, CLONE_VM | SIGCHLD, leader_args);
  if (leader < 0) SupervisorFail(report, ready, "clone");
  report->leader = leader;
  // The command's ends of its pipes belong to the command alone: output ends
  // when the command's processes are gone, not when the supervisor is.
  for (int i = 0; i < kept; ++i) {
    if (keep[i] >= 0 && keep[i] != ready) RawSyscall(SYS_close, keep[i]);
  }
  RawSyscall(SYS_close, ready);
  Supervise(leader, report);
}

// Makes sure `fd` is above 2 so the dup2 calls in the child cannot clobber it.
absl::Status LiftFd(UniqueFd& fd) {
  if (fd.get() > 2) return absl::OkStatus();
  int lifted = fcntl(fd.get(), F_DUPFD_CLOEXEC, 3);
  if (lifted < 0) return absl::InternalError(absl::StrCat("fcntl(F_DUPFD): ", strerror(errno)));
  fd.reset(lifted);
  return absl::OkStatus();
}

absl::Status MakePipe(UniqueFd* read_end, UniqueFd* write_end) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return absl::ResourceExhaustedError(absl::StrCat("pipe2: ", strerror(errno)));
  }
  read_end->reset(fds[0]);
  write_end->reset(fds[1]);
  if (absl::Status s = LiftFd(*read_end); !s.ok()) return s;
  return LiftFd(*write_end);
}

void SetNonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

int WaitidPidfdOrPid(int pidfd, pid_t pid, siginfo_t* si, int options) {
  std::memset(si, 0, sizeof(*si));
  if (pidfd >= 0) {
    int rc = waitid(P_PIDFD, static_cast<id_t>(pidfd), si, options);
    // Kernels 5.2 and 5.3 have CLONE_PIDFD but not P_PIDFD: the pid is still
    // ours (unreaped), so waiting on it is just as safe.
    if (rc == 0 || errno != EINVAL) return rc;
    std::memset(si, 0, sizeof(*si));
  }
  return waitid(P_PID, static_cast<id_t>(pid), si, options);
}

bool EnvironHas(pid_t pid, absl::string_view entry) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/environ", static_cast<int>(pid));
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  std::string env;
  char buf[8192];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0 && env.size() < (1u << 20)) env.append(buf, n);
  close(fd);
  size_t start = 0;
  while (start < env.size()) {
    size_t end = env.find('\0', start);
    if (end == std::string::npos) end = env.size();
    if (absl::string_view(env).substr(start, end - start) == entry) return true;
    start = end + 1;
  }
  return false;
}

// Appends the children of thread `tid` of process `pid` (from
// /proc/<pid>/task/<tid>/children); false if that file cannot be read.
bool AppendChildren(pid_t pid, pid_t tid, std::vector<pid_t>* out) {
  char path[96];
  snprintf(path, sizeof(path), "/proc/%d/task/%d/children", static_cast<int>(pid),
           static_cast<int>(tid));
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) text.append(buf, n);
  close(fd);
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipWhitespace())) {
    int child;
    if (absl::SimpleAtoi(word, &child)) out->push_back(child);
  }
  return true;
}

// Appends the children of every thread of `pid`; false if the children
// lists cannot be read (no such process, or no CONFIG_PROC_CHILDREN).
bool AppendChildrenOfAllThreads(pid_t pid, std::vector<pid_t>* out) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/task", static_cast<int>(pid));
  DIR* dir = opendir(path);
  if (dir == nullptr) return false;
  bool ok = true;
  while (struct dirent* e = readdir(dir)) {
    int tid;
    if (absl::SimpleAtoi(e->d_name, &tid)) ok = AppendChildren(pid, tid, out) && ok;
  }
  closedir(dir);
  return ok;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Spawn(const SpawnSpec& spec) {
  if (spec.argv.empty()) return absl::InvalidArgumentError("empty argv");
  if (spec.inherit_fds.size() > SpawnSpec::kMaxInheritFds) {
    return absl::InvalidArgumentError(absl::StrCat("cannot inherit more than ",
                                                   SpawnSpec::kMaxInheritFds, " fds"));
  }
  for (int fd : spec.inherit_fds) {
    if (fd <= 2) return absl::InvalidArgumentError(absl::StrCat("cannot inherit fd ", fd));
  }
  std::unique_ptr<ChildProcess> child(new ChildProcess());
  UniqueFd child_in, child_out, child_err;
  if (spec.stdin_pipe) {
    if (absl::Status s = MakePipe(&child_in, &child->stdin_); !s.ok()) return s;
    SetNonBlocking(child->stdin_.get());
  } else {
    child_in.reset(open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!child_in.valid())
      return absl::InternalError(absl::StrCat("open /dev/null: ", strerror(errno)));
    if (absl::Status s = LiftFd(child_in); !s.ok()) return s;
  }
  if (absl::Status s = MakePipe(&child->stdout_, &child_out); !s.ok()) return s;
  if (absl::Status s = MakePipe(&child->stderr_, &child_err); !s.ok()) return s;
  SetNonBlocking(child->stdout_.get());
  SetNonBlocking(child->stderr_.get());
  UniqueFd ready_read, ready_write;
  if (absl::Status s = MakePipe(&ready_read, &ready_write); !s.ok()) return s;

  // Everything the supervisor and the leader touch is built before clone().
  std::vector<char*> argv;
  for (const std::string& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  ChildArgs args{};
  args.path = spec.argv[0].c_str();
  args.argv = argv.data();
  args.envp = envp.data();
  args.stdin_fd = child_in.get();
  args.stdout_fd = child_out.get();
  args.stderr_fd = child_err.get();
  args.cwd_fd = spec.cwd_fd;
  args.inherit_fds = spec.inherit_fds.data();
  args.inherit_count = spec.inherit_fds.size();
  args.rlimits = spec.rlimits.data();
  args.rlimit_count = spec.rlimits.size();
  args.cgroup_procs_fd = spec.cgroup_procs_fd;

  void* region = mmap(nullptr, kRegionBytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (region == MAP_FAILED)
    return absl::ResourceExhaustedError(absl::StrCat("mmap: ", strerror(errno)));
  char* base = static_cast<char*>(region);
  auto* report = reinterpret_cast<SupervisorReport*>(base + 2 * kStackBytes);
  SupervisorArgs sargs{};
  sargs.leader = &args;
  sargs.leader_stack_top = base + 2 * kStackBytes;
  sargs.report = report;
  sargs.ready_fd = ready_write.get();
  sargs.daemon = getpid();

  pid_t pid;
  int pidfd = -1;
  int clone_errno = 0;
  {
    // Every signal stays blocked from before the clone until the supervisor
    // reports: it shares our memory and must not run one of the daemon's
    // handlers, and this thread must not be interrupted while it waits.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    char* stack_top = base + kStackBytes;
    // No exit signal: a "clone child", which waitid(P_ALL) without __WALL
    // (the daemon's orphan reaper) never sees; only its owner waits for it.
    pid = clone(SupervisorMain, stack_top, CLONE_VM | CLONE_PIDFD, &sargs, &pidfd);
    if (pid < 0 && errno == EINVAL) {
      // A kernel older than 5.2: no CLONE_PIDFD. Fall back to pidfd_open, or
      // to polling the pid.
      pidfd = -1;
      pid = clone(SupervisorMain, stack_top, CLONE_VM, &sargs);
      if (pid > 0) pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
    }
    clone_errno = errno;
    ready_write.reset();
    if (pid > 0) {
      // EOF once the supervisor has started the leader (or given up).
      char byte;
      while (read(ready_read.get(), &byte, 1) < 0 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }
  if (pid < 0) {
    munmap(region, kRegionBytes);
    return absl::ResourceExhaustedError(absl::StrCat("clone: ", strerror(clone_errno)));
  }
  child->supervisor_ = pid;
  child->pidfd_.reset(pidfd < 0 ? -1 : pidfd);
  child->region_ = region;
  if (report->leader <= 0 || args.error != 0) {
    // The supervisor could not start the leader, or the leader failed before
    // its exec (and exited 127, which ends the supervisor too); reap it here.
    siginfo_t si;
    while (WaitidPidfdOrPid(child->pidfd_.get(), pid, &si, WEXITED | __WALL) != 0 &&
           errno == EINTR) {
    }
    child->reaped_ = true;
    if (args.error != 0) {
      return absl::FailedPreconditionError(absl::StrCat("could not start ", spec.argv[0], ": ",
                                                        args.failed_step,
                                                        " failed: ", strerror(args.error)));
    }
    if (report->error == 0) {
      return absl::InternalError(
          absl::StrCat("could not start ", spec.argv[0], ": its supervisor was killed"));
    }
    return absl::FailedPreconditionError(absl::StrCat("could not start ", spec.argv[0], ": ",
                                                      report->failed_step,
                                                      " failed: ", strerror(report->error)));
  }
  child->pid_ = report->leader;
  return child;
}

ChildProcess::~ChildProcess() {
  if (supervisor_ > 0 && !reaped_) {
    KillTree();
    siginfo_t si;
    while (WaitidPidfdOrPid(pidfd_.get(), supervisor_, &si, WEXITED | __WALL) != 0 &&
           errno == EINTR) {
    }
    reaped_ = true;
  }
  // Only once the supervisor is gone: the mapping holds its stack.
  if (region_ != nullptr && reaped_) munmap(region_, kRegionBytes);
}

bool ChildProcess::Ended() {
  if (reaped_) return true;
  siginfo_t si;
  if (WaitidPidfdOrPid(pidfd_.get(), supervisor_, &si, WEXITED | WNOHANG | WNOWAIT | __WALL) !=
      0) {
    return false;
  }
  return si.si_pid != 0;
}

std::optional<ExitStatus> ChildProcess::TryReap() {
  if (reaped_) return std::nullopt;
  siginfo_t si;
  if (WaitidPidfdOrPid(pidfd_.get(), supervisor_, &si, WEXITED | WNOHANG | __WALL) != 0 ||
      si.si_pid == 0) {
    return std::nullopt;
  }
  reaped_ = true;
  const auto* report =
      reinterpret_cast<const SupervisorReport*>(static_cast<char*>(region_) + 2 * kStackBytes);
  // The supervisor exits 0 once its tree is gone; anything else means it was
  // killed from outside.
  supervised_to_the_end_ = si.si_code == CLD_EXITED && si.si_status == 0;
  ExitStatus st;
  if (report->leader_ended) {
    st.signaled = report->leader_signaled != 0;
    st.code = report->leader_code;
  } else {
    st.signaled = si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED;
    st.code = si.si_status;
  }
  return st;
}

void ChildProcess::KillTree() {
  // The supervisor is our child and not reaped: its pid is still its own.
  if (supervisor_ > 0 && !reaped_) kill(supervisor_, kEndTreeSignal);
}

void ChildProcess::SignalTree(int sig, bool include_leader) {
  if (supervisor_ <= 0 || reaped_) return;
  // Collect the whole tree first, then signal: a signalled parent's children
  // could move before their list was read.
  std::vector<pid_t> tree;
  std::vector<pid_t> todo;
  absl::flat_hash_set<pid_t> seen;
  // The supervisor has a single thread, so its one list has all its children.
  const bool lists = AppendChildren(supervisor_, supervisor_, &todo);
  while (!todo.empty()) {
    pid_t p = todo.back();
    todo.pop_back();
    if (!seen.insert(p).second) continue;
    tree.push_back(p);
    AppendChildrenOfAllThreads(p, &todo);  // false if it has just exited
  }
  if (!lists) {
    // No children lists on this kernel (CONFIG_PROC_CHILDREN): one /proc scan.
    tree.clear();
    absl::flat_hash_map<pid_t, std::vector<pid_t>> children;
    DIR* dir = opendir("/proc");
    if (dir == nullptr) return;
    while (struct dirent* e = readdir(dir)) {
      int pid;
      ProcStat st;
      if (!absl::SimpleAtoi(e->d_name, &pid) || !ReadProcStat(pid, &st)) continue;
      children[st.ppid].push_back(pid);
    }
    closedir(dir);
    todo = {supervisor_};
    while (!todo.empty()) {
      pid_t p = todo.back();
      todo.pop_back();
      if (!seen.insert(p).second) continue;
      if (p != supervisor_) tree.push_back(p);
      auto it = children.find(p);
      if (it != children.end()) todo.insert(todo.end(), it->second.begin(), it->second.end());
    }
  }
  for (pid_t p : tree) {
    if (p == pid_ && !include_leader) continue;
    kill(p, sig);
  }
}

int ChildProcess::KillAdopted(absl::string_view marker) {
  if (marker.empty()) return 0;
  // The kernel hands an orphan to a live thread of the subreaper, starting
  // from its main thread, which lives as long as the daemon does.
  const pid_t self = getpid();
  std::vector<pid_t> adopted;
  AppendChildren(self, self, &adopted);
  std::vector<pid_t> todo;
  for (pid_t p : adopted) {
    if (EnvironHas(p, marker)) todo.push_back(p);
  }
  const int found = static_cast<int>(todo.size());
  // The whole subtrees first, then the signals.
  absl::flat_hash_set<pid_t> tree;
  while (!todo.empty()) {
    pid_t p = todo.back();
    todo.pop_back();
    if (!tree.insert(p).second) continue;
    AppendChildrenOfAllThreads(p, &todo);
  }
  for (pid_t p : tree) kill(p, SIGKILL);
  return found;
}

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  if (abbrev == nullptr) return absl::StrCat("signal ", sig);
  return absl::StrCat("SIG", abbrev);
}

}  // namespace toolexec::command
