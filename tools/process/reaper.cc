#include "tools/process/reaper.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tools/runtime/executor.h"
#include "tools/runtime/file_io.h"

namespace toolexec::command {

std::string ReadSmallFile(const std::string& path) {
  // read(2), not an ifstream: libstdc++'s stream buffer throws when a read
  // fails after the open succeeded, which is what reading /proc/<pid>/* of a
  // process that exits in between does (ESRCH).
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return "";
  std::string text;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return "";
    if (n == 0) return text;
    text.append(buf, static_cast<size_t>(n));
  }
}

bool ReadProcStat(pid_t pid, ProcStat* out) {
  const std::string text = ReadSmallFile(absl::StrCat("/proc/", pid, "/stat"));
  // The command name may hold spaces and parentheses: parse after the last ')'.
  const size_t rp = text.rfind(')');
  if (rp == std::string::npos) return false;
  std::vector<absl::string_view> f =
      absl::StrSplit(absl::string_view(text).substr(rp + 1), ' ', absl::SkipEmpty());
  // f[0] is the state (field 3), so field N is f[N - 3].
  return f.size() > 19 && absl::SimpleAtoi(f[1], &out->ppid) &&
         absl::SimpleAtoi(f[2], &out->pgrp) && absl::SimpleAtoi(f[3], &out->sid) &&
         absl::SimpleAtoi(f[19], &out->start_ticks);
}

namespace {

// A zombie in the daemon's own session that nobody claims within this long
// is reaped anyway: waitid(P_ALL) always returns the first zombie, so one
// that is never reaped would hide every orphan behind it.
constexpr absl::Duration kForeignZombieGrace = absl::Seconds(2);

constexpr char kRunIdName[] = "TOOLEXEC_RUN_ID=";

// The pid namespace of `pid` ("pid:[4026531836]"), "" if unreadable.
std::string PidNamespace(pid_t pid) {
  char buf[64];
  ssize_t n = readlink(absl::StrCat("/proc/", pid, "/ns/pid").c_str(), buf, sizeof(buf));
  return n > 0 ? std::string(buf, n) : std::string();
}

}  // namespace

bool OwnerAlive(absl::string_view run_id) {
  std::vector<absl::string_view> parts = absl::StrSplit(run_id, '-');
  int pid = 0;
  uint64_t start = 0;
  if (parts.size() != 3 || !absl::SimpleAtoi(parts[0], &pid) ||
      !absl::SimpleAtoi(parts[1], &start) || pid <= 0) {
    return true;  // not ours to judge
  }
  ProcStat st;
  return ReadProcStat(pid, &st) && st.start_ticks == start;
}

namespace {

// SIGKILLs every process whose TOOLEXEC_RUN_ID names a daemon that is gone:
// command processes an earlier daemon left when it died together with its
// supervisors. Spares this process, its ancestors and the command this
// process itself may run in. One /proc scan (reading the environment of our
// user's processes), at start-up only.
uint64_t KillLeftovers() {
  const pid_t self = getpid();
  absl::flat_hash_set<pid_t> spared = {self};
  for (pid_t p = getppid(); p > 1 && spared.insert(p).second;) {
    ProcStat st;
    p = ReadProcStat(p, &st) ? st.ppid : 0;
  }
  const std::string own_ns = PidNamespace(self);
  const uid_t uid = geteuid();
  const char* own = getenv("TOOLEXEC_RUN_ID");
  const std::string own_id = own != nullptr ? own : "";
  uint64_t killed = 0;
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return 0;
  while (struct dirent* e = readdir(dir)) {
    int pid;
    if (!absl::SimpleAtoi(e->d_name, &pid) || spared.contains(pid)) continue;
    // Only our own user's processes, and only in our pid namespace, where
    // the pid in a run id means what it meant to the daemon that set it.
    struct stat st;
    if (stat(absl::StrCat("/proc/", pid).c_str(), &st) != 0 || st.st_uid != uid) continue;
    if (PidNamespace(pid) != own_ns) continue;
    std::string env = ReadSmallFile(absl::StrCat("/proc/", pid, "/environ"));
    size_t at = 0;
    while (at < env.size()) {
      size_t end = env.find('\0', at);
      if (end == std::string::npos) end = env.size();
      absl::string_view entry = absl::string_view(env).substr(at, end - at);
      at = end + 1;
      if (!absl::ConsumePrefix(&entry, kRunIdName)) continue;
      if (entry != own_id && !OwnerAlive(entry) && kill(pid, SIGKILL) == 0) ++killed;
      break;
    }
  }
  closedir(dir);
  return killed;
}

}  // namespace

std::string NewRunId() {
  static const std::string prefix = [] {
    ProcStat st;
    ReadProcStat(getpid(), &st);  // start_ticks stays 0 if unreadable
    return absl::StrCat(getpid(), "-", st.start_ticks);
  }();
  static std::atomic<uint64_t> counter{0};
  return absl::StrCat(prefix, "-", ++counter);
}

ChildReaper& ChildReaper::Get() {
  static ChildReaper* reaper = new ChildReaper();  // never destroyed: its thread runs to exit
  return *reaper;
}

absl::Status ChildReaper::Start() {
  absl::MutexLock lock(&mu_);
  if (started_) return start_status_;
  started_ = true;
  KillLeftovers();
  if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
    start_status_ = absl::InternalError(
        absl::StrCat("prctl(PR_SET_CHILD_SUBREAPER) failed: ", std::strerror(errno),
                     "; run_command needs it to reap the orphans of commands"));
    return start_status_;
  }
  own_sid_ = getsid(0);
  auto thread = StartThread([this] { Loop(); });
  if (!thread.ok()) {
    start_status_ = thread.status();
    return start_status_;
  }
  thread->detach();
  return start_status_;
}

uint64_t ChildReaper::orphans_reaped() const {
  absl::MutexLock lock(&mu_);
  return orphans_reaped_;
}

bool ChildReaper::ReapIfOrphan(pid_t pid) {
  // Orphans of commands are in a session of their own; children other
  // daemon code spawned are in ours and are left to it.
  pid_t sid = getsid(pid);
  if (sid < 0 || sid == own_sid_) return false;
  siginfo_t si{};
  if (waitid(P_PID, pid, &si, WEXITED | WNOHANG) == 0 && si.si_pid == pid) {
    absl::MutexLock lock(&mu_);
    ++orphans_reaped_;
    return true;
  }
  return false;
}

void ChildReaper::Loop() {
  pid_t last_skipped = 0;
  absl::Time first_skipped_at;
  for (;;) {
    // Peek only. Supervisors have no exit signal, so this never sees them.
    siginfo_t si{};
    if (waitid(P_ALL, 0, &si, WEXITED | WNOWAIT) != 0) {
      if (errno == EINTR) continue;
      // ECHILD: nothing but supervisors (or nothing at all); orphans arrive
      // only when a supervisor is killed from outside.
      absl::SleepFor(absl::Milliseconds(200));
      continue;
    }
    pid_t pid = si.si_pid;
    if (pid <= 0) continue;
    if (ReapIfOrphan(pid)) {
      last_skipped = 0;
      continue;
    }
    // In our own session: left to whoever spawned it, within reason.
    absl::Time now = absl::Now();
    if (pid != last_skipped) {
      last_skipped = pid;
      first_skipped_at = now;
    } else if (now - first_skipped_at > kForeignZombieGrace) {
      siginfo_t gone{};
      if (waitid(P_PID, pid, &gone, WEXITED | WNOHANG) == 0 && gone.si_pid == pid) {
        absl::MutexLock lock(&mu_);
        ++orphans_reaped_;
      }
      last_skipped = 0;
      continue;
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
}

}  // namespace toolexec::command
