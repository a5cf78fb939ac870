// /proc helpers for the command tests: which processes of a test are alive,
// and which zombies nobody reaped.
#ifndef TOOLEXEC_TESTS_UNIT_BUILTIN_PROCESS_TEST_UTIL_H_
#define TOOLEXEC_TESTS_UNIT_BUILTIN_PROCESS_TEST_UTIL_H_

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace toolexec::testing {

// The contents of a /proc file, or what could be read of it: "" when the
// process is gone (a read of an exited process's file fails with ESRCH, which
// std::ifstream turns into an exception).
inline std::string ReadProcFile(const std::string& path) {
  std::string out;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

// Live (non-zombie) processes other than this one whose environment or
// command line contains `needle`.
inline std::vector<int> ProcessesWith(const std::string& needle) {
  std::vector<int> found;
  DIR* d = opendir("/proc");
  if (d == nullptr) return found;
  while (struct dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    int pid = atoi(e->d_name);
    if (pid == getpid()) continue;
    std::string base = absl::StrCat("/proc/", e->d_name);
    if (ReadProcFile(base + "/environ").find(needle) != std::string::npos ||
        ReadProcFile(base + "/cmdline").find(needle) != std::string::npos) {
      found.push_back(pid);
    }
  }
  closedir(d);
  return found;
}

// Zombies whose parent is `parent` (nobody reaped them).
inline int ZombiesOf(pid_t parent) {
  int n = 0;
  DIR* d = opendir("/proc");
  if (d == nullptr) return 0;
  while (struct dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::string stat = ReadProcFile(absl::StrCat("/proc/", e->d_name, "/stat"));
    size_t rp = stat.rfind(')');
    if (rp == std::string::npos) continue;
    char state;
    int ppid;
    if (sscanf(stat.c_str() + rp + 1, " %c %d", &state, &ppid) == 2 && state == 'Z' &&
        ppid == parent) {
      ++n;
    }
  }
  closedir(d);
  return n;
}

// Zombie children of this process.
inline int ZombieChildren() { return ZombiesOf(getpid()); }

// Polls `pred` for up to `limit`.
template <typename Pred>
bool Eventually(Pred pred, absl::Duration limit = absl::Seconds(5)) {
  absl::Time end = absl::Now() + limit;
  while (absl::Now() < end) {
    if (pred()) return true;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return pred();
}

}  // namespace toolexec::testing

#endif  // TOOLEXEC_TESTS_UNIT_BUILTIN_PROCESS_TEST_UTIL_H_
