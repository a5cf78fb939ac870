#include "tools/builtin/command/child_process.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tools/builtin/command/reaper.h"

namespace toolexec::command {
namespace {

constexpr size_t kChildStackBytes = 64 * 1024;

// Shared with the child through CLONE_VM: the parent is suspended
// (CLONE_VFORK) until the child has exec'd or exited, so no locking.
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
  pid_t parent;  // the daemon's pid
  // Set by the child when a step fails.
  int error;
  const char* failed_step;
};

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
  // If the daemon dies, so does the command's leader (bwrap: the whole
  // sandbox, through --die-with-parent). The signal follows the spawning
  // *thread*, which is why Spawn's caller must wait for the child.
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) ChildFail(a, "prctl(PR_SET_PDEATHSIG)");
  if (getppid() != a->parent) {
    errno = ESRCH;
    ChildFail(a, "the daemon exited");
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

// Makes sure `fd` is above 2 so the dup2 calls in the child cannot clobber it.
absl::Status LiftFd(UniqueFd& fd) {
  if (fd.get() > 2) return absl::OkStatus();
  int lifted = fcntl(fd.get(), F_DUPFD_CLOEXEC, 3);
  if (lifted < 0) return absl::InternalError(absl::StrCat("fcntl(F_DUPFD): ", strerror(errno)));
  fd.Reset(lifted);
  return absl::OkStatus();
}

absl::Status MakePipe(UniqueFd* read_end, UniqueFd* write_end) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return absl::ResourceExhaustedError(absl::StrCat("pipe2: ", strerror(errno)));
  }
  read_end->Reset(fds[0]);
  write_end->Reset(fds[1]);
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

struct ProcStat {
  pid_t ppid;
  pid_t pgrp;
  pid_t sid;
};

// Parses /proc/<pid>/stat: "pid (comm) state ppid pgrp session ...". The
// command name may contain spaces and parentheses, so parse after the last ')'.
bool ReadProcStat(const char* pid_name, ProcStat* out) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%s/stat", pid_name);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[1024];
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  const char* rp = strrchr(buf, ')');
  if (rp == nullptr) return false;
  char state;
  int ppid, pgrp, sid;
  if (sscanf(rp + 1, " %c %d %d %d", &state, &ppid, &pgrp, &sid) != 4) return false;
  out->ppid = ppid;
  out->pgrp = pgrp;
  out->sid = sid;
  return true;
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

// The children of every thread of `pid`.
std::vector<pid_t> ChildrenOf(pid_t pid) {
  std::vector<pid_t> out;
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/task", static_cast<int>(pid));
  DIR* dir = opendir(path);
  if (dir == nullptr) return out;
  while (struct dirent* e = readdir(dir)) {
    int tid;
    if (absl::SimpleAtoi(e->d_name, &tid)) AppendChildren(pid, tid, &out);
  }
  closedir(dir);
  return out;
}

}  // namespace

void UniqueFd::Reset(int fd) {
  if (fd_ >= 0) close(fd_);
  fd_ = fd;
}

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Spawn(const SpawnSpec& spec) {
  if (spec.argv.empty()) return absl::InvalidArgumentError("empty argv");
  for (int fd : spec.inherit_fds) {
    if (fd <= 2) return absl::InvalidArgumentError(absl::StrCat("cannot inherit fd ", fd));
  }
  std::unique_ptr<ChildProcess> child(new ChildProcess());
  UniqueFd child_in, child_out, child_err;
  if (spec.stdin_pipe) {
    if (absl::Status s = MakePipe(&child_in, &child->stdin_); !s.ok()) return s;
    SetNonBlocking(child->stdin_.get());
  } else {
    child_in.Reset(open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!child_in.valid())
      return absl::InternalError(absl::StrCat("open /dev/null: ", strerror(errno)));
    if (absl::Status s = LiftFd(child_in); !s.ok()) return s;
  }
  if (absl::Status s = MakePipe(&child->stdout_, &child_out); !s.ok()) return s;
  if (absl::Status s = MakePipe(&child->stderr_, &child_err); !s.ok()) return s;
  SetNonBlocking(child->stdout_.get());
  SetNonBlocking(child->stderr_.get());

  // Everything the child touches is built before clone().
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
  args.parent = getpid();

  void* stack = mmap(nullptr, kChildStackBytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED)
    return absl::ResourceExhaustedError(absl::StrCat("mmap: ", strerror(errno)));

  ChildReaper& reaper = ChildReaper::Get();
  pid_t pid;
  int pidfd = -1;
  {
    // Block every signal around clone(): the child shares our memory until
    // it execs and must not run one of the daemon's handlers (see ChildMain).
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    ChildReaper::SpawnLock spawn_lock(reaper);
    char* stack_top = static_cast<char*>(stack) + kChildStackBytes;
    pid =
        clone(ChildMain, stack_top, CLONE_VM | CLONE_VFORK | CLONE_PIDFD | SIGCHLD, &args, &pidfd);
    if (pid < 0 && errno == EINVAL) {
      // A kernel older than 5.2: no CLONE_PIDFD. Fall back to pidfd_open, or to
      // polling the pid.
      pidfd = -1;
      pid = clone(ChildMain, stack_top, CLONE_VM | CLONE_VFORK | SIGCHLD, &args);
      if (pid > 0) pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
    }
    if (pid > 0) reaper.Own(pid);
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }
  int clone_errno = errno;
  munmap(stack, kChildStackBytes);
  if (pid < 0) {
    return absl::ResourceExhaustedError(absl::StrCat("clone: ", strerror(clone_errno)));
  }
  child->pid_ = pid;
  child->pidfd_.Reset(pidfd < 0 ? -1 : pidfd);
  if (args.error != 0) {
    // The child exited with 127 before exec; reap it here.
    siginfo_t si;
    while (WaitidPidfdOrPid(child->pidfd_.get(), pid, &si, WEXITED) != 0 && errno == EINTR) {
    }
    child->reaped_ = true;
    reaper.Disown(pid);
    return absl::FailedPreconditionError(absl::StrCat("could not start ", spec.argv[0], ": ",
                                                      args.failed_step,
                                                      " failed: ", strerror(args.error)));
  }
  return child;
}

ChildProcess::~ChildProcess() {
  if (pid_ <= 0 || reaped_) return;
  SignalGroup(SIGKILL);
  siginfo_t si;
  while (WaitidPidfdOrPid(pidfd_.get(), pid_, &si, WEXITED) != 0 && errno == EINTR) {
  }
  reaped_ = true;
  ChildReaper::Get().Disown(pid_);
}

bool ChildProcess::LeaderExited() {
  if (reaped_) return true;
  siginfo_t si;
  if (WaitidPidfdOrPid(pidfd_.get(), pid_, &si, WEXITED | WNOHANG | WNOWAIT) != 0) return false;
  return si.si_pid != 0;
}

std::optional<ExitStatus> ChildProcess::TryReap() {
  if (reaped_) return std::nullopt;
  siginfo_t si;
  if (WaitidPidfdOrPid(pidfd_.get(), pid_, &si, WEXITED | WNOHANG) != 0 || si.si_pid == 0) {
    return std::nullopt;
  }
  reaped_ = true;
  ChildReaper::Get().Disown(pid_);
  ExitStatus st;
  st.signaled = si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED;
  st.code = si.si_status;
  return st;
}

void ChildProcess::SignalGroup(int sig) {
  if (pid_ <= 0 || reaped_) return;
  // A session leader cannot leave its group, so this reaches the leader too.
  kill(-pid_, sig);
}

void ChildProcess::SignalTree(int sig, bool include_leader, absl::string_view marker) {
  if (pid_ <= 0 || reaped_) return;
  if (include_leader) kill(-pid_, sig);
  absl::flat_hash_map<pid_t, ProcStat> procs;
  absl::flat_hash_map<pid_t, std::vector<pid_t>> children;
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return;
  while (struct dirent* e = readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    int pid;
    ProcStat st;
    if (!absl::SimpleAtoi(e->d_name, &pid) || !ReadProcStat(e->d_name, &st)) continue;
    procs[pid] = st;
    children[st.ppid].push_back(pid);
  }
  closedir(dir);

  const pid_t self = getpid();
  std::vector<pid_t> roots = {pid_};
  for (const auto& [pid, st] : procs) {
    if (pid == pid_) continue;
    // Moved to another group but still in the command's session.
    if (st.sid == pid_ || st.pgrp == pid_) roots.push_back(pid);
    // Adopted by the daemon (as subreaper) after its parent died: ours if it
    // carries this command's marker.
    if (st.ppid == self && !marker.empty() && EnvironHas(pid, marker)) roots.push_back(pid);
  }
  absl::flat_hash_set<pid_t> tree;
  while (!roots.empty()) {
    pid_t p = roots.back();
    roots.pop_back();
    if (!tree.insert(p).second) continue;
    auto it = children.find(p);
    if (it != children.end()) roots.insert(roots.end(), it->second.begin(), it->second.end());
  }
  for (pid_t p : tree) {
    if (p == pid_ || p == self) continue;
    auto it = procs.find(p);
    if (include_leader && it != procs.end() && it->second.pgrp == pid_) continue;  // done above
    kill(p, sig);
  }
}

void ChildProcess::KillAdopted(absl::string_view marker) {
  if (marker.empty()) return;
  // The kernel hands an orphan to a live thread of the subreaper, starting
  // from its main thread, which lives as long as the daemon does: its
  // children list holds every process the daemon has adopted, plus command
  // leaders spawned from that thread (which do not carry this marker).
  const pid_t self = getpid();
  std::vector<pid_t> adopted;
  if (!AppendChildren(self, self, &adopted)) {
    // No children lists on this kernel (CONFIG_PROC_CHILDREN): scan /proc.
    SignalTree(SIGKILL, /*include_leader=*/true, marker);
    return;
  }
  std::vector<pid_t> todo;
  for (pid_t p : adopted) {
    if (p != pid_ && EnvironHas(p, marker)) todo.push_back(p);
  }
  // The whole subtrees first, then the signals: a killed parent's children
  // would move to the daemon before their list could be read.
  absl::flat_hash_set<pid_t> tree;
  while (!todo.empty()) {
    pid_t p = todo.back();
    todo.pop_back();
    if (!tree.insert(p).second) continue;
    std::vector<pid_t> kids = ChildrenOf(p);
    todo.insert(todo.end(), kids.begin(), kids.end());
  }
  for (pid_t p : tree) kill(p, SIGKILL);
}

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  if (abbrev == nullptr) return absl::StrCat("signal ", sig);
  return absl::StrCat("SIG", abbrev);
}

}  // namespace toolexec::command
