// Runs test code in a process that cannot start more threads: a forked child
// that sets RLIMIT_NPROC to 1 (it is then at the limit with its one thread).
// Root is exempt from the limit, so as root the child first switches to an
// otherwise unused uid.
#ifndef TOOLEXEC_TESTS_COMMON_THREAD_LIMIT_H_
#define TOOLEXEC_TESTS_COMMON_THREAD_LIMIT_H_

#include <grp.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <system_error>
#include <thread>

namespace toolexec::testing {

// The child's exit code when it could not switch users.
inline constexpr int kChildSetupFailed = 120;

// Forks; the child (as an unused uid when run as root) exits with body()'s
// value. Returns that exit code, or -N if the child was killed by signal N
// (an abort shows up as -6).
inline int RunInChild(const std::function<int()>& body) {
  pid_t pid = fork();
  if (pid < 0) return kChildSetupFailed;
  if (pid == 0) {
    if (geteuid() == 0) {
      const uid_t uid = 61000 + static_cast<uid_t>(getpid() % 4000);
      if (setgroups(0, nullptr) != 0 || setgid(uid) != 0 || setuid(uid) != 0) {
        _exit(kChildSetupFailed);
      }
    }
    _exit(body());
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

// In a RunInChild body: from now on no thread can start. False if the limit
// could not be set or a probe thread still started.
inline bool StopNewThreads() {
  struct rlimit one = {1, 1};
  if (setrlimit(RLIMIT_NPROC, &one) != 0) return false;
  try {
    std::thread([] {}).join();
    return false;
  } catch (const std::system_error&) {
    return true;
  }
}

}  // namespace toolexec::testing

#endif  // TOOLEXEC_TESTS_COMMON_THREAD_LIMIT_H_
